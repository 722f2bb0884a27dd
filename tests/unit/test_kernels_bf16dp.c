/*
 * Tests for the vdpbf16ps form of pass 1 in lib/quant/kernels_bf16_avx512.c
 * (BF16 rows, G = 256): the instruction rounds as the kernel assumes, pass 1
 * gives the shuffle version's bytes and absmax exactly, the input screen
 * takes zeros and refuses inputs below 2^-119, and whole rows through both
 * forms equal the scalar reference. Skipped where the CPU has no
 * AVX512-BF16.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "quant/kernels.h"
#if STF_HAVE_X86_SIMD
#include <immintrin.h>

#include "quant/kernels_avx512.h"
#endif
#include "quant_testutil.h"
#include "stfix.h"

#if STF_HAVE_X86_SIMD

static int have_bf16(void)
{
    return stf_simd_supported(STF_SIMD_AVX512) && stf__avx512_bf16_usable();
}

static void *xaligned(size_t n)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, n < 64 ? 64 : n), 0);
    return p;
}

static float bf(uint16_t h) { return qt_float((uint32_t)h << 16); }

/* A normal BF16 with |x| in [2^(e-127), 2^(e-126)), random sign and
 * mantissa; e >= 1. */
static uint16_t bf_with_exp(qt_rng *r, unsigned e)
{
    uint64_t x = qt_next(r);
    return (uint16_t)(((x & 1u) << 15) | ((e & 0xFFu) << 7) | ((x >> 1) & 0x7Fu));
}

/* One vdpbf16ps lane set: acc[i] + a[2i+1]*b[2i+1], then + a[2i]*b[2i]. */
__attribute__((target("avx512f,avx512bf16"))) static void dp_hw(float *out, const float *acc,
                                                               const uint16_t *a,
                                                               const uint16_t *b)
{
    __m512i va, vb;
    memcpy(&va, a, 64);
    memcpy(&vb, b, 64);
    __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)va, (__m512bh)vb);
    _mm512_storeu_ps(out, r);
}

/*
 * Where the kernel trusts the instruction (stf__avx512_dp_exact), it must
 * round exactly as the two-step model on random normal inputs with
 * coefficients 0 and +-1, the only ones the kernel uses. The inputs span
 * a few binades so that both roundings matter; about 1% of lanes differ
 * from a single-rounding model (counted, so the test can tell them apart).
 */
static void test_dp_rounds_twice_odd_first(void **state)
{
    (void)state;
    if (!have_bf16()) skip();
    if (!stf__avx512_dp_exact()) {
        print_message("vdpbf16ps does not round as defined here; the dp pass is unused\n");
        skip();
    }
    qt_rng r = { 0xD0D0u };
    size_t fused_differs = 0;
    for (int it = 0; it < 40000; it++) {
        uint16_t a[32], c[32];
        float acc[16], out[16];
        unsigned spread = 1 + (unsigned)(it % 30);
        for (int i = 0; i < 32; i++) {
            a[i] = bf_with_exp(&r, 110u + (unsigned)(qt_next(&r) % spread));
            unsigned k = (unsigned)(qt_next(&r) % 3);
            c[i] = k == 0 ? 0x3F80u : k == 1 ? 0xBF80u : 0x0000u;
        }
        for (int i = 0; i < 16; i++)
            acc[i] = (it % 3 == 0) ? 0.0f
                                   : qt_float(((uint32_t)bf_with_exp(&r, 110u + (unsigned)(
                                                   qt_next(&r) % spread)) << 16) |
                                              (uint32_t)(qt_next(&r) & 0xFFFFu));
        dp_hw(out, acc, a, c);
        for (int i = 0; i < 16; i++) {
            float two = acc[i] + bf(a[2 * i + 1]) * bf(c[2 * i + 1]);
            two = two + bf(a[2 * i]) * bf(c[2 * i]);
            double once = (double)acc[i] + (double)bf(a[2 * i + 1]) * bf(c[2 * i + 1]) +
                          (double)bf(a[2 * i]) * bf(c[2 * i]);
            fused_differs += qt_bits((float)once) != qt_bits(two);
            if (qt_bits(out[i]) != qt_bits(two))
                fail_msg("lane %d: %a + %a*%a + %a*%a gave %a, two roundings give %a", i,
                         (double)acc[i], (double)bf(a[2 * i + 1]), (double)bf(c[2 * i + 1]),
                         (double)bf(a[2 * i]), (double)bf(c[2 * i]), (double)out[i],
                         (double)two);
        }
    }
    assert_true(fused_differs > 1000);
}

/* z and absmax of both pass-1 forms over one row; dp must accept it. */
static void same_pass1(const uint16_t *src, size_t k, uint16_t *za, uint16_t *zb)
{
    uint32_t aa = 0, ab = 1;
    assert_int_equal(stf__bf16_g256_pass1(za, &aa, src, k, 0), 0);
    assert_int_equal(stf__bf16_g256_pass1(zb, &ab, src, k, 1), 0);
    assert_int_equal(aa, ab);
    assert_memory_equal(za, zb, k * 2);
}

/*
 * Pass 1 on vdpbf16ps against the shuffle form: Gaussian rows, rows whose
 * exponents spread over up to 100 binades (so the FHT additions round, and
 * the order of every addition shows), the smallest exponent the screen
 * lets through, and odd and even numbers of groups.
 */
