/*
 * Tests for int8_row_fp8 (lib/quant/kernels_fp8_row.c and the fused
 * AVX-512 path in kernels_avx512.c) and stf__int8_quantize_row_fp8: every
 * variant gives the bytes, scale and return code of the composition it
 * replaces (fp8_decode, then int8_row on the F32 row), over fixed-seed and
 * edge rows: NaN and Inf codes, subnormal codes, zero rows, +-max.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "quant/decode_rows.h"
#include "quant/kernels.h"
#include "stfix.h"
#include "quant_testutil.h"
#include "kernel_variants.h"

/* One generator per test file, seeded by each test. */
static qt_rng g_rng;

#define KMAX 4096


/* Row kinds. */
enum { R_RANDOM, R_ZERO, R_MAX, R_SUBNORMAL, R_NAN, R_INF, R_SMALL, R_NKINDS };

static int is_nan_code(uint8_t c, stf_dtype dt)
{
    return dt == STF_F8_E4M3 ? (c & 0x7F) == 0x7F : (c & 0x7F) > 0x7C;
}

static int is_special(uint8_t c, stf_dtype dt)
{
    return is_nan_code(c, dt) || (dt == STF_F8_E5M2 && (c & 0x7F) == 0x7C);
}

static void fill(uint8_t *c, size_t k, stf_dtype dt, int kind)
{
    uint8_t maxc = dt == STF_F8_E4M3 ? 0x7E : 0x7B, subn = dt == STF_F8_E4M3 ? 8 : 4;
    for (size_t i = 0; i < k; i++) {
        uint8_t v = (uint8_t)qt_next(&g_rng);
        switch (kind) {
        case R_ZERO: v &= 0x80; break;
        case R_MAX: v = (uint8_t)((v & 0x80) | maxc); break;
        case R_SUBNORMAL: v = (uint8_t)((v & 0x80) | (v % subn)); break;
        case R_SMALL: v = (uint8_t)((v & 0x80) | (v % 24)); break;
        default:
            while (is_special(v, dt)) v = (uint8_t)qt_next(&g_rng);
        }
        c[i] = v;
    }
    if (kind == R_NAN) c[qt_next(&g_rng) % k] = dt == STF_F8_E4M3 ? 0xFF : 0x7E;
    if (kind == R_INF) c[qt_next(&g_rng) % k] = dt == STF_F8_E4M3 ? 0x7F : 0xFC;
}

static float *aligned_floats(size_t n)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, n * sizeof(float)), 0);
    return p;
}

/* One case: variant v against the scalar composition. */
static void cmp_case(const stf__kernels *v, const uint8_t *src, stf_dtype dt, float s, size_t k,
                     unsigned g, stf_quant_mode mode, stf_dtype t, float *sa, float *sb,
                     float *row)
{
    static int8_t qa[KMAX], qb[KMAX];
    float scale_a = -1.0f, scale_b = -2.0f;
    memset(qa, 0x55, k);
    memset(qb, 0x55, k);
    stf__kernels_scalar.fp8_decode(row, src, dt, k, s);
    int ra = stf__kernels_scalar.int8_row(qa, &scale_a, row, STF_F32, k, g, mode, t, sa);
    int rb = v->int8_row_fp8(qb, &scale_b, src, dt, s, k, g, mode, t, sb, row);
    if (ra != rb || (ra == 0 && (qt_bits(scale_a) != qt_bits(scale_b) ||
                                 memcmp(qa, qb, k) != 0))) {
        print_error("variant %d: int8_row_fp8 differs: dt=%d s=%a k=%zu g=%u mode=%d t=%d "
                    "rc %d/%d scale %a/%a\n", (int)v->id, (int)dt, (double)s, k, g, (int)mode,
                    (int)t, ra, rb, (double)scale_a, (double)scale_b);
        fail();
    }
}

