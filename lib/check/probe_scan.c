/*
 * One read of a quantized weight for every probe that needs it (H1's
 * saturation counts, H2's group energies), in blocks of whole rows.
 *
 * A row is first turned into its absolute codes a[0..K) (0..128 for INT8,
 * 0..8 for int4). The loops over a[] run in fixed chunks of 32 columns
 * (one H1 block column) so that GCC vectorizes them at -O2; the remainder
 * of a row runs the same operations one column at a time. Integer maxima
 * and counts do not depend on the order they are taken in. The H2 sums are
 * floating point, so they keep one order: row by row, and within a row in
 * column order, each group position adding ((double)q / peak)^2, the same
 * value for q and -q, looked up in a per-row table of the 129 values |q|
 * can take.
 */
#include <string.h>

#include "check/check_internal.h"
#include "check/probe_scan.h"

#define READ_BLOCK (128u * 1024u) /* bytes of whole rows per read */
#define CH 32                     /* columns per chunk: the H1 block width */

/* |q| of n INT8 codes. */
static void abs_i8(uint8_t *restrict a, const int8_t *restrict q, size_t n)
{
    size_t i = 0;
    for (; i + CH <= n; i += CH)
        for (size_t j = 0; j < CH; j++) {
            int v = q[i + j];
            a[i + j] = (uint8_t)(v < 0 ? -v : v);
        }
    for (; i < n; i++) {
        int v = q[i];
        a[i] = (uint8_t)(v < 0 ? -v : v);
    }
}

/* |q| of the 2 * nb signed nibbles of nb bytes, low nibble first. */
static void abs_i4(uint8_t *restrict a, const uint8_t *restrict b, size_t nb)
{
    static const uint8_t mag[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 7, 6, 5, 4, 3, 2, 1 };
    for (size_t i = 0; i < nb; i++) {
        a[2 * i] = mag[b[i] & 0xF];
        a[2 * i + 1] = mag[b[i] >> 4];
    }
}

/* max of a[0..n) */
static unsigned row_max(const uint8_t *restrict a, size_t n)
{
    uint8_t m = 0;
    size_t i = 0;
    for (; i + CH <= n; i += CH) {
        uint8_t c = 0;
        for (size_t j = 0; j < CH; j++) c = a[i + j] > c ? a[i + j] : c;
        m = c > m ? c : m;
    }
    for (; i < n; i++) m = a[i] > m ? a[i] : m;
    return m;
}

/*
 * H1 for one row: column maxima into mc[0..n), 32-column block maxima into
 * blk[0..ceil(n/32)); returns the row maximum.
 */
static unsigned row_h1(const uint8_t *restrict a, size_t n, uint8_t *restrict mc,
                       uint8_t *restrict blk)
{
    uint8_t mr = 0;
    size_t i = 0, c = 0;
    for (; i + CH <= n; i += CH, c++) {
        uint8_t m = 0;
        for (size_t j = 0; j < CH; j++) {
            uint8_t v = a[i + j];
            m = v > m ? v : m;
            mc[i + j] = v > mc[i + j] ? v : mc[i + j];
        }
        blk[c] = m > blk[c] ? m : blk[c];
        mr = m > mr ? m : mr;
    }
    if (i < n) {
        uint8_t m = 0;
        for (; i < n; i++) {
            uint8_t v = a[i];
            m = v > m ? v : m;
            mc[i] = v > mc[i] ? v : mc[i];
        }
        blk[c] = m > blk[c] ? m : blk[c];
        mr = m > mr ? m : mr;
    }
    return mr;
}

/* H2 for one row of n codes (n a multiple of g) whose peak is mr. */
static void row_h2(double *restrict e, const uint8_t *restrict a, size_t n, size_t g,
                   unsigned mr)
{
    double t[129];
    int peak = mr ? (int)mr : 1;
    for (int q = 0; q <= 128; q++) {
        double v = (double)q / peak;
        t[q] = v * v;
    }
    for (size_t base = 0; base < n; base += g)
        for (size_t j = 0; j < g; j++) e[j] += t[a[base + j]];
}

