/*
 * Whether a plan changes anything: a repair recipe run over a file its
 * consumer already accepts must leave that file as it is, byte for byte,
 * and say so. The plan compares what it would write with the input's
 * header: tensors, names, metadata, and the canonical form of each file,
 * since rewriting a file canonically is a change of its bytes.
 */
#include <string.h>

#include "pipeline/plan_internal.h"

/* Whether output o is input tensor o->src as it is, under its name. */
static int out_is_input(const stf_ckpt *c, const stf__out *o)
{
    if (o->pub.op != STF_OUT_COPY || o->pub.src < 0 ||
        (uint64_t)o->pub.src >= stf_ckpt_tensor_count(c))
        return 0;
    const stf_tensor_info *t = stf_ckpt_tensor(c, (size_t)o->pub.src);
    return t->name_len == o->pub.name_len && !memcmp(t->name, o->pub.name, t->name_len) &&
           t->dtype == o->pub.dtype && t->rank == o->pub.rank &&
           (!t->rank || !memcmp(t->shape, o->pub.shape, t->rank * sizeof *t->shape));
}

/* Whether shard s's __metadata__ holds exactly the entries of p->meta. */
static int meta_is_input(const stf_plan *p, size_t s)
{
    size_t n = stf_ckpt_meta_count(p->c, s);
    if (n != p->nmeta) return 0;
    for (size_t i = 0; i < n; i++) {
        const stf_meta_entry *e = stf_ckpt_meta(p->c, s, i);
        size_t k = 0;
        while (k < p->nmeta && (p->meta[k].key_len != e->key_len ||
                                memcmp(p->meta[k].key, e->key, e->key_len)))
            k++;
        if (k == p->nmeta || p->meta[k].value_len != e->value_len ||
            memcmp(p->meta[k].value, e->value, e->value_len))
            return 0;
    }
    return 1;
}

/* Contract in plan_internal.h. */
int stf__plan_differs(const stf_plan *p)
{
    for (size_t i = 0; i < p->nlayers; i++)
        if (stf__rec_changed(p, i)) return 1;
    if (p->ndropped || p->nouts != stf_ckpt_tensor_count(p->c)) return 1;
    for (size_t i = 0; i < p->nouts; i++)
        if (!out_is_input(p->c, &p->outs[i])) return 1;
    size_t nsh = stf_ckpt_shard_count(p->c);
    for (size_t s = 0; s < nsh; s++)
        if (!meta_is_input(p, s)) return 1;
    /* Last: it re-reads each header. */
    for (size_t s = 0; s < nsh; s++)
        if (!stf_ckpt_shard_is_canonical(p->c, s)) return 1;
    return 0;
}
