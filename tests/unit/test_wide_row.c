/*
 * lib/quant/wide_row.c: a row quantized in column pieces gives the bytes
 * and scale of stf_int8_quantize_rows / stf_w4a4_quantize_rows on the whole
 * row, for every SIMD variant, source and rounding dtype, mode and group,
 * any piece order and size, inline or on a pool; non-finite values name
 * their column; misuse is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quant_testutil.h"

/* k values of dtype dt at dst: Gaussian times `mag`, a few larger outliers. */
static void fill(void *dst, stf_dtype dt, size_t k, double mag, uint64_t seed)
{
    qt_rng r = { seed };
    for (size_t i = 0; i < k; i++) {
        float v = (float)(qt_randn(&r) * mag * (i % 997 == 3 ? 40.0 : 1.0));
        if (dt == STF_F32) ((float *)dst)[i] = v;
        else if (dt == STF_BF16) ((uint16_t *)dst)[i] = stf_f32_to_bf16(v);
        else ((uint16_t *)dst)[i] = stf_f32_to_f16(v);
    }
}

static size_t esz(stf_dtype dt) { return dt == STF_F32 ? 4 : 2; }

/*
 * Quantize the row in pieces of `piece` columns (the last one shorter):
 * pass 1 from the last piece to the first, pass 2 in order.
 */
static int by_pieces(int8_t *q, float *scale, const void *src, stf_dtype dt, size_t k,
                     int w4a4, const stf_int8_opts *o, size_t piece, stf_pool *pool,
                     stf_err *err)
{
    stf_wide_row wr;
    stf_wide_row_init(&wr, w4a4, o, k);
    float *scratch = malloc(piece * sizeof(float));
    assert_non_null(scratch);
    size_t np = (k + piece - 1) / piece;
    int rc = 0;
    for (size_t i = np; i-- > 0 && rc == 0;) {
        size_t c0 = i * piece, n = k - c0 < piece ? k - c0 : piece;
        rc = stf_wide_row_absmax(&wr, (const unsigned char *)src + c0 * esz(dt), dt, c0, n,
                                 scratch, pool, err);
    }
    *scale = stf_wide_row_scale(&wr);
    for (size_t i = 0; i < np && rc == 0; i++) {
        size_t c0 = i * piece, n = k - c0 < piece ? k - c0 : piece;
        rc = stf_wide_row_codes(q + (w4a4 ? c0 / 2 : c0), &wr,
                                (const unsigned char *)src + c0 * esz(dt), dt, c0, n, scratch,
                                pool, err);
    }
    free(scratch);
    return rc;
}

/* The variants this CPU runs, scalar first. */
static size_t variants(stf_simd *v)
{
    size_t n = 0;
    const stf_simd all[3] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    for (size_t i = 0; i < 3; i++)
        if (stf_simd_supported(all[i])) v[n++] = all[i];
    return n;
}

/* One row, whole and in pieces, under every variant: same codes, same scale bits. */
static void expect_same(const void *src, stf_dtype dt, size_t k, int w4a4,
                        const stf_int8_opts *o, const size_t *pieces, size_t npieces,
                        stf_pool *pool)
{
    size_t qb = w4a4 ? k / 2 : k;
    int8_t *want = malloc(qb), *got = malloc(qb);
    assert_true(want && got);
    stf_simd v[3];
    size_t nv = variants(v);
    stf_err err;
    for (size_t vi = 0; vi < nv; vi++) {
        assert_int_equal(stf_simd_select(v[vi], &err), 0);
        float ws, gs;
        int rc = w4a4 ? stf_w4a4_quantize_rows(want, &ws, src, dt, 1, k, o->group, o->mode, o->t,
                                               NULL, &err)
                      : stf_int8_quantize_rows(want, &ws, src, dt, 1, k, o, NULL, &err);
        assert_int_equal(rc, 0);
        for (size_t pi = 0; pi < npieces; pi++) {
            memset(got, 0x5A, qb);
            if (by_pieces(got, &gs, src, dt, k, w4a4, o, pieces[pi], pool, &err))
                fail_msg("%s: %s", stf_simd_name(v[vi]), err.msg);
            assert_int_equal(qt_bits(gs), qt_bits(ws));
            assert_memory_equal(got, want, qb);
        }
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, &err), 0);
    free(want);
    free(got);
}

