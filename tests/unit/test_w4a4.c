/*
 * convrot_w4a4: packing, error bounds against comfy-kitchen's test
 * thresholds, the [-7, 7] code range, thread independence, argument checks,
 * and hand-derived rows for the eager and cuda rules in BF16, F16 and F32.
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
    assert_int_equal(stf_w4a4_quantize_rows(p, s, w, STF_F32, N, K, 256,
                                            STF_QMODE_CUDA, STF_F32, NULL, NULL), 0);
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
    /* comfy-kitchen's test bound is 0.04; typical relL2 is 0.128 */
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
    assert_int_equal(stf_w4a4_quantize_rows(p, s, b, STF_BF16, N, K, 64,
                                            STF_QMODE_CUDA, STF_BF16, NULL, NULL), 0);
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
    assert_int_equal(stf_w4a4_quantize_rows(p1, s1, w, STF_F32, N, K, 256,
                                            STF_QMODE_CUDA, STF_BF16, NULL, NULL), 0);
    stf_pool *pool = NULL;
    assert_int_equal(stf_pool_new(&pool, 3, NULL), 0);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, N, K, 256,
                                            STF_QMODE_CUDA, STF_BF16, pool, NULL), 0);
    assert_memory_equal(p1, p2, sizeof p1);
    assert_memory_equal(s1, s2, sizeof s1);

    stf_err err;
    w[7 * K + 300] = NAN;
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, N, K, 256,
                                            STF_QMODE_CUDA, STF_BF16, pool, &err),
                     STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "row 7, column 300"));
    stf_pool_free(pool);

    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 48, 16,
                                            STF_QMODE_CUDA, STF_F32, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 64, 4,
                                            STF_QMODE_CUDA, STF_F32, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 64, 256,
                                            STF_QMODE_CUDA, STF_F32, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_I8, 1, 64, 64,
                                            STF_QMODE_CUDA, STF_F32, NULL, &err),
                     STF_EUNSUPPORTED);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, w, STF_F32, 1, 64, 64,
                                            STF_QMODE_CUDA, STF_I8, NULL, &err),
                     STF_EINVAL);
    assert_int_equal(stf_w4a4_dequantize(w, p2, s2, 1, 96, 16, NULL, &err), STF_EINVAL);
    assert_int_equal(stf_w4a4_dequantize(NULL, p2, s2, 1, 64, 16, NULL, &err), STF_EINVAL);
}

/* ------------------------------------------------ hand-derived rows */

static const stf_simd variants[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };

/* Entry (i, j) of 4*H16: -1 to the number of base-4 digit pairs of i and j
 * that sum to 3. */
static int h16(unsigned i, unsigned j)
{
    int n = ((i & 3u) + (j & 3u) == 3u) + (((i >> 2) & 3u) + ((j >> 2) & 3u) == 3u);
    return n % 2 ? -1 : 1;
}

/*
 * K = 64, G = 16, one nonzero weight per group: w[16g + g] = c[g]. Each FHT
 * butterfly then sees at most one nonzero value, so the rotation is exact:
 * group g of R is (c[g] / 4) * h16(g, j). All 16 values of a group share
 * one magnitude |c[g]| / 4, and so one code magnitude, signed by
 * sign(c[g]) * h16(g, j). Written as T (BF16, F16 or F32) into dst.
 */
static void spike_row(void *dst, stf_dtype t, const float c[4])
{
    float w[64];
    memset(w, 0, sizeof w);
    for (unsigned g = 0; g < 4; g++) w[16 * g + g] = c[g];
    assert_int_equal(stf_convert_from_f32(dst, t, w, 64, NULL), 0);
}

/* One row, G = 16, by every SIMD variant: exact packed bytes and scale. */
static void expect_row(const void *src, stf_dtype dt, stf_quant_mode mode, stf_dtype t,
                       const char *hex, uint32_t scale_bits)
{
    uint8_t want[32];
    assert_int_equal(qt_hex(want, sizeof want, hex), 32);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        if (!stf_simd_supported(variants[v])) continue;
        assert_int_equal(stf_simd_select(variants[v], NULL), 0);
        int8_t packed[32];
        float s = -1.0f;
        assert_int_equal(stf_w4a4_quantize_rows(packed, &s, src, dt, 1, 64, 16, mode, t, NULL,
                                                NULL),
                         0);
        assert_memory_equal(packed, want, 32);
        assert_int_equal(qt_bits(s), scale_bits);
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
}

