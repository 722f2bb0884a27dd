/*
 * What a recipe's rules make of one layer's view: the matched actions, in
 * order (stf__plan_collect), and whether the H1 verdict is needed, because
 * some rule's choice depends on it (stf__plan_need_probe) or an action
 * reads it (stf__plan_acts_need_probe).
 */
#include <string.h>

#include "pipeline/plan_internal.h"

/* *need: whether some rule's verdict on this view depends on the H1 probe. */
int stf__plan_need_probe(int *need, const stf_recipe *r, stf__rules_run *run, stf_layer_view *v,
                         stf_err *err)
{
    *need = 0;
    int rc = 0;
    size_t nr = stf_recipe_rule_count(r);
    for (size_t i = 0; i < nr && !rc && !*need; i++) {
        const stf_rule *rule = stf_recipe_rule(r, i);
        int base, m;
        v->probe = STF_PROBE_UNKNOWN;
        rc = stf__rules_match_run(&base, rule, v, run, err);
        for (stf_probe_verdict pv = STF_PROBE_ROW; pv < STF_PROBE_COUNT && !rc && !*need; pv++) {
            v->probe = pv;
            rc = stf__rules_match_run(&m, rule, v, run, err);
            *need = !rc && m != base;
        }
    }
    v->probe = STF_PROBE_UNKNOWN;
    return rc;
}

/* Matched actions of every rule in order, up to and including the first terminal one. */
int stf__plan_collect(stf__matched_action **acts, size_t *nacts, size_t *cap, const stf_recipe *r,
                      stf__rules_run *run, const stf_layer_view *v, stf_err *err)
{
    *nacts = 0;
    size_t nr = stf_recipe_rule_count(r);
    for (size_t i = 0; i < nr; i++) {
        const stf_rule *rule = stf_recipe_rule(r, i);
        int hit;
        int rc = stf__rules_match_run(&hit, rule, v, run, err);
        if (rc) return rc;
        if (!hit) continue;
        size_t na = stf_rule_action_count(rule);
        int term = 0;
        for (size_t j = 0; j < na; j++) {
            if (*nacts == *cap) {
                size_t nc = *cap ? *cap * 2 : 16;
                stf__matched_action *nv = stf__realloc(*acts, nc * sizeof *nv);
                if (!nv) return stf__err(err, STF_ENOMEM, "plan: out of memory");
                *acts = nv;
                *cap = nc;
            }
            (*acts)[*nacts].a = stf_rule_action(rule, j);
            (*acts)[*nacts].rule = rule;
            (*nacts)++;
            if (stf_action_is_terminal(stf_rule_action(rule, j)->kind)) {
                term = 1;
                break;
            }
        }
        if (term) break;
    }
    return 0;
}

/* Whether v is an FP8 weight whose scale holds N values (a legacy
 * scale_weight, which the view does not show, is probed too). */
static int fp8_n_scales(const stf_layer_view *v)
{
    if (v->weight_dtype != STF_F8_E4M3 && v->weight_dtype != STF_F8_E5M2) return 0;
    if (!v->has_scale) return 1;
    uint64_t ne = 1;
    for (unsigned i = 0; i < v->scale_rank; i++) ne *= v->scale_shape[i];
    return ne == v->n;
}

int stf__plan_acts_need_probe(const stf__matched_action *acts, size_t n, const stf_layer_view *v)
{
    for (size_t i = 0; i < n; i++) {
        const stf_action *a = acts[i].a;
        if (a->kind == STF_ACT_TRANSPOSE_SCALE) return 1;
        if (a->kind == STF_ACT_RESHAPE_SCALE && a->params.reshape_scale.to == STF_SCALE_ROWS &&
            (a->params.reshape_scale.require_probe || v->n == v->k))
            return 1;
        if ((a->kind == STF_ACT_REQUANTIZE || a->kind == STF_ACT_EXCLUDE) && v->n == v->k &&
            v->has_scale && v->weight_dtype == STF_I8)
            return 1;
        /* A square FP8 weight with N scales: H1 on its codes tells rows
         * from columns (stfix-defects(7), ROW AND COLUMN DETECTION). */
        if ((a->kind == STF_ACT_REQUANTIZE || a->kind == STF_ACT_EXCLUDE) && v->n == v->k &&
            v->n > 1 && fp8_n_scales(v))
            return 1;
    }
    return 0;
}
