/*
 * The AVX-512 (F, BW, VL, DQ) kernel table. Every entry is bit-identical to
 * kernels_scalar.c, which stays the reference; see the notes there and in
 * stfix-convrot(7): FAST TRANSFORM, QUANTIZATION and NUMBER FORMATS.
 *
 * Why these results are exact copies of the scalar ones:
 * - The FHT computes each output with the same three adds in the same
 *   order; lanes only change *which* outputs run together. x0 + (-x1) is
 *   by IEEE definition x0 - x1, and (-x0) + x1 is x1 - x0 (addition
 *   commutes exactly), so the sign-flip trick below keeps every
 *   expression; only a NaN's sign and payload can differ, and the
 *   decodes store every NaN as one value (nan_canon.h). No FMA: the build has -ffp-contract=off and no intrinsic
 *   here fuses. For G = 256 the 0.5 factors are deferred to one 1/16 at
 *   the end, exact under a guard proved at group256 (groups failing it are
 *   redone with the factors). In int8_row only, y3 may be formed as
 *   x2 - (x0 - x1), which can flip the sign of an exact zero and nothing
 *   else (fht_quad_x, kernels_avx512.h).
 * - Absmax is vrangeps (max |x|) or an integer max of |bits| (exact and
 *   order-free for finite values); a row whose R holds Inf or NaN
 *   (non-finite input, or an FHT overflow), or whose rT(R) overflows, is
 *   handed to the scalar table.
 * - BF16 rounding is the same integer carry; F16 rounding is the hardware
 *   RNE conversion, identical to the scalar one for every finite value.
 *   The quotient is v * fl32(1/d): proved to give the same rT for BF16 and
 *   F16 T, and redone with vdivps near half-integers for F32 T
 *   (near_half_integer). rint is vcvtps2dq in the MXCSR mode that rintf
 *   uses too, and the saturating int32 -> int8 conversion is the clamp.
 * Anything the fast paths do not cover (other dtypes, odd group sizes) is
 * passed to the scalar table, so the answer is the scalar one by definition.
 * The table's conversions and INT8 decodes live in kernels_conv_avx512.c.
 *
 * Data flow of int8_row: BF16 rows with G = 256 and T = BF16 take
 * kernels_bf16_avx512.c where AVX512-BF16 and VBMI exist. Otherwise the
 * source row is loaded and widened 256 values at a time into 16 registers
 * (prefetched 4 KiB ahead), all FHT stages below stride 256 run there, the
 * absmax is taken, and the group is stored once to scratch (L1/L2). A
 * second pass quantizes from scratch. The source is read once. The kernel
 * is compute-bound on one core (about 4 vector ops per cycle issued).
 */
#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "fpbits.h"
#include "int8_scale.h"
#include "kernels.h"
#include "kernels_avx512.h"
#include "nan_canon.h"


/* ------------------------------------------------------------- FHT parts */

INL __m512 sign4(int a, int b, int c, int d)
{
    return _mm512_castsi512_ps(_mm512_broadcast_i32x4(
        _mm_setr_epi32(a ? (int)0x80000000u : 0, b ? (int)0x80000000u : 0,
                       c ? (int)0x80000000u : 0, d ? (int)0x80000000u : 0)));
}

/* Lane masks for the 128-bit blocks of a zmm (stride-4 stage). */
INL __m512 sign_blocks(int a, int b, int c, int d)
{
    __m128i m0 = _mm_set1_epi32(a ? (int)0x80000000u : 0);
    __m128i m1 = _mm_set1_epi32(b ? (int)0x80000000u : 0);
    __m128i m2 = _mm_set1_epi32(c ? (int)0x80000000u : 0);
    __m128i m3 = _mm_set1_epi32(d ? (int)0x80000000u : 0);
    __m512i v = _mm512_castsi128_si512(m0);
    v = _mm512_inserti32x4(v, m1, 1);
    v = _mm512_inserti32x4(v, m2, 2);
    v = _mm512_inserti32x4(v, m3, 3);
    return _mm512_castsi512_ps(v);
}

/*
 * For position d of a butterfly the output is 0.5*(((A+B)+C)+D) with
 * d=0: A=x0 B=x1  C=x2  D=-x3      d=1: A=x0 B=x1  C=-x2 D=x3
 * d=2: A=x0 B=-x1 C=x2  D=x3       d=3: A=x1 B=-x0 C=x2  D=x3
 * which are the FAST TRANSFORM expressions of stfix-convrot(7) term for
 * term.
 */
INL __m512 fht_s1(__m512 v)
{
    const __m512 h = _mm512_set1_ps(0.5f);
    __m512 a = _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 0, 0));
    __m512 b = _mm512_xor_ps(_mm512_permute_ps(v, _MM_SHUFFLE(0, 1, 1, 1)), sign4(0, 0, 1, 1));
    __m512 c = _mm512_xor_ps(_mm512_permute_ps(v, _MM_SHUFFLE(2, 2, 2, 2)), sign4(0, 1, 0, 0));
    __m512 d = _mm512_xor_ps(_mm512_permute_ps(v, _MM_SHUFFLE(3, 3, 3, 3)), sign4(1, 0, 0, 0));
    return _mm512_mul_ps(h, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), c), d));
}

