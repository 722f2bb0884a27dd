/* FP8 weight dequantization (spec/convrot.md §6, §9). */
#include "util/util.h"

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
    /* fp32 product, unlike ComfyUI's compute-dtype product (spec §6):
     * decoding is exact, so this is the one rounding. NaN codes stay NaN. */
    for (size_t i = 0; i < n; i++) dst[i] = stf_fp8_to_f32(src[i], dtype) * scale;
    return 0;
}
