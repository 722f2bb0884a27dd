/*
 * The scalar kernel table: the reference every SIMD variant must match bit for
 * bit (stfix-convrot(7), FAST TRANSFORM, MODES and QUANTIZATION), and the
 * fallback off x86.
 *
 * The operation order in this file is normative. The build forbids FMA
 * contraction and fast-math; nothing here may be reassociated.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fpbits.h"
#include "int8_scale.h"
#include "kernels.h"
#include "nan_canon.h"


/*
 * One radix-4 stage over a whole group, in place: the four outputs of a
 * butterfly read the same four inputs, so no second buffer is needed and each
 * output is exactly the FAST TRANSFORM expression.
 */
static void fht_group(float *p, unsigned g)
{
    for (size_t s = 1; s < g; s *= 4) {
        for (size_t blk = 0; blk < g; blk += 4 * s) {
            for (size_t j = 0; j < s; j++) {
                float *b = p + blk + j;
                float x0 = b[0], x1 = b[s], x2 = b[2 * s], x3 = b[3 * s];
                b[0] = 0.5f * (((x0 + x1) + x2) - x3);
                b[s] = 0.5f * (((x0 + x1) - x2) + x3);
                b[2 * s] = 0.5f * (((x0 - x1) + x2) + x3);
                b[3 * s] = 0.5f * (((-x0 + x1) + x2) + x3);
            }
        }
    }
}

static void fht_regular_scalar(float *x, size_t k, unsigned g)
{
    for (size_t off = 0; off + g <= k; off += g) fht_group(x + off, g);
}

/* The table's transform: a NaN output is stored as the one quiet NaN
 * (nan_canon.h). Only whole groups are written, so only they are touched.
 * int8_row calls fht_regular_scalar directly: it rejects non-finite rows. */
static void fht_regular_entry_scalar(float *x, size_t k, unsigned g)
{
    fht_regular_scalar(x, k, g);
    if (g) stf__canon_nan_row(x, k - k % g);
}

static void bf16_to_f32_scalar(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = stf__bf16_to_f32(src[i]);
}

static void f16_to_f32_scalar(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = stf__f16_to_f32(src[i]);
}

static void f32_to_bf16_scalar(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = stf__f32_to_bf16(src[i]);
}

static void int8_dequant_row_scalar(float *dst, const int8_t *q, float s, size_t k)
{
    for (size_t i = 0; i < k; i++) dst[i] = stf__canon_nan((float)q[i] * s);
}

static void int8_dequant_row_cols_scalar(float *dst, const int8_t *q, const float *s, size_t k)
{
    for (size_t i = 0; i < k; i++) dst[i] = stf__canon_nan((float)q[i] * s[i]);
}




/*
 * Load n values of one row into dst as F32 and report whether every value
 * is finite (0) or not (-1). Testing exponent bits keeps the check exact
 * and cheap. (Contract in kernels.h.)
 */
int stf__int8_ref_load(float *dst, const void *src, stf_dtype dt, size_t n)
{
    uint32_t bad = 0;
    size_t i;
    if (dt == STF_BF16) {
        const uint16_t *s = src;
        for (i = 0; i < n; i++) {
            bad |= (uint32_t)((s[i] & 0x7F80u) == 0x7F80u);
            dst[i] = stf__bf16_to_f32(s[i]);
        }
    } else if (dt == STF_F16) {
        const uint16_t *s = src;
        for (i = 0; i < n; i++) {
            bad |= (uint32_t)((s[i] & 0x7C00u) == 0x7C00u);
            dst[i] = stf__f16_to_f32(s[i]);
        }
    } else {
        memcpy(dst, src, n * sizeof(float));
        for (i = 0; i < n; i++)
            bad |= (uint32_t)((stf__f32_bits(dst[i]) & 0x7F800000u) == 0x7F800000u);
    }
    return bad ? -1 : 0;
}

/* max|R| (cuda, fp32) or max|rT(R)| (eager) folded into a (contract in kernels.h). */
float stf__int8_ref_absmax(float a, const float *x, size_t n, stf_quant_mode mode, stf_dtype t)
{
    size_t i;
    if (mode == STF_QMODE_EAGER) {
        for (i = 0; i < n; i++) {
            float v = fabsf(stf__round_t(x[i], t));
            if (v > a) a = v;
        }
    } else {
        for (i = 0; i < n; i++) {
            float v = fabsf(x[i]);
            if (v > a) a = v;
        }
    }
    return a;
}

/* q[i] = the code of x[i] for divisor d (contract in kernels.h). */
void stf__int8_ref_codes(int8_t *q, const float *x, size_t n, float d, stf_dtype t)
{
    for (size_t i = 0; i < n; i++) {
        float v = stf__round_t(x[i], t);
        float r = rintf(stf__round_t(v / d, t));
        if (r > 127.0f) r = 127.0f;
        if (r < -128.0f) r = -128.0f;
        /* NaN only arises when finite inputs near FLT_MAX overflow inside
         * the rotation (Inf - Inf). Converting NaN is undefined in C; 0 is
         * what x86's truncating convert gives and what SIMD variants do. */
        if (r != r) r = 0.0f;
        q[i] = (int8_t)r;
    }
}

static int int8_row_scalar(int8_t *q, float *scale, const void *src, stf_dtype src_dtype,
                           size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                           float *scratch)
{
    if (src_dtype != STF_BF16 && src_dtype != STF_F16 && src_dtype != STF_F32)
        return STF_EUNSUPPORTED;
    /* The transform is defined for powers of 4 only: fht_group's stages
     * would reach past a group of 2, 8, 32, ... (so G = 8 gave whatever lay
     * beyond it, and variants "differed"). The SIMD tables pass such g here. */
    if (g && (g & (g - 1) || !(g & 0x55555555u))) return STF_EINVAL;
    if (stf__int8_ref_load(scratch, src, src_dtype, k) != 0) return STF_ENUMERIC;
    if (g) fht_regular_scalar(scratch, k, g);

    /* fp32 mode is the cuda rule with T = F32. */
    if (mode == STF_QMODE_FP32) t = STF_F32;

    float d;
    float s = stf__int8_row_scale(&d, stf__int8_ref_absmax(0.0f, scratch, k, mode, t), mode, t);
    stf__int8_ref_codes(q, scratch, k, d, t);
    *scale = s;
    return 0;
}

/* The reference table (contracts in kernels.h); always available. */
const stf__kernels stf__kernels_scalar = {
    STF_SIMD_SCALAR,
    int8_row_scalar,
    fht_regular_entry_scalar,
    bf16_to_f32_scalar,
    f16_to_f32_scalar,
    f32_to_bf16_scalar,
    int8_dequant_row_scalar,
    int8_dequant_row_cols_scalar,
    stf__fp8_decode_scalar,
    stf__fp8_decode_cols_scalar,
    stf__sylvester_undo_scalar,
    stf__w4a4_unpack_scalar,
    stf__int8_row_fp8_scalar,
    stf__int8_row_i8_scalar,
    stf__int8_dequant_syl_scalar,
};
