/* FP8 weight dequantization (stfix-convrot(7), DEQUANTIZATION, NUMBER FORMATS). */
#include "decode_rows.h"
#include "kernels.h"
#include "quant_internal.h"

/*
 * dst[i] = fl32(decode(src[i]) * scale). STF_EUNSUPPORTED unless dtype is
 * F8_E4M3 or F8_E5M2; STF_EINVAL for NULL buffers with n > 0.
 */
int stf_fp8_dequantize(float *dst, const uint8_t *src, stf_dtype dtype, size_t n, float scale,
                       stf_err *err)
{
    if (dtype != STF_F8_E4M3 && dtype != STF_F8_E5M2)
        return stf__err(err, STF_EUNSUPPORTED,
                        "fp8 dequantize: dtype %d is not F8_E4M3 or F8_E5M2", (int)dtype);
    if (n == 0) return 0;
    if (!dst || !src) return stf__err(err, STF_EINVAL, "fp8 dequantize: NULL buffer");
    /* fp32 product, unlike ComfyUI's compute-dtype product: decoding is
     * exact, so this is the one rounding. NaN codes stay NaN. */
    stf__kernels_active()->fp8_decode(dst, src, dtype, n, scale);
    return 0;
}

/* Per-column scales (contract in decode_rows.h). */
void stf__fp8_dequantize_cols(float *dst, const uint8_t *src, stf_dtype dtype, size_t n,
                              const float *s)
{
    stf__kernels_active()->fp8_decode_cols(dst, src, dtype, n, s);
}
