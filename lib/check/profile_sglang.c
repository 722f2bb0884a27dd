/*
 * The `sglang` profile: SGLang's inspection (inspect_comfy_quant_markers),
 * resolution (resolve_comfy_checkpoint_quantization), config construction,
 * per-layer method selection and weight loading, as far as the file decides
 * them (stfix-checks(7), SGLANG RULES). SGLang raises at its first error; this
 * profile keeps going and reports every rule that fails, in SGLang's
 * evaluation order. The per-format shape and dtype rules live in
 * profile_sglang_formats.c.
 */
#include <stdlib.h>
#include <string.h>

#include "check/check_internal.h"

#define FIX_QMETA                                                                        \
    "rebuild _quantization_metadata from the tensor markers (stfix fix with a set-marker " \
    "rule), or drop it"
#define FIX_MARKER "rewrite the marker as U8 bytes of one canonical JSON object (no NUL, no padding)"

static const char *const DIT_PREFIX = "model.diffusion_model.";

/* The config SGLang builds for a sorted format set (R30's table). */
typedef enum cfg_kind {
    CFG_NONE = 0, CFG_INT8, CFG_W4A8, CFG_W4A4, CFG_FP8, CFG_NVFP4, CFG_MXFP8, CFG_REJECTED
} cfg_kind;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A layer prefix as SGLang maps it, by its bytes. */
typedef struct mapped_name {
    const char *s;
    size_t n;
} mapped_name;

static int mapped_cmp(const void *pa, const void *pb)
{
    const mapped_name *a = pa, *b = pb;
    return stf__bytes_cmp(a->s, a->n, b->s, b->n);
}

static int mapped_eq(const mapped_name *a, const mapped_name *b)
{
    return !stf__bytes_cmp(a->s, a->n, b->s, b->n);
}

static int is_fmt(const char *f, const char *name) { return f && !strcmp(f, name); }

/* ------------------------------------------------------- R1-R8 and R5 */