/* The same with the four 128-bit blocks as x0..x3 (stride 4). */
INL __m512 fht_s4(__m512 v)
{
    const __m512 h = _mm512_set1_ps(0.5f);
    __m512 a = _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 0, 0));
    __m512 b = _mm512_xor_ps(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(0, 1, 1, 1)),
                             sign_blocks(0, 0, 1, 1));
    __m512 c = _mm512_xor_ps(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 2, 2, 2)),
                             sign_blocks(0, 1, 0, 0));
    __m512 d = _mm512_xor_ps(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(3, 3, 3, 3)),
                             sign_blocks(1, 0, 0, 0));
    return _mm512_mul_ps(h, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), c), d));
}

INL void fht_quad(__m512 *p0, __m512 *p1, __m512 *p2, __m512 *p3)
{
    fht_quad_x(p0, p1, p2, p3, 1, 0);
}

/*
 * Transpose the 128-bit blocks of four vectors: block b of *pj becomes
 * block j of the b-th output. Eight shuffles; its own inverse.
 */
INL void block_transpose(__m512 *p0, __m512 *p1, __m512 *p2, __m512 *p3)
{
    __m512 t0 = _mm512_shuffle_f32x4(*p0, *p1, _MM_SHUFFLE(1, 0, 1, 0));
    __m512 t1 = _mm512_shuffle_f32x4(*p0, *p1, _MM_SHUFFLE(3, 2, 3, 2));
    __m512 t2 = _mm512_shuffle_f32x4(*p2, *p3, _MM_SHUFFLE(1, 0, 1, 0));
    __m512 t3 = _mm512_shuffle_f32x4(*p2, *p3, _MM_SHUFFLE(3, 2, 3, 2));
    *p0 = _mm512_shuffle_f32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));
    *p1 = _mm512_shuffle_f32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
    *p2 = _mm512_shuffle_f32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
    *p3 = _mm512_shuffle_f32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
}

/* Transpose 4x4 floats inside each 128-bit block: lane l of *pj becomes
 * lane j of the l-th output. Eight shuffles; its own inverse. */
INL void lane_transpose(__m512 *p0, __m512 *p1, __m512 *p2, __m512 *p3)
{
    __m512 t0 = _mm512_unpacklo_ps(*p0, *p1), t1 = _mm512_unpackhi_ps(*p0, *p1);
    __m512 t2 = _mm512_unpacklo_ps(*p2, *p3), t3 = _mm512_unpackhi_ps(*p2, *p3);
    *p0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    *p1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    *p2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    *p3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
}

/*
 * The four stages of a G = 256 group held in v[0..15] (v[j] = values
 * 16j..16j+15), in the FHT's order: strides 1, 4, 16, 64. With sc == 0 the
 * 0.5 factors are left out and the caller multiplies by 1/16 once (valid only
 * under the guard explained at group256); zs as in fht_quad_x.
 *
 * Base-4 digits d0 and d1 of the index are in-vector (lane in block,
 * 128-bit block) and d2, d3 pick the vector. 4x4 transposes (within
 * blocks, or of blocks) move the digit of each stage into the vector index
 * before it runs, so every stage is a whole-vector butterfly: no sign
 * flips, fewer adds. Only the placement of values changes, never an
 * expression.
 */
INL void fht256(__m512 *v, int sc, int zs)
{
    /* v[d2 + 4*d3]: block d1, lane d0. Lane transposes swap d0 <-> d2. */
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4) lane_transpose(&v[j], &v[j + 1], &v[j + 2], &v[j + 3]);
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4) fht_quad_x(&v[j], &v[j + 1], &v[j + 2], &v[j + 3], sc, zs); /* 1 */
    /* v[d0 + 4*d3]: block d1, lane d2. Block transposes swap d1 <-> d3. */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) block_transpose(&v[i], &v[i + 4], &v[i + 8], &v[i + 12]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) fht_quad_x(&v[i], &v[i + 4], &v[i + 8], &v[i + 12], sc, zs); /* 4 */
    /* v[d0 + 4*d1]: block d3, lane d2. */
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4) lane_transpose(&v[j], &v[j + 1], &v[j + 2], &v[j + 3]);
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4) fht_quad_x(&v[j], &v[j + 1], &v[j + 2], &v[j + 3], sc, zs); /* 16 */
    /* v[d2 + 4*d1]: block d3, lane d0. */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) block_transpose(&v[i], &v[i + 4], &v[i + 8], &v[i + 12]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) fht_quad_x(&v[i], &v[i + 4], &v[i + 8], &v[i + 12], sc, zs); /* 64 */
}

