/* FP8 weight dequantization (stfix-convrot(7), DEQUANTIZATION and NUMBER FORMATS). */
#include <pthread.h>

#include "util/util.h"

/*
 * Decoded value of every code, per dtype, filled once by stf_fp8_to_f32
 * itself so the two can never disagree; decoding with ldexpf per element
 * ran at about 0.09 GB/s. pthread_once makes the first use from any thread
 * safe, and later uses only read.
 */
static float g_e4m3[256], g_e5m2[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (unsigned c = 0; c < 256; c++) {
        g_e4m3[c] = stf_fp8_to_f32((uint8_t)c, STF_F8_E4M3);
        g_e5m2[c] = stf_fp8_to_f32((uint8_t)c, STF_F8_E5M2);
    }
}

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
    if (pthread_once(&g_once, build_tables) != 0)
        return stf__err(err, STF_ENOMEM, "fp8 dequantize: table setup failed (resources)");
    const float *restrict tab = dtype == STF_F8_E4M3 ? g_e4m3 : g_e5m2;
    /* restrict: without it every store to dst could change src (a byte
     * pointer aliases anything) and the loop could not overlap iterations. */
    const uint8_t *restrict in = src;
    float *restrict out = dst;
    /* fp32 product, unlike ComfyUI's compute-dtype product (stfix-convrot(7),
     * DEQUANTIZATION): decoding is exact, so this is the one rounding. NaN
     * codes stay NaN. */
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float a = tab[in[i]], b = tab[in[i + 1]], c = tab[in[i + 2]], d = tab[in[i + 3]];
        out[i] = a * scale;
        out[i + 1] = b * scale;
        out[i + 2] = c * scale;
        out[i + 3] = d * scale;
    }
    for (; i < n; i++) out[i] = tab[in[i]] * scale;
    return 0;
}