static void inspect_files(stf__chk *k)
{
    size_t nshard = stf_ckpt_shard_count(k->c);
    size_t nl = stf_model_layer_count(k->m);
    for (size_t s = 0; s < nshard && !k->rc; s++) {
        const char *path = stf_ckpt_shard_path(k->c, s);
        switch (stf_model_qmeta_status(k->m, s)) {
        case STF_QMETA_NOT_JSON:
            stf__chk_add(k, "R1", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "Invalid _quantization_metadata in %s", path);
            break;
        case STF_QMETA_TOO_DEEP:
            stf__chk_add(k, "R1", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "_quantization_metadata in %s nests deeper than Python's json.loads "
                         "decodes (%d levels): SGLang fails with an uncaught RecursionError",
                         path, STF_PYJSON_MAX_DEPTH);
            break;
        case STF_QMETA_NOT_OBJECT:
            stf__chk_add(k, "R2", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "_quantization_metadata in %s must contain an object", path);
            break;
        case STF_QMETA_NO_LAYERS:
            stf__chk_add(k, "R3", STF_SEV_ERROR, NULL, 0, FIX_QMETA,
                         "_quantization_metadata in %s must contain a layers object", path);
            break;
        default:
            break;
        }
        for (size_t i = 0; i < nl; i++) {
            stf__layer_tmp l_tmp;
            const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
            for (size_t j = 0; j < l->nmarkers; j++) {
                const stf_marker *mk = &l->markers[j];
                if (mk->shard != s || mk->channel != STF_CHAN_METADATA) continue;
                if (mk->status == STF_MARKER_NOT_OBJECT)
                    stf__chk_add(k, "R4", STF_SEV_ERROR, l->prefix, l->prefix_len,
                                 "wrap the value as {\"format\": value} (string-metadata-value), "
                                 "or drop the entry",
                                 "Comfy quantization metadata for %s must be an object",
                                 stf__chk_repr(k, mk->key, mk->key_len));
            }
        }
        for (size_t i = 0; i < nl; i++) {
            stf__layer_tmp l_tmp;
            const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
            for (size_t j = 0; j < l->nmarkers; j++) {
                const stf_marker *mk = &l->markers[j];
                if (mk->shard != s || mk->channel != STF_CHAN_TENSOR) continue;
                if (mk->status == STF_MARKER_NOT_JSON)
                    stf__chk_add(k, "R6", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MARKER,
                                 "Invalid Comfy quantization marker %s in %s",
                                 stf__chk_repr(k, mk->key, mk->key_len), path);
                else if (mk->status == STF_MARKER_TOO_DEEP)
                    stf__chk_add(k, "R6", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MARKER,
                                 "Comfy quantization marker %s in %s nests deeper than Python's "
                                 "json.loads decodes (%d levels): SGLang fails with an uncaught "
                                 "RecursionError",
                                 stf__chk_repr(k, mk->key, mk->key_len), path,
                                 STF_PYJSON_MAX_DEPTH);
                else if (mk->status == STF_MARKER_NOT_OBJECT)
                    stf__chk_add(k, "R7", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_MARKER,
                                 "Comfy quantization marker %s must contain a JSON object",
                                 stf__chk_repr(k, mk->key, mk->key_len));
                else if (mk->status == STF_MARKER_BAD_DTYPE) {
                    const stf_tensor_info *t =
                        mk->tensor >= 0 ? stf_ckpt_tensor(k->c, (size_t)mk->tensor) : NULL;
                    stf__chk_add(k, "R8", STF_SEV_ERROR, l->prefix, l->prefix_len,
                                 "store the marker as U8",
                                 "Comfy quantization marker %s has dtype %s, which numpy cannot "
                                 "convert: SGLang fails with an uncaught TypeError",
                                 stf__chk_repr(k, mk->key, mk->key_len), stf__chk_dtype(t));
                }
            }
        }
    }
    for (size_t i = 0; i < nl && !k->rc; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        if (l->conflict)
            stf__chk_add(k, "R5", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "regenerate the tensor marker and the metadata entry from one canonical dict",
                         "Conflicting Comfy quantization markers for %s",
                         stf__chk_repr(k, l->prefix, l->prefix_len));
    }
}

/* ------------------------------------------------------------- R9, R10 */

static int quantized_weight_dtype(stf_dtype d)
{
    return d == STF_F8_E4M3 || d == STF_I8 || d == STF_U8;
}

/* Whether every quant_format value (lower-cased) is "mxfp8", and one exists. */
static int mxfp8_declared(stf__chk *k)
{
    int any = 0;
    for (size_t s = 0; s < stf_ckpt_shard_count(k->c); s++) {
        const stf_meta_entry *e = stf_ckpt_meta_find(k->c, s, "quant_format");
        if (!e) continue;
        if (e->value_len != 5) return 0;
        for (size_t i = 0; i < 5; i++) {
            char ch = e->value[i];
            if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
            if (ch != "mxfp8"[i]) return 0;
        }
        any = 1;
    }
    return any;
}

static void check_mxfp8(stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *s = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_SCALE);
    int ok = w->dtype == STF_F8_E4M3 && w->rank == 2 && w->shape[1] % 32 == 0;
    if (ok) {
        uint64_t d[2] = { w->shape[0], w->shape[1] / 32 };
        ok = s && s->dtype == STF_U8 && stf__chk_shape_is(s, 2, d);
    }
    if (!ok)
        stf__chk_add(k, "R9", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "never write quant_format; give the layer a comfy_quant marker instead",
                     "MXFP8 layer %s has incompatible weight/scale metadata: %s and %s",
                     stf__chk_repr(k, l->prefix, l->prefix_len), stf__chk_meta(k, w),
                     stf__chk_meta(k, s));
}

