/*
 * INT8 rowwise quantize/dequantize over whole tensors: error bounds of
 * stfix-convrot(7), ERROR METRICS on Gaussian rows, thread-count independence,
 * the Sylvester repair round trip (SYLVESTER ORDER), scale axes, and every
 * error path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "quant_testutil.h"

static double rel_l2(const float *ref, const float *test, size_t n)
{
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)ref[i] - (double)test[i];
        e2 += d * d;
        r2 += (double)ref[i] * ref[i];
    }
    return sqrt(e2 / r2);
}

/* comfy-kitchen's metric: mean|W-Ŵ| / (max|W| + 1e-8). */
static double kitchen(const float *ref, const float *test, size_t n)
{
    double s = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        s += fabs((double)ref[i] - (double)test[i]);
        if (fabs((double)ref[i]) > mx) mx = fabs((double)ref[i]);
    }
    return (s / (double)n) / (mx + 1e-8);
}

/* randn(n,k) rounded to BF16; w gets the exact BF16 values as F32. */
static void randn_bf16(uint16_t *b, float *w, size_t count, uint64_t seed)
{
    qt_rng r = { seed };
    for (size_t i = 0; i < count; i++) {
        b[i] = stf_f32_to_bf16((float)qt_randn(&r));
        w[i] = stf_bf16_to_f32(b[i]);
    }
}

enum { N = 128, K = 256 };

static void test_gaussian_error_bounds(void **state)
{
    (void)state;
    uint16_t *b = malloc(N * K * 2);
    float *w = malloc(N * K * 4), *dq = malloc(N * K * 4), *scale = malloc(N * 4);
    int8_t *q = malloc(N * K);
    assert_true(b && w && dq && scale && q);
    randn_bf16(b, w, N * K, 1);
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    static const unsigned groups[] = { 16, 64, 256, 0 };
    for (size_t m = 0; m < 3; m++) {
        for (size_t gi = 0; gi < 4; gi++) {
            stf_int8_opts o = { groups[gi], modes[m], STF_BF16 };
            stf_err err;
            assert_int_equal(stf_int8_quantize_rows(q, scale, b, STF_BF16, N, K, &o, NULL, &err), 0);
            stf_dequant_opts d = { STF_SCALE_ROW, groups[gi], 0 };
            assert_int_equal(stf_int8_dequantize(dq, q, scale, N, K, &d, NULL, &err), 0);
            double rl = rel_l2(w, dq, N * K), km = kitchen(w, dq, N * K);
            /* stfix-convrot(7), ERROR METRICS: typical relL2 ≈ 0.008, kitchen metric ≈ 0.0019,
             * bound 0.02 */
            assert_true(rl < 0.012);
            assert_true(rl > 0.004);
            assert_true(km < 0.02);
            int maxq = 0;
            for (size_t i = 0; i < N * K; i++) maxq = abs(q[i]) > maxq ? abs(q[i]) : maxq;
            assert_true(maxq >= 126 && maxq <= 128);
        }
    }
    free(b);
    free(w);
    free(dq);
    free(scale);
    free(q);
}

static void test_thread_count_independent(void **state)
{
    (void)state;
    enum { R = 300, C = 1024 };
    uint16_t *b = malloc(R * C * 2);
    float *w = malloc(R * C * 4), *s1 = malloc(R * 4), *s2 = malloc(R * 4);
    float *d1 = malloc(R * C * 4), *d2 = malloc(R * C * 4);
    int8_t *q1 = malloc(R * C), *q2 = malloc(R * C);
    assert_true(b && w && s1 && s2 && d1 && d2 && q1 && q2);
    randn_bf16(b, w, R * C, 77);
    stf_int8_opts o = { 256, STF_QMODE_CUDA, STF_BF16 };
    stf_dequant_opts d = { STF_SCALE_ROW, 256, 0 };
    assert_int_equal(stf_int8_quantize_rows(q1, s1, b, STF_BF16, R, C, &o, NULL, NULL), 0);
    assert_int_equal(stf_int8_dequantize(d1, q1, s1, R, C, &d, NULL, NULL), 0);
    static const unsigned threads[] = { 1, 2, 3, 5 };
    for (size_t t = 0; t < 4; t++) {
        stf_pool *p = NULL;
        assert_int_equal(stf_pool_new(&p, threads[t], NULL), 0);
        memset(q2, 0x55, R * C);
        assert_int_equal(stf_int8_quantize_rows(q2, s2, b, STF_BF16, R, C, &o, p, NULL), 0);
        assert_memory_equal(q1, q2, R * C);
        assert_memory_equal(s1, s2, R * 4);
        assert_int_equal(stf_int8_dequantize(d2, q2, s2, R, C, &d, p, NULL), 0);
        assert_memory_equal(d1, d2, (size_t)R * C * 4);
        stf_pool_free(p);
    }
    free(b);
    free(w);
    free(s1);
    free(s2);
    free(d1);
    free(d2);
    free(q1);
    free(q2);
}

