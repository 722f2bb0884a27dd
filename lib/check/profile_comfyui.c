/*
 * The `comfyui` profile: ComfyUI's acceptance rules C1-C24
 * (stfix-checks(7), COMFYUI RULES). ComfyUI has an exact message for some of them;
 * most of its failures are silent (codes value-cast to floats, conv layers
 * fed raw codes, scales broadcast over the wrong axis, non-power-of-4 groups
 * that fail only at the first forward), and for those the message states
 * the silent failure plainly.
 */
#include <string.h>

#include "check/check_internal.h"

#define FIX_DEQ "dequantize the layer to BF16 and drop its marker and scales"

static const stf_tensor_info *T(stf__chk *k, const stf_layer *l, stf_suffix s)
{
    return stf_layer_tensor_info(k->m, l, s);
}

static int is_pow4(int64_t g)
{
    if (g < 4 || (g & (g - 1))) return 0;
    int tz = 0;
    while (!(g & 1)) {
        g >>= 1;
        tz++;
    }
    return tz % 2 == 0;
}

static int quantized_dtype(stf_dtype d)
{
    return d == STF_I8 || d == STF_U8 || d == STF_F8_E4M3 || d == STF_F8_E5M2;
}

/* U8 and I8, either way round: torch's .to() between them wraps. */
static int int8_pair(stf_dtype a, stf_dtype b)
{
    return (a == STF_U8 && b == STF_I8) || (a == STF_I8 && b == STF_U8);
}

static int has_tensors(const stf_layer *l)
{
    for (int s = 0; s < STF_SFX_COUNT; s++)
        if (stf_layer_tensor(l, s) >= 0) return 1;
    return 0;
}

/* C4: the required companions of the format. */
static int missing_scales(stf__chk *k, const stf_layer *l, const stf_format_info *fi)
{
    stf_buf names;
    stf__buf_init(&names);
    for (size_t i = 0; i < fi->ntensors; i++) {
        if (!fi->tensors[i].required || stf_layer_tensor(l, fi->tensors[i].suffix) >= 0) continue;
        if (names.len) stf__buf_puts(&names, ", ");
        stf__buf_puts(&names, stf__chk_layer(k, l));
        stf__buf_puts(&names, stf_suffix_name(fi->tensors[i].suffix));
    }
    if (names.oom) stf__chk_fail(k, STF_ENOMEM);
    int missing = names.len > 0;
    if (missing && !k->rc) {
        const char *fix = "add the missing scale tensors, or drop the marker (orphan-tensors)";
        const char *what = NULL;
        switch (fi->id) {
        case STF_FMT_INT8_TENSORWISE: what = "INT8 weight scale"; break;
        case STF_FMT_CONVROT_W4A4: what = "ConvRot W4A4 weight scale"; break;
        case STF_FMT_NVFP4: what = "NVFP4 scales"; break;
        case STF_FMT_MXFP8: what = "MXFP8 block scales"; break;
        default: break;
        }
        if (what)
            stf__chk_add(k, "C4", STF_SEV_ERROR, l->prefix, l->prefix_len, fix,
                         "Missing %s for layer %s", what,
                         stf__chk_layer(k, l));
        else
            stf__chk_add(k, "C4", STF_SEV_ERROR, l->prefix, l->prefix_len, fix,
                         "Missing %s scales for layer %s (%s)", fi->name, stf__chk_layer(k, l),
                         names.data);
    }
    stf__buf_free(&names);
    return missing;
}

/* C6/C7 of a ConvRot layer with logical input size kk. */
static void convrot_group_rules(stf__chk *k, const stf_layer *l, int64_t g, uint64_t kk,
                                const char *rule_k)
{
    if (g < 0) {
        stf__chk_add(k, "C6", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "write convrot_groupsize as a JSON integer",
                     "convrot_groupsize of layer %s is not an integer: ComfyUI's int() raises at load",
                     stf__chk_layer(k, l));
        return;
    }
    if (!is_pow4(g)) {
        stf__chk_add(k, "C6", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "undo the rotation with the producer's matrix and requantize with G in "
                     "{16, 64, 256} (sylvester-rotation)",
                     "Regular Hadamard size must be a power of 4, got %lld (layer %s loads, then "
                     "fails at the first forward or dequantization)", (long long)g,
                     stf__chk_layer(k, l));
        return;
    }
    if (kk % (uint64_t)g)
        stf__chk_add(k, rule_k, STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize with a group size that divides the input size, or keep BF16 "
                     "(indivisible-group)",
                     "ConvRot group size %lld does not divide input features %llu (layer %s "
                     "loads, then fails at the first forward)", (long long)g,
                     (unsigned long long)kk, stf__chk_layer(k, l));
}

