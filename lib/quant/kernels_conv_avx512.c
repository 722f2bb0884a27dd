/*
 * The AVX-512 conversions and INT8 decodes of the table (contracts in
 * kernels.h): widening BF16 and F16, narrowing to BF16, fl32(q * s) with
 * one scale or per-column scales. Each is bit-identical to the scalar
 * entry; kernels_avx512.c holds the table that points here.
 */
#include <immintrin.h>

#include "kernels.h"
#include "kernels_avx512.h"
#include "nan_canon.h"

void stf__bf16_to_f32_avx512(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, stf__bf16_widen16(_mm256_loadu_si256((const __m256i *)(src + i))));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(dst + i, m, stf__bf16_widen16(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

/* Hardware F16 widening is exact but quiets signalling NaNs; the scalar
 * code keeps the payload bits as they are, so NaN lanes are rebuilt. */
INL __m512 f16_widen(__m256i h)
{
    __m512 f = _mm512_cvtph_ps(h);
    __m512i w = _mm512_cvtepu16_epi32(h);
    __m512i mag = _mm512_and_si512(w, _mm512_set1_epi32(0x7FFF));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7C00));
    if (nan) {
        __m512i sign = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x8000)), 16);
        __m512i man = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x3FF)), 13);
        __m512i bits = _mm512_or_si512(_mm512_or_si512(sign, man),
                                       _mm512_set1_epi32(0x7F800000));
        f = _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
    }
    return f;
}

void stf__f16_to_f32_avx512(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, f16_widen(_mm256_loadu_si256((const __m256i *)(src + i))));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(dst + i, m, f16_widen(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

/* RNE carry, NaN -> 0x7FC0 exactly as stf__f32_to_bf16. */
INL __m256i bf16_narrow(__m512 x)
{
    __m512i b = _mm512_castps_si512(x);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(r);
}

void stf__f32_to_bf16_avx512(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i), bf16_narrow(_mm512_loadu_ps(src + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm256_mask_storeu_epi16(dst + i, m, bf16_narrow(_mm512_maskz_loadu_ps(m, src + i)));
    }
}

INL __m512 i8_widen(__m128i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)); }

/* q * s as F32, NaN stored as the one quiet NaN (nan_canon.h). */
INL __m512 i8_times(__m128i q, __m512 s) { return stf__canon_nan16(_mm512_mul_ps(i8_widen(q), s)); }

void stf__int8_dequant_row_avx512(float *dst, const int8_t *q, float s, size_t k)
{
    __m512 sv = _mm512_set1_ps(s);
    size_t i = 0;
    for (; i + 16 <= k; i += 16)
        _mm512_storeu_ps(dst + i, i8_times(_mm_loadu_si128((const __m128i *)(q + i)), sv));
    if (i < k) {
        __mmask16 m = (__mmask16)((1u << (k - i)) - 1u);
        _mm512_mask_storeu_ps(dst + i, m, i8_times(_mm_maskz_loadu_epi8(m, q + i), sv));
    }
}

void stf__int8_dequant_row_cols_avx512(float *dst, const int8_t *q, const float *s, size_t k)
{
    size_t i = 0;
    for (; i + 16 <= k; i += 16)
        _mm512_storeu_ps(dst + i, i8_times(_mm_loadu_si128((const __m128i *)(q + i)),
                                           _mm512_loadu_ps(s + i)));
    if (i < k) {
        __mmask16 m = (__mmask16)((1u << (k - i)) - 1u);
        _mm512_mask_storeu_ps(dst + i, m,
                              i8_times(_mm_maskz_loadu_epi8(m, q + i), _mm512_maskz_loadu_ps(m, s + i)));
    }
}