/*
 * Packed bytes of the spike rows below, by code magnitude m[g] of group g
 * and the sign patterns h16(g, .) (byte i = code 2i | code 2i+1 << 4):
 *   group 0, h16(0, .) = + + + - + + + - + + + - - - - +
 *   group 1, h16(1, .) = + + - + + + - + + + - + - - + -
 *   group 2, h16(2, .) = + - + + + - + + + - + + - + - -  (c < 0: flipped)
 *   group 3, h16(3, .) = - + + + - + + + - + + + + - - -
 */
#define G0_7 "77 97 77 97 77 97 99 79 "
#define ROW_7_2_4_6 G0_7 "22 2e 22 2e 22 2e ee e2 4c cc 4c cc 4c cc c4 44 6a 66 6a 66 6a 66 a6 aa"
#define ROW_7_3_3_5 G0_7 "33 3d 33 3d 33 3d dd d3 3d dd 3d dd 3d dd d3 33 5b 55 5b 55 5b 55 b5 bb"

/* A BF16 or F16 spike row with a = 1: eager codes 7 2 4 6 with the given
 * scale, cuda and fp32 codes 7 3 3 5 with the scale fl32(1/7). */
static void expect_16bit_row(stf_dtype t, const float c[4], uint32_t eager_bits)
{
    uint16_t h[64];
    spike_row(h, t, c);
    expect_row(h, t, STF_QMODE_EAGER, t, ROW_7_2_4_6, eager_bits);
    expect_row(h, t, STF_QMODE_CUDA, t, ROW_7_3_3_5, 0x3E124925u);
    expect_row(h, t, STF_QMODE_FP32, t, ROW_7_3_3_5, 0x3E124925u);
}

/*
 * BF16, c = { 4, 183/128, -255/128, 201/64 }: |R| per group is 1, 183/512,
 * 255/512, 201/256 (all BF16), so a = 1.
 * eager: s = rT(fl32(1/7)). 1/7 = 1.001001001...b * 2^-3; BF16 keeps 7
 *   fraction bits, 1.0010010b, the rest (01001...) is under half: s = 73/512
 *   = 0.142578125 = 0x3E120000. Codes rint(rT(v / s)), v / s = 512 v / 73;
 *   BF16 spacing is 2^-6 in [2, 4) and 2^-5 in [4, 8):
 *     1       -> 512/73 = 7.0137 -> 7.0    -> 7
 *     183/512 -> 183/73 = 2.5068 -> 2.5    -> 2 (half to even)
 *     255/512 -> 255/73 = 3.4932 -> 3.5    -> 4 (half to even)
 *     201/256 -> 402/73 = 5.5068 -> 5.5    -> 6 (half to even)
 * cuda: s = 1 * fl32(1/7) = 0x3E124925, fl32(1/s) = 7 exactly (1/s =
 *   6.99999982, nearer 7 than 7 - 2^-21), codes rint(7 v): 7, rint(2.5020)
 *   = 3, rint(3.4863) = 3, rint(5.4961) = 5.
 */
static void test_eager_bf16_row(void **state)
{
    (void)state;
    static const float c[4] = { 4.0f, 183.0f / 128, -255.0f / 128, 201.0f / 64 };
    expect_16bit_row(STF_BF16, c, 0x3E120000u);
    /* The same values as F32 working values with T = BF16 (a requantized
     * layer): T, not the source dtype, decides. */
    float w[64];
    spike_row(w, STF_F32, c);
    expect_row(w, STF_F32, STF_QMODE_EAGER, STF_BF16, ROW_7_2_4_6, 0x3E120000u);
}

/*
 * F16, c = { 4, 1463/1024, -2047/1024, 1609/512 }: |R| = 1, 1463/4096,
 * 2047/4096, 1609/2048 (all F16), a = 1.
 * eager: F16 keeps 10 fraction bits of 1/7: 1.0010010010b * 2^-3, the rest
 *   (01001...) under half: s = 1170/8192 = 585/4096 = 0x3E124000.
 *   v / s = 4096 v / 585; F16 spacing is 2^-9 in [2, 4) and 2^-8 in [4, 8):
 *     1         -> 4096/585 = 7.00171 -> 7.0 -> 7
 *     1463/4096 -> 1463/585 = 2.50085 -> 2.5 -> 2
 *     2047/4096 -> 2047/585 = 3.49915 -> 3.5 -> 4
 *     1609/2048 -> 3218/585 = 5.50085 -> 5.5 -> 6
 * cuda: as for BF16, codes rint(7 v) = 7, rint(2.50024) = 3,
 *   rint(3.49829) = 3, rint(5.49951) = 5.
 */