static void test_variants_match_composition(void **state)
{
    (void)state;
    static const size_t ks[] = { 16, 40, 64, 256, 1024, 3072, 4096 };
    static const unsigned gs[] = { 0, 4, 16, 64, 256, 1024 };
    static const float scales[] = { 0.0123f, 1.0f, 0x1p-20f, 0x1.3579bp-128f, 3.0e35f, 0.0f };
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    static const stf_dtype ts[] = { STF_BF16, STF_F16, STF_F32 };
    static uint8_t src[KMAX];
    float *sa = aligned_floats(KMAX), *sb = aligned_floats(KMAX), *row = aligned_floats(KMAX);
    size_t cases = 0;
    g_rng.s = 15;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (int di = 0; di < 2; di++) {
            stf_dtype dt = di ? STF_F8_E5M2 : STF_F8_E4M3;
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++) {
                    size_t k = ks[ki];
                    unsigned g = gs[gi];
                    if (g && k % g) continue;
                    for (int kind = 0; kind < R_NKINDS; kind++) {
                        fill(src, k, dt, kind);
                        float s = scales[(size_t)(kind + (int)ki) % 6];
                        stf_quant_mode mode = modes[(size_t)(kind + (int)gi) % 3];
                        stf_dtype t = ts[(size_t)(kind + di + (int)ki) % 3];
                        cmp_case(v, src, dt, s, k, g, mode, t, sa, sb, row);
                        cmp_case(v, src, dt, 0.0123f, k, g, STF_QMODE_CUDA, STF_BF16, sa, sb,
                                 row);
                        cases += 2;
                    }
                }
        }
    }
    /* Every scale on the G = 256 path, whose deferred 0.5 factors need
     * the tiny-value guard when scales push values near the subnormals. */
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (size_t si = 0; si < sizeof scales / sizeof *scales; si++)
            for (int kind = 0; kind < R_NKINDS; kind++)
                for (int mi = 0; mi < 3; mi++) {
                    fill(src, 1024, STF_F8_E4M3, kind);
                    cmp_case(v, src, STF_F8_E4M3, scales[si], 1024, 256, modes[mi], STF_F32,
                             sa, sb, row);
                    cmp_case(v, src, STF_F8_E4M3, scales[si] * 0x1p-3f, 1024, 1024, modes[mi],
                             STF_F16, sa, sb, row);
                    cases += 2;
                }
    }
    assert_true(cases >= 2 * 2 * 7 * 18);
    free(sa);
    free(sb);
    free(row);
}

/*
 * Target G 0, 4, 16 and 64 (the AVX-512 table decodes them by byte tables
 * where AVX512-VBMI is there): every finite code at every position of a
 * 64-code block (the row is code (i * 37 + off) mod 256 with the specials
 * replaced), and rows with every code, specials included; lengths with
 * and without a tail of less than 64; scales negative, zero, -0,
 * subnormal-making, overflowing, NaN and Inf; every mode and dtype.
 */
static void test_small_groups(void **state)
{
    (void)state;
    static const size_t ks[] = { 64, 256, 3072, 112, 100, 52 };
    static const unsigned gs[] = { 0, 4, 16, 64 };
    static const uint32_t scales[] = { 0x3C4985F0u, 0xBF000000u, 0x00000000u, 0x80000000u,
                                       0x0B000000u, 0x79000000u, 0x7FC00000u, 0x7F800000u };
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    static const stf_dtype ts[] = { STF_BF16, STF_F16, STF_F32 };
    static uint8_t src[KMAX];
    float *sa = aligned_floats(KMAX), *sb = aligned_floats(KMAX), *row = aligned_floats(KMAX);
    size_t cases = 0;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (int di = 0; di < 2; di++) {
            stf_dtype dt = di ? STF_F8_E5M2 : STF_F8_E4M3;
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++)
                    for (unsigned off = 0; off < 256; off += 51) {
                        size_t k = ks[ki];
                        unsigned g = gs[gi];
                        if (g && k % g) continue;
                        for (size_t i = 0; i < k; i++) {
                            uint8_t c = (uint8_t)((i * 37 + off) & 0xFF);
                            src[i] = off == 255 || !is_special(c, dt) ? c : (uint8_t)(c & 0x80);
                        }
                        for (size_t si = 0; si < sizeof scales / sizeof *scales; si++) {
                            size_t c = ki + gi + si + off;
                            cmp_case(v, src, dt, qt_float(scales[si]), k, g, modes[c % 3],
                                     ts[(c / 3) % 3], sa, sb, row);
                            cases++;
                        }
                    }
        }
    }
    assert_true(cases >= 2 * 4 * 6 * 8);
    free(sa);
    free(sb);
    free(row);
}