/* R9 over every quantized weight when quant_format says mxfp8; marks the
 * layers SGLang synthesises a marker for in synth[] (raw_markers.setdefault:
 * only those without a marker of their own). Then R10, which lists layer
 * prefixes as SGLang's sorted(missing_markers)[:5] does, not weight names. */
static void check_unmarked(stf__chk *k, unsigned char *synth)
{
    size_t nl = stf_model_layer_count(k->m);
    int mx = mxfp8_declared(k);
    const char **missing = NULL;
    size_t *lens = NULL, nmissing = 0;
    for (size_t i = 0; i < nl && !k->rc; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
        if (!w || !quantized_weight_dtype(w->dtype)) continue;
        if (mx) {
            check_mxfp8(k, l);
            synth[i] = l->nmarkers == 0;
        } else if (l->nmarkers == 0) {
            if (!missing) {
                missing = stf__calloc(nl, sizeof *missing);
                lens = stf__calloc(nl, sizeof *lens);
            }
            if (!missing || !lens) {
                stf__chk_fail(k, STF_ENOMEM);
                break;
            }
            lens[nmissing] = l->prefix_len;
            missing[nmissing++] = l->prefix;
        }
    }
    if (nmissing && !k->rc)
        stf__chk_add(k, "R10", STF_SEV_ERROR, NULL, 0,
                     "add a comfy_quant marker to each layer, or dequantize those weights to BF16",
                     "Quantized weights are missing comfy_quant metadata: %s",
                     stf__chk_sorted(k, missing, lens, nmissing, 5));
    stf__free(missing);
    stf__free(lens);
}

/*
 * R70: SGLang's marker check (R10) passes F8_E5M2 weights, so a layer of
 * them without a marker loads through the unquantized method, which copies
 * the codes into the float parameter as values; its scale is an unexpected
 * key the loader skips. Legacy layers (scale_weight) are R63's.
 */
static void check_unmarked_e5m2(stf__chk *k)
{
    static const stf_suffix scales[] = { STF_SFX_WEIGHT_SCALE, STF_SFX_WEIGHT_SCALE_2,
                                         STF_SFX_INPUT_SCALE };
    size_t nl = stf_model_layer_count(k->m);
    for (size_t i = 0; i < nl && !k->rc; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
        if (!w || w->dtype != STF_F8_E5M2 || l->nmarkers ||
            stf_layer_tensor(l, STF_SFX_SCALE_WEIGHT) >= 0 ||
            stf_layer_tensor(l, STF_SFX_SCALE_INPUT) >= 0)
            continue;
        size_t j = 0;
        while (j < sizeof scales / sizeof scales[0] && stf_layer_tensor(l, scales[j]) < 0) j++;
        if (j == sizeof scales / sizeof scales[0]) continue;
        stf__chk_add(k, "R70", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize the layer (SGLang loads no float8_e5m2 layer, R30), or "
                     "dequantize it to BF16 with exclude",
                     "Comfy layer %s has an F8_E5M2 weight %s and a %s but no comfy_quant marker: "
                     "SGLang's marker check passes F8_E5M2 weights, so it loads the codes as "
                     "plain values and never reads the scale (silently wrong)",
                     stf__chk_repr(k, l->prefix, l->prefix_len), stf__chk_shape(k, w),
                     stf_suffix_name(scales[j]) + 1);
    }
}

/* ------------------------------------------------------------ R12, R20 */

