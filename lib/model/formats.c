/*
 * The formats table of stfix-defects(7), FORMATS, as data, in one place: what
 * each `format` value stores in P.weight, which companion tensors it needs
 * (dtype, shape), and which consumer loads it. The check and plan layers
 * read this table instead of repeating the facts.
 */
#include <string.h>

#include "model_internal.h"

static const char *const suffix_names[STF_SFX_COUNT] = {
    ".weight", ".weight_scale", ".comfy_quant", ".input_scale", ".weight_scale_2",
    ".weight_s_rel", ".weight_s_channel", ".weight_codebook", ".weight_correction",
    ".pre_quant_scale", ".weight_zeros", ".weight_zero", ".bias", ".scale_weight",
    ".scale_input", ".comfy_attention.config",
};

/* Static suffix text for s (contract in model.h); NULL out of range. */
const char *stf_suffix_name(stf_suffix s)
{
    return (unsigned)s < STF_SFX_COUNT ? suffix_names[s] : NULL;
}

/* Shorthand: {suffix, required, {dtypes}, ndtypes, shape, alt_shape}. */
static const stf_format_tensor t_int8[] = {
    /* (N,1) rowwise; () tensorwise (ComfyUI also takes (1,), which is not a rule here) */
    { STF_SFX_WEIGHT_SCALE, 1, { STF_F32 }, 1, STF_SHAPE_N1, STF_SHAPE_SCALAR },
};

static const stf_format_tensor t_w4a4[] = {
    { STF_SFX_WEIGHT_SCALE, 1, { STF_F32 }, 1, STF_SHAPE_N, STF_SHAPE_NONE },
};

static const stf_format_tensor t_w4a8[] = {
    /* ComfyUI also reads U8 group scales; SGLang requires F8_E4M3 (R45) */
    { STF_SFX_WEIGHT_S_REL, 1, { STF_F8_E4M3, STF_U8 }, 2, STF_SHAPE_N_KGS, STF_SHAPE_NONE },
    { STF_SFX_WEIGHT_S_CHANNEL, 1, { STF_F32 }, 1, STF_SHAPE_N, STF_SHAPE_NONE },
    { STF_SFX_WEIGHT_CODEBOOK, 0, { STF_F32 }, 1, STF_SHAPE_16, STF_SHAPE_NONE },
    { STF_SFX_WEIGHT_CORRECTION, 0, { STF_F32 }, 1, STF_SHAPE_KGS_N, STF_SHAPE_NONE },
};

static const stf_format_tensor t_fp8[] = {
    { STF_SFX_WEIGHT_SCALE, 1, { STF_F32 }, 1, STF_SHAPE_SCALAR, STF_SHAPE_NONE },
    { STF_SFX_INPUT_SCALE, 0, { STF_F32 }, 1, STF_SHAPE_SCALAR, STF_SHAPE_NONE },
};

static const stf_format_tensor t_nvfp4[] = {
    /* SGLang checks (N, K/16); ComfyUI stores the swizzled padded layout */
    { STF_SFX_WEIGHT_SCALE, 1, { STF_F8_E4M3 }, 1, STF_SHAPE_N_K16, STF_SHAPE_NVFP4_SWIZZLED },
    { STF_SFX_WEIGHT_SCALE_2, 1, { STF_F32 }, 1, STF_SHAPE_SCALAR, STF_SHAPE_NONE },
    { STF_SFX_INPUT_SCALE, 0, { STF_F32 }, 1, STF_SHAPE_SCALAR, STF_SHAPE_NONE },
    { STF_SFX_PRE_QUANT_SCALE, 0, { STF_F32, STF_BF16, STF_F16 }, 3, STF_SHAPE_K, STF_SHAPE_NONE },
};

static const stf_format_tensor t_mxfp8[] = {
    /* E8M0 exponents stored as U8 (an F8_E8M0 label is e8m0-scales) */
    { STF_SFX_WEIGHT_SCALE, 1, { STF_U8 }, 1, STF_SHAPE_N_K32, STF_SHAPE_NONE },
};

static const stf_format_tensor t_awq[] = {
    { STF_SFX_WEIGHT_SCALE, 1, { STF_F16, STF_BF16 }, 2, STF_SHAPE_KGS_N, STF_SHAPE_NONE },
    { STF_SFX_WEIGHT_ZEROS, 1, { STF_F16, STF_BF16 }, 2, STF_SHAPE_KGS_N, STF_SHAPE_NONE },
};

#define BOTH (STF_CONSUMER_COMFYUI | STF_CONSUMER_SGLANG)
#define ROWS(a) a, sizeof a / sizeof a[0]

