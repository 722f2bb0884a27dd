/*
 * The AVX2 repair decodes (contracts in kernels.h), bit-identical to
 * kernels_decode_scalar.c: the FP8 values are built from the code bits by
 * the same integer steps and the same exact product for subnormals; the
 * Sylvester stages are the same a + b and a - b on the same pairs (an
 * in-register stage computes both for every lane and keeps one by lane,
 * so neither is rewritten as a + (-b)), two memory stages share one load;
 * the W4A4 nibbles widen to the same integers. Tails run on the scalar
 * code.
 */
#include <immintrin.h>
#include <math.h>

#include "fp8_avx2.h"
#include "kernels.h"
#include "nan_canon.h"

#define INL static inline __attribute__((always_inline))

/* ------------------------------------------------------------- FP8 */

INL void fp8_row(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s)
{
    __m256 sv = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, stf__canon_nan8(_mm256_mul_ps(fp8_8(src + i, dt), sv)));
    if (i < n) stf__fp8_decode_scalar(dst + i, src + i, dt, n - i, s);
}

void stf__fp8_decode_avx2(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s)
{
    if (dt == STF_F8_E4M3) fp8_row(dst, src, STF_F8_E4M3, n, s);
    else fp8_row(dst, src, STF_F8_E5M2, n, s);
}

INL void fp8_cols(float *dst, const uint8_t *src, stf_dtype dt, size_t n, const float *s)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, stf__canon_nan8(_mm256_mul_ps(fp8_8(src + i, dt),
                                                                 _mm256_loadu_ps(s + i))));
    if (i < n) stf__fp8_decode_cols_scalar(dst + i, src + i, dt, n - i, s + i);
}

void stf__fp8_decode_cols_avx2(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                               const float *s)
{
    if (dt == STF_F8_E4M3) fp8_cols(dst, src, STF_F8_E4M3, n, s);
    else fp8_cols(dst, src, STF_F8_E5M2, n, s);
}

/* ------------------------------------------------------------- Sylvester */

/*
 * One radix-2 stage of stride s (1, 2 or 4) inside a vector: lane l pairs
 * with lane l ^ s; the lane without bit s keeps a + b, the one with it
 * a - b, where a is the value at the lane without bit s.
 */
INL __m256 syl_lane_stage(__m256 v, int s)
{
    __m256i ia, ib;
    __m256 keep_diff;
    if (s == 1) {
        ia = _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6);
        ib = _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7);
        keep_diff = _mm256_castsi256_ps(_mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
    } else if (s == 2) {
        ia = _mm256_setr_epi32(0, 1, 0, 1, 4, 5, 4, 5);
        ib = _mm256_setr_epi32(2, 3, 2, 3, 6, 7, 6, 7);
        keep_diff = _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, -1, -1, 0, 0, -1, -1));
    } else {
        ia = _mm256_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3);
        ib = _mm256_setr_epi32(4, 5, 6, 7, 4, 5, 6, 7);
        keep_diff = _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, 0, 0, -1, -1, -1, -1));
    }
    __m256 a = _mm256_permutevar8x32_ps(v, ia), b = _mm256_permutevar8x32_ps(v, ib);
    return _mm256_blendv_ps(_mm256_add_ps(a, b), _mm256_sub_ps(a, b), keep_diff);
}

/* Stages of stride s and 2s over a block of 4s values (s a multiple of 8),
 * times cv when last. */
