/*
 * The AVX-512 repair decodes (contracts in kernels.h), bit-identical to
 * kernels_decode_scalar.c for the reasons given in kernels_decode_avx2.c,
 * with 16 lanes: four Sylvester strides (1, 2, 4, 8) run inside a vector.
 * Tails run on the scalar code.
 */
#include <immintrin.h>
#include <math.h>

#include "kernels.h"
#include "kernels_avx512.h"
#include "nan_canon.h"

/* ------------------------------------------------------------- FP8 */

/* Sixteen codes at p (fp8_16, kernels_avx512.h). */
INL __m512 fp8_at(const uint8_t *p, stf_dtype dt)
{
    return fp8_16(_mm_loadu_si128((const __m128i *)(const void *)p), dt);
}

INL void fp8_row(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s)
{
    __m512 sv = _mm512_set1_ps(s);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, stf__canon_nan16(_mm512_mul_ps(fp8_at(src + i, dt), sv)));
    if (i < n) stf__fp8_decode_scalar(dst + i, src + i, dt, n - i, s);
}

void stf__fp8_decode_avx512(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s)
{
    if (dt == STF_F8_E4M3) fp8_row(dst, src, STF_F8_E4M3, n, s);
    else fp8_row(dst, src, STF_F8_E5M2, n, s);
}

INL void fp8_cols(float *dst, const uint8_t *src, stf_dtype dt, size_t n, const float *s)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, stf__canon_nan16(_mm512_mul_ps(fp8_at(src + i, dt),
                                                                  _mm512_loadu_ps(s + i))));
    if (i < n) stf__fp8_decode_cols_scalar(dst + i, src + i, dt, n - i, s + i);
}

void stf__fp8_decode_cols_avx512(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                                 const float *s)
{
    if (dt == STF_F8_E4M3) fp8_cols(dst, src, STF_F8_E4M3, n, s);
    else fp8_cols(dst, src, STF_F8_E5M2, n, s);
}

/* ------------------------------------------------------------- Sylvester */

/* Stride s (1, 2, 4 or 8) inside a vector: lanes without bit s keep
 * a + b, lanes with it a - b (a: the value at the lane without bit s). */
INL __m512 syl_lane_stage(__m512 v, int s)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i bit = _mm512_set1_epi32(s);
    __m512i ia = _mm512_andnot_si512(bit, lane), ib = _mm512_or_si512(lane, bit);
    __mmask16 diff = _mm512_test_epi32_mask(lane, bit);
    __m512 a = _mm512_permutexvar_ps(ia, v), b = _mm512_permutexvar_ps(ib, v);
    return _mm512_mask_sub_ps(_mm512_add_ps(a, b), diff, a, b);
}

INL void syl_mem2(float *p, size_t s, int last, __m512 cv)
{
    for (size_t j = 0; j < s; j += 16) {
        __m512 x0 = _mm512_loadu_ps(p + j), x1 = _mm512_loadu_ps(p + s + j);
        __m512 x2 = _mm512_loadu_ps(p + 2 * s + j), x3 = _mm512_loadu_ps(p + 3 * s + j);
        __m512 y0 = _mm512_add_ps(x0, x1), y1 = _mm512_sub_ps(x0, x1);
        __m512 y2 = _mm512_add_ps(x2, x3), y3 = _mm512_sub_ps(x2, x3);
        __m512 z0 = _mm512_add_ps(y0, y2), z2 = _mm512_sub_ps(y0, y2);
        __m512 z1 = _mm512_add_ps(y1, y3), z3 = _mm512_sub_ps(y1, y3);
        if (last) {
            z0 = stf__canon_nan16(_mm512_mul_ps(z0, cv));
            z1 = stf__canon_nan16(_mm512_mul_ps(z1, cv));
            z2 = stf__canon_nan16(_mm512_mul_ps(z2, cv));
            z3 = stf__canon_nan16(_mm512_mul_ps(z3, cv));
        }
        _mm512_storeu_ps(p + j, z0);
        _mm512_storeu_ps(p + s + j, z1);
        _mm512_storeu_ps(p + 2 * s + j, z2);
        _mm512_storeu_ps(p + 3 * s + j, z3);
    }
}

INL void syl_mem1(float *p, size_t s, __m512 cv)
{
    for (size_t j = 0; j < s; j += 16) {
        __m512 a = _mm512_loadu_ps(p + j), b = _mm512_loadu_ps(p + s + j);
        _mm512_storeu_ps(p + j, stf__canon_nan16(_mm512_mul_ps(_mm512_add_ps(a, b), cv)));
        _mm512_storeu_ps(p + s + j, stf__canon_nan16(_mm512_mul_ps(_mm512_sub_ps(a, b), cv)));
    }
}

void stf__sylvester_undo_avx512(float *x, size_t k, unsigned g)
{
    const float c = 1.0f / sqrtf((float)g);
    const __m512 cv = _mm512_set1_ps(c);
    /* k % g == 0, so for g < 16 the tail is whole groups. */
    size_t end = k - k % 16, off;
    for (off = 0; off < end; off += 16) {
        __m512 v = _mm512_loadu_ps(x + off);
        v = syl_lane_stage(v, 1);
        if (g > 2) v = syl_lane_stage(v, 2);
        if (g > 4) v = syl_lane_stage(v, 4);
        if (g > 8) v = syl_lane_stage(v, 8);
        if (g <= 16) v = stf__canon_nan16(_mm512_mul_ps(v, cv));
        _mm512_storeu_ps(x + off, v);
    }
    if (g > 16) {
        for (off = 0; off < end; off += g) {
            float *p = x + off;
            size_t s = 16;
            while (s < g) {
                if (4 * s <= g) {
                    int last = 4 * s == g;
                    for (size_t b = 0; b < g; b += 4 * s) syl_mem2(p + b, s, last, cv);
                    s *= 4;
                } else {
                    /* 2s == g: the last stage. */
                    syl_mem1(p, s, cv);
                    s *= 2;
                }
            }
        }
    }
    if (end < k) stf__sylvester_undo_scalar(x + end, k - end, g);
}

/* ------------------------------------------------------------- W4A4 */

void stf__w4a4_unpack_avx512(float *dst, const uint8_t *src, size_t n, float s)
{
    const __m512 sv = _mm512_set1_ps(s);
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + i / 2));
        __m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
        /* Columns in order; (v ^ 8) - 8 sign-extends a nibble. */
        __m128i v0 = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
        __m128i v1 = _mm_sub_epi8(_mm_xor_si128(_mm_unpackhi_epi8(lo, hi), eight), eight);
        __m512 f0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v0));
        __m512 f1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v1));
        _mm512_storeu_ps(dst + i, stf__canon_nan16(_mm512_mul_ps(f0, sv)));
        _mm512_storeu_ps(dst + i + 16, stf__canon_nan16(_mm512_mul_ps(f1, sv)));
    }
    if (i < n) stf__w4a4_unpack_scalar(dst + i, src + i / 2, n - i, s);
}
