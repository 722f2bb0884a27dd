/*
 * Internal interfaces of the check layer, shared between the report
 * (report.c), the message helpers (report_text.c, layer_facts.c), the
 * driver (check_run.c), the profiles (profile_container.c,
 * profile_sglang.c, profile_sglang_formats.c, profile_comfyui.c) and the
 * numeric probes (probes.c). Not public.
 */
#ifndef STF_CHECK_INTERNAL_H
#define STF_CHECK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/check.h"
#include "stfix/quant.h"
#include "stfix/experimental/check.h"
#include "stfix/experimental/model.h"
#include "stfix/experimental/quant.h"
#include "model/model_internal.h"
#include "util/progress.h"
#include "util/util.h"

/* What findings share but their layer: their strings by number, so that
 * the findings of one rule on many layers are one kind. */
typedef struct stf__kind {
    uint32_t msg;   /* strs: the message, its layer's name left out (report_store.c) */
    uint32_t fix;   /* strs */
    uint16_t rule;  /* rules */
    uint8_t sev;    /* stf_severity */
    uint8_t bits;   /* stf_effect | profile index << 2 */
} stf__kind;

/* One finding as a report keeps it: its kind and its layer, 8 bytes, in
 * blocks of STF__REC_BLOCK so that the records grow without a copy or
 * room to spare. */
typedef struct stf__rec {
    uint32_t kind;  /* kinds */
    uint32_t layer; /* layers; 0: file level */
} stf__rec;

#define STF__REC_BLOCK 8192u

struct stf_check_report {
    stf__rec **v;         /* blocks of STF__REC_BLOCK findings */
    size_t n, capv;
    stf__kind *kinds;     /* distinct kinds, by number */
    size_t nkinds, capkinds;
    uint32_t *kinds_ix;   /* open addressing over kinds: number + 1 */
    size_t capkinds_ix;
    stf_tp_summary *tp;   /* one per degree asked (stf_check_run_tp) */
    size_t ntp;
    /* Each distinct message (with its layer's name left out), fix and
     * layer name once, in `text`: the messages of the many layers a
     * header can name are one text each. */
    stf__arena text;
    const char **strs;    /* distinct messages and fixes, by number */
    size_t nstrs, capstrs;
    uint32_t *strs_ix;    /* open addressing over strs: number + 1 */
    size_t capstrs_ix;
    /* Distinct layer names in order of first appearance, each its bytes
     * (a prefix may hold U+0000) and a NUL, one after another in `names`;
     * layers[i] is where name i starts, and it ends a byte before the next
     * one starts. [0] is "". */
    uint32_t *layers;
    size_t nlayers, caplayers;
    char *names;
    size_t nnames, capnames;
    uint32_t *layers_ix;  /* open addressing over layers: number + 1 */
    size_t caplayers_ix;
    char (*rules)[8];     /* distinct rule ids */
    size_t nrules, caprules;
    const char *profiles[64]; /* distinct profile names */
    size_t nprofiles;
    char *line;           /* a message being made */
    size_t capline;
    /* stf_check_diag's findings, made when first asked for, in blocks of
     * STF__DIAG_BLOCK, with their messages in `made_text`. */
    stf_diag **made;
    stf__arena made_text;
    void *lock;           /* a pthread_mutex_t: the report is read from several threads */
};

/* Findings stf_check_diag makes at once. */
#define STF__DIAG_BLOCK 64

/* A new empty report (report_store.c); NULL when out of memory. */
stf_check_report *stf__report_new(void);
/* Finding i's record and kind (report_store.c); i < r->n. */
const stf__rec *stf__report_rec(const stf_check_report *r, size_t i);
const stf__kind *stf__report_kind(const stf_check_report *r, size_t i);
/* Free the findings' records (report_store.c). */
void stf__report_free_recs(stf_check_report *r);
/* Finding i as stf_check_diag_peek gives it (report_store.c). */
size_t stf__report_peek(const stf_check_report *r, size_t i, stf_diag *out, char *buf,
                        size_t cap);

/*
 * The state of one run. Profiles add findings with stf__chk_add and borrow
 * formatted strings (reprs, shapes) from stf__chk_repr & co, which live until
 * the run ends. The first allocation or read failure is sticky in `rc` / `err`;
 * after it every helper is a no-op returning "".
 */
typedef struct stf__chk {
    const stf_ckpt *c;
    const stf_model *m;
    const stf_check_opts *o;
    stf_check_report *r;
    const char *profile;   /* profile name stamped on new findings */
    char **pool;           /* strings from the model's repr functions */
    size_t npool, cappool;
    int rc;
    stf_err *err;
} stf__chk;

/* Append a finding; message formatted from fmt. The layer is layer_len
 * bytes (it may hold U+0000); NULL means "". */
void stf__chk_add(stf__chk *k, const char *rule, stf_severity sev, const char *layer,
                  size_t layer_len, const char *fix, const char *fmt, ...) STF_PRINTF(7, 8);

/* Override the effect of the finding just added (a no-op after a failure).
 * stf__chk_add gives each finding the default of stf__effect_of. */
