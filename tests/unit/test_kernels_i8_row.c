/*
 * Tests for int8_row_i8 (lib/quant/kernels_i8_row.c and the fused AVX-512
 * path in kernels_bf16_avx512.c): every variant gives the bytes, scale and
 * return code of the steps it replaces on the scalar table
 * (int8_dequant_row or int8_dequant_row_cols, the rotation undone with
 * fht_regular or sylvester_undo, int8_row on the F32 row), over fixed-seed
 * and edge rows: all-zero rows, +-127 and -128 codes, negative scales
 * (signed zeros), scales at and below the deferred-scaling guards (2^-122,
 * 2^-118), overflowing, zero, NaN and Inf scales, column scales. The
 * one-pass INT8 decode and Sylvester undo of the AVX-512 tables against
 * int8_dequant_row + sylvester_undo of the scalar table; the library call
 * fix uses (stf__int8_quantize_row_i8) against stf_int8_dequantize +
 * stf__int8_quantize_row_f32, bytes and messages.
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

static qt_rng g_rng;

#define KMAX 4096


enum { R_RANDOM, R_ZERO, R_EXTREME, R_SMALL, R_SPARSE, R_NKINDS };

static void fill(int8_t *q, size_t k, int kind)
{
    for (size_t i = 0; i < k; i++) {
        uint64_t r = qt_next(&g_rng);
        int v = (int)(r & 0xFF) - 128;
        switch (kind) {
        case R_ZERO: v = 0; break;
        case R_EXTREME: v = r & 0x100 ? (r & 0x200 ? 127 : -127) : -128; break;
        case R_SMALL: v = (int)(r % 5) - 2; break;
        case R_SPARSE: v = r % 7 ? 0 : v; break;
        default: break;
        }
        q[i] = (int8_t)v;
    }
}

static float *aligned_floats(size_t n)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, n * sizeof(float)), 0);
    return p;
}

/* One case: variant v against the scalar steps. */
static void cmp_case(const stf__kernels *v, const int8_t *src, float s, const float *cols,
                     unsigned ug, int syl, size_t k, unsigned g, stf_quant_mode mode,
                     stf_dtype t, float *sa, float *sb, float *row)
{
    static int8_t qa[KMAX], qb[KMAX];
    float scale_a = -1.0f, scale_b = -2.0f;
    memset(qa, 0x55, k);
    memset(qb, 0x55, k);
    const stf__kernels *r = &stf__kernels_scalar;
    if (cols) r->int8_dequant_row_cols(row, src, cols, k);
    else r->int8_dequant_row(row, src, s, k);
    if (ug && syl) r->sylvester_undo(row, k, ug);
    else if (ug) r->fht_regular(row, k, ug);
    int ra = r->int8_row(qa, &scale_a, row, STF_F32, k, g, mode, t, sa);
    int rb = v->int8_row_i8(qb, &scale_b, src, s, cols, ug, syl, k, g, mode, t, sb, row);
    if (ra != rb || (ra == 0 && (qt_bits(scale_a) != qt_bits(scale_b) ||
                                 memcmp(qa, qb, k) != 0))) {
        print_error("variant %d: int8_row_i8 differs: s=%a cols=%d ug=%u syl=%d k=%zu g=%u "
                    "mode=%d t=%d rc %d/%d scale %a/%a\n", (int)v->id, (double)s, cols != NULL,
                    ug, syl, k, g, (int)mode, (int)t, ra, rb, (double)scale_a, (double)scale_b);
        fail();
    }
}

static const float k_scales[] = { 0.0123f, -0.004f, 1.0f, 0x1p-122f, 0x1.fffffep-123f,
                                  0x1p-118f, 0x1.fffffep-119f, 0x1p-140f, 3.0e36f, 0.0f,
                                  -0x1p-118f, 1.0e-30f };

/* More scales for the G = 256 shapes: at and below the guards of the
 * one-pass INT8 paths (2^-100 regular, 2^-90 Sylvester), full mantissas,
 * and NaN and Inf. */
static const float k_scales_g256[] = { 0x1p-100f, -0x1.fffffep-101f, 0x1p-90f,
                                       0x1.fffffep-91f, 0x1.234567p-5f, -0x1.fedcbap-9f,
                                       0x1.7ffffep+100f };

#define NSC (sizeof k_scales / sizeof *k_scales)
#define NSC256 (sizeof k_scales_g256 / sizeof *k_scales_g256)

/* The production shapes: T = BF16, G = 256, no rotation, a regular G = 256
 * or a Sylvester G = 128 to undo, row and column scales. */