static void check_required(stf__chk *k, const stf_layer *l, const stf_pyval *mk, const char *fmt)
{
    static const stf_suffix int8_req[] = { STF_SFX_WEIGHT, STF_SFX_WEIGHT_SCALE };
    static const stf_suffix w4a8_req[] = { STF_SFX_WEIGHT, STF_SFX_WEIGHT_S_REL,
                                           STF_SFX_WEIGHT_S_CHANNEL };
    static const stf_suffix nvfp4_req[] = { STF_SFX_WEIGHT, STF_SFX_WEIGHT_SCALE,
                                            STF_SFX_WEIGHT_SCALE_2 };
    const stf_suffix *req = NULL;
    size_t nreq = 0;
    if (is_fmt(fmt, "int8_tensorwise") || is_fmt(fmt, "convrot_w4a4") ||
        is_fmt(fmt, "float8_e4m3fn")) {
        req = int8_req;
        nreq = 2;
    } else if (is_fmt(fmt, "asym_w4a8_int8")) {
        req = w4a8_req;
        nreq = 3;
    } else if (is_fmt(fmt, "nvfp4")) {
        req = nvfp4_req;
        nreq = 3;
    } else {
        return; /* R11: unknown formats are skipped here and fail R30 */
    }
    const char *names[3];
    size_t lens[3], n = 0;
    for (size_t i = 0; i < nreq; i++) {
        if (stf_layer_tensor(l, req[i]) >= 0) continue;
        stf_buf b;
        stf__buf_init(&b);
        stf__buf_put(&b, l->prefix, l->prefix_len);
        stf__buf_puts(&b, stf_suffix_name(req[i]));
        if (b.oom) {
            stf__buf_free(&b);
            stf__chk_fail(k, STF_ENOMEM);
            return;
        }
        lens[n] = b.len;
        names[n++] = stf__chk_keep(k, b.data);
    }
    if (n) {
        stf__chk_add(k, "R12", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "add the missing tensors, or drop the orphan marker (orphan-tensors)",
                     "Comfy layer %s is missing checkpoint tensors: %s",
                     stf__chk_repr(k, l->prefix, l->prefix_len), stf__chk_sorted(k, names, lens, n,
                     (size_t)-1));
        return;
    }
    stf__check_sglang_layer_formats(k, l, mk, fmt);
}

/* R20: SGLang maps ComfyUI's all-in-one names (model.diffusion_model.*) onto
 * the bare module names, so a file holding both spellings collides. */
static void check_collisions(stf__chk *k, const unsigned char *has)
{
    size_t nl = stf_model_layer_count(k->m), n = 0;
    size_t plen = strlen(DIT_PREFIX);
    mapped_name *mapped = stf__calloc(nl ? nl : 1, sizeof *mapped);
    if (!mapped) {
        stf__chk_fail(k, STF_ENOMEM);
        return;
    }
    for (size_t i = 0; i < nl; i++) {
        if (!has[i]) continue;
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        int dit = l->prefix_len >= plen && !memcmp(l->prefix, DIT_PREFIX, plen);
        mapped[n].s = dit ? l->prefix + plen : l->prefix;
        mapped[n++].n = dit ? l->prefix_len - plen : l->prefix_len;
    }
    qsort(mapped, n, sizeof *mapped, mapped_cmp);
    for (size_t i = 1; i < n && !k->rc; i++) {
        if (!mapped_eq(&mapped[i - 1], &mapped[i]) ||
            (i >= 2 && mapped_eq(&mapped[i - 2], &mapped[i])))
            continue;
        stf__chk_add(k, "R20", STF_SEV_ERROR, mapped[i].s, mapped[i].n,
                     "keep one spelling of the layer (fuse or drop the duplicate, split-qkv)",
                     "Comfy markers collide after parameter mapping at %s",
                     stf__chk_repr(k, mapped[i].s, mapped[i].n));
    }
    stf__free(mapped);
}

/* ------------------------------------------------------------------ R30 */