/*
 * All stages over nv consecutive vectors (nv = 1, 4: groups of 16, 64), in the
 * FHT's order, with the 0.5 factors. For G = 64 the transposes of fht256 cost
 * more than they save (measured), so it keeps fht_s1/s4.
 */
INL void fht_regs(__m512 *v, int nv)
{
    if (nv == 1) {
        v[0] = fht_s4(fht_s1(v[0]));
        return;
    }
    if (nv == 4) {
        /* Two transposes cost more than one shuffle stage here (measured). */
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) v[i] = fht_s4(fht_s1(v[i]));
        fht_quad(&v[0], &v[1], &v[2], &v[3]);       /* stride 16 */
        return;
    }
}

/* ------------------------------------------------------------- loads */

/*
 * Widen 16 source values at element i. FP8 sources (int8_row_fp8) are
 * decoded and multiplied by the row scale sv: fl32(fp8 * s), the value
 * fp8_decode stores; INT8 codes (int8_row_i8) likewise give fl32(q * s),
 * the value int8_dequant_row stores.
 */
INL __m512 load16(const void *src, stf_dtype dt, size_t i, __m512 sv)
{
    if (dt == STF_I8) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)((const int8_t *)src + i));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c)), sv);
    }
    if (dt == STF_BF16) {
        return stf__bf16_widen16(_mm256_loadu_si256((const __m256i *)((const uint16_t *)src + i)));
    }
    if (dt == STF_F16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)src + i));
        return _mm512_cvtph_ps(h);
    }
    if (dt == STF_F8_E4M3 || dt == STF_F8_E5M2) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)((const uint8_t *)src + i));
        return _mm512_mul_ps(fp8_16(c, dt), sv);
    }
    return _mm512_loadu_ps((const float *)src + i);
}

/* The lanes outside m are 0 (for FP8 too, whatever the scale). */
INL __m512 load16_mask(const void *src, stf_dtype dt, size_t i, __mmask16 m, __m512 sv)
{
    if (dt == STF_I8) {
        __m128i c = _mm_maskz_loadu_epi8(m, (const int8_t *)src + i);
        return _mm512_maskz_mul_ps(m, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c)), sv);
    }
    if (dt == STF_BF16) {
        return stf__bf16_widen16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)src + i));
    }
    if (dt == STF_F16) {
        __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)src + i);
        return _mm512_cvtph_ps(h);
    }
    if (dt == STF_F8_E4M3 || dt == STF_F8_E5M2) {
        __m128i c = _mm_maskz_loadu_epi8(m, (const uint8_t *)src + i);
        return _mm512_maskz_mul_ps(m, fp8_16(c, dt), sv);
    }
    return _mm512_maskz_loadu_ps(m, (const float *)src + i);
}


/*
 * Absmax as the integer max of |bits|: for non-negative floats the integer
 * order is the float order, and anything >= 0x7F800000 flags Inf or NaN,
 * which sends the row to the exact slow path in int8_row.
 */
INL __m512i amax_upd(__m512i a, __m512 v) { return _mm512_max_epu32(a, abs_bits(v)); }

/*
 * Software prefetch of the source 4 KiB ahead, for the 16 values at i:
 * the hardware streamers stop at page boundaries, which a 24 KiB row
 * crosses six times (measured: about 1.4x on rows streamed from DRAM).
 * A prefetch never faults, so running past the end of the buffer is
 * harmless; the address is formed as an integer for that reason.
 */
INL void prefetch16(const void *src, stf_dtype dt, size_t i)
{
    size_t esz = dt == STF_F32 ? 4 : dt == STF_BF16 || dt == STF_F16 ? 2 : 1;
    uintptr_t p = (uintptr_t)src + i * esz + 4096;
    if (esz == 4 || (esz == 2 && (i & 16) == 0) || (i & 48) == 0)
        _mm_prefetch((const char *)p, _MM_HINT_T0);
}

static int is_pow4(unsigned g)
{
    return g >= 4 && g <= 1024 && (g & (g - 1)) == 0 && (g & 0x55555555u) != 0;
}

/*
 * One G = 256 group at element i of src -> v[0..15] = R, exactly as the FHT.
 *
 * Deferred scaling: the stages run without their 0.5 factors and the sums
 * are multiplied by 1/16 once. That is bit-identical to the FHT when (a) no
 * unscaled intermediate overflows and (b) every input is a multiple of a
 * quantum Q with Q * 2^-4 >= 2^-149. Proof sketch: by induction every
 * value after stage j is a multiple of Q (unscaled) or Q*2^-j (FHT order):
 * a sum of such multiples rounds either to a grid that is a coarser power
 * of two or not at all, and in the subnormal range (grid 2^-149 <= Q*2^-j)
 * not at all. So every FHT operation sees its operands scaled by exactly
 * 2^-j, and rounding commutes with a power-of-two scale whenever nothing
 * is lost below 2^-126, which (b) rules out; the final *1/16 is exact for
 * the same reason. (b) holds for every BF16 input (all are multiples of
 * 2^-133) and every F16 input (2^-24); for F32 (and FP8 decoded times a
 * scale) it holds when every non-zero |x| >= 2^-122 (ulp >= 2^-145), tested
 * here. (a) needs no test:
 * an overflow turns at least one output into Inf or NaN (all coefficients
 * are non-zero, and Inf never cancels back to a finite value), and a group
 * with a non-finite output is recomputed with the 0.5 factors in place.
 * With zs the sign of an exactly-zero output may differ (fht_quad_x).
 * Returns the lane-wise max |R| of the group (Inf/NaN if R is not finite).
 */
