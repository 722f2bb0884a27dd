/*
 * Internal: the plan as the run executes it. plan*.c builds it, run*.c
 * executes it; the public accessors of include/stfix/pipeline.h read it.
 * Not part of the public API.
 */
#ifndef STF_PIPELINE_PLAN_INT_H
#define STF_PIPELINE_PLAN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "stfix.h"
#include "util/util.h"

/*
 * How to obtain f32 rows of a layer's current weight (the "decode" side of
 * requantize and exclude). Rows are the logical N rows of the 2-D view
 * [n, k] (conv kernels flattened, MoE banks [E*out, in]).
 */
typedef enum stf__dec_kind {
    STF__DEC_FLOAT = 0, /* BF16/F16/F32 weight: convert (exact) */
    STF__DEC_INT8,      /* I8 codes (U8 when relabelled) x scale, then un-rotate */
    STF__DEC_FP8,       /* F8_E4M3/F8_E5M2 x scalar scale */
    STF__DEC_W4A4       /* packed int4 [n, k/2] x scale[n], then un-rotate */
} stf__dec_kind;

typedef struct stf__decode {
    stf__dec_kind kind;
    size_t w_idx;            /* input tensor index of the weight */
    stf_dtype w_dtype;       /* dtype to read it as (after relabel) */
    int64_t s_idx;           /* input tensor index of the scale, -1 when none */
    stf_dtype s_dtype;       /* F32, BF16 or F16 (read and widened exactly) */
    stf_scale_axis axis;     /* INT8: tensor / row / column scales */
    unsigned rot_group;      /* 0: no rotation to undo */
    int sylvester;           /* rotation is Sylvester (spec convrot §7) */
    uint64_t n, k;           /* logical rows and columns */
} stf__decode;

/* What the run produces for a layer job. */
typedef enum stf__job_kind {
    STF__JOB_NONE = 0,
    STF__JOB_REQUANT_INT8,   /* -> I8 [n,k] + F32 [n,1] (ConvRot G or none) */
    STF__JOB_REQUANT_W4A4,   /* -> I8 [n,k/2] + F32 [n] */
    STF__JOB_DEQUANT         /* -> out_dtype [original weight shape] */
} stf__job_kind;

typedef struct stf__job {
    stf__job_kind kind;
    stf__decode dec;
    unsigned group;          /* output rotation group (REQUANT_*) */
    stf_quant_mode mode;     /* REQUANT_INT8 */
    stf_dtype t;             /* rounding dtype T: the source float dtype, else compute_dtype */
    stf_dtype out_dtype;     /* DEQUANT */
    size_t out_weight;       /* index in plan->tensors of the produced weight */
    size_t out_scale;        /* index in plan->tensors of the produced scale (REQUANT_*) */
} stf__job;

/* One output tensor, as the run needs it. pub.* is what the accessors show. */
typedef struct stf__out {
    stf_plan_tensor pub;
    uint64_t shape_store[STF_MAX_RANK_HARD];
    /* COPY / RESHAPE / RELABEL: bytes of input tensor pub.src verbatim.
     * CAST: input pub.src of dtype cast_from, element-wise to pub.dtype.
     * NEW: `bytes` (nbytes long, owned).
     * QUANT_* / DEQUANT: filled by job `job`. */
    stf_dtype cast_from;
    unsigned char *bytes;
    size_t job;              /* index into plan->jobs, SIZE_MAX when none */
    char *group;             /* I7 shard group (output layer prefix) or NULL */
} stf__out;

typedef struct stf__player {
    stf_plan_layer pub;
    const char **rule_names; /* nrules */
    const stf_action **acts; /* nactions */
    char *prefix_store, *out_prefix_store, *summary_store;
} stf__player;

struct stf_plan {
    const stf_ckpt *c;
    const stf_recipe *r;
    unsigned targets;
    stf__player *layers;
    size_t nlayers;
    stf__out *outs;          /* canonical writer order */
    size_t nouts;
    stf__job *jobs;
    size_t njobs;
    char **dropped;
    size_t ndropped;
    stf_meta_entry *meta;    /* sorted by key bytes; strings owned */
    size_t nmeta;
    int emit_meta;           /* write __metadata__ even when empty */
    uint64_t bytes_total, bytes_copied;
};

#endif
