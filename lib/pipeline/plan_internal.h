/*
 * Internal: the plan as the run executes it. plan*.c builds it, run*.c
 * executes it; the public accessors of include/stfix/pipeline.h read it.
 * Not part of the public API.
 */
#ifndef STF_PIPELINE_PLAN_INTERNAL_H
#define STF_PIPELINE_PLAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "check/probes.h"
#include "model/model_internal.h"
#include "rules/rules_internal.h"
#include "stfix/pipeline.h"
#include "stfix/experimental/check.h"
#include "stfix/experimental/pipeline.h"
#include "stfix/experimental/quant.h"
#include "util/progress.h"
#include "util/util.h"

/*
 * How to obtain f32 rows of a layer's current weight (the "decode" side of
 * requantize and exclude). Rows are the logical N rows of the 2-D view
 * [n, k] (conv kernels flattened, MoE banks [E*out, in]).
 */
typedef enum stf__dec_kind {
    STF__DEC_FLOAT = 0, /* BF16/F16/F32 weight: convert (exact) */
    STF__DEC_INT8,      /* I8 codes (U8 when relabelled) x scale, then un-rotate */
    STF__DEC_FP8,       /* F8_E4M3/F8_E5M2 x tensor, row or column scale */
    STF__DEC_W4A4       /* packed int4 [n, k/2] x scale[n], then un-rotate */
} stf__dec_kind;

typedef struct stf__decode {
    stf__dec_kind kind;
    size_t w_idx;            /* input tensor index of the weight */
    stf_dtype w_dtype;       /* dtype to read it as (after relabel) */
    int64_t s_idx;           /* input tensor index of the scale, -1 when none */
    stf_dtype s_dtype;       /* F32, BF16 or F16 (read and widened exactly) */
    stf_scale_axis axis;     /* INT8, FP8: tensor / row / column scales */
    uint64_t groups;         /* INT8 with axis ROW: > 1 means scale [n, groups], one per row
                              * per block of k/groups consecutive columns (the `(N,g)`
                              * shape of stfix-defects(7), SCALE SHAPES);
                              * 0 or 1: one scale per row */
    unsigned rot_group;      /* 0: no rotation to undo */
    int sylvester;           /* Sylvester (stfix-convrot(7), SYLVESTER ORDER) */
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
    stf_quant_mode mode;     /* REQUANT_INT8 and REQUANT_W4A4 */
    stf_dtype t;             /* rounding dtype T: the source float dtype, else compute_dtype */
    stf_dtype out_dtype;     /* DEQUANT */
    size_t out_weight;       /* index in plan->tensors of the produced weight */
    size_t out_scale;        /* index in plan->tensors of the produced scale (REQUANT_*) */
} stf__job;

/* One output tensor, as the run needs it. pub.* is what the accessors show. */
typedef struct stf__out {
    stf_plan_tensor_info pub;
    uint64_t shape_store[STF_MAX_RANK_HARD];
    /* COPY / RESHAPE / RELABEL: bytes of input tensor pub.src verbatim.
     * CAST: input pub.src of dtype cast_from, element-wise to pub.dtype.
     * NEW: `bytes` (nbytes long, owned).
     * QUANT_* / DEQUANT: filled by job `job`. */
    stf_dtype cast_from;
    unsigned char *bytes;
    size_t job;              /* index into plan->jobs, SIZE_MAX when none */
    char *group;             /* I7 shard group (output layer prefix) or NULL */
    size_t group_len;
} stf__out;

/* No rules, no kind (stf__player.rset, stf__rkind.rset). */
#define STF__REC_NONE UINT32_MAX

/*
 * A layer's record as the builder fills it (stf__plan_layer,
 * stf__merged_record, stf__gate_note), one at a time, until stf__rec_keep
 * keeps it in the plan as an 8-byte stf__rec.
 */
typedef struct stf__player {
    stf_plan_layer_info pub;
    uint32_t rset;           /* its rules and actions: index into the plan's rsets, or NONE */
    /* Owned texts; the prefix is the model's, and an unchanged layer's
     * summary the static "unchanged". */
    char *out_prefix_store, *summary_store;
} stf__player;

/* The rules and actions a run of layers shares (stf__plan_record_rules). */
typedef struct stf__rset {
    const char **rule_names; /* nrules */
    const stf_action **acts; /* nactions */
    size_t nrules, nactions;
} stf__rset;

