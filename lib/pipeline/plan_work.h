/*
 * Internal to plan_layer.c, plan_job.c, plan_legacy.c and plan_work.c: the working state
 * of one layer while its matched actions are applied (names, dtypes,
 * shapes, marker, job). Header-only actions live in plan_layer.c; the ones
 * that decode data (exclude, requantize) or rewrite markers live in
 * plan_job.c, the legacy scaled-FP8 migration in plan_legacy.c, inferred
 * markers in plan_infer.c; the
 * helpers they use live in plan_work.c, so that plan_layer.c calls
 * plan_job.c, plan_legacy.c and plan_work.c, and those two call only
 * plan_work.c.
 */
#ifndef STF_PIPELINE_PLAN_WORK_H
#define STF_PIPELINE_PLAN_WORK_H

#include "pipeline/plan_internal.h"

#define SLOT_MAX_RANK 8

typedef struct stf__tensor_slot {
    int present, dropped;
    size_t src;
    stf_dtype in_dtype, dtype;
    unsigned rank;
    uint64_t shape[SLOT_MAX_RANK];
    uint64_t nelem;
    stf_out_op op;
} stf__tensor_slot;

enum { MARKER_KEEP = 0, MARKER_NEW, MARKER_NONE };

typedef struct stf__layer_work {
    stf__plan_builder *b;
    const stf_layer *l;
    const stf_layer_view *v;
    stf__tensor_slot s[STF_SFX_COUNT];
    uint64_t n, k;
    const char *format;      /* current format name (borrowed) */
    int marker_change;       /* MARKER_KEEP the input's, MARKER_NEW (spec), MARKER_NONE */
    stf_marker_spec spec;    /* MARKER_NEW */
    int flattened, done, requant;
    stf__job job;
    char *out_prefix;        /* out_prefix_len bytes (may hold U+0000) */
    size_t out_prefix_len;
    char shown[STF__NAME_SHOWN]; /* the input prefix, escaped for messages */
    stf_buf sum;
    const stf__matched_action *cur; /* the action being applied (error messages) */
    stf_pyval *recovered;    /* marker recovered from unusable tensor-marker bytes */
    int recover_tried;
    int recover_rc;          /* STF_ENOMEM when recovering the marker ran out of memory */
    size_t canon_at;         /* where set-marker's "marker canonical" note starts in sum */
    int canon_noted;         /* set-marker added that note */
    int changed;             /* stf_plan_layer_info.changed, set by emitting the layer */
} stf__layer_work;

/* ---------------------------------------------------- shared helpers (plan_work.c) */

/* STF_EFORMAT naming the layer, the rule being applied and its recipe line. */
int stf__work_refuse(stf__layer_work *w, stf_err *err, const char *what);
/* Append "fmt" (two %s arguments) to the layer's summary line. */
void stf__work_note(stf__layer_work *w, const char *fmt, const char *a, const char *b2);
/* Python tuple text of a shape into buf; returns buf. */
const char *stf__shape_text(char *buf, size_t cap, unsigned rank, const uint64_t *shape);
void stf__slot_set_shape(stf__tensor_slot *sl, unsigned rank, const uint64_t *shape);
/* The marker an action reads (preferred channel, else recovered from raw bytes), or NULL. */
const stf_pyval *stf__work_marker(stf__layer_work *w, stf_channel_pref pref);
/* The dict recovered from unusable tensor-marker bytes (trailing NULs
 * stripped, any dtype label), or NULL; w->recover_rc says STF_ENOMEM. */
const stf_pyval *stf__work_recovered(stf__layer_work *w);
int stf__dtype_is_float(stf_dtype d);
/* 1: g a power of 4; 2: a power of 2 but not of 4; 0: neither. */
int stf__power_kind(int64_t g);

/* Scale-like companions of a weight (dropped by exclude, requantize, drop scales). */
extern const stf_suffix stf__weight_companions[];
extern const size_t stf__weight_ncompanions;

/* ------------------------------------------ data and marker actions (plan_job.c) */

/* How to read f32 rows of what the layer holds now (stfix-convrot(7),
 * DEQUANTIZATION and SYLVESTER ORDER); STF_EFORMAT (stf__work_refuse) for a
 * layer stfix cannot decode. */
int stf__work_decode(stf__layer_work *w, stf__decode *d, stf_err *err);

/* The actions of plan_job.c; 0 or STF_EFORMAT (via stf__work_refuse). */
int stf__work_exclude(stf__layer_work *w, stf_dtype want, stf_err *err);
int stf__work_requantize(stf__layer_work *w, const stf_action *a, stf_format_id to,
                         stf_err *err);
/* The requantize action with every default (transpose-scale, rewrite-format mismatch). */
void stf__requantize_defaults(stf_action *a);
int stf__work_set_marker(stf__layer_work *w, const stf_action *a, stf_err *err);
int stf__work_rewrite_format(stf__layer_work *w, const stf_action *a, stf_err *err);

/* ------------------------------------------ legacy scaled FP8 (plan_legacy.c) */

/* migrate-scaled-fp8 (stfix-rules(5)): a layer without scale_weight or
 * scale_input is left as it is; 0 or STF_EFORMAT (stf__work_refuse), or
 * the read error of an input scale. */
int stf__work_migrate_scaled_fp8(stf__layer_work *w, stf_err *err);

/* ------------------------------------------ inferred markers (plan_infer.c) */

/* infer-marker (stfix-rules(5)): a layer whose markers all read is left as it
 * is; 0 or STF_EFORMAT (stf__work_refuse) naming what the file leaves
 * open and the rule that would settle it, or STF_ENOMEM. */
int stf__work_infer_marker(stf__layer_work *w, const stf_action *a, stf_err *err);

#endif