static void test_g256_bf16(void **state)
{
    (void)state;
    static const size_t ks[] = { 256, 512, 768, 3072 };
    static int8_t src[KMAX];
    float *sa = aligned_floats(KMAX), *sb = aligned_floats(KMAX), *row = aligned_floats(KMAX);
    float *cols = aligned_floats(KMAX);
    size_t cases = 0;
    g_rng.s = 8;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (size_t si = 0; si < NSC + NSC256 + 2; si++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (int kind = 0; kind < R_NKINDS; kind++)
                    for (int u = 0; u < 3; u++) {
                        /* no rotation, regular G = 256, Sylvester G = 128 */
                        unsigned ug = u == 0 ? 0 : u == 1 ? 256 : 128;
                        float sc = si < NSC            ? k_scales[si]
                                   : si < NSC + NSC256 ? k_scales_g256[si - NSC]
                                   : qt_float(si == NSC + NSC256 ? 0x7FC00000u : 0xFF800000u);
                        size_t k = ks[ki];
                        fill(src, k, kind);
                        stf_quant_mode mode = (kind + (int)si) % 2 ? STF_QMODE_EAGER
                                                                   : STF_QMODE_CUDA;
                        cmp_case(v, src, sc, NULL, ug, u == 2, k, 256, mode, STF_BF16, sa, sb,
                                 row);
                        if (u == 2) { /* Sylvester sources have row scales */
                            cases++;
                            continue;
                        }
                        /* Column scales: one of them is the edge value. */
                        for (size_t i = 0; i < k; i++)
                            cols[i] = 0.001f + (float)(qt_next(&g_rng) % 1000) * 1e-5f;
                        cols[qt_next(&g_rng) % k] = sc;
                        cmp_case(v, src, 0.0f, cols, ug, 0, k, 256, mode, STF_BF16, sa, sb, row);
                        cases += 2;
                    }
    }
    assert_true(cases >= (NSC + NSC256 + 2) * 4 * R_NKINDS * 5);
#if STF_HAVE_X86_SIMD
    /* The fast path itself takes ordinary rows, and declines below its guard. */
    if (stf_simd_supported(STF_SIMD_AVX512) && stf__avx512_bf16_usable()) {
        static int8_t qb[KMAX];
        float sc = 0;
        fill(src, 3072, R_RANDOM);
        for (unsigned ug = 0; ug <= 256; ug += 256) {
            assert_int_equal(stf__int8_row_i8_g256(qb, &sc, src, 0.01f, NULL, ug, 3072,
                                                   STF_QMODE_CUDA, sb), 0);
            assert_int_equal(stf__int8_row_i8_g256(qb, &sc, src, 0x1p-123f, NULL, ug, 3072,
                                                   STF_QMODE_CUDA, sb), 1);
        }
        assert_int_equal(stf__int8_row_i8_g256(qb, &sc, src, 0x1p-120f, NULL, 256, 3072,
                                               STF_QMODE_CUDA, sb), 1);
        assert_int_equal(stf__int8_row_i8_g256(qb, &sc, src, 0x1p-120f, NULL, 0, 3072,
                                               STF_QMODE_CUDA, sb), 0);
        /* The Sylvester G = 128 one: ordinary scales, not below 2^-90. */
        assert_int_equal(stf__int8_row_syl128_g256(qb, &sc, src, 0.01f, 3072, STF_QMODE_CUDA, sb),
                         0);
        assert_int_equal(stf__int8_row_syl128_g256(qb, &sc, src, -0x1p-90f, 3072,
                                                   STF_QMODE_EAGER, sb), 0);
        assert_int_equal(stf__int8_row_syl128_g256(qb, &sc, src, 0x1.fffffep-91f, 3072,
                                                   STF_QMODE_CUDA, sb), 1);
        assert_int_equal(stf__int8_row_syl128_g256(qb, &sc, src, 0.01f, 3000, STF_QMODE_CUDA, sb),
                         1);
    }
#endif
    free(sa);
    free(sb);
    free(row);
    free(cols);
}

/* Everything else goes through the composition: other group sizes,
 * Sylvester sources of every G the reader takes (2..4096), other modes
 * and rounding dtypes. */
