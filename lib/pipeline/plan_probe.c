/*
 * The H1 probes of a plan, ahead of it and in parallel: stf_plan_build
 * first finds the layers whose rules or actions need a verdict (the rules
 * see only the header), then their weights are probed across the pool,
 * then the plan is built in layer order with the verdicts at hand. Each
 * weight is read once; the plan, and the error reported when a probe fails
 * (the first failing layer's in plan order), do not depend on the thread
 * count. Contract in plan_internal.h.
 */
#include <string.h>

#include "pipeline/plan_internal.h"

int stf__probe_ahead_init(stf__probe_ahead *pa, size_t nl, stf_err *err)
{
    memset(pa, 0, sizeof *pa);
    pa->nl = nl;
    pa->failed = SIZE_MAX;
    if (!nl) return 0;
    pa->mark = stf__calloc(nl, 1);
    pa->verdict = stf__calloc(nl, 1);
    if (!pa->mark || !pa->verdict) {
        stf__probe_ahead_free(pa);
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    }
    return 0;
}

void stf__probe_ahead_want(stf__probe_ahead *pa, size_t li, const stf_layer *l)
{
    if (li < pa->nl) pa->mark[li] = (unsigned char)(stf__plan_probe_w4(l) ? 2 : 1);
}

typedef struct ahead_job {
    stf__probe_ahead *pa;
    const stf_plan_opts *o;
    const stf_model *m;
    const size_t *which;
    stf__progress *pg;
} ahead_job;

/* The bytes of l's weight: what a layer's probe counts for progress. */
static uint64_t weight_bytes(const stf_model *m, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    return w ? w->nbytes : 0;
}

static int ahead_item(void *ud, size_t i, stf_err *err)
{
    ahead_job *j = ud;
    size_t li = j->which[i];
    stf_probe_verdict v;
    stf__layer_tmp lt;
    const stf_layer *l = stf__model_layer_at(j->m, li, &lt);
    int rc = stf__plan_probe_h1(&v, j->o, j->m, l, j->pa->mark[li] == 2, err);
    if (!rc) j->pa->verdict[li] = (unsigned char)(v + 1);
    stf__progress_add(j->pg, weight_bytes(j->m, l), l->prefix, l->prefix_len);
    return rc;
}

int stf__probe_ahead_run(stf__probe_ahead *pa, const stf_plan_opts *o, const stf_model *m,
                         stf_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < pa->nl; i++) n += pa->mark[i] == 1 || pa->mark[i] == 2;
    if (!n) return 0;
    size_t *which = stf__calloc(n, sizeof *which);
    if (!which) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    n = 0;
    for (size_t i = 0; i < pa->nl; i++)
        if (pa->mark[i] == 1 || pa->mark[i] == 2) which[n++] = i;
    stf__progress pg;
    uint64_t total = 0;
    int on = o->version >= 3 && o->progress;
    for (size_t i = 0; on && i < n; i++) {
        stf__layer_tmp lt;
        total += weight_bytes(m, stf__model_layer_at(m, which[i], &lt));
    }
    stf__progress_init(&pg, on ? o->progress : NULL, on ? o->progress_ud : NULL, total);
    ahead_job j = { pa, o, m, which, &pg };
    size_t failed;
    int rc = stf__pool_each(o->pool, n, ahead_item, &j, &failed, &pa->failed_err);
    if (!rc) stf__progress_end(&pg);
    if (rc && failed != SIZE_MAX) {
        /* Reported when the plan reaches that layer. */
        pa->failed = which[failed];
        pa->failed_rc = rc;
        rc = 0;
    } else if (rc && err) {
        *err = pa->failed_err;
    }
    stf__free(which);
    return rc;
}

int stf__probe_ahead_get(stf_probe_verdict *out, const stf__probe_ahead *pa,
                         const stf_plan_opts *o, const stf_model *m, size_t li,
                         const stf_layer *l, stf_err *err)
{
    if (li < pa->nl && pa->verdict[li]) {
        *out = (stf_probe_verdict)(pa->verdict[li] - 1);
        return 0;
    }
    if (li == pa->failed) {
        *out = STF_PROBE_UNKNOWN;
        if (err) *err = pa->failed_err;
        return pa->failed_rc;
    }
    return stf__plan_probe_h1(out, o, m, l, stf__plan_probe_w4(l), err);
}

void stf__probe_ahead_set(stf__probe_ahead *pa, size_t li, stf_probe_verdict v)
{
    if (li >= pa->nl) return;
    pa->mark[li] = 3;
    pa->verdict[li] = (unsigned char)(v + 1);
}

/* Contract in plan_internal.h: the layers H1 reads as INT8 or FP8 codes
 * (probes.c). */
stf_probe_verdict stf__probe_shape_guess(const stf_model *m, const stf_layer *l, size_t *wi,
                                         size_t *si)
{
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *s = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT_SCALE);
    if (stf__plan_probe_w4(l) || !w ||
        (w->dtype != STF_I8 && w->dtype != STF_F8_E4M3 && w->dtype != STF_F8_E5M2) ||
        w->rank != 2 || !s || !w->nelem)
        return STF_PROBE_COUNT;
    *wi = (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT);
    *si = (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT_SCALE);
    /* A [1, K] scale lies along the input axis, even on a square layer. */
    if (s->rank == 2 && s->shape[0] == 1 && s->shape[1] == w->shape[1] && w->shape[0] > 1)
        return STF_PROBE_COLUMN;
    if (s->nelem == w->shape[0]) return STF_PROBE_ROW;
    if (s->nelem == w->shape[1]) return STF_PROBE_COLUMN;
    return STF_PROBE_COUNT;
}

void stf__probe_ahead_free(stf__probe_ahead *pa)
{
    stf__free(pa->mark);
    stf__free(pa->verdict);
    pa->mark = pa->verdict = NULL;
}