static void int8_rules(stf__chk *k, const stf_layer *l, const stf_pyval *mk,
                       const stf_tensor_info *w)
{
    const stf_tensor_info *s = T(k, l, STF_SFX_WEIGHT_SCALE);
    uint64_t n = w->rank == 3 ? w->shape[0] * w->shape[1] : w->shape[0];
    uint64_t kk = w->shape[w->rank - 1];
    const stf_pyval *cr = stf__comfy_param(mk, "convrot");
    int convrot = cr && stf_pyval_truthy(cr);
    if (cr && convrot && !stf_pyval_is_true(cr))
        stf__chk_add(k, "C19", STF_SEV_WARNING, l->prefix, l->prefix_len, "write \"convrot\": true",
                     "ComfyUI takes convrot=%s of layer %s as true by Python truthiness; SGLang "
                     "requires the literal true (R23)", stf__chk_pyrepr(k, cr),
                     stf__chk_layer(k, l));
    if (convrot && !stf__comfy_param(mk, "convrot_groupsize"))
        stf__chk_add(k, "C19", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "write the group size actually used as convrot_groupsize",
                     "Layer %s declares no convrot_groupsize: ComfyUI assumes 256, SGLang rejects "
                     "the layer (R24)", stf__chk_layer(k, l));
    if (convrot) convrot_group_rules(k, l, stf__comfy_groupsize(mk), kk, "C7");
    if (!s) return;
    if (s->nelem != 1 && s->nelem != n) {
        stf__chk_add(k, "C8", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize rowwise (grouped or input-axis scales cannot be reshaped)",
                     "INT8 weight scale must be scalar or per-output-channel, got %s for weight %s "
                     "(layer %s loads, then fails at the first forward)", stf__chk_shape(k, s),
                     stf__chk_shape(k, w),
                     stf__chk_layer(k, l));
        return;
    }
    uint64_t want2[2] = { n, 1 }, want3[3] = { w->shape[0], w->rank == 3 ? w->shape[1] : 0, 1 };
    int ok = s->rank == 0 || (s->nelem == 1 && s->rank == 1) ||
             (w->rank == 2 && stf__chk_shape_is(s, 2, want2)) ||
             (w->rank == 3 && stf__chk_shape_is(s, 3, want3));
    if (!ok) {
        int square = w->rank == 2 && n == kk;
        stf__chk_add(k, "C9", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "reshape the scale to (N, 1), header-only, once H1 (--numeric) confirms rows "
                     "(flattened-scales)",
                     "INT8 weight scale of layer %s has shape %s, not (N, 1): the int8 GEMM accepts "
                     "it, but ComfyUI's dequantize paths (LoRA, full_precision_matrix_mult, "
                     "fallback) broadcast it over columns%s", stf__chk_layer(k, l),
                     stf__chk_shape(k, s),
                     square ? ", silently wrong on this square layer" : " and fail");
    }
}

static void w4a4_rules(stf__chk *k, const stf_layer *l, const stf_pyval *mk,
                       const stf_tensor_info *w)
{
    const stf_tensor_info *s = T(k, l, STF_SFX_WEIGHT_SCALE);
    uint64_t n = w->shape[0], kk = 2 * w->shape[w->rank - 1];
    if (s && s->nelem == n && !stf__chk_shape_is(s, 1, &n))
        stf__chk_add(k, "C9", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "reshape the scale to (N,) (header-only)",
                     "ConvRot W4A4 weight scale of layer %s has shape %s, not (N,): ComfyUI's "
                     "dequantize paths broadcast it wrongly", stf__chk_layer(k, l),
                     stf__chk_shape(k, s));
    int64_t g = stf__comfy_groupsize(mk);
    if (g > 0 && !is_pow4(g)) convrot_group_rules(k, l, g, kk, "C16");
    else if (kk % 64 || (g > 0 && kk % (uint64_t)g))
        stf__chk_add(k, "C16", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "W4A4 needs K % 64 == 0 and K % G == 0: requantize as INT8 or keep BF16",
                     "W4A4 layer %s has input size %llu, which comfy-kitchen's kernels reject (needs "
                     "a multiple of 64 and of convrot_groupsize %lld): it loads, then fails at "
                     "the first forward", stf__chk_layer(k, l),
                     (unsigned long long)kk, (long long)g);
    const stf_pyval *ld = stf__comfy_param(mk, "linear_dtype");
    if (ld) {
        const char *v = stf_pyval_type(ld) == STF_PY_STR ? stf__chk_pystr(k, ld) : NULL;
        if (!v || (strcmp(v, "int4") && strcmp(v, "int8")))
            stf__chk_add(k, "C23", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "drop linear_dtype (int4) or set it to \"int8\"",
                         "ValueError: ConvRot W4A4 linear_dtype must be 'int4' or 'int8', got %s",
                         stf__chk_pyrepr(k, ld));
    }
}

