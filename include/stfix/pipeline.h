/*
 * stfix public API: the pipeline — plan (recipe × model × probes → per-layer
 * actions) and run (stream tensors through the kernels into the canonical
 * writer, then verify the output against the recipe's target profiles).
 * Included through <stfix.h>.
 *
 * Thread safety: a built plan and a run report are read-only; their
 * accessors may be called from several threads at once. stf_plan_build
 * and stf_plan_run only read the checkpoint, recipe and plan they are
 * given, so distinct builds and runs may go at once (runs into distinct
 * outputs; two into one output take turns on its lock) - but a stf_pool in
 * their options serves one call at a time: do not share one between calls
 * running at once. Within a call the pool's threads do the work; results
 * do not depend on their number. stf_diff_run likewise only reads its two
 * checkpoints, and a diff it made is read-only.
 */
#ifndef STFIX_PIPELINE_H
#define STFIX_PIPELINE_H

#include "base.h"
#include "check.h"
#include "container.h"
#include "quant.h"
#include "rules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ plan */

/* The layout of stf_plan_opts this header describes (1: without max_mem,
 * 2: without progress and speculate). */
#define STF_PLAN_OPTS_VERSION 3u

typedef struct stf_plan_opts {
    unsigned version;          /* STF_PLAN_OPTS_VERSION, set by stf_plan_opts_init */
    int quant_mode_set;        /* --quant-mode given: overrides every recipe's mode */
    stf_quant_mode quant_mode;
    double tau;                /* H1 saturation threshold (default 0.99) */
    stf_pool *pool;            /* for probes; NULL = inline */
    uint64_t max_mem;          /* the probes' read buffers, all threads together
                                * (0: 128 KiB a thread; fix --max-mem) */
    /* Version 3 adds progress, progress_ud and speculate. The weight
     * bytes the probes have read of those they will
     * read, with the layer just probed; NULL: none. */
    stf_progress_fn progress;
    void *progress_ud;
    /* For a plan that is run, not shown (fix, batch): where a layer's plan
     * needs the H1 verdict and is then requantized or dequantized, take the
     * verdict its scale's shape suggests ([1, K]: COLUMN, else N scales:
     * ROW, K: COLUMN) instead
     * of reading the weight here; stf_plan_run confirms it from the rows
     * its job reads, so the input is read once. A run whose job measures
     * another verdict stops there, rebuilds the plan with it (probing the
     * layers not yet measured) and starts over: the plan after the run and
     * the output are those of a plan built without this. */
    int speculate;
} stf_plan_opts;

/* Defaults of layout `version` (tau 0.99, the recipes' modes, no pool, no
 * progress); as stf_open_opts_init_version. Call it through the
 * stf_plan_opts_init macro. */
STF_API void stf_plan_opts_init_version(stf_plan_opts *o, unsigned version);
#define stf_plan_opts_init(o) stf_plan_opts_init_version((o), STF_PLAN_OPTS_VERSION)

/* What happens to one output tensor. */
typedef enum stf_out_op {
    STF_OUT_COPY = 0,        /* bytes, dtype and shape unchanged (maybe renamed) */
    STF_OUT_RESHAPE,         /* bytes unchanged, new shape (header only) */
    STF_OUT_RELABEL,         /* bytes unchanged, new dtype (header only) */
    STF_OUT_CAST,            /* element-wise cast (BF16/F16 scale -> F32) */
    STF_OUT_NEW,             /* new small bytes made by the plan (markers) */
    STF_OUT_QUANT_WEIGHT,    /* requantized weight (I8 codes / packed W4A4) */
    STF_OUT_QUANT_SCALE,     /* its scale, from the same pass */
    STF_OUT_DEQUANT          /* dequantized to a float dtype (exclude) */
} stf_out_op;

/* "copy", "reshape", "relabel", "cast", "new", "quant-weight", "quant-scale", "dequant". */
STF_API const char *stf_out_op_name(stf_out_op op);

/* One tensor of the output. Strings and shape owned by the plan. */
typedef struct stf_plan_tensor_info {
    const char *name;        /* output name: name_len bytes (may hold U+0000), then a NUL */
    size_t name_len;
    stf_dtype dtype;
    unsigned rank;
    const uint64_t *shape;
    uint64_t nbytes;
    stf_out_op op;
    int64_t src;             /* input tensor index it is made from, -1 for NEW */
    size_t layer;            /* index into the plan's layers, SIZE_MAX when none */
} stf_plan_tensor_info;

