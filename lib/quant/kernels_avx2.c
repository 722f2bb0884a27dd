/*
 * The AVX2 (+F16C) kernel table: no AVX-512 instruction here, so it runs
 * on every AVX2 machine. Every entry is bit-identical to kernels_scalar.c;
 * the reasons are the ones given at the top of kernels_avx512.c (same adds
 * in the same order, x0 + (-x1) == x0 - x1 by IEEE definition but for the
 * sign of a NaN, which nan_canon.h makes moot for the decodes, deferred
 * 0.5 factors for G = 256 under the group256 guard, absmax as an integer
 * max of |bits| with rows whose R or rT(R) is not finite handed to the
 * scalar table, BF16 rounding by the same integer carry, F16 by the
 * hardware RNE conversion, the quotient as v * fl32(1/d) with the F32
 * half-integer check, rint by vcvtps2dq in the MXCSR mode that rintf uses
 * too, the clamp by saturating packs).
 *
 * With 16 ymm registers a 64-value block (8 registers) is rotated in
 * registers (strides 1, 4, 16); strides 64 and 256 run on the group just
 * stored to scratch, while it is in L1. Row tails (only possible for g = 0
 * or 4) run through plain C copies of the scalar expressions.
 */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "fp8_avx2.h"
#include "fpbits.h"
#include "int8_scale.h"
#include "kernels.h"
#include "nan_canon.h"

#define INL static inline __attribute__((always_inline))

#define SIGN ((int)0x80000000u)

/* ------------------------------------------------------------- FHT parts */

/* Stride 1: within each 4-lane block, 0.5*(((A+B)+C)+D) where (d = lane)
 * d=0: x0,x1,x2,-x3  d=1: x0,x1,-x2,x3  d=2: x0,-x1,x2,x3  d=3: x1,-x0,x2,x3. */
INL __m256 fht_s1_x(__m256 v, int scaled)
{
    const __m256 h = _mm256_set1_ps(0.5f);
    const __m256 sb = _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, SIGN, SIGN, 0, 0, SIGN, SIGN));
    const __m256 sc = _mm256_castsi256_ps(_mm256_setr_epi32(0, SIGN, 0, 0, 0, SIGN, 0, 0));
    const __m256 sd = _mm256_castsi256_ps(_mm256_setr_epi32(SIGN, 0, 0, 0, SIGN, 0, 0, 0));
    __m256 a = _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 0, 0));
    __m256 b = _mm256_xor_ps(_mm256_permute_ps(v, _MM_SHUFFLE(0, 1, 1, 1)), sb);
    __m256 c = _mm256_xor_ps(_mm256_permute_ps(v, _MM_SHUFFLE(2, 2, 2, 2)), sc);
    __m256 d = _mm256_xor_ps(_mm256_permute_ps(v, _MM_SHUFFLE(3, 3, 3, 3)), sd);
    __m256 y = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a, b), c), d);
    return scaled ? _mm256_mul_ps(h, y) : y;
}

INL __m256 fht_s1(__m256 v) { return fht_s1_x(v, 1); }

/*
 * Stride 4 over 16 values held as v0 = [x0|x1], v1 = [x2|x3] (4-value
 * halves). Out: v0 = [y0|y1], v1 = [y2|y3], with the same term order:
 * y0 = ((x0+x1)+x2)+(-x3), y1 = ((x0+x1)+(-x2))+x3,
 * y2 = ((x0+(-x1))+x2)+x3, y3 = ((x1+(-x0))+x2)+x3.
 */
