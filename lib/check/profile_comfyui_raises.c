/*
 * What ComfyUI raises while it loads a checkpoint (stfix-checks(7), COMFYUI
 * RULES C20-C22): its
 * metadata conversion (convert_old_quants) indexing a malformed
 * _quantization_metadata, its layer loader (_load_quantized_module)
 * decoding a marker, and comfy-kitchen's W4A8 layout checking its
 * parameters. Each message is the exception as Python prints it on the
 * last line of the traceback, "Type: text", computed from the file the way
 * Python computes it.
 */
#include <string.h>

#include "check/check_internal.h"

#define FIX_QMETA "rebuild _quantization_metadata from the tensor markers, or drop it"
#define FIX_MARKER "rewrite the marker as U8 bytes of one canonical JSON object (no NUL, no padding)"
#define FIX_W4A8 "re-export the layer from the original weights with K a multiple of 16, " \
                 "group_size and convrot_groupsize, or store it unquantized"

/* Python's type() name of a decoded JSON value. */
static const char *py_type(const stf_pyval *v)
{
    switch (v ? stf_pyval_type(v) : STF_PY_NONE) {
    case STF_PY_BOOL: return "bool";
    case STF_PY_INT: return "int";
    case STF_PY_FLOAT: return "float";
    case STF_PY_STR: return "str";
    case STF_PY_LIST: return "list";
    case STF_PY_DICT: return "dict";
    default: return "NoneType";
    }
}

/* The qualified exception type json.loads raised with message msg (as the
 * decoder of the model layer words it). */
static const char *json_exc(const char *msg)
{
    if (!msg) return "json.decoder.JSONDecodeError";
    if (strstr(msg, "codec can't decode")) return "UnicodeDecodeError";
    if (!strncmp(msg, "maximum recursion depth", 23)) return "RecursionError";
    if (!strncmp(msg, "Exceeds the limit", 17)) return "ValueError";
    return "json.decoder.JSONDecodeError";
}

/* C20: convert_old_quants on shard s's _quantization_metadata: json.loads,
 * then quant_metadata["layers"], then layers.items(). */
static void qmeta_rules(stf__chk *k, size_t s)
{
    const stf_pyval *root = stf_model_qmeta_value(k->m, s);
    switch (stf_model_qmeta_status(k->m, s)) {
    case STF_QMETA_NOT_JSON:
    case STF_QMETA_TOO_DEEP: {
        const char *e = stf_model_qmeta_error(k->m, s, NULL);
        stf__chk_add(k, "C20", STF_SEV_ERROR, NULL, 0, FIX_QMETA, "%s: %s", json_exc(e),
                     e ? e : "");
        break;
    }
    case STF_QMETA_NOT_OBJECT: {
        stf_pytype t = root ? stf_pyval_type(root) : STF_PY_NONE;
        if (t == STF_PY_LIST)
            stf__chk_add(k, "C20", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "TypeError: list indices must be integers or slices, not str");
        else if (t == STF_PY_STR)
            stf__chk_add(k, "C20", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "TypeError: string indices must be integers, not 'str'");
        else
            stf__chk_add(k, "C20", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "TypeError: '%s' object is not subscriptable", py_type(root));
        break;
    }
    case STF_QMETA_NO_LAYERS: {
        const stf_pyval *layers = root ? stf_pyval_find(root, "layers") : NULL;
        if (!layers)
            stf__chk_add(k, "C20", STF_SEV_ERROR, NULL, 0, FIX_QMETA, "KeyError: 'layers'");
        else
            stf__chk_add(k, "C20", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "AttributeError: '%s' object has no attribute 'items'", py_type(layers));
        break;
    }
    default:
        break;
    }
}

/* See check_internal.h. */
void stf__check_comfyui_qmeta(stf__chk *k)
{
    size_t n = stf_ckpt_shard_count(k->c);
    for (size_t s = 0; s < n && !k->rc; s++) qmeta_rules(k, s);
}

/* torch's ScalarType name of a dtype whose tensor .numpy() refuses. */
static const char *scalar_type(stf_dtype d)
{
    switch (d) {
    case STF_BF16: return "BFloat16";
    case STF_F8_E4M3: return "Float8_e4m3fn";
    case STF_F8_E5M2: return "Float8_e5m2";
    case STF_F8_E8M0: return "Float8_e8m0fnu";
    case STF_F8_E4M3FNUZ: return "Float8_e4m3fnuz";
    case STF_F8_E5M2FNUZ: return "Float8_e5m2fnuz";
    case STF_F4: return "Float4_e2m1fn_x2";
    default: return NULL;
    }
}