static cfg_kind resolve(stf__chk *k, const unsigned char *has, const unsigned char *synth)
{
    size_t nl = stf_model_layer_count(k->m), n = 0;
    const char **fmts = stf__calloc(nl ? nl : 1, sizeof *fmts);
    cfg_kind kind = CFG_REJECTED;
    if (!fmts) {
        stf__chk_fail(k, STF_ENOMEM);
        return CFG_NONE;
    }
    for (size_t i = 0; i < nl; i++) {
        if (synth[i]) fmts[n++] = "mxfp8";
        else if (has[i]) {
            stf__layer_tmp lt;
            const stf_pyval *mk = stf__chk_marker(stf__model_layer_at(k->m, i, &lt));
            fmts[n++] = stf__chk_pystr(k, stf_pyval_find(mk, "format"));
        }
    }
    if (n == 0) {
        stf__free(fmts);
        return CFG_NONE; /* R29: an unquantized checkpoint */
    }
    qsort(fmts, n, sizeof *fmts, cmp_str);
    size_t u = 1;
    for (size_t i = 1; i < n; i++)
        if (strcmp(fmts[i], fmts[u - 1])) fmts[u++] = fmts[i];
    static const struct { const char *a, *b; cfg_kind kind; } allowed[] = {
        { "int8_tensorwise", NULL, CFG_INT8 },
        { "asym_w4a8_int8", NULL, CFG_W4A8 },
        { "asym_w4a8_int8", "int8_tensorwise", CFG_W4A8 },
        { "convrot_w4a4", NULL, CFG_W4A4 },
        { "convrot_w4a4", "int8_tensorwise", CFG_W4A4 },
        { "float8_e4m3fn", NULL, CFG_FP8 },
        { "nvfp4", NULL, CFG_NVFP4 },
        { "int8_tensorwise", "nvfp4", CFG_NVFP4 },
        { "mxfp8", NULL, CFG_MXFP8 },
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        size_t want = allowed[i].b ? 2 : 1;
        if (u == want && !strcmp(fmts[0], allowed[i].a) &&
            (want == 1 || !strcmp(fmts[1], allowed[i].b))) {
            kind = allowed[i].kind;
            break;
        }
    }
    if (kind == CFG_REJECTED) {
        stf_buf b;
        stf__buf_init(&b);
        for (size_t i = 0; i < u; i++) {
            if (i) stf__buf_puts(&b, ", ");
            stf__buf_puts(&b, fmts[i]);
        }
        if (b.oom) stf__chk_fail(k, STF_ENOMEM);
        else
            stf__chk_add(k, "R30", STF_SEV_ERROR, NULL, 0,
                         "convert every layer to one supported set (e.g. INT8 ConvRot: "
                         "requantize, or rename aliases with an identical layout: "
                         "nonstandard-format-name)",
                         "Unsupported Comfy quantization format(s): %s", b.data ? b.data : "");
        stf__buf_free(&b);
    }
    stf__free(fmts);
    return kind;
}

/* -------------------------------------------- config, selection, loading */

/* Python `v in (16, 64, 256)`. */
static int g_allowed(const stf_pyval *v)
{
    return v && stf_pyval_type(v) != STF_PY_BOOL &&
           (stf_pyval_eq_int(v, 16) || stf_pyval_eq_int(v, 64) || stf_pyval_eq_int(v, 256));
}