INL __m512 group256(__m512 *v, const void *src, stf_dtype dt, size_t i, int zs, __m512 sv)
{
    __m512i tiny = _mm512_set1_epi32(-1);
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) {
        prefetch16(src, dt, i + 16 * (size_t)j);
        v[j] = load16(src, dt, i + 16 * (size_t)j, sv);
        /* |bits| - 1 wraps for zeros, so its unsigned min is the smallest non-zero |x|, less one. */
        if (dt != STF_BF16 && dt != STF_F16)
            tiny = _mm512_min_epu32(tiny, _mm512_sub_epi32(abs_bits(v[j]), _mm512_set1_epi32(1)));
    }
    fht256(v, 0, zs);
    const __m512 h = _mm512_set1_ps(0.0625f);
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) v[j] = _mm512_mul_ps(h, v[j]);
    __m512 m = group_maxabs(v);
    /* Not (m <= FLT_MAX): Inf or NaN somewhere in the group. */
    __mmask16 bad = _mm512_cmp_ps_mask(m, _mm512_set1_ps(FLT_MAX), _CMP_NLE_UQ);
    if (dt != STF_BF16 && dt != STF_F16)
        bad |= _mm512_cmplt_epu32_mask(tiny, _mm512_set1_epi32(0x027FFFFF));
    if (__builtin_expect(bad != 0, 0)) {
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) v[j] = load16(src, dt, i + 16 * (size_t)j, sv);
        fht256(v, 1, 0);
        m = group_maxabs(v);
    }
    return m;
}

/*
 * Pass 1: load src (dtype dt) into x as F32, rotate per group of g (0: not
 * at all); returns max |bits| of the result. With src == x (dt F32) it is
 * the in-place FHT. g is 0 or a power of 4 dividing k.
 *
 * No separate input check: a NaN or Inf input makes every output of its
 * group NaN or Inf (all H coefficients are non-zero), so a finite result
 * proves a finite input; a non-finite result is sorted out by the caller.
 */
INL uint32_t pass1(float *x, const void *src, stf_dtype dt, size_t k, unsigned g, int zs,
                    __m512 sv)
{
    __m512i a = _mm512_setzero_si512();
    size_t i = 0;
    if (g >= 256) {
        for (; i < k; i += 256) {
            __m512 v[16];
            __m512 m = group256(v, src, dt, i, zs, sv);
            if (g == 256) a = _mm512_max_epu32(a, _mm512_castps_si512(m));
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++) _mm512_storeu_ps(x + i + 16 * (size_t)j, v[j]);
        }
        if (g == 1024) {
            for (i = 0; i < k; i += 1024)
                for (size_t j = 0; j < 256; j += 16) {
                    float *p = x + i + j;
                    __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 256);
                    __m512 v2 = _mm512_loadu_ps(p + 512), v3 = _mm512_loadu_ps(p + 768);
                    fht_quad(&v0, &v1, &v2, &v3);
                    a = amax_upd(amax_upd(amax_upd(amax_upd(a, v0), v1), v2), v3);
                    _mm512_storeu_ps(p, v0);
                    _mm512_storeu_ps(p + 256, v1);
                    _mm512_storeu_ps(p + 512, v2);
                    _mm512_storeu_ps(p + 768, v3);
                }
        }
    } else if (g == 64) {
        for (; i < k; i += 64) {
            __m512 v[4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                prefetch16(src, dt, i + 16 * (size_t)j);
                v[j] = load16(src, dt, i + 16 * (size_t)j, sv);
            }
            fht_regs(v, 4);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                a = amax_upd(a, v[j]);
                _mm512_storeu_ps(x + i + 16 * (size_t)j, v[j]);
            }
        }
    } else if (g == 16) {
        for (; i < k; i += 16) {
            prefetch16(src, dt, i);
            __m512 v = load16(src, dt, i, sv);
            v = fht_s4(fht_s1(v));
            a = amax_upd(a, v);
            _mm512_storeu_ps(x + i, v);
        }
    } else {
        /* g = 4 or 0: any k (a multiple of 4 for g = 4); masked tail. */
        for (; i + 16 <= k; i += 16) {
            prefetch16(src, dt, i);
            __m512 v = load16(src, dt, i, sv);
            if (g == 4) v = fht_s1(v);
            a = amax_upd(a, v);
            _mm512_storeu_ps(x + i, v);
        }
        if (i < k) {
            __mmask16 m = (__mmask16)((1u << (k - i)) - 1u);
            __m512 v = load16_mask(src, dt, i, m, sv);
            if (g == 4) v = fht_s1(v);
            a = amax_upd(a, v);
            _mm512_mask_storeu_ps(x + i, m, v);
        }
    }
    return _mm512_reduce_max_epu32(a);
}