INL void fht_s4_x(__m256 *p0, __m256 *p1, int scaled)
{
    const __m256 h = _mm256_set1_ps(0.5f);
    const __m256 neg = _mm256_castsi256_ps(_mm256_set1_epi32(SIGN));
    const __m256 hi = _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, 0, 0, SIGN, SIGN, SIGN, SIGN));
    const __m256 lo = _mm256_castsi256_ps(_mm256_setr_epi32(SIGN, SIGN, SIGN, SIGN, 0, 0, 0, 0));
    __m256 v0 = *p0, v1 = *p1;
    __m256 x0 = _mm256_permute2f128_ps(v0, v0, 0x00);
    __m256 x1 = _mm256_permute2f128_ps(v0, v0, 0x11);
    __m256 x2 = _mm256_permute2f128_ps(v1, v1, 0x00);
    __m256 x3 = _mm256_permute2f128_ps(v1, v1, 0x11);
    __m256 sw = _mm256_xor_ps(_mm256_permute2f128_ps(v0, v0, 0x01), neg);
    __m256 y0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_xor_ps(x2, hi)),
                              _mm256_xor_ps(x3, lo));
    __m256 y1 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(v0, sw), x2), x3);
    *p0 = scaled ? _mm256_mul_ps(h, y0) : y0;
    *p1 = scaled ? _mm256_mul_ps(h, y1) : y1;
}

INL void fht_s4(__m256 *p0, __m256 *p1) { fht_s4_x(p0, p1, 1); }

/*
 * A stage whose stride is a whole number of vectors; m multiplies the outputs
 * (0.5: the FAST TRANSFORM stages; 1: unscaled, or 1/16 to finish a
 * deferred-scaling G = 256 group, see pass1). zs as fht_quad_x in
 * kernels_avx512.h: the sign of an exactly-zero y3 may differ, which int8_row
 * ignores.
 */
INL void fht_quad_m(__m256 *p0, __m256 *p1, __m256 *p2, __m256 *p3, float m, int zs)
{
    const __m256 h = _mm256_set1_ps(m);
    __m256 x0 = *p0, x1 = *p1, x2 = *p2, x3 = *p3;
    __m256 s01 = _mm256_add_ps(x0, x1);
    __m256 d01 = _mm256_sub_ps(x0, x1);
    __m256 y0 = _mm256_sub_ps(_mm256_add_ps(s01, x2), x3);
    __m256 y1 = _mm256_add_ps(_mm256_sub_ps(s01, x2), x3);
    __m256 y2 = _mm256_add_ps(_mm256_add_ps(d01, x2), x3);
    __m256 y3 = zs ? _mm256_add_ps(_mm256_sub_ps(x2, d01), x3)
                   : _mm256_add_ps(_mm256_add_ps(_mm256_sub_ps(x1, x0), x2), x3);
    if (m != 1.0f) {
        y0 = _mm256_mul_ps(h, y0);
        y1 = _mm256_mul_ps(h, y1);
        y2 = _mm256_mul_ps(h, y2);
        y3 = _mm256_mul_ps(h, y3);
    }
    *p0 = y0;
    *p1 = y1;
    *p2 = y2;
    *p3 = y3;
}

INL void fht_quad(__m256 *p0, __m256 *p1, __m256 *p2, __m256 *p3)
{
    fht_quad_m(p0, p1, p2, p3, 0.5f, 0);
}

/* ------------------------------------------------------------- loads */

/* FP8 sources (int8_row_fp8) are decoded and multiplied by the row scale
 * sv: fl32(fp8 * s), the value fp8_decode stores. */
INL __m256 load8(const void *src, stf_dtype dt, size_t i, __m256 sv)
{
    if (dt == STF_F8_E4M3 || dt == STF_F8_E5M2)
        return _mm256_mul_ps(fp8_8((const uint8_t *)src + i, dt), sv);
    if (dt == STF_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)src + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    if (dt == STF_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
    return _mm256_loadu_ps((const float *)src + i);
}

/*
 * Software prefetch of the source 4 KiB ahead, for the 16 values at i
 * (see kernels_avx512.c: the hardware streamers stop at page boundaries).
 * A prefetch never faults; the address is formed as an integer.
 */
INL void prefetch16(const void *src, stf_dtype dt, size_t i)
{
    size_t esz = dt == STF_F32 ? 4 : dt == STF_BF16 || dt == STF_F16 ? 2 : 1;
    uintptr_t p = (uintptr_t)src + i * esz + 4096;
    if (esz == 4 || (esz == 2 && (i & 16) == 0) || (i & 48) == 0) _mm_prefetch((const char *)p, _MM_HINT_T0);
}

INL __m256i abs_bits(__m256 v)
{
    return _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7FFFFFFF));
}