/*
 * C24: float8_e4m3fn and float8_e5m2 take one scale per tensor. ComfyUI
 * hands weight_scale to comfy-kitchen as stored: its CUDA dequantize
 * asserts a single element, its eager one multiplies the weight by the
 * scale with torch broadcasting, which lines an (N,) or (1, N) scale up
 * with the K columns.
 */
static void fp8_weight_scale(stf__chk *k, const stf_layer *l, const stf_format_info *fi,
                             const stf_tensor_info *w)
{
    const stf_tensor_info *s = T(k, l, STF_SFX_WEIGHT_SCALE);
    if (!s || s->nelem == 1) return;
    uint64_t n = w->shape[0], kk = w->shape[w->rank - 1];
    int rows = w->rank == 2 && s->rank == 2 && s->shape[0] == n && s->shape[1] == 1;
    int flat = w->rank == 2 && s->nelem == n && (s->rank == 1 || (s->rank == 2 && s->shape[0] == 1));
    const char *eager = rows ? ", which happens to scale the rows here"
                        : flat && n == kk ? ", which scales columns instead of rows: silently "
                                            "wrong on this square layer"
                        : flat ? ", which fails to broadcast it over the K columns"
                               : "";
    stf__chk_add(k, "C24", STF_SEV_ERROR, l->prefix, l->prefix_len,
                 "requantize the layer: an FP8 format takes one scale per tensor",
                 "FP8 weight scale of layer %s has shape %s for weight %s, but %s takes one scale "
                 "per tensor: comfy-kitchen's CUDA dequantize raises \"Scale must be a scalar "
                 "tensor\", its eager one multiplies the weight by the scale as stored%s",
                 stf__chk_layer(k, l), stf__chk_shape(k, s), stf__chk_shape(k, w), fi->name,
                 eager);
}

/*
 * C24, input_scale: a Linear registers it as stored, and with FP8 matmuls
 * (a device with FP8 compute, no full_precision_matrix_mult) quantizes
 * each input with it. comfy-kitchen's CUDA quantize divides by the first
 * element; torch's FP8 matmul refuses a scale of more than one, and the
 * dequantizing fallback's CUDA dequantize asserts one element. Its eager
 * quantize divides the (M, K) input by the scale with broadcasting: a (K,)
 * or (1, K) scale divides each column and the fallback multiplies it back,
 * a (X,) or (1, X) one with X != K fails. MoEExperts (3-D weights) never
 * read input_scale.
 */
static void fp8_input_scale(stf__chk *k, const stf_layer *l, const stf_pyval *mk,
                            const stf_format_info *fi, const stf_tensor_info *w)
{
    const stf_tensor_info *s = T(k, l, STF_SFX_INPUT_SCALE);
    const stf_pyval *fp = stf_pyval_find(mk, "full_precision_matrix_mult");
    if (!s || s->nelem == 1 || w->rank != 2 || (fp && stf_pyval_truthy(fp))) return;
    uint64_t kk = w->shape[1];
    int flat = s->rank == 1 || (s->rank == 2 && s->shape[0] == 1);
    const char *eager = flat && s->nelem == kk ? ", one value per input column, and the layer "
                                                 "then runs the matmul dequantized"
                        : flat ? ", which fails to broadcast it over the K input columns"
                               : "";
    stf__chk_add(k, "C24", STF_SEV_ERROR, l->prefix, l->prefix_len,
                 "requantize the layer: an FP8 format takes one input_scale per tensor",
                 "FP8 input scale of layer %s has shape %s for weight %s, but %s takes one scale "
                 "per tensor: comfy-kitchen's CUDA quantize divides the input by its first "
                 "element and, when torch's FP8 matmul then refuses the scale, its CUDA "
                 "dequantize raises \"Scale must be a scalar tensor\"; its eager quantize divides "
                 "the input by the scale as stored%s",
                 stf__chk_layer(k, l), stf__chk_shape(k, s), stf__chk_shape(k, w), fi->name,
                 eager);
}