/* ------------------------------------------------------------- rounding */

/* rT for BF16: the scalar carry. NaN stays NaN for the payloads that can
 * reach it (inputs are finite; inf-inf in the FHT gives the default NaN,
 * whose low half is zero so the carry cannot spill). */
INL __m512 round_bf16(__m512 x)
{
    /* b + 0x7FFF + lsb(b >> 16), the "+ lsb" as a masked increment. */
    __m512i b = _mm512_castps_si512(x);
    __mmask16 odd = _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x10000));
    __m512i r = _mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF));
    r = _mm512_mask_add_epi32(r, odd, r, _mm512_set1_epi32(1));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u)));
}

INL __m512 round_f16(__m512 x)
{
    return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

INL __m512 round_t(__m512 x, stf_dtype t)
{
    if (t == STF_BF16) return round_bf16(x);
    if (t == STF_F16) return round_f16(x);
    return x;
}

/*
 * Quotients without vdivps (t = rT(fl32(v / d)), stfix-convrot(7),
 * QUANTIZATION).
 *
 * r = fl32(1/d) once per row and p = fl32(v * r). With relative rounding
 * errors |e| <= 2^-24: p = (v/d)(1+e1)(1+e2), so p is within
 * (2^-23 + 2^-48) |v/d| of v/d, and within 1.5 * 2^-23 |v/d| of
 * fl32(v/d): at most 3 ulps of the binade of v/d (the bit encoding of
 * same-sign floats counts ulps, across binades too). rT and rint are
 * monotone and change value only at a rounding boundary, so p gives the
 * same code unless the quotient lies within that distance of a boundary.
 * Below 2^-126 nothing matters: both give q = 0 (|t| < 0.5).
 *
 *  - T = BF16 or F16: v and d are T values (8 or 11 significant bits), so
 *    v/d is a ratio of such integers times a power of two, while a
 *    boundary (a T midpoint) has one significant bit more: v/d is never on
 *    one, and never close enough for the product to cross it (relative
 *    distance >= 2^-17 for BF16; for F16 the bound is too tight to argue
 *    on paper, so test_kernels_simd checks every pair of significands).
 *    No check is needed: rT(p) == rT(fl32(v/d)).
 *  - T = F32: t = fl32(v/d) goes straight to rint, whose boundaries are
 *    the half-integers, and v = R is any float. Lanes within 8 encodings
 *    of a half-integer (a generous window over the 3) are recomputed with
 *    vdivps: codes only depend on p below 129 in magnitude (above, q
 *    clamps alike), where 8 ulps < 2^-13, so |p - rint(p)| >= 0.5 - 2^-11
 *    flags them (vreduceps gives p - rint(p) exactly). On real rows that
 *    is a few lanes in 10^4, so the division almost never runs.
 * rint is vcvtps2dq in the MXCSR mode, as rintf (round to nearest even
 * unless someone changed it; the window assumes the default mode, like
 * every other rounding here). d is a normal float between the
 * scale floor and maxT/127, so r is finite and normal; int8_row still
 * divides when d is outside [2^-125, 2^125].
 */
INL __mmask16 near_half_integer(__m512 p)
{
    __m512 f = _mm512_reduce_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    f = _mm512_castsi512_ps(abs_bits(f));
    return _mm512_cmp_ps_mask(f, _mm512_set1_ps(0.5f - 0x1p-11f), _CMP_GE_OQ);
}

/*
 * q = clamp(rint(rT(rT(x)/d)), -128, 127) for a row whose every
 * v = rT(x) is finite, so every quotient is finite and small: the
 * saturating int32 -> int8 conversion is the clamp. recip: the quotient
 * as above, else vdivps.
 */
INL __m128i quant16(__m512 x, __m512 rv, __m512 dv, stf_dtype t, int recip)
{
    __m512 v = round_t(x, t);
    __m512 p;
    if (recip) {
        p = _mm512_mul_ps(v, rv);
        if (t == STF_F32) {
            __mmask16 near = near_half_integer(p);
            if (__builtin_expect(near != 0, 0)) p = _mm512_mask_div_ps(p, near, v, dv);
        }
    } else {
        p = _mm512_div_ps(v, dv);
    }
    return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(round_t(p, t)));
}

