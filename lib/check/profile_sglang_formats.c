/*
 * The per-format rules of SGLang's inspection (stfix-checks(7), SGLANG RULES):
 * dtypes and shapes of INT8 (R13-R15), W4A4 (R16-R19), W4A8 (R44-R49) and
 * NVFP4 (R50-R54) layers. Called once per marked layer whose required
 * tensors are all present (R12 passed). SGLang raises at the first failing
 * rule; here every independent rule is evaluated.
 */
#include <string.h>

#include "check/check_internal.h"

#define FIX_SHAPES \
    "header-only reshape when H1 confirms rows, else requantize (stfix-defects(7), SCALE SHAPES)"

static const stf_tensor_info *T(stf__chk *k, const stf_layer *l, stf_suffix s)
{
    return stf_layer_tensor_info(k->m, l, s);
}

/* int(marker.get(key, dflt)); 0 on success, -1 where Python raises. */
static int marker_int(int64_t *out, const stf_pyval *mk, const char *key, int64_t dflt)
{
    const stf_pyval *v = stf_pyval_find(mk, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    return stf_pyval_pyint(out, v, NULL) ? -1 : 0;
}

static void int8_rules(stf__chk *k, const stf_layer *l, const char *p)
{
    const stf_tensor_info *w = T(k, l, STF_SFX_WEIGHT), *s = T(k, l, STF_SFX_WEIGHT_SCALE);
    if (w->dtype == STF_I8 && s->dtype == STF_F32 && s->rank == 0) {
        if (w->rank != 2)
            stf__chk_add(k, "R13", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "dequantize non-matrix layers to BF16 and drop the marker",
                         "Comfy tensorwise INT8 layer %s needs a 2D weight, got %s", p,
                         stf__chk_shape(k, w));
        return;
    }
    if (w->dtype != STF_I8 || s->dtype != STF_F32)
        stf__chk_add(k, "R14", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "cast the scale to F32 (exact); relabel the weight only on a recipe assertion "
                     "(storage-dtype-mismatch)",
                     "Comfy INT8 layer %s needs I8 weights and F32 scales, got %s and %s", p,
                     stf__chk_dtype(w), stf__chk_dtype(s));
    uint64_t d[2] = { w->rank ? w->shape[0] : 0, 1 };
    if (w->rank != 2 || !stf__chk_shape_is(s, 2, d))
        stf__chk_add(k, "R15", STF_SEV_ERROR, l->prefix, l->prefix_len, FIX_SHAPES,
                     "Comfy INT8 layer %s has incompatible weight/scale shapes: %s and %s", p,
                     stf__chk_shape(k, w), stf__chk_shape(k, s));
}

static void w4a4_rules(stf__chk *k, const stf_layer *l, const stf_pyval *mk, const char *p)
{
    const stf_tensor_info *w = T(k, l, STF_SFX_WEIGHT), *s = T(k, l, STF_SFX_WEIGHT_SCALE);
    if (w->dtype != STF_I8 || s->dtype != STF_F32)
        stf__chk_add(k, "R16", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "cast the scale to F32; store the packed weight as I8",
                     "Comfy W4A4 layer %s needs I8 packed weights and F32 scales, got %s and %s",
                     p, stf__chk_dtype(w), stf__chk_dtype(s));
    uint64_t n = w->rank ? w->shape[0] : 0;
    if (w->rank != 2 || !stf__chk_shape_is(s, 1, &n))
        stf__chk_add(k, "R17", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "reshape a (N, 1) scale to (N,) (header-only); otherwise requantize",
                     "Comfy W4A4 layer %s has incompatible weight/scale shapes: %s and %s", p,
                     stf__chk_shape(k, w), stf__chk_shape(k, s));
    int64_t g = 0;
    if (marker_int(&g, mk, "convrot_groupsize", 256)) {
        stf__chk_add(k, "R18", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "write convrot_groupsize as a JSON integer (16, 64 or 256)",
                     "Comfy W4A4 layer %s has unsupported convrot_groupsize=%s", p,
                     stf__chk_pystr(k, stf_pyval_find(mk, "convrot_groupsize")));
        return;
    }
    if (g != 16 && g != 64 && g != 256) {
        stf__chk_add(k, "R18", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize with a group size of 16, 64 or 256",
                     "Comfy W4A4 layer %s has unsupported convrot_groupsize=%lld", p, (long long)g);
        return;
    }
    if (w->rank == 2) {
        uint64_t kk = 2 * w->shape[1];
        if (kk % 64 || kk % (uint64_t)g)
            stf__chk_add(k, "R19", STF_SEV_ERROR, l->prefix, l->prefix_len,
                         "W4A4 needs K % 64 == 0: requantize as INT8 (K % 16 == 0) or keep BF16",
                         "Comfy W4A4 layer %s has input size %llu, incompatible with "
                         "quant_group_size=64 and convrot_groupsize=%lld",
                         p, (unsigned long long)kk, (long long)g);
    }
}

static void w4a8_rules(stf__chk *k, const stf_layer *l, const stf_pyval *mk, const char *p)
{
    const stf_tensor_info *w = T(k, l, STF_SFX_WEIGHT), *sr = T(k, l, STF_SFX_WEIGHT_S_REL),
                          *sc = T(k, l, STF_SFX_WEIGHT_S_CHANNEL),
                          *cb = T(k, l, STF_SFX_WEIGHT_CODEBOOK),
                          *cor = T(k, l, STF_SFX_WEIGHT_CORRECTION);
    int64_t gs = 0;
    int gs_ok = !marker_int(&gs, mk, "group_size", 16);
    if (!gs_ok)
        stf__chk_add(k, "R44", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "write group_size as a JSON integer",
                     "Comfy W4A8 layer %s has invalid group_size=%s", p,
                     stf__chk_pystr(k, stf_pyval_find(mk, "group_size")));
    else if (gs < 4) {
        gs_ok = 0;
        stf__chk_add(k, "R44", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize with group_size 16",
                     "Comfy W4A8 layer %s has invalid group_size=%lld", p, (long long)gs);
    }
    if (w->dtype != STF_I8 || sr->dtype != STF_F8_E4M3)
        stf__chk_add(k, "R45", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "relabel a U8 weight_s_rel as F8_E4M3 (same bytes); store the weight as I8",
                     "Comfy W4A8 layer %s needs I8 weights and FP8 group scales, got %s and %s", p,
                     stf__chk_dtype(w), stf__chk_dtype(sr));
    if (sc->dtype != STF_F32)
        stf__chk_add(k, "R46", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "cast weight_s_channel to F32",
                     "Comfy W4A8 layer %s needs F32 channel scales, got %s", p, stf__chk_dtype(sc));
    if (w->rank != 2) {
        stf__chk_add(k, "R47", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "dequantize non-matrix layers to BF16 and drop the marker",
                     "Comfy W4A8 layer %s needs a 2D packed weight, got %s", p,
                     stf__chk_shape(k, w));
        return;
    }
    if (!gs_ok) return;
    uint64_t n = w->shape[0], kk = 2 * w->shape[1];
    uint64_t rel[2] = { n, kk / (uint64_t)gs };
    if (!stf__chk_shape_is(sr, 2, rel) || !stf__chk_shape_is(sc, 1, &n))
        stf__chk_add(k, "R48", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "weight_s_rel must be (N, K/group_size) and weight_s_channel (N,); re-export the layer",
                     "Comfy W4A8 layer %s has incompatible weight/scale shapes: %s, %s, and %s", p,
                     stf__chk_shape(k, w), stf__chk_shape(k, sr), stf__chk_shape(k, sc));
    uint64_t sixteen = 16;
    if (cb && (cb->dtype != STF_F32 || !stf__chk_shape_is(cb, 1, &sixteen)))
        stf__chk_add(k, "R49", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "store the codebook as F32 (16,)",
                     "Comfy W4A8 layer %s needs an F32[16] codebook", p);
    uint64_t cd[2] = { kk / (uint64_t)gs, n };
    if (cor && (cor->dtype != STF_F32 || !stf__chk_shape_is(cor, 2, cd)))
        stf__chk_add(k, "R49", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "store the correction as F32 (K/group_size, N)",
                     "Comfy W4A8 layer %s has an incompatible correction tensor", p);
}

static void nvfp4_rules(stf__chk *k, const stf_layer *l, const char *p)
{
    const stf_tensor_info *w = T(k, l, STF_SFX_WEIGHT), *s = T(k, l, STF_SFX_WEIGHT_SCALE),
                          *s2 = T(k, l, STF_SFX_WEIGHT_SCALE_2),
                          *pre = T(k, l, STF_SFX_PRE_QUANT_SCALE);
    if (w->dtype != STF_U8 || s->dtype != STF_F8_E4M3)
        stf__chk_add(k, "R50", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "store packed weights as U8 and block scales as F8_E4M3",
                     "Comfy NVFP4 layer %s needs U8 packed weights and FP8 block scales, got %s and %s",
                     p, stf__chk_dtype(w), stf__chk_dtype(s));
    uint64_t one = 1;
    if (s2->dtype != STF_F32 || !(s2->rank == 0 || stf__chk_shape_is(s2, 1, &one)))
        stf__chk_add(k, "R51", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "cast weight_scale_2 to an F32 scalar",
                     "Comfy NVFP4 layer %s needs a scalar F32 weight_scale_2, got %s%s", p,
                     stf__chk_dtype(s2), stf__chk_shape(k, s2));
    if (w->rank != 2) {
        stf__chk_add(k, "R52", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "dequantize non-matrix layers to BF16 and drop the marker",
                     "Comfy NVFP4 layer %s needs a 2D packed weight, got %s", p,
                     stf__chk_shape(k, w));
        return;
    }
    uint64_t kk = 2 * w->shape[1];
    uint64_t d[2] = { w->shape[0], kk / 16 };
    if (kk % 16 || !stf__chk_shape_is(s, 2, d))
        stf__chk_add(k, "R53", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "SGLang reads unswizzled (N, K/16) block scales; re-export the layer",
                     "Comfy NVFP4 layer %s has incompatible weight/scale shapes: %s and %s", p,
                     stf__chk_shape(k, w), stf__chk_shape(k, s));
    if (pre && (!(pre->dtype == STF_BF16 || pre->dtype == STF_F16 || pre->dtype == STF_F32) ||
                !stf__chk_shape_is(pre, 1, &kk)))
        stf__chk_add(k, "R54", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "pre_quant_scale must be BF16/F16/F32 (K,); re-export the layer",
                     "Comfy NVFP4 layer %s has an incompatible pre_quant_scale: %s%s", p,
                     stf__chk_dtype(pre), stf__chk_shape(k, pre));
}

/*
 * Per-format inspection rules of one layer whose required tensors exist;
 * unknown formats are left to R30.
 */
void stf__check_sglang_layer_formats(stf__chk *k, const stf_layer *l, const stf_pyval *marker,
                                     const char *fmt)
{
    if (!fmt) return;
    const char *p = stf__chk_repr(k, l->prefix, l->prefix_len);
    if (!strcmp(fmt, "int8_tensorwise")) int8_rules(k, l, p);
    else if (!strcmp(fmt, "convrot_w4a4")) w4a4_rules(k, l, marker, p);
    else if (!strcmp(fmt, "asym_w4a8_int8")) w4a8_rules(k, l, marker, p);
    else if (!strcmp(fmt, "nvfp4")) nvfp4_rules(k, l, p);
}
