/*
 * stfix EXPERIMENTAL API, model layer: the Python json/repr emulation, shape-rule
 * arithmetic, canonical marker bytes.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_MODEL_H
#define STFIX_EXPERIMENTAL_MODEL_H

#include "../model.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Free a string returned by any function of this header. No-op on NULL. */
STF_EXPERIMENTAL_API
void stf_model_str_free(char *s);

/* ============================================================ pyjson */

/* Python type of a parsed JSON value. */
typedef enum stf_pytype {
    STF_PY_NONE = 0,  /* null */
    STF_PY_BOOL,      /* true / false */
    STF_PY_INT,       /* unbounded integer; the digit text is kept */
    STF_PY_FLOAT,     /* any number with '.', 'e' or 'E', plus NaN/Infinity/-Infinity */
    STF_PY_STR,       /* UTF-8 text (lone surrogates from \ud800 escapes kept as WTF-8) */
    STF_PY_LIST,
    STF_PY_DICT       /* keys unique; a re-assigned key keeps its first position */
} stf_pytype;


/*
 * Parse `len` bytes exactly as Python `json.loads(bytes)` would: UTF-8/16/32
 * detection (and UTF-8 BOM strip), whitespace only " \t\n\r", NaN/Infinity,
 * unbounded ints, duplicate keys last-wins, raw control characters in strings
 * rejected, anything after the value rejected ("Extra data"). On success *out
 * is the root (free with stf_pyval_free). On failure *out is NULL, the code
 * is STF_EFORMAT, STF_ELIMIT for nesting deeper than STF_PYJSON_MAX_DEPTH
 * (Python's RecursionError: "maximum recursion depth exceeded while decoding
 * a JSON array from a unicode string", at the bracket that opens one level
 * too many), or STF_ENOMEM; err->msg holds Python's message ("Expecting
 * value: line 1 column 1 (char 0)", "Extra data: ...", or a decode error)
 * and err->offset (has_offset set) the byte offset within `bytes` where the
 * problem was found; callers add the tensor's file offset and name. Stack
 * use is bounded by STF_PYJSON_MAX_DEPTH, memory by the input's size.
 */
STF_EXPERIMENTAL_API
int stf_pyjson_parse(stf_pyval **out, const void *bytes, size_t len, stf_err *err);

/* Free a tree returned by stf_pyjson_parse. No-op on NULL. Only for roots. */
STF_EXPERIMENTAL_API
void stf_pyval_free(stf_pyval *v);

/* Type of v (v must not be NULL). */
STF_EXPERIMENTAL_API
stf_pytype stf_pyval_type(const stf_pyval *v);

/* 1 when v is the JSON literal `true` (Python `v is True`); 0 otherwise, incl. NULL. */
STF_EXPERIMENTAL_API
int stf_pyval_is_true(const stf_pyval *v);

/* Python truthiness bool(v): None/False/0/0.0/""/[]/{} are false, NaN is true. */
STF_EXPERIMENTAL_API
int stf_pyval_truthy(const stf_pyval *v);

/* BOOL: 0 or 1. Other types: 0. */
STF_EXPERIMENTAL_API
int stf_pyval_bool(const stf_pyval *v);

/* INT: decimal text as written, "-0" normalised to "0", leading '-' kept. Else NULL. */
STF_EXPERIMENTAL_API
const char *stf_pyval_int_text(const stf_pyval *v);

/* INT: the value if it fits in int64 (0), else STF_ELIMIT; other types STF_EINVAL. */
STF_EXPERIMENTAL_API
int stf_pyval_int64(int64_t *out, const stf_pyval *v);

/* FLOAT: the double (as Python float() rounds it; inf/nan included). INT/BOOL:
 * converted (huge ints give +-inf). Other types: 0.0. */
STF_EXPERIMENTAL_API
double stf_pyval_float(const stf_pyval *v);

/* STR: the UTF-8 bytes (NUL-terminated) and *len (may be NULL). Else NULL. */
STF_EXPERIMENTAL_API
const char *stf_pyval_str(const stf_pyval *v, size_t *len);

/* LIST: number of items; DICT: number of entries; else 0. */
STF_EXPERIMENTAL_API
size_t stf_pyval_len(const stf_pyval *v);

/* LIST item i or DICT value i (insertion order); NULL when out of range. */
STF_EXPERIMENTAL_API
const stf_pyval *stf_pyval_item(const stf_pyval *v, size_t i);

/* DICT key i (insertion order) and *len (may be NULL); NULL otherwise. */
STF_EXPERIMENTAL_API
const char *stf_pyval_key(const stf_pyval *v, size_t i, size_t *len);