INL void pass2(int8_t *q, const float *x, size_t k, float d, stf_dtype t, int recip)
{
    __m512 dv = _mm512_set1_ps(d), rv = _mm512_set1_ps(1.0f / d);
    size_t i = 0;
    for (; i + 64 <= k; i += 64) {
        __m128i a = quant16(_mm512_loadu_ps(x + i), rv, dv, t, recip);
        __m128i b = quant16(_mm512_loadu_ps(x + i + 16), rv, dv, t, recip);
        __m128i c = quant16(_mm512_loadu_ps(x + i + 32), rv, dv, t, recip);
        __m128i e = quant16(_mm512_loadu_ps(x + i + 48), rv, dv, t, recip);
        _mm_storeu_si128((__m128i *)(q + i), a);
        _mm_storeu_si128((__m128i *)(q + i + 16), b);
        _mm_storeu_si128((__m128i *)(q + i + 32), c);
        _mm_storeu_si128((__m128i *)(q + i + 48), e);
    }
    for (; i + 16 <= k; i += 16)
        _mm_storeu_si128((__m128i *)(q + i), quant16(_mm512_loadu_ps(x + i), rv, dv, t, recip));
    if (i < k) {
        __mmask16 m = (__mmask16)((1u << (k - i)) - 1u);
        __m128i r = quant16(_mm512_maskz_loadu_ps(m, x + i), rv, dv, t, recip);
        _mm_mask_storeu_epi8(q + i, m, r);
    }
}

/* zs = 1: int8_row does not care about the sign of zero (fht_quad_x). */
static uint32_t pass1_bf16(float *x, const void *s, size_t k, unsigned g)
{
    return pass1(x, s, STF_BF16, k, g, 1, _mm512_setzero_ps());
}
static uint32_t pass1_f16(float *x, const void *s, size_t k, unsigned g)
{
    return pass1(x, s, STF_F16, k, g, 1, _mm512_setzero_ps());
}
static uint32_t pass1_f32(float *x, const void *s, size_t k, unsigned g)
{
    return pass1(x, s, STF_F32, k, g, 1, _mm512_setzero_ps());
}

static void pass2_t(int8_t *q, const float *x, size_t k, float d, stf_dtype t)
{
    STF__INT8_PASS2_DISPATCH(pass2, q, x, k, d, t);
}



/*
 * The end of int8_row once pass 1 left R in x with max |bits| abits: the
 * scale and the codes. Returns 1, with nothing useful written, for a row
 * the caller must give to the scalar code (R not finite, rT(max) overflowing).
 */
INL int codes_row(int8_t *q, float *scale, const float *x, size_t k, uint32_t abits,
                  stf_quant_mode mode, stf_dtype t, int hw_bf16)
{
    float s, d;
    if (stf__int8_row_prepare(&s, &d, abits, mode, &t)) return 1;
    if (hw_bf16 && t == STF_BF16 && stf__int8_recip_ok(d) && stf__avx512_bf16_usable())
        stf__int8_codes_bf16(q, x, k, 1.0f / d);
    else pass2_t(q, x, k, d, t);
    *scale = s;
    return 0;
}

INL int int8_row_x(int8_t *q, float *scale, const void *src, stf_dtype src_dtype, size_t k,
                   unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch, int hw_bf16)
{
    if ((src_dtype != STF_BF16 && src_dtype != STF_F16 && src_dtype != STF_F32) || k == 0 ||
        (g != 0 && (!is_pow4(g) || k % g != 0)))
        return stf__kernels_scalar.int8_row(q, scale, src, src_dtype, k, g, mode, t, scratch);

    if (hw_bf16 && src_dtype == STF_BF16 && g == 256 && t == STF_BF16 &&
        (mode == STF_QMODE_CUDA || mode == STF_QMODE_EAGER) && stf__avx512_bf16_usable() &&
        stf__int8_row_bf16_g256(q, scale, src, k, mode, scratch) == 0)
        return 0;

    uint32_t abits;
    if (src_dtype == STF_BF16) abits = pass1_bf16(scratch, src, k, g);
    else if (src_dtype == STF_F16) abits = pass1_f16(scratch, src, k, g);
    else abits = pass1_f32(scratch, src, k, g);

    if (codes_row(q, scale, scratch, k, abits, mode, t, hw_bf16))
        return stf__kernels_scalar.int8_row(q, scale, src, src_dtype, k, g, mode, t, scratch);
    return 0;
}

static int int8_row_avx512(int8_t *q, float *scale, const void *src, stf_dtype src_dtype,
                           size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                           float *scratch)
{
    return int8_row_x(q, scale, src, src_dtype, k, g, mode, t, scratch, 1);
}

static int int8_row_avx512_plain(int8_t *q, float *scale, const void *src, stf_dtype src_dtype,
                                 size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                                 float *scratch)
{
    return int8_row_x(q, scale, src, src_dtype, k, g, mode, t, scratch, 0);
}

/* Pass 1 on FP8 codes times the row scale: the decode is part of the load. */
static uint32_t pass1_e4m3(float *x, const uint8_t *src, size_t k, unsigned g, float s)
{
    return pass1(x, src, STF_F8_E4M3, k, g, 1, _mm512_set1_ps(s));
}
static uint32_t pass1_e5m2(float *x, const uint8_t *src, size_t k, unsigned g, float s)
{
    return pass1(x, src, STF_F8_E5M2, k, g, 1, _mm512_set1_ps(s));
}

