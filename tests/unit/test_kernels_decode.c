/*
 * Tests for the repair decodes (lib/quant/kernels_decode_*.c): the scalar
 * FP8 decode equals stf_fp8_to_f32 for every code, and every entry of
 * every SIMD variant this CPU runs equals the scalar one bit for bit over
 * fixed-seed and edge inputs (NaN, Inf, subnormal codes, signed zeros,
 * all-zero rows, the extreme codes), at every length around the vector
 * widths. Variants the CPU or build lacks are skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "quant/decode_rows.h"
#include "quant/kernels.h"
#include "stfix.h"
#include "quant_testutil.h"

/* One generator per test file, seeded by each test. */
static qt_rng g_rng;

/* The SIMD tables this CPU and build run (NULL: not available). */
static const stf__kernels *variant(int i)
{
    stf_simd s = i == 0 ? STF_SIMD_AVX2 : STF_SIMD_AVX512;
    if (!stf_simd_supported(s)) return NULL;
    const stf__kernels *k = stf__kernels_for(s);
    if (k) assert_int_equal(k->id, s);
    return k;
}

static int any_variant(void) { return variant(0) || variant(1); }

#define SENTINEL 0x7F7F1234u

/* ------------------------------------------------------------ FP8 */

static void test_fp8_scalar_every_code(void **state)
{
    (void)state;
    static const stf_dtype dts[] = { STF_F8_E4M3, STF_F8_E5M2 };
    uint8_t codes[256];
    float out[256];
    for (unsigned c = 0; c < 256; c++) codes[c] = (uint8_t)c;
    for (int d = 0; d < 2; d++) {
        stf__fp8_decode_scalar(out, codes, dts[d], 256, 1.0f);
        for (unsigned c = 0; c < 256; c++) {
            float want = stf_fp8_to_f32((uint8_t)c, dts[d]);
            assert_int_equal(qt_bits(out[c]), want != want ? 0x7FC00000u : qt_bits(want));
        }
    }
    /* Fixed points: the smallest subnormals, the largest finite, -0, Inf. */
    stf__fp8_decode_scalar(out, codes, STF_F8_E4M3, 256, 1.0f);
    assert_true(out[0x01] == 0x1p-9f && out[0x7E] == 448.0f && out[0xFE] == -448.0f);
    assert_int_equal(qt_bits(out[0x80]), 0x80000000u);
    assert_int_equal(qt_bits(out[0x7F]), 0x7FC00000u);
    assert_int_equal(qt_bits(out[0xFF]), 0x7FC00000u); /* NaN sign not kept */
    stf__fp8_decode_scalar(out, codes, STF_F8_E5M2, 256, 1.0f);
    assert_true(out[0x01] == 0x1p-16f && out[0x7B] == 57344.0f);
    assert_int_equal(qt_bits(out[0x7C]), 0x7F800000u);
    assert_int_equal(qt_bits(out[0xFC]), 0xFF800000u);
    assert_int_equal(qt_bits(out[0x7D]), 0x7FC00000u);
    /* The scale is one fl32 product: 0x38 (1.0) times 3 is 3. */
    stf__fp8_decode_scalar(out, codes + 0x38, STF_F8_E4M3, 1, 3.0f);
    assert_true(out[0] == 3.0f);
}

/* Bits equal, NaN included: every decode stores a NaN as 0x7FC00000
 * (stfix-convrot(7), DEQUANTIZATION), whichever NaN operand an add would
 * propagate and whatever its sign. */
static void assert_same(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (qt_bits(a[i]) != qt_bits(b[i]))
            fail_msg("element %zu: %08x vs %08x", i, qt_bits(a[i]), qt_bits(b[i]));
        if (isnan(a[i])) assert_int_equal(qt_bits(a[i]), 0x7FC00000u);
    }
}

