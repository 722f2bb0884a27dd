/*
 * Internal: the parts shared by the AVX-512 kernel files
 * (kernels_avx512.c, the general table; kernels_bf16_avx512.c, the BF16
 * int8_row path that needs AVX512-BF16 and AVX512-VBMI, and
 * kernels_i8x2_avx512.c, its pass 1 for INT8 rows with a rotation to
 * undo). The inline
 * helpers exist only in files built with the AVX-512 flags; the
 * declarations are for everyone (tests use stf__kernels_avx512_plain).
 */
#ifndef STF_QUANT_KERNELS_AVX512_H
#define STF_QUANT_KERNELS_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#define INL static inline __attribute__((always_inline))
/* The functions that use AVX512-BF16 and AVX512-VBMI (kernels_bf16_avx512.c,
 * kernels_i8x2_avx512.c); called only where stf__avx512_bf16_usable(). */
#define STF__TGT_BF16 __attribute__((target("avx512bf16,avx512vbmi")))

/* The AVX-512 table without the AVX512-BF16 path, so tests can check the
 * general path on CPUs that have the extension. */
extern const stf__kernels stf__kernels_avx512_plain;

/* Whether the CPU has AVX512-BF16 and AVX512-VBMI (asked once). Only
 * meaningful where the AVX-512 table itself is usable. */
int stf__avx512_bf16_usable(void);

/*
 * QUANTIZATION (stfix-convrot(7)) for one BF16 row with G = 256 and T = BF16
 * (mode cuda or eager), using AVX512-BF16 and VBMI: k is a multiple of 256,
 * scratch holds k floats. Returns 0 with q and *scale written, or 1 for a row
 * it leaves to the caller (R not finite, rT(max|R|) overflowing, an unusual
 * divisor); then nothing useful is written.
 */
/*
 * int8_row_i8 for one scale s without a rotation to undo (ug 0), or with
 * a regular G = 256 one (ug 256, target g 0, 4, 16 or 64), decoded in
 * pass 1 (kernels_avx512.c); hw_bf16 as for the table. Returns 0 with q
 * and *scale written, or 1, nothing useful written, for a row the caller
 * must compose (NaN or Inf, other cases).
 */
int stf__int8_row_i8_avx512_one(int8_t *q, float *scale, const int8_t *src, float s, unsigned ug,
                                size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                                float *scratch, int hw_bf16);

int stf__int8_row_bf16_g256(int8_t *q, float *scale, const uint16_t *src, size_t k,
                            stf_quant_mode mode, float *scratch);

/*
 * The same path for 8-bit sources (k a multiple of 256, T = BF16, G = 256,
 * mode cuda or eager; only where stf__avx512_bf16_usable()), with the
 * bytes of the compositions they replace. FP8: int8_row of the row
 * fp8_decode(src, dt, k, s) gives. INT8: int8_row of int8_dequant_row(src,
 * s) (or int8_dequant_row_cols(src, cols) when cols is not NULL), after
 * fht_regular(row, k, ug) when ug is 256 (ug 0: no rotation to undo).
 * Return 1, nothing useful written, for rows they leave to the caller: a
 * scale small enough that deferred scaling could round differently, other
 * shapes, or a row that is not finite on the way.
 */
int stf__int8_row_fp8_g256(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                           size_t k, stf_quant_mode mode, float *scratch);
int stf__int8_row_i8_g256(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                          unsigned ug, size_t k, stf_quant_mode mode, float *scratch);

/*
 * Pass 1 of stf__int8_row_i8_g256 for one scale s (1 <= |s| * 2^100, s
 * finite) and a regular G = 256 rotation to undo (kernels_i8x2_avx512.c):
 * z and the returned max |U| bits exactly as the general INT8 pass 1
 * gives them. qw: the k codes pass 2 will write, only prefetched here.
 * Only where stf__avx512_bf16_usable().
 */