/*
 * What layer records that read alike share (plan_rec.c): the public record
 * but for its prefixes, with the summary as a template, the output prefix
 * as the summary shows it (stf__name_render) cut out at `hole`, so that a
 * million layers renamed by one rule keep one summary.
 */
typedef struct stf__rkind {
    char *sum;               /* owned: sum_len bytes and a NUL */
    size_t sum_len;
    size_t hole;             /* where the shown output prefix goes; SIZE_MAX: nowhere */
    uint32_t rset;           /* index into the plan's rsets, or NONE */
    uint32_t next;           /* while building: the next kind of its hash slot + 1, 0 = none */
    const char *format;      /* the model's, or a static name */
    unsigned group;
    stf_quant_mode mode;
    int requantize, changed;
} stf__rkind;

/*
 * One layer's record in the plan, 8 bytes: its kind, and its output prefix:
 * 0 when the rename actions of its rules make it from its prefix
 * (stf__rec_out_prefix), else 1 + its place in the plan's outp.
 */
typedef struct stf__rec {
    uint32_t kind;
    uint32_t out;
} stf__rec;

struct stf_plan {
    const stf_ckpt *c;
    const stf_recipe *r;
    unsigned targets;
    stf__rec *recs;          /* per layer, nlayers of them */
    size_t nlayers;
    stf__rkind *kinds;
    size_t nkinds;
    stf__rset *rsets;
    size_t nrsets;
    char **outp;             /* the output prefixes that renames do not make, owned */
    size_t *outp_len;
    size_t noutp;
    /* The public records stf_plan_layer made, per layer, made when first
     * asked (plan_access.c). */
    _Atomic(_Atomic(stf_plan_layer_info *) *) made;
    stf__out *outs;          /* canonical writer order */
    size_t nouts;
    stf__job *jobs;
    size_t njobs;
    char **dropped;          /* input names, dropped_len[i] bytes each */
    size_t *dropped_len;
    size_t ndropped;
    stf_meta_entry *meta;    /* sorted by key bytes; strings owned */
    size_t nmeta;
    int emit_meta;           /* write __metadata__ even when empty */
    int changed;             /* stf_plan_changed: the output differs from the input */
    uint64_t bytes_total, bytes_copied;
    stf_model *model;        /* owned: markers and format names point into it */
    /* _quantization_metadata of the output, per layer, for a run that shards the output and must
     * rebuild it per file (stfix-defects(7), MARKER CHANNELS): the output prefix and its marker
     * text, sorted by prefix bytes; qmeta_mode says what meta[] holds. */
    char **qmeta_prefix, **qmeta_text;
    size_t *qmeta_prefix_len;
    size_t nqmeta;
    int qmeta_mode;          /* STF__QMETA_* */
    /* The H1 verdicts this plan assumed (stf_plan_opts.speculate) for its
     * run to confirm, in layer order, and the options it was built with. */
    struct stf__guess *guess;
    size_t nguess;
    stf_plan_opts opts;
    uint64_t regex_left;     /* the regex steps its build left, for a rebuild */
    int gated;               /* a repair recipe's plan (plan_gate.c) */
};

/* A verdict assumed from the scale's shape: layer, its weight and scale
 * (input tensor indices) and the verdict the plan used. */
typedef struct stf__guess {
    size_t layer, wi, si;
    stf_probe_verdict v;
} stf__guess;

/*
 * Rebuild p in place from its checkpoint, recipe and options, taking the
 * verdict of layer guess[i].layer from v[i] for each of p's guesses that
 * the run measured (STF_PROBE_COUNT: not measured) and probing the other
 * layers as stf_plan_build does; nothing is assumed, so a run of it never
 * starts over. On error p is unchanged.
 */
int stf__plan_rebuild(stf_plan *p, const stf_probe_verdict *v, stf_err *err);

enum {
    STF__QMETA_ABSENT = 0,   /* not written (input had none, dropped, or no marker left) */
    STF__QMETA_VERBATIM = 1, /* the input's value, byte for byte (no marker changed) */
    STF__QMETA_REBUILT = 2   /* stf_qmeta_canonical of qmeta_prefix/qmeta_text */
};

/* ------------------------------------------------ plan construction (plan*.c) */

/*
 * The gate of a repair recipe (plan_gate.c): which layers the input's
 * error findings under the recipe's targets concern. `on` is 0 for any
 * other recipe, and then every layer is open.
 */