static void test_eager_f16_row(void **state)
{
    (void)state;
    static const float c[4] = { 4.0f, 1463.0f / 1024, -2047.0f / 1024, 1609.0f / 512 };
    expect_16bit_row(STF_F16, c, 0x3E124000u);
}

/*
 * F32, c = { 12, 4 v1, -4 v2, 4 v3 } with v1 = 0x3F249249 = 10785353 *
 * 2^-24, v2 = 0x3F892493 = 8987795 * 2^-23, v3 = 0x3E5B6DB8 = 14380472 *
 * 2^-26: |R| = 3, v1, v2, v3, a = 3. T = F32, so no rounding but fl32.
 * eager: s = fl32(3/7): 3/7 = 14380470.86 * 2^-25, s = 14380471 * 2^-25 =
 *   0x3EDB6DB7. Codes rint(fl32(v / s)) (fp32 spacing 2^-23 in [1, 2),
 *   2^-22 in [2, 4), 2^-24 in [0.5, 1)):
 *     3  -> 2^25 * 3 / 14380471 = 7 - 7.0e-8         -> 7.0          -> 7
 *     v1 -> 21570706 / 14380471 = 1.5 - 3.5e-8       -> 1.5          -> 2
 *     v2 -> 35951180 / 14380471 = 2.5 + 1.74e-7      -> 2.5 + 2^-22  -> 3
 *     v3 -> 14380472 / 28760942 = 0.5 + 3.48e-8      -> 0.5 + 2^-24  -> 1
 * cuda: fl32(1/7) = 9586981 * 2^-26, s = 3 * that = 14380471.5 * 2^-25, a
 *   tie, to even: 14380472 * 2^-25 = 0x3EDB6DB8; fl32(1/s) = 9786709 *
 *   2^-22 (2^47 / 14380472 = 9786709.1). v * fl32(1/s): 3 -> 7, v1 ->
 *   1.5 - 2^-23 -> 1, v2 -> 2.5 (a tie) -> 2, v3 -> 0.5 -> 0.
 */
static void test_eager_f32_row(void **state)
{
    (void)state;
    const float c[4] = { 12.0f, qt_float(0x40249249u), -qt_float(0x40892493u),
                         qt_float(0x3F5B6DB8u) };
    float w[64];
    spike_row(w, STF_F32, c);
    expect_row(w, STF_F32, STF_QMODE_EAGER, STF_F32,
               G0_7 "22 2e 22 2e 22 2e ee e2 3d dd 3d dd 3d dd d3 33 1f 11 1f 11 1f 11 f1 ff",
               0x3EDB6DB7u);
    expect_row(w, STF_F32, STF_QMODE_CUDA, STF_F32,
               G0_7 "11 1f 11 1f 11 1f ff f1 2e ee 2e ee 2e ee e2 22 00 00 00 00 00 00 00 00",
               0x3EDB6DB8u);
}

/* 31 zero bytes; ZEROS is a whole row of them. */
#define Z31 "00000000000000000000000000000000000000000000000000000000000000"
#define ZEROS "00" Z31

/*
 * Zero rows: every code is 0, the scale is the floor.
 * eager BF16: rT(fl32(1e-10)) = rT(0x2EDBE6FF) = 0x2EDC0000 = 55 * 2^-39;
 *   / 7 = 7.857 * 2^-39 = 1.9643 * 2^-37; BF16: 251/128 * 2^-37 =
 *   0x2D7B0000.
 * eager F32: 0x2EDBE6FF = 14411519 * 2^-57; / 7 = 16470307.4 * 2^-60 ->
 *   16470307 * 2^-60 = 0x2D7B5123.
 * eager F16: rT(1e-10) = 0 in F16, so a stays 0 and rT(0 / 7) = 0; stfix
 *   stores F16's smallest normal 2^-14 = 0x38800000 rather than PyTorch's 0
 *   (a zero scale fails every check, and its 0/0 codes are NaN).
 * cuda, every T: fl32(1e-10) = 0x2EDBE6FF.
 */