uint32_t stf__int8_i8x2_pass1(uint16_t *z, const int8_t *src, float s, size_t k,
                              const int8_t *qw);

/*
 * The same for a Sylvester G = 128 source (1 <= |s| * 2^90, s finite):
 * z = rT(U) and max |U| bits for U = 16 R, R the regular G = 256 FHT of
 * the row int8_dequant_row + sylvester_undo(128) give, in fht256_eo's
 * order (kernels_i8x2_avx512.c); qw as above.
 */
uint32_t stf__int8_syl128_pass1(uint16_t *z, const int8_t *src, float s, size_t k,
                                const int8_t *qw);

/*
 * int8_row_i8 for that source (T = BF16, G = 256, mode cuda or eager, k a
 * multiple of 256; only where stf__avx512_bf16_usable()): 0 with q and
 * *scale written, or 1 (nothing useful written) for a row it leaves to
 * the caller: a scale outside the range above, a row not finite on the way.
 */
int stf__int8_row_syl128_g256(int8_t *q, float *scale, const int8_t *src, float s, size_t k,
                              stf_quant_mode mode, float *scratch);

/*
 * int8_dequant_row(dst, q, s, k), then sylvester_undo(dst, k, g) (g a power
 * of 2 in 2..4096 dividing k), in one pass for g of 32 to 256: the codes
 * are widened and multiplied by s in registers and the group runs through
 * every stage there before its one store (kernels_decode_avx512.c). The
 * same bits as the two entries: only a NaN product's payload differs on
 * the way, and the undo stores every NaN as the one quiet NaN.
 */
void stf__int8_dequant_syl_avx512(float *dst, const int8_t *q, float s, size_t k, unsigned g);

/*
 * Whether this CPU's vdpbf16ps rounds as the instruction is defined (two
 * roundings, odd word first), so pass 1 may run stage 1 on it (asked once;
 * 0 where AVX512-BF16/VBMI are missing).
 */
int stf__avx512_dp_exact(void);

/*
 * Pass 1 of stf__int8_row_bf16_g256 on its own, for tests: z = rT(16 R) as
 * BF16 in the kernel's block order, *abits = max |16 R| as bits. dp = 0:
 * the shuffle version; dp = 1: stage 1 on vdpbf16ps, which returns 1 (z
 * undefined) when the CPU lacks it or some input is nonzero and below
 * 2^-119 in magnitude.
 */
int stf__bf16_g256_pass1(uint16_t *z, uint32_t *abits, const uint16_t *src, size_t k, int dp);

/*
 * q[k] = the codes of x[k] (R as F32, natural order) for T = BF16, by
 * AVX512-BF16 and VBMI, with r = fl32(1/d) normal and every rT(x[i])
 * finite (the caller checks both). Only where stf__avx512_bf16_usable().
 */
void stf__int8_codes_bf16(int8_t *q, const float *x, size_t k, float r);

#ifdef __AVX512F__ /* the helpers below: only in files built for AVX-512 */

/* Sixteen FP8 codes as their exact F32 values (fp8_value in
 * kernels_decode_scalar.c), for the decodes and int8_row_fp8. */
INL __m512 fp8_16(__m128i codes, stf_dtype dt)
{
    __m512i w = _mm512_cvtepu8_epi32(codes);
    __m512i mag = _mm512_and_si512(w, _mm512_set1_epi32(0x7F));
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x80)), 24);
    __m512 fm = _mm512_cvtepi32_ps(mag), v;
    if (dt == STF_F8_E4M3) {
        __m512 norm = _mm512_castsi512_ps(
            _mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23)));
        __mmask16 sub = _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(8));
        v = _mm512_mask_mul_ps(norm, sub, fm, _mm512_set1_ps(0x1p-9f));
        __mmask16 nan = _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7F));
        v = _mm512_mask_mov_ps(v, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)));
    } else {
        __m512 norm = _mm512_castsi512_ps(
            _mm512_add_epi32(_mm512_slli_epi32(mag, 21), _mm512_set1_epi32(112 << 23)));
        __mmask16 sub = _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(4));
        v = _mm512_mask_mul_ps(norm, sub, fm, _mm512_set1_ps(0x1p-16f));
        __mmask16 nan = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7C));
        __mmask16 inf = _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7C));
        v = _mm512_mask_mov_ps(v, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)));
        v = _mm512_mask_mov_ps(v, inf, _mm512_castsi512_ps(_mm512_set1_epi32(0x7F800000)));
    }
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v), sign));
}


