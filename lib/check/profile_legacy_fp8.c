/*
 * Legacy scaled-FP8 checkpoints (stfix-defects(7), legacy-scaled-fp8): a
 * PREFIX "scaled_fp8" tensor and per-layer scale_weight and scale_input
 * tensors beside FP8 weights, written before comfy_quant markers existed.
 *
 * ComfyUI converts the form as it loads, in the versions that have the
 * conversion, and only for a file without _quantization_metadata: every
 * layer under the scaled_fp8 tensor's prefix with a scale_weight gets a
 * float8_e4m3fn marker (plus full_precision_matrix_mult when scaled_fp8
 * holds two elements), whatever its weight's dtype; scale_weight becomes
 * weight_scale, scale_input becomes input_scale unless its one value is
 * exactly 1.0, and scaled_fp8 goes away. SGLang reads none of it.
 */
#include <string.h>

#include "check/check_internal.h"

#define FIX_MIGRATE "migrate the layers to comfy_quant form on disk: stfix fix -r migrate-scaled-fp8"

static int legacy_layer(const stf_layer *l)
{
    return stf_layer_tensor(l, STF_SFX_SCALE_WEIGHT) >= 0 ||
           stf_layer_tensor(l, STF_SFX_SCALE_INPUT) >= 0;
}

/* Whether shard s carries _quantization_metadata, which stops ComfyUI's
 * conversion whatever its value. */
static int has_qmeta(const stf_ckpt *c, size_t s)
{
    return stf_ckpt_meta_find(c, s, "_quantization_metadata") != NULL;
}

/* The shard of the i-th scaled_fp8 tensor. */
static size_t sfp8_shard(const stf__chk *k, size_t pos)
{
    return stf_ckpt_tensor(k->c, stf_model_scaled_fp8_at(k->m, pos))->shard;
}

/* C25: one finding per scaled_fp8 tensor, naming its file and layers. */
static void form_rules(stf__chk *k)
{
    size_t ns = stf_model_scaled_fp8_count(k->m), nl = stf_model_layer_count(k->m);
    for (size_t pos = 0; pos < ns && !k->rc; pos++) {
        const stf_tensor_info *t = stf_ckpt_tensor(k->c, stf_model_scaled_fp8_at(k->m, pos));
        size_t n = 0;
        for (size_t i = 0; i < nl; i++) {
            stf__layer_tmp l_tmp;
            const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
            if (stf_layer_tensor(l, STF_SFX_SCALE_WEIGHT) >= 0 &&
                stf_model_layer_scaled_fp8(k->m, l) == pos)
                n++;
        }
        const char *path = stf_ckpt_shard_path(k->c, t->shard);
        const char *name = stf__chk_name(k, t->name, t->name_len);
        if (has_qmeta(k->c, t->shard))
            stf__chk_add(k, "C25", STF_SEV_WARNING, NULL, 0, FIX_MIGRATE,
                         "%s is a legacy scaled-FP8 checkpoint (%s, %zu layer(s) with "
                         "scale_weight) that also carries _quantization_metadata: ComfyUI "
                         "converts the legacy form only in files without it",
                         path, name, n);
        else
            stf__chk_add(k, "C25", STF_SEV_WARNING, NULL, 0, FIX_MIGRATE,
                         "%s is a legacy scaled-FP8 checkpoint (%s, %zu layer(s) with "
                         "scale_weight): whether ComfyUI reads it depends on its version; those "
                         "that convert the form as they load give each such layer a "
                         "float8_e4m3fn marker%s, the others load the FP8 weights without their "
                         "scales",
                         path, name, n,
                         t->nelem == 2 ? " with full_precision_matrix_mult" : "");
    }
}

/* C26 and C11 for a layer ComfyUI converts: what the conversion gets wrong. */
static void converted_rules(stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *sw = stf_layer_tensor_info(k->m, l, STF_SFX_SCALE_WEIGHT);
    const stf_tensor_info *si = stf_layer_tensor_info(k->m, l, STF_SFX_SCALE_INPUT);
    const char *L = stf__chk_layer(k, l);
    if (si && si->nelem != 1) {
        stf__chk_add(k, "C26", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MIGRATE,
                     "RuntimeError: a Tensor with %llu elements cannot be converted to Scalar",
                     (unsigned long long)si->nelem);
        stf__chk_effect(k, STF_EFFECT_REFUSES);
    }
    if (sw && w && w->dtype != STF_F8_E4M3)
        stf__chk_add(k, "C26", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MIGRATE,
                     "ComfyUI converts legacy layer %s as float8_e4m3fn whatever its weight's "
                     "dtype: its %s weight is converted value by value to F8_E4M3 instead of "
                     "read as stored (silently wrong)",
                     L, stf__chk_dtype(w));
    if (sw && sw->dtype != STF_F32)
        stf__chk_add(k, "C11", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MIGRATE,
                     "No backend can handle 'dequantize_per_tensor_fp8': eager: scale: dtype "
                     "%s not in {torch.float32}", stf__chk_torch_dtype(sw->dtype));
}

/* C26 for a legacy layer ComfyUI does not convert. */
static void unconverted_rule(stf__chk *k, const stf_layer *l, size_t pos)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    const char *L = stf__chk_layer(k, l);
    const char *why = pos == SIZE_MAX ? "no scaled_fp8 tensor marks its prefix"
                                      : "its file also carries _quantization_metadata";
    stf__chk_add(k, "C26", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MIGRATE,
                 "Layer %s is in the legacy scaled-FP8 form, but %s: ComfyUI then does not "
                 "convert it, keeps %s.%s as an unexpected key and loads the %s weight "
                 "without its scale",
                 L, why, L,
                 stf_layer_tensor(l, STF_SFX_SCALE_WEIGHT) >= 0 ? "scale_weight" : "scale_input",
                 stf__chk_dtype(w));
}

/* See check_internal.h. */
void stf__check_comfyui_legacy(stf__chk *k)
{
    form_rules(k);
    size_t nl = stf_model_layer_count(k->m);
    for (size_t i = 0; i < nl && !k->rc; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        if (!legacy_layer(l)) continue;
        size_t pos = stf_model_layer_scaled_fp8(k->m, l);
        if (pos == SIZE_MAX || has_qmeta(k->c, sfp8_shard(k, pos))) unconverted_rule(k, l, pos);
        else converted_rules(k, l);
    }
}

/* See check_internal.h. */
void stf__check_sglang_legacy(stf__chk *k)
{
    size_t nl = stf_model_layer_count(k->m), n = 0;
    int unmarked = 0;
    const char *plain = NULL;
    for (size_t i = 0; i < nl; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        if (!legacy_layer(l)) continue;
        n++;
        const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
        if (!w || l->nmarkers) continue;
        if (w->dtype == STF_F8_E4M3 || w->dtype == STF_I8 || w->dtype == STF_U8) unmarked = 1;
        else if (!plain) plain = stf__chk_dtype(w);
    }
    if (!n) return;
    const char *what = unmarked ? ", and refuses the F8_E4M3 weights that carry no comfy_quant "
                                  "marker (R10)"
                       : plain  ? ", and loads the "
                                : "";
    stf__chk_add(k, "R63", STF_SEV_ERROR, NULL, 0, FIX_MIGRATE,
                 "%zu layer(s) are in the legacy scaled-FP8 form, which SGLang does not read: it "
                 "never loads scaled_fp8, scale_weight or scale_input%s%s%s", n, what,
                 !unmarked && plain ? plain : "",
                 !unmarked && plain ? " weights as plain values without their scales" : "");
    if (!unmarked && plain) stf__chk_effect(k, STF_EFFECT_SILENT);
}
