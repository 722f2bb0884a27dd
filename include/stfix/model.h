/*
 * stfix public API: the model layer, i.e. the Comfy view of a checkpoint
 * (stfix-defects(7), MARKER CHANNELS to CANONICAL MARKER). Included through
 * <stfix.h>.
 *
 *  - pyjson: a JSON parser with Python `json.loads(bytes)` semantics and a
 *    small immutable value tree (stf_pyval) with Python equality;
 *  - pyrepr: Python repr()/str() of strings, values, shapes and sorted name
 *    lists, as SGLang's f-string messages print them;
 *  - formats: the table of stfix-defects(7), FORMATS, as data;
 *  - markers: both channels parsed, normalisation, canonical bytes
 *    (stfix-defects(7), CANONICAL MARKER);
 *  - stf_model: the checkpoint's tensors grouped into layers by prefix.
 *
 * Strings returned through `char **out` are allocated through the library's
 * allocation hook; release them with stf_model_str_free().
 */
#ifndef STFIX_MODEL_H
#define STFIX_MODEL_H

#include "base.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Free a string returned by any function of this header. No-op on NULL. */
STF_API void stf_model_str_free(char *s);

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

/* An immutable node of a parsed value tree. Owned by its root. */
typedef struct stf_pyval stf_pyval;

/*
 * The deepest nesting of arrays and objects json.loads decodes. CPython's
 * C scanner (3.10, 3.11) counts each open container against the
 * interpreter's recursion limit (1000 by default), next to the Python
 * frames already on the stack: json.loads, JSONDecoder.decode and
 * raw_decode called from a script's top level hold 4, leaving 995 levels;
 * every further caller frame leaves one less. One level more raises
 * RecursionError, which the consumers do not catch: the file is refused.
 * (Later interpreters count C recursion apart from Python frames and
 * allow more: 1497 levels in 3.12.1, 9998 in 3.13.0.)
 */
#define STF_PYJSON_MAX_DEPTH 995

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
STF_API int stf_pyjson_parse(stf_pyval **out, const void *bytes, size_t len, stf_err *err);

/* Free a tree returned by stf_pyjson_parse. No-op on NULL. Only for roots. */
STF_API void stf_pyval_free(stf_pyval *v);

/* Type of v (v must not be NULL). */
STF_API stf_pytype stf_pyval_type(const stf_pyval *v);

/* 1 when v is the JSON literal `true` (Python `v is True`); 0 otherwise, incl. NULL. */
STF_API int stf_pyval_is_true(const stf_pyval *v);

/* Python truthiness bool(v): None/False/0/0.0/""/[]/{} are false, NaN is true. */
STF_API int stf_pyval_truthy(const stf_pyval *v);

/* BOOL: 0 or 1. Other types: 0. */
STF_API int stf_pyval_bool(const stf_pyval *v);

/* INT: decimal text as written, "-0" normalised to "0", leading '-' kept. Else NULL. */
STF_API const char *stf_pyval_int_text(const stf_pyval *v);

/* INT: the value if it fits in int64 (0), else STF_ELIMIT; other types STF_EINVAL. */
STF_API int stf_pyval_int64(int64_t *out, const stf_pyval *v);

/* FLOAT: the double (as Python float() rounds it; inf/nan included). INT/BOOL:
 * converted (huge ints give +-inf). Other types: 0.0. */
STF_API double stf_pyval_float(const stf_pyval *v);

/* STR: the UTF-8 bytes (NUL-terminated) and *len (may be NULL). Else NULL. */
STF_API const char *stf_pyval_str(const stf_pyval *v, size_t *len);

/* LIST: number of items; DICT: number of entries; else 0. */
STF_API size_t stf_pyval_len(const stf_pyval *v);

/* LIST item i or DICT value i (insertion order); NULL when out of range. */
STF_API const stf_pyval *stf_pyval_item(const stf_pyval *v, size_t i);

/* DICT key i (insertion order) and *len (may be NULL); NULL otherwise. */
STF_API const char *stf_pyval_key(const stf_pyval *v, size_t i, size_t *len);

/* DICT lookup by NUL-terminated key (Python d.get(key)); NULL if absent or v not a dict. */
STF_API const stf_pyval *stf_pyval_find(const stf_pyval *v, const char *key);