/* Byte tables t[0..1] (low bytes) and t[2..3] (high bytes) of the BF16 words of the
 * 128 FP8 magnitudes of dtype dt (from fp8_16), for the VBMI decodes
 * (kernels_bf16_avx512.c, kernels_avx512.c). */
INL void fp8_tables(__m512i t[4], stf_dtype dt)
{
    __m128i lo[8], hi[8];
    const __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        __m128i codes = _mm_add_epi8(lanes, _mm_set1_epi8((char)(16 * c)));
        __m512i b = _mm512_castps_si512(fp8_16(codes, dt));
        lo[c] = _mm512_cvtepi32_epi8(_mm512_srli_epi32(b, 16));
        hi[c] = _mm512_cvtepi32_epi8(_mm512_srli_epi32(b, 24));
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m128i *src = h ? hi : lo;
        for (int j = 0; j < 2; j++) {
            __m512i v = _mm512_castsi128_si512(src[4 * j]);
            v = _mm512_inserti32x4(v, src[4 * j + 1], 1);
            v = _mm512_inserti32x4(v, src[4 * j + 2], 2);
            t[2 * h + j] = _mm512_inserti32x4(v, src[4 * j + 3], 3);
        }
    }
}

/* Sixteen BF16 words as their exact F32 values. */
INL __m512 stf__bf16_widen16(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

INL __m512i abs_bits(__m512 v)
{
    return _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF));
}

/*
 * A stage whose stride is a whole number of vectors: x0..x3 are vectors.
 * scaled == 0 leaves out the 0.5 (deferred scaling, see fht256). zs != 0
 * lets the sign of an exactly-zero output differ from the FHT: x1 - x0 is
 * -(x0 - x1) exactly except when x0 == x1 (both give +0), so taking
 * y3 = (x2 - d01) + x3 saves a subtraction and changes nothing but the sign
 * of a zero y3 (x0 == x1, x2 == x3 == -0). int8_row allows that (q of
 * either zero is 0, and |-0| == |+0|); fht_regular does not.
 */
INL void fht_quad_x(__m512 *p0, __m512 *p1, __m512 *p2, __m512 *p3, int scaled, int zs)
{
    const __m512 h = _mm512_set1_ps(0.5f);
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 x0 = *p0, x1 = *p1, x2 = *p2, x3 = *p3;
    /* Half of the additions go to the FMA pipes: Zen 5 runs vaddps on two
     * of its four FP pipes and vfmadd on the other two, so ten vaddps
     * cost five cycles but five vaddps plus five vfmadd cost two and a half.
     * Bit-exact: a * 1 is exact (sign of zero included), so fma(a, 1, b)
     * rounds a + b once, as vaddps does, fmsub(a, 1, b) is fl(a - b), and
     * the sum of two zeros gets the sign IEEE 754 gives the addition.
     * The empty asm hides the 1 so the compiler cannot fold the FMA back
     * into vaddps. On Intel cores 512-bit vaddps and vfmadd both issue on
     * ports 0 and 5, so there the split is neutral (measured the same). */
    __asm__("" : "+v"(one));
    __m512 s01 = _mm512_add_ps(x0, x1);
    __m512 d01 = _mm512_fmsub_ps(x0, one, x1);
    __m512 y0 = _mm512_fmsub_ps(_mm512_add_ps(s01, x2), one, x3);
    __m512 y1 = _mm512_fmadd_ps(_mm512_sub_ps(s01, x2), one, x3);
    __m512 y2 = _mm512_fmadd_ps(_mm512_add_ps(d01, x2), one, x3);
    __m512 y3 = zs ? _mm512_fmadd_ps(_mm512_sub_ps(x2, d01), one, x3)
                   : _mm512_fmadd_ps(_mm512_add_ps(_mm512_sub_ps(x1, x0), x2), one, x3);
    if (scaled) {
        y0 = _mm512_mul_ps(h, y0);
        y1 = _mm512_mul_ps(h, y1);
        y2 = _mm512_mul_ps(h, y2);
        y3 = _mm512_mul_ps(h, y3);
    }
    *p0 = y0;
    *p1 = y1;
    *p2 = y2;
    *p3 = y3;
}

