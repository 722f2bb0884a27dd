/*
 * convrot_w4a4 (spec/convrot.md §8): packing, error bounds of §11, the
 * [-7, 7] code range, thread independence and argument checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "quant_testutil.h"

static void test_gaussian_error(void **state)
{
    (void)state;
    enum { N = 16, K = 256 };
    static float w[N * K], dq[N * K], s[N];
    static int8_t p[N * K / 2];
    qt_rng r = { 8 };
    for (size_t i = 0; i < N * K; i++) w[i] = (float)qt_randn(&r);
    assert_int_equal(stf_w4a4_quantize_rows(p, s, w, STF_F32, N, K, 256, STF_F32, NULL, NULL), 0);
    assert_int_equal(stf_w4a4_dequantize(dq, p, s, N, K, 256, NULL, NULL), 0);
    double e2 = 0, r2 = 0, ae = 0, mx = 0;
    for (size_t i = 0; i < N * K; i++) {
        double d = (double)w[i] - dq[i];
        e2 += d * d;
        r2 += (double)w[i] * w[i];
        ae += fabs(d);
        if (fabs((double)w[i]) > mx) mx = fabs((double)w[i]);
    }
    double rel = sqrt(e2 / r2), km = ae / (N * K) / (mx + 1e-8);
    /* spec §11: kitchen bound 0.04; typical relL2 0.128 */
    assert_true(km < 0.04);
    assert_true(rel > 0.08 && rel < 0.2);
}

static void test_codes_never_minus8(void **state)
{
    (void)state;
    enum { N = 8, K = 128 };
    static uint16_t b[N * K];
    static float s[N];
    static int8_t p[N * K / 2];
    qt_rng r = { 9 };
    for (size_t i = 0; i < N * K; i++) {
        double v = qt_randn(&r);
        if (i % 37 == 0) v *= 50.0; /* outliers */
        b[i] = stf_f32_to_bf16((float)v);
    }
    assert_int_equal(stf_w4a4_quantize_rows(p, s, b, STF_BF16, N, K, 64, STF_BF16, NULL, NULL), 0);
    int seen7 = 0;
    for (size_t i = 0; i < N * K / 2; i++) {
        unsigned lo = (uint8_t)p[i] & 0xFu, hi = ((uint8_t)p[i] >> 4) & 0xFu;
        assert_int_not_equal(lo, 8);
        assert_int_not_equal(hi, 8);
        seen7 += lo == 7 || lo == 9 || hi == 7 || hi == 9;
    }
    assert_true(seen7 >= N); /* every row reaches ±7 */
}

/* Unpack: low nibble = even column, nibbles >= 8 are negative. */
static void test_unpack_layout(void **state)
{
    (void)state;
    int8_t p[32];
    memset(p, 0, sizeof p);
    p[0] = (int8_t)0x8F; /* col 0 = -1, col 1 = -8 */
    p[1] = 0x71;         /* col 2 = 1, col 3 = 7 */
    float s = 0.5f, d[64], want[64];
    memset(want, 0, sizeof want);
    want[0] = -0.5f;
    want[1] = -4.0f;
    want[2] = 0.5f;
    want[3] = 3.5f;
    assert_int_equal(stf_hadamard_regular(want, 64, 16, NULL), 0);
    assert_int_equal(stf_w4a4_dequantize(d, p, &s, 1, 64, 16, NULL, NULL), 0);
    assert_memory_equal(d, want, sizeof d);
}

static void test_threads_and_errors(void **state)
{
    (void)state;
    enum { N = 50, K = 512 };
    static float w[N * K], s1[N], s2[N];
    static int8_t p1[N * K / 2], p2[N * K / 2];
    qt_rng r = { 10 };
    for (size_t i = 0; i < N * K; i++) w[i] = (float)qt_randn(&r);
    assert_int_equal(stf_w4a4_quantize_rows(p1, s1, w, STF_F32, N, K, 256, STF_BF16, NULL, NULL), 0);
    stf_pool *pool = NULL;
    assert_int_equal(stf_pool_new(&pool, 3, NULL), 0);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, N, K, 256, STF_BF16, pool, NULL), 0);
    assert_memory_equal(p1, p2, sizeof p1);
    assert_memory_equal(s1, s2, sizeof s1);

    stf_err err;
    w[7 * K + 300] = NAN;
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, N, K, 256, STF_BF16, pool, &err),
                     STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "row 7, column 300"));
    stf_pool_free(pool);

    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 48, 16, STF_F32, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 64, 4, STF_F32, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 64, 256, STF_F32, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_I8, 1, 64, 64, STF_F32, NULL, &err),
                     STF_EUNSUPPORTED);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 64, 64, STF_I8, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_dequantize(w, p2, s2, 1, 96, 16, NULL, &err), STF_EINVAL);
    assert_int_equal(stf_w4a4_dequantize(NULL, p2, s2, 1, 64, 16, NULL, &err), STF_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gaussian_error),
        cmocka_unit_test(test_codes_never_minus8),
        cmocka_unit_test(test_unpack_layout),
        cmocka_unit_test(test_threads_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
