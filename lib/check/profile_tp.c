/*
 * The `tp` profile: whether SGLang can split each Linear layer across T
 * GPUs (stfix-checks(7), TENSOR PARALLEL RULES). A column-parallel layer is
 * split along its N output rows (ColumnParallelLinear divides N by T); a
 * row-parallel one along its K input columns (RowParallelLinear divides K
 * by T), so every per-column structure of its format must fit a shard:
 * ConvRot groups of G columns (SGLang's supports_input_partition is false
 * otherwise and the layer is replicated on every GPU), W4A4's 64-column
 * quantization groups, and the block scales of W4A8, NVFP4 and MXFP8.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check/check_internal.h"

#define FIX_T1 "serve at a TP degree that divides K; no requantization changes K"
#define FIX_T2 "requantize with a group size that divides K/T (requantize tp: T, e.g. stfix fix " \
               "-r sglang-int8-convrot-tp8 for T = 8)"
#define FIX_T3 "serve at a TP degree that divides N; no requantization changes N"
#define FIX_T4 "requantize to int8_tensorwise with requantize tp: T, or serve at a TP degree " \
               "whose shards hold whole scale blocks"
#define FIX_T5 "give the layer a style in a --tp-profile file or in the recipe's parallel list"

/* What the checks need of one Linear layer. */
typedef struct tp_layer {
    const char *name;       /* shown name */
    uint64_t n, k;          /* logical output rows and input columns */
    uint64_t bytes;         /* weight and scales */
    const char *fmt;        /* marker format, NULL when unquantized */
    int64_t g;              /* ConvRot group size, 0 when none */
    int64_t block;          /* scale block along K (W4A8, NVFP4, MXFP8), 0 when none */
    int w4a4;               /* convrot_w4a4: 64-column quantization groups */
    stf_parallel_style style;
} tp_layer;

/* The int value of marker key `key`, or 0 when absent or not an integer. */
static int64_t marker_int(const stf_pyval *mk, const char *key)
{
    int64_t v = 0;
    const stf_pyval *x = mk ? stf_pyval_find(mk, key) : NULL;
    if (!x || stf_pyval_type(x) == STF_PY_BOOL || stf_pyval_pyint(&v, x, NULL) || v < 1) return 0;
    return v;
}

/* Fill t from model layer l; 0 when l is not a Linear layer (no 2-D weight). */
static int describe(tp_layer *t, stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    if (!w || w->rank != 2) return 0;
    memset(t, 0, sizeof *t);
    const stf_pyval *mk = stf__chk_marker(l);
    t->fmt = stf__chk_format(mk);
    const stf_format_info *f = t->fmt ? stf_format_find(t->fmt, strlen(t->fmt)) : NULL;
    int packed = (f && f->weight_shape == STF_SHAPE_NK2) ||
                 (t->fmt && !strcmp(t->fmt, "int4_convrot_w4a4"));
    t->n = w->shape[0];
    t->k = w->shape[1] * (packed ? 2 : 1);
    for (int s = 0; s < STF_SFX_COUNT; s++) {
        if (s == STF_SFX_COMFY_QUANT || s == STF_SFX_BIAS || s == STF_SFX_COMFY_ATTENTION_CONFIG)
            continue;
        const stf_tensor_info *ti = stf_layer_tensor_info(k->m, l, (stf_suffix)s);
        if (ti) t->bytes += ti->nbytes;
    }
    if (t->fmt && stf_pyval_is_true(stf_pyval_find(mk, "convrot")))
        t->g = marker_int(mk, "convrot_groupsize");
    if (t->fmt && (!strcmp(t->fmt, "convrot_w4a4") || !strcmp(t->fmt, "int4_convrot_w4a4")))
        t->w4a4 = 1;
    if (t->fmt && !strcmp(t->fmt, "asym_w4a8_int8")) t->block = marker_int(mk, "group_size");
    else if (t->fmt && !strcmp(t->fmt, "nvfp4")) t->block = 16;
    else if (t->fmt && !strcmp(t->fmt, "mxfp8")) t->block = 32;
    t->name = stf__chk_layer(k, l);
    return 1;
}

/* The verdicts a degree can give a layer. */
enum { V_SHARDED, V_BY_STYLE, V_REPLICATED, V_CANNOT, V_UNKNOWN };

