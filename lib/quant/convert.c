/*
 * Number format conversions (stfix-convrot(7), NUMBER FORMATS): BF16, F16, F64
 * and the FP8 family to and from F32, all round-to-nearest-even. Bulk BF16/F16
 * work goes through the active kernel table; everything else is here.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fpbits.h"
#include "kernels.h"
#include "quant_internal.h"

/* BF16 bits -> F32, exact. */
float stf_bf16_to_f32(uint16_t h) { return stf__bf16_to_f32(h); }

/* F32 -> BF16 bits, RNE; NaN -> 0x7FC0, overflow -> ±Inf. */
uint16_t stf_f32_to_bf16(float f) { return stf__f32_to_bf16(f); }

/* F16 bits -> F32, exact (subnormals and NaN payloads included). */
float stf_f16_to_f32(uint16_t h) { return stf__f16_to_f32(h); }

/* F32 -> F16 bits, RNE with subnormals; |f| >= 65520 -> ±Inf; NaN -> 0x7E00|sign. */
uint16_t stf_f32_to_f16(float f) { return stf__f32_to_f16(f); }

/*
 * F64 -> F16 bits with one RNE step; same specials as stf_f32_to_f16.
 *
 * From F64 the rounding happens once, on the double: going through F32 would
 * round twice and can miss a tie (stfix-convrot(7), NUMBER FORMATS).
 */
uint16_t stf_f64_to_f16(double d)
{
    uint16_t sign = signbit(d) ? 0x8000u : 0;
    if (isnan(d)) return (uint16_t)(sign | 0x7E00u);
    double a = fabs(d);
    if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u);
    if (a < 0x1p-14) {
        /* Subnormal range: scaling by 2^24 is exact in double. */
        double m = nearbyint(a * 0x1p24);
        return (uint16_t)(sign | (uint16_t)m);
    }
    int e;
    double f = frexp(a, &e); /* a = f·2^e, f in [0.5, 1) */
    /* (2f - 1)·1024 is exact; rounding it is the only rounding step. */
    double m = nearbyint((2.0 * f - 1.0) * 1024.0);
    unsigned exp16 = (unsigned)(e - 1 + 15);
    if (m >= 1024.0) {
        m = 0;
        exp16++;
    }
    if (exp16 >= 31) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | (exp16 << 10) | (unsigned)m);
}

/* Generic minifloat decode: sign, E exponent bits, M mantissa bits. */
static float minifloat(uint8_t v, unsigned ebits, unsigned mbits, int bias)
{
    unsigned e = ((unsigned)v >> mbits) & ((1u << ebits) - 1u);
    unsigned m = (unsigned)v & ((1u << mbits) - 1u);
    float mag;
    if (e == 0) mag = ldexpf((float)m, 1 - bias - (int)mbits);
    else mag = ldexpf((float)((1u << mbits) + m), (int)e - bias - (int)mbits);
    return (v & 0x80u) ? -mag : mag;
}

/* Decode one FP8 code of `dtype` exactly (the table of stfix-convrot(7), NUMBER
 * FORMATS); NaN for a non-FP8 dtype. */
float stf_fp8_to_f32(uint8_t v, stf_dtype dtype)
{
    switch (dtype) {
    case STF_F8_E4M3:
        if ((v & 0x7Fu) == 0x7Fu) return (v & 0x80u) ? -NAN : NAN;
        return minifloat(v, 4, 3, 7);
    case STF_F8_E5M2:
        if ((v & 0x7Cu) == 0x7Cu) {
            if ((v & 0x03u) == 0) return (v & 0x80u) ? -INFINITY : INFINITY;
            return (v & 0x80u) ? -NAN : NAN;
        }
        return minifloat(v, 5, 2, 15);
    case STF_F8_E4M3FNUZ:
        if (v == 0x80u) return NAN;
        return minifloat(v, 4, 3, 8);
    case STF_F8_E5M2FNUZ:
        if (v == 0x80u) return NAN;
        return minifloat(v, 5, 2, 16);
    case STF_F8_E8M0:
        if (v == 0xFFu) return NAN;
        return ldexpf(1.0f, (int)v - 127);
    default:
        return NAN;
    }
}

