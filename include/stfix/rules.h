/*
 * stfix public API: the rules layer. Included through <stfix.h>.
 *
 * A recipe is a versioned YAML file (`stfix: 1`, see stfix-rules(5)) that
 * names the consumer profiles the output must satisfy and an ordered list of
 * rules, each a selector (`match`) and one or more actions (`do`) with typed
 * parameters. Loading validates the whole document and reports every problem
 * as "FILE:LINE:COLUMN: message" (1-based). The rules layer never touches
 * tensor bytes: it only says which layers a rule selects and what to do.
 *
 * Thread safety: a loaded recipe is read-only: its accessors and
 * stf_rules_match may be called from several threads at once on it.
 * Loading recipes in several threads at once is fine.
 */
#ifndef STFIX_RULES_H
#define STFIX_RULES_H

#include "base.h"
#include "container.h"
#include "model.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ layer view */

/* Rotation the layer's weights carry (stfix-convrot(7), SYLVESTER ORDER). */
typedef enum stf_rotation_kind {
    STF_ROTATION_UNKNOWN = 0, /* no rotation declared, or not decidable */
    STF_ROTATION_REGULAR,
    STF_ROTATION_SYLVESTER
} stf_rotation_kind;

/* One top-level marker field: key and its JSON value text (e.g. "256", "true",
 * "\"int8_tensorwise\""). */
typedef struct stf_marker_field {
    const char *key;
    const char *json;
} stf_marker_field;

/*
 * What a selector sees of one layer. The pipeline fills it; every pointer is
 * borrowed for the duration of one stf_rules_match call. Nothing here
 * depends on the model layer, so recipes can be checked without a checkpoint.
 */
typedef struct stf_layer_view {
    const char *prefix;            /* layer prefix P (NUL-terminated) */
    size_t prefix_len;             /* its bytes when it holds U+0000; 0: strlen(prefix) */
    int has_weight;                /* P.weight exists */
    stf_dtype weight_dtype;
    unsigned weight_rank;
    const uint64_t *weight_shape;  /* weight_rank entries, as stored */
    uint64_t n, k;                 /* logical out/in features (K counts unpacked columns) */
    int has_scale;                 /* P.weight_scale exists */
    stf_dtype scale_dtype;
    unsigned scale_rank;
    const uint64_t *scale_shape;
    int has_marker;                /* a marker exists in either channel */
    const char *format;            /* the marker's "format" string; NULL when absent */
    const stf_marker_field *marker_fields; /* top-level fields of the marker */
    size_t marker_field_count;
    stf_probe_verdict probe;
    stf_rotation_kind rotation;
    stf_parallel_style parallel;   /* from the recipe's styles and its profile */
    int has_input_scale;           /* appended: P.input_scale exists */
    unsigned input_scale_rank;
    const uint64_t *input_scale_shape;
} stf_layer_view;

/* ---------------------------------------------------------------- actions */

typedef enum stf_action_kind {
    STF_ACT_RESHAPE_SCALE = 0,
    STF_ACT_TRANSPOSE_SCALE,
    STF_ACT_FLATTEN_CONV,
    STF_ACT_EXCLUDE,
    STF_ACT_REWRITE_FORMAT,
    STF_ACT_SET_MARKER,
    STF_ACT_CAST_SCALE,
    STF_ACT_RELABEL,
    STF_ACT_REQUANTIZE,
    STF_ACT_RENAME,
    STF_ACT_DROP,
    STF_ACT_MIGRATE_SCALED_FP8,  /* legacy scaled FP8 -> comfy_quant form (header-only) */
    STF_ACT_INFER_MARKER,        /* a missing or unreadable marker the file determines */
    STF_ACT_COUNT
} stf_action_kind;

/* Target layout of reshape-scale. */
typedef enum stf_scale_layout {
    STF_SCALE_ROWS = 0,   /* [N,1] (INT8) */
    STF_SCALE_VECTOR = 1, /* [N]   (W4A4) */
    STF_SCALE_SCALAR = 2  /* []    (from [1]) */
} stf_scale_layout;