/* Check one layer at degree tp, add its findings, return its verdict. */
static int check_degree(stf__chk *k, const stf_layer *l, const tp_layer *t, unsigned tp)
{
    const char *p = l->prefix;
    size_t pl = l->prefix_len;
    if (t->style == STF_PARALLEL_UNKNOWN) return V_UNKNOWN;
    if (t->style == STF_PARALLEL_REPLICATED) return V_BY_STYLE;
    if (t->style == STF_PARALLEL_COLUMN) {
        if (t->n % tp == 0) return V_SHARDED;
        stf__chk_add(k, "T3", STF_SEV_ERROR, p, pl, FIX_T3,
                     "column-parallel layer %s: N=%" PRIu64 " output rows do not split into "
                     "%u equal shards; SGLang's ColumnParallelLinear refuses the layer and the "
                     "model does not load at TP %u", t->name, t->n, tp, tp);
        return V_CANNOT;
    }
    if (t->k % tp) {
        stf__chk_add(k, "T1", STF_SEV_ERROR, p, pl, FIX_T1,
                     "row-parallel layer %s: K=%" PRIu64 " input columns do not split into %u "
                     "equal shards; SGLang's RowParallelLinear refuses the layer and the model "
                     "does not load at TP %u", t->name, t->k, tp, tp);
        return V_CANNOT;
    }
    uint64_t ks = t->k / tp;
    if (t->block && ks % (uint64_t)t->block) {
        stf__chk_add(k, "T4", STF_SEV_ERROR, p, pl, FIX_T4,
                     "row-parallel layer %s (%s): at TP %u each shard holds K/%u=%" PRIu64
                     " input columns, which splits its scale blocks of %" PRId64 " columns; "
                     "SGLang cannot load the shard's scales and the model does not load at "
                     "TP %u", t->name, t->fmt, tp, tp, ks, t->block, tp);
        return V_CANNOT;
    }
    const char *what = NULL;
    char gtext[64];
    if (t->g && ks % (uint64_t)t->g) {
        snprintf(gtext, sizeof gtext, "its ConvRot group size G=%" PRId64, t->g);
        what = gtext;
    } else if (t->w4a4 && ks % 64) {
        what = "W4A4's 64-column quantization group";
    }
    if (!what) return V_SHARDED;
    stf__chk_add(k, "T2", STF_SEV_WARNING, p, pl, FIX_T2,
                 "row-parallel layer %s: at TP %u each shard holds K/%u=%" PRIu64 " input "
                 "columns, not a multiple of %s, so rotation groups would straddle shards; "
                 "SGLang replicates the layer on every GPU: %" PRIu64 " bytes per GPU instead "
                 "of %" PRIu64, t->name, tp, tp, ks, what, t->bytes, t->bytes / tp);
    return V_REPLICATED;
}

/* Contract in check_internal.h: the T findings and one summary per degree. */
int stf__check_tp(stf__chk *k, const stf_tp_opts *tp)
{
    if (tp->count > STF_TP_MAX_DEGREES)
        return stf__err(k->err, STF_EINVAL, "stf_tp_opts: %zu degrees (at most %d)", tp->count,
                        STF_TP_MAX_DEGREES);
    for (size_t i = 0; i < tp->count; i++)
        if (tp->degrees[i] < 1 || tp->degrees[i] > 65536)
            return stf__err(k->err, STF_EINVAL,
                            "stf_tp_opts: degree %u is outside 1 to 65536", tp->degrees[i]);
    k->profile = "tp";
    k->r->tp = stf__calloc(tp->count, sizeof *k->r->tp);
    if (!k->r->tp) return stf__err(k->err, STF_ENOMEM, "out of memory");
    k->r->ntp = tp->count;
    for (size_t i = 0; i < tp->count; i++) k->r->tp[i].tp = tp->degrees[i];
    size_t nl = stf_model_layer_count(k->m);
    tp_layer *v = stf__calloc(nl ? nl : 1, sizeof *v);
    unsigned char *linear = stf__calloc(nl ? nl : 1, 1);
    int rc = 0;
    if (!v || !linear) rc = stf__err(k->err, STF_ENOMEM, "out of memory");
    const char *profile = tp->profile ? tp->profile : "none";
    for (size_t li = 0; li < nl && !rc && !k->rc; li++) {
        stf__layer_tmp l_tmp;
        const stf_layer *l = stf__model_layer_at(k->m, li, &l_tmp);
        if (!describe(&v[li], k, l)) continue;
        linear[li] = 1;
        if (tp->style) rc = tp->style(tp->style_ctx, k->m, l, &v[li].style, k->err);
        if (!rc && v[li].style == STF_PARALLEL_UNKNOWN)
            stf__chk_add(k, "T5", STF_SEV_INFO, l->prefix, l->prefix_len, FIX_T5,
                         "layer %s (%" PRIu64 "x%" PRIu64 ") has no parallel style in profile "
                         "%s: not checked for tensor parallelism", v[li].name, v[li].n,
                         v[li].k, profile);
    }
    for (size_t i = 0; i < tp->count && !rc && !k->rc; i++) {
        stf_tp_summary *s = &k->r->tp[i];
        for (size_t li = 0; li < nl && !k->rc; li++) {
            if (!linear[li]) continue;
            stf__layer_tmp lt;
            switch (check_degree(k, stf__model_layer_at(k->m, li, &lt), &v[li], s->tp)) {
            case V_SHARDED: s->sharded++; break;
            case V_BY_STYLE: s->replicated_by_style++; break;
            case V_REPLICATED:
                s->replicated++;
                s->replicated_bytes += v[li].bytes;
                break;
            case V_CANNOT: s->cannot_load++; break;
            default: s->unknown++; break;
            }
        }
    }
    stf__free(v);
    stf__free(linear);
    return rc ? rc : k->rc;
}
