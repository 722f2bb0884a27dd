/*
 * Internal: the AVX2 FP8 decode shared by kernels_decode_avx2.c (the
 * decodes) and kernels_avx2.c (int8_row_fp8, which decodes as it loads).
 * Only for files built with the AVX2 flags.
 */
#ifndef STF_QUANT_FP8_AVX2_H
#define STF_QUANT_FP8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#include "stfix/quant.h"

/* Eight codes at p as their exact F32 values (see fp8_value in
 * kernels_decode_scalar.c). */
static inline __attribute__((always_inline)) __m256 fp8_8(const uint8_t *p, stf_dtype dt)
{
    __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
    __m256i mag = _mm256_and_si256(w, _mm256_set1_epi32(0x7F));
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x80)), 24);
    __m256 sub, norm;
    __m256i is_sub, special, sbits;
    __m256 fm = _mm256_cvtepi32_ps(mag);
    if (dt == STF_F8_E4M3) {
        norm = _mm256_castsi256_ps(
            _mm256_add_epi32(_mm256_slli_epi32(mag, 20), _mm256_set1_epi32(120 << 23)));
        sub = _mm256_mul_ps(fm, _mm256_set1_ps(0x1p-9f));
        is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(8), mag);
        special = _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7F));
        sbits = _mm256_set1_epi32(0x7FC00000);
    } else {
        norm = _mm256_castsi256_ps(
            _mm256_add_epi32(_mm256_slli_epi32(mag, 21), _mm256_set1_epi32(112 << 23)));
        sub = _mm256_mul_ps(fm, _mm256_set1_ps(0x1p-16f));
        is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(4), mag);
        special = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7B));
        sbits = _mm256_blendv_epi8(_mm256_set1_epi32(0x7FC00000), _mm256_set1_epi32(0x7F800000),
                                   _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7C)));
    }
    __m256 v = _mm256_blendv_ps(norm, sub, _mm256_castsi256_ps(is_sub));
    v = _mm256_blendv_ps(v, _mm256_castsi256_ps(sbits), _mm256_castsi256_ps(special));
    return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}

#endif