/*
 * Absmax as the integer max of |bits| (integer order is float order for
 * non-negative floats); >= 0x7F800000 flags Inf or NaN, which sends the
 * row to the exact slow path in int8_row.
 */
INL __m256i amax_upd(__m256i a, __m256 v) { return _mm256_max_epu32(a, abs_bits(v)); }

/* One memory stage of stride s (a multiple of 8) over a block of 4s floats,
 * outputs times m (fht_quad_m); with amax != NULL it also takes the
 * absmax of the outputs. */
INL void fht_mem_stage_m(float *p, size_t s, __m256i *amax, float m, int zs)
{
    for (size_t j = 0; j < s; j += 8) {
        __m256 v0 = _mm256_loadu_ps(p + j), v1 = _mm256_loadu_ps(p + s + j);
        __m256 v2 = _mm256_loadu_ps(p + 2 * s + j), v3 = _mm256_loadu_ps(p + 3 * s + j);
        fht_quad_m(&v0, &v1, &v2, &v3, m, zs);
        if (amax) *amax = amax_upd(amax_upd(amax_upd(amax_upd(*amax, v0), v1), v2), v3);
        _mm256_storeu_ps(p + j, v0);
        _mm256_storeu_ps(p + s + j, v1);
        _mm256_storeu_ps(p + 2 * s + j, v2);
        _mm256_storeu_ps(p + 3 * s + j, v3);
    }
}

INL void fht_mem_stage(float *p, size_t s, __m256i *amax) { fht_mem_stage_m(p, s, amax, 0.5f, 0); }

static int is_pow4(unsigned g)
{
    return g >= 4 && g <= 1024 && (g & (g - 1)) == 0 && (g & 0x55555555u) != 0;
}

static uint32_t hmax_u32(__m256i a)
{
    uint32_t t[8], m = 0;
    _mm256_storeu_si256((__m256i *)t, a);
    for (int i = 0; i < 8; i++)
        if (t[i] > m) m = t[i];
    return m;
}

/* Tail of a g = 0 / g = 4 row, in plain C: load, stride-1 stage, max of
 * |bits|, with the scalar code's expressions. */
static uint32_t tail_c(float *x, const void *src, stf_dtype dt, size_t i, size_t k, unsigned g,
                       uint32_t m, float s)
{
    for (size_t j = i; j < k; j++) {
        float v;
        if (dt == STF_F8_E4M3 || dt == STF_F8_E5M2)
            stf__fp8_decode_scalar(&v, (const uint8_t *)src + j, dt, 1, s);
        else if (dt == STF_BF16) v = stf__bf16_to_f32(((const uint16_t *)src)[j]);
        else if (dt == STF_F16) v = stf__f16_to_f32(((const uint16_t *)src)[j]);
        else v = ((const float *)src)[j];
        x[j] = v;
    }
    if (g == 4)
        for (size_t b = i; b + 4 <= k; b += 4) {
            float x0 = x[b], x1 = x[b + 1], x2 = x[b + 2], x3 = x[b + 3];
            x[b] = 0.5f * (((x0 + x1) + x2) - x3);
            x[b + 1] = 0.5f * (((x0 + x1) - x2) + x3);
            x[b + 2] = 0.5f * (((x0 - x1) + x2) + x3);
            x[b + 3] = 0.5f * (((-x0 + x1) + x2) + x3);
        }
    for (size_t j = i; j < k; j++) {
        uint32_t b = stf__f32_bits(x[j]) & 0x7FFFFFFFu;
        if (b > m) m = b;
    }
    return m;
}

/*
 * Pass 1: load src (dtype dt) into x as F32, rotate per group of g (0: no
 * rotation); returns max |bits| of R. With src == x (F32) it is the
 * in-place FHT. g is 0 or a power of 4 dividing k.
 *
 * No separate input check: a NaN or Inf input makes every output of its
 * group NaN or Inf (all H coefficients are non-zero), so a finite R proves
 * a finite input; a non-finite R is sorted out by the caller.
 */
/* Transpose 4x4 floats inside each 128-bit lane: lane l of *pj becomes
 * lane j of the l-th output. Eight shuffles. */
