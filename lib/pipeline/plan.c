/*
 * stf_plan_build: recipe × model × probes → the per-layer plan. Every rule
 * sees the layer as read from the input (rules.h), except that a
 * metadata-only marker renamed onto a layer without a marker is merged into
 * it first (metadata-prefix-mismatch, plan_merge.c); a layer gets the actions
 * of every matching rule, in order, up to and including the first terminal
 * one. Tensors no layer owns are copied (renamed or dropped by the rules
 * that select their name). Outputs end in canonical writer order.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline/plan_internal.h"

/* Defaults: quant mode from the recipe, tau 0.99, probes inline. */
void stf_plan_opts_init_version(stf_plan_opts *o, unsigned version)
{
    /* Layout 1 ends before max_mem, layout 2 before progress
     * (layout 3 adds progress and speculate). */
    size_t size = version >= 3 ? sizeof *o : offsetof(stf_plan_opts, progress);
    if (!o || !stf__opts_reset_v(o, size, offsetof(stf_plan_opts, max_mem), version,
                                 STF_PLAN_OPTS_VERSION))
        return;
    o->quant_mode = STF_QMODE_CUDA;
    o->tau = 0.99;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *nv = stf__realloc(*v, nc * elem);
    if (!nv) return -1;
    memset((char *)nv + *cap * elem, 0, (nc - *cap) * elem);
    *v = nv;
    *cap = nc;
    return 0;
}

/* Append a zeroed output tensor (job and layer SIZE_MAX, src -1). */
int stf__builder_add_out(stf__plan_builder *b, size_t *out, stf_err *err)
{
    if (grow((void **)&b->p->outs, &b->outs_cap, b->p->nouts + 1, sizeof *b->p->outs))
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    stf__out *o = &b->p->outs[b->p->nouts];
    memset(o, 0, sizeof *o);
    o->job = SIZE_MAX;
    o->pub.layer = SIZE_MAX;
    o->pub.src = -1;
    *out = b->p->nouts++;
    return 0;
}

/* Append a zeroed job. */
int stf__builder_add_job(stf__plan_builder *b, size_t *out, stf_err *err)
{
    if (grow((void **)&b->p->jobs, &b->jobs_cap, b->p->njobs + 1, sizeof *b->p->jobs))
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    memset(&b->p->jobs[b->p->njobs], 0, sizeof *b->p->jobs);
    *out = b->p->njobs++;
    return 0;
}

/* Record a dropped input tensor name (copied with its length). */
int stf__builder_drop(stf__plan_builder *b, const char *name, size_t len, stf_err *err)
{
    if (grow((void **)&b->p->dropped, &b->dropped_cap, b->p->ndropped + 1,
             sizeof *b->p->dropped) ||
        grow((void **)&b->p->dropped_len, &b->dropped_len_cap, b->p->ndropped + 1,
             sizeof *b->p->dropped_len))
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    char *s = stf__strndup(name, len);
    if (!s) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    b->p->dropped_len[b->p->ndropped] = len;
    b->p->dropped[b->p->ndropped++] = s;
    return 0;
}

/* Record an output layer's marker text for _quantization_metadata (copied). */
int stf__builder_add_qmeta(stf__plan_builder *b, const char *prefix, size_t plen, const char *text,
                           stf_err *err)
{
    if (grow((void **)&b->qm_prefix, &b->qm_cap, b->nqm + 1, sizeof *b->qm_prefix) ||
        grow((void **)&b->qm_prefix_len, &b->qml_cap, b->nqm + 1, sizeof *b->qm_prefix_len))
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    if (grow((void **)&b->qm_text, &b->qmt_cap, b->nqm + 1, sizeof *b->qm_text))
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    char *p = stf__strndup(prefix, plen), *t = stf__strdup(text);
    if (!p || !t) {
        stf__free(p);
        stf__free(t);
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    }
    b->qm_prefix[b->nqm] = p;
    b->qm_prefix_len[b->nqm] = plen;
    b->qm_text[b->nqm] = t;
    b->nqm++;
    return 0;
}

