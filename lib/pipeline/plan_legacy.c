/*
 * migrate-scaled-fp8: a layer of the legacy scaled-FP8 form (stfix-defects(7),
 * legacy-scaled-fp8) rewritten in comfy_quant form, header and copies only.
 * scale_weight becomes weight_scale and scale_input becomes input_scale,
 * both widened to F32 (exact from BF16 and F16); an input scale of one
 * value exactly 1.0 is dropped, as ComfyUI's own conversion drops it. The
 * marker names the format of the weight's own dtype (float8_e4m3fn or
 * float8_e5m2, where ComfyUI's conversion always says float8_e4m3fn) and
 * sets full_precision_matrix_mult where the scaled_fp8 tensor governing
 * the layer holds two elements. The scaled_fp8 tensor itself belongs to no
 * layer: the bundled recipe drops it by name.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_work.h"

/* Move a legacy scale slot onto its comfy_quant name, widened to F32. */
static int move_scale(stf__layer_work *w, stf_suffix from, stf_suffix to, stf_err *err)
{
    stf__tensor_slot *S = &w->s[from], *D = &w->s[to];
    char msg[200];
    if (D->present && !D->dropped) {
        snprintf(msg, sizeof msg, "the layer has both %s and %s", stf_suffix_name(from) + 1,
                 stf_suffix_name(to) + 1);
        return stf__work_refuse(w, err, msg);
    }
    if (S->dtype != STF_F32 && S->dtype != STF_BF16 && S->dtype != STF_F16) {
        snprintf(msg, sizeof msg, "%s is %s, not F32, BF16 or F16", stf_suffix_name(from) + 1,
                 stf_dtype_name(S->dtype));
        return stf__work_refuse(w, err, msg);
    }
    *D = *S;
    memset(S, 0, sizeof *S);
    if (D->dtype != STF_F32) {
        D->dtype = STF_F32;
        D->op = STF_OUT_CAST;
    }
    stf__work_note(w, "%s -> %s F32", stf_suffix_name(from) + 1, stf_suffix_name(to) + 1);
    return 0;
}

/* Whether the one-element scale in slot S is exactly 1.0 (read from the input). */
static int is_one(int *one, stf__layer_work *w, const stf__tensor_slot *S, stf_err *err)
{
    unsigned char b[4] = { 0 };
    size_t n = S->in_dtype == STF_F32 ? 4 : 2;
    *one = 0;
    if (S->nelem != 1) return 0;
    int rc = stf_ckpt_read(b, w->b->p->c, S->src, 0, n, err);
    if (rc) return stf__err_prefix(err, "layer '%s': ", w->shown);
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                 (uint32_t)b[3] << 24;
    float f;
    if (S->in_dtype == STF_F32) memcpy(&f, &u, sizeof f);
    else if (S->in_dtype == STF_BF16) f = stf_bf16_to_f32((uint16_t)u);
    else f = stf_f16_to_f32((uint16_t)u);
    *one = f == 1.0f;
    return 0;
}

/* See plan_work.h. */
int stf__work_migrate_scaled_fp8(stf__layer_work *w, stf_err *err)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    stf__tensor_slot *SW = &w->s[STF_SFX_SCALE_WEIGHT], *SI = &w->s[STF_SFX_SCALE_INPUT];
    char msg[200];
    int rc;
    if (!SW->present && !SI->present) return 0;
    if (!W->present || W->dropped)
        return stf__work_refuse(w, err, "the layer has legacy scales but no weight");
    stf_format_id fmt;
    if (W->dtype == STF_F8_E4M3) fmt = STF_FMT_FLOAT8_E4M3FN;
    else if (W->dtype == STF_F8_E5M2) fmt = STF_FMT_FLOAT8_E5M2;
    else {
        snprintf(msg, sizeof msg, "the weight is %s, not F8_E4M3 or F8_E5M2",
                 stf_dtype_name(W->dtype));
        return stf__work_refuse(w, err, msg);
    }
    if (SW->present) {
        size_t pos = stf_model_layer_scaled_fp8(w->b->m, w->l);
        const stf_tensor_info *t =
            pos == SIZE_MAX ? NULL : stf_ckpt_tensor(w->b->p->c, stf_model_scaled_fp8_at(w->b->m, pos));
        if ((rc = move_scale(w, STF_SFX_SCALE_WEIGHT, STF_SFX_WEIGHT_SCALE, err))) return rc;
        memset(&w->spec, 0, sizeof w->spec);
        w->spec.format = stf_format_name(fmt);
        w->spec.full_precision_matrix_mult = t && t->nelem == 2;
        w->marker_change = MARKER_NEW;
        w->format = w->spec.format;
        stf__work_note(w, "marker %s%s", w->spec.format,
                       w->spec.full_precision_matrix_mult ? " with full_precision_matrix_mult"
                                                          : "");
    }
    if (SI->present) {
        int one = 0;
        if ((rc = is_one(&one, w, SI, err))) return rc;
        if (one) {
            SI->dropped = 1;
            stf__work_note(w, "scale_input dropped (1.0)%s%s", "", "");
        } else if ((rc = move_scale(w, STF_SFX_SCALE_INPUT, STF_SFX_INPUT_SCALE, err))) {
            return rc;
        }
    }
    return 0;
}