/*
 * The FP8 pass 1 for target G 0, 4, 16 and 64 where AVX512-VBMI is there:
 * each code's BF16 word comes from the byte tables of fp8_tables (the
 * values of fp8_16, which load16 uses) by vpermi2b, the sign OR-ed into
 * the high byte, and 64 words widen to four F32 vectors in natural order
 * (the byte order below puts code 16m + 4L + j at byte 16L + 4m + j, so
 * the two byte and four word unpacks land each in place); times sv, these
 * are load16's values, and the rotation and absmax are pass1's.
 */
static const uint8_t k_fp8_nat[64] __attribute__((aligned(64))) = {
    0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51,
    4,  5,  6,  7,  20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55,
    8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59,
    12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63,
};

/* One vector's rotation for g 0, 4 or 16, as pass1 does it. */
INL __m512 rot16(__m512 v, unsigned g)
{
    return g == 16 ? fht_s4(fht_s1(v)) : g == 4 ? fht_s1(v) : v;
}

STF__TGT_BF16 static uint32_t pass1_fp8_tab(float *x, const uint8_t *src, stf_dtype dt, size_t k,
                                            unsigned g, float s)
{
    __m512i t[4];
    fp8_tables(t, dt);
    const __m512i order = _mm512_load_si512((const void *)k_fp8_nat), z = _mm512_setzero_si512();
    const __m512 sv = _mm512_set1_ps(s);
    __m512i a = z;
    size_t i = 0;
    for (; i + 64 <= k; i += 64) {
        _mm_prefetch((const char *)((uintptr_t)(src + i) + 4096), _MM_HINT_T0);
        __m512i c = _mm512_permutexvar_epi8(order, _mm512_loadu_si512((const void *)(src + i)));
        __m512i lo = _mm512_permutex2var_epi8(t[0], c, t[1]);
        __m512i hi = _mm512_permutex2var_epi8(t[2], c, t[3]);
        hi = _mm512_ternarylogic_epi32(hi, c, _mm512_set1_epi8((char)0x80), 0xF8); /* | sign */
        __m512i w0 = _mm512_unpacklo_epi8(lo, hi), w1 = _mm512_unpackhi_epi8(lo, hi);
        __m512 v[4] = {
            _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, w0)), sv),
            _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(z, w0)), sv),
            _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, w1)), sv),
            _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(z, w1)), sv),
        };
        if (g == 64) fht_regs(v, 4);
        else
            for (int j = 0; j < 4; j++) v[j] = rot16(v[j], g);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            a = amax_upd(a, v[j]);
            _mm512_storeu_ps(x + i + 16 * (size_t)j, v[j]);
        }
    }
    /* The tail (g 0, 4 or 16): pass1's own loads. */
    for (; i < k; i += 16) {
        size_t left = k - i < 16 ? k - i : 16;
        __mmask16 m = (__mmask16)((1u << left) - 1u);
        __m512 v = load16_mask(src, dt, i, m, sv);
        v = rot16(v, g);
        a = amax_upd(a, v);
        _mm512_mask_storeu_ps(x + i, m, v);
    }
    return _mm512_reduce_max_epu32(a);
}

/*
 * int8_row_fp8 (contract in kernels.h): the row is read once, each code
 * decoded to fl32(fp8 * s) in a register as fp8_decode stores it, and
 * rotated and measured there: the same F32 values in the same order as
 * int8_row on the decoded row, so the same bytes. Rows the fast path does
 * not take (a non-finite value, odd groups) get the scalar composition,
 * which decodes into row.
 */
INL int int8_row_fp8_x(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                       size_t k, unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch,
                       float *row, int hw_bf16)
{
    if ((dt != STF_F8_E4M3 && dt != STF_F8_E5M2) || k == 0 ||
        (g != 0 && (!is_pow4(g) || k % g != 0)))
        return stf__int8_row_fp8_scalar(q, scale, src, dt, s, k, g, mode, t, scratch, row);
    /* The production case: the BF16 G = 256 path on the decoded words. */
    if (hw_bf16 && g == 256 && t == STF_BF16 &&
        (mode == STF_QMODE_CUDA || mode == STF_QMODE_EAGER) && stf__avx512_bf16_usable() &&
        stf__int8_row_fp8_g256(q, scale, src, dt, s, k, mode, scratch) == 0)
        return 0;
    uint32_t abits;
    if (hw_bf16 && g <= 64 && stf__avx512_bf16_usable())
        abits = pass1_fp8_tab(scratch, src, dt, k, g, s);
    else abits = dt == STF_F8_E4M3 ? pass1_e4m3(scratch, src, k, g, s)
                                  : pass1_e5m2(scratch, src, k, g, s);
    if (codes_row(q, scale, scratch, k, abits, mode, t, hw_bf16))
        return stf__int8_row_fp8_scalar(q, scale, src, dt, s, k, g, mode, t, scratch, row);
    return 0;
}