static int name_cmp(const stf_plan_tensor_info *a, const stf_plan_tensor_info *b)
{
    return stf__bytes_cmp(a->name, a->name_len, b->name, b->name_len);
}

/* Canonical writer order: dtype index descending, then name bytes. */
int stf__plan_out_cmp(const stf__out *a, const stf__out *b)
{
    if (a->pub.dtype != b->pub.dtype) return a->pub.dtype > b->pub.dtype ? -1 : 1;
    return name_cmp(&a->pub, &b->pub);
}

static int out_qcmp(const void *x, const void *y)
{
    return stf__plan_out_cmp(*(const stf__out *const *)x, *(const stf__out *const *)y);
}

/* By name, then input index, so a collision is reported the same way every run. */
static int name_qcmp(const void *x, const void *y)
{
    const stf__out *a = *(const stf__out *const *)x, *b = *(const stf__out *const *)y;
    int c = name_cmp(&a->pub, &b->pub);
    if (c) return c;
    return (a->pub.src > b->pub.src) - (a->pub.src < b->pub.src);
}

/* Frees everything; no-op on NULL. */
void stf_plan_free(stf_plan *p)
{
    if (!p) return;
    stf__rec_free(p);
    for (size_t i = 0; i < p->nouts; i++) {
        stf__free((char *)p->outs[i].pub.name);
        stf__free(p->outs[i].bytes);
        stf__free(p->outs[i].group);
    }
    stf__free(p->outs);
    stf__free(p->jobs);
    for (size_t i = 0; i < p->ndropped; i++) stf__free(p->dropped[i]);
    stf__free(p->dropped);
    stf__free(p->dropped_len);
    for (size_t i = 0; i < p->nmeta; i++) {
        stf__free((char *)p->meta[i].key);
        stf__free((char *)p->meta[i].value);
    }
    stf__free(p->meta);
    for (size_t i = 0; i < p->nqmeta; i++) {
        stf__free(p->qmeta_prefix[i]);
        stf__free(p->qmeta_text[i]);
    }
    stf__free(p->qmeta_prefix);
    stf__free(p->qmeta_prefix_len);
    stf__free(p->qmeta_text);
    stf_model_free(p->model);
    stf__free(p->guess);
    stf__free(p);
}

/* A tensor no layer owns: copied, renamed or dropped by the rules selecting its name. */
static int plan_other(stf__plan_builder *b, size_t ti, stf__matched_action **acts, size_t *cap,
                      stf_err *err)
{
    const stf_tensor_info *t = stf_ckpt_tensor(b->p->c, ti);
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.prefix = t->name;
    v.prefix_len = t->name_len;
    size_t n = 0, len = t->name_len;
    /* A repair recipe leaves it as read unless a finding names no layer. */
    int rc = b->gate.on && !b->gate.all
                 ? 0
                 : stf__plan_collect(acts, &n, cap, b->p->r, &b->run, &v, err);
    if (rc) return rc;
    char *name = stf__strndup(t->name, t->name_len);
    if (!name) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    for (size_t i = 0; i < n; i++) {
        const stf_action *a = (*acts)[i].a;
        if (a->kind == STF_ACT_DROP) {
            stf__free(name);
            return stf__builder_drop(b, t->name, t->name_len, err);
        }
        if (a->kind != STF_ACT_RENAME) continue;
        int hit;
        size_t nlen = 0;
        char *nn = stf__rename_apply(a, name, len, &nlen, &hit);
        if (!hit) continue;
        stf__free(name);
        if (!nn) return stf__err(err, STF_ENOMEM, "plan: out of memory");
        name = nn;
        len = nlen;
    }
    size_t oi;
    if ((rc = stf__builder_add_out(b, &oi, err))) {
        stf__free(name);
        return rc;
    }
    stf__out *o = &b->p->outs[oi];
    o->pub.name = name;
    o->pub.name_len = len;
    o->pub.dtype = t->dtype;
    o->pub.rank = t->rank;
    for (unsigned r = 0; r < t->rank && r < STF_MAX_RANK_HARD; r++) o->shape_store[r] = t->shape[r];
    o->pub.shape = o->shape_store;
    o->pub.nbytes = t->nbytes;
    o->pub.op = STF_OUT_COPY;
    o->pub.src = (int64_t)ti;
    o->cast_from = t->dtype;
    return 0;
}