/* max(|a|, |b|) in one instruction (vrangeps, "max absolute value, sign
 * cleared"); a NaN operand gives a NaN, which the callers test for. */
INL __m512 maxabs(__m512 a, __m512 b) { return _mm512_range_ps(a, b, 0x0B); }

/* Lane-wise max |v[j]| over the 16 vectors of a group. */
INL __m512 group_maxabs(const __m512 *v)
{
    __m512 m[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) m[j] = maxabs(v[2 * j], v[2 * j + 1]);
    return maxabs(maxabs(maxabs(m[0], m[1]), maxabs(m[2], m[3])),
                  maxabs(maxabs(m[4], m[5]), maxabs(m[6], m[7])));
}

/*
 * Move a lane-index bit into the vector-index bit that tells *a (0) from
 * *b (1), with one unmasked two-source shuffle per output:
 *   k == 0, vshufps (2,0,2,0)/(3,1,3,1) inside each 128-bit block:
 *           new l0 = old l1, new l1 = vector bit, new vector bit = old l0;
 *   k == 2, vshuff32x4, the same on the 128-bit blocks:
 *           new l2 = old l3, new l3 = vector bit, new vector bit = old l2.
 * Why these and not bit swaps: on Zen 5 vshufps runs on all four FP
 * pipes, unmasked vshuff32x4 on two, while the masked forms a swap needs
 * (vpermilps{k}, vshuff32x4{k}) measured 2.6 and 1 per cycle. On Intel
 * cores every 512-bit shuffle issues on port 5 alone, one per cycle.
 */
INL void eo_swap(__m512 *a, __m512 *b, int k)
{
    __m512 A = *a, B = *b;
    if (k == 0) {
        *a = _mm512_shuffle_ps(A, B, _MM_SHUFFLE(2, 0, 2, 0));
        *b = _mm512_shuffle_ps(A, B, _MM_SHUFFLE(3, 1, 3, 1));
    } else {
        *a = _mm512_shuffle_f32x4(A, B, _MM_SHUFFLE(2, 0, 2, 0));
        *b = _mm512_shuffle_f32x4(A, B, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* eo_swap(k) with vector-index bit vb over all 16 vectors. */
INL void swap_all(__m512 *v, int k, int vb)
{
    int st = 1 << vb;
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        if (!(i & st)) eo_swap(&v[i], &v[i + st], k);
}

/* Absmax and the BF16 store of one finished group. */
STF__TGT_BF16 INL void group_out(uint16_t *z, const __m512 *v, __m512i *amax)
{
    *amax = _mm512_max_epu32(*amax, _mm512_castps_si512(group_maxabs(v)));
#pragma GCC unroll 8
    for (int m = 0; m < 8; m++)
        _mm512_storeu_si512((void *)(z + 32 * (size_t)m),
                            (__m512i)_mm512_cvtne2ps_pbh(v[2 * m + 1], v[2 * m]));
}

#endif /* __AVX512F__ */

#endif