/* The plan for one layer (a prefix with a weight and/or markers). */
typedef struct stf_plan_layer_info {
    const char *prefix;      /* input prefix: prefix_len bytes (may hold U+0000), then a NUL */
    const char *out_prefix;  /* output prefix (after rename), likewise out_prefix_len bytes */
    size_t prefix_len, out_prefix_len;
    size_t nrules;
    const char *const *rules;          /* names of the rules that applied, in order */
    size_t nactions;
    const stf_action *const *actions;  /* actions applied, in order */
    const char *summary;     /* one human line: "scale (256,) -> (256, 1); marker canonical" */
    int requantize;          /* 1 when the weight is requantized */
    const char *format;      /* output format, NULL when the layer is left unquantized */
    unsigned group;          /* output ConvRot group size (0: none) */
    stf_quant_mode mode;     /* requantization mode */
    /* 1 when the output differs from the input in this layer: a tensor's
     * bytes, name, dtype or shape, a tensor added or dropped, or the
     * layer's marker in _quantization_metadata. 0 when every action's
     * result equals its input (the summary then says so: "marker already
     * canonical"); such a layer is not counted as changed. */
    int changed;
} stf_plan_layer_info;

typedef struct stf_plan stf_plan;

/*
 * Plan the conversion of `c` by `r`. Reads the header and marker tensors,
 * and tensor data only for probes the recipe asks for. Errors: STF_EFORMAT
 * when the recipe cannot apply (e.g. flatten-conv on a non-Linear layer,
 * rename collisions, requantize of a layer whose data cannot be decoded),
 * with the layer and rule named in err. `c` and `r` must outlive the plan.
 */
STF_API int stf_plan_build(stf_plan **out, const stf_ckpt *c, const stf_recipe *r,
                           const stf_plan_opts *o, stf_err *err);
STF_API void stf_plan_free(stf_plan *p);

STF_API size_t stf_plan_layer_count(const stf_plan *p);
/* Layer i's record, made when first asked and kept until the plan is
 * freed; NULL when i is out of range or memory ran out. */
STF_API const stf_plan_layer_info *stf_plan_layer(const stf_plan *p, size_t i);
/* Output tensors, in canonical writer order. */
STF_API size_t stf_plan_tensor_count(const stf_plan *p);
STF_API const stf_plan_tensor_info *stf_plan_tensor(const stf_plan *p, size_t i);
/* Input tensors that are not written (dropped scales, markers, ...). */
STF_API size_t stf_plan_dropped_count(const stf_plan *p);
/* Dropped name i (NUL-terminated) and, when len is not NULL, its length in
 * bytes (a name may hold U+0000). NULL when i is out of range. */
STF_API const char *stf_plan_dropped_n(const stf_plan *p, size_t i, size_t *len);
/* stf_plan_dropped_n without the length. */
STF_API const char *stf_plan_dropped(const stf_plan *p, size_t i);
/* The output __metadata__, keys sorted. */
STF_API size_t stf_plan_meta_count(const stf_plan *p);
STF_API const stf_meta_entry *stf_plan_meta(const stf_plan *p, size_t i);
/* Data bytes of the output: total, and how many are copied unchanged. */
STF_API uint64_t stf_plan_bytes_total(const stf_plan *p);
STF_API uint64_t stf_plan_bytes_copied(const stf_plan *p);
/* The recipe's targets (STF_CONSUMER_* bits). */
STF_API unsigned stf_plan_targets(const stf_plan *p);
/*
 * 1 when the output differs from the input: some layer changed
 * (stf_plan_layer_info.changed), a tensor outside the layers is renamed or
 * dropped, a __metadata__ entry differs, or a file of the input is not in
 * canonical form (rewriting it canonically is a change). 0 when the plan
 * leaves the input as it is: its output has the input's tensors, metadata
 * and bytes, carries no stfix.version or stfix.recipe_sha256 stamp (only
 * an output that changed is stamped), and a single input file is written
 * byte for byte as it is; stf_plan_run of it in place
 * (stf_write_opts.replace_input) writes nothing.
 */
STF_API int stf_plan_changed(const stf_plan *p);

/* ---------------------------------------------------- tensor parallelism */

/*
 * The stf_tp_style_fn (check.h) of a parallel-style profile: `profile` is
 * a const stf_tp_profile *. The layer is seen as a recipe's selectors see
 * it (no probe verdict). Fails only as stf_tp_profile_style does, or with
 * STF_ENOMEM.
 */
STF_API int stf_tp_layer_style(void *profile, const stf_model *m, const stf_layer *l,
                               stf_parallel_style *style, stf_err *err);

/*
 * Which of profiles[0..n) fits the model's names: the one that classifies
 * the most layers with a 2-D weight (the first of equals). *best is its
 * index, SIZE_MAX when none classifies any layer; *classified how many it
 * classifies, *linear how many such layers there are.
 */