/* The input name an output is made from, escaped, or "(new)". */
static const char *src_shown(char buf[STF__NAME_SHOWN], const stf_plan *p, const stf__out *o)
{
    if (o->pub.src < 0) return "(new)";
    const stf_tensor_info *t = stf_ckpt_tensor(p->c, (size_t)o->pub.src);
    return stf__name_render(buf, STF__NAME_SHOWN, t->name, t->name_len);
}

/* Two outputs with one name: the rename (or an action) collided. */
static int check_collisions(stf_plan *p, stf_err *err)
{
    int rc = 0;
    if (p->nouts < 2) return 0;
    stf__out **v = stf__calloc(p->nouts, sizeof *v);
    if (!v) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    for (size_t i = 0; i < p->nouts; i++) v[i] = &p->outs[i];
    qsort(v, p->nouts, sizeof *v, name_qcmp);
    for (size_t i = 1; i < p->nouts; i++) {
        if (name_cmp(&v[i - 1]->pub, &v[i]->pub)) continue;
        char a[STF__NAME_SHOWN], b2[STF__NAME_SHOWN], to[STF__NAME_SHOWN];
        rc = stf__err(err, STF_EFORMAT, "output name collision: '%s' and '%s' both become '%s'",
                      src_shown(a, p, v[i - 1]), src_shown(b2, p, v[i]),
                      stf__name_render(to, sizeof to, v[i]->pub.name, v[i]->pub.name_len));
        break;
    }
    stf__free(v);
    return rc;
}

/* Sort outputs into writer order and re-point jobs at the new indices. */
static int sort_outs(stf_plan *p, stf_err *err)
{
    if (!p->nouts) return 0;
    stf__out **v = stf__calloc(p->nouts, sizeof *v);
    stf__out *nv = stf__calloc(p->nouts, sizeof *nv);
    size_t *where = stf__calloc(p->nouts, sizeof *where);
    if (!v || !nv || !where) {
        stf__free(v);
        stf__free(nv);
        stf__free(where);
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    }
    for (size_t i = 0; i < p->nouts; i++) v[i] = &p->outs[i];
    qsort(v, p->nouts, sizeof *v, out_qcmp);
    for (size_t i = 0; i < p->nouts; i++) {
        nv[i] = *v[i];
        nv[i].pub.shape = nv[i].shape_store;
        where[(size_t)(v[i] - p->outs)] = i;
    }
    for (size_t j = 0; j < p->njobs; j++) {
        if (p->jobs[j].out_weight != SIZE_MAX) p->jobs[j].out_weight = where[p->jobs[j].out_weight];
        if (p->jobs[j].out_scale != SIZE_MAX) p->jobs[j].out_scale = where[p->jobs[j].out_scale];
    }
    stf__free(p->outs);
    p->outs = nv;
    stf__free(v);
    stf__free(where);
    return 0;
}

/* Whether, with verdict g, the layer's actions make a job that reads its weight. */
static int job_under(stf_layer_view *v, stf_probe_verdict g, stf__plan_builder *b,
                     stf__matched_action **acts, size_t *cap, stf_err *err)
{
    size_t n = 0;
    v->probe = g;
    int rc = stf__plan_collect(acts, &n, cap, b->p->r, &b->run, v, err), job = 0;
    v->probe = STF_PROBE_UNKNOWN;
    for (size_t i = 0; !rc && i < n; i++)
        job |= (*acts)[i].a->kind == STF_ACT_REQUANTIZE || (*acts)[i].a->kind == STF_ACT_EXCLUDE;
    return job;
}