/* A G=128 Sylvester layer (stfix-convrot(7), SYLVESTER ORDER): dequantize and
 * undo, requantize with the regular G=256, and land within the INT8 error of
 * the original. */
static void test_sylvester_repair_round_trip(void **state)
{
    (void)state;
    enum { R = 32, C = 256, G = 128 };
    static float w[R * C], rot[R * C], back[R * C], dq[R * C], s[R], s2[R];
    static int8_t q[R * C], q2[R * C];
    qt_rng r = { 11 };
    for (size_t i = 0; i < R * C; i++) w[i] = (float)qt_randn(&r);
    /* The exporter: W·S·c with c = fl32(1/fl32(sqrt G)), in fp32. */
    float c = 1.0f / sqrtf((float)G);
    for (size_t row = 0; row < R; row++)
        for (size_t blk = 0; blk < C; blk += G)
            for (unsigned i = 0; i < G; i++) {
                float acc = 0.0f;
                for (unsigned j = 0; j < G; j++)
                    acc += w[row * C + blk + j] * ((__builtin_popcount(i & j) & 1) ? -c : c);
                rot[row * C + blk + i] = acc;
            }
    stf_int8_opts o = { 0, STF_QMODE_FP32, STF_F32 };
    assert_int_equal(stf_int8_quantize_rows(q, s, rot, STF_F32, R, C, &o, NULL, NULL), 0);
    stf_dequant_opts und = { STF_SCALE_ROW, G, 1 };
    assert_int_equal(stf_int8_dequantize(back, q, s, R, C, &und, NULL, NULL), 0);
    double e1 = rel_l2(w, back, R * C);
    assert_true(e1 < 0.02);
    stf_int8_opts o2 = { 256, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(q2, s2, back, STF_F32, R, C, &o2, NULL, NULL), 0);
    stf_dequant_opts reg = { STF_SCALE_ROW, 256, 0 };
    assert_int_equal(stf_int8_dequantize(dq, q2, s2, R, C, &reg, NULL, NULL), 0);
    double e2 = rel_l2(w, dq, R * C);
    assert_true(e2 < 0.02);
    /* Undoing with the wrong (regular) matrix instead is far off. */
    stf_dequant_opts wrong = { STF_SCALE_ROW, 64, 0 };
    assert_int_equal(stf_int8_dequantize(dq, q, s, R, C, &wrong, NULL, NULL), 0);
    assert_true(rel_l2(w, dq, R * C) > 0.5);
}