static void test_eager_zero_rows(void **state)
{
    (void)state;
    static const float z[4] = { 0, 0, 0, 0 };
    uint16_t b[64], h[64];
    float w[64];
    spike_row(b, STF_BF16, z);
    spike_row(h, STF_F16, z);
    spike_row(w, STF_F32, z);
    expect_row(b, STF_BF16, STF_QMODE_EAGER, STF_BF16, ZEROS, 0x2D7B0000u);
    expect_row(w, STF_F32, STF_QMODE_EAGER, STF_F32, ZEROS, 0x2D7B5123u);
    expect_row(h, STF_F16, STF_QMODE_EAGER, STF_F16, ZEROS, 0x38800000u);
    expect_row(b, STF_BF16, STF_QMODE_CUDA, STF_BF16, ZEROS, 0x2EDBE6FFu);
    expect_row(h, STF_F16, STF_QMODE_CUDA, STF_F16, ZEROS, 0x2EDBE6FFu);
}

/*
 * F16 rows where PyTorch's answer is unusable, guarded as the cuda rule is:
 * - tiny: c = { 12 * 2^-24 } (an F16 subnormal), |R| = 3 * 2^-24 in group
 *   0. rT(3/7 * 2^-24) = 0 (under half the smallest subnormal), so PyTorch
 *   stores s = 0 with codes +-7; stfix stores 2^-14 with codes
 *   rint(3 * 2^-10) = 0. Both dequantize to zeros.
 * - overflow: w[j] = 60000 * h16(0, j) for j < 16, so R[0] = 4 * 60000 =
 *   240000 -> Inf in F16 and R[1..15] = 0. PyTorch gives s = Inf and a 0
 *   code; stfix clamps a to 65504: s = rT(fl32(65504/7)) = rT(9357.71) =
 *   9360 (spacing 8) = 0x46124000, and code rint(Inf) -> 7.
 */
static void test_eager_f16_guards(void **state)
{
    (void)state;
    static const float tiny[4] = { 12.0f * 0x1p-24f, 0, 0, 0 };
    uint16_t h[64];
    spike_row(h, STF_F16, tiny);
    expect_row(h, STF_F16, STF_QMODE_EAGER, STF_F16, ZEROS, 0x38800000u);

    float w[64];
    memset(w, 0, sizeof w);
    for (unsigned j = 0; j < 16; j++) w[j] = 60000.0f * (float)h16(0, j);
    assert_int_equal(stf_convert_from_f32(h, STF_F16, w, 64, NULL), 0);
    expect_row(h, STF_F16, STF_QMODE_EAGER, STF_F16, "07" Z31, 0x46124000u);
}

/* Eager rows are independent of the thread count; unknown modes fail. */
static void test_eager_threads_and_mode(void **state)
{
    (void)state;
    enum { N = 33, K = 256 };
    static uint16_t b[N * K];
    static float s1[N], s2[N];
    static int8_t p1[N * K / 2], p2[N * K / 2];
    qt_rng r = { 11 };
    for (size_t i = 0; i < N * K; i++) b[i] = stf_f32_to_bf16((float)qt_randn(&r));
    assert_int_equal(stf_w4a4_quantize_rows(p1, s1, b, STF_BF16, N, K, 64, STF_QMODE_EAGER,
                                            STF_BF16, NULL, NULL),
                     0);
    stf_pool *pool = NULL;
    assert_int_equal(stf_pool_new(&pool, 3, NULL), 0);
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, b, STF_BF16, N, K, 64, STF_QMODE_EAGER,
                                            STF_BF16, pool, NULL),
                     0);
    stf_pool_free(pool);
    assert_memory_equal(p1, p2, sizeof p1);
    assert_memory_equal(s1, s2, sizeof s1);
    /* Every eager scale is a BF16 value. */
    for (size_t i = 0; i < N; i++) assert_int_equal(qt_bits(s1[i]) & 0xFFFFu, 0);

    stf_err err;
    assert_int_equal(stf_w4a4_quantize_rows(p2, s2, b, STF_BF16, 1, 64, 16, (stf_quant_mode)7,
                                            STF_BF16, NULL, &err),
                     STF_EINVAL);
    assert_non_null(strstr(err.msg, "unknown mode 7"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gaussian_error),
        cmocka_unit_test(test_codes_never_minus8),
        cmocka_unit_test(test_unpack_layout),
        cmocka_unit_test(test_threads_and_errors),
        cmocka_unit_test(test_eager_bf16_row),
        cmocka_unit_test(test_eager_f16_row),
        cmocka_unit_test(test_eager_f32_row),
        cmocka_unit_test(test_eager_zero_rows),
        cmocka_unit_test(test_eager_f16_guards),
        cmocka_unit_test(test_eager_threads_and_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