/* What to do with __metadata__["_quantization_metadata"]. */
typedef enum stf_meta_policy {
    STF_META_MIRROR = 0, /* rebuild it to equal the tensor markers of each file */
    STF_META_DROP = 1    /* remove it */
} stf_meta_policy;

/* Which channel wins when the two marker channels disagree. */
typedef enum stf_channel_pref {
    STF_PREFER_METADATA = 0, /* what ComfyUI does */
    STF_PREFER_TENSOR = 1
} stf_channel_pref;

/* When a format rename does not match the data. */
typedef enum stf_mismatch_policy {
    STF_MISMATCH_REQUANTIZE = 0,
    STF_MISMATCH_FAIL = 1
} stf_mismatch_policy;

/* When no allowed group size divides K. */
typedef enum stf_indivisible_policy {
    STF_INDIVISIBLE_EXCLUDE = 0,
    STF_INDIVISIBLE_FAIL = 1
} stf_indivisible_policy;

/* Which tensor relabel changes. */
typedef enum stf_relabel_tensor {
    STF_RELABEL_WEIGHT = 0,
    STF_RELABEL_SCALE = 1
} stf_relabel_tensor;

/* Which scales cast-scale widens: weight_scale alone, or every scale that
 * is F32 by its format (weight_scale, weight_scale_2, input_scale,
 * weight_s_channel) found in BF16 or F16. */
typedef enum stf_cast_scales {
    STF_CAST_WEIGHT_SCALE = 0,
    STF_CAST_ALL_SCALES = 1
} stf_cast_scales;

/* Where infer-marker may find a layer's marker (bits of its `from`), tried
 * in this order: the layer's _quantization_metadata entry, the file's other
 * readable markers that fit the layer's tensors, the tensors alone. */
#define STF_INFER_FROM_METADATA 1u
#define STF_INFER_FROM_PEERS 2u
#define STF_INFER_FROM_TENSORS 4u
#define STF_INFER_FROM_ALL 7u

/* "Keep the source dtype" for exclude and requantize's fallback. */
#define STF_DTYPE_SOURCE STF_DTYPE_COUNT

#define STF_RULES_MAX_LIST 16

/*
 * One action with every parameter resolved (defaults applied): a tagged
 * union. Only the member of `params` named after `kind` is meaningful, and
 * the union is as large as its largest member, not the sum of all of them.
 * The library makes actions and hands them out by pointer (stf_rule_action),
 * so a kind added later may enlarge the union without breaking callers.
 * Strings are owned by the recipe.
 */
typedef struct stf_action {
    stf_action_kind kind;
    unsigned line, column; /* where it is written in the recipe (1-based) */
    union {
        struct { stf_scale_layout to; int require_probe; } reshape_scale;
        struct { int unused; } transpose_scale;
        struct { int unused; } flatten_conv;
        struct { stf_dtype dtype; } exclude;           /* BF16 (default), F16, F32, SOURCE */
        struct {
            size_t from_count;
            const char *from[STF_RULES_MAX_LIST];      /* empty: any non-upstream name */
            stf_format_id to;
            stf_mismatch_policy mismatch;
            stf_meta_policy metadata;
            /* requantize's tp for mismatch: requantize (appended; default 1) */
            unsigned tp;                              /* least common multiple of tp_list */
            size_t tp_count;
            unsigned tp_list[STF_RULES_MAX_LIST];
        } rewrite_format;
        struct {
            int has_format;                     /* 0: infer it from the tensors (missing-format) */
            stf_format_id format;
            int hoist_params;                   /* default 1 (nested-params) */
            size_t drop_key_count;
            const char *drop_keys[STF_RULES_MAX_LIST]; /* default per_row, quant_group_size */
            stf_meta_policy metadata;
            stf_channel_pref prefer;
        } set_marker;
        struct {
            stf_dtype to;                             /* F32 */
            stf_cast_scales tensors;                  /* appended; default weight_scale */
        } cast_scale;
        struct { stf_relabel_tensor tensor; stf_dtype from, to; } relabel;
        struct {
            stf_format_id format;                     /* INT8_TENSORWISE or CONVROT_W4A4 */
            size_t group_size_count;
            unsigned group_sizes[STF_RULES_MAX_LIST]; /* preference order; default 256, 64, 16 */
            stf_indivisible_policy on_indivisible;
            stf_dtype fallback_dtype;                 /* dtype for excluded layers */
            stf_quant_mode quant_mode;
            int quant_mode_set;                 /* written in the recipe (--quant-mode wins) */
            stf_dtype compute_dtype;                  /* BF16 (default), F16, F32 */
            int int8_activations;                     /* w4a4 linear_dtype int8 */
            unsigned tp;            /* least common multiple of tp_list (default 1) */
            size_t tp_count;                          /* degrees written in `tp` */
            unsigned tp_list[STF_RULES_MAX_LIST];     /* in recipe order; default [1] */
        } requantize;
        struct { const char *from; const char *to; } rename;
        struct { int scales; int markers; int input_scale; } drop;
        struct { int unused; } migrate_scaled_fp8;
        struct { unsigned from; } infer_marker;       /* STF_INFER_FROM_* bits; default all */
    } params;
} stf_action;