INL void lane_transpose(__m256 *p0, __m256 *p1, __m256 *p2, __m256 *p3)
{
    __m256 t0 = _mm256_unpacklo_ps(*p0, *p1), t1 = _mm256_unpackhi_ps(*p0, *p1);
    __m256 t2 = _mm256_unpacklo_ps(*p2, *p3), t3 = _mm256_unpackhi_ps(*p2, *p3);
    *p0 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
    *p1 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
    *p2 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
    *p3 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
}

/*
 * int8_row, G = 256, first three stages of one 64-value block at element i,
 * without their 0.5 factors (deferred scaling, proved at group256 in
 * kernels_avx512.c), stored to x in a permuted order. Index bits b0..b5
 * (digit t = b(2t), b(2t+1)); vector index bits vb0..vb2, lane bits
 * l0..l2 (l2: 128-bit half). Loaded: vb = (b3, b4, b5), l = (b0, b1, b2).
 * Each stage runs as whole-vector butterflies once its digit is in vector
 * bits: lane transposes swap (l0, l1) with two vector bits, vperm2f128
 * swaps l2 with one. Stored: vb = (b4, b5, b1), l = (b3, b2, b0), which
 * pass2_perm undoes on the codes. tiny: as group256 (F32 sources).
 */
INL void block64_t(float *x, const void *src, stf_dtype dt, size_t i, __m256i *tiny,
                    __m256 sv)
{
    __m256 v[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        if ((j & 1) == 0) prefetch16(src, dt, i + 8 * (size_t)j);
        v[j] = load8(src, dt, i + 8 * (size_t)j, sv);
        if (dt == STF_F32)
            *tiny = _mm256_min_epu32(*tiny, _mm256_sub_epi32(abs_bits(v[j]), _mm256_set1_epi32(1)));
    }
    /* (l0, l1) <-> (vb1, vb2): vb = (b3, b0, b1), l = (b4, b5, b2). */
    lane_transpose(&v[0], &v[2], &v[4], &v[6]);
    lane_transpose(&v[1], &v[3], &v[5], &v[7]);
    fht_quad_m(&v[0], &v[2], &v[4], &v[6], 1.0f, 1); /* stride 1 */
    fht_quad_m(&v[1], &v[3], &v[5], &v[7], 1.0f, 1);
    /* l2 <-> vb1: vb = (b3, b2, b1), l = (b4, b5, b0). */
#pragma GCC unroll 4
    for (int j = 0; j < 8; j += 4)
        for (int m = 0; m < 2; m++) {
            __m256 a = v[j + m], b = v[j + m + 2];
            v[j + m] = _mm256_permute2f128_ps(a, b, 0x20);
            v[j + m + 2] = _mm256_permute2f128_ps(a, b, 0x31);
        }
    fht_quad_m(&v[0], &v[2], &v[1], &v[3], 1.0f, 1); /* stride 4: d = b2 + 2 b3 */
    fht_quad_m(&v[4], &v[6], &v[5], &v[7], 1.0f, 1);
    /* (l0, l1) <-> (vb0, vb1): vb = (b4, b5, b1), l = (b3, b2, b0). */
    lane_transpose(&v[0], &v[1], &v[2], &v[3]);
    lane_transpose(&v[4], &v[5], &v[6], &v[7]);
    fht_quad_m(&v[0], &v[1], &v[2], &v[3], 1.0f, 1); /* stride 16 */
    fht_quad_m(&v[4], &v[5], &v[6], &v[7], 1.0f, 1);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) _mm256_storeu_ps(x + i + 8 * (size_t)j, v[j]);
}

/*
 * int8_row pass 1 for G = 256: all four stages (the last one, stride 64,
 * elementwise across the four blocks, times 1/16), scratch in block64_t's
 * order; returns max |bits| of R, or UINT32_MAX when the deferred scaling
 * may not hold (an F32 input below 2^-122 in magnitude) so the caller
 * hands the row to the scalar table, as it does for non-finite R.
 */