/*
 * Python `a == b` (1 == 1.0 == True, 0 == False, dicts ignore order). A bare
 * NaN != NaN, but inside lists/dicts NaNs compare equal, as in CPython:
 * json.loads returns one shared NaN object and containers compare by
 * identity first.
 */
STF_API int stf_pyval_equal(const stf_pyval *a, const stf_pyval *b);

/* Python `v == n` for an integer n (so 256, 256.0 and, for n = 1, True match). */
STF_API int stf_pyval_eq_int(const stf_pyval *v, int64_t n);

/*
 * Python int(v): INT itself, BOOL 0/1, FLOAT truncated toward zero, STR
 * parsed as int(str) does (surrounding whitespace, sign, '_' between digits).
 * STF_EINVAL where Python raises (None, list, dict, nan/inf, "256.0"),
 * STF_ELIMIT when the result does not fit in int64. err may be NULL.
 */
STF_API int stf_pyval_pyint(int64_t *out, const stf_pyval *v, stf_err *err);

/*
 * Python json.dumps(v) with default arguments: separators ", " and ": ",
 * ensure_ascii (\uXXXX, surrogate pairs above U+FFFF), NaN/Infinity,
 * floats as repr. *out is NUL-terminated; *len (may be NULL) its length.
 */
STF_API int stf_pyjson_dumps(char **out, size_t *len, const stf_pyval *v, stf_err *err);

/* ============================================================ pyrepr */

/*
 * Python repr() of the str whose UTF-8 bytes are s[0..n): single quotes
 * unless the text contains ' and no "; \\ \n \r \t escaped; other
 * non-printables as \xNN / \uNNNN / \UNNNNNNNN; printable non-ASCII kept.
 * Bytes that are not valid UTF-8 print as '\udcNN' (surrogateescape, as
 * Python shows undecodable path bytes).
 */
STF_API int stf_pyrepr_str(char **out, const char *s, size_t n, stf_err *err);

/* Python repr(float(d)): shortest round-trip ("256.0", "1e+16", "inf", "nan", "-0.0"). */
STF_API int stf_pyrepr_double(char **out, double d, stf_err *err);

/* Python repr() of a JSON value: None, True, 256, 256.0, 'x', [1, 2], {'a': 1}. */
STF_API int stf_pyrepr_value(char **out, const stf_pyval *v, stf_err *err);

/* Python str() of a JSON value: the text itself for STR, else as repr (str(None) = "None"). */
STF_API int stf_pystr_value(char **out, const stf_pyval *v, stf_err *err);

/* Python tuple of ints: "(2, 256)", "(2,)", "()". shape may be NULL when rank == 0. */
STF_API int stf_pyrepr_shape(char **out, unsigned rank, const uint64_t *shape, stf_err *err);

/* SGLang's weight_meta: "('I8', (2, 256))"; t == NULL prints "None". */
STF_API int stf_pyrepr_tensor_meta(char **out, const stf_tensor_info *t, stf_err *err);

/*
 * Python repr(sorted(names)[:limit]) of n UTF-8 strings (lens[i] bytes each;
 * lens may be NULL for NUL-terminated names): "['a.weight', 'b']". Sorted by
 * code point (= bytewise). limit = SIZE_MAX for all. Duplicates are kept.
 */
STF_API int stf_pyrepr_sorted(char **out, const char *const *names, const size_t *lens, size_t n,
                              size_t limit, stf_err *err);

/* ============================================================ formats */

typedef enum stf_format_id {
    STF_FMT_INT8_TENSORWISE = 0,
    STF_FMT_CONVROT_W4A4,
    STF_FMT_ASYM_W4A8_INT8,
    STF_FMT_FLOAT8_E4M3FN,
    STF_FMT_FLOAT8_E5M2,
    STF_FMT_NVFP4,
    STF_FMT_MXFP8,
    STF_FMT_AWQ_W4A16,
    STF_FMT_COUNT
} stf_format_id;

/*
 * Shape rules for a format's tensors, in logical terms: N = out features,
 * K = logical in features (2 * W.shape[1] for packed 4-bit weights),
 * GS = the marker's group_size (W4A8/AWQ).
 */
