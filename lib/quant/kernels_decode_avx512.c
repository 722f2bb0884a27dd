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

/*
 * Stride s (1, 2, 4 or 8) inside a vector: lanes without bit s keep a + b,
 * lanes with it a - b (a: the value at the lane without bit s, b: with it).
 * One in-lane or block shuffle swaps the partners: v + w is a + b in the
 * lanes without the bit (addition commutes exactly; only a NaN's payload
 * could differ, and every NaN is stored as one value), w - v is a - b in
 * the others.
 */
INL __m512 syl_lane_stage(__m512 v, int s)
{
    __m512 w;
    __mmask16 hi;
    if (s == 1) {
        w = _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1));
        hi = 0xAAAA;
    } else if (s == 2) {
        w = _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2));
        hi = 0xCCCC;
    } else if (s == 4) {
        w = _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1));
        hi = 0xF0F0;
    } else {
        w = _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2));
        hi = 0xFF00;
    }
    return _mm512_mask_sub_ps(_mm512_add_ps(v, w), hi, w, v);
}

/*
 * Sixteen INT8 codes times s, fl32(q * s) as int8_dequant_row forms it;
 * that kernel also stores a NaN product as the one quiet NaN, which only
 * changes a NaN's payload here, and the undo's last step stores every NaN
 * as that one anyway.
 */
INL __m512 syl_codes16(const int8_t *q, __m512 sv)
{
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)q);
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c)), sv);
}

/*
 * A whole group of g = 16 * NV values (NV = 2, 4, 8 or 16) in registers,
 * loaded from p, or decoded from the codes q (q non-NULL): the four lane
 * stages, then strides 16 to 8 * g as butterflies between whole vectors,
 * in the scalar order, and the factor: each value is loaded and stored
 * once instead of once per pair of stages.
 */
#define SYL_GROUP_REGS(NV)                                                                   \
    INL void syl_group##NV(float *p, const int8_t *q, __m512 sv, __m512 cv)                  \
    {                                                                                        \
        __m512 v[NV];                                                                        \
        _Pragma("GCC unroll 16") for (int j = 0; j < NV; j++)                                \
        {                                                                                    \
            __m512 t = q ? syl_codes16(q + 16 * j, sv) : _mm512_loadu_ps(p + 16 * j);       \
            t = syl_lane_stage(syl_lane_stage(t, 1), 2);                                     \
            v[j] = syl_lane_stage(syl_lane_stage(t, 4), 8);                                  \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int s = 1; s < NV; s *= 2)                              \
            _Pragma("GCC unroll 16") for (int j = 0; j < NV; j++) if (!(j & s))              \
        {                                                                                    \
            __m512 a = v[j], b = v[j + s];                                                   \
            v[j] = _mm512_add_ps(a, b);                                                      \
            v[j + s] = _mm512_sub_ps(a, b);                                                  \
        }                                                                                    \
        _Pragma("GCC unroll 16") for (int j = 0; j < NV; j++)                                \
            _mm512_storeu_ps(p + 16 * j, stf__canon_nan16(_mm512_mul_ps(v[j], cv)));         \
    }
SYL_GROUP_REGS(2)
SYL_GROUP_REGS(4)
SYL_GROUP_REGS(8)
SYL_GROUP_REGS(16)

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
    size_t off;
    if (g >= 32 && g <= 256) {
        /* k % g == 0: whole groups, each in registers. */
        for (off = 0; off < k; off += g) {
            if (g == 32) syl_group2(x + off, NULL, cv, cv);
            else if (g == 64) syl_group4(x + off, NULL, cv, cv);
            else if (g == 128) syl_group8(x + off, NULL, cv, cv);
            else syl_group16(x + off, NULL, cv, cv);
        }
        return;
    }
    /* k % g == 0, so for g < 16 the tail is whole groups. */
    size_t end = k - k % 16;
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

/* Decode and undo in one pass for a group of 32 to 256 (contract in kernels_avx512.h). */
void stf__int8_dequant_syl_avx512(float *dst, const int8_t *q, float s, size_t k, unsigned g)
{
    if (g < 32 || g > 256 || k % g != 0) {
        stf__kernels_avx512.int8_dequant_row(dst, q, s, k);
        stf__sylvester_undo_avx512(dst, k, g);
        return;
    }
    const __m512 cv = _mm512_set1_ps(1.0f / sqrtf((float)g)), sv = _mm512_set1_ps(s);
    for (size_t off = 0; off < k; off += g) {
        if (g == 32) syl_group2(dst + off, q + off, sv, cv);
        else if (g == 64) syl_group4(dst + off, q + off, sv, cv);
        else if (g == 128) syl_group8(dst + off, q + off, sv, cv);
        else syl_group16(dst + off, q + off, sv, cv);
    }
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