static void test_int8_matches_whole_row(void **state)
{
    (void)state;
    enum { K = 8192 };
    static const stf_dtype dts[3] = { STF_BF16, STF_F16, STF_F32 };
    static const stf_quant_mode modes[3] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    static const unsigned groups[5] = { 0, 4, 16, 256, 1024 };
    const size_t pieces[3] = { 1024, 3072, K };
    void *src = malloc(K * 4);
    assert_non_null(src);
    for (size_t di = 0; di < 3; di++) {
        fill(src, dts[di], K, 0.02, 10 + di);
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t gi = 0; gi < 5; gi++) {
                /* T is the source dtype, except F32 working values rounded to BF16. */
                stf_int8_opts o = { groups[gi], modes[mi], dts[di] == STF_F32 ? STF_BF16 : dts[di] };
                expect_same(src, dts[di], K, 0, &o, pieces, 3, NULL);
                if (dts[di] == STF_F32) {
                    o.t = STF_F32;
                    expect_same(src, dts[di], K, 0, &o, pieces, 3, NULL);
                }
            }
    }
    free(src);
}

static void test_w4a4_matches_whole_row(void **state)
{
    (void)state;
    enum { K = 8192 };
    static const stf_dtype dts[3] = { STF_BF16, STF_F16, STF_F32 };
    static const unsigned groups[3] = { 16, 64, 256 };
    static const stf_quant_mode modes[3] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    const size_t pieces[2] = { 256, 4096 + 1024 };
    void *src = malloc(K * 4);
    assert_non_null(src);
    for (size_t di = 0; di < 3; di++) {
        fill(src, dts[di], K, 1.5, 20 + di);
        for (size_t gi = 0; gi < 3; gi++)
            for (size_t ti = 0; ti < 3; ti++)
                for (size_t mi = 0; mi < 3; mi++) {
                    stf_int8_opts o = { groups[gi], modes[mi], dts[ti] };
                    expect_same(src, dts[di], K, 1, &o, pieces, 2, NULL);
                }
    }
    free(src);
}

/* Pieces wide enough to be split over a pool: same bytes with 1 and 3 threads. */
static void test_pool_split(void **state)
{
    (void)state;
    enum { K = 3 * 65536 + 4096 };
    uint16_t *src = malloc(K * 2);
    assert_non_null(src);
    fill(src, STF_BF16, K, 0.05, 31);
    stf_pool *pool;
    stf_err err;
    assert_int_equal(stf_pool_new(&pool, 3, &err), 0);
    const size_t pieces[2] = { 33 * 4096, K };
    stf_int8_opts o = { 256, STF_QMODE_CUDA, STF_BF16 };
    expect_same(src, STF_BF16, K, 0, &o, pieces, 2, pool);
    o.group = 64;
    expect_same(src, STF_BF16, K, 1, &o, pieces, 2, pool);
    o.mode = STF_QMODE_EAGER;
    expect_same(src, STF_BF16, K, 1, &o, pieces, 2, pool);
    stf_pool_free(pool);
    free(src);
}

/* Zero rows take the scale floor; huge finite F32 values overflow the rotation;
 * F16 values whose T-rounding is infinite clamp; tiny F16 values give W4A4
 * eager a zero scale: all as the whole row does. */
static void test_extremes(void **state)
{
    (void)state;
    enum { K = 4096 };
    float *f = calloc(K, 4);
    uint16_t *h = malloc(K * 2);
    assert_true(f && h);
    const size_t pieces[2] = { 1024, 2048 };
    stf_int8_opts o = { 256, STF_QMODE_CUDA, STF_F32 };
    expect_same(f, STF_F32, K, 0, &o, pieces, 2, NULL);
    for (size_t i = 0; i < K; i++) f[i] = (i % 3 ? 1.0f : -1.0f) * 3.0e38f;
    expect_same(f, STF_F32, K, 0, &o, pieces, 2, NULL);
    o.mode = STF_QMODE_EAGER;
    expect_same(f, STF_F32, K, 0, &o, pieces, 2, NULL);
    for (size_t i = 0; i < K; i++) h[i] = stf_f32_to_f16(i % 5 ? 60000.0f : -65504.0f);
    o.mode = STF_QMODE_CUDA;
    o.t = STF_F16;
    expect_same(h, STF_F16, K, 0, &o, pieces, 2, NULL);
    o.mode = STF_QMODE_EAGER;
    expect_same(h, STF_F16, K, 0, &o, pieces, 2, NULL);
    /* W4A4 eager on F16 values so small that the T-rounded scale is 0. */
    for (size_t i = 0; i < K; i++) h[i] = (uint16_t)(i % 3); /* 0, 2^-24, 2^-23 */
    o.group = 64;
    expect_same(h, STF_F16, K, 1, &o, pieces, 2, NULL);
    free(f);
    free(h);
}