static void test_other_shapes(void **state)
{
    (void)state;
    static const struct { unsigned ug; int syl; } undo[] = {
        { 0, 0 }, { 4, 0 }, { 16, 0 }, { 64, 0 }, { 256, 0 }, { 1024, 0 },
        { 2, 1 }, { 4, 1 }, { 8, 1 }, { 16, 1 }, { 32, 1 }, { 64, 1 }, { 128, 1 }, { 256, 1 },
        { 512, 1 }, { 1024, 1 }, { 2048, 1 }, { 4096, 1 },
    };
    static const unsigned gs[] = { 0, 4, 16, 64, 256, 1024 };
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    static const stf_dtype ts[] = { STF_BF16, STF_F16, STF_F32 };
    static int8_t src[KMAX];
    float *sa = aligned_floats(KMAX), *sb = aligned_floats(KMAX), *row = aligned_floats(KMAX);
    float *cols = aligned_floats(KMAX);
    size_t cases = 0;
    g_rng.s = 9;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (size_t ui = 0; ui < sizeof undo / sizeof *undo; ui++)
            for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++)
                for (int kind = 0; kind < R_NKINDS; kind++) {
                    size_t k = 4096;
                    fill(src, k, kind);
                    float s = k_scales[(size_t)kind * 3 % 12];
                    stf_quant_mode mode = modes[(ui + gi + (size_t)kind) % 3];
                    stf_dtype t = ts[(ui + (size_t)kind) % 3];
                    cmp_case(v, src, s, NULL, undo[ui].ug, undo[ui].syl, k, gs[gi], mode, t, sa,
                             sb, row);
                    for (size_t i = 0; i < k; i++) cols[i] = (float)(i % 13) * 0.01f - 0.05f;
                    cmp_case(v, src, 0.0f, cols, undo[ui].ug, undo[ui].syl, k, gs[gi], mode, t,
                             sa, sb, row);
                    cases += 2;
                }
    }
    assert_true(cases >= 18 * 6 * R_NKINDS * 2);
    free(sa);
    free(sb);
    free(row);
    free(cols);
}

/* The one-scale path decoded in pass 1 (no rotation to undo and any
 * target G, or a regular G = 256 one and target G 0, 4, 16 or 64): every
 * mode and rounding dtype, rows of one to twelve groups and lengths that
 * are no multiple of 16, every row kind and every scale above, NaN and Inf
 * included. */
static void test_one_scale_targets(void **state)
{
    (void)state;
    static const unsigned gs[] = { 0, 4, 16, 64, 256, 1024 };
    static const size_t ks[] = { 256, 768, 1024, 3072, 100, 52 };
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    static const stf_dtype ts[] = { STF_BF16, STF_F16, STF_F32 };
    static int8_t src[KMAX];
    float *sa = aligned_floats(KMAX), *sb = aligned_floats(KMAX), *row = aligned_floats(KMAX);
    size_t cases = 0;
    g_rng.s = 10;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        for (size_t si = 0; si < NSC + NSC256 + 2; si++)
            for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++)
                for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                    for (int kind = 0; kind < R_NKINDS; kind++)
                        for (unsigned ug = 0; ug <= 256; ug += 256) {
                            size_t k = ks[ki];
                            if ((gs[gi] && k % gs[gi]) || (ug && k % ug)) continue;
                            float sc = si < NSC            ? k_scales[si]
                                       : si < NSC + NSC256 ? k_scales_g256[si - NSC]
                                       : qt_float(si == NSC + NSC256 ? 0x7FC00000u : 0xFF800000u);
                            size_t c = si + gi + ki + (size_t)kind;
                            fill(src, k, kind);
                            cmp_case(v, src, sc, NULL, ug, 0, k, gs[gi], modes[c % 3],
                                     ts[(c / 3) % 3], sa, sb, row);
                            cases++;
                        }
    }
    assert_true(cases >= (NSC + NSC256 + 2) * R_NKINDS * 20);
    free(sa);
    free(sb);
    free(row);
}

/* Exact values: a row of +-127 codes with scale 2 and no rotation gives
 * back +-127 and the scale 2; a zero row the floor; an Inf scale
 * STF_ENUMERIC. */