static void test_small_rows_exact(void **state)
{
    (void)state;
    /* No rotation, BF16: a = 1, d = 0x3C01; -0.5/d = -63.504 -> BF16 -63.5
     * -> rint -64; 0.25/d = 31.752 -> 31.75 -> 32. */
    const uint16_t b[4] = { 0x3F80, 0xBF00, 0x3E80, 0x0000 };
    int8_t q[4];
    float s;
    stf_int8_opts o = { 0, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(q, &s, b, STF_BF16, 1, 4, &o, NULL, NULL), 0);
    assert_int_equal(q[0], 127);
    assert_int_equal(q[1], -64);
    assert_int_equal(q[2], 32);
    assert_int_equal(q[3], 0);
    assert_int_equal(qt_bits(s), 0x3C010204u);

    /* F16 rows whose rotation overflows F16: no NaN, the code clamps. */
    static const int sgn[16] = { 1, 1, 1, -1, 1, 1, 1, -1, 1, 1, 1, -1, -1, -1, -1, 1 };
    uint16_t h[16];
    for (int i = 0; i < 16; i++) h[i] = sgn[i] > 0 ? 0x7BFF : 0xFBFF; /* ±65504 */
    int8_t q16[16];
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_EAGER };
    for (int m = 0; m < 2; m++) {
        stf_int8_opts of = { 16, modes[m], STF_F16 };
        assert_int_equal(stf_int8_quantize_rows(q16, &s, h, STF_F16, 1, 16, &of, NULL, NULL), 0);
        assert_int_equal(q16[0], 127);
        for (int i = 1; i < 16; i++) assert_int_equal(q16[i], 0);
        assert_true(isfinite(s));
        assert_true(s == 65504.0f * qt_float(0x3C010204u) || s == 65504.0f / 127.0f);
    }
    /* Tiny F16 rows: the divisor rounds to F16 zero and takes the 2^-14 guard. */
    uint16_t tiny[16] = { 0x0001 }; /* 2^-24 */
    stf_int8_opts of = { 0, STF_QMODE_CUDA, STF_F16 };
    assert_int_equal(stf_int8_quantize_rows(q16, &s, tiny, STF_F16, 1, 16, &of, NULL, NULL), 0);
    assert_int_equal(qt_bits(s), qt_bits(0x1p-24f * qt_float(0x3C010204u)));
    assert_int_equal(q16[0], 0); /* 2^-24 / 2^-14 = 2^-10 */
}

static void test_dequant_axes(void **state)
{
    (void)state;
    const int8_t q[6] = { -128, -1, 0, 1, 7, 127 };
    const float sc[3] = { 0.5f, 0.1f, 3.0f };
    float d[6];
    stf_dequant_opts o = { STF_SCALE_TENSOR, 0, 0 };
    assert_int_equal(stf_int8_dequantize(d, q, sc, 2, 3, &o, NULL, NULL), 0);
    for (int i = 0; i < 6; i++) assert_true(d[i] == (float)q[i] * 0.5f);
    o.axis = STF_SCALE_ROW;
    assert_int_equal(stf_int8_dequantize(d, q, sc, 2, 3, &o, NULL, NULL), 0);
    for (int i = 0; i < 6; i++) assert_true(d[i] == (float)q[i] * sc[i / 3]);
    o.axis = STF_SCALE_COL;
    assert_int_equal(stf_int8_dequantize(d, q, sc, 2, 3, &o, NULL, NULL), 0);
    for (int i = 0; i < 6; i++) assert_true(d[i] == (float)q[i] * sc[i % 3]);
    assert_true(d[0] == -64.0f && d[5] == 381.0f);

    /* Rotation follows the scaling: one group of 4, codes e_0 scaled by 2. */
    const int8_t e0[4] = { 1, 0, 0, 0 };
    const float two = 2.0f;
    stf_dequant_opts r = { STF_SCALE_TENSOR, 4, 0 };
    assert_int_equal(stf_int8_dequantize(d, e0, &two, 1, 4, &r, NULL, NULL), 0);
    assert_true(d[0] == 1.0f && d[1] == 1.0f && d[2] == 1.0f && d[3] == -1.0f);
    r.sylvester = 1;
    assert_int_equal(stf_int8_dequantize(d, e0, &two, 1, 4, &r, NULL, NULL), 0);
    for (int i = 0; i < 4; i++) assert_true(d[i] == 1.0f); /* S·e0 = ones, ·2·(1/2) */
}