static void test_errors(void **state)
{
    (void)state;
    enum { K = 8192 };
    uint16_t *src = malloc(K * 2);
    float *scratch = malloc(K * 4);
    int8_t *q = malloc(K);
    assert_true(src && scratch && q);
    fill(src, STF_BF16, K, 0.1, 41);
    src[5000] = 0x7FC0; /* NaN */
    stf_int8_opts o = { 256, STF_QMODE_CUDA, STF_BF16 };
    stf_wide_row wr;
    stf_err err;
    stf_wide_row_init(&wr, 0, &o, K);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 0, 4096, scratch, NULL, &err), 0);
    assert_int_equal(stf_wide_row_absmax(&wr, src + 4096, STF_BF16, 4096, 4096, scratch, NULL, &err),
                     STF_ENUMERIC);
    assert_string_equal(err.msg, "column 5000: non-finite value (NaN or Inf) cannot be quantized");
    assert_int_equal(stf_wide_row_codes(q, &wr, src + 4096, STF_BF16, 4096, 4096, scratch, NULL,
                                        &err), STF_ENUMERIC);
    assert_string_equal(err.msg, "column 5000: non-finite value (NaN or Inf) cannot be quantized");
    /* W4A4 reports the same way. */
    o.group = 64;
    stf_wide_row_init(&wr, 1, &o, K);
    assert_int_equal(stf_wide_row_absmax(&wr, src + 4096, STF_BF16, 4096, 4096, scratch, NULL, &err),
                     STF_ENUMERIC);
    assert_string_equal(err.msg, "column 5000: non-finite value (NaN or Inf) cannot be quantized");
    src[5000] = 0;
    /* A piece that cuts a group, or runs past the row. */
    o.group = 256;
    stf_wide_row_init(&wr, 0, &o, K);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 128, 256, scratch, NULL, &err),
                     STF_EINVAL);
    assert_string_equal(err.msg, "int8 quantize: columns 128..384 of a row of 8192 are not whole "
                                 "groups of 256");
    assert_int_equal(stf_wide_row_codes(q, &wr, src, STF_BF16, 8192 - 256, 512, scratch, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_wide_row_codes(NULL, &wr, src, STF_BF16, 0, 256, scratch, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 0, 256, NULL, NULL, &err), STF_EINVAL);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_I8, 0, 256, scratch, NULL, &err),
                     STF_EUNSUPPORTED);
    /* Options the whole-row functions refuse. */
    o.group = 32;
    stf_wide_row_init(&wr, 0, &o, K);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 0, 256, scratch, NULL, &err),
                     STF_EINVAL);
    assert_string_equal(err.msg, "int8 quantize: group size 32 is not a power of 4 in 4..1024");
    o.group = 64;
    o.t = STF_I8;
    stf_wide_row_init(&wr, 0, &o, K);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 0, 256, scratch, NULL, &err),
                     STF_EINVAL);
    o.t = STF_BF16;
    stf_wide_row_init(&wr, 1, &o, K - 32); /* W4A4 rows are multiples of 64 */
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 0, 64, scratch, NULL, &err),
                     STF_EINVAL);
    /* An empty piece is nothing to do. */
    stf_wide_row_init(&wr, 0, &o, K);
    assert_int_equal(stf_wide_row_absmax(&wr, src, STF_BF16, 0, 0, scratch, NULL, &err), 0);
    free(src);
    free(scratch);
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int8_matches_whole_row),
        cmocka_unit_test(test_w4a4_matches_whole_row),
        cmocka_unit_test(test_pool_split),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
