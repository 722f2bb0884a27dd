/*
 * The single pass of the numeric probes (lib/check/probe_scan.c) against
 * the per-probe computations it replaced, written out here as they were:
 * H1's row-by-row maxima and H2's energy sums, on random INT8 and int4
 * codes of many shapes (columns not a multiple of 32, rows spanning
 * several read blocks, -128, zero rows), read from a file and from memory.
 * Counts and sums must be equal exactly. Also the error rule of
 * stf__pool_each, which runs the probes across layers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check/probe_scan.h"
#include "stfix.h"
#include "support/st_ckptfile.h"
#include "util/util.h"

/* ---------------------------------------------- the former computations */

/* H1 as it was: one row at a time, every column through one loop. */
static void ref_h1(stf__h1_stat *st, const uint8_t *data, uint64_t n, uint64_t kb, int w4,
                   unsigned sat)
{
    uint64_t kk = w4 ? 2 * kb : kb;
    size_t nb32 = (size_t)((kk + 31) / 32);
    unsigned char *mc = calloc((size_t)kk, 1);
    unsigned char *blkall = calloc(((size_t)((n + 31) / 32)) * nb32 + 1, 1);
    memset(st, 0, sizeof *st);
    for (uint64_t r = 0; r < n; r++) {
        const unsigned char *row = data + r * kb;
        unsigned mr = 0;
        for (uint64_t col = 0; col < kk; col++) {
            int q;
            if (w4) {
                unsigned b = row[col / 2];
                unsigned nib = (col % 2) ? (b >> 4) & 0xF : b & 0xF;
                q = nib >= 8 ? (int)nib - 16 : (int)nib;
            } else {
                q = (int)(signed char)row[col];
            }
            unsigned a = (unsigned)(q < 0 ? -q : q);
            if (a > mr) mr = a;
            if (a > mc[col]) mc[col] = (unsigned char)a;
            unsigned char *bp = &blkall[(size_t)(r / 32) * nb32 + (size_t)(col / 32)];
            if (a > *bp) *bp = (unsigned char)a;
        }
        if (mr) {
            st->rows_ne++;
            if (mr >= sat) st->rows_sat++;
        }
    }
    for (uint64_t col = 0; col < kk; col++) {
        if (!mc[col]) continue;
        st->cols_ne++;
        if (mc[col] >= sat) {
            st->cols_sat++;
            st->any_sat = 1;
        }
    }
    if (st->rows_sat) st->any_sat = 1;
    size_t nbr = (size_t)((n + 31) / 32);
    for (unsigned j = 0; j < 4; j++) {
        size_t f = (size_t)1 << j;
        for (size_t br = 0; br < nbr; br += f)
            for (size_t bc = 0; bc < nb32; bc += f) {
                unsigned mx = 0;
                for (size_t a = br; a < br + f && a < nbr; a++)
                    for (size_t b = bc; b < bc + f && b < nb32; b++)
                        if (blkall[a * nb32 + b] > mx) mx = blkall[a * nb32 + b];
                if (!mx) continue;
                st->blk_ne[j]++;
                if (mx >= sat) st->blk_sat[j]++;
            }
    }
    free(mc);
    free(blkall);
}

/*
 * H2 by its definition (probe_scan.c, row_h2): per row, the exact integer
 * energy S[j] = sum of q^2 at group position j, then e[j] += S[j] * fl(1 /
 * peak^2), rows in order. (It was each code divided by the peak, squared,
 * and summed in double: ref_h2_former, which gives other low bits.)
 */
static void ref_h2(double *e, const uint8_t *data, uint64_t n, uint64_t kk, uint64_t g)
{
    memset(e, 0, (size_t)g * sizeof *e);
    for (uint64_t r = 0; r < n; r++) {
        const signed char *row = (const signed char *)data + r * kk;
        int peak = 0;
        for (uint64_t col = 0; col < kk; col++) {
            int a = row[col] < 0 ? -row[col] : row[col];
            if (a > peak) peak = a;
        }
        if (!peak) continue;
        double w = 1.0 / ((double)peak * (double)peak);
        for (uint64_t j = 0; j < g; j++) {
            uint64_t s = 0;
            for (uint64_t col = j; col < kk; col += g) s += (uint64_t)(row[col] * row[col]);
            e[j] += (double)s * w;
        }
    }
}