static void test_exact_values(void **state)
{
    (void)state;
    static int8_t src[256];
    float *sc = aligned_floats(256), *row = aligned_floats(256);
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        int8_t q[256];
        float scale;
        for (size_t i = 0; i < 256; i++) src[i] = (int8_t)(i % 2 ? -127 : 127);
        assert_int_equal(v->int8_row_i8(q, &scale, src, 2.0f, NULL, 0, 0, 256, 0, STF_QMODE_FP32,
                                        STF_F32, sc, row), 0);
        for (size_t i = 0; i < 256; i++) assert_int_equal(q[i], i % 2 ? -127 : 127);
        assert_true(qt_bits(scale) == qt_bits(2.0f));
        memset(src, 0, sizeof src);
        assert_int_equal(v->int8_row_i8(q, &scale, src, -2.0f, NULL, 256, 0, 256, 256,
                                        STF_QMODE_CUDA, STF_BF16, sc, row), 0);
        for (size_t i = 0; i < 256; i++) assert_int_equal(q[i], 0);
        assert_int_equal(qt_bits(scale), 0x0DA24260u);
        src[9] = 1;
        assert_int_equal(v->int8_row_i8(q, &scale, src, qt_float(0x7F800000u), NULL, 256, 0, 256,
                                        256, STF_QMODE_CUDA, STF_BF16, sc, row), STF_ENUMERIC);
    }
    free(sc);
    free(row);
}

/* Every G the undo takes, rows of one to three groups, every row kind and
 * scales up to Inf and NaN: the bits of the scalar composition, and no
 * store past the row. */
static void test_dequant_syl_matches_composition(void **state)
{
    (void)state;
    static const float scales[] = { 0.0123f, 1.0f, 0x1p-140f, 3.0e36f, 0.0f, -0.5f };
    int8_t *q = malloc(3 * 4096);
    float *a = aligned_floats(3 * 4096 + 16), *b = aligned_floats(3 * 4096 + 16);
    assert_non_null(q);
    size_t cases = 0;
    for (int vi = 0; vi < QT_NVARIANTS; vi++) {
        const stf__kernels *v = qt_kernel_variant(vi);
        if (!v) continue;
        g_rng.s = 0x5E1Fu;
        for (unsigned g = 2; g <= 4096; g *= 2)
            for (size_t m = 1; m <= 3; m++)
                for (int kind = 0; kind < R_NKINDS; kind++) {
                    size_t k = g * m;
                    float s = kind == R_RANDOM && m == 2 ? qt_float(0x7F800000u)
                              : kind == R_SMALL && m == 3 ? qt_float(0xFFC00001u)
                                                          : scales[((size_t)kind + m - 1) % 6];
                    fill(q, k, kind);
                    b[k] = qt_float(0x7FA5A5A5u);
                    stf__kernels_scalar.int8_dequant_row(a, q, s, k);
                    stf__sylvester_undo_scalar(a, k, g);
                    v->int8_dequant_syl(b, q, s, k, g);
                    for (size_t i = 0; i < k; i++)
                        if (qt_bits(a[i]) != qt_bits(b[i])) {
                            print_error("variant %d g=%u k=%zu kind=%d s=%a: value %zu %08x != "
                                        "%08x\n", vi, g, k, kind, (double)s, i, qt_bits(a[i]),
                                        qt_bits(b[i]));
                            fail();
                        }
                    assert_int_equal(qt_bits(b[k]), 0x7FA5A5A5u);
                    cases++;
                }
    }
    assert_true(cases >= 12 * 3 * R_NKINDS);
    free(q);
    free(a);
    free(b);
}

/* stf_int8_dequantize of Sylvester rows with row and tensor scales, under
 * every variant the CPU has: the bits of int8_dequant_row + sylvester_undo
 * on the scalar table, row by row. */