static void test_fp8_variants_match_scalar(void **state)
{
    (void)state;
    if (!any_variant()) skip();
    enum { N = 1100 };
    static const stf_dtype dts[] = { STF_F8_E4M3, STF_F8_E5M2 };
    uint8_t src[N];
    float s[N], a[N + 1], b[N + 1];
    g_rng.s = 0xF8D0C0DEu;
    for (size_t i = 0; i < N; i++) {
        /* every code (NaN, Inf, subnormals, +-0) in the first 512 */
        src[i] = i < 512 ? (uint8_t)(i * 167u) : (uint8_t)qt_next(&g_rng);
        s[i] = i % 5 == 0 ? qt_float((uint32_t)(qt_next(&g_rng) & 0x807FFFFFu)) /* subnormal */
               : i % 11 == 0 ? (i % 2 ? -0.0f : 0.0f)
                             : ((float)qt_randn(&g_rng)) * qt_float(0x20000000u + (uint32_t)(qt_next(&g_rng) % 0x3F000000u));
    }
    /* NaN scales of either sign and payload meet the NaN codes. */
    for (size_t i = 3; i < N; i += 41) s[i] = qt_float(i % 2 ? 0xFFC00000u : 0x7FC0BEEFu);
    const float scal[] = { 1.0f, -1.0f, 0.0123f, 0.0f, -0.0f, 0x1p-140f, 3e38f, 1e-30f,
                           qt_float(0xFFC00000u), qt_float(0x7F812345u), INFINITY };
    for (int vi = 0; vi < 2; vi++) {
        const stf__kernels *v = variant(vi);
        if (!v) continue;
        for (int d = 0; d < 2; d++)
            for (size_t n = 0; n <= N; n += (n < 70 ? 1 : 97)) {
                size_t off = n % 3;
                if (n + off > N) continue;
                for (size_t si = 0; si < sizeof scal / sizeof scal[0]; si++) {
                    b[n] = qt_float(SENTINEL);
                    stf__fp8_decode_scalar(a, src + off, dts[d], n, scal[si]);
                    v->fp8_decode(b, src + off, dts[d], n, scal[si]);
                    assert_same(a, b, n);
                    assert_int_equal(qt_bits(b[n]), SENTINEL);
                }
                stf__fp8_decode_cols_scalar(a, src + off, dts[d], n, s + off);
                v->fp8_decode_cols(b, src + off, dts[d], n, s + off);
                assert_same(a, b, n);
                assert_int_equal(qt_bits(b[n]), SENTINEL);
            }
    }
}

/* The library calls go through the active table and give the reference. */
static void test_fp8_library_calls(void **state)
{
    (void)state;
    uint8_t src[40];
    float s[40], a[40], b[40];
    for (unsigned i = 0; i < 40; i++) {
        src[i] = (uint8_t)(i * 13u + 1u);
        s[i] = (float)i * 0.25f - 3.0f;
    }
    assert_int_equal(stf_fp8_dequantize(b, src, STF_F8_E5M2, 40, 0.5f, NULL), 0);
    stf__fp8_decode_scalar(a, src, STF_F8_E5M2, 40, 0.5f);
    assert_memory_equal(a, b, sizeof a);
    stf__fp8_dequantize_cols(b, src, STF_F8_E4M3, 40, s);
    stf__fp8_decode_cols_scalar(a, src, STF_F8_E4M3, 40, s);
    assert_memory_equal(a, b, sizeof a);
    for (unsigned i = 0; i < 40; i++)
        assert_int_equal(qt_bits(a[i]),
                         qt_bits(stf_fp8_to_f32(src[i], STF_F8_E4M3) * s[i]));
}

/* ------------------------------------------------------------ Sylvester */

enum { SYL_GAUSS, SYL_ZEROS, SYL_SUBNORMAL, SYL_HUGE, SYL_CODES, SYL_NONFINITE, SYL_KINDS };