/* DICT lookup by NUL-terminated key (Python d.get(key)); NULL if absent or v not a dict. */
STF_EXPERIMENTAL_API
const stf_pyval *stf_pyval_find(const stf_pyval *v, const char *key);

/*
 * Python `a == b` (1 == 1.0 == True, 0 == False, dicts ignore order). A bare
 * NaN != NaN, but inside lists/dicts NaNs compare equal, as in CPython:
 * json.loads returns one shared NaN object and containers compare by
 * identity first.
 */
STF_EXPERIMENTAL_API
int stf_pyval_equal(const stf_pyval *a, const stf_pyval *b);

/* Python `v == n` for an integer n (so 256, 256.0 and, for n = 1, True match). */
STF_EXPERIMENTAL_API
int stf_pyval_eq_int(const stf_pyval *v, int64_t n);

/*
 * Python int(v): INT itself, BOOL 0/1, FLOAT truncated toward zero, STR
 * parsed as int(str) does (surrounding whitespace, sign, '_' between digits).
 * STF_EINVAL where Python raises (None, list, dict, nan/inf, "256.0"),
 * STF_ELIMIT when the result does not fit in int64. err may be NULL.
 */
STF_EXPERIMENTAL_API
int stf_pyval_pyint(int64_t *out, const stf_pyval *v, stf_err *err);

/*
 * Python json.dumps(v) with default arguments: separators ", " and ": ",
 * ensure_ascii (\uXXXX, surrogate pairs above U+FFFF), NaN/Infinity,
 * floats as repr. *out is NUL-terminated; *len (may be NULL) its length.
 */
STF_EXPERIMENTAL_API
int stf_pyjson_dumps(char **out, size_t *len, const stf_pyval *v, stf_err *err);

/* ============================================================ pyrepr */

/*
 * Python repr() of the str whose UTF-8 bytes are s[0..n): single quotes
 * unless the text contains ' and no "; \\ \n \r \t escaped; other
 * non-printables as \xNN / \uNNNN / \UNNNNNNNN; printable non-ASCII kept.
 * Bytes that are not valid UTF-8 print as '\udcNN' (surrogateescape, as
 * Python shows undecodable path bytes).
 */
STF_EXPERIMENTAL_API
int stf_pyrepr_str(char **out, const char *s, size_t n, stf_err *err);

/* Python repr(float(d)): shortest round-trip ("256.0", "1e+16", "inf", "nan", "-0.0"). */
STF_EXPERIMENTAL_API
int stf_pyrepr_double(char **out, double d, stf_err *err);

/* Python repr() of a JSON value: None, True, 256, 256.0, 'x', [1, 2], {'a': 1}. */
STF_EXPERIMENTAL_API
int stf_pyrepr_value(char **out, const stf_pyval *v, stf_err *err);

/* Python str() of a JSON value: the text itself for STR, else as repr (str(None) = "None"). */
STF_EXPERIMENTAL_API
int stf_pystr_value(char **out, const stf_pyval *v, stf_err *err);

/* Python tuple of ints: "(2, 256)", "(2,)", "()". shape may be NULL when rank == 0. */
STF_EXPERIMENTAL_API
int stf_pyrepr_shape(char **out, unsigned rank, const uint64_t *shape, stf_err *err);

/* SGLang's weight_meta: "('I8', (2, 256))"; t == NULL prints "None". */
STF_EXPERIMENTAL_API
int stf_pyrepr_tensor_meta(char **out, const stf_tensor_info *t, stf_err *err);

/*
 * Python repr(sorted(names)[:limit]) of n UTF-8 strings (lens[i] bytes each;
 * lens may be NULL for NUL-terminated names): "['a.weight', 'b']". Sorted by
 * code point (= bytewise). limit = SIZE_MAX for all. Duplicates are kept.
 */
STF_EXPERIMENTAL_API
int stf_pyrepr_sorted(char **out, const char *const *names, const size_t *lens, size_t n,
                      size_t limit, stf_err *err);

/* ============================================================ formats */

/*
 * The concrete dims of a shape rule for given N, K, GS. Returns 0 and fills
 * dims[0..*rank) (rank <= 2), or STF_EINVAL for STF_SHAPE_NONE, a division
 * that is not exact, or GS == 0 where needed.
 */
STF_EXPERIMENTAL_API
int stf_shape_rule_dims(uint64_t dims[2], unsigned *rank, stf_shape_rule r, uint64_t n,
                        uint64_t k, uint64_t gs);

/* ============================================================ markers */