static void test_dequantize_sylvester_rows(void **state)
{
    (void)state;
    enum { N = 3, K = 512 };
    static int8_t q[N * K];
    float *a = aligned_floats(N * K), *b = aligned_floats(N * K);
    const float rs[N] = { 0.0123f, -3.0e36f, 0x1p-140f };
    g_rng.s = 0x5E20u;
    fill(q, N * K, R_RANDOM);
    q[5] = -128;
    q[K + 7] = 127;
    static const stf_simd simds[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    for (size_t si = 0; si < 3; si++) {
        if (!stf_simd_supported(simds[si])) continue;
        assert_int_equal(stf_simd_select(simds[si], NULL), 0);
        for (unsigned g = 2; g <= K; g *= 2)
            for (int axis = 0; axis < 2; axis++) {
                stf_dequant_opts o = { axis ? STF_SCALE_ROW : STF_SCALE_TENSOR, g, 1 };
                for (size_t r = 0; r < N; r++) {
                    stf__kernels_scalar.int8_dequant_row(a + r * K, q + r * K, rs[axis ? r : 0], K);
                    stf__sylvester_undo_scalar(a + r * K, K, g);
                }
                assert_int_equal(stf_int8_dequantize(b, q, rs, N, K, &o, NULL, NULL), 0);
                assert_memory_equal(a, b, sizeof(float) * N * K);
            }
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
    free(a);
    free(b);
}

/* fix's call: the bytes, scale, return code and message of
 * stf_int8_dequantize (the decoder's row) + stf__int8_quantize_row_f32,
 * for tensor, row and column scales, no rotation, a regular G = 256 and a
 * Sylvester G = 128 to undo; on a non-finite row x holds the decoded row. */
static void test_quantize_row_i8(void **state)
{
    (void)state;
    enum { K = 1024 };
    static int8_t src[K];
    int8_t qa[K], qb[K];
    float *sa = aligned_floats(K), *sb = aligned_floats(K), *x = aligned_floats(K);
    float *y = aligned_floats(K), *cols = aligned_floats(K);
    static const struct { unsigned ug; int syl; } undo[] = { { 0, 0 }, { 256, 0 }, { 128, 1 } };
    static const stf_scale_axis axes[] = { STF_SCALE_TENSOR, STF_SCALE_ROW, STF_SCALE_COL };
    static const float scales[] = { 0.25f, 3.0e38f, 0.0f, 0x1p-123f };
    static const stf_int8_opts opts[] = { { 256, STF_QMODE_CUDA, STF_BF16 },
                                          { 64, STF_QMODE_EAGER, STF_F16 },
                                          { 0, STF_QMODE_FP32, STF_F32 } };
    size_t refused = 0, cases = 0;
    g_rng.s = 11;
    for (size_t ui = 0; ui < 3; ui++)
        for (size_t ai = 0; ai < 3; ai++)
            for (size_t si = 0; si < 4; si++)
                for (int kind = 0; kind < R_NKINDS; kind++) {
                    const stf_int8_opts *o = &opts[(ui + si + (size_t)kind) % 3];
                    fill(src, K, kind);
                    float s = scales[si], scale_a = 0, scale_b = 0;
                    for (size_t i = 0; i < K; i++) cols[i] = s * (float)(1 + i % 3);
                    const float *c = axes[ai] == STF_SCALE_COL ? cols : NULL;
                    stf_err ea, eb;
                    stf_err_clear(&ea);
                    stf_err_clear(&eb);
                    stf_dequant_opts d = { axes[ai], undo[ui].ug, undo[ui].syl };
                    assert_int_equal(stf_int8_dequantize(y, src, c ? c : &s, 1, K, &d, NULL,
                                                         NULL), 0);
                    int ra = stf__int8_quantize_row_f32(qa, &scale_a, y, K, o, sa, &ea);
                    int rb = stf__int8_quantize_row_i8(qb, &scale_b, src, c ? 0.0f : s, c,
                                                       undo[ui].ug, undo[ui].syl, K, o, sb, x,
                                                       &eb);
                    assert_int_equal(ra, rb);
                    assert_string_equal(ea.msg, eb.msg);
                    if (rb == 0) {
                        assert_memory_equal(qa, qb, K);
                        assert_int_equal(qt_bits(scale_a), qt_bits(scale_b));
                    } else {
                        assert_int_equal(rb, STF_ENUMERIC);
                        assert_memory_equal(x, y, K * sizeof(float));
                        refused++;
                    }
                    /* 3e38 times a code of 2 or more overflows, and so does a
                     * column scale of 2 * 3e38 (times a zero code: NaN); the
                     * other scales give finite rows. */
                    if (si != 1) assert_int_equal(rb, 0);
                    else if (kind == R_ZERO) assert_int_equal(rb, c ? STF_ENUMERIC : 0);
                    else if (kind == R_RANDOM || kind == R_EXTREME)
                        assert_int_equal(rb, STF_ENUMERIC);
                    cases++;
                }
    assert_int_equal(cases, 3 * 3 * 4 * R_NKINDS);
    assert_true(refused >= 3 * 3 * 3);
    stf_err e;
    stf_err_clear(&e);
    stf_int8_opts bad = { 48, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf__int8_quantize_row_i8(qb, sb, src, 1.0f, NULL, 0, 0, K, &bad, sb, x, &e),
                     STF_EINVAL);
    assert_string_equal(e.msg, "int8 quantize: group size 48 is not a power of 4 in 4..1024");
    free(sa);
    free(sb);
    free(x);
    free(y);
    free(cols);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_g256_bf16),
        cmocka_unit_test(test_other_shapes),
        cmocka_unit_test(test_one_scale_targets),
        cmocka_unit_test(test_exact_values),
        cmocka_unit_test(test_dequant_syl_matches_composition),
        cmocka_unit_test(test_dequantize_sylvester_rows),
        cmocka_unit_test(test_quantize_row_i8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
