/*
 * One read of a quantized weight for every probe that needs it (H1's
 * saturation counts, H2's group energies), in blocks of whole rows.
 *
 * A row is first turned into its absolute codes a[0..K) (0..128 for INT8,
 * 0..8 for int4, the magnitude bits 0..0x7E of FP8). The loops over a[]
 * run in fixed chunks of 32 columns (one H1 block column) so that GCC
 * vectorizes them at -O2; the remainder
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
/* The row loops are inlined into each clone of scan_rows (below). */
#define INL static inline __attribute__((always_inline))

/* |q| of n INT8 codes. */
INL void abs_i8(uint8_t *restrict a, const int8_t *restrict q, size_t n)
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

/*
 * The magnitude bits c & 0x7F of n FP8 codes, which order the finite
 * codes as their values do; a code above lim (the largest finite one:
 * NaN, or E5M2's Inf) holds no magnitude and counts as 0.
 */
INL void abs_f8(uint8_t *restrict a, const uint8_t *restrict q, size_t n, uint8_t lim)
{
    size_t i = 0;
    for (; i + CH <= n; i += CH)
        for (size_t j = 0; j < CH; j++) {
            uint8_t m = q[i + j] & 0x7Fu;
            a[i + j] = m > lim ? 0 : m;
        }
    for (; i < n; i++) {
        uint8_t m = q[i] & 0x7Fu;
        a[i] = m > lim ? 0 : m;
    }
}

/* The largest finite magnitude bits of FP8 dtype dt. */
INL uint8_t f8_lim(int dt) { return dt == STF_F8_E5M2 ? 0x7Bu : 0x7Eu; }

/* |q| of the 2 * nb signed nibbles of nb bytes, low nibble first. */
INL void abs_i4(uint8_t *restrict a, const uint8_t *restrict b, size_t nb)
{
    static const uint8_t mag[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 7, 6, 5, 4, 3, 2, 1 };
    for (size_t i = 0; i < nb; i++) {
        a[2 * i] = mag[b[i] & 0xF];
        a[2 * i + 1] = mag[b[i] >> 4];
    }
}