/*
 * Layer i needs a verdict: give it the known one, or (speculating) the one
 * its scale's shape suggests when the layer is then requantized or
 * dequantized, recorded for the run to confirm; else mark it for probing.
 */
static int want_verdict(stf__probe_ahead *pa, stf__plan_builder *b, size_t i,
                        const stf_layer *l, stf_layer_view *v, const stf_probe_verdict *known,
                        stf__matched_action **acts, size_t *cap, stf_err *scratch)
{
    stf_plan *p = b->p;
    size_t wi = 0, si = 0;
    if (known && known[i] != STF_PROBE_COUNT) {
        stf__probe_ahead_set(pa, i, known[i]);
        return 0;
    }
    stf_probe_verdict g = b->o->version >= 3 && b->o->speculate && !known
                              ? stf__probe_shape_guess(b->m, l, &wi, &si)
                              : STF_PROBE_COUNT;
    if (g == STF_PROBE_COUNT || !job_under(v, g, b, acts, cap, scratch)) {
        stf__probe_ahead_want(pa, i, l);
        return 0;
    }
    stf__guess *ng = stf__realloc(p->guess, (p->nguess + 1) * sizeof *ng);
    if (!ng) return -1;
    p->guess = ng;
    ng[p->nguess++] = (stf__guess){ i, wi, si, g };
    stf__probe_ahead_set(pa, i, g);
    return 0;
}

/*
 * Mark the layers the plan will probe, with the decisions of the plan loop
 * below (rules that depend on the verdict, then actions that need it),
 * give them their known or assumed verdicts (want_verdict), then probe the
 * rest ahead on the pool. A failure of the rules here stops the
 * marking: the plan loop meets it again at that layer.
 */
static int probe_ahead(stf__probe_ahead *pa, stf__plan_builder *b, const size_t *from,
                       const stf_probe_verdict *known, stf__matched_action **acts, size_t *cap,
                       stf_err *err)
{
    const stf_model *m = b->m;
    size_t nl = stf_model_layer_count(m);
    stf__view_store store;
    stf_err scratch;
    memset(&store, 0, sizeof store);
    int rc = stf__probe_ahead_init(pa, nl, err);
    for (size_t i = 0; i < nl && !rc; i++) {
        stf_layer merged;
        stf__layer_tmp lt, st;
        const stf_layer *l = stf__merged_layer(m, from, i, &merged, &lt, &st);
        stf_layer_view v;
        size_t n = 0;
        int need = 0, r2 = stf__plan_view(&v, &store, m, l, &scratch);
        if (!r2) {
            v.rotation = stf__plan_rotation(l);
            r2 = stf__recipe_parallel_style_run(&v.parallel, b->p->r, &v, &b->run, &scratch);
            if (!r2) r2 = stf__plan_need_probe(&need, b->p->r, &b->run, &v, &scratch);
        }
        /* A layer the gate closes is probed only for the rules' sake. */
        if (!r2 && !need && stf__gate_open(&b->gate, i)) {
            r2 = stf__plan_collect(acts, &n, cap, b->p->r, &b->run, &v, &scratch);
            need = !r2 && stf__plan_acts_need_probe(*acts, n, &v);
        }
        if (!r2 && need && want_verdict(pa, b, i, l, &v, known, acts, cap, &scratch))
            rc = stf__err(err, STF_ENOMEM, "plan: out of memory");
        stf__view_store_free(&store);
        if (r2) break;
    }
    if (!rc) rc = stf__probe_ahead_run(pa, b->o, m, err);
    return rc;
}