static void test_dp_pass1_matches_shuffle_form(void **state)
{
    (void)state;
    if (!have_bf16() || !stf__avx512_dp_exact()) skip();
    static const size_t ks[] = { 256, 512, 768, 1280, 3072, 12288 };
    uint16_t *src = xaligned(12288 * 2), *za = xaligned(12288 * 2), *zb = xaligned(12288 * 2);
    qt_rng r = { 0xB16Du };
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
        size_t k = ks[ki];
        for (int t = 0; t < 60; t++) {
            for (size_t i = 0; i < k; i++) {
                if (t % 3 == 0) {
                    src[i] = stf_f32_to_bf16((float)qt_randn(&r) * 0.02f);
                    if (src[i] == 0 || src[i] == 0x8000u) src[i] = 0x3C00u;
                } else {
                    unsigned spread = 1 + (unsigned)(t * 7 % 100);
                    unsigned e = 130u - (unsigned)(qt_next(&r) % spread);
                    src[i] = bf_with_exp(&r, e < 8u ? 8u : e);
                }
            }
            same_pass1(src, k, za, zb);
        }
    }
    free(src);
    free(za);
    free(zb);
}

/*
 * The screen: zeros (+0 and -0) pass and give the same bytes; one input
 * below 2^-119 (exponent field 7, or a subnormal) anywhere in the row makes
 * the dp form decline, at the start, in the middle and in the last group.
 */
static void test_dp_screen(void **state)
{
    (void)state;
    if (!have_bf16() || !stf__avx512_dp_exact()) skip();
    size_t k = 1280;
    uint16_t *src = xaligned(k * 2), *za = xaligned(k * 2), *zb = xaligned(k * 2);
    qt_rng r = { 0x5C2Eu };
    for (size_t i = 0; i < k; i++) src[i] = stf_f32_to_bf16((float)qt_randn(&r) * 0.05f + 1e-3f);
    src[3] = 0x0000u;
    src[700] = 0x8000u;
    src[1279] = 0x0000u;
    same_pass1(src, k, za, zb);

    static const uint16_t tiny[] = { 0x03FFu, 0x0380u, 0x8001u, 0x0001u, 0x83FFu };
    static const size_t at[] = { 0, 511, 1279 };
    for (size_t ti = 0; ti < sizeof tiny / sizeof *tiny; ti++)
        for (size_t ai = 0; ai < sizeof at / sizeof *at; ai++) {
            uint16_t keep = src[at[ai]];
            src[at[ai]] = tiny[ti];
            uint32_t ab = 0;
            assert_int_equal(stf__bf16_g256_pass1(zb, &ab, src, k, 1), 1);
            src[at[ai]] = keep;
        }
    /* Exponent field 8 (2^-119) is the smallest magnitude let through. */
    src[600] = 0x0400u;
    src[601] = 0x8400u;
    same_pass1(src, k, za, zb);
    free(src);
    free(za);
    free(zb);
}

/*
 * Whole rows through stf__int8_row_bf16_g256 (dp form where it applies,
 * the shuffle form for rows the screen refuses) equal the scalar table's
 * codes and scale, in modes cuda and eager.
 */
static void test_rows_match_scalar(void **state)
{
    (void)state;
    if (!have_bf16()) skip();
    size_t k = 1792;
    uint16_t *src = xaligned(k * 2);
    float *sc = xaligned(k * 4), *sa = xaligned(k * 4);
    int8_t *qa = xaligned(k), *qb = xaligned(k);
    qt_rng r = { 0x0A11u };
    for (int t = 0; t < 40; t++) {
        for (size_t i = 0; i < k; i++) src[i] = stf_f32_to_bf16((float)qt_randn(&r) * 0.03f);
        if (t % 4 == 1) src[qt_next(&r) % k] = 0x0000u;        /* a zero: dp, rescanned */
        if (t % 4 == 2) src[qt_next(&r) % k] = 0x0123u;        /* tiny: shuffle form */
        if (t % 4 == 3) src[qt_next(&r) % k] = stf_f32_to_bf16(40.0f); /* an outlier */
        for (int mi = 0; mi < 2; mi++) {
            stf_quant_mode mode = mi ? STF_QMODE_EAGER : STF_QMODE_CUDA;
            float s_a = 0.0f, s_b = 1.0f;
            assert_int_equal(stf__int8_row_bf16_g256(qb, &s_b, src, k, mode, sc), 0);
            assert_int_equal(stf__kernels_scalar.int8_row(qa, &s_a, src, STF_BF16, k, 256, mode,
                                                          STF_BF16, sa),
                             0);
            assert_memory_equal(qa, qb, k);
            assert_int_equal(qt_bits(s_a), qt_bits(s_b));
        }
    }
    free(src);
    free(sc);
    free(sa);
    free(qa);
    free(qb);
}

#else

static void test_dp_rounds_twice_odd_first(void **state) { (void)state; skip(); }
static void test_dp_pass1_matches_shuffle_form(void **state) { (void)state; skip(); }
static void test_dp_screen(void **state) { (void)state; skip(); }
static void test_rows_match_scalar(void **state) { (void)state; skip(); }

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dp_rounds_twice_odd_first),
        cmocka_unit_test(test_dp_pass1_matches_shuffle_form),
        cmocka_unit_test(test_dp_screen),
        cmocka_unit_test(test_rows_match_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
