/*
 * stfix public API: the check layer. Included through <stfix.h>.
 *
 * Acceptance profiles (stfix-checks(7): CONTAINER RULES, SGLANG RULES,
 * COMFYUI RULES) turn an opened checkpoint into a list of diagnostics.
 * Nothing is modified.
 * Unlike SGLang, which stops at its first error, a check run reports every
 * finding it can decide from the file.
 *
 * Rule ids: "S1".."S29", "I1".."I7" (container, reported by the reader;
 * S29 only after stf_ckpt_check_hashes),
 * "R1".."R62" (SGLang), "C1".."C24" (ComfyUI), and the numeric probes
 * "N1" (non-finite scale), "N2" (zero or negative scale), "H1" (row versus
 * column quantization: stfix-defects(7), ROW AND COLUMN DETECTION) and
 * "H2" (Sylvester rather than regular rotation), and the tensor-parallel
 * rules "T1".."T5" (stf_check_run_tp).
 *
 * Thread safety: stf_check_run only reads its checkpoint, so several runs
 * may check one checkpoint at once, each with its own stf_check_opts.pool
 * (a pool serves one call at a time). A report is read-only once made and
 * may be read from several threads. The rule catalogue is static.
 */
#ifndef STFIX_CHECK_H
#define STFIX_CHECK_H

#include "base.h"
#include "container.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Profile selection (bit set): the container and numeric profiles below,
 * and a consumer's profile by its STF_CONSUMER_* bit (STF_CONSUMER_SGLANG:
 * R-rules, STF_CONSUMER_COMFYUI: C-rules), so a recipe's targets select
 * their profiles as they are. The container profile is always on.
 */
#define STF_CHECK_CONTAINER 1u /* S- and I-rule findings of the reader */
#define STF_CHECK_NUMERIC 8u   /* read tensor data: N1, N2, H1, H2 */
#define STF_CHECK_ALL (STF_CHECK_CONTAINER | STF_CONSUMER_ALL)

/*
 * What a finding does to its consumer when the file is loaded anyway
 * (stfix-checks(7), SEVERITIES): the consumer raises and the load fails
 * (REFUSES); it loads without error and then computes wrong results or
 * drops data (SILENT); it loads and works, but slower or replicated
 * (DEGRADED); or nothing goes wrong (NOTE). Severity says how stfix ranks
 * a finding, the effect what the consumer does with it.
 */
typedef enum stf_effect {
    STF_EFFECT_NOTE = 0,
    STF_EFFECT_REFUSES = 1,
    STF_EFFECT_SILENT = 2,
    STF_EFFECT_DEGRADED = 3
} stf_effect;

/* "note", "refuses", "silent", "degraded"; NULL when out of range. */
STF_API const char *stf_effect_name(stf_effect e);

/*
 * One finding. `rule` is the stable id; `layer` the layer prefix it is about
 * ("" for a file-level finding); `message` the consumer's exact text where
 * the consumer has one (SGLang f-strings reproduced with Python reprs), else
 * a plain statement of the silent failure; `fix` the repair. `profile` is
 * "container", "sglang", "comfyui" or "numeric". `effect` is what the
 * finding does to that profile's consumer; for STF_EFFECT_REFUSES under a
 * consumer profile the message is the consumer's own exception text. All
 * strings belong to the report.
 */
typedef struct stf_diag {
    char rule[8];
    stf_severity severity;
    const char *profile;
    const char *layer;       /* layer_len bytes (a prefix may hold U+0000), then a NUL */
    size_t layer_len;
    const char *message;
    const char *fix;
    stf_effect effect;       /* appended: what the consumer does with the file */
} stf_diag;

/* The layout of stf_check_opts this header describes (1: without progress). */
#define STF_CHECK_OPTS_VERSION 2u

typedef struct stf_check_opts {
    unsigned version;    /* STF_CHECK_OPTS_VERSION, set by stf_check_opts_init */
    unsigned profiles;   /* STF_CHECK_* and STF_CONSUMER_* bits (default STF_CHECK_ALL) */
    double tau;          /* H1 saturation fraction threshold (default 0.99) */
    struct stf_pool *pool; /* numeric probes run across layers on it; NULL = inline.
                            * The report does not depend on its size. */
    /* Version 2: the weight bytes the numeric probes have read of those
     * they will read, with the layer just probed; NULL: none. */
    stf_progress_fn progress;
    void *progress_ud;
} stf_check_opts;

/* Defaults of layout `version`: every profile but the numeric probes, tau
 * 0.99, no progress; as stf_open_opts_init_version. Call it through the
 * stf_check_opts_init macro. */
STF_API void stf_check_opts_init_version(stf_check_opts *o, unsigned version);
#define stf_check_opts_init(o) stf_check_opts_init_version((o), STF_CHECK_OPTS_VERSION)

/* The result of a run: an ordered list of diagnostics. */
typedef struct stf_check_report stf_check_report;

/*
 * Run the selected profiles over `c` (opts NULL: defaults). Without
 * STF_CHECK_NUMERIC only the header and the marker tensors are read, so the
 * time does not depend on the checkpoint's size. Diagnostics come in
 * profile order (container, sglang, comfyui, numeric) and, inside a profile,
 * in the order the consumer evaluates its rules. Fails with STF_ENOMEM, or
 * STF_EIO when tensor bytes cannot be read; findings are never errors.
 * Free with stf_check_report_free.
 */