/* Kebab-case name ("reshape-scale"); NULL when out of range. */
STF_API const char *stf_action_name(stf_action_kind k);
/*
 * Whether an action ends rule processing for the layer it applies to
 * (exclude, requantize, drop): later rules do not see that layer.
 */
STF_API int stf_action_is_terminal(stf_action_kind k);

/* ----------------------------------------------------------------- recipe */

typedef struct stf_recipe stf_recipe;
typedef struct stf_rule stf_rule;
typedef struct stf_recipe_diags stf_recipe_diags;

/*
 * Load a recipe from `path`. On success *out owns the recipe (free with
 * stf_recipe_free). On an invalid recipe returns STF_EFORMAT, *out is NULL,
 * err->msg holds the first problem ("FILE:LINE:COL: message") and, when
 * `diags` is not NULL, *diags receives every problem in document order
 * (free with stf_recipe_diags_free; NULL when there is none to report).
 * Other errors: STF_ENOTFOUND (no file at `path`), STF_EIO (any other open
 * or read failure), STF_ENOMEM, STF_ELIMIT (file over 1 MiB).
 */
STF_API int stf_recipe_load_file(stf_recipe **out, stf_recipe_diags **diags, const char *path,
                                 stf_err *err);

/* The layout of stf_recipe_opts this header describes (1: without
 * max_regex_steps; 2: without builtins). */
#define STF_RECIPE_OPTS_VERSION 3u

/* A recipe a program holds in memory (its built-in copy of a bundled
 * recipe), found by `include: NAME` after every search directory. All
 * borrowed for the load. An entry with a NULL name, or with NULL bytes and
 * a length, is skipped. */
typedef struct stf_recipe_builtin {
    const char *name;  /* the NAME an include names it by */
    const char *path;  /* what messages and stf_recipe_file call it (NULL: name);
                          never opened */
    const void *bytes; /* the recipe's text, len bytes */
    size_t len;
} stf_recipe_builtin;

/* How a recipe's `include:` entries are found (stfix-rules(5), INCLUDES),
 * and what a use of it may cost. */
typedef struct stf_recipe_opts {
    unsigned version;                 /* STF_RECIPE_OPTS_VERSION, set by stf_recipe_opts_init */
    const char *const *search_dirs;   /* where `include: NAME` looks for NAME.yaml, in order */
    size_t search_count;              /* 0 (and no builtins): an include by name is an error */
    /* Version 2: the regex steps one plan of the recipe may take over all
     * its searches, every rule against every layer (stfix-rules(5),
     * REGULAR EXPRESSIONS); one more is STF_ELIMIT, rule L12. 0: the
     * default, 100,000,000. */
    uint64_t max_regex_steps;
    /* Version 3: where `include: NAME` looks when no search directory has
     * NAME.yaml: the first of these builtin_count recipes named NAME. Its
     * text is held to the same limits as a file's (1 MiB, and the
     * includes' depth, count and total). NULL: none. */
    const stf_recipe_builtin *builtins;
    size_t builtin_count;
} stf_recipe_opts;