typedef enum stf_shape_rule {
    STF_SHAPE_NONE = 0,  /* no rule */
    STF_SHAPE_NK,        /* (N, K) */
    STF_SHAPE_NK2,       /* (N, K/2): two 4-bit codes per byte */
    STF_SHAPE_N1,        /* (N, 1) */
    STF_SHAPE_N,         /* (N,) */
    STF_SHAPE_SCALAR,    /* () */
    STF_SHAPE_K,         /* (K,) */
    STF_SHAPE_N_KGS,     /* (N, K/GS) */
    STF_SHAPE_KGS_N,     /* (K/GS, N) */
    STF_SHAPE_N_K16,     /* (N, K/16) as SGLang checks nvfp4 block scales */
    STF_SHAPE_N_K32,     /* (N, K/32) mxfp8 block scales */
    STF_SHAPE_16,        /* (16,) */
    STF_SHAPE_NVFP4_SWIZZLED /* (roundup(N,128), roundup(K/16,4)): ComfyUI's nvfp4 block scales */
} stf_shape_rule;

/* Layer tensor suffixes the model knows (see stf_suffix_name for the text). */
typedef enum stf_suffix {
    STF_SFX_WEIGHT = 0,          /* ".weight" */
    STF_SFX_WEIGHT_SCALE,        /* ".weight_scale" */
    STF_SFX_COMFY_QUANT,         /* ".comfy_quant" (the tensor marker) */
    STF_SFX_INPUT_SCALE,         /* ".input_scale" */
    STF_SFX_WEIGHT_SCALE_2,      /* ".weight_scale_2" */
    STF_SFX_WEIGHT_S_REL,        /* ".weight_s_rel" */
    STF_SFX_WEIGHT_S_CHANNEL,    /* ".weight_s_channel" */
    STF_SFX_WEIGHT_CODEBOOK,     /* ".weight_codebook" */
    STF_SFX_WEIGHT_CORRECTION,   /* ".weight_correction" */
    STF_SFX_PRE_QUANT_SCALE,     /* ".pre_quant_scale" */
    STF_SFX_WEIGHT_ZEROS,        /* ".weight_zeros" */
    STF_SFX_WEIGHT_ZERO,         /* ".weight_zero" (zero-point-name misspelling) */
    STF_SFX_BIAS,                /* ".bias" */
    STF_SFX_SCALE_WEIGHT,        /* ".scale_weight" (legacy scaled fp8) */
    STF_SFX_SCALE_INPUT,         /* ".scale_input" (legacy scaled fp8) */
    STF_SFX_COMFY_ATTENTION_CONFIG, /* ".comfy_attention.config" (pass-through) */
    STF_SFX_COUNT
} stf_suffix;

/* ".weight", ...; NULL when out of range. */
STF_API const char *stf_suffix_name(stf_suffix s);

/* One companion tensor of a format (the weight is described separately). */
typedef struct stf_format_tensor {
    stf_suffix suffix;
    int required;               /* SGLang R12 / ComfyUI C4 */
    stf_dtype dtypes[3];        /* accepted dtypes; ndtypes of them; [0] is canonical */
    unsigned ndtypes;
    stf_shape_rule shape;       /* the canonical / SGLang shape */
    stf_shape_rule alt_shape;   /* a second shape ComfyUI accepts, or STF_SHAPE_NONE */
} stf_format_tensor;

/*
 * The consumers stfix checks for, as bits of one set used everywhere: who
 * loads a format (stf_format_info.consumers), a recipe's targets
 * (stf_recipe_targets, stf_plan_targets) and the consumer profiles of a
 * check (stf_check_opts.profiles, next to STF_CHECK_CONTAINER and
 * STF_CHECK_NUMERIC).
 */
#define STF_CONSUMER_SGLANG 2u
#define STF_CONSUMER_COMFYUI 4u
#define STF_CONSUMER_ALL (STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI)

/* One row of stfix-defects(7), FORMATS. */
typedef struct stf_format_info {
    stf_format_id id;
    const char *name;             /* the marker's "format" value */
    stf_dtype weight_dtype;       /* canonical storage dtype of P.weight */
    stf_shape_rule weight_shape;  /* STF_SHAPE_NK or STF_SHAPE_NK2 (packed) */
    unsigned consumers;           /* who loads it (STF_CONSUMER_*) */
    const char *sglang_config;    /* "KitchenInt8Config", ...; NULL when SGLang rejects (R30) */
    const char *comfy_layout;     /* ComfyUI layout class name; NULL where none is named */
    const stf_format_tensor *tensors; /* companions: scales, then optional ones */
    size_t ntensors;
    int64_t default_group_size;   /* marker group_size default (W4A8 16, AWQ 64), else 0 */
} stf_format_info;