/* C11: scale dtypes (only fp8/e8m0 block scales are views). */
static void scale_dtype_rules(stf__chk *k, const stf_layer *l, const stf_format_info *fi)
{
    static const stf_suffix f32_scales[] = { STF_SFX_WEIGHT_SCALE, STF_SFX_INPUT_SCALE,
                                             STF_SFX_WEIGHT_SCALE_2, STF_SFX_WEIGHT_S_CHANNEL };
    for (size_t i = 0; i < sizeof f32_scales / sizeof f32_scales[0]; i++) {
        stf_suffix sfx = f32_scales[i];
        if ((fi->id == STF_FMT_NVFP4 || fi->id == STF_FMT_MXFP8) && sfx == STF_SFX_WEIGHT_SCALE)
            continue;
        if (fi->id == STF_FMT_AWQ_W4A16) continue;
        const stf_tensor_info *s = T(k, l, sfx);
        if (!s || s->dtype == STF_F32) continue;
        if (fi->id == STF_FMT_FLOAT8_E4M3FN || fi->id == STF_FMT_FLOAT8_E5M2)
            stf__chk_add(k, "C11", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "cast the scale to F32 (exact, low-precision-scales)",
                         "No backend can handle 'dequantize_per_tensor_fp8': eager: scale: dtype "
                         "%s not in {torch.float32}", stf__chk_torch_dtype(s->dtype));
        else
            stf__chk_add(k, "C11", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "cast the scale to F32 (exact, low-precision-scales)",
                         "Scale %s is %s, not F32: ComfyUI never checks scale dtypes and %s",
                         stf__chk_name(k, s->name, s->name_len), stf__chk_dtype(s),
                         fi->id == STF_FMT_NVFP4 && sfx == STF_SFX_WEIGHT_SCALE_2
                             ? "its NVFP4 layout casts this one to F32 as it loads"
                             : "hands it to the kernels as stored, which older comfy-kitchen "
                               "backends refuse at the first forward");
    }
}