/* The block counts of H1 from the 32-block maxima (blkall: nbr x nb32). */
static void h1_blocks(stf__h1_stat *st, const uint8_t *blkall, size_t nbr, size_t nb32,
                      unsigned sat)
{
    /* Blocks of b = 32 << j are maxima over (b/32)^2 aligned 32-blocks. */
    for (unsigned j = 0; j < 4; j++) {
        size_t f = (size_t)1 << j;
        for (size_t br = 0; br < nbr; br += f)
            for (size_t bc = 0; bc < nb32; bc += f) {
                unsigned mx = 0;
                for (size_t x = br; x < br + f && x < nbr; x++)
                    for (size_t y = bc; y < bc + f && y < nb32; y++)
                        if (blkall[x * nb32 + y] > mx) mx = blkall[x * nb32 + y];
                if (!mx) continue;
                st->blk_ne[j]++;
                if (mx >= sat) st->blk_sat[j]++;
            }
    }
}

/* Contract in probe_scan.h. */
int stf__probe_scan(const stf_ckpt *c, size_t wi, const stf_tensor_info *w,
                    const stf__scan_req *req, stf__h1_stat *h1, double *h2e, stf_err *err)
{
    uint64_t n = w->shape[0], kb = w->shape[1];
    size_t kk = (size_t)(req->w4 ? 2 * kb : kb);
    size_t g = req->w4 ? 0 : req->h2_group;
    size_t nb32 = (kk + CH - 1) / CH, nbr = (size_t)((n + 31) / 32);
    size_t per = kb && kb < READ_BLOCK ? READ_BLOCK / (size_t)kb : 1;
    if (per > n) per = (size_t)n;
    const uint8_t *direct = stf_ckpt_tensor_data(c, wi);
    size_t bufsz = per * (size_t)kb;
    uint8_t *buf = direct ? NULL : stf__malloc(bufsz ? bufsz : 1);
    uint8_t *a = stf__malloc(kk ? kk : 1);
    uint8_t *mc = req->h1 ? stf__calloc(kk ? kk : 1, 1) : NULL;
    uint8_t *blkall = req->h1 ? stf__calloc(nbr * (nb32 ? nb32 : 1) + 1, 1) : NULL;
    int rc = 0;
    if (h1) memset(h1, 0, sizeof *h1);
    if (g) memset(h2e, 0, g * sizeof *h2e);
    if ((!direct && !buf) || !a || (req->h1 && (!mc || !blkall))) {
        char shown[STF__NAME_SHOWN];
        rc = stf__err(err, STF_ENOMEM, "probe of %s: out of memory",
                      stf__name_render(shown, sizeof shown, w->name, w->name_len));
        goto done;
    }
    for (uint64_t r0 = 0; r0 < n; r0 += per) {
        size_t rows = (size_t)(n - r0 < per ? n - r0 : per);
        const uint8_t *blk = direct ? direct + r0 * kb : buf;
        if (!direct) {
            rc = stf_ckpt_read(buf, c, wi, r0 * kb, rows * (size_t)kb, err);
            if (rc) goto done;
        }
        for (size_t i = 0; i < rows; i++) {
            const uint8_t *row = blk + i * (size_t)kb;
            uint64_t r = r0 + i;
            if (req->w4) abs_i4(a, row, (size_t)kb);
            else abs_i8(a, (const int8_t *)row, kk);
            unsigned mr = req->h1 ? row_h1(a, kk, mc, blkall + (size_t)(r / 32) * nb32)
                                  : row_max(a, kk);
            if (req->h1 && mr) {
                h1->rows_ne++;
                if (mr >= req->sat) h1->rows_sat++;
            }
            if (g) row_h2(h2e, a, kk, g, mr);
        }
    }
    if (req->h1) {
        for (size_t col = 0; col < kk; col++) {
            if (!mc[col]) continue;
            h1->cols_ne++;
            if (mc[col] >= req->sat) {
                h1->cols_sat++;
                h1->any_sat = 1;
            }
        }
        if (h1->rows_sat) h1->any_sat = 1;
        h1_blocks(h1, blkall, nbr, nb32, req->sat);
    }
done:
    stf__free(buf);
    stf__free(a);
    stf__free(mc);
    stf__free(blkall);
    return rc;
}
