/*
 * Read-only accessors of a plan (include/stfix/pipeline.h, plan section).
 * Out-of-range indices give NULL (or 0), never a crash.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "pipeline/plan_internal.h"

/* Name of an output op ("copy", ...); "?" when out of range. */
const char *stf_out_op_name(stf_out_op op)
{
    static const char *const names[] = { "copy", "reshape", "relabel", "cast", "new",
                                         "quant-weight", "quant-scale", "dequant" };
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

/* Layers of the plan, in model order (tensor order, then metadata-only prefixes). */
size_t stf_plan_layer_count(const stf_plan *p) { return p ? p->nlayers : 0; }

/*
 * Layer record i, its output prefix and summary made in buf where the plan
 * does not hold them (contract in include/stfix/experimental/pipeline.h).
 */
size_t stf_plan_layer_peek(const stf_plan *p, size_t i, stf_plan_layer_info *out, char *buf,
                           size_t cap)
{
    if (!p || !out || i >= p->nlayers) return SIZE_MAX;
    const stf__rec *r = &p->recs[i];
    const stf__rkind *k = &p->kinds[r->kind];
    stf__layer_tmp lt;
    const stf_layer *l = stf__model_layer_at(p->model, i, &lt);
    if (!l) return SIZE_MAX;
    memset(out, 0, sizeof *out);
    out->prefix = l->prefix; /* the model's, which the plan keeps */
    out->prefix_len = l->prefix_len;
    if (k->rset != STF__REC_NONE) {
        const stf__rset *rs = &p->rsets[k->rset];
        out->nrules = rs->nrules;
        out->rules = rs->rule_names;
        out->nactions = rs->nactions;
        out->actions = rs->acts;
    }
    out->requantize = k->requantize;
    out->format = k->format;
    out->group = k->group;
    out->mode = k->mode;
    out->changed = k->changed;
    const char *op;
    char *made = NULL;
    size_t olen;
    if (r->out) {
        op = p->outp[r->out - 1];
        olen = p->outp_len[r->out - 1];
    } else {
        made = stf__rec_out_prefix(p, i, l->prefix, l->prefix_len, &olen);
        if (!made) return SIZE_MAX;
        op = made;
    }
    out->out_prefix_len = olen;
    char shown[STF__NAME_SHOWN];
    const char *rn = k->hole != SIZE_MAX ? stf__name_render(shown, sizeof shown, op, olen) : "";
    size_t rlen = strlen(rn);
    size_t need = (made ? olen + 1 : 0) + (k->hole != SIZE_MAX ? k->sum_len + rlen + 1 : 0);
    if (need <= cap) {
        char *at = buf;
        out->out_prefix = op;
        if (made) {
            memcpy(at, made, olen + 1);
            out->out_prefix = at;
            at += olen + 1;
        }
        out->summary = k->sum;
        if (k->hole != SIZE_MAX) {
            memcpy(at, k->sum, k->hole);
            memcpy(at + k->hole, rn, rlen);
            memcpy(at + k->hole + rlen, k->sum + k->hole, k->sum_len - k->hole + 1);
            out->summary = at;
        }
    }
    stf__free(made);
    return need;
}

/* Layer record i, made when first asked and kept with the plan. */
const stf_plan_layer_info *stf_plan_layer(const stf_plan *p, size_t i)
{
    if (!p || i >= p->nlayers) return NULL;
    stf_plan *w = (stf_plan *)(uintptr_t)p; /* made once, by whichever thread asks first */
    _Atomic(stf_plan_layer_info *) *made = atomic_load(&w->made);
    if (!made) {
        _Atomic(stf_plan_layer_info *) *fresh = stf__calloc(p->nlayers, sizeof *fresh);
        if (!fresh) return NULL;
        _Atomic(stf_plan_layer_info *) *none = NULL;
        if (atomic_compare_exchange_strong(&w->made, &none, fresh)) {
            made = fresh;
        } else {
            stf__free((void *)fresh);
            made = none;
        }
    }
    stf_plan_layer_info *got = atomic_load(&made[i]);
    if (got) return got;
    stf_plan_layer_info probe;
    size_t need = stf_plan_layer_peek(p, i, &probe, NULL, 0);
    if (need == SIZE_MAX) return NULL;
    stf_plan_layer_info *x = stf__malloc(sizeof *x + need);
    if (!x) return NULL;
    if (stf_plan_layer_peek(p, i, x, (char *)(x + 1), need) != need) {
        stf__free(x);
        return NULL;
    }
    if (!atomic_compare_exchange_strong(&made[i], &got, x)) {
        stf__free(x);
        return got;
    }
    return x;
}

/* Output tensors in canonical writer order. */
size_t stf_plan_tensor_count(const stf_plan *p) { return p ? p->nouts : 0; }

const stf_plan_tensor_info *stf_plan_tensor(const stf_plan *p, size_t i)
{
    return p && i < p->nouts ? &p->outs[i].pub : NULL;
}

/* Input tensor names that are not written. */
size_t stf_plan_dropped_count(const stf_plan *p) { return p ? p->ndropped : 0; }

const char *stf_plan_dropped_n(const stf_plan *p, size_t i, size_t *len)
{
    if (!p || i >= p->ndropped) return NULL;
    if (len) *len = p->dropped_len[i];
    return p->dropped[i];
}

const char *stf_plan_dropped(const stf_plan *p, size_t i) { return stf_plan_dropped_n(p, i, NULL); }

/* Output __metadata__ entries, sorted by key bytes. */
size_t stf_plan_meta_count(const stf_plan *p) { return p ? p->nmeta : 0; }

const stf_meta_entry *stf_plan_meta(const stf_plan *p, size_t i)
{
    return p && i < p->nmeta ? &p->meta[i] : NULL;
}

/* Data bytes of the output, and how many of them are input bytes copied unchanged. */
uint64_t stf_plan_bytes_total(const stf_plan *p) { return p ? p->bytes_total : 0; }

uint64_t stf_plan_bytes_copied(const stf_plan *p) { return p ? p->bytes_copied : 0; }

/* STF_CONSUMER_* bits of the recipe. */
unsigned stf_plan_targets(const stf_plan *p) { return p ? p->targets : 0; }

/* Whether the output differs from the input (contract in pipeline.h). */
int stf_plan_changed(const stf_plan *p) { return p ? p->changed : 0; }