/* Defaults of layout `version` (no search directories nor builtins, the
 * default regex step budget); as stf_open_opts_init_version. Call it
 * through the stf_recipe_opts_init macro. */
STF_API void stf_recipe_opts_init_version(stf_recipe_opts *o, unsigned version);
#define stf_recipe_opts_init(o) stf_recipe_opts_init_version((o), STF_RECIPE_OPTS_VERSION)

/*
 * As stf_recipe_load_file, with the recipes it includes resolved as `o`
 * says (NULL: stf_recipe_opts_init's defaults). An include is a path
 * relative to the directory of the file that names it, or the NAME of a
 * recipe in o->search_dirs, else in o->builtins. Rules are concatenated in
 * order, each included file's where its `include:` is, before the file's
 * own rules. A missing or invalid include, a cycle (the message names every
 * file of it), more than 16 levels, 64 files or 4 MiB in all are problems
 * of the including file, positioned at the include entry (STF_EFORMAT).
 */
STF_API int stf_recipe_load_file_opts(stf_recipe **out, stf_recipe_diags **diags,
                                      const char *path, const stf_recipe_opts *o, stf_err *err);

/* As stf_recipe_load_file on `len` bytes at `buf` (borrowed); `name` is the
 * file name used in messages (and relative includes are found from its
 * directory). */
STF_API int stf_recipe_load_mem(stf_recipe **out, stf_recipe_diags **diags, const void *buf,
                                size_t len, const char *name, stf_err *err);
/* As stf_recipe_load_mem, with the recipes it includes resolved as `o`
 * says (stf_recipe_load_file_opts). */
STF_API int stf_recipe_load_mem_opts(stf_recipe **out, stf_recipe_diags **diags,
                                     const void *buf, size_t len, const char *name,
                                     const stf_recipe_opts *o, stf_err *err);

/* No-op on NULL. */
STF_API void stf_recipe_free(stf_recipe *r);

/* Bitmask of STF_CONSUMER_* named by `target`. */
STF_API unsigned stf_recipe_targets(const stf_recipe *r);
/*
 * The `kind` the recipe says it is (stfix-rules(5), TOP-LEVEL KEYS):
 * "repair" (it changes only what its targets refuse or misload, and leaves
 * every layer they accept byte for byte), "conversion" (it converts, and
 * may requantize layers its targets accept), or NULL when it does not say.
 * Static strings.
 */
STF_API const char *stf_recipe_kind(const stf_recipe *r);
/* The `description` text, or NULL. */
STF_API const char *stf_recipe_description(const stf_recipe *r);
/* Lower-case hex SHA-256 (64 characters) of the resolved recipe
 * (stf_recipe_resolved): the file's bytes when it includes nothing. */
STF_API const char *stf_recipe_sha256(const stf_recipe *r);
/* The resolved recipe, one YAML document with every include expanded
 * (stfix-rules(5), INCLUDES): the file's bytes when it includes nothing.
 * Owned by the recipe; *len (may be NULL) gets its bytes. */
STF_API const char *stf_recipe_resolved(const stf_recipe *r, size_t *len);
/* The files the recipe was read from: 0 is the one loaded, then each
 * include in the order it was read. NULL when i is out of range. */
STF_API size_t stf_recipe_file_count(const stf_recipe *r);
STF_API const char *stf_recipe_file(const stf_recipe *r, size_t i);
/* Rules in file order. */
STF_API size_t stf_recipe_rule_count(const stf_recipe *r);
STF_API const stf_rule *stf_recipe_rule(const stf_recipe *r, size_t i);

STF_API const char *stf_rule_name(const stf_rule *rule);
STF_API unsigned stf_rule_line(const stf_rule *rule);
/* The file the rule is written in (one of stf_recipe_file). */
STF_API const char *stf_rule_file(const stf_rule *rule);
STF_API size_t stf_rule_action_count(const stf_rule *rule);
STF_API const stf_action *stf_rule_action(const stf_rule *rule, size_t i);