/* max of the CH bytes of acc: one horizontal reduction per row. */
INL unsigned hmax(const uint8_t *restrict acc)
{
    uint8_t m = 0;
    for (size_t j = 0; j < CH; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

/* max of a[0..n): lane-wise over the chunks, then across the lanes. */
INL unsigned row_max(const uint8_t *restrict a, size_t n)
{
    uint8_t acc[CH] = { 0 };
    size_t i = 0;
    for (; i + CH <= n; i += CH)
        for (size_t j = 0; j < CH; j++) acc[j] = a[i + j] > acc[j] ? a[i + j] : acc[j];
    for (size_t j = 0; i + j < n; j++) acc[j] = a[i + j] > acc[j] ? a[i + j] : acc[j];
    return hmax(acc);
}

/*
 * H1 for one row: column maxima into mc[0..n) and into mb[0..n) (the
 * column maxima of the current band of 32 rows, which band_blocks turns
 * into the band's 32 x 32 block maxima); returns the row maximum.
 */
INL unsigned row_h1(const uint8_t *restrict a, size_t n, uint8_t *restrict mc,
                    uint8_t *restrict mb)
{
    uint8_t acc[CH] = { 0 };
    size_t i = 0;
    for (; i + CH <= n; i += CH)
        for (size_t j = 0; j < CH; j++) {
            uint8_t v = a[i + j];
            acc[j] = v > acc[j] ? v : acc[j];
            mc[i + j] = v > mc[i + j] ? v : mc[i + j];
            mb[i + j] = v > mb[i + j] ? v : mb[i + j];
        }
    for (size_t j = 0; i + j < n; j++) {
        uint8_t v = a[i + j];
        acc[j] = v > acc[j] ? v : acc[j];
        mc[i + j] = v > mc[i + j] ? v : mc[i + j];
        mb[i + j] = v > mb[i + j] ? v : mb[i + j];
    }
    return hmax(acc);
}

/* The block maxima blk[0..ceil(n/32)) of a finished band from its column
 * maxima mb[0..n), which are cleared for the next band. */
INL void band_blocks(uint8_t *restrict blk, uint8_t *restrict mb, size_t n)
{
    size_t i = 0, c = 0;
    for (; i + CH <= n; i += CH, c++) blk[c] = (uint8_t)hmax(mb + i);
    if (i < n) {
        uint8_t m = 0;
        for (; i < n; i++) m = mb[i] > m ? mb[i] : m;
        blk[c] = m;
    }
    memset(mb, 0, n);
}

/*
 * H2 for one row of n codes (n a multiple of g) whose peak is mr: the
 * exact integer energy S[j] of each group position (the sum of a^2 over the
 * row's groups, in sq[0..g)), then e[j] += S[j] * fl(1 / peak^2) in double.
 * Integers do not depend on the order they are added in, and the double
 * part runs row by row, position by position: the sums are the same for
 * any read block, thread count or vector width. sq holds at least
 * max(g, CH) words. S fits 31 bits when n / g * 128^2 < 2^31 (h2_fits);
 * three squares fit 16 bits, so groups are added three at a time.
 */
INL int h2_fits(size_t n, size_t g) { return n / g < ((size_t)1 << 17); }

INL void h2_add(double *restrict e, const int32_t *restrict s, size_t g, double w)
{
    size_t j = 0;
    for (; j + 8 <= g; j += 8)
        for (size_t x = 0; x < 8; x++) e[j + x] += (double)s[j + x] * w;
    for (; j < g; j++) e[j] += (double)s[j] * w;
}

INL void row_h2(double *restrict e, int32_t *restrict sq, const uint8_t *restrict a, size_t n,
                size_t g, unsigned mr)
{
    double peak = mr ? (double)mr : 1.0, w = 1.0 / (peak * peak);
    if (!mr) return; /* every a is 0 */
    if (!h2_fits(n, g)) {
        /* Rows of 2^17 groups or more: 64-bit sums, one position at a time. */
        for (size_t j = 0; j < g; j++) {
            uint64_t s = 0;
            for (size_t base = 0; base < n; base += g) s += (uint32_t)a[base + j] * a[base + j];
            e[j] += (double)s * w;
        }
        return;
    }
    if (g < CH && CH % g == 0) {
        /* Positions repeat every g columns inside each chunk of CH. */
        int32_t c[CH];
        memset(c, 0, sizeof c);
        size_t i = 0;
        for (; i + CH <= n; i += CH)
            for (size_t x = 0; x < CH; x++) c[x] += (uint16_t)(a[i + x] * a[i + x]);
        for (size_t x = 0; i + x < n; x++) c[x] += (uint16_t)(a[i + x] * a[i + x]);
        for (size_t j = g; j < CH; j++) c[j % g] += c[j];
        h2_add(e, c, g, w);
        return;
    }
    memset(sq, 0, g * sizeof *sq);
    if (g % CH == 0) {
        size_t base = 0;
        for (; base + 3 * g <= n; base += 3 * g)
            for (size_t j = 0; j < g; j += CH) {
                const uint8_t *p = a + base + j;
                int32_t *s = sq + j;
                for (size_t x = 0; x < CH; x++)
                    s[x] += (uint16_t)(p[x] * p[x] + p[g + x] * p[g + x] +
                                       p[2 * g + x] * p[2 * g + x]);
            }
        for (; base < n; base += g)
            for (size_t j = 0; j < g; j += CH) {
                const uint8_t *p = a + base + j;
                int32_t *s = sq + j;
                for (size_t x = 0; x < CH; x++) s[x] += (uint16_t)(p[x] * p[x]);
            }
    } else {
        for (size_t base = 0; base < n; base += g)
            for (size_t j = 0; j < g; j++) sq[j] += (uint16_t)(a[base + j] * a[base + j]);
    }
    h2_add(e, sq, g, w);
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

/* The column and block counts of H1 once every row is in (mc: column
 * maxima, blkall: the 32-block maxima). */
static void h1_close(stf__h1_stat *st, const uint8_t *mc, size_t kk, const uint8_t *blkall,
                     size_t nbr, size_t nb32, unsigned sat)
{
    for (size_t col = 0; col < kk; col++) {
        if (!mc[col]) continue;
        st->cols_ne++;
        if (mc[col] >= sat) {
            st->cols_sat++;
            st->any_sat = 1;
        }
    }
    if (st->rows_sat) st->any_sat = 1;
    h1_blocks(st, blkall, nbr, nb32, sat);
}

/*
 * Where the x86 build can, the per-row loops are compiled three times
 * (AVX-512 BW, AVX2, baseline) and the loader picks one for the CPU; they
 * are integer maxima, counts and exact integer sums, plus the double part of
 * row_h2 in a fixed order, so every clone gives the same results.
 */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(STF_NO_SIMD) && \
    defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SCAN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define SCAN_CLONES
#endif

/* What the rows of one weight feed. */
typedef struct scan_state {
    const stf__scan_req *req;
    uint64_t n;
    size_t kb, kk, g, nb32;
    uint8_t *a, *mc, *mb, *blkall;
    int32_t *sq;
    stf__h1_stat *h1;
    double *h2e;
} scan_state;

/* H1's per-row part once row r's maximum mr is known. */
INL void h1_row_end(scan_state *sc, uint64_t r, unsigned mr)
{
    if (r % 32 == 31 || r + 1 == sc->n)
        band_blocks(sc->blkall + (size_t)(r / 32) * sc->nb32, sc->mb, sc->kk);
    if (mr) {
        sc->h1->rows_ne++;
        if (mr >= sc->req->sat) sc->h1->rows_sat++;
    }
}

/* rows rows of kb bytes at blk, the first being row r0. */
SCAN_CLONES static void scan_rows(scan_state *sc, const uint8_t *blk, size_t rows, uint64_t r0)
{
    const stf__scan_req *req = sc->req;
    for (size_t i = 0; i < rows; i++) {
        const uint8_t *row = blk + i * sc->kb;
        uint64_t r = r0 + i;
        if (req->w4) abs_i4(sc->a, row, sc->kb);
        else if (req->fp8) abs_f8(sc->a, row, sc->kk, f8_lim(req->fp8));
        else abs_i8(sc->a, (const int8_t *)row, sc->kk);
        unsigned mr = req->h1 ? row_h1(sc->a, sc->kk, sc->mc, sc->mb) : row_max(sc->a, sc->kk);
        if (req->h1) h1_row_end(sc, r, mr);
        if (sc->g) row_h2(sc->h2e, sc->sq, sc->a, sc->kk, sc->g, mr);
    }
}

/*
 * A row wider than the read block, in pieces: nb bytes at p, its columns
 * from c0 (a multiple of g, and of 2 * CH for int4), each piece but the
 * last a whole number of groups. *mr and sq64[0..g) (the exact energies)
 * carry the row across its pieces; last: the row ends here. Slower than
 * scan_rows, and the same counts and sums.
 */
static void scan_piece(scan_state *sc, const uint8_t *p, size_t nb, size_t c0, uint64_t r,
                       unsigned *mr, uint64_t *sq64, int last)
{
    const stf__scan_req *req = sc->req;
    size_t n = req->w4 ? 2 * nb : nb;
    if (req->w4) abs_i4(sc->a, p, nb);
    else if (req->fp8) abs_f8(sc->a, p, n, f8_lim(req->fp8));
    else abs_i8(sc->a, (const int8_t *)p, n);
    unsigned m = req->h1 ? row_h1(sc->a, n, sc->mc + c0, sc->mb + c0) : row_max(sc->a, n);
    if (m > *mr) *mr = m;
    for (size_t base = 0; sc->g && base < n; base += sc->g)
        for (size_t j = 0; j < sc->g; j++) sq64[j] += (uint32_t)sc->a[base + j] * sc->a[base + j];
    if (!last) return;
    if (req->h1) h1_row_end(sc, r, *mr);
    if (sc->g && *mr) {
        double w = 1.0 / ((double)*mr * (double)*mr);
        for (size_t j = 0; j < sc->g; j++) sc->h2e[j] += (double)sq64[j] * w;
    }
    if (sc->g) memset(sq64, 0, sc->g * sizeof *sq64);
    *mr = 0;
}

/* Contract in probe_scan.h. */
unsigned stf__h1_sat(stf_dtype dt, int w4)
{
    if (dt == STF_F8_E4M3) return 0x7E;
    if (dt == STF_F8_E5M2) return 0x7B;
    return w4 ? 7 : 126;
}

/* Contract in probe_scan.h. */
int stf__probe_scan(const stf_ckpt *c, size_t wi, const stf_tensor_info *w,
                    const stf__scan_req *req, stf__h1_stat *h1, double *h2e, stf_err *err)
{
    uint64_t n = w->shape[0], kb = w->shape[1];
    size_t kk = (size_t)(req->w4 ? 2 * kb : kb);
    size_t g = req->w4 || req->fp8 ? 0 : req->h2_group;
    size_t nb32 = (kk + CH - 1) / CH, nbr = (size_t)((n + 31) / 32);
    size_t block = req->block ? req->block : READ_BLOCK;
    /* Whole rows per read, or (wide rows) bytes per piece of a row: a
     * whole number of groups (g), or of 32 int4 columns, at least one. */
    size_t unit = g ? g : CH, per = 1, piece = (size_t)kb;
    if (kb <= block) {
        per = kb ? block / (size_t)kb : 1;
        if (per > n) per = (size_t)n;
    } else {
        piece = block / unit * unit;
        if (piece < unit) piece = unit;
        if (piece >= kb) piece = (size_t)kb; /* one whole row per read */
    }
    size_t acols = req->w4 ? 2 * piece : piece;
    const uint8_t *direct = stf_ckpt_tensor_data(c, wi);
    size_t bufsz = per * piece;
    uint8_t *buf = direct ? NULL : stf__malloc(bufsz ? bufsz : 1);
    uint8_t *a = stf__malloc(acols ? acols : 1);
    uint8_t *mc = req->h1 ? stf__calloc(kk ? kk : 1, 1) : NULL;
    uint8_t *mb = req->h1 ? stf__calloc(kk ? kk : 1, 1) : NULL;
    uint8_t *blkall = req->h1 ? stf__calloc(nbr * (nb32 ? nb32 : 1) + 1, 1) : NULL;
    int32_t *sq = g ? stf__malloc((g > CH ? g : CH) * sizeof *sq) : NULL;
    uint64_t *sq64 = g && piece < kb ? stf__calloc(g, sizeof *sq64) : NULL;
    int rc = 0;
    if (h1) memset(h1, 0, sizeof *h1);
    if (g) memset(h2e, 0, g * sizeof *h2e);
    if ((!direct && !buf) || !a || (req->h1 && (!mc || !mb || !blkall)) || (g && !sq) ||
        (g && piece < kb && !sq64)) {
        char shown[STF__NAME_SHOWN];
        rc = stf__err(err, STF_ENOMEM, "probe of %s: out of memory",
                      stf__name_render(shown, sizeof shown, w->name, w->name_len));
        goto done;
    }
    scan_state sc = { req, n, (size_t)kb, kk, g, nb32, a, mc, mb, blkall, sq, h1, h2e };
    if (piece < kb) {
        unsigned mr = 0;
        for (uint64_t r = 0; r < n; r++)
            for (uint64_t at = 0; at < kb; at += piece) {
                size_t nbytes = (size_t)(kb - at < piece ? kb - at : piece);
                const uint8_t *p = direct ? direct + r * kb + at : buf;
                if (!direct && (rc = stf_ckpt_read(buf, c, wi, r * kb + at, nbytes, err)))
                    goto done;
                scan_piece(&sc, p, nbytes, (size_t)(req->w4 ? 2 * at : at), r, &mr, sq64,
                           at + nbytes == kb);
            }
    }
    for (uint64_t r0 = 0; piece == kb && r0 < n; r0 += per) {
        size_t rows = (size_t)(n - r0 < per ? n - r0 : per);
        const uint8_t *blk = direct ? direct + r0 * kb : buf;
        if (!direct) {
            rc = stf_ckpt_read(buf, c, wi, r0 * kb, rows * (size_t)kb, err);
            if (rc) goto done;
        }
        scan_rows(&sc, blk, rows, r0);
    }
    if (req->h1) h1_close(h1, mc, kk, blkall, nbr, nb32, req->sat);
done:
    stf__free(buf);
    stf__free(a);
    stf__free(mc);
    stf__free(mb);
    stf__free(blkall);
    stf__free(sq);
    stf__free(sq64);
    return rc;
}

/* ------------------------------------------- H1 over rows handed in */

/* Contract in probe_scan.h. */
int stf__h1_acc_init(stf__h1_acc *acc, const stf_tensor_info *w, stf_err *err)
{
    memset(acc, 0, sizeof *acc);
    acc->n = w->shape[0];
    acc->kk = (size_t)w->shape[1];
    acc->fp8 = w->dtype == STF_F8_E4M3 || w->dtype == STF_F8_E5M2 ? (int)w->dtype : 0;
    acc->sat = stf__h1_sat(w->dtype, 0);
    acc->nb32 = (acc->kk + CH - 1) / CH;
    acc->nbr = (size_t)((acc->n + 31) / 32);
    acc->mc = stf__calloc(acc->kk ? acc->kk : 1, 1);
    acc->blkall = stf__calloc(acc->nbr * (acc->nb32 ? acc->nb32 : 1) + 1, 1);
    if (!acc->mc || !acc->blkall || pthread_mutex_init(&acc->mu, NULL)) {
        stf__free(acc->mc);
        stf__free(acc->blkall);
        memset(acc, 0, sizeof *acc);
        char shown[STF__NAME_SHOWN];
        return stf__err(err, STF_ENOMEM, "probe of %s: out of memory",
                        stf__name_render(shown, sizeof shown, w->name, w->name_len));
    }
    acc->live = 1;
    return 0;
}

/* Contract in probe_scan.h: the rows' counts and maxima on the side, then
 * merged under the lock (maxima and sums: any order gives the same). */
int stf__h1_acc_rows(stf__h1_acc *acc, const void *rows, size_t nrows, uint64_t r0,
                     stf_err *err)
{
    if (!nrows) return 0;
    size_t kk = acc->kk, nb32 = acc->nb32;
    /* Bands are numbered from the one holding r0. */
    uint64_t rel = r0 % 32;
    size_t nb = (size_t)((rel + nrows + 31) / 32);
    stf__scan_req req = { .h1 = 1, .fp8 = acc->fp8, .sat = acc->sat };
    stf__h1_stat st;
    memset(&st, 0, sizeof st);
    uint8_t *a = stf__malloc(kk ? kk : 1), *mc = stf__calloc(kk ? kk : 1, 1);
    uint8_t *mb = stf__calloc(kk ? kk : 1, 1), *blk = stf__calloc(nb * (nb32 ? nb32 : 1), 1);
    int rc = 0;
    if (!a || !mc || !mb || !blk) {
        rc = stf__err(err, STF_ENOMEM, "probe: out of memory");
        goto done;
    }
    scan_state sc = { &req, rel + nrows, kk, kk, 0, nb32, a, mc, mb, blk, NULL, &st, NULL };
    scan_rows(&sc, rows, nrows, rel);
    size_t b0 = (size_t)(r0 / 32);
    pthread_mutex_lock(&acc->mu);
    acc->rows_ne += st.rows_ne;
    acc->rows_sat += st.rows_sat;
    acc->rows_seen += nrows;
    for (size_t c = 0; c < kk; c++) acc->mc[c] = mc[c] > acc->mc[c] ? mc[c] : acc->mc[c];
    uint8_t *g = acc->blkall + b0 * nb32;
    for (size_t i = 0; i < nb * nb32; i++) g[i] = blk[i] > g[i] ? blk[i] : g[i];
    pthread_mutex_unlock(&acc->mu);
done:
    stf__free(a);
    stf__free(mc);
    stf__free(mb);
    stf__free(blk);
    return rc;
}

/* Contract in probe_scan.h. */
int stf__h1_acc_finish(stf__h1_acc *acc, stf__h1_stat *st)
{
    memset(st, 0, sizeof *st);
    if (!acc->live || acc->rows_seen != acc->n) return 0;
    st->rows_ne = acc->rows_ne;
    st->rows_sat = acc->rows_sat;
    h1_close(st, acc->mc, acc->kk, acc->blkall, acc->nbr, acc->nb32, acc->sat);
    return 1;
}

/* Contract in probe_scan.h. */
void stf__h1_acc_free(stf__h1_acc *acc)
{
    if (!acc || !acc->live) return;
    pthread_mutex_destroy(&acc->mu);
    stf__free(acc->mc);
    stf__free(acc->blkall);
    memset(acc, 0, sizeof *acc);
}