static void check_layer(stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = T(k, l, STF_SFX_WEIGHT);
    const stf_marker *cm = l->comfy;
    if (!cm) {
        if (!w || !quantized_dtype(w->dtype) || stf_layer_tensor(l, STF_SFX_SCALE_WEIGHT) >= 0)
            return;
        /* FP8 codes are values: without any scale they are the weights,
         * as in checkpoints cast to FP8 whole, and the value-cast is right. */
        int fp8 = w->dtype == STF_F8_E4M3 || w->dtype == STF_F8_E5M2;
        if (fp8 && stf_layer_tensor(l, STF_SFX_WEIGHT_SCALE) < 0 &&
            stf_layer_tensor(l, STF_SFX_WEIGHT_SCALE_2) < 0 &&
            stf_layer_tensor(l, STF_SFX_INPUT_SCALE) < 0) {
            stf__chk_add(k, "C1", STF_SEV_WARNING, l->prefix, l->prefix_len,
                         "nothing when the weights were cast to FP8 unscaled; otherwise restore "
                         "the scale and add a marker (missing-markers)",
                         "Layer %s has an %s weight %s with no scale and no comfy_quant marker: "
                         "ComfyUI value-casts it to the compute dtype, which is right only if the "
                         "weights were cast to FP8 without a scale",
                         stf__chk_layer(k, l), stf__chk_dtype(w), stf__chk_shape(k, w));
            stf__chk_effect(k, STF_EFFECT_NOTE);
            return;
        }
        stf__chk_add(k, "C1", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "add the comfy_quant marker the file determines (infer-marker), or "
                     "dequantize the weight to BF16 (missing-markers)",
                     "Layer %s has a quantized %s weight %s but no comfy_quant marker: ComfyUI "
                     "value-casts the codes to the compute dtype (silently garbage)",
                     stf__chk_layer(k, l), stf__chk_dtype(w), stf__chk_shape(k, w));
        return;
    }
    if (stf__check_comfyui_marker(k, l)) return;
    const stf_pyval *mk = cm->value;
    if (!has_tensors(l)) {
        stf__chk_add(k, "C15", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "rewrite the metadata keys to the tensor prefixes, or drop the metadata and "
                     "keep tensor markers (metadata-prefix-mismatch)",
                     "_quantization_metadata names layer %s, which has no tensors: ComfyUI attaches "
                     "the marker to missing keys and loads the real layer unquantized",
                     stf__chk_layer(k, l));
        return;
    }
    if (l->conflict && cm->channel == STF_CHAN_METADATA)
        stf__chk_add(k, "C15", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "regenerate both channels from one canonical marker",
                     "_quantization_metadata entry for layer %s differs from its comfy_quant tensor; "
                     "ComfyUI uses the metadata entry", stf__chk_layer(k, l));
    const stf_pyval *params = stf_pyval_find(mk, "params");
    if (params && stf_pyval_type(params) == STF_PY_DICT)
        stf__chk_add(k, "C14", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "hoist the params keys to the top level (nested-params)",
                     "Marker of layer %s nests keys under params: ComfyUI's Linear reads them as a "
                     "fallback, its Embedding and SGLang ignore them", stf__chk_layer(k, l));
    const stf_pyval *fv = stf_pyval_find(mk, "format");
    if (!fv) {
        stf__chk_add(k, "C2", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "add the format (\"int8_tensorwise\" when W is I8 and the scale F32, "
                     "missing-format)",
                     "Unknown quantization format for layer %s", stf__chk_layer(k, l));
        return;
    }
    size_t flen = 0;
    const char *fs = stf_pyval_str(fv, &flen);
    const stf_format_info *fi = fs ? stf_format_find(fs, flen) : NULL;
    if (!fi || !(fi->consumers & STF_CONSUMER_COMFYUI)) {
        stf__chk_add(k, "C3", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "rename only when the layout is identical, otherwise dequantize and "
                     "requantize "
                     "(nonstandard-format-name)",
                     "Unsupported quantization format: %s", stf__chk_pystr(k, fv));
        return;
    }
    if (!w) {
        stf__chk_add(k, "C5", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "add the weight, or drop the orphan marker (orphan-tensors)",
                     "Layer %s has a comfy_quant marker but no %s.weight: ComfyUI only logs "
                     "\"Missing weight for layer %s\" and loads the model without it",
                     stf__chk_layer(k, l), stf__chk_layer(k, l), stf__chk_layer(k, l));
        return;
    }
    if (w->rank != 2 && w->rank != 3) {
        stf__chk_add(k, "C12", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_DEQ,
                     "Layer %s has a %u-D weight %s with a comfy_quant marker: only Linear, "
                     "MoEExperts and Embedding understand markers, so the marker and scales become "
                     "unexpected keys and the raw codes are fed to the module",
                     stf__chk_layer(k, l), w->rank,
                     stf__chk_shape(k, w));
        return;
    }
    if (w->dtype != fi->weight_dtype)
        stf__chk_add(k, "C10", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "store the weight in the format's dtype (relabel only on a recipe assertion, "
                     "storage-dtype-mismatch)",
                     "Weight of layer %s is %s, but %s stores %s: ComfyUI %s",
                     stf__chk_layer(k, l), stf__chk_dtype(w), fi->name,
                     stf_dtype_name(fi->weight_dtype),
                     int8_pair(w->dtype, fi->weight_dtype)
                         ? "converts it with .to() instead of viewing the bits, which wraps the "
                           "bytes: right only if they already are the format's codes"
                         : "value-casts it instead of viewing the bits (silently wrong)");
    if (missing_scales(k, l, fi)) return;
    scale_dtype_rules(k, l, fi);
    if (fi->id == STF_FMT_INT8_TENSORWISE) int8_rules(k, l, mk, w);
    else if (fi->id == STF_FMT_CONVROT_W4A4) w4a4_rules(k, l, mk, w);
    else if (fi->id == STF_FMT_ASYM_W4A8_INT8) stf__check_comfyui_w4a8(k, l, mk, w);
    else if (fi->id == STF_FMT_FLOAT8_E4M3FN || fi->id == STF_FMT_FLOAT8_E5M2) {
        fp8_weight_scale(k, l, fi, w);
        fp8_input_scale(k, l, mk, fi, w);
    }
}

/* The comfyui profile: C-rules per layer in layer order. 0 or k->rc. */
int stf__check_comfyui(stf__chk *k)
{
    k->profile = "comfyui";
    stf__check_comfyui_qmeta(k);
    stf__check_comfyui_legacy(k);
    size_t nl = stf_model_layer_count(k->m);
    for (size_t i = 0; i < nl && !k->rc; i++) {
        size_t mark = stf__chk_mark(k);
        stf__layer_tmp lt;
        check_layer(k, stf__model_layer_at(k->m, i, &lt));
        stf__chk_release(k, mark);
    }
    return k->rc;
}
