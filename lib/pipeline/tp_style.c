/*
 * The tensor-parallel style of a model layer: the layer seen as a recipe's
 * selectors see it (stf_layer_view), classified by a parallel-style
 * profile; and the detection of the profile that fits a checkpoint's
 * layer names (stfix-rules(5), PARALLEL STYLES).
 */
#include <stdint.h>
#include <string.h>

#include "pipeline/plan_internal.h"

/* Contract in pipeline.h: the stf_tp_style_fn of a profile (ctx). */
int stf_tp_layer_style(void *profile, const stf_model *m, const stf_layer *l,
                       stf_parallel_style *style, stf_err *err)
{
    stf_layer_view v;
    stf__view_store store;
    *style = STF_PARALLEL_UNKNOWN;
    if (!profile || !m || !l) return 0;
    int rc = stf__plan_view(&v, &store, m, l, err);
    if (rc) return rc;
    v.rotation = stf__plan_rotation(l);
    rc = stf_tp_profile_style(style, (const stf_tp_profile *)profile, &v, err);
    stf__view_store_free(&store);
    return rc;
}

/* Contract in pipeline.h: the profile classifying most Linear layers. */
int stf_tp_profile_detect(size_t *best, size_t *classified, size_t *linear,
                          const stf_tp_profile *const *profiles, size_t n, const stf_model *m,
                          stf_err *err)
{
    *best = SIZE_MAX;
    *classified = 0;
    *linear = 0;
    size_t nl = stf_model_layer_count(m);
    for (size_t li = 0; li < nl; li++) {
        stf__layer_tmp lt;
        const stf_tensor_info *w = stf_layer_tensor_info(m, stf__model_layer_at(m, li, &lt), STF_SFX_WEIGHT);
        if (w && w->rank == 2) (*linear)++;
    }
    for (size_t i = 0; i < n; i++) {
        size_t got = 0;
        for (size_t li = 0; li < nl; li++) {
            stf__layer_tmp l_tmp;
            const stf_layer *l = stf__model_layer_at(m, li, &l_tmp);
            const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
            if (!w || w->rank != 2) continue;
            stf_parallel_style s;
            int rc = stf_tp_layer_style((void *)(uintptr_t)profiles[i], m, l, &s, err);
            if (rc) return rc;
            if (s != STF_PARALLEL_UNKNOWN) got++;
        }
        if (got > *classified) {
            *classified = got;
            *best = i;
        }
    }
    return 0;
}