INL uint32_t pass1_t256(float *x, const void *src, stf_dtype dt, size_t k, __m256 sv)
{
    __m256i a = _mm256_setzero_si256(), tiny = _mm256_set1_epi32(-1);
    for (size_t grp = 0; grp < k; grp += 256) {
        for (size_t i = grp; i < grp + 256; i += 64) block64_t(x, src, dt, i, &tiny, sv);
        fht_mem_stage_m(x + grp, 64, &a, 0.0625f, 1);
    }
    if (dt == STF_F32) {
        const __m256i c = _mm256_set1_epi32(0x027FFFFF);
        if (!_mm256_testc_si256(_mm256_cmpeq_epi32(_mm256_min_epu32(tiny, c), c), _mm256_set1_epi32(-1)))
            return UINT32_MAX;
    }
    return hmax_u32(a);
}

INL uint32_t pass1(float *x, const void *src, stf_dtype dt, size_t k, unsigned g, __m256 sv)
{
    __m256i a = _mm256_setzero_si256();
    size_t i = 0;
    if (g >= 64) {
        for (size_t grp = 0; grp < k; grp += g) {
            for (i = grp; i < grp + g; i += 64) {
                __m256 v[8];
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) {
                    if ((j & 1) == 0) prefetch16(src, dt, i + 8 * (size_t)j);
                    v[j] = load8(src, dt, i + 8 * (size_t)j, sv);
                }
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) v[j] = fht_s1(v[j]);
#pragma GCC unroll 4
                for (int j = 0; j < 8; j += 2) fht_s4(&v[j], &v[j + 1]);
                fht_quad(&v[0], &v[2], &v[4], &v[6]);
                fht_quad(&v[1], &v[3], &v[5], &v[7]);
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) {
                    if (g == 64) a = amax_upd(a, v[j]);
                    _mm256_storeu_ps(x + i + 8 * (size_t)j, v[j]);
                }
            }
            if (g == 256) fht_mem_stage(x + grp, 64, &a);
            if (g == 1024) {
                for (size_t b = 0; b < 1024; b += 256) fht_mem_stage(x + grp + b, 64, NULL);
                fht_mem_stage(x + grp, 256, &a);
            }
        }
        i = k;
    } else if (g == 16) {
        for (; i < k; i += 16) {
            prefetch16(src, dt, i);
            __m256 v0 = load8(src, dt, i, sv), v1 = load8(src, dt, i + 8, sv);
            v0 = fht_s1(v0);
            v1 = fht_s1(v1);
            fht_s4(&v0, &v1);
            a = amax_upd(amax_upd(a, v0), v1);
            _mm256_storeu_ps(x + i, v0);
            _mm256_storeu_ps(x + i + 8, v1);
        }
    } else {
        for (; i + 8 <= k; i += 8) {
            if ((i & 8) == 0) prefetch16(src, dt, i);
            __m256 v = load8(src, dt, i, sv);
            if (g == 4) v = fht_s1(v);
            a = amax_upd(a, v);
            _mm256_storeu_ps(x + i, v);
        }
    }
    uint32_t m = hmax_u32(a);
    return i < k ? tail_c(x, src, dt, i, k, g, m, _mm256_cvtss_f32(sv)) : m;
}

/* ------------------------------------------------------------- rounding */

/* rT for BF16: the scalar carry (NaN payloads that reach here are the
 * default NaN, which the carry leaves NaN; see kernels_avx512.c). */
INL __m256 round_bf16(__m256 x)
{
    __m256i b = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    b = _mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
    return _mm256_castsi256_ps(_mm256_and_si256(b, _mm256_set1_epi32((int)0xFFFF0000u)));
}

INL __m256 round_t(__m256 x, stf_dtype t)
{
    if (t == STF_BF16) return round_bf16(x);
    if (t == STF_F16)
        return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return x;
}

/*
 * rint(rT(rT(x)/d)) as int32 for a row whose every v = rT(x) is finite (so
 * every quotient is finite and small), clamped to [-128, 127] by the
 * saturating packs that follow; vcvtps2dq rounds like rintf (both use the
 * MXCSR mode). recip: the quotient as v * fl32(1/d), exact in effect for
 * T = BF16/F16 and checked near half-integers for T = F32, as proved at
 * near_half_integer in kernels_avx512.c; else vdivps.
 */