STF_API int stf_tp_profile_detect(size_t *best, size_t *classified, size_t *linear,
                                  const stf_tp_profile *const *profiles, size_t n,
                                  const stf_model *m, stf_err *err);

/* ------------------------------------------------------------------ run */

/* The layout of stf_run_opts this header describes (1: without progress,
 * 2: without cancel). */
#define STF_RUN_OPTS_VERSION 3u

typedef struct stf_run_opts {
    unsigned version;            /* STF_RUN_OPTS_VERSION, set by stf_run_opts_init */
    stf_pool *pool;              /* rows split over it; NULL = inline */
    uint64_t max_mem;            /* requantization working set (default 2 GiB) */
    uint64_t max_shard_size;     /* 0: one output file */
    int allow_noncompliant;      /* keep the output even if verification fails */
    int error_metrics;           /* compute rel-L2/cosine/SNR per requantized layer */
    stf_write_opts write;        /* passed to the writer; made by stf_run_opts_init */
    /* Version 2: the output's data bytes written (copied and computed) of
     * stf_plan_bytes_total, with the tensor or layer at work; NULL: none.
     * It replaces write.progress for the run. */
    stf_progress_fn progress;
    void *progress_ud;
    /* Version 3: when not NULL, the run reads *cancel before each tensor
     * it copies, each layer job and each piece of a compressed input's
     * copies, and before it verifies and publishes; once it is non-zero
     * (set from any thread, or from a signal handler) the run stops with
     * STF_ECANCELED, removing its temporary files: nothing appears at the
     * output path. A job under way finishes its layer first. */
    const volatile int *cancel;
} stf_run_opts;

/* Defaults of layout `version` (2 GiB working set, one output file; `write`
 * made as by stf_write_opts_init); as stf_open_opts_init_version. Call it
 * through the stf_run_opts_init macro. */
STF_API void stf_run_opts_init_version(stf_run_opts *o, unsigned version);
#define stf_run_opts_init(o) stf_run_opts_init_version((o), STF_RUN_OPTS_VERSION)

/* Error metrics of one requantized or dequantized layer. */
typedef struct stf_layer_metrics {
    const char *prefix;          /* output prefix: prefix_len bytes, then a NUL */
    size_t prefix_len;
    stf_metrics_result m;
} stf_layer_metrics;

typedef struct stf_run_report stf_run_report;

/*
 * Execute the plan into `out_path` through the writer and its output guard
 * (stf_output_check; o->write.input defaults to the plan's checkpoint). For
 * an in-place fix of a single file, out_path is the input's real path and
 * o->write.replace_input is set: the input is replaced only after full
 * success. The output is verified before it becomes visible: it is
 * re-opened and checked with the plan's target profiles; an error-severity
 * diagnostic fails the run with STF_EFORMAT and leaves nothing at out_path,
 * unless allow_noncompliant. *out (may be NULL) receives the report even on
 * a verification failure. Deterministic: same input, recipe and version
 * give the same bytes with any pool size. A plan built with
 * stf_plan_opts.speculate is completed by its run: a refuted verdict
 * rebuilds it in place (the layer and tensor records read before the run
 * are then stale), so read the plan after the run. A plan that changes
 * nothing (stf_plan_changed 0) run in place touches no file, not even a
 * lock or the input's modification time: the input is verified as it
 * stands, and the report lists no file.
 */
STF_API int stf_plan_run(stf_run_report **out, const stf_plan *p, const char *out_path,
                         const stf_run_opts *o, stf_err *err);

STF_API void stf_run_report_free(stf_run_report *r);
/* Verification diagnostics (NULL when verification did not run). */
STF_API const stf_check_report *stf_run_report_check(const stf_run_report *r);
STF_API size_t stf_run_report_metrics_count(const stf_run_report *r);
STF_API const stf_layer_metrics *stf_run_report_metrics(const stf_run_report *r, size_t i);
/* Files written (final paths), shards then index. */
STF_API size_t stf_run_report_file_count(const stf_run_report *r);
STF_API const char *stf_run_report_file(const stf_run_report *r, size_t i);

/* ------------------------------------------------------------------ diff */

/* The layout of stf_diff_opts this header describes. */
#define STF_DIFF_OPTS_VERSION 1u

typedef struct stf_diff_opts {
    unsigned version;          /* STF_DIFF_OPTS_VERSION, set by stf_diff_opts_init */
    int numeric;               /* compare the dequantized weights of quantized layers */
    uint64_t max_mem;          /* numeric working set (default 256 MiB; a row too wide for
                                  it goes in column pieces) */
    stf_pool *pool;            /* numeric decoding split over it; NULL = inline */
    stf_progress_fn progress;  /* bytes read of both inputs; NULL: none */
    void *progress_ud;
} stf_diff_opts;