static float syl_value(int kind)
{
    uint64_t r = qt_next(&g_rng);
    switch (kind) {
    case SYL_GAUSS: return ((float)qt_randn(&g_rng)) * 0.02f;
    case SYL_ZEROS: return (r & 1) ? -0.0f : (r & 14) == 0 ? 1.0f : 0.0f;
    case SYL_SUBNORMAL: return qt_float((uint32_t)(r & 0x807FFFFFu));
    case SYL_HUGE: /* sums overflow to Inf, and Inf - Inf is NaN */
        return ((r & 1) ? 1.0f : -1.0f) * qt_float(0x7F000000u + (uint32_t)(r % 0x7F0000u));
    case SYL_CODES: /* INT8 codes 127 and -128 times a row scale */
        return (float)((r & 1) ? 127 : -128) * 0.0078125f;
    default: /* Inf, and NaNs of both signs, payloads, a signalling one */
        if (r % 37 != 0) return ((float)qt_randn(&g_rng));
        static const uint32_t odd[] = { 0x7F800000u, 0xFFC00000u, 0x7FC00000u, 0x7FC12345u,
                                        0xFF800001u, 0xFF800000u };
        return qt_float(odd[(r >> 8) % 6]);
    }
}

static void test_sylvester_variants_match_scalar(void **state)
{
    (void)state;
    if (!any_variant()) skip();
    float *x = malloc(3 * 4096 * sizeof(float) + 4), *a = malloc(3 * 4096 * sizeof(float) + 4),
          *b = malloc(3 * 4096 * sizeof(float) + 4);
    assert_non_null(x);
    assert_non_null(a);
    assert_non_null(b);
    g_rng.s = 0x51E5C0DEu;
    for (int vi = 0; vi < 2; vi++) {
        const stf__kernels *v = variant(vi);
        if (!v) continue;
        for (unsigned g = 2; g <= 4096; g *= 2)
            for (size_t m = 1; m <= 3; m++)
                for (int kind = 0; kind < SYL_KINDS; kind++) {
                    /* Small groups also in rows that are not whole vectors. */
                    size_t k = g * m + (g < 16 ? g * (size_t)kind : 0);
                    for (size_t i = 0; i < k; i++) x[i] = syl_value(kind);
                    memcpy(a, x, k * 4);
                    memcpy(b, x, k * 4);
                    b[k] = qt_float(SENTINEL);
                    stf__sylvester_undo_scalar(a, k, g);
                    v->sylvester_undo(b, k, g);
                    assert_same(a, b, k);
                    assert_int_equal(qt_bits(b[k]), SENTINEL);
                }
    }
    free(x);
    free(a);
    free(b);
}

/* The reference itself on fixed values: G = 2 is (a + b, a - b) * c. */
static void test_sylvester_scalar_values(void **state)
{
    (void)state;
    const float c2 = 1.0f / sqrtf(2.0f);
    float x[4] = { 1.0f, 3.0f, -0.0f, 0.0f };
    stf__sylvester_undo_scalar(x, 4, 2);
    assert_true(x[0] == 4.0f * c2 && x[1] == -2.0f * c2);
    assert_int_equal(qt_bits(x[2]), 0x00000000u); /* -0 + 0 = +0 */
    assert_int_equal(qt_bits(x[3]), 0x80000000u); /* -0 - 0 = -0 */
    /* An all-zero row stays zero; G = 4 of (1, 0, 0, 0) is all 1/2. */
    float y[8] = { 1.0f, 0, 0, 0, 0, 0, 0, 0 };
    assert_int_equal(stf_hadamard_sylvester_undo(y, 8, 4, NULL), 0);
    for (int i = 0; i < 4; i++) assert_true(y[i] == 0.5f);
    for (int i = 4; i < 8; i++) assert_int_equal(qt_bits(y[i]), 0u);
}

/* ------------------------------------------------------------ W4A4 */