/*
 * The production case, G = 256 and T = BF16 (the AVX-512 table runs it on
 * decoded BF16 words, without an F32 row): both dtypes, both modes, scales
 * on both sides of the deferred-scaling guard (2^-113 for E4M3, 2^-106 for
 * E5M2), negative and overflowing scales, every row kind, several lengths.
 */
static void test_g256_bf16_path(void **state)
{
    (void)state;
    static const float scales[] = { 0.0123f, -0.75f, 1.0f, 0x1p-113f, 0x1.fffffep-114f,
                                    0x1p-106f, 0x1.fffffep-107f, 0x1p-140f, 3.0e35f, 0.0f,
                                    -0x1p-113f, 1.0e-30f };
    static const size_t ks[] = { 256, 512, 768, 3072 };
    static uint8_t src[KMAX];
    float *sa = aligned_floats(KMAX), *sb = aligned_floats(KMAX), *row = aligned_floats(KMAX);
    size_t cases = 0;
    g_rng.s = 256;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (int di = 0; di < 2; di++)
            for (size_t si = 0; si < sizeof scales / sizeof *scales; si++)
                for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                    for (int kind = 0; kind < R_NKINDS; kind++) {
                        stf_dtype dt = di ? STF_F8_E5M2 : STF_F8_E4M3;
                        fill(src, ks[ki], dt, kind);
                        stf_quant_mode mode = (kind + (int)si) % 2 ? STF_QMODE_EAGER
                                                                   : STF_QMODE_CUDA;
                        cmp_case(v, src, dt, scales[si], ks[ki], 256, mode, STF_BF16, sa, sb,
                                 row);
                        cases++;
                    }
    }
    /* Every code, both signs, in one row: each word of the tables. */
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (int di = 0; di < 2; di++) {
            stf_dtype dt = di ? STF_F8_E5M2 : STF_F8_E4M3;
            for (size_t i = 0; i < 512; i++) {
                uint8_t c = (uint8_t)(i * 37u);
                src[i] = is_special(c, dt) ? (uint8_t)(c & 0x80) : c;
            }
            cmp_case(v, src, dt, 0.37f, 512, 256, STF_QMODE_CUDA, STF_BF16, sa, sb, row);
            cmp_case(v, src, dt, 0x1p-100f, 512, 256, STF_QMODE_EAGER, STF_BF16, sa, sb, row);
        }
    }
    assert_true(cases >= 2 * 12 * 4 * R_NKINDS);
#if STF_HAVE_X86_SIMD
    /* The fast path itself takes ordinary rows (it may not hand them all back). */
    if (stf_simd_supported(STF_SIMD_AVX512) && stf__avx512_bf16_usable()) {
        static int8_t qa[KMAX], qb[KMAX];
        float scale_a = 0, scale_b = 0;
        fill(src, 3072, STF_F8_E4M3, R_RANDOM);
        assert_int_equal(stf__int8_row_fp8_g256(qb, &scale_b, src, STF_F8_E4M3, 0.0123f, 3072,
                                                STF_QMODE_CUDA, sb), 0);
        stf__kernels_scalar.fp8_decode(row, src, STF_F8_E4M3, 3072, 0.0123f);
        assert_int_equal(stf__kernels_scalar.int8_row(qa, &scale_a, row, STF_F32, 3072, 256,
                                                      STF_QMODE_CUDA, STF_BF16, sa), 0);
        assert_memory_equal(qa, qb, 3072);
        assert_int_equal(qt_bits(scale_a), qt_bits(scale_b));
        /* Below the guard it declines. */
        assert_int_equal(stf__int8_row_fp8_g256(qb, &scale_b, src, STF_F8_E4M3, 0x1p-114f, 3072,
                                                STF_QMODE_CUDA, sb), 1);
    }