INL void syl_mem2(float *p, size_t s, int last, __m256 cv)
{
    for (size_t j = 0; j < s; j += 8) {
        __m256 x0 = _mm256_loadu_ps(p + j), x1 = _mm256_loadu_ps(p + s + j);
        __m256 x2 = _mm256_loadu_ps(p + 2 * s + j), x3 = _mm256_loadu_ps(p + 3 * s + j);
        __m256 y0 = _mm256_add_ps(x0, x1), y1 = _mm256_sub_ps(x0, x1);
        __m256 y2 = _mm256_add_ps(x2, x3), y3 = _mm256_sub_ps(x2, x3);
        __m256 z0 = _mm256_add_ps(y0, y2), z2 = _mm256_sub_ps(y0, y2);
        __m256 z1 = _mm256_add_ps(y1, y3), z3 = _mm256_sub_ps(y1, y3);
        if (last) {
            z0 = stf__canon_nan8(_mm256_mul_ps(z0, cv));
            z1 = stf__canon_nan8(_mm256_mul_ps(z1, cv));
            z2 = stf__canon_nan8(_mm256_mul_ps(z2, cv));
            z3 = stf__canon_nan8(_mm256_mul_ps(z3, cv));
        }
        _mm256_storeu_ps(p + j, z0);
        _mm256_storeu_ps(p + s + j, z1);
        _mm256_storeu_ps(p + 2 * s + j, z2);
        _mm256_storeu_ps(p + 3 * s + j, z3);
    }
}

/* One stage of stride s over a block of 2s values, times cv when last. */
INL void syl_mem1(float *p, size_t s, int last, __m256 cv)
{
    for (size_t j = 0; j < s; j += 8) {
        __m256 a = _mm256_loadu_ps(p + j), b = _mm256_loadu_ps(p + s + j);
        __m256 y0 = _mm256_add_ps(a, b), y1 = _mm256_sub_ps(a, b);
        if (last) {
            y0 = stf__canon_nan8(_mm256_mul_ps(y0, cv));
            y1 = stf__canon_nan8(_mm256_mul_ps(y1, cv));
        }
        _mm256_storeu_ps(p + j, y0);
        _mm256_storeu_ps(p + s + j, y1);
    }
}

void stf__sylvester_undo_avx2(float *x, size_t k, unsigned g)
{
    const float c = 1.0f / sqrtf((float)g);
    const __m256 cv = _mm256_set1_ps(c);
    /* k % g == 0, so for g < 8 the tail is whole groups. */
    size_t end = k - k % 8, off;
    /* Strides below 8 inside each vector; for g <= 8 that is all of it. */
    for (off = 0; off < end; off += 8) {
        __m256 v = _mm256_loadu_ps(x + off);
        v = syl_lane_stage(v, 1);
        if (g > 2) v = syl_lane_stage(v, 2);
        if (g > 4) v = syl_lane_stage(v, 4);
        if (g <= 8) v = stf__canon_nan8(_mm256_mul_ps(v, cv));
        _mm256_storeu_ps(x + off, v);
    }
    if (g > 8) {
        for (off = 0; off < end; off += g) {
            float *p = x + off;
            size_t s = 8;
            while (s < g) {
                if (4 * s <= g) {
                    int last = 4 * s == g;
                    for (size_t b = 0; b < g; b += 4 * s) syl_mem2(p + b, s, last, cv);
                    s *= 4;
                } else {
                    for (size_t b = 0; b < g; b += 2 * s) syl_mem1(p + b, s, 1, cv);
                    s *= 2;
                }
            }
        }
    }
    if (end < k) stf__sylvester_undo_scalar(x + end, k - end, g);
}

/* ------------------------------------------------------------- W4A4 */

void stf__w4a4_unpack_avx2(float *dst, const uint8_t *src, size_t n, float s)
{
    const __m256 sv = _mm256_set1_ps(s);
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(src + i / 2));
        __m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
        /* Columns in order; (v ^ 8) - 8 sign-extends a nibble. */
        __m128i v = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
        __m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        __m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
        _mm256_storeu_ps(dst + i, stf__canon_nan8(_mm256_mul_ps(f0, sv)));
        _mm256_storeu_ps(dst + i + 8, stf__canon_nan8(_mm256_mul_ps(f1, sv)));
    }
    if (i < n) stf__w4a4_unpack_scalar(dst + i, src + i / 2, n - i, s);
}