static int is_fp8(stf_dtype d)
{
    return d == STF_F8_E4M3 || d == STF_F8_E5M2 || d == STF_F8_E4M3FNUZ ||
           d == STF_F8_E5M2FNUZ || d == STF_F8_E8M0;
}

/*
 * Widen n values of src_dtype to F32 (exact except F64, which rounds RNE).
 * dst and src are the caller's; F32 -> F32 may overlap. STF_EINVAL for a
 * NULL buffer with n > 0, STF_EUNSUPPORTED for other dtypes.
 */
int stf_convert_to_f32(float *dst, const void *src, stf_dtype src_dtype, size_t n, stf_err *err)
{
    if (n == 0) return 0;
    if (!dst || !src) return stf__err(err, STF_EINVAL, "convert: NULL buffer");
    const stf__kernels *kt = stf__kernels_active();
    size_t i;
    switch (src_dtype) {
    case STF_BF16: kt->bf16_to_f32(dst, (const uint16_t *)src, n); return 0;
    case STF_F16: kt->f16_to_f32(dst, (const uint16_t *)src, n); return 0;
    case STF_F32: memmove(dst, src, n * sizeof(float)); return 0;
    case STF_F64: {
        const double *s = src;
        for (i = 0; i < n; i++) dst[i] = (float)s[i];
        return 0;
    }
    case STF_I8: {
        const int8_t *s = src;
        for (i = 0; i < n; i++) dst[i] = (float)s[i];
        return 0;
    }
    case STF_U8: {
        const uint8_t *s = src;
        for (i = 0; i < n; i++) dst[i] = (float)s[i];
        return 0;
    }
    default:
        break;
    }
    if (is_fp8(src_dtype)) {
        const uint8_t *s = src;
        for (i = 0; i < n; i++) dst[i] = stf_fp8_to_f32(s[i], src_dtype);
        return 0;
    }
    return stf__err(err, STF_EUNSUPPORTED, "convert: cannot convert dtype %d to F32",
                    (int)src_dtype);
}

/*
 * Narrow n F32 values to BF16/F16 (RNE) or copy to F32. STF_EINVAL for a
 * NULL buffer, STF_EUNSUPPORTED for other dtypes.
 */
int stf_convert_from_f32(void *dst, stf_dtype dst_dtype, const float *src, size_t n,
                         stf_err *err)
{
    if (n == 0) return 0;
    if (!dst || !src) return stf__err(err, STF_EINVAL, "convert: NULL buffer");
    size_t i;
    switch (dst_dtype) {
    case STF_BF16: stf__kernels_active()->f32_to_bf16((uint16_t *)dst, src, n); return 0;
    case STF_F16: {
        uint16_t *d = dst;
        for (i = 0; i < n; i++) d[i] = stf__f32_to_f16(src[i]);
        return 0;
    }
    case STF_F32: memmove(dst, src, n * sizeof(float)); return 0;
    default:
        return stf__err(err, STF_EUNSUPPORTED, "convert: cannot convert F32 to dtype %d",
                        (int)dst_dtype);
    }
}

/* x[i] = rT(x[i]) in place for t in BF16/F16/F32; STF_EUNSUPPORTED otherwise. */
int stf_round_to_dtype(float *x, size_t n, stf_dtype t, stf_err *err)
{
    if (n && !x) return stf__err(err, STF_EINVAL, "round: NULL buffer");
    size_t i;
    switch (t) {
    case STF_BF16:
        for (i = 0; i < n; i++) x[i] = stf__bf16_to_f32(stf__f32_to_bf16(x[i]));
        return 0;
    case STF_F16:
        for (i = 0; i < n; i++) x[i] = stf__f16_to_f32(stf__f32_to_f16(x[i]));
        return 0;
    case STF_F32:
        return 0;
    default:
        return stf__err(err, STF_EUNSUPPORTED, "round: dtype %d is not BF16, F16 or F32",
                        (int)t);
    }
}