#endif
    free(sa);
    free(sb);
    free(row);
}

/* Exact values: a +-448 row (E4M3 max) gives +-127; a zero row the floor. */
static void test_exact_values(void **state)
{
    (void)state;
    static uint8_t src[64];
    float *sc = aligned_floats(64), *row = aligned_floats(64);
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        int8_t q[64];
        float scale;
        for (size_t i = 0; i < 64; i++) src[i] = (uint8_t)(i % 2 ? 0xFE : 0x7E);
        assert_int_equal(v->int8_row_fp8(q, &scale, src, STF_F8_E4M3, 1.0f, 64, 0,
                                         STF_QMODE_FP32, STF_F32, sc, row), 0);
        for (size_t i = 0; i < 64; i++) assert_int_equal(q[i], i % 2 ? -127 : 127);
        assert_true(qt_bits(scale) == qt_bits(448.0f / 127.0f));
        memset(src, 0x80, sizeof src);
        assert_int_equal(v->int8_row_fp8(q, &scale, src, STF_F8_E4M3, 2.0f, 64, 16,
                                         STF_QMODE_CUDA, STF_BF16, sc, row), 0);
        for (size_t i = 0; i < 64; i++) assert_int_equal(q[i], 0);
        assert_int_equal(qt_bits(scale), 0x0DA24260u);
        /* A NaN code: the non-finite code. */
        src[37] = 0x7F;
        assert_int_equal(v->int8_row_fp8(q, &scale, src, STF_F8_E4M3, 2.0f, 64, 16,
                                         STF_QMODE_CUDA, STF_BF16, sc, row), STF_ENUMERIC);
    }
    free(sc);
    free(row);
}

/* The library call: bytes and messages of decode + stf__int8_quantize_row_f32. */
static void test_quantize_row_fp8(void **state)
{
    (void)state;
    static uint8_t src[1024];
    int8_t qa[1024], qb[1024];
    float *sa = aligned_floats(1024), *sb = aligned_floats(1024), *x = aligned_floats(1024);
    float *y = aligned_floats(1024);
    stf_int8_opts o = { 256, STF_QMODE_CUDA, STF_BF16 };
    g_rng.s = 7;
    for (int kind = 0; kind < R_NKINDS; kind++) {
        stf_dtype dt = kind % 2 ? STF_F8_E5M2 : STF_F8_E4M3;
        fill(src, 1024, dt, kind);
        float scale_a = 0, scale_b = 0;
        stf_err ea, eb;
        stf_err_clear(&ea);
        stf_err_clear(&eb);
        assert_int_equal(stf_fp8_dequantize(y, src, dt, 1024, 0.25f, NULL), 0);
        int ra = stf__int8_quantize_row_f32(qa, &scale_a, y, 1024, &o, sa, &ea);
        int rb = stf__int8_quantize_row_fp8(qb, &scale_b, src, dt, 0.25f, 1024, &o, sb, x, &eb);
        assert_int_equal(ra, rb);
        assert_string_equal(ea.msg, eb.msg);
        if (kind == R_NAN || kind == R_INF) {
            assert_int_equal(rb, STF_ENUMERIC);
            assert_non_null(strstr(eb.msg, "non-finite"));
        } else {
            assert_int_equal(rb, 0);
            assert_memory_equal(qa, qb, 1024);
            assert_int_equal(qt_bits(scale_a), qt_bits(scale_b));
        }
    }
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf__int8_quantize_row_fp8(qb, sb, src, STF_BF16, 1.0f, 1024, &o, sa, x, &e),
                     STF_EUNSUPPORTED);
    free(sa);
    free(sb);
    free(x);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variants_match_composition),
        cmocka_unit_test(test_g256_bf16_path),
        cmocka_unit_test(test_small_groups),
        cmocka_unit_test(test_exact_values),
        cmocka_unit_test(test_quantize_row_fp8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