/*
 * *matched is 1 when every key of the rule's `match` holds for `layer`, else
 * 0 (also for a NULL rule or layer). Fails only when a `regex` search reaches
 * one of its limits (STF_ELIMIT; stfix-rules(5)), when PCRE2 fails otherwise
 * (STF_EFORMAT) or when out of memory (STF_ENOMEM): err->msg then starts with
 * the regex's position "FILE:LINE:COL: rules[i].match.regex" and names the
 * layer prefix searched, and *matched is 0. Safe to call from several threads
 * on one recipe.
 */
STF_API int stf_rules_match(int *matched, const stf_rule *rule, const stf_layer_view *layer,
                            stf_err *err);

/* ------------------------------------------------------ parallel styles */

/*
 * A parallel-style profile (stfix-rules(5), PARALLEL STYLES): a YAML file
 * `stfix: 1`, `profile: NAME`, optional `description` and `styles`, a
 * sequence of {match: SELECTOR, style: column|row|replicated}; the first
 * entry whose selector holds gives a layer's style. Loading reports
 * problems as stf_recipe_load_file does ("FILE:LINE:COL: message", every
 * one in *diags). Read-only once loaded.
 */
typedef struct stf_tp_profile stf_tp_profile;

STF_API int stf_tp_profile_load_file(stf_tp_profile **out, stf_recipe_diags **diags,
                                     const char *path, stf_err *err);
STF_API int stf_tp_profile_load_mem(stf_tp_profile **out, stf_recipe_diags **diags,
                                    const void *buf, size_t len, const char *name, stf_err *err);
/* No-op on NULL. */
STF_API void stf_tp_profile_free(stf_tp_profile *p);
/* The `profile` name and the `description` (NULL when none). */
STF_API const char *stf_tp_profile_name(const stf_tp_profile *p);
STF_API const char *stf_tp_profile_description(const stf_tp_profile *p);
/*
 * *style of the layer: the first entry of `p` whose selector holds, else
 * STF_PARALLEL_UNKNOWN (also for a NULL profile). Fails only as
 * stf_rules_match does (a regex limit).
 */
STF_API int stf_tp_profile_style(stf_parallel_style *style, const stf_tp_profile *p,
                                 const stf_layer_view *layer, stf_err *err);
/*
 * Attach the profile the recipe's layers are classified with (borrowed: it
 * must outlive the recipe's use; NULL detaches). Call it before the recipe
 * is used, not while other threads use it.
 */
STF_API void stf_recipe_set_tp_profile(stf_recipe *r, const stf_tp_profile *p);
/* The profile attached to r, or NULL. */
STF_API const stf_tp_profile *stf_recipe_tp_profile(const stf_recipe *r);
/*
 * *style of the layer under the recipe: its `parallel` entries first (they
 * override the profile), then its attached profile; STF_PARALLEL_UNKNOWN
 * when neither classifies the layer.
 */
STF_API int stf_recipe_parallel_style(stf_parallel_style *style, const stf_recipe *r,
                                      const stf_layer_view *layer, stf_err *err);

/*
 * Warnings of a loaded recipe: what is valid but may be slow, such as a
 * regex that repeats a group holding a repeat ((a+)+; stfix-rules(5),
 * REGULAR EXPRESSIONS). Each is "FILE:LINE:COL: PATH: warning: message",
 * in the order the files were read; owned by the recipe. NULL when i is
 * out of range.
 */
STF_API size_t stf_recipe_warning_count(const stf_recipe *r);
STF_API const char *stf_recipe_warning(const stf_recipe *r, size_t i);

STF_API size_t stf_recipe_diags_count(const stf_recipe_diags *d);
/* "FILE:LINE:COL: message" of problem i. */
STF_API const char *stf_recipe_diags_text(const stf_recipe_diags *d, size_t i);
STF_API unsigned stf_recipe_diags_line(const stf_recipe_diags *d, size_t i);
STF_API unsigned stf_recipe_diags_column(const stf_recipe_diags *d, size_t i);
STF_API void stf_recipe_diags_free(stf_recipe_diags *d);

#ifdef __cplusplus
}
#endif
#endif