static int int8_row_fp8_avx512(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt,
                               float s, size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                               float *scratch, float *row)
{
    return int8_row_fp8_x(q, scale, src, dt, s, k, g, mode, t, scratch, row, 1);
}

static int int8_row_fp8_avx512_plain(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt,
                                     float s, size_t k, unsigned g, stf_quant_mode mode,
                                     stf_dtype t, float *scratch, float *row)
{
    return int8_row_fp8_x(q, scale, src, dt, s, k, g, mode, t, scratch, row, 0);
}

/*
 * Pass 1 of an INT8 row with a regular G = 256 rotation to undo: group256
 * decodes fl32(q * s) as it loads (the tiny-value test included) and
 * undoes the rotation in registers, fht_regular's values up to the sign
 * of an exact zero, which neither a code nor the absmax sees (a zero's
 * sign changes no nonzero sum); the target rotation g (0, 4, 16 or 64)
 * then runs on the same registers, as pass1 runs it.
 */
INL uint32_t pass1_i8_undo256(float *x, const int8_t *src, size_t k, unsigned g, __m512 sv)
{
    __m512i a = _mm512_setzero_si512();
    for (size_t i = 0; i < k; i += 256) {
        __m512 v[16];
        (void)group256(v, src, STF_I8, i, 1, sv);
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            if (g == 64 && j % 4 == 0) fht_regs(&v[j], 4);
            else if (g == 16) v[j] = fht_s4(fht_s1(v[j]));
            else if (g == 4) v[j] = fht_s1(v[j]);
        }
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            a = amax_upd(a, v[j]);
            _mm512_storeu_ps(x + i + 16 * (size_t)j, v[j]);
        }
    }
    return _mm512_reduce_max_epu32(a);
}

/*
 * int8_row_i8 (kernels.h) for one scale s and no rotation to undo (any
 * target g), or a regular G = 256 one (target g 0, 4, 16 or 64): the codes
 * are decoded in pass 1, so the only F32 row is int8_row's own scratch.
 * Returns 1, nothing useful written, for a row the caller composes (one
 * with NaN or Inf, or outside those cases).
 */
int stf__int8_row_i8_avx512_one(int8_t *q, float *scale, const int8_t *src, float s, unsigned ug,
                                size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                                float *scratch, int hw_bf16)
{
    if (k == 0 || (g != 0 && (!is_pow4(g) || k % g != 0)) ||
        (ug != 0 && (ug != 256 || g > 64 || k % 256 != 0)))
        return 1;
    __m512 sv = _mm512_set1_ps(s);
    uint32_t abits = ug ? pass1_i8_undo256(scratch, src, k, g, sv)
                        : pass1(scratch, src, STF_I8, k, g, 1, sv);
    return codes_row(q, scale, scratch, k, abits, mode, t, hw_bf16);
}

static void fht_regular_avx512(float *x, size_t k, unsigned g)
{
    /* Odd sizes: the scalar code defines the result. */
    if (!is_pow4(g) || k % g != 0) {
        stf__kernels_scalar.fht_regular(x, k, g);
        return;
    }
    /* zs = 0: here the sign of a zero output is part of the result. pass1's
     * max |bits| covers every output, so only a row that holds a NaN pays
     * for storing it as the one quiet NaN (nan_canon.h). */
    if (pass1(x, x, STF_F32, k, g, 0, _mm512_setzero_ps()) > 0x7F800000u)
        stf__canon_nan_row(x, k);
}

const stf__kernels stf__kernels_avx512 = {
    STF_SIMD_AVX512,
    int8_row_avx512,
    fht_regular_avx512,
    stf__bf16_to_f32_avx512,
    stf__f16_to_f32_avx512,
    stf__f32_to_bf16_avx512,
    stf__int8_dequant_row_avx512,
    stf__int8_dequant_row_cols_avx512,
    stf__fp8_decode_avx512,
    stf__fp8_decode_cols_avx512,
    stf__sylvester_undo_avx512,
    stf__w4a4_unpack_avx512,
    int8_row_fp8_avx512,
    stf__int8_row_i8_avx512,
    stf__int8_dequant_syl_avx512,
};

/* The same without the AVX512-BF16 path (declared in kernels_avx512.h). */
const stf__kernels stf__kernels_avx512_plain = {
    STF_SIMD_AVX512,
    int8_row_avx512_plain,
    fht_regular_avx512,
    stf__bf16_to_f32_avx512,
    stf__f16_to_f32_avx512,
    stf__f32_to_bf16_avx512,
    stf__int8_dequant_row_avx512,
    stf__int8_dequant_row_cols_avx512,
    stf__fp8_decode_avx512,
    stf__fp8_decode_cols_avx512,
    stf__sylvester_undo_avx512,
    stf__w4a4_unpack_avx512,
    int8_row_fp8_avx512_plain,
    stf__int8_row_i8_avx512_plain,
    stf__int8_dequant_syl_avx512,
};
