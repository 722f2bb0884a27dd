/*
 * stfix public API: the quantization vocabulary a plan and a run use
 * (stfix-convrot(7)). Included through <stfix.h>; do not include directly.
 *
 * The kernels themselves (conversions, Hadamard transforms, quantizers,
 * error metrics), the SIMD dispatch and the thread pool's functions are
 * experimental: <stfix/experimental.h>.
 *
 * Thread safety: every function here is pure and may be called from any
 * thread at any time.
 */
#ifndef STFIX_QUANT_H
#define STFIX_QUANT_H

#include "base.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a requantization rounds (stfix-convrot(7), MODES). */
typedef enum stf_quant_mode {
    STF_QMODE_CUDA = 0,   /* default: comfy-kitchen CUDA convention */
    STF_QMODE_FP32 = 1,   /* CUDA convention with T = F32 (INT8; W4A4 as CUDA) */
    STF_QMODE_EAGER = 2   /* comfy-kitchen PyTorch (eager) quantizers, scales from T */
} stf_quant_mode;

STF_API const char *stf_quant_mode_name(stf_quant_mode m);  /* "cuda", "fp32", "eager" */
/* Parse one of the names above: 0, or STF_EINVAL. */
STF_API int stf_quant_mode_from_name(stf_quant_mode *out, const char *name);

/* Error metrics of a requantized layer (stfix-convrot(7), ERROR METRICS). */
typedef struct stf_metrics_result {
    double rel_l2;      /* ||W-Ŵ|| / ||W|| (0 when both are zero) */
    double cosine;      /* <W,Ŵ>/(||W|| ||Ŵ||) (1 when both are zero) */
    double snr_db;      /* +INFINITY when the error is zero */
    double max_abs;     /* max |W-Ŵ| */
    uint64_t max_row, max_col;
    double kitchen;     /* mean|W-Ŵ| / (max|W| + 1e-8) */
} stf_metrics_result;

#ifdef __cplusplus
}
#endif
#endif