/* KitchenInt8Config rules for one int8_tensorwise layer (R23, R24, R27, R40). */
static void config_int8(stf__chk *k, const stf_layer *l, const stf_pyval *mk)
{
    const char *p = stf__chk_repr(k, l->prefix, l->prefix_len);
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *s = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_SCALE);
    const stf_pyval *g = stf_pyval_find(mk, "convrot_groupsize");
    if (!stf_pyval_is_true(stf_pyval_find(mk, "convrot")))
        stf__chk_add(k, "R23", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize with ConvRot (stfix fix with a requantize rule), or store the "
                     "layer in BF16 without a marker",
                     "Serialized kitchen_int8 layer %s must set convrot=true", p);
    if (!g_allowed(g))
        stf__chk_add(k, "R24", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "write the group size actually used as a JSON integer; requantize when it is "
                     "not 16, 64 or 256",
                     "Serialized kitchen_int8 layer %s must declare convrot_groupsize in (16, 64, "
                     "256), got %s", p, stf__chk_pyrepr(k, g));
    else if (w && w->rank == 2) {
        int64_t gv = 0;
        if (!stf_pyval_pyint(&gv, g, NULL) && (gv == 16 || w->shape[0] % 8))
            stf__chk_add(k, "R28", STF_SEV_INFO, l->prefix, l->prefix_len,
                         "prefer G in {64, 256} with N % 8 == 0 so sgl_kernel can serve the layer",
                         "Serialized convrot_int8 layer %s (ConvRot group %lld, %llu outputs) runs "
                         "only on the comfy_kitchen backend in newer SGLang trees; sgl_kernel serves "
                         "groups 64, 128, 256, 512 with outputs divisible by 8", p, (long long)gv,
                         (unsigned long long)w->shape[0]);
        if (!stf_pyval_pyint(&gv, g, NULL) && gv > 0 && w->shape[1] % (uint64_t)gv)
            stf__chk_add(k, "R27", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "requantize with a group size that divides the input size, or keep the "
                         "layer in BF16",
                         "Serialized kitchen_int8 layer %s has input size %llu, which is not "
                         "divisible by its ConvRot group size %s", p,
                         (unsigned long long)w->shape[1], stf__chk_pystr(k, g));
    }
    if (w && w->rank == 2 && s && s->rank == 0)
        stf__chk_add(k, "R40", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize rowwise: SGLang allocates a (N, 1) weight_scale",
                     "Tried to load weights of size torch.Size([1])to a parameter of size "
                     "torch.Size([%llu, 1])", (unsigned long long)w->shape[0]);
}

/*
 * R62: ComfyFp8Config's FP8 linear methods allocate weight_scale, and under
 * the static activation scheme (chosen when the layer has an input_scale)
 * input_scale, as a (1,) parameter for one Linear; the loader reshapes a
 * scalar to (1,) and asserts equal sizes, so only () and (1,) load. A
 * full_precision_matrix_mult layer's method allocates no input_scale.
 */
static void fp8_one_scale(stf__chk *k, const stf_layer *l, stf_suffix sx, const char *fix)
{
    const stf_tensor_info *s = stf_layer_tensor_info(k->m, l, sx);
    uint64_t one = 1;
    if (!s || s->rank == 0 || stf__chk_shape_is(s, 1, &one)) return;
    stf__chk_add(k, "R62", STF_SEV_ERROR, l->prefix, l->prefix_len, fix,
                 "Tried to load weights of size %sto a parameter of size torch.Size([1])",
                 stf__chk_torch_size(k, s));
}

static void config_fp8(stf__chk *k, const stf_layer *l, const stf_pyval *mk)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    if (!w || w->rank != 2) return;
    fp8_one_scale(k, l, STF_SFX_WEIGHT_SCALE,
                  "requantize the layer: float8_e4m3fn takes one scale per tensor");
    const stf_pyval *fp = stf_pyval_find(mk, "full_precision_matrix_mult");
    if (!fp || !stf_pyval_truthy(fp))
        fp8_one_scale(k, l, STF_SFX_INPUT_SCALE,
                      "requantize the layer: float8_e4m3fn takes one input_scale per tensor");
}