void stf__chk_effect(stf__chk *k, stf_effect e);
/* The effect a finding of `rule` at severity sev has under `profile`, from
 * the rule's catalogue entry; NOTE at severity info or without an entry. */
stf_effect stf__effect_of(const char *rule, const char *profile, stf_severity sev);

/* Python repr of the str s[0..n): 'blocks.0.fc1', 'a\x00b'. */
const char *stf__chk_repr(stf__chk *k, const char *s, size_t n);
/* A name (n bytes) as stf_name_escape prints it, for stfix's own messages:
 * blocks.0.fc1, a\u0000b. */
const char *stf__chk_name(stf__chk *k, const char *s, size_t n);
/* stf__chk_name of a layer's prefix. */
const char *stf__chk_layer(stf__chk *k, const stf_layer *l);
/* Python tuple of a tensor's shape, or "None" for NULL. */
const char *stf__chk_shape(stf__chk *k, const stf_tensor_info *t);
/* torch.Size([256, 1]) of a tensor's shape. */
const char *stf__chk_torch_size(stf__chk *k, const stf_tensor_info *t);
/* Python tuple of explicit dims. */
const char *stf__chk_dims(stf__chk *k, unsigned rank, const uint64_t *dims);
/* repr() / str() of a JSON value; "None" for NULL. */
const char *stf__chk_pyrepr(stf__chk *k, const stf_pyval *v);
const char *stf__chk_pystr(stf__chk *k, const stf_pyval *v);
/* ('I8', (2, 256)) or None. */
const char *stf__chk_meta(stf__chk *k, const stf_tensor_info *t);
/* repr(sorted(names)[:limit]); lens[i] is the length of names[i]. */
const char *stf__chk_sorted(stf__chk *k, const char *const *names, const size_t *lens, size_t n,
                            size_t limit);
/* Keep a string returned by the model layer until the run ends. */
const char *stf__chk_keep(stf__chk *k, char *s);
/* The pool's present size, for stf__chk_release. */
size_t stf__chk_mark(const stf__chk *k);
/* Free the strings pooled since `mark`: a profile's loop releases what one
 * layer's messages needed once they are added, so the pool holds one
 * layer's strings, not the whole run's. */
void stf__chk_release(stf__chk *k, size_t mark);
/* Record a failure code from a model/container call (first one wins). */
void stf__chk_fail(stf__chk *k, int rc);

/* The marker SGLang and the profiles act on for a layer: the last one with
 * status OK whose value is a dict, or NULL. */
const stf_pyval *stf__chk_marker(const stf_layer *l);
/* Its "format" as a NUL-terminated string, or NULL when missing/not a str. */
const char *stf__chk_format(const stf_pyval *marker);
/* torch's name of a dtype (torch.bfloat16), else its safetensors name. */
const char *stf__chk_torch_dtype(stf_dtype d);
/* Dtype name ("I8") of a tensor, or "None". */
const char *stf__chk_dtype(const stf_tensor_info *t);
/* Whether the shape of t equals dims[0..rank). */
int stf__chk_shape_is(const stf_tensor_info *t, unsigned rank, const uint64_t *dims);

/* Profiles. Each appends findings to k->r and returns 0 or k->rc. */
int stf__check_container(stf__chk *k);
int stf__check_sglang(stf__chk *k);
/* The per-format inspection rules (R13-R19, R44-R54) of one layer. */
void stf__check_sglang_layer_formats(stf__chk *k, const stf_layer *l, const stf_pyval *marker,
                                     const char *fmt);
int stf__check_comfyui(stf__chk *k);
/* ComfyUI's reading of a marker key: the top level, then under `params`
 * (comfy_param.c). */
const stf_pyval *stf__comfy_param(const stf_pyval *mk, const char *key);
/* int(convrot_groupsize), default 256, as ComfyUI reads it; -1 where int() raises. */
int64_t stf__comfy_groupsize(const stf_pyval *mk);
/* What ComfyUI raises (profile_comfyui_raises.c): C20 for each shard's
 * _quantization_metadata; C21 for a layer whose marker cannot be
 * read, returning 1 then (the layer's other rules are moot); C22 for a
 * W4A8 layer comfy-kitchen's layout parameters reject. */
void stf__check_comfyui_qmeta(stf__chk *k);
int stf__check_comfyui_marker(stf__chk *k, const stf_layer *l);
void stf__check_comfyui_w4a8(stf__chk *k, const stf_layer *l, const stf_pyval *mk,
                             const stf_tensor_info *w);
/* Legacy scaled-FP8 checkpoints (profile_legacy_fp8.c): C25 per scaled_fp8
 * tensor and C26 (and C11) per layer under the comfyui profile, R63 once
 * under the sglang profile. */
void stf__check_comfyui_legacy(stf__chk *k);
void stf__check_sglang_legacy(stf__chk *k);
int stf__check_numeric(stf__chk *k);
/* The T rules for the degrees of `tp` (profile_tp.c); fills k->r->tp. */
int stf__check_tp(stf__chk *k, const stf_tp_opts *tp);

#endif
