/*
 * Internal: bit-level float conversions shared by the quant kernels
 * (stfix-convrot(7), NUMBER FORMATS). Header-only so the per-element loops of
 * every kernel variant inline them; convert.c wraps them as the public API.
 */
#ifndef STF_QUANT_FPBITS_H
#define STF_QUANT_FPBITS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t stf__f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline float stf__f32_from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Exact: BF16 is the top half of an F32. */
static inline float stf__bf16_to_f32(uint16_t h)
{
    return stf__f32_from_bits((uint32_t)h << 16);
}

/*
 * RNE by integer carry into the kept half (stfix-convrot(7), NUMBER FORMATS).
 * NaN becomes the canonical 0x7FC0 without sign, as torch does; the carry
 * itself turns overflow into Inf and handles subnormals.
 */
static inline uint16_t stf__f32_to_bf16(float f)
{
    uint32_t b = stf__f32_bits(f);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
    b += 0x7FFFu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

/* Exact for every F16 pattern; NaN payloads are carried into F32. */
static inline float stf__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1Fu) return stf__f32_from_bits(sign | 0x7F800000u | (m << 13));
    if (e == 0) {
        /* m·2^-24: the product is exact, and so is the sign flip. */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return stf__f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/*
 * RNE including subnormals; |x| >= 65520 gives Inf; NaN gives the quiet
 * 0x7E00 with the sign kept (torch/numpy behaviour).
 */
static inline uint16_t stf__f32_to_f16(float f)
{
    uint32_t b = stf__f32_bits(f);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    uint32_t a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
    if (a >= 0x38800000u) {
        /* Normal F16: round at bit 13, then rebias 127 -> 15. A mantissa
         * carry moves into the exponent, which is the right answer. */
        uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
    }
    /* Subnormal F16: x·2^24 is exact, rintf rounds half to even; 1024
     * is the smallest normal, 0x0400, which the same bits express. */
    float m = rintf(stf__f32_from_bits(a) * 0x1p24f);
    return (uint16_t)(sign | (uint16_t)m);
}

#endif