static const stf_format_info formats[STF_FMT_COUNT] = {
    { STF_FMT_INT8_TENSORWISE, "int8_tensorwise", STF_I8, STF_SHAPE_NK, BOTH,
      "KitchenInt8Config", "TensorWiseINT8Layout", ROWS(t_int8), 0 },
    { STF_FMT_CONVROT_W4A4, "convrot_w4a4", STF_I8, STF_SHAPE_NK2, BOTH,
      "KitchenW4A4Config", "TensorCoreConvRotW4A4Layout", ROWS(t_w4a4), 0 },
    { STF_FMT_ASYM_W4A8_INT8, "asym_w4a8_int8", STF_I8, STF_SHAPE_NK2, BOTH,
      "KitchenW4A8Config", "AsymW4A8Int8Layout", ROWS(t_w4a8), 16 },
    { STF_FMT_FLOAT8_E4M3FN, "float8_e4m3fn", STF_F8_E4M3, STF_SHAPE_NK, BOTH,
      "ComfyFp8Config", "TensorCoreFP8E4M3Layout", ROWS(t_fp8), 0 },
    { STF_FMT_FLOAT8_E5M2, "float8_e5m2", STF_F8_E5M2, STF_SHAPE_NK, STF_CONSUMER_COMFYUI,
      NULL, "TensorCoreFP8E5M2Layout", ROWS(t_fp8), 0 },
    { STF_FMT_NVFP4, "nvfp4", STF_U8, STF_SHAPE_NK2, BOTH,
      "ComfyNvfp4Config", "TensorCoreNVFP4Layout", ROWS(t_nvfp4), 0 },
    { STF_FMT_MXFP8, "mxfp8", STF_F8_E4M3, STF_SHAPE_NK, BOTH,
      "MXFP8Config", "TensorCoreMXFP8Layout", ROWS(t_mxfp8), 0 },
    { STF_FMT_AWQ_W4A16, "awq_w4a16", STF_I8, STF_SHAPE_NK2, STF_CONSUMER_COMFYUI,
      NULL, NULL, ROWS(t_awq), 64 },
};

/* Table row for id, or NULL (contract in model.h). Rows are static. */
const stf_format_info *stf_format_at(stf_format_id id)
{
    return (unsigned)id < STF_FMT_COUNT ? &formats[id] : NULL;
}

/* The row's name (contract in model.h); NULL out of range. */
const char *stf_format_name(stf_format_id id)
{
    return (unsigned)id < STF_FMT_COUNT ? formats[id].name : NULL;
}

/* Exact-name lookup (C3/R30 use it); NULL for unknown names or NULL name. */
const stf_format_info *stf_format_find(const char *name, size_t len)
{
    if (!name) return NULL;
    for (size_t i = 0; i < STF_FMT_COUNT; i++)
        if (strlen(formats[i].name) == len && memcmp(formats[i].name, name, len) == 0)
            return &formats[i];
    return NULL;
}

/* a / b when exact. */
static int exact_div(uint64_t *q, uint64_t a, uint64_t b)
{
    if (b == 0 || a % b) return -1;
    *q = a / b;
    return 0;
}

static uint64_t round_up(uint64_t a, uint64_t m) { return (a + m - 1) / m * m; }

/* Concrete dims of a rule; STF_EINVAL when a division is inexact (model.h). */
int stf_shape_rule_dims(uint64_t dims[2], unsigned *rank, stf_shape_rule r, uint64_t n,
                        uint64_t k, uint64_t gs)
{
    uint64_t q = 0;
    switch (r) {
    case STF_SHAPE_NK: dims[0] = n; dims[1] = k; *rank = 2; return 0;
    case STF_SHAPE_NK2:
        if (exact_div(&q, k, 2)) break;
        dims[0] = n; dims[1] = q; *rank = 2; return 0;
    case STF_SHAPE_N1: dims[0] = n; dims[1] = 1; *rank = 2; return 0;
    case STF_SHAPE_N: dims[0] = n; *rank = 1; return 0;
    case STF_SHAPE_SCALAR: *rank = 0; return 0;
    case STF_SHAPE_K: dims[0] = k; *rank = 1; return 0;
    case STF_SHAPE_N_KGS:
        if (exact_div(&q, k, gs)) break;
        dims[0] = n; dims[1] = q; *rank = 2; return 0;
    case STF_SHAPE_KGS_N:
        if (exact_div(&q, k, gs)) break;
        dims[0] = q; dims[1] = n; *rank = 2; return 0;
    case STF_SHAPE_N_K16:
        if (exact_div(&q, k, 16)) break;
        dims[0] = n; dims[1] = q; *rank = 2; return 0;
    case STF_SHAPE_N_K32:
        if (exact_div(&q, k, 32)) break;
        dims[0] = n; dims[1] = q; *rank = 2; return 0;
    case STF_SHAPE_16: dims[0] = 16; *rank = 1; return 0;
    case STF_SHAPE_NVFP4_SWIZZLED:
        if (exact_div(&q, k, 16) || n > UINT64_MAX - 128) break;
        dims[0] = round_up(n, 128); dims[1] = round_up(q, 4); *rank = 2; return 0;
    case STF_SHAPE_NONE:
    default: break;
    }
    return STF_EINVAL;
}