INL __m256i quant8(__m256 x, __m256 rv, __m256 dv, stf_dtype t, int recip)
{
    __m256 v = round_t(x, t), p;
    if (recip) {
        p = _mm256_mul_ps(v, rv);
        if (t == STF_F32) {
            /* p - rint(p) is exact (Sterbenz, or p itself below 1/2). */
            __m256 f = _mm256_sub_ps(p, _mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            f = _mm256_castsi256_ps(abs_bits(f));
            __m256 near = _mm256_cmp_ps(f, _mm256_set1_ps(0.5f - 0x1p-11f), _CMP_GE_OQ);
            if (__builtin_expect(_mm256_movemask_ps(near) != 0, 0))
                p = _mm256_blendv_ps(p, _mm256_div_ps(v, dv), near);
        }
    } else {
        p = _mm256_div_ps(v, dv);
    }
    return _mm256_cvtps_epi32(round_t(p, t));
}

/* 32 quotients to 32 bytes in order (the packs work per 128-bit lane). */
INL __m256i quant32(const float *x, __m256 rv, __m256 dv, stf_dtype t, int rc)
{
    __m256i a = quant8(_mm256_loadu_ps(x), rv, dv, t, rc);
    __m256i b = quant8(_mm256_loadu_ps(x + 8), rv, dv, t, rc);
    __m256i c = quant8(_mm256_loadu_ps(x + 16), rv, dv, t, rc);
    __m256i e = quant8(_mm256_loadu_ps(x + 24), rv, dv, t, rc);
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, e));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

INL void pass2(int8_t *q, const float *x, size_t k, float d, stf_dtype t, int rc)
{
    __m256 dv = _mm256_set1_ps(d), rv = _mm256_set1_ps(1.0f / d);
    size_t i = 0;
    for (; i + 32 <= k; i += 32)
        _mm256_storeu_si256((__m256i *)(q + i), quant32(x + i, rv, dv, t, rc));
    if (i < k) {
        /* Zero padding quantizes to 0 and is not copied out. */
        float pad[32] = { 0 };
        int8_t out[32];
        memcpy(pad, x + i, (k - i) * sizeof(float));
        _mm256_storeu_si256((__m256i *)out, quant32(pad, rv, dv, t, rc));
        memcpy(q + i, out, k - i);
    }
}

/* G = 256 rows of int8_row take pass1_t256 (a permuted scratch). Z: no scale. */
#define Z _mm256_setzero_ps()
static uint32_t pass1_bf16(float *x, const void *s, size_t k, unsigned g)
{
    return g == 256 ? pass1_t256(x, s, STF_BF16, k, Z) : pass1(x, s, STF_BF16, k, g, Z);
}
static uint32_t pass1_f16(float *x, const void *s, size_t k, unsigned g)
{
    return g == 256 ? pass1_t256(x, s, STF_F16, k, Z) : pass1(x, s, STF_F16, k, g, Z);
}
static uint32_t pass1_f32(float *x, const void *s, size_t k, unsigned g)
{
    return g == 256 ? pass1_t256(x, s, STF_F32, k, Z) : pass1(x, s, STF_F32, k, g, Z);
}

/*
 * pass2 over a scratch row in block64_t's order (k % 64 == 0): the codes
 * of each 64-block, then one vpermd and one vpshufb per 32 bytes put
 * them back in order. Byte bits after the packs are (b3, b2 | b1, b4 |
 * b0) (in-dword, dword-in-lane, lane); vpermd makes them (b3, b2 | b0,
 * b1 | b4) and vpshufb (b0, b1 | b2, b3 | b4), the natural order.
 */