/* The plan, with the verdicts of known[] (per layer; STF_PROBE_COUNT: none) or NULL. */
static int build(stf_plan **out, const stf_ckpt *c, const stf_recipe *r, const stf_plan_opts *o,
                 const stf_probe_verdict *known, uint64_t regex_left, stf_err *err)
{
    int rc = 0;
    stf_plan_opts defo;
    stf__plan_builder b;
    stf__matched_action *acts = NULL;
    size_t acap = 0;
    stf__view_store store;
    size_t *into = NULL, *from = NULL;
    stf__probe_ahead ahead;
    memset(&ahead, 0, sizeof ahead);
    memset(&b, 0, sizeof b);
    memset(&store, 0, sizeof store);
    *out = NULL;
    if (!c || !r) return stf__err(err, STF_EINVAL, "stf_plan_build: NULL checkpoint or recipe");
    if (!o) {
        stf_plan_opts_init(&defo);
        o = &defo;
    }
    /* Layouts 1 (before max_mem) and 2 (before progress) are accepted too;
     * stf__plan_probe_block reads max_mem from layout 2 on, the probes
     * progress from layout 3 on. */
    if ((rc = stf__opts_version(err, o->version, STF_PLAN_OPTS_VERSION, "stf_plan_opts")))
        return rc;
    stf_plan *p = stf__calloc(1, sizeof *p);
    if (!p) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    p->c = c;
    p->r = r;
    p->targets = stf_recipe_targets(r);
    stf_plan_opts_init(&p->opts);
    p->opts.quant_mode_set = o->quant_mode_set;
    p->opts.quant_mode = o->quant_mode;
    p->opts.tau = o->tau;
    p->opts.pool = o->pool;
    if (o->version >= 2) p->opts.max_mem = o->max_mem;
    b.p = p;
    b.o = o;
    b.last_rset = STF__REC_NONE;
    stf__rec_reset(&b.cur);
    if ((rc = stf__rules_run_init(&b.run, r, regex_left, err))) goto done;
    if ((rc = stf_model_build(&p->model, c, err))) goto done;
    b.m = p->model;
    size_t nl = stf_model_layer_count(p->model);
    if (nl) {
        p->recs = stf__calloc(nl, sizeof *p->recs);
        if (!p->recs) {
            rc = stf__err(err, STF_ENOMEM, "plan: out of memory");
            goto done;
        }
    }
    if (nl) {
        into = stf__calloc(nl, sizeof *into);
        from = stf__calloc(nl, sizeof *from);
        if (!into || !from) {
            rc = stf__err(err, STF_ENOMEM, "plan: out of memory");
            goto done;
        }
        if ((rc = stf__merges_find(into, from, &b, &acts, &acap, err))) goto done;
    }
    if ((rc = stf__gate_init(&b.gate, c, p->model, r, o->pool, err))) goto done;
    p->gated = b.gate.on;
    stf__merges_gate(&b.gate, into, from, nl);
    if (nl && (rc = probe_ahead(&ahead, &b, from, known, &acts, &acap, err))) goto done;
    for (size_t i = 0; i < nl; i++) {
        stf_layer merged;
        stf__layer_tmp lt, st, tt;
        const stf_layer *l = stf__merged_layer(p->model, from, i, &merged, &lt, &st);
        b.merged = from[i] != SIZE_MAX;
        stf_layer_view v;
        size_t n = 0;
        if ((rc = stf__plan_view(&v, &store, p->model, l, err))) goto done;
        v.rotation = stf__plan_rotation(l);
        if ((rc = stf__recipe_parallel_style_run(&v.parallel, r, &v, &b.run, err))) goto done;
        int probed = 0, need;
        if ((rc = stf__plan_need_probe(&need, r, &b.run, &v, err))) goto done;
        if (need) {
            if ((rc = stf__probe_ahead_get(&v.probe, &ahead, o, p->model, i, l, err))) goto done;
            probed = 1;
        }
        if (!stf__gate_open(&b.gate, i) && !(probed && stf__h1_is_error(v.probe))) {
            b.leave = 1;
            rc = stf__plan_layer(&b, i, l, &v, acts, 0, err);
            b.leave = 0;
            if (rc || (rc = stf__gate_note(&b.cur, &b.gate, err))) goto done;
        } else {
            if ((rc = stf__plan_collect(&acts, &n, &acap, r, &b.run, &v, err))) goto done;
            if (!probed && stf__plan_acts_need_probe(acts, n, &v) &&
                (rc = stf__probe_ahead_get(&v.probe, &ahead, o, p->model, i, l, err)))
                goto done;
            if (into[i] != SIZE_MAX) {
                const stf_layer *t = stf__model_layer_at(p->model, into[i], &tt);
                if ((rc = stf__merged_record(&b, l, t, acts, n, err))) goto done;
            } else {
                if ((rc = stf__plan_record_rules(&b, &b.cur, acts, n, err))) goto done;
                if ((rc = stf__plan_layer(&b, i, l, &v, acts, n, err))) goto done;
            }
        }
        if ((rc = stf__rec_keep(&b, i, err))) goto done;
        p->nlayers = i + 1;
        stf__view_store_free(&store);
    }
    size_t no = stf_model_other_count(p->model);
    for (size_t i = 0; i < no; i++)
        if ((rc = plan_other(&b, stf_model_other(p->model, i), &acts, &acap, err))) goto done;
    if ((rc = check_collisions(p, err))) goto done;
    if ((rc = sort_outs(p, err))) goto done;
    if ((rc = stf__plan_meta(&b, err))) goto done;
    for (size_t i = 0; i < p->nouts; i++) {
        const stf__out *x = &p->outs[i];
        p->bytes_total += x->pub.nbytes;
        if (x->pub.op == STF_OUT_COPY || x->pub.op == STF_OUT_RESHAPE ||
            x->pub.op == STF_OUT_RELABEL)
            p->bytes_copied += x->pub.nbytes;
    }
done:
    p->regex_left = b.run.budget.left;
    stf__rules_run_free(&b.run);
    stf__view_store_free(&store);
    stf__probe_ahead_free(&ahead);
    stf__free(acts);
    stf__free(into);
    stf__free(from);
    for (size_t i = 0; i < b.nqm; i++) {
        stf__free(b.qm_prefix[i]);
        stf__free(b.qm_text[i]);
    }
    stf__free(b.qm_prefix);
    stf__free(b.qm_prefix_len);
    stf__free(b.qm_text);
    stf__peers_free(b.peers);
    stf__gate_free(&b.gate);
    stf__rec_reset(&b.cur);
    stf__free(b.khash);
    if (rc) {
        stf_plan_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* Build the plan (see include/stfix/pipeline.h). */
int stf_plan_build(stf_plan **out, const stf_ckpt *c, const stf_recipe *r,
                   const stf_plan_opts *o, stf_err *err)
{
    return build(out, c, r, o, NULL, UINT64_MAX, err);
}

/* Contract in plan_internal.h. */
int stf__plan_rebuild(stf_plan *p, const stf_probe_verdict *v, stf_err *err)
{
    size_t nl = stf_model_layer_count(p->model);
    stf_probe_verdict *known = stf__malloc((nl ? nl : 1) * sizeof *known);
    if (!known) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    for (size_t i = 0; i < nl; i++) known[i] = STF_PROBE_COUNT;
    for (size_t i = 0; i < p->nguess; i++) known[p->guess[i].layer] = v[i];
    stf_plan *np = NULL;
    int rc = build(&np, p->c, p->r, &p->opts, known, p->regex_left, err);
    stf__free(known);
    if (rc) return rc;
    stf_plan tmp = *p;
    *p = *np;
    *np = tmp;
    stf_plan_free(np);
    return 0;
}
