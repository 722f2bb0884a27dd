/*
 * metadata-prefix-mismatch (stfix-defects(7), DEFECTS): a layer that is only
 * a metadata marker, renamed onto a layer without one, merges into it. Which
 * layers merge is found before any rule sees a layer (stf__merges_find),
 * narrowed by a repair recipe's gate (stf__merges_gate); the target is then
 * planned as if its marker were its own (stf__merged_layer), and the marker's
 * own record says where it went (stf__merged_record).
 */
#include <string.h>

#include "pipeline/plan_internal.h"

/* The prefix after the rename actions among acts[0..n), in order, and its
 * length in *out_len; NULL when out of memory. */
static char *renamed_prefix(const stf_layer *l, const stf__matched_action *acts, size_t n,
                            size_t *out_len)
{
    char *name = stf__strndup(l->prefix, l->prefix_len);
    *out_len = l->prefix_len;
    for (size_t i = 0; name && i < n; i++) {
        if (acts[i].a->kind != STF_ACT_RENAME) continue;
        int hit;
        char *nn = stf__rename_apply(acts[i].a, name, *out_len, out_len, &hit);
        if (!hit) continue;
        stf__free(name);
        name = nn;
    }
    return name;
}

static int has_tensors(const stf_layer *l)
{
    for (int sx = 0; sx < STF_SFX_COUNT; sx++)
        if (stf_layer_tensor(l, sx) >= 0) return 1;
    return 0;
}

/*
 * metadata-prefix-mismatch (stfix-defects(7), DEFECTS): _quantization_metadata
 * keyed by other prefixes than the tensors. A layer that is only a metadata
 * marker (no tensors) and whose rename actions turn its prefix into the prefix
 * of a layer without any marker MERGES into that layer: into[i] = target,
 * from[t] = source, SIZE_MAX elsewhere. Found before any rule sees the target,
 * so that every rule evaluates the target with the marker (stfix-rules(5)).
 */
int stf__merges_find(size_t *into, size_t *from, stf__plan_builder *b, stf__matched_action **acts,
                     size_t *cap, stf_err *err)
{
    const stf_model *m = b->m;
    size_t nl = stf_model_layer_count(m);
    stf__view_store store;
    memset(&store, 0, sizeof store);
    for (size_t i = 0; i < nl; i++) into[i] = from[i] = SIZE_MAX;
    int rc = 0;
    for (size_t i = 0; i < nl; i++) {
        stf__layer_tmp lt, tt;
        const stf_layer *l = stf__model_layer_at(m, i, &lt);
        if (!l->nmarkers || has_tensors(l)) continue;
        stf_layer_view v;
        size_t n = 0, t = 0;
        if ((rc = stf__plan_view(&v, &store, m, l, err))) break;
        v.rotation = stf__plan_rotation(l);
        rc = stf__recipe_parallel_style_run(&v.parallel, b->p->r, &v, &b->run, err);
        if (!rc) rc = stf__plan_collect(acts, &n, cap, b->p->r, &b->run, &v, err);
        stf__view_store_free(&store);
        if (rc) break;
        size_t nplen = 0;
        char *np = renamed_prefix(l, *acts, n, &nplen);
        if (!np) {
            rc = stf__err(err, STF_ENOMEM, "plan: out of memory");
            break;
        }
        if (stf__bytes_cmp(np, nplen, l->prefix, l->prefix_len) &&
            stf_model_find_layer(&t, m, np, nplen) == 0 &&
            t != i && from[t] == SIZE_MAX && stf__model_layer_at(m, t, &tt)->nmarkers == 0) {
            into[i] = t;
            from[t] = i;
        }
        stf__free(np);
    }
    stf__view_store_free(&store);
    return rc;
}

/*
 * Under a repair recipe's gate a merge happens only when a finding concerns
 * the marker or the layer it would join; both are then open. Otherwise the
 * marker stays where it is, as read.
 */
void stf__merges_gate(stf__gate *g, size_t *into, size_t *from, size_t nl)
{
    if (!g->on || g->all) return;
    for (size_t i = 0; i < nl; i++) {
        size_t t = into[i];
        if (t == SIZE_MAX) continue;
        if (g->want[i] || g->want[t]) {
            g->want[i] = g->want[t] = 1;
        } else {
            into[i] = SIZE_MAX;
            from[t] = SIZE_MAX;
        }
    }
}

/*
 * The public record of a layer merged into `target`: the rename actions that
 * moved it (the later ones, such as the drop of orphan markers, do not apply:
 * the layer no longer exists on its own) and no outputs of its own.
 */
int stf__merged_record(stf__plan_builder *b, const stf_layer *l, const stf_layer *target,
                       const stf__matched_action *acts, size_t n, stf_err *err)
{
    size_t keep = 0;
    for (size_t i = 0; i < n; i++)
        if (acts[i].a->kind == STF_ACT_RENAME) keep = i + 1;
    stf__player *pl = &b->cur;
    int rc = stf__plan_record_rules(b, pl, acts, keep, err);
    if (rc) return rc;
    stf_buf sum;
    char shown[STF__NAME_SHOWN];
    stf__buf_init(&sum);
    stf__buf_printf(&sum, "rename -> '%s'; marker merged into that layer",
                    stf__name_render(shown, sizeof shown, target->prefix, target->prefix_len));
    pl->out_prefix_store = stf__strndup(target->prefix, target->prefix_len);
    pl->summary_store = sum.oom ? NULL : sum.data;
    if (!pl->summary_store) stf__buf_free(&sum);
    if (!pl->out_prefix_store || !pl->summary_store)
        return stf__err(err, STF_ENOMEM, "layer '%s': out of memory",
                        stf__name_render(shown, sizeof shown, l->prefix, l->prefix_len));
    pl->pub.prefix = l->prefix; /* the model's, which the plan keeps */
    pl->pub.prefix_len = l->prefix_len;
    pl->pub.out_prefix = pl->out_prefix_store;
    pl->pub.out_prefix_len = target->prefix_len;
    pl->pub.summary = pl->summary_store;
    pl->pub.changed = 1;
    b->markers_changed = 1;
    return 0;
}


/* Layer i as the rules see it: a target of a merge carries its source's
 * markers. What it points to may lie in *lt and *st (stf__model_layer_at). */
const stf_layer *stf__merged_layer(const stf_model *m, const size_t *from, size_t i,
                                   stf_layer *merged, stf__layer_tmp *lt, stf__layer_tmp *st)
{
    const stf_layer *l = stf__model_layer_at(m, i, lt);
    if (from[i] == SIZE_MAX) return l;
    /* The target as if its marker had been keyed by its own prefix. */
    const stf_layer *src = stf__model_layer_at(m, from[i], st);
    *merged = *l;
    merged->markers = src->markers;
    merged->nmarkers = src->nmarkers;
    merged->conflict = src->conflict;
    merged->comfy = src->comfy;
    return merged;
}