/* Defaults of layout `version` (no numeric comparison, 256 MiB, no pool,
 * no progress); as stf_open_opts_init_version. Call it through the
 * stf_diff_opts_init macro. */
STF_API void stf_diff_opts_init_version(stf_diff_opts *o, unsigned version);
#define stf_diff_opts_init(o) stf_diff_opts_init_version((o), STF_DIFF_OPTS_VERSION)

/* How a tensor differs (bits of stf_diff_tensor_info.what). */
#define STF_DIFF_ADDED 1u     /* only in B */
#define STF_DIFF_REMOVED 2u   /* only in A */
#define STF_DIFF_DTYPE 4u     /* in both, dtype differs */
#define STF_DIFF_SHAPE 8u     /* in both, shape differs */
#define STF_DIFF_BYTES 16u    /* in both, data bytes differ (or their count) */

/* One tensor that is not the same in A and B. */
typedef struct stf_diff_tensor_info {
    const char *name;          /* name_len bytes (may hold U+0000), then a NUL */
    size_t name_len;
    unsigned what;             /* STF_DIFF_* bits */
    const stf_tensor_info *a;  /* in A, NULL when added */
    const stf_tensor_info *b;  /* in B, NULL when removed */
    uint64_t first_byte;       /* BYTES: offset of the first differing byte in the data */
} stf_diff_tensor_info;

/* A text that is not the same: a layer's marker (its key the layer prefix,
 * the text the JSON ComfyUI reads, as Python's json.dumps writes it) or a
 * __metadata__ entry (its key and value). NULL on the side that has none. */
typedef struct stf_diff_text {
    const char *key;           /* key_len bytes (may hold U+0000), then a NUL */
    size_t key_len;
    const char *a, *b;         /* NUL-terminated; a_len, b_len bytes */
    size_t a_len, b_len;
} stf_diff_text;

/* The numeric comparison of one layer present in both (B against A). */
typedef struct stf_diff_numeric_info {
    const char *prefix;        /* prefix_len bytes (may hold U+0000), then a NUL */
    size_t prefix_len;
    int compared;              /* 0: see why */
    const char *why;           /* not compared: the reason (cannot decode, shapes differ) */
    stf_metrics_result m;      /* compared: rel_l2, cosine, max_abs at (max_row, max_col) */
} stf_diff_numeric_info;

typedef struct stf_diff stf_diff;

/*
 * Compare checkpoint B with A: tensors (by name: added, removed, dtype,
 * shape and data bytes), the markers ComfyUI reads per layer, and the
 * __metadata__ entries (of all shards, the first shard's value of a key).
 * With o->numeric, every layer present in both with a weight and a marker or
 * quantized weight on either side is decoded as exclude would decode it and
 * compared in blocks of rows that fit o->max_mem, a row too wide for it in
 * column pieces with the same results (stfix-convrot(7), ERROR METRICS).
 * Tensor data is compared in bounded pieces. Errors: STF_EIO from
 * a read, STF_ENOMEM; a layer that cannot be decoded is reported in its
 * stf_diff_numeric_info, not as an error. Names, keys and tensor infos point
 * into `a` and `b`, which must outlive the result.
 */
STF_API int stf_diff_run(stf_diff **out, const stf_ckpt *a, const stf_ckpt *b,
                         const stf_diff_opts *o, stf_err *err);
STF_API void stf_diff_free(stf_diff *d);
/* 1 when no tensor, marker or metadata entry differs (the numeric results
 * do not count: they measure, they do not compare). */
STF_API int stf_diff_identical(const stf_diff *d);
/* Differing tensors: removed and changed in A's order, then added in B's. */
STF_API size_t stf_diff_tensor_count(const stf_diff *d);
STF_API const stf_diff_tensor_info *stf_diff_tensor(const stf_diff *d, size_t i);
/* Differing markers, by layer: A's layers in order, then those only in B. */
STF_API size_t stf_diff_marker_count(const stf_diff *d);
STF_API const stf_diff_text *stf_diff_marker(const stf_diff *d, size_t i);
/* Differing __metadata__ entries, sorted by key bytes. */
STF_API size_t stf_diff_meta_count(const stf_diff *d);
STF_API const stf_diff_text *stf_diff_meta(const stf_diff *d, size_t i);
/* Numeric results (o->numeric), in A's layer order. */
STF_API size_t stf_diff_numeric_count(const stf_diff *d);
STF_API const stf_diff_numeric_info *stf_diff_numeric(const stf_diff *d, size_t i);

#ifdef __cplusplus
}
#endif
#endif