/* Row for id; NULL when out of range. */
STF_API const stf_format_info *stf_format_at(stf_format_id id);

/* The marker's "format" value of id ("int8_tensorwise"); NULL when out of range. */
STF_API const char *stf_format_name(stf_format_id id);

/* Row whose name equals the len bytes at name exactly; NULL when unknown (C3/R30). */
STF_API const stf_format_info *stf_format_find(const char *name, size_t len);

/*
 * The concrete dims of a shape rule for given N, K, GS. Returns 0 and fills
 * dims[0..*rank) (rank <= 2), or STF_EINVAL for STF_SHAPE_NONE, a division
 * that is not exact, or GS == 0 where needed.
 */
STF_API int stf_shape_rule_dims(uint64_t dims[2], unsigned *rank, stf_shape_rule r, uint64_t n,
                                uint64_t k, uint64_t gs);

/* ============================================================ probes */

/*
 * How a layer's INT8 codes are quantized, as the row/column detector H1
 * reads them (stfix-defects(7), ROW AND COLUMN DETECTION). The check layer
 * reports it, recipes select on it (`probe:`), the plan acts on it.
 */
typedef enum stf_probe_verdict {
    STF_PROBE_UNKNOWN = 0, /* not probed, or no verdict */
    STF_PROBE_ROW,
    STF_PROBE_COLUMN,
    STF_PROBE_TENSOR,
    STF_PROBE_BLOCK,
    STF_PROBE_AMBIGUOUS,
    STF_PROBE_COUNT
} stf_probe_verdict;

/* "UNKNOWN", "ROW", "COLUMN", "TENSOR", "BLOCK", "AMBIGUOUS"; NULL out of range. */
STF_API const char *stf_probe_verdict_name(stf_probe_verdict v);

/* ============================================================ markers */

typedef enum stf_marker_channel {
    STF_CHAN_TENSOR = 0,   /* P.comfy_quant tensor bytes */
    STF_CHAN_METADATA = 1  /* __metadata__["_quantization_metadata"]["layers"][P] */
} stf_marker_channel;

typedef enum stf_marker_status {
    STF_MARKER_OK = 0,          /* parsed and a JSON object */
    STF_MARKER_NOT_JSON = 1,    /* R6: bytes are not JSON / not decodable */
    STF_MARKER_NOT_OBJECT = 2,  /* R7 (tensor) / R4 (metadata layers value) */
    STF_MARKER_BAD_DTYPE = 3,   /* R8: tensor dtype numpy cannot convert (BF16, F8_*, F4, F6_*) */
    STF_MARKER_TOO_DEEP = 4     /* R6: nested deeper than STF_PYJSON_MAX_DEPTH; json.loads
                                   raises RecursionError, which SGLang does not catch */
} stf_marker_status;

/* One marker as found. Strings and value owned by the model. */
typedef struct stf_marker {
    stf_marker_channel channel;
    stf_marker_status status;
    size_t shard;                /* file it came from */
    const char *path;            /* that file's path as opened */
    const char *key;             /* tensor name (tensor channel) or layers key (metadata) */
    size_t key_len;              /* bytes of key (it may hold U+0000) */
    int64_t tensor;              /* ckpt tensor index for the tensor channel, else -1 */
    const stf_pyval *value;      /* parsed JSON (OK, NOT_OBJECT); NULL otherwise */
    const char *error;           /* NOT_JSON, TOO_DEEP: Python's message; else NULL */
    uint64_t error_offset;       /* NOT_JSON, TOO_DEEP: byte offset within the marker bytes */
} stf_marker;

