/* Names of the quantization conventions (INT8 and W4A4 requantization). */
#include <string.h>

#include "quant_internal.h"

/* Static name of a mode; "unknown" outside the enum. */
const char *stf_quant_mode_name(stf_quant_mode m)
{
    switch (m) {
    case STF_QMODE_CUDA: return "cuda";
    case STF_QMODE_FP32: return "fp32";
    case STF_QMODE_EAGER: return "eager";
    }
    return "unknown";
}

/* Exact-case name -> mode in *out; STF_EINVAL (out untouched) otherwise. */
int stf_quant_mode_from_name(stf_quant_mode *out, const char *name)
{
    static const stf_quant_mode all[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    if (!out || !name) return STF_EINVAL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, stf_quant_mode_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    }
    return STF_EINVAL;
}