typedef struct stf__gate {
    int on;
    int all;                 /* a file-level error that names no layer: everything is open */
    unsigned char *want;     /* per model layer: an error finding concerns it */
    char targets[32];        /* the targets' names, for the summary */
} stf__gate;
/*
 * Fill g for recipe r over c (model m): for a recipe of kind repair, run
 * the container profile and r's targets' profiles over c (headers and
 * markers only) on `pool`, and mark the layers each error finding names or,
 * for a file-level one, quotes in its message; one that names no layer of
 * m opens everything. Otherwise g->on is 0. Errors: stf_check_run's.
 * Free with stf__gate_free, also after an error.
 */
int stf__gate_init(stf__gate *g, const stf_ckpt *c, const stf_model *m, const stf_recipe *r,
                   stf_pool *pool, stf_err *err);
/* Whether the plan may change layer li. */
int stf__gate_open(const stf__gate *g, size_t li);
/* Layer record pl's summary: left alone by the gate. */
int stf__gate_note(stf__player *pl, const stf__gate *g, stf_err *err);
void stf__gate_free(stf__gate *g);

/* The file's readable markers by format, built by infer-marker's first use
 * (plan_infer.c) and freed with the builder. */
typedef struct stf__peers stf__peers;
void stf__peers_free(stf__peers *p);

/*
 * The plan under construction. plan.c drives it; plan_layer.c appends each
 * layer's outputs, jobs and dropped names; plan_meta.c turns the collected
 * marker texts into the output __metadata__.
 */
typedef struct stf__plan_builder {
    stf_plan *p;
    const stf_model *m;
    const stf_plan_opts *o;
    size_t outs_cap, jobs_cap, dropped_cap, dropped_len_cap, layers_cap;
    /* _quantization_metadata of the output: one entry per output layer that
     * keeps a marker (prefix after rename, canonical marker text, both owned). */
    char **qm_prefix;
    size_t *qm_prefix_len;
    char **qm_text;
    size_t nqm, qm_cap, qml_cap, qmt_cap;
    int markers_changed;   /* some layer's marker was rewritten, dropped or renamed */
    int meta_drop;         /* an applied action asked to drop _quantization_metadata */
    stf__rules_run run;    /* the selectors' regex budget and verdicts, for the whole build */
    stf__peers *peers;     /* infer-marker's summary of the file's markers, or NULL */
    stf__gate gate;        /* a repair recipe's: the layers it may change */
    int leave;             /* the layer stf__plan_layer emits is left alone by the gate */
    int merged;            /* it is the target of a merge, carrying its source's markers */
    uint32_t last_rset;    /* the rules' arrays the last layer record made, or NONE */
    stf__player cur;       /* the layer record being filled */
    size_t kinds_cap, rsets_cap, outp_cap;
    uint32_t *khash;       /* kinds by hash: kind index + 1, 0 = empty */
    size_t khcap;
} stf__plan_builder;

/*
 * One matched action, with the rule it came from (for error messages).
 */
typedef struct stf__matched_action {
    const stf_action *a;
    const stf_rule *rule;
} stf__matched_action;

/*
 * A recipe's rules on one layer's view (plan_rules.c). stf__plan_collect:
 * the matched actions of every rule of r on v, in order, up to and
 * including the first terminal one, into *acts (grown, *cap its room).
 * stf__plan_need_probe: *need, whether some rule's choice on v depends on
 * the H1 verdict (v->probe is left UNKNOWN). stf__plan_acts_need_probe:
 * whether one of acts[0..n) reads the verdict on v.
 */
int stf__plan_collect(stf__matched_action **acts, size_t *nacts, size_t *cap, const stf_recipe *r,
                      stf__rules_run *run, const stf_layer_view *v, stf_err *err);
int stf__plan_need_probe(int *need, const stf_recipe *r, stf__rules_run *run, stf_layer_view *v,
                         stf_err *err);
int stf__plan_acts_need_probe(const stf__matched_action *acts, size_t n, const stf_layer_view *v);
/*
 * Layer records (plan_rec.c). stf__plan_record_rules: pl's rules and
 * actions from acts[0..n), those of the layer recorded before it when they
 * are the same, shared. stf__rec_keep: b->cur kept as layer li's record
 * (kinds shared, the output prefix only where renames do not make it), and
 * b->cur emptied for the next layer, also on error (STF_ENOMEM, STF_ELIMIT
 * past 2^32 - 1 layers). stf__rec_reset: pl emptied, its texts freed.
 * stf__rec_free: everything the plan's records own.
 */