/* H2 as it was before: each code divided by its row's peak, squared, summed. */
static void ref_h2_former(double *e, const uint8_t *data, uint64_t n, uint64_t kk, uint64_t g)
{
    memset(e, 0, (size_t)g * sizeof *e);
    for (uint64_t r = 0; r < n; r++) {
        const signed char *row = (const signed char *)data + r * kk;
        int peak = 1;
        for (uint64_t col = 0; col < kk; col++) {
            int a = row[col] < 0 ? -row[col] : row[col];
            if (a > peak) peak = a;
        }
        for (uint64_t col = 0; col < kk; col++) {
            double v = (double)row[col] / peak;
            e[col % g] += v * v;
        }
    }
}

/* ----------------------------------------------------------- the inputs */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 32);
}

/* Codes with some structure: row-saturated rows, column-saturated columns,
 * all-zero rows, -128 and -8 (the extremes), small values elsewhere. */
static void fill(uint8_t *d, uint64_t n, uint64_t kb, int w4, unsigned style)
{
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t c = 0; c < kb; c++) {
            uint32_t x = rnd();
            uint8_t v;
            if (w4) v = (uint8_t)x;
            else if (style == 0) v = (uint8_t)(int8_t)((int)(x % 41) - 20);
            else v = (uint8_t)x;
            if (style == 1 && c == r % kb) v = (x & 1) ? 127 : 0x81; /* row peak 127 */
            if (style == 2 && r % 3 == 0 && c % 7 == 0) v = 0x80;   /* -128 */
            if (style == 3 && c % 5 == 0) v = (x & 1) ? 126 : 0x82; /* column peaks */
            if (r % 11 == 4) v = 0;                                 /* empty rows */
            d[r * kb + c] = v;
        }
}

static void one(uint64_t n, uint64_t kb, int w4, uint64_t g, unsigned style, int in_mem)
{
    size_t nbytes = (size_t)(n * kb);
    uint8_t *data = malloc(nbytes ? nbytes : 1);
    assert_non_null(data);
    fill(data, n, kb, w4, style);
    st_tensor t = { "w", STF_I8, 2, { n, kb }, data, nbytes };
    st_ckfx f;
    st_ckfx_open(&f, &t, 1, in_mem);
    size_t wi = 0;
    assert_int_equal(stf_ckpt_find(&wi, f.c, "w"), 0);
    const stf_tensor_info *w = stf_ckpt_tensor(f.c, wi);
    unsigned sat = w4 ? 7 : 126;
    stf__scan_req req = { .h1 = 1, .w4 = w4, .sat = sat, .h2_group = w4 ? 0 : (size_t)g };
    stf__h1_stat got, want;
    double *ge = calloc(g ? (size_t)g : 1, sizeof *ge), *we = calloc(g ? (size_t)g : 1, sizeof *we);
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf__probe_scan(f.c, wi, w, &req, &got, ge, &err), 0);
    ref_h1(&want, data, n, kb, w4, sat);
    if (memcmp(&got, &want, sizeof got))
        fail_msg("H1 n=%llu kb=%llu w4=%d style=%u: rows %llu/%llu cols %llu/%llu, want "
                 "%llu/%llu %llu/%llu", (unsigned long long)n, (unsigned long long)kb, w4, style,
                 (unsigned long long)got.rows_sat, (unsigned long long)got.rows_ne,
                 (unsigned long long)got.cols_sat, (unsigned long long)got.cols_ne,
                 (unsigned long long)want.rows_sat, (unsigned long long)want.rows_ne,
                 (unsigned long long)want.cols_sat, (unsigned long long)want.cols_ne);
    if (g && !w4) {
        ref_h2(we, data, n, kb, g);
        assert_memory_equal(ge, we, (size_t)g * sizeof *ge);
        /* H2 alone gives the same sums. */
        stf__scan_req h2only = { .h2_group = (size_t)g };
        memset(ge, 0xA5, (size_t)g * sizeof *ge);
        assert_int_equal(stf__probe_scan(f.c, wi, w, &h2only, NULL, ge, &err), 0);
        assert_memory_equal(ge, we, (size_t)g * sizeof *ge);
        /* The former sums differ from these by rounding only. */
        ref_h2_former(we, data, n, kb, g);
        for (uint64_t j = 0; j < g; j++) {
            double d = ge[j] - we[j], m = we[j] > 1.0 ? we[j] : 1.0;
            if ((d < 0 ? -d : d) > 1e-12 * m)
                fail_msg("H2 n=%llu kb=%llu g=%llu: e[%llu] %.17g, former %.17g",
                         (unsigned long long)n, (unsigned long long)kb, (unsigned long long)g,
                         (unsigned long long)j, ge[j], we[j]);
        }
    }
    /* Smaller read blocks (rows read in pieces when wider): the same
     * counts and sums. */
    static const size_t blocks[] = { 1, 33, 1000 };
    for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
        stf__scan_req small = req;
        small.block = blocks[bi];
        stf__h1_stat got2;
        double *ge2 = calloc(g ? (size_t)g : 1, sizeof *ge2);
        assert_int_equal(stf__probe_scan(f.c, wi, w, &small, &got2, ge2, &err), 0);
        if (memcmp(&got2, &want, sizeof got2))
            fail_msg("H1 n=%llu kb=%llu w4=%d block=%zu differs", (unsigned long long)n,
                     (unsigned long long)kb, w4, blocks[bi]);
        if (g && !w4) {
            ref_h2(we, data, n, kb, g);
            assert_memory_equal(ge2, we, (size_t)g * sizeof *ge2);
        }
        free(ge2);
    }
    free(ge);
    free(we);
    st_ckfx_close(&f);
    free(data);
}