INL void pass2_perm(int8_t *q, const float *x, size_t k, float d, stf_dtype t, int rc)
{
    __m256 dv = _mm256_set1_ps(d), rv = _mm256_set1_ps(1.0f / d);
    const __m256i dw = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i by = _mm256_setr_epi8(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15,
                                        0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15);
    for (size_t i = 0; i < k; i += 64) {
        __m256i c[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) c[j] = quant8(_mm256_loadu_ps(x + i + 8 * (size_t)j), rv, dv, t, rc);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            /* Vector index b4 + 2 b5 + 4 b1; half h is b5. */
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(c[2 * h], c[2 * h + 4]),
                                           _mm256_packs_epi32(c[2 * h + 1], c[2 * h + 5]));
            p = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(p, dw), by);
            _mm256_storeu_si256((__m256i *)(q + i + 32 * (size_t)h), p);
        }
    }
}

static void pass2_t(int8_t *q, const float *x, size_t k, float d, stf_dtype t, unsigned g)
{
    if (g == 256) {
        if (t == STF_BF16) pass2_perm(q, x, k, d, STF_BF16, 1);
        else if (t == STF_F16) pass2_perm(q, x, k, d, STF_F16, 1);
        else pass2_perm(q, x, k, d, STF_F32, 1);
        return;
    }
    STF__INT8_PASS2_DISPATCH(pass2, q, x, k, d, t);
}



static int int8_row_avx2(int8_t *q, float *scale, const void *src, stf_dtype src_dtype,
                         size_t k, unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch)
{
    if ((src_dtype != STF_BF16 && src_dtype != STF_F16 && src_dtype != STF_F32) || k == 0 ||
        (g != 0 && (!is_pow4(g) || k % g != 0)))
        return stf__kernels_scalar.int8_row(q, scale, src, src_dtype, k, g, mode, t, scratch);

    uint32_t abits;
    if (src_dtype == STF_BF16) abits = pass1_bf16(scratch, src, k, g);
    else if (src_dtype == STF_F16) abits = pass1_f16(scratch, src, k, g);
    else abits = pass1_f32(scratch, src, k, g);

    float s, d;
    if (stf__int8_row_prepare(&s, &d, abits, mode, &t))
        return stf__kernels_scalar.int8_row(q, scale, src, src_dtype, k, g, mode, t, scratch);

    /* d is a normal float between the scale floor and maxT/127, so 1/d is
     * finite and normal: G = 256 rows always take the reciprocal. */
    pass2_t(q, scratch, k, d, t, g);
    *scale = s;
    return 0;
}

/*
 * int8_row_fp8 (contract in kernels.h): pass 1 decodes each code to
 * fl32(fp8 * s) as it loads it (fp8_8, the decode fp8_decode uses), so the
 * same F32 values go through the same steps as int8_row on the decoded
 * row, without that row. G = 256 defers its 0.5 factors, which needs
 * every nonzero |fp8 * s| >= 2^-122 (group256 in kernels_avx512.c): the
 * nonzero FP8 magnitudes are at least 2^-9 (E4M3) and 2^-16 (E5M2), so
 * a smaller |s| takes the composition (kernels_fp8_row.c), as do odd
 * shapes and rows that are not finite.
 */
static int int8_row_fp8_avx2(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                             size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                             float *scratch, float *row)
{
    float as = fabsf(s);
    if ((dt != STF_F8_E4M3 && dt != STF_F8_E5M2) || k == 0 ||
        (g != 0 && (!is_pow4(g) || k % g != 0)) ||
        (g == 256 && !(as >= (dt == STF_F8_E4M3 ? 0x1p-113f : 0x1p-106f))))
        return stf__int8_row_fp8_avx2(q, scale, src, dt, s, k, g, mode, t, scratch, row);
    __m256 sv = _mm256_set1_ps(s);
    uint32_t abits;
    if (dt == STF_F8_E4M3)
        abits = g == 256 ? pass1_t256(scratch, src, STF_F8_E4M3, k, sv)
                         : pass1(scratch, src, STF_F8_E4M3, k, g, sv);
    else
        abits = g == 256 ? pass1_t256(scratch, src, STF_F8_E5M2, k, sv)
                         : pass1(scratch, src, STF_F8_E5M2, k, g, sv);
    float sc, d;
    stf_dtype tq = t;
    if (stf__int8_row_prepare(&sc, &d, abits, mode, &tq))
        return stf__int8_row_fp8_avx2(q, scale, src, dt, s, k, g, mode, t, scratch, row);
    pass2_t(q, scratch, k, d, tq, g);
    *scale = sc;
    return 0;
}

