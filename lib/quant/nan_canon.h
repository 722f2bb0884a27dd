/*
 * Internal: the one NaN the decode kernels store (stfix-convrot(7),
 * DEQUANTIZATION and KERNELS).
 *
 * IEEE 754 leaves the sign and payload of a NaN result open: x86 returns the
 * first NaN operand, the compiler may swap the operands of a + b or a * b,
 * and a negated NaN (x0 + (-x1) for x0 - x1) flips its sign. So the bits of
 * a NaN that two NaN operands or a sign flip produce depend on code
 * generation, not on the expressions. Every decode kernel therefore stores
 * any NaN it computes as the quiet NaN 0x7FC00000 (sign clear, payload
 * zero), the same in every variant and on every compiler. The forms below
 * are the scalar one and, in the files built for them, the AVX2 and
 * AVX-512 ones.
 */
#ifndef STF_QUANT_NAN_CANON_H
#define STF_QUANT_NAN_CANON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STF__CANON_NAN_BITS 0x7FC00000u

static inline float stf__canon_nan(float x)
{
    if (x == x) return x;
    uint32_t b = STF__CANON_NAN_BITS;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* x[0..n) in place. */
static inline void stf__canon_nan_row(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = stf__canon_nan(x[i]);
}

#if defined(__AVX2__)
#include <immintrin.h>
static inline __attribute__((always_inline)) __m256 stf__canon_nan8(__m256 v)
{
    return _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)STF__CANON_NAN_BITS)),
                            _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}
#endif

#if defined(__AVX512F__)
static inline __attribute__((always_inline)) __m512 stf__canon_nan16(__m512 v)
{
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                              _mm512_castsi512_ps(_mm512_set1_epi32((int)STF__CANON_NAN_BITS)));
}
#endif

#endif
