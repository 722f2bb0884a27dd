/*
 * Internal: the per-row INT8 scale rule of stfix-convrot(7), MODES to
 * QUANTIZATION and the rounding-dtype helpers it needs, written once for every
 * kernel variant (kernels_scalar.c, kernels_avx2.c, kernels_avx512.c,
 * kernels_bf16_avx512.c) and the W4A4 quantizer, so the constants and the order
 * of the operations cannot drift between them.
 */
#ifndef STF_QUANT_INT8_SCALE_H
#define STF_QUANT_INT8_SCALE_H

#include <float.h>
#include <math.h>

#include "fpbits.h"
#include "stfix/quant.h"
#include "stfix/experimental/quant.h"

/* fl32(1/127) and fl32(1e-30), given as bits so no compiler can differ. */
#define STF__INV127_BITS 0x3C010204u
#define STF__SCALE_FLOOR_BITS 0x0DA24260u
/* Largest finite BF16, 0x7F7F. */
#define STF__BF16_MAX_BITS 0x7F7F0000u

/* rT(x): round to the rounding dtype T and back (identity for F32). */
static inline float stf__round_t(float x, stf_dtype t)
{
    if (t == STF_BF16) return stf__bf16_to_f32(stf__f32_to_bf16(x));
    if (t == STF_F16) return stf__f16_to_f32(stf__f32_to_f16(x));
    return x;
}

/* maxT: the largest finite value of T (stfix-convrot(7), MODES). */
static inline float stf__max_of_t(stf_dtype t)
{
    if (t == STF_BF16) return stf__f32_from_bits(STF__BF16_MAX_BITS);
    if (t == STF_F16) return 65504.0f;
    return FLT_MAX;
}

/* finfo(T).tiny, the divisor guard of the eager path. */
static inline float stf__tiny_of_t(stf_dtype t)
{
    if (t == STF_F16) return 0x1p-14f;
    return FLT_MIN; /* BF16 and F32 share the F32 exponent range */
}

/*
 * The row scale s (stored) and divisor d = rT(s) (used) from the row's
 * absmax `a`: max|R| for modes cuda and fp32, max|rT(R)| for eager. For fp32
 * mode the caller passes t = F32. Eager divides by 127, cuda multiplies by
 * fl32(1/127); both clamp to maxT (a rotated F16 row can round to Inf, where
 * kitchen eager would give NaN) and floor at fl32(1e-30).
 */
static inline float stf__int8_row_scale(float *d_out, float a, stf_quant_mode mode, stf_dtype t)
{
    float s;
    if (mode == STF_QMODE_EAGER) s = fminf(a, stf__max_of_t(t)) / 127.0f;
    else s = fminf(a, stf__max_of_t(t)) * stf__f32_from_bits(STF__INV127_BITS);
    s = fmaxf(s, stf__f32_from_bits(STF__SCALE_FLOOR_BITS));
    float d = stf__round_t(s, t);
    if (d == 0.0f) d = stf__tiny_of_t(t);
    *d_out = d;
    return s;
}

/*
 * Whether pass 2 may divide by d as a product with r = fl32(1/d): r must be
 * finite and normal. The scale rules keep d far inside this range (see
 * near_half_integer in kernels_avx512.c); the test keeps the reciprocal
 * form safe even if they ever change.
 */
static inline int stf__int8_recip_ok(float d) { return d >= 0x1p-125f && d <= 0x1p125f; }

/*
 * Calls PASS2(q, x, k, d, T, RECIP) of a SIMD variant with T and RECIP
 * (stf__int8_recip_ok(d)) as compile-time constants, so each of the six
 * forms is its own specialised loop.
 */
#define STF__INT8_PASS2_DISPATCH(PASS2, q, x, k, d, t)                                             \
    do {                                                                                           \
        int recip_ = stf__int8_recip_ok(d);                                                        \
        if ((t) == STF_BF16) {                                                                     \
            if (recip_) PASS2(q, x, k, d, STF_BF16, 1);                                            \
            else PASS2(q, x, k, d, STF_BF16, 0);                                                   \
        } else if ((t) == STF_F16) {                                                               \
            if (recip_) PASS2(q, x, k, d, STF_F16, 1);                                             \
            else PASS2(q, x, k, d, STF_F16, 0);                                                    \
        } else {                                                                                   \
            if (recip_) PASS2(q, x, k, d, STF_F32, 1);                                             \
            else PASS2(q, x, k, d, STF_F32, 0);                                                    \
        }                                                                                          \
    } while (0)

/*
 * The shared step of the SIMD int8_row variants after pass 1: from the bits
 * of max|R| decide whether the fast quantize pass applies, and compute the
 * scale and divisor. *t is normalised (fp32 mode, or a T other than BF16/F16,
 * quantizes with T = F32). Returns 1 for the rare rows that must go to the
 * scalar reference instead: R not finite (a NaN/Inf input, which the scalar
 * table rejects with STF_ENUMERIC, or an FHT overflow of huge finite inputs),
 * or some rT(R) infinite (rT is monotone, so exactly when rT(max|R|) is),
 * whose clamp of +-Inf the fast conversions do not give.
 */
static inline int stf__int8_row_prepare(float *s, float *d, uint32_t abits, stf_quant_mode mode,
                                        stf_dtype *t)
{
    if (mode == STF_QMODE_FP32 || (*t != STF_BF16 && *t != STF_F16)) *t = STF_F32;
    float a = stf__f32_from_bits(abits);
    if (abits >= 0x7F800000u || (stf__f32_bits(stf__round_t(a, *t)) & 0x7F800000u) == 0x7F800000u)
        return 1;
    /* Eager takes max|rT(R)|; rT is monotone and odd, so that is rT(max|R|). */
    *s = stf__int8_row_scale(d, mode == STF_QMODE_EAGER ? stf__round_t(a, *t) : a, mode, *t);
    return 0;
}

#endif