static void fht_regular_avx2(float *x, size_t k, unsigned g)
{
    if (!is_pow4(g) || k % g != 0) {
        stf__kernels_scalar.fht_regular(x, k, g);
        return;
    }
    /* In place, and the sign of a zero output counts: no deferred scaling.
     * pass1's max |bits| covers every output, so only a row that holds a
     * NaN pays for storing it as the one quiet NaN (nan_canon.h). */
    if (pass1(x, x, STF_F32, k, g, _mm256_setzero_ps()) > 0x7F800000u) stf__canon_nan_row(x, k);
}

/* ------------------------------------------------------------- conversions */

static void bf16_to_f32_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(src, STF_BF16, i, _mm256_setzero_ps()));
    for (; i < n; i++) dst[i] = stf__bf16_to_f32(src[i]);
}

/* Hardware widening quiets signalling NaNs; the scalar code keeps the
 * payload as is, so NaN lanes are rebuilt from the bits. */
static void f16_to_f32_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        __m256 f = _mm256_cvtph_ps(h);
        __m256i w = _mm256_cvtepu16_epi32(h);
        __m256i mag = _mm256_and_si256(w, _mm256_set1_epi32(0x7FFF));
        __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7C00));
        if (!_mm256_testz_si256(nan, nan)) {
            __m256i sign = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16);
            __m256i man = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3FF)), 13);
            __m256i bits = _mm256_or_si256(_mm256_or_si256(sign, man), _mm256_set1_epi32(0x7F800000));
            f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), _mm256_castsi256_ps(nan));
        }
        _mm256_storeu_ps(dst + i, f);
    }
    for (; i < n; i++) dst[i] = stf__f16_to_f32(src[i]);
}

/* RNE carry, NaN -> 0x7FC0 exactly as stf__f32_to_bf16; as int32 lanes. */
INL __m256i bf16_narrow(__m256 x)
{
    __m256i b = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r),
                                                _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC0)), nan));
}

static void f32_to_bf16_avx2(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = bf16_narrow(_mm256_loadu_ps(src + i));
        __m256i b = bf16_narrow(_mm256_loadu_ps(src + i + 8));
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), _MM_SHUFFLE(3, 1, 2, 0));
        _mm256_storeu_si256((__m256i *)(dst + i), p);
    }
    for (; i < n; i++) dst[i] = stf__f32_to_bf16(src[i]);
}

INL __m256 i8_widen(const int8_t *q)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
}

static void int8_dequant_row_avx2(float *dst, const int8_t *q, float s, size_t k)
{
    __m256 sv = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + 8 <= k; i += 8)
        _mm256_storeu_ps(dst + i, stf__canon_nan8(_mm256_mul_ps(i8_widen(q + i), sv)));
    for (; i < k; i++) dst[i] = stf__canon_nan((float)q[i] * s);
}

static void int8_dequant_row_cols_avx2(float *dst, const int8_t *q, const float *s, size_t k)
{
    size_t i = 0;
    for (; i + 8 <= k; i += 8)
        _mm256_storeu_ps(dst + i,
                         stf__canon_nan8(_mm256_mul_ps(i8_widen(q + i), _mm256_loadu_ps(s + i))));
    for (; i < k; i++) dst[i] = stf__canon_nan((float)q[i] * s[i]);
}

const stf__kernels stf__kernels_avx2 = {
    STF_SIMD_AVX2,
    int8_row_avx2,
    fht_regular_avx2,
    bf16_to_f32_avx2,
    f16_to_f32_avx2,
    f32_to_bf16_avx2,
    int8_dequant_row_avx2,
    int8_dequant_row_cols_avx2,
    stf__fp8_decode_avx2,
    stf__fp8_decode_cols_avx2,
    stf__sylvester_undo_avx2,
    stf__w4a4_unpack_avx2,
    int8_row_fp8_avx2,
    stf__int8_row_i8_avx2,
    stf__int8_dequant_syl_avx2,
};