static void test_scan_matches_former_probes(void **state)
{
    (void)state;
    static const uint64_t ks[] = { 1, 2, 31, 32, 33, 64, 96, 256, 300, 4096 };
    static const uint64_t ns[] = { 1, 4, 33, 70 };
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
            for (unsigned style = 0; style < 4; style++) {
                uint64_t k = ks[a], g = k % 16 == 0 ? 16 : k % 3 == 0 ? 3 : k % 2 == 0 ? 2 : 0;
                if (k == 4096) g = 4096;
                one(ns[b], k, 0, g, style, (int)(style & 1));
                one(ns[b], k, 1, 0, style, (int)(~style & 1));
            }
}

/* Rows across several 128 KiB reads: 40 rows of 16 KiB, G = 256 and 4. */
static void test_scan_across_read_blocks(void **state)
{
    (void)state;
    one(40, 16384, 0, 256, 2, 0);
    one(40, 16384, 0, 4, 1, 0);
    one(40, 16384, 1, 0, 3, 0);
    one(40, 16384, 0, 256, 0, 1);
    /* G = 32 and 64: groups three at a time and the groups left over. */
    one(40, 32 * 5, 0, 32, 2, 0);
    one(70, 64 * 7, 0, 64, 0, 1);
    one(33, 64 * 3, 0, 64, 2, 1);
}

/* ------------------------------------------------------- stf__pool_each */

static int each_fail(void *ud, size_t i, stf_err *err)
{
    unsigned char *seen = ud;
    seen[i] = 1;
    if (i == 300 || i == 301 || i == 517)
        return stf__err(err, i == 300 ? STF_EIO : STF_EFORMAT, "item %zu failed", i);
    return 0;
}

static void test_pool_each_first_failure(void **state)
{
    (void)state;
    for (unsigned threads = 1; threads <= 4; threads++) {
        stf_pool *p = NULL;
        stf_err err;
        stf_err_clear(&err);
        assert_int_equal(stf_pool_new(&p, threads, &err), 0);
        unsigned char seen[600];
        memset(seen, 0, sizeof seen);
        size_t failed = 0;
        assert_int_equal(stf__pool_each(p, 600, each_fail, seen, &failed, &err), STF_EIO);
        assert_int_equal(failed, 300);
        assert_string_equal(err.msg, "item 300 failed");
        for (size_t i = 0; i <= 300; i++) assert_int_equal(seen[i], 1);
        /* The window after the failing one never starts. */
        for (size_t i = 384; i < 600; i++) assert_int_equal(seen[i], 0);
        memset(seen, 0, sizeof seen);
        assert_int_equal(stf__pool_each(p, 300, each_fail, seen, &failed, &err), 0);
        assert_int_equal(failed, SIZE_MAX);
        for (size_t i = 0; i < 300; i++) assert_int_equal(seen[i], 1);
        stf_pool_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_matches_former_probes),
        cmocka_unit_test(test_scan_across_read_blocks),
        cmocka_unit_test(test_pool_each_first_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