static void test_w4a4_unpack_variants(void **state)
{
    (void)state;
    enum { N = 600 };
    uint8_t src[N / 2];
    float a[N + 1], b[N + 1];
    g_rng.s = 0x4A4A0001u;
    for (size_t i = 0; i < N / 2; i++) src[i] = i < 256 ? (uint8_t)i : (uint8_t)qt_next(&g_rng);
    /* Reference on fixed codes: 0x8F is (-1, -8), 0x70 is (0, 7). */
    const uint8_t two[2] = { 0x8F, 0x70 };
    stf__w4a4_unpack_scalar(a, two, 4, 2.0f);
    assert_true(a[0] == -2.0f && a[1] == -16.0f && a[3] == 14.0f);
    assert_int_equal(qt_bits(a[2]), 0u);
    stf__w4a4_unpack_scalar(a, two, 4, -0.0f);
    assert_int_equal(qt_bits(a[0]), 0x00000000u); /* -1 * -0 */
    assert_int_equal(qt_bits(a[2]), 0x80000000u); /* 0 * -0 */
    if (!any_variant()) skip();
    const float scal[] = { 0.37f, -1.0f, 0.0f, -0.0f, 0x1p-140f, 3e38f,
                           qt_float(0xFFC00000u), qt_float(0x7F812345u), INFINITY };
    for (int vi = 0; vi < 2; vi++) {
        const stf__kernels *v = variant(vi);
        if (!v) continue;
        for (size_t n = 0; n <= N; n += (n < 80 ? 2 : 74))
            for (size_t si = 0; si < sizeof scal / sizeof scal[0]; si++) {
                size_t off = (n / 2) % 3;
                if (off + n / 2 > N / 2) off = 0;
                b[n] = qt_float(SENTINEL);
                stf__w4a4_unpack_scalar(a, src + off, n, scal[si]);
                v->w4a4_unpack(b, src + off, n, scal[si]);
                assert_same(a, b, n);
                assert_int_equal(qt_bits(b[n]), SENTINEL);
            }
    }
}

/* ------------------------------------------------------------ INT8 groups */

/* Grouped [N, g] scales through each variant the CPU runs: one fl32
 * product per element with its group's scale, NaN stored as the one NaN,
 * over the extreme codes and zero, NaN, Inf, signed-zero and subnormal
 * scales, at spans that split the vector widths. */
static void test_int8_groups(void **state)
{
    (void)state;
    enum { K = 96 };
    int8_t q[K];
    float s[K], out[K + 1];
    static const stf_simd simds[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    static const uint32_t odd[] = { 0x7FC00000u, 0xFFC12345u, 0x7F800000u, 0xFF800000u,
                                    0x80000000u, 0x00000000u, 0x00000001u, 0x807FFFFFu };
    stf_simd was = stf_simd_active();
    stf_err err;
    g_rng.s = 0x16A0C0DEu;
    for (size_t i = 0; i < K; i++) {
        q[i] = i % 9 == 0 ? -128 : i % 9 == 1 ? 127 : i % 9 == 2 ? 0 : (int8_t)qt_next(&g_rng);
        s[i] = i % 4 == 3 ? qt_float(odd[(i / 4) % 8]) : ((float)qt_randn(&g_rng));
    }
    static const size_t spans[] = { 1, 3, 8, 12, 17, 32, 96 };
    size_t cases = 0;
    for (size_t vi = 0; vi < sizeof simds / sizeof simds[0]; vi++) {
        if (!stf_simd_supported(simds[vi])) continue;
        assert_int_equal(stf_simd_select(simds[vi], &err), 0);
        for (size_t si = 0; si < sizeof spans / sizeof spans[0]; si++)
            for (size_t c0 = 0; c0 < K; c0 += 5)
                for (size_t n = 0; c0 + n <= K; n += 7) {
                    out[n] = qt_float(SENTINEL);
                    stf__int8_dequantize_groups(out, q + c0, s, c0, n, spans[si]);
                    for (size_t x = 0; x < n; x++) {
                        float want = (float)q[c0 + x] * s[(c0 + x) / spans[si]];
                        assert_int_equal(qt_bits(out[x]),
                                         want != want ? 0x7FC00000u : qt_bits(want));
                    }
                    assert_int_equal(qt_bits(out[n]), SENTINEL);
                    cases++;
                }
    }
    assert_true(cases > 0);
    assert_int_equal(stf_simd_select(was, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_scalar_every_code),
        cmocka_unit_test(test_fp8_variants_match_scalar),
        cmocka_unit_test(test_fp8_library_calls),
        cmocka_unit_test(test_sylvester_variants_match_scalar),
        cmocka_unit_test(test_sylvester_scalar_values),
        cmocka_unit_test(test_w4a4_unpack_variants),
        cmocka_unit_test(test_int8_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
