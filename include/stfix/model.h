/*
 * stfix public API: the model layer, i.e. the Comfy view of a checkpoint
 * (stfix-defects(7), MARKER CHANNELS to CANONICAL MARKER). Included through
 * <stfix.h>.
 *
 *  - formats: the table of stfix-defects(7), FORMATS, as data;
 *  - markers: both channels, as found and parsed;
 *  - stf_model: the checkpoint's tensors grouped into layers by prefix.
 *
 * The Python json/repr emulation (stf_pyjson_*, stf_pyval_*, stf_pyrepr_*)
 * that reads a marker's value, and the canonical marker bytes, are
 * experimental: <stfix/experimental.h>.
 *
 * Thread safety: the format table is static. A built stf_model is
 * read-only: any number of threads may read it and its layers and markers
 * at once, and build models of one checkpoint at once.
 */
#ifndef STFIX_MODEL_H
#define STFIX_MODEL_H

#include "base.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* ================================================== tensor parallelism */

/*
 * How a tensor-parallel server splits a Linear layer (stfix-checks(7),
 * TENSOR PARALLEL RULES): a column-parallel layer is split along its output
 * rows N, a row-parallel one along its input columns K, a replicated one is
 * whole on every GPU. A layer's style comes from its name, through a
 * parallel-style profile (stfix-rules(5), PARALLEL STYLES).
 */
typedef enum stf_parallel_style {
    STF_PARALLEL_UNKNOWN = 0, /* no profile classifies the layer */
    STF_PARALLEL_COLUMN,
    STF_PARALLEL_ROW,
    STF_PARALLEL_REPLICATED,
    STF_PARALLEL_COUNT
} stf_parallel_style;

/* "unknown", "column", "row", "replicated"; NULL out of range. */
STF_API const char *stf_parallel_style_name(stf_parallel_style s);

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
/* ============================================================ the model */

/* A layer: every tensor sharing prefix P plus every marker for P. Read-only. */
typedef struct stf_layer {
    const char *prefix;          /* P (may be ""): prefix_len bytes (may hold U+0000), then a NUL */
    size_t prefix_len;
    /* The layer's tensors by suffix: read them with stf_layer_tensor(). A
     * count and a pointer, so the struct keeps its layout when suffixes are
     * added; a layer without tensors (only a marker names it) has none. */
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

/* Layers in order of first appearance: tensors in ckpt order, then metadata-only prefixes.
 * A layer lives as long as the model. The model keeps a layer that only one metadata
 * entry names in less room than a struct: the first stf_model_layer of such a layer
 * makes the structs of all of them, and gives NULL when there is no memory for that,
 * as for an index out of range. */
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
/* NOT_JSON, TOO_DEEP: Python's message and the byte offset within the value; else NULL. */
STF_API const char *stf_model_qmeta_error(const stf_model *m, size_t shard, uint64_t *offset);

/* Number of markers with status OK anywhere (0 = R29, no quantization). */
STF_API size_t stf_model_marker_count(const stf_model *m);

#ifdef __cplusplus
}
#endif
#endif