/*
 * Normalised marker fields (stfix-defects(7), MARKER FIELDS), as the
 * canonical writer emits them.
 * Key order of the canonical bytes: format, full_precision_matrix_mult,
 * group_size, convrot, convrot_groupsize, linear_dtype, num_experts.
 */
typedef struct stf_marker_spec {
    const char *format;              /* required; borrowed */
    int full_precision_matrix_mult;  /* 1: write "full_precision_matrix_mult": true */
    int group_size_set;              /* write "group_size": group_size */
    int64_t group_size;
    int convrot;                     /* 1: write "convrot": true */
    int convrot_groupsize_set;       /* write "convrot_groupsize": convrot_groupsize */
    int64_t convrot_groupsize;
    const char *linear_dtype;        /* written unless NULL or "int4"; borrowed */
    int num_experts_set;             /* write "num_experts": num_experts */
    int64_t num_experts;
} stf_marker_spec;

/*
 * Canonical marker bytes (stfix-defects(7), CANONICAL MARKER): Python
 * json.dumps with default separators, ensure_ascii. *out is NUL-terminated;
 * *len (may be NULL) excludes the NUL.
 * STF_EINVAL when spec->format is NULL.
 */
STF_EXPERIMENTAL_API
int stf_marker_canonical(char **out, size_t *len, const stf_marker_spec *spec,
                         stf_err *err);

/* Flags for stf_marker_normalize. */
/* missing-format: no format -> "int8_tensorwise" (caller checked W I8, S F32) */
#define STF_NORM_ADD_INT8_FORMAT 1u
/* w4a8-without-convrot: asym_w4a8_int8 without convrot gets convrot */
#define STF_NORM_ADD_W4A8_CONVROT 2u
/* string-metadata-value: a string marker v reads as {"format": v} */
#define STF_NORM_WRAP_STRING 4u

/*
 * Read a marker object into a spec the way ComfyUI does: top-level keys
 * first, then the nested `params` dict (the nested-params hoist);
 * `convrot` by Python truthiness; groupsizes through Python int(); per_row,
 * `_*` and unknown keys dropped. The spec's strings point into `marker` (borrowed).
 * Errors (STF_EFORMAT, message naming the key): not a dict, missing format
 * (unless flagged), non-string format/linear_dtype, int() failing.
 */
STF_EXPERIMENTAL_API
int stf_marker_normalize(stf_marker_spec *out, const stf_pyval *marker, unsigned flags,
                         stf_err *err);

/*
 * Canonical _quantization_metadata value (stfix-defects(7), MARKER
 * CHANNELS): json.dumps({"format_version": "1.0", "layers": {...}}) with
 * the n prefixes sorted bytewise, each mapped to
 * its canonical marker text markers[i] (a JSON object as produced by
 * stf_marker_canonical, inserted verbatim). plens[i] is the length of
 * prefixes[i] (a prefix may hold U+0000); plens NULL means NUL-terminated
 * prefixes. STF_EINVAL on duplicate prefixes.
 */
STF_EXPERIMENTAL_API
int stf_qmeta_canonical(char **out, size_t *len, const char *const *prefixes,
                        const size_t *plens, const char *const *markers, size_t n,
                        stf_err *err);

/* ============================================================ the model */

/* Its parsed value (NULL for ABSENT / NOT_JSON / TOO_DEEP), e.g. to read format_version. */
STF_EXPERIMENTAL_API
const stf_pyval *stf_model_qmeta_value(const stf_model *m, size_t shard);

/*
 * Legacy scaled FP8 (stfix-defects(7), legacy-scaled-fp8): the tensors
 * named PREFIX "scaled_fp8", PREFIX empty or ending in a dot, that mark a
 * checkpoint older than comfy_quant markers. Their count, and the i-th
 * one's checkpoint tensor index (SIZE_MAX out of range), in checkpoint
 * order.
 */
STF_EXPERIMENTAL_API
size_t stf_model_scaled_fp8_count(const stf_model *m);
STF_EXPERIMENTAL_API
size_t stf_model_scaled_fp8_at(const stf_model *m, size_t i);

/*
 * The position (for stf_model_scaled_fp8_at) of the scaled_fp8 tensor
 * whose PREFIX is the longest that the names of l's tensors start with,
 * as ComfyUI matches its model prefix; SIZE_MAX when none does. Time
 * linear in the length of l's prefix.
 */
STF_EXPERIMENTAL_API
size_t stf_model_layer_scaled_fp8(const stf_model *m, const stf_layer *l);

#ifdef __cplusplus
}
#endif
#endif