int stf__plan_record_rules(stf__plan_builder *b, stf__player *pl, const stf__matched_action *acts,
                           size_t n, stf_err *err);
int stf__rec_keep(stf__plan_builder *b, size_t li, stf_err *err);
void stf__rec_reset(stf__player *pl);
void stf__rec_free(stf_plan *p);
/* Whether layer li changes (stf_plan_layer_info.changed). */
int stf__rec_changed(const stf_plan *p, size_t li);
/*
 * Layer li's output prefix (a new string, *len bytes and a NUL) made from
 * its prefix (plen bytes) by the rename actions of its rules, in order;
 * NULL when out of memory.
 */
char *stf__rec_out_prefix(const stf_plan *p, size_t li, const char *prefix, size_t plen,
                          size_t *len);

/*
 * Merges of metadata-only markers (plan_merge.c). stf__merges_find fills
 * into[i] (the layer marker i merges into) and from[t] (the marker layer t
 * takes), SIZE_MAX elsewhere, over all nl layers of b->m;
 * stf__merges_gate keeps, under a repair recipe's gate, only the merges a
 * finding concerns. stf__merged_layer is layer i as the rules see it (a
 * target carries its source's markers), in *merged or in *lt and *st
 * (stf__model_layer_at). stf__merged_record fills b->cur, the record
 * of marker layer l merged into `target`.
 */
int stf__merges_find(size_t *into, size_t *from, stf__plan_builder *b, stf__matched_action **acts,
                     size_t *cap, stf_err *err);
void stf__merges_gate(stf__gate *g, size_t *into, size_t *from, size_t nl);
const stf_layer *stf__merged_layer(const stf_model *m, const size_t *from, size_t i,
                                   stf_layer *merged, stf__layer_tmp *lt, stf__layer_tmp *st);
int stf__merged_record(stf__plan_builder *b, const stf_layer *l, const stf_layer *target, const stf__matched_action *acts, size_t n,
                       stf_err *err);

/* Append an output tensor (zeroed, job/layer SIZE_MAX, src -1); *out its index. */
int stf__builder_add_out(stf__plan_builder *b, size_t *out, stf_err *err);
/* Append a job; *out its index. */
int stf__builder_add_job(stf__plan_builder *b, size_t *out, stf_err *err);
/* Record an input tensor name (len bytes) that is not written (copied). */
int stf__builder_drop(stf__plan_builder *b, const char *name, size_t len, stf_err *err);
/* Record the output marker text of an output layer (prefix of plen bytes)
 * for _quantization_metadata (both copied). */
int stf__builder_add_qmeta(stf__plan_builder *b, const char *prefix, size_t plen, const char *text,
                           stf_err *err);
/*
 * A rename action applied to one name of len bytes (which may hold
 * U+0000): a new NUL-terminated string of *out_len bytes with the leading
 * `from` replaced by `to` (an empty `from` prepends `to`). NULL with
 * *hit = 0 when the name does not start with `from`; NULL with *hit = 1
 * when out of memory.
 */
char *stf__rename_apply(const stf_action *a, const char *name, size_t len, size_t *out_len,
                        int *hit);

/*
 * How to read layer li of `m` to f32 rows as it is stored, outside any plan
 * (stf_diff): the decode exclude would use, square per-channel INT8 scales
 * told apart by the H1 probe. STF_EFORMAT naming the layer when stfix cannot
 * decode it (no weight, a format or dtype it does not read).
 */
int stf__layer_decode(stf__decode *d, const stf_model *m, size_t li, stf_err *err);

/*
 * The stf_layer_view of model layer `l`, as the input holds it. Marker
 * fields and shapes point into `store` (caller's) and the model. `probe`
 * (H1) and `rotation` are set by the caller.
 */
typedef struct stf__view_store {
    stf_marker_field *fields;
    size_t nfields;
    char **texts;           /* json texts owned */
} stf__view_store;
int stf__plan_view(stf_layer_view *v, stf__view_store *store, const stf_model *m,
                   const stf_layer *l, stf_err *err);