static void test_nonfinite_names_row(void **state)
{
    (void)state;
    enum { R = 40, C = 64 };
    static uint16_t b[R * C];
    static float w[R * C], s[R];
    static int8_t q[R * C];
    randn_bf16(b, w, R * C, 3);
    b[5 * C + 17] = 0x7FC1;
    b[31 * C + 2] = 0x7F80;
    stf_pool *p = NULL;
    assert_int_equal(stf_pool_new(&p, 3, NULL), 0);
    stf_int8_opts o = { 16, STF_QMODE_CUDA, STF_BF16 };
    stf_err err;
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, R, C, &o, p, &err), STF_ENUMERIC);
    assert_int_equal(err.code, STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "row 5, column 17"));
    b[5 * C + 17] = 0;
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, R, C, &o, NULL, &err), STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "row 31, column 2"));
    stf_pool_free(p);

    float f[4] = { 1, 2, INFINITY, 0 };
    stf_int8_opts of = { 4, STF_QMODE_FP32, STF_F32 };
    assert_int_equal(stf_int8_quantize_rows(q, s, f, STF_F32, 1, 4, &of, NULL, &err), STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "row 0, column 2"));
    uint16_t h[4] = { 0, 0x7C00, 0, 0 };
    of.t = STF_F16;
    of.mode = STF_QMODE_EAGER;
    assert_int_equal(stf_int8_quantize_rows(q, s, h, STF_F16, 1, 4, &of, NULL, &err), STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "row 0, column 1"));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    uint16_t b[64] = { 0 };
    int8_t q[64];
    float s[4], d[64];
    stf_err err;
    stf_int8_opts o = { 8, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 64, &o, NULL, &err), STF_EINVAL);
    o.group = 2048;
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 64, &o, NULL, &err), STF_EINVAL);
    o.group = 16;
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 40, &o, NULL, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "40"));
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_I8, 1, 64, &o, NULL, &err),
                     STF_EUNSUPPORTED);
    o.t = STF_F64;
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 64, &o, NULL, &err), STF_EINVAL);
    o.t = STF_BF16;
    o.mode = (stf_quant_mode)7;
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 64, &o, NULL, &err), STF_EINVAL);
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 64, NULL, NULL, &err), STF_EINVAL);
    o.mode = STF_QMODE_CUDA;
    assert_int_equal(stf_int8_quantize_rows(NULL, s, b, STF_BF16, 1, 64, &o, NULL, &err), STF_EINVAL);
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, SIZE_MAX / 2, 64, &o, NULL, &err),
                     STF_ELIMIT);
    assert_int_equal(stf_int8_quantize_rows(q, s, b, STF_BF16, 0, 64, &o, NULL, &err), 0);

    stf_dequant_opts dq = { STF_SCALE_ROW, 8, 0 };
    assert_int_equal(stf_int8_dequantize(d, q, s, 1, 64, &dq, NULL, &err), STF_EINVAL);
    dq.sylvester = 1; /* 8 is a valid Sylvester size */
    assert_int_equal(stf_int8_dequantize(d, q, s, 1, 64, &dq, NULL, &err), 0);
    dq.rot_group = 12;
    assert_int_equal(stf_int8_dequantize(d, q, s, 1, 64, &dq, NULL, &err), STF_EINVAL);
    dq.rot_group = 128;
    assert_int_equal(stf_int8_dequantize(d, q, s, 1, 64, &dq, NULL, &err), STF_EINVAL);
    dq.axis = (stf_scale_axis)9;
    dq.rot_group = 0;
    assert_int_equal(stf_int8_dequantize(d, q, s, 1, 64, &dq, NULL, &err), STF_EINVAL);
    assert_int_equal(stf_int8_dequantize(d, q, s, 1, 64, NULL, NULL, &err), STF_EINVAL);
}

static int g_fail_after;
static void *failing_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (g_fail_after-- <= 0) return NULL;
    return realloc(p, n ? n : 1);
}
static void plain_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    uint16_t b[64] = { 0x3F80 };
    int8_t q[64];
    float s[1];
    stf_err err;
    stf_allocator a = { failing_realloc, plain_free, NULL };
    g_fail_after = 0;
    stf_set_allocator(&a);
    stf_int8_opts o = { 16, STF_QMODE_CUDA, STF_BF16 };
    int rc = stf_int8_quantize_rows(q, s, b, STF_BF16, 1, 64, &o, NULL, &err);
    stf_set_allocator(NULL);
    assert_int_equal(rc, STF_ENOMEM);
    assert_int_equal(err.code, STF_ENOMEM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gaussian_error_bounds),
        cmocka_unit_test(test_thread_count_independent),
        cmocka_unit_test(test_sylvester_repair_round_trip),
        cmocka_unit_test(test_small_rows_exact),
        cmocka_unit_test(test_dequant_axes),
        cmocka_unit_test(test_nonfinite_names_row),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
