/*
 * The H1 verdicts a speculating plan assumed (stf_plan_opts.speculate),
 * confirmed by its run: each such layer's job hands the codes it reads to
 * an H1 accumulator, so the weight is read once for the probe and the
 * requantization together; a layer whose job left rows out (wide rows) is
 * probed on its own. The verdicts are those stf_plan_build would have
 * measured: the same counts, the same decision (probes.c). The first
 * verdict that is not the one assumed stops the run at once: the jobs
 * after it would only be redone.
 */
#include <string.h>

#include "pipeline/run_internal.h"

/* Contract in run_internal.h. */
int stf__guesses_init(stf__guesses *g, const stf_plan *p, stf_err *err)
{
    memset(g, 0, sizeof g[0]);
    if (!p->nguess) return 0;
    g->acc = stf__calloc(p->nguess, sizeof *g->acc);
    g->v = stf__calloc(p->nguess, sizeof *g->v);
    if (!g->acc || !g->v) {
        stf__guesses_free(g);
        return stf__err(err, STF_ENOMEM, "run: out of memory");
    }
    g->n = p->nguess;
    for (size_t i = 0; i < g->n; i++) g->v[i] = STF_PROBE_COUNT;
    return 0;
}

/* Contract in run_internal.h. */
int stf__guesses_for(stf__h1_acc **out, size_t *gi, stf__guesses *g, const stf_plan *p,
                     const stf__job *job, stf_err *err)
{
    *out = NULL;
    *gi = SIZE_MAX;
    const stf__decode *d = &job->dec;
    if (!(d->kind == STF__DEC_INT8 && d->w_dtype == STF_I8) &&
        !(d->kind == STF__DEC_FP8 && (d->w_dtype == STF_F8_E4M3 || d->w_dtype == STF_F8_E5M2)))
        return 0;
    for (size_t i = 0; i < g->n; i++) {
        const stf__guess *gu = &p->guess[i];
        const stf_tensor_info *w = stf_ckpt_tensor(p->c, gu->wi);
        if (gu->wi != d->w_idx || g->acc[i].live || g->v[i] != STF_PROBE_COUNT ||
            d->n != w->shape[0] || d->k != w->shape[1])
            continue;
        int rc = stf__h1_acc_init(&g->acc[i], w, err);
        if (rc) return rc;
        *out = &g->acc[i];
        *gi = i;
        return 0;
    }
    return 0;
}

/* Contract in run_internal.h. */
int stf__guesses_measure(int *same, stf__guesses *g, const stf_plan *p, size_t i, stf_err *err)
{
    const stf__guess *gu = &p->guess[i];
    stf_h1_result h;
    int rc = stf__probe_h1_rows(&h, p->c, gu->wi, gu->si, g->acc[i].live ? &g->acc[i] : NULL,
                                p->opts.tau, err);
    stf__h1_acc_free(&g->acc[i]);
    if (rc) {
        stf__layer_tmp lt;
        const stf_layer *l = stf__model_layer_at(p->model, gu->layer, &lt);
        char shown[STF__NAME_SHOWN];
        return stf__err_prefix(err, "probe of layer '%s': ",
                               stf__name_render(shown, sizeof shown, l->prefix, l->prefix_len));
    }
    g->v[i] = h.verdict;
    *same = h.verdict == gu->v;
    return 0;
}

/* Contract in run_internal.h. */
int stf__guesses_rest(int *same, stf__guesses *g, const stf_plan *p, stf_err *err)
{
    *same = 1;
    for (size_t i = 0; i < g->n && *same; i++) {
        if (g->v[i] != STF_PROBE_COUNT) continue;
        int rc = stf__guesses_measure(same, g, p, i, err);
        if (rc) return rc;
    }
    return 0;
}

/* Contract in run_internal.h. */
void stf__guesses_free(stf__guesses *g)
{
    for (size_t i = 0; g->acc && i < g->n; i++) stf__h1_acc_free(&g->acc[i]);
    stf__free(g->acc);
    stf__free(g->v);
    memset(g, 0, sizeof *g);
}