/* See check_internal.h. */
int stf__check_comfyui_marker(stf__chk *k, const stf_layer *l)
{
    const stf_marker *cm = l->comfy;
    if (!cm || (cm->status == STF_MARKER_OK && stf_pyval_type(cm->value) == STF_PY_DICT)) return 0;
    switch (cm->status) {
    case STF_MARKER_NOT_JSON:
    case STF_MARKER_TOO_DEEP:
        stf__chk_add(k, "C21", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MARKER, "%s: %s",
                     json_exc(cm->error), cm->error ? cm->error : "");
        break;
    case STF_MARKER_BAD_DTYPE: {
        const stf_tensor_info *t =
            cm->tensor >= 0 ? stf_ckpt_tensor(k->c, (size_t)cm->tensor) : NULL;
        const char *st = t ? scalar_type(t->dtype) : NULL;
        if (st)
            stf__chk_add(k, "C21", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "store the marker as U8", "TypeError: Got unsupported ScalarType %s", st);
        else
            stf__chk_add(k, "C21", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "store the marker as U8",
                         "Marker %s has dtype %s, which numpy cannot convert: ComfyUI raises "
                         "TypeError reading it", stf__chk_name(k, cm->key, cm->key_len),
                         stf__chk_dtype(t));
        break;
    }
    default:
        /* Not an object: json.dumps of a metadata value loads back as the
         * same value, so both channels fail on the loader's first .get. */
        stf__chk_add(k, "C21", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     cm->channel == STF_CHAN_METADATA
                         ? "wrap the value as {\"format\": value} (string-metadata-value)"
                         : FIX_MARKER,
                     "AttributeError: '%s' object has no attribute 'get'", py_type(cm->value));
        break;
    }
    return 1;
}

/* Python's a % b == 0 for b != 0 (the sign of b does not matter). */
static int divides(int64_t b, uint64_t a)
{
    uint64_t m = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
    return a % m == 0;
}

/* The shape check of one optional tensor: "NAME must have shape (a, b),
 * got (c, d)"; 1 when it failed (and was reported). */
static int want_shape(stf__chk *k, const stf_layer *l, const char *field,
                      const stf_tensor_info *t, unsigned rank, const uint64_t *dims)
{
    if (!t || stf__chk_shape_is(t, rank, dims)) return 0;
    stf__chk_add(k, "C22", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_W4A8,
                 "ValueError: %s must have shape %s, got %s", field, stf__chk_dims(k, rank, dims),
                 stf__chk_shape(k, t));
    return 1;
}

/* See check_internal.h. */
void stf__check_comfyui_w4a8(stf__chk *k, const stf_layer *l, const stf_pyval *mk,
                             const stf_tensor_info *w)
{
    uint64_t n = w->rank ? w->shape[0] : 1, kk = w->rank ? 2 * w->shape[w->rank - 1] : 0;
    const stf_pyval *gv = stf__comfy_param(mk, "group_size");
    int64_t gs = 16, g = stf__comfy_groupsize(mk);
    if ((gv && stf_pyval_pyint(&gs, gv, NULL)) || g < 0) return; /* int() raised: see C6 */
    if (g == 0 && gs >= 4 && kk % 16 == 0 && divides(gs, kk)) {
        stf__chk_add(k, "C22", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_W4A8,
                     "ZeroDivisionError: integer modulo by zero");
        return;
    }
    if (gs < 4 || kk % 16 || !divides(gs, kk) || !divides(g, kk) || (16 % gs && gs % 16)) {
        stf__chk_add(k, "C22", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_W4A8,
                     "ValueError: K=%llu must be divisible by 16, group_size=%lld, and "
                     "convrot_groupsize=%lld; group_size must be >=4 and divide 16 or be a "
                     "multiple of 16", (unsigned long long)kk, (long long)gs, (long long)g);
        return;
    }
    uint64_t groups = kk / (uint64_t)gs;
    uint64_t ng[2] = { n, groups }, gn[2] = { groups, n }, sixteen = 16;
    if (want_shape(k, l, "scale", stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_S_REL), 2, ng))
        return;
    const stf_tensor_info *sc = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_S_CHANNEL);
    if (!sc) {
        stf__chk_add(k, "C22", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_W4A8,
                     "ValueError: s_channel must have shape %s, got None",
                     stf__chk_dims(k, 1, &n));
        return;
    }
    if (want_shape(k, l, "s_channel", sc, 1, &n)) return;
    if (want_shape(k, l, "correction",
                   stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_CORRECTION), 2, gn))
        return;
    want_shape(k, l, "codebook", stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_CODEBOOK), 1,
               &sixteen);
}
