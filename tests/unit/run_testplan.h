/*
 * Helpers for the run-side tests: plans built by hand through
 * lib/pipeline/plan_internal.h (the plan builder is tested on its own), over a
 * small on-disk input. Header-only (static) so each test binary stays
 * self-contained.
 */
#ifndef STF_RUN_TESTPLAN_H
#define STF_RUN_TESTPLAN_H

#include <stdint.h>
#include <string.h>

#include "pipeline/plan_internal.h"

enum { TP_MAX = 16 };

typedef struct tplan {
    stf_plan p;
    stf__out outs[TP_MAX];
    stf__job jobs[TP_MAX];
    const char *layers[TP_MAX]; /* output prefixes */
    stf_meta_entry meta[TP_MAX];
} tplan;

static inline void tp_init(tplan *t, const stf_ckpt *c, unsigned targets)
{
    memset(t, 0, sizeof *t);
    t->p.c = c;
    t->p.targets = targets;
    t->p.outs = t->outs;
    t->p.jobs = t->jobs;
    t->p.meta = t->meta;
    t->p.changed = 1; /* a plan made by hand changes its input */
}

static inline size_t tp_in(const stf_ckpt *c, const char *name)
{
    size_t i = 0;
    if (stf_ckpt_find(&i, c, name) != 0) return SIZE_MAX;
    return i;
}

/* Append an output; src_name NULL for NEW (bytes given) and job outputs. */
static inline size_t tp_out(tplan *t, const char *name, stf_dtype dt, unsigned rank,
                            const uint64_t *shape, stf_out_op op, const char *src_name,
                            const void *bytes)
{
    size_t i = t->p.nouts++;
    stf__out *o = &t->outs[i];
    uint64_t nel = 1;
    for (unsigned r = 0; r < rank; r++) {
        o->shape_store[r] = shape[r];
        nel *= shape[r];
    }
    o->pub.name = name;
    o->pub.name_len = strlen(name);
    o->pub.dtype = dt;
    o->pub.rank = rank;
    o->pub.shape = o->shape_store;
    o->pub.nbytes = nel * stf_dtype_bits(dt) / 8u;
    o->pub.op = op;
    o->pub.src = src_name ? (int64_t)tp_in(t->p.c, src_name) : -1;
    o->pub.layer = SIZE_MAX;
    o->bytes = (unsigned char *)(uintptr_t)bytes;
    o->job = SIZE_MAX;
    if (op == STF_OUT_CAST) o->cast_from = stf_ckpt_tensor(t->p.c, (size_t)o->pub.src)->dtype;
    return i;
}

/* Append a layer with an output prefix; returns its index. The run reads
 * it as the builder gives it, the group of the layer's job outputs. */
static inline size_t tp_layer(tplan *t, const char *prefix)
{
    size_t i = t->p.nlayers++;
    t->layers[i] = prefix;
    return i;
}

/* Append a job whose outputs are w (and s, SIZE_MAX for none) in layer li. */
static inline stf__job *tp_job(tplan *t, stf__job_kind kind, size_t w, size_t s, size_t li)
{
    size_t j = t->p.njobs++;
    stf__job *job = &t->jobs[j];
    memset(job, 0, sizeof *job);
    job->kind = kind;
    job->out_weight = w;
    job->out_scale = s;
    job->dec.s_idx = -1;
    t->outs[w].job = j;
    t->outs[w].pub.layer = li;
    t->outs[w].group = (char *)(uintptr_t)t->layers[li];
    t->outs[w].group_len = strlen(t->layers[li]);
    if (s != SIZE_MAX) {
        t->outs[s].job = j;
        t->outs[s].pub.layer = li;
        t->outs[s].group = t->outs[w].group;
        t->outs[s].group_len = t->outs[w].group_len;
    }
    return job;
}

static inline void tp_meta(tplan *t, const char *k, const char *v)
{
    stf_meta_entry *e = &t->meta[t->p.nmeta++];
    e->key = k;
    e->key_len = strlen(k);
    e->value = v;
    e->value_len = strlen(v);
}

#endif