static void config_layer(stf__chk *k, cfg_kind kind, const stf_layer *l, const stf_pyval *mk,
                         const char *fmt)
{
    const char *p = stf__chk_repr(k, l->prefix, l->prefix_len);
    if (is_fmt(fmt, "int8_tensorwise")) {
        if (kind == CFG_INT8 || kind == CFG_W4A4) config_int8(k, l, mk);
        if (kind == CFG_W4A8) {
            const stf_tensor_info *s = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_SCALE);
            if (s && s->nelem != 1)
                stf__chk_add(k, "R60", STF_SEV_ERROR, l->prefix, l->prefix_len,
                             "W4A8 checkpoints take INT8 layers only as scalar-scale companions: "
                             "convert the layer to asym_w4a8_int8 or drop it to BF16",
                             "Unsupported Comfy W4A8 format for %s: %s", p,
                             stf__chk_repr(k, fmt, strlen(fmt)));
        }
    } else if (is_fmt(fmt, "convrot_w4a4") && kind == CFG_W4A4) {
        const stf_pyval *ld = stf_pyval_find(mk, "linear_dtype");
        if (ld) {
            const char *v = stf__chk_pystr(k, ld);
            if (strcmp(v, "int4") && strcmp(v, "int8"))
                stf__chk_add(k, "R57", STF_SEV_ERROR, l->prefix, l->prefix_len,
                             "set linear_dtype to \"int4\" (omit it) or \"int8\"",
                             "Serialized W4A4 layer %s has unsupported linear_dtype=%s; expected "
                             "one of ('int4', 'int8')", p, stf__chk_repr(k, v, strlen(v)));
        }
    } else if (is_fmt(fmt, "float8_e4m3fn") && kind == CFG_FP8) {
        config_fp8(k, l, mk);
    } else if (is_fmt(fmt, "asym_w4a8_int8") && kind == CFG_W4A8) {
        if (!stf_pyval_is_true(stf_pyval_find(mk, "convrot")))
            stf__chk_add(k, "R61", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "add \"convrot\": true (w4a8-without-convrot)",
                         "Serialized W4A8 layer %s must set convrot=true", p);
    }
}

/* R25: a quantized layer whose weight is not a matrix is not a LinearBase. */
static void check_selection(stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    if (!w || w->rank < 3) return;
    stf__chk_add(k, "R25", STF_SEV_ERROR, l->prefix, l->prefix_len,
                 "dequantize the layer to BF16 and drop its marker and scales",
                 "Comfy layer %s has a %u-D weight %s: SGLang gives non-Linear modules no quant "
                 "method and copy_-casts the quantized codes into a float parameter (silent "
                 "corruption)",
                 stf__chk_repr(k, l->prefix, l->prefix_len), w->rank, stf__chk_shape(k, w));
}

/*
 * The sglang profile in SGLang's order: files (R1-R8, R5), R9/R10, per
 * marker R12 and the format rules, R20, R30, then config, selection and
 * loading rules per layer. Returns 0 or the sticky k->rc.
 */
int stf__check_sglang(stf__chk *k)
{
    size_t nl = stf_model_layer_count(k->m);
    unsigned char *synth = stf__calloc(nl ? nl : 1, 2);
    if (!synth) {
        stf__chk_fail(k, STF_ENOMEM);
        return k->rc;
    }
    unsigned char *has = synth + (nl ? nl : 1);
    k->profile = "sglang";
    inspect_files(k);
    check_unmarked(k, synth);
    check_unmarked_e5m2(k);
    stf__check_sglang_legacy(k);
    for (size_t i = 0; i < nl && !k->rc; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        const stf_pyval *mk = stf__chk_marker(l);
        if (!mk) continue;
        has[i] = 1;
        size_t mark = stf__chk_mark(k);
        check_required(k, l, mk, stf__chk_format(mk));
        stf__chk_release(k, mark);
    }
    if (!k->rc) check_collisions(k, has);
    cfg_kind kind = k->rc ? CFG_NONE : resolve(k, has, synth);
    for (size_t i = 0; i < nl && !k->rc; i++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, i, &l_tmp);
        if (!has[i]) continue;
        const stf_pyval *mk = stf__chk_marker(l);
        size_t mark = stf__chk_mark(k);
        if (kind != CFG_NONE && kind != CFG_REJECTED)
            config_layer(k, kind, l, mk, stf__chk_format(mk));
        check_selection(k, l);
        stf__chk_release(k, mark);
    }
    stf__free(synth);
    return k->rc;
}