/* Status of one file's _quantization_metadata (R1-R3). */
typedef enum stf_qmeta_status {
    STF_QMETA_ABSENT = 0,      /* no such __metadata__ key */
    STF_QMETA_OK = 1,          /* an object with a "layers" object */
    STF_QMETA_NOT_JSON = 2,    /* R1 */
    STF_QMETA_NOT_OBJECT = 3,  /* R2 */
    STF_QMETA_NO_LAYERS = 4,   /* R3: "layers" missing or not an object */
    STF_QMETA_TOO_DEEP = 5     /* R1: nested deeper than STF_PYJSON_MAX_DEPTH (RecursionError) */
} stf_qmeta_status;

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
STF_API int stf_marker_canonical(char **out, size_t *len, const stf_marker_spec *spec,
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
STF_API int stf_marker_normalize(stf_marker_spec *out, const stf_pyval *marker, unsigned flags,
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
STF_API int stf_qmeta_canonical(char **out, size_t *len, const char *const *prefixes,
                                const size_t *plens, const char *const *markers, size_t n,
                                stf_err *err);

/* ============================================================ the model */

/* A layer: every tensor sharing prefix P plus every marker for P. Read-only. */
typedef struct stf_layer {
    const char *prefix;          /* P (may be ""): prefix_len bytes (may hold U+0000), then a NUL */
    size_t prefix_len;
    /* The layer's tensors by suffix: read them with stf_layer_tensor(). A
     * count and a pointer, so the struct keeps its layout when suffixes are
     * added. */
    const int64_t *tensors;
    size_t ntensors;
    const stf_marker *markers;   /* all markers, both channels, every shard: per shard the
                                    metadata one first, then the tensor one (SGLang order) */
    size_t nmarkers;
    int conflict;                /* R5: two markers with status OK are not Python-equal */
    const stf_marker *comfy;     /* what ComfyUI uses: the last metadata marker if any
                                    (metadata overwrites), else the last tensor marker; NULL if none */
} stf_layer;

/* Opaque Comfy view of a checkpoint. */
typedef struct stf_model stf_model;

/*
 * Group c's tensors into layers by the longest known suffix, and parse every
 * marker from both channels of every shard. Malformed markers and metadata
 * are not errors: they are recorded (stf_marker.status, stf_model_qmeta_status).
 * Fails only with STF_ENOMEM (or STF_EIO when marker bytes cannot be read).
 * `c` must outlive the model. Free with stf_model_free.
 */
STF_API int stf_model_build(stf_model **out, const stf_ckpt *c, stf_err *err);

/* No-op on NULL. */
STF_API void stf_model_free(stf_model *m);

/* The checkpoint the model was built from. */
STF_API const stf_ckpt *stf_model_ckpt(const stf_model *m);

/* Layers in order of first appearance: tensors in ckpt order, then metadata-only prefixes. */
STF_API size_t stf_model_layer_count(const stf_model *m);
STF_API const stf_layer *stf_model_layer(const stf_model *m, size_t i);

/* Find a layer by exact prefix (len bytes). 0 and *idx, or STF_ENOTFOUND. */
STF_API int stf_model_find_layer(size_t *idx, const stf_model *m, const char *prefix, size_t len);

/*
 * The checkpoint tensor index of the layer's tensor with suffix s, or -1
 * when the layer has none (or s is a suffix this library does not know).
 * A name in two shards gives the later file's tensor.
 */
STF_API int64_t stf_layer_tensor(const stf_layer *l, stf_suffix s);

/* Tensor info of a layer's suffix, or NULL when absent. */
STF_API const stf_tensor_info *stf_layer_tensor_info(const stf_model *m, const stf_layer *l,
                                                     stf_suffix s);

/* Tensors whose names end in no known suffix (norms, embeddings' other keys, ...). */
STF_API size_t stf_model_other_count(const stf_model *m);
/* The i-th one's ckpt tensor index; SIZE_MAX if i is out of range. */
STF_API size_t stf_model_other(const stf_model *m, size_t i);

/* Status of shard i's _quantization_metadata (R1-R3). */
STF_API stf_qmeta_status stf_model_qmeta_status(const stf_model *m, size_t shard);
/* Its parsed value (NULL for ABSENT / NOT_JSON / TOO_DEEP), e.g. to read format_version. */
STF_API const stf_pyval *stf_model_qmeta_value(const stf_model *m, size_t shard);
/* NOT_JSON, TOO_DEEP: Python's message and the byte offset within the value; else NULL. */
STF_API const char *stf_model_qmeta_error(const stf_model *m, size_t shard, uint64_t *offset);

/* Number of markers with status OK anywhere (0 = R29, no quantization). */
STF_API size_t stf_model_marker_count(const stf_model *m);

#ifdef __cplusplus
}
#endif
#endif