STF_API int stf_check_run(stf_check_report **out, const stf_ckpt *c, const stf_check_opts *opts,
                          stf_err *err);

/* No-op on NULL. */
STF_API void stf_check_report_free(stf_check_report *r);

STF_API size_t stf_check_count(const stf_check_report *r);
/* Diagnostic i (NULL when out of range). */
STF_API const stf_diag *stf_check_diag(const stf_check_report *r, size_t i);
/* How many diagnostics have severity s. */
STF_API size_t stf_check_count_severity(const stf_check_report *r, stf_severity s);

/* ------------------------------------------------ tensor parallelism */

/*
 * The tensor-parallel rules T1-T5 (stfix-checks(7), TENSOR PARALLEL RULES):
 * for each degree asked, whether SGLang can split each Linear layer across
 * that many GPUs, given the layer's parallel style. The styles come from
 * the caller: `style` is asked once per layer with a 2-D weight (the
 * pipeline's stf_tp_layer_style classifies by a parallel-style profile).
 */
typedef int (*stf_tp_style_fn)(void *ctx, const stf_model *m, const stf_layer *l,
                               stf_parallel_style *style, stf_err *err);

#define STF_TP_OPTS_VERSION 1u
#define STF_TP_MAX_DEGREES 16

typedef struct stf_tp_opts {
    unsigned version;     /* STF_TP_OPTS_VERSION, set by stf_tp_opts_init */
    size_t count;         /* degrees in `degrees` (0: no T rules, no summaries) */
    unsigned degrees[STF_TP_MAX_DEGREES]; /* each 1 to 65536, in the order reported */
    stf_tp_style_fn style; /* NULL: every layer is of unknown style */
    void *style_ctx;
    const char *profile;  /* profile name for messages; NULL: "none" */
} stf_tp_opts;

/* Defaults of layout `version`: no degrees, no classifier. Call it through
 * the stf_tp_opts_init macro. */
STF_API void stf_tp_opts_init_version(stf_tp_opts *o, unsigned version);
#define stf_tp_opts_init(o) stf_tp_opts_init_version((o), STF_TP_OPTS_VERSION)

/*
 * stf_check_run, then the T rules for every degree of `tp` (NULL or no
 * degrees: exactly stf_check_run). Their findings come last, profile "tp":
 * per degree, per layer in model order; T5 once per layer. Errors as
 * stf_check_run, plus STF_EINVAL for a degree outside 1 to 65536 and any
 * error of the style callback.
 */
STF_API int stf_check_run_tp(stf_check_report **out, const stf_ckpt *c,
                             const stf_check_opts *opts, const stf_tp_opts *tp, stf_err *err);

/* What one degree does to the checkpoint's Linear layers. */
typedef struct stf_tp_summary {
    unsigned tp;                   /* the degree */
    size_t sharded;                /* layers split cleanly (column or row) */
    size_t replicated_by_style;    /* layers the profile calls replicated */
    size_t replicated;             /* row layers SGLang must replicate (T2) */
    uint64_t replicated_bytes;     /* their bytes, held whole on every GPU */
    size_t cannot_load;            /* layers that stop the load (T1, T3, T4) */
    size_t unknown;                /* layers of unknown style (T5) */
} stf_tp_summary;

/* Number of degrees summarised (0 without tp), and summary i. */
STF_API size_t stf_check_tp_count(const stf_check_report *r);
STF_API const stf_tp_summary *stf_check_tp_summary(const stf_check_report *r, size_t i);

/*
 * One line describing what a rule id means: the title of its catalogue
 * entry (stf_rule_doc_find below); NULL for an id the catalogue lacks.
 */
STF_API const char *stf_check_rule_title(const char *rule);

/*
 * The rule catalogue: one entry per rule id any layer can report (S, I, L,
 * R, C, N and H families), the single source of `stfix explain`, of
 * stfix-checks(7) and of the rule list in stfix(1). Entries are static and
 * in catalogue order (family, then number). Every text field is one
 * paragraph of plain ASCII without a final newline.
 */
typedef struct stf_rule_doc {
    const char *id;       /* "R15" */
    const char *severity; /* "error", "warning", "info", "warning; error with --strict", ... */
    const char *title;    /* one line, no final period */
    const char *checks;   /* what the rule checks */
    const char *why;      /* why a consumer (SGLang, ComfyUI, the reader) cares */
    const char *ignored;  /* what happens when the finding is ignored */
    const char *fix;      /* how to fix it */
    const char *action;   /* the recipe action(s) that fix it, or NULL when none does */
    /* appended: what the finding does to the consumer, as stf_effect_name
     * words: one word ("refuses"), or per profile where they differ
     * ("sglang: refuses; comfyui: silent"); a finding at severity info is
     * always a note. */
    const char *effect;
} stf_rule_doc;

/* Number of catalogue entries. */
STF_API size_t stf_rule_doc_count(void);
/* Entry i in catalogue order; NULL when out of range. */
STF_API const stf_rule_doc *stf_rule_doc_at(size_t i);
/* The entry of a rule id (exact, case-sensitive); NULL if unknown. */
STF_API const stf_rule_doc *stf_rule_doc_find(const char *id);

#ifdef __cplusplus
}
#endif
#endif