void stf__view_store_free(stf__view_store *s);
/* Whether H1 reads layer l's codes as int4 pairs (a convrot_w4a4 marker). */
int stf__plan_probe_w4(const stf_layer *l);
/* The probes' read block under o->max_mem (0: their default). */
size_t stf__plan_probe_block(const stf_plan_opts *o);
/* ROW/COLUMN/... of the H1 probe, or UNKNOWN when the layer cannot be probed. */
int stf__plan_probe_h1(stf_probe_verdict *out, const stf_plan_opts *o, const stf_model *m,
                       const stf_layer *l, int w4, stf_err *err);

/*
 * The H1 verdicts a plan needs, measured ahead of the plan on o->pool
 * (plan_probe.c): stf__probe_ahead_want marks layer li (its w4 from the
 * layer as planned), stf__probe_ahead_run probes the marked layers in
 * parallel, stf__probe_ahead_get hands out a verdict, or the error of the
 * first failing layer, as probing that layer in plan order would have.
 * Layers not marked, or after a failure, are probed by _get then.
 */
typedef struct stf__probe_ahead {
    size_t nl;
    unsigned char *mark;    /* per layer: 0 not wanted, 1 INT8, 2 W4A4, 3 set */
    unsigned char *verdict; /* per layer: stf_probe_verdict + 1 once probed, else 0 */
    size_t failed;          /* the first failing layer, SIZE_MAX when none */
    int failed_rc;
    stf_err failed_err;
} stf__probe_ahead;
int stf__probe_ahead_init(stf__probe_ahead *pa, size_t nl, stf_err *err);
void stf__probe_ahead_want(stf__probe_ahead *pa, size_t li, const stf_layer *l);
int stf__probe_ahead_run(stf__probe_ahead *pa, const stf_plan_opts *o, const stf_model *m,
                         stf_err *err);
int stf__probe_ahead_get(stf_probe_verdict *out, const stf__probe_ahead *pa,
                         const stf_plan_opts *o, const stf_model *m, size_t li,
                         const stf_layer *l, stf_err *err);
void stf__probe_ahead_free(stf__probe_ahead *pa);
/* Give layer li verdict v without probing it (mark 3). */
void stf__probe_ahead_set(stf__probe_ahead *pa, size_t li, stf_probe_verdict v);
/* The H1 verdict the shape of l's scale suggests for an INT8 or FP8 layer H1 can
 * read ([1, K]: COLUMN, else N scales: ROW, K scales: COLUMN),
 * STF_PROBE_COUNT when it suggests
 * none; *wi and *si its weight and scale. */
stf_probe_verdict stf__probe_shape_guess(const stf_model *m, const stf_layer *l, size_t *wi,
                                         size_t *si);
/* Rotation the marker declares: convrot true with G a power of 4 / power of 2. */
stf_rotation_kind stf__plan_rotation(const stf_layer *l);

/*
 * Apply the matched actions acts[0..n) to model layer `l` and append the
 * layer's outputs, jobs, dropped inputs and qmeta entry to b; fills
 * b->p->layers[li]. `v` is the input view (probe verdict included).
 * STF_EFORMAT naming layer and rule when an action cannot apply.
 */
int stf__plan_layer(stf__plan_builder *b, size_t li, const stf_layer *l, const stf_layer_view *v,
                    const stf__matched_action *acts, size_t n, stf_err *err);

/*
 * Output __metadata__ into b->p->meta (sorted by key bytes): every input key
 * but quant_format (union over shards, first shard wins),
 * and _quantization_metadata rebuilt from b's entries, kept verbatim when no
 * marker changed, or removed (meta_drop, or no marker left); then
 * b->p->changed (stf__plan_differs), and only when it is set the stamp,
 * stfix.version and stfix.recipe_sha256. Needs the outputs sorted.
 */
int stf__plan_meta(stf__plan_builder *b, stf_err *err);

/*
 * Whether the plan's output differs from its input, before the stamp:
 * (plan_same.c) a layer changed, an output tensor that is not a verbatim
 * copy under the input's name, a dropped tensor, a __metadata__ of some
 * shard other than p->meta (as a set), or a shard not in canonical form.
 * Reads only the plan and the input's header.
 */
int stf__plan_differs(const stf_plan *p);

/* Canonical writer order of two outputs: dtype index descending, then name bytes. */
int stf__plan_out_cmp(const stf__out *a, const stf__out *b);

#endif
