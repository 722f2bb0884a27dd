/*
 * Plan actions that decode a layer's data or rewrite its marker: exclude
 * (dequantize), requantize (stfix-convrot(7), MODES to SYLVESTER ORDER: the
 * decode descriptor, the group size, the rounding dtype and mode), set-marker
 * and rewrite-format (stfix-defects(7), MARKER FIELDS and CANONICAL MARKER; the
 * defects missing-format, nonstandard-format-name, nested-params and
 * w4a8-without-convrot). Only decisions: the run produces the bytes.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_work.h"

/*
 * The axis of a weight's scale S by its shape (stfix-defects(7), SCALE
 * SHAPES), for INT8 and FP8 codes alike: one value is the tensor's; an
 * `(N,g)` scale holds g groups a row (*groups = g; checked before the
 * per-column reading, since N*g may equal K); N values are per row and K
 * per column, except that a square layer's N values are per column only
 * when the row/column probe says COLUMN. 0, or -1 for any other scale,
 * with the refusal in msg.
 */
static int scale_axis(const stf__layer_work *w, const stf__tensor_slot *S, stf_scale_axis *axis,
                      uint64_t *groups, char *msg, size_t cap)
{
    *groups = 0;
    if (S->nelem == 1) *axis = STF_SCALE_TENSOR;
    else if (S->rank == 2 && S->shape[0] == w->n && S->shape[1] > 1 && S->shape[1] != w->k &&
             w->k % S->shape[1] == 0) {
        *axis = STF_SCALE_ROW;
        *groups = S->shape[1];
    } else if (S->nelem == w->n && (w->n != w->k || w->v->probe != STF_PROBE_COLUMN))
        *axis = STF_SCALE_ROW;
    else if (S->nelem == w->k) *axis = STF_SCALE_COL;
    else {
        char sh[96];
        snprintf(msg, cap,
                 "scale %s is neither scalar, per row (N=%llu) nor per column "
                 "(K=%llu): grouped/blockwise scales cannot be decoded",
                 stf__shape_text(sh, sizeof sh, S->rank, S->shape), (unsigned long long)w->n,
                 (unsigned long long)w->k);
        return -1;
    }
    return 0;
}

/*
 * A regular rotation (G a power of 4) larger than the transform's 1024
 * (stfix-convrot(7), FAST TRANSFORM): the decoder cannot undo it, so the
 * plan refuses it here rather than the run at that layer. 1 with the
 * refusal in msg.
 */
static int regular_too_big(int kind, int64_t g, char *msg, size_t cap)
{
    if (kind != 1 || g <= 1024) return 0;
    snprintf(msg, cap, "convrot_groupsize %lld is a power of 4 above 1024: stfix cannot undo "
             "that regular rotation", (long long)g);
    return 1;
}

/* How to read f32 rows of what the layer holds now (contract in plan_work.h). */
int stf__work_decode(stf__layer_work *w, stf__decode *d, stf_err *err)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT], *S = &w->s[STF_SFX_WEIGHT_SCALE];
    char msg[320];
    memset(d, 0, sizeof *d);
    d->s_idx = -1;
    if (!W->present || W->dropped)
        return stf__work_refuse(w, err, "the layer has no weight to decode");
    d->w_idx = W->src;
    d->w_dtype = W->dtype;
    d->n = w->n;
    d->k = w->k;
    if (stf__dtype_is_float(W->dtype)) {
        d->kind = STF__DEC_FLOAT;
        return 0;
    }
    const char *fmt = w->format ? w->format : "";
    const stf_pyval *mk = stf__work_marker(w, STF_PREFER_METADATA);
    if (w->recover_rc) return stf__err(err, w->recover_rc, "layer '%s': out of memory", w->shown);
    stf_marker_spec sp;
    memset(&sp, 0, sizeof sp);
    if (mk && stf_pyval_type(mk) == STF_PY_DICT &&
        stf_marker_normalize(&sp, mk, STF_NORM_ADD_INT8_FORMAT, NULL))
        memset(&sp, 0, sizeof sp);
    static const char *const decodable[] = { "int8_tensorwise", "int8_perrow", "convrot_w4a4",
                                             "int4_convrot_w4a4", "float8_e4m3fn",
                                             "float8_e5m2", "float8_e4m3fn_rowwise", NULL };
    if (fmt[0]) {
        size_t i = 0;
        while (decodable[i] && strcmp(decodable[i], fmt)) i++;
        if (!decodable[i]) {
            snprintf(msg, sizeof msg, "format '%s' cannot be decoded (stfix reads float, FP8, "
                     "INT8 and convrot_w4a4 layers); exclude needs the original weights", fmt);
            return stf__work_refuse(w, err, msg);
        }
    }
    if (S->present) {
        d->s_idx = (int64_t)S->src;
        d->s_dtype = S->in_dtype;
        if (!stf__dtype_is_float(S->in_dtype)) {
            snprintf(msg, sizeof msg, "scale dtype %s cannot be decoded (F32, BF16 or F16)",
                     stf_dtype_name(S->in_dtype));
            return stf__work_refuse(w, err, msg);
        }
    }
    if (W->dtype == STF_F8_E4M3 || W->dtype == STF_F8_E5M2) {
        /* Legacy scaled FP8 keeps its scale in P.scale_weight (stfix-defects(7),
         * MARKER CHANNELS). */
        stf__tensor_slot *LS = &w->s[STF_SFX_SCALE_WEIGHT];
        if (!S->present && LS->present && stf__dtype_is_float(LS->in_dtype)) {
            d->s_idx = (int64_t)LS->src;
            d->s_dtype = LS->in_dtype;
            S = LS;
        }
        if (!S->present)
            return stf__work_refuse(w, err, "FP8 weight without weight_scale cannot be decoded");
        /* A scalar (the upstream formats), per-row (rowwise exporters) or
         * per-column scale; groups of a row are INT8's only. A square
         * layer's N values are per column when H1 on the FP8 codes says
         * COLUMN (stfix-defects(7), ROW AND COLUMN DETECTION). */
        uint64_t groups;
        if (scale_axis(w, S, &d->axis, &groups, msg, sizeof msg))
            return stf__work_refuse(w, err, msg);
        if (groups) {
            char sh[96];
            snprintf(msg, sizeof msg, "FP8 weight with a grouped scale %s (%llu groups a row) "
                     "cannot be decoded", stf__shape_text(sh, sizeof sh, S->rank, S->shape),
                     (unsigned long long)groups);
            return stf__work_refuse(w, err, msg);
        }
        d->kind = STF__DEC_FP8;
        return 0;
    }
    if (W->dtype != STF_I8) {
        snprintf(msg, sizeof msg,
                 "weight dtype %s cannot be decoded (relabel U8 holding int8 to I8 first)",
                 stf_dtype_name(W->dtype));
        return stf__work_refuse(w, err, msg);
    }
    if (!S->present)
        return stf__work_refuse(w, err, "INT8 weight without weight_scale cannot be decoded");
    int64_t g = sp.convrot_groupsize_set ? sp.convrot_groupsize : 256;
    if (!strcmp(fmt, "convrot_w4a4") || !strcmp(fmt, "int4_convrot_w4a4")) {
        uint64_t kk = 2 * W->shape[1];
        if (W->rank != 2 || S->nelem != W->shape[0])
            return stf__work_refuse(w, err, "W4A4 weight/scale shapes cannot be decoded");
        int kind = stf__power_kind(g);
        if (!kind || g > 4096 || kk % (uint64_t)g)
            return stf__work_refuse(w, err,
                                    "W4A4 convrot_groupsize is not a power of 2 dividing K");
        if (regular_too_big(kind, g, msg, sizeof msg)) return stf__work_refuse(w, err, msg);
        d->kind = STF__DEC_W4A4;
        d->n = W->shape[0];
        d->k = kk;
        d->rot_group = (unsigned)g;
        d->sylvester = kind == 2;
        return 0;
    }
    d->kind = STF__DEC_INT8;
    if (scale_axis(w, S, &d->axis, &d->groups, msg, sizeof msg))
        return stf__work_refuse(w, err, msg);
    if (sp.convrot) {
        int kind = stf__power_kind(g);
        if (!kind || g > 4096) {
            snprintf(msg, sizeof msg, "convrot_groupsize %lld is not a power of 2: the rotation "
                     "cannot be undone", (long long)g);
            return stf__work_refuse(w, err, msg);
        }
        if (w->k % (uint64_t)g) {
            /* indivisible-group: no exporter can rotate such a row (the FHT needs G | K), so the
             * codes were quantized unrotated under a marker that claims otherwise. */
            char gb[24];
            snprintf(gb, sizeof gb, "%lld", (long long)g);
            stf__work_note(w, "G=%s does not divide K: read as unrotated%s", gb, "");
            return 0;
        }
        if (regular_too_big(kind, g, msg, sizeof msg)) return stf__work_refuse(w, err, msg);
        d->rot_group = (unsigned)g;
        d->sylvester = kind == 2;
    }
    return 0;
}

/* ------------------------------------------------------------ jobs */

static void drop_companions(stf__layer_work *w)
{
    for (size_t i = 0; i < stf__weight_ncompanions; i++)
        w->s[stf__weight_companions[i]].dropped = 1;
}

/*
 * A weight with no elements has nothing to requantize or dequantize, and
 * its other dimension is only a number in the header: [2^40, 0] holds no
 * byte, yet would plan 2^40 scales. Such a weight is never decoded; the
 * action leaves the layer as it is (the weight, its scales and marker are
 * copied unchanged) and says so in the summary. Returns 1 when it did.
 */
static int keep_empty_weight(stf__layer_work *w, const char *instead)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    if (!W->present || W->dropped || W->nelem) return 0;
    char sh[96];
    stf__work_note(w, "weight %s has no elements: copied unchanged, not %s",
                   stf__shape_text(sh, sizeof sh, W->rank, W->shape), instead);
    w->done = 1;
    return 1;
}

/*
 * Dequantize the weight to `want` (STF_DTYPE_SOURCE: the float source dtype,
 * BF16 for quantized data) and drop the marker and every companion. A float
 * weight already in that dtype is copied; a weight with no elements leaves
 * the layer unchanged. Terminal.
 */
int stf__work_exclude(stf__layer_work *w, stf_dtype want, stf_err *err)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    if (keep_empty_weight(w, "dequantized")) return 0;
    const char *format = w->format;
    drop_companions(w);
    w->s[STF_SFX_COMFY_QUANT].dropped = 1;
    w->marker_change = MARKER_NONE;
    w->format = NULL;
    w->done = 1;
    if (!W->present) {
        stf__work_note(w, "exclude: markers and scales dropped%s%s", "", "");
        return 0;
    }
    stf_dtype src_float = stf__dtype_is_float(W->dtype) ? W->dtype : STF_BF16;
    stf_dtype out = want == STF_DTYPE_SOURCE ? src_float : want;
    if (stf__dtype_is_float(W->dtype) && W->dtype == out && W->op == STF_OUT_COPY) {
        stf__work_note(w, "exclude: weight kept as %s, marker and scales dropped",
                       stf_dtype_name(out), "");
        return 0;
    }
    /* The codes are read as the layer's format says (W4A4 packs two per
     * byte; a format stfix cannot read is refused by name). */
    stf__decode d;
    w->format = format;
    int rc = stf__work_decode(w, &d, err);
    w->format = NULL;
    if (rc) return rc;
    memset(&w->job, 0, sizeof w->job);
    w->job.kind = STF__JOB_DEQUANT;
    w->job.dec = d;
    w->job.out_dtype = out;
    if (d.kind == STF__DEC_W4A4) {
        W->rank = 2;
        W->shape[0] = d.n;
        W->shape[1] = d.k;
    }
    W->dtype = out;
    W->op = STF_OUT_DEQUANT;
    stf__work_note(w, "exclude: weight dequantized to %s, marker and scales dropped",
                   stf_dtype_name(out), "");
    return 0;
}

/*
 * The first listed group size dividing K and, for a row-parallel layer
 * under requantize's `tp`, K/tp as well (SGLang splits such a layer along
 * K: stfix-checks(7), T2). A row layer whose K itself does not split is
 * given a G for K (no G helps it; T1 reports it). `why` gets the reason
 * plan shows when a degree is set.
 */
static int pick_group(const stf_action *a, const stf_layer_view *v, uint64_t k, unsigned *g,
                      char *why, size_t why_cap)
{
    unsigned tp = a->params.requantize.tp > 1 ? a->params.requantize.tp : 1;
    int row = v && v->parallel == STF_PARALLEL_ROW;
    const char *style = stf_parallel_style_name(v ? v->parallel : STF_PARALLEL_UNKNOWN);
    if (tp > 1 && row && k % tp) {
        snprintf(why, why_cap, "row-parallel K=%llu does not split at TP %u: G for K",
                 (unsigned long long)k, tp);
        tp = 1;
    } else if (tp > 1 && row) {
        snprintf(why, why_cap, "largest allowed G dividing K/%u=%llu, row-parallel", tp,
                 (unsigned long long)(k / tp));
    } else {
        snprintf(why, why_cap, "largest allowed G dividing K=%llu, %s style", (unsigned long long)k,
                 style);
        tp = 1;
    }
    for (size_t i = 0; i < a->params.requantize.group_size_count; i++) {
        uint64_t gi = a->params.requantize.group_sizes[i];
        if (!gi || k % gi) continue;
        if (tp > 1 && (k / tp) % gi) continue;
        *g = (unsigned)gi;
        return 1;
    }
    return 0;
}

/*
 * Requantize to int8_tensorwise+ConvRot or convrot_w4a4 (a = the requantize
 * parameters); a weight with no elements leaves the layer unchanged.
 */
int stf__work_requantize(stf__layer_work *w, const stf_action *a, stf_format_id to, stf_err *err)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    char msg[320];
    if (!W->present || W->dropped) return stf__work_refuse(w, err, "the layer has no weight");
    if (keep_empty_weight(w, "requantized")) return 0;
    /* A MoE bank [E,out,in] is requantized as [E*out, in] and keeps its 3-D form
     * (stfix-defects(7), FORMATS). */
    int moe = W->rank == 3 && !w->flattened && w->n == W->shape[0] * W->shape[1] &&
              w->k == W->shape[2];
    uint64_t experts = moe ? W->shape[0] : 0, per = moe ? W->shape[1] : 0;
    if (W->rank != 2 && !w->flattened && !(moe && to == STF_FMT_INT8_TENSORWISE)) {
        snprintf(msg, sizeof msg, "weight has rank %u; requantize needs a Linear weight "
                 "(flatten-conv first, or exclude it)", W->rank);
        return stf__work_refuse(w, err, msg);
    }
    if (to != STF_FMT_INT8_TENSORWISE && to != STF_FMT_CONVROT_W4A4) {
        snprintf(msg, sizeof msg, "stfix quantizes only to int8_tensorwise and convrot_w4a4, "
                 "not %s", stf_format_name(to));
        return stf__work_refuse(w, err, msg);
    }
    stf__decode d;
    int rc = stf__work_decode(w, &d, err);
    if (rc) return rc;
    unsigned g = 0;
    char why[160];
    if (!pick_group(a, w->v, d.k, &g, why, sizeof why)) {
        if (a->params.requantize.on_indivisible == STF_INDIVISIBLE_FAIL) {
            snprintf(msg, sizeof msg, "no allowed group size divides K=%llu (on_indivisible: "
                     "fail)", (unsigned long long)d.k);
            return stf__work_refuse(w, err, msg);
        }
        /* why names K/tp for a row layer under a degree, else K. */
        const char *slash = strstr(why, "K/");
        char kt[64] = "";
        if (slash && a->params.requantize.tp > 1) snprintf(kt, sizeof kt, " (%.*s)",
                                                            (int)strcspn(slash, ","), slash);
        stf__work_note(w, "no group size divides K%s%s", kt, "");
        return stf__work_exclude(w, a->params.requantize.fallback_dtype, err);
    }
    memset(&w->job, 0, sizeof w->job);
    w->job.dec = d;
    w->job.group = g;
    w->job.mode = w->b->o && w->b->o->quant_mode_set ? w->b->o->quant_mode
                                                       : a->params.requantize.quant_mode;
    w->job.t = d.kind == STF__DEC_FLOAT ? d.w_dtype : a->params.requantize.compute_dtype;
    /* The old marker's fp-matmul flag survives (stfix-defects(7), CANONICAL MARKER). */
    int fpmm = 0;
    int64_t nexp = 0;
    const stf_pyval *mk = stf__work_marker(w, STF_PREFER_METADATA);
    if (w->recover_rc) return stf__err(err, w->recover_rc, "layer '%s': out of memory", w->shown);
    if (mk && stf_pyval_type(mk) == STF_PY_DICT) {
        fpmm = stf_pyval_truthy(stf_pyval_find(mk, "full_precision_matrix_mult"));
        if (stf_pyval_pyint(&nexp, stf_pyval_find(mk, "num_experts"), NULL)) nexp = 0;
    }
    drop_companions(w);
    stf__tensor_slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    int had_scale = S->present;
    size_t s_src = had_scale ? S->src : W->src;
    S->present = 1;
    S->dropped = 0;
    S->src = s_src;
    S->in_dtype = had_scale ? S->in_dtype : STF_F32;
    S->dtype = STF_F32;
    S->op = STF_OUT_QUANT_SCALE;
    W->op = STF_OUT_QUANT_WEIGHT;
    W->dtype = STF_I8;
    W->rank = 2;
    W->shape[0] = d.n;
    memset(&w->spec, 0, sizeof w->spec);
    w->spec.convrot_groupsize_set = 1;
    w->spec.convrot_groupsize = g;
    if (to == STF_FMT_INT8_TENSORWISE) {
        w->job.kind = STF__JOB_REQUANT_INT8;
        W->shape[1] = d.k;
        S->rank = 2;
        S->shape[0] = d.n;
        S->shape[1] = 1;
        w->spec.format = "int8_tensorwise";
        w->spec.convrot = 1;
        w->spec.full_precision_matrix_mult = fpmm;
        if (moe) {
            uint64_t ws3[3] = { experts, per, d.k }, ss3[3] = { experts, per, 1 };
            stf__slot_set_shape(W, 3, ws3);
            stf__slot_set_shape(S, 3, ss3);
        }
        if (nexp > 0) {
            w->spec.num_experts_set = 1;
            w->spec.num_experts = nexp;
        }
    } else {
        if (d.k % 2) return stf__work_refuse(w, err, "K is odd: W4A4 packs two columns per byte");
        w->job.kind = STF__JOB_REQUANT_W4A4;
        W->shape[1] = d.k / 2;
        S->rank = 1;
        S->shape[0] = d.n;
        w->spec.format = "convrot_w4a4";
        w->spec.linear_dtype = a->params.requantize.int8_activations ? "int8" : NULL;
    }
    S->nelem = d.n;
    w->n = d.n;
    w->k = d.k;
    w->marker_change = MARKER_NEW;
    w->format = w->spec.format;
    w->requant = 1;
    w->done = 1;
    char gb[200];
    if (a->params.requantize.tp > 1 && d.rot_group)
        snprintf(gb, sizeof gb, "%u (was %u; %s)", g, d.rot_group, why);
    else if (a->params.requantize.tp > 1)
        snprintf(gb, sizeof gb, "%u (was none; %s)", g, why);
    else
        snprintf(gb, sizeof gb, "%u", g);
    stf__work_note(w, "requantize to %s, G=%s", w->spec.format, gb);
    return 0;
}

/* The requantize action with every default (transpose-scale, rewrite-format mismatch). */
void stf__requantize_defaults(stf_action *a)
{
    memset(a, 0, sizeof *a);
    a->kind = STF_ACT_REQUANTIZE;
    a->params.requantize.group_size_count = 3;
    a->params.requantize.group_sizes[0] = 256;
    a->params.requantize.group_sizes[1] = 64;
    a->params.requantize.group_sizes[2] = 16;
    a->params.requantize.fallback_dtype = STF_BF16;
    a->params.requantize.quant_mode = STF_QMODE_CUDA;
    a->params.requantize.compute_dtype = STF_BF16;
}

/* ------------------------------------------------------------ markers */

/*
 * Canonical marker bytes (stfix-defects(7), CANONICAL MARKER) from the
 * preferred channel, normalised as ComfyUI reads it (params hoisted, per_row/_*
 * dropped; missing-format's format only for W I8 + S F32), or from the action's
 * format. STF_EFORMAT when no marker is usable and no format is given.
 */
int stf__work_set_marker(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    char msg[600];
    if (w->marker_change == MARKER_NEW && !a->params.set_marker.has_format) {
        stf__work_note(w, "marker canonical%s%s", "", "");
        return 0;
    }
    const stf_pyval *mk = stf__work_marker(w, a->params.set_marker.prefer);
    if (w->recover_rc) return stf__err(err, w->recover_rc, "layer '%s': out of memory", w->shown);
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT], *S = &w->s[STF_SFX_WEIGHT_SCALE];
    unsigned flags = STF_NORM_WRAP_STRING;
    int m1 = W->present && W->dtype == STF_I8 && S->present && S->dtype == STF_F32;
    if (a->params.set_marker.has_format || m1) flags |= STF_NORM_ADD_INT8_FORMAT;
    const char *fmt = a->params.set_marker.has_format ? stf_format_name(a->params.set_marker.format)
                                               : NULL;
    if (fmt && !strcmp(fmt, "asym_w4a8_int8")) flags |= STF_NORM_ADD_W4A8_CONVROT;
    stf_marker_spec sp;
    memset(&sp, 0, sizeof sp);
    if (mk) {
        stf_err e2;
        stf_err_clear(&e2);
        if (stf_marker_normalize(&sp, mk, flags, &e2)) {
            snprintf(msg, sizeof msg, "marker cannot be normalised: %.300s%s", e2.msg,
                     m1 ? "" : " (a missing format is added only when W is I8 and S is F32)");
            return stf__work_refuse(w, err, msg);
        }
        if (fmt) sp.format = fmt;
        /* Point at the format table's name, which outlives a recovered marker. */
        const stf_format_info *fi = stf_format_find(sp.format, strlen(sp.format));
        /* Normalising keeps only the keys of known formats: a format stfix
         * does not know would lose keys it may need. */
        if (!fi) {
            snprintf(msg, sizeof msg,
                     "the %smarker names format '%.100s', which stfix does not "
                     "know; give set-marker a format",
                     mk == w->recovered ? "recovered " : "", sp.format);
            return stf__work_refuse(w, err, msg);
        }
        sp.format = fi->name;
        if (!strcmp(sp.format, "asym_w4a8_int8") && !sp.convrot) sp.convrot = 1;
    } else if (fmt) {
        sp.format = fmt;
    } else if (m1 && !w->l->nmarkers) {
        /* No marker at all: the tensors say what it is (missing-markers). */
        sp.format = stf_format_name(STF_FMT_INT8_TENSORWISE);
    } else {
        return stf__work_refuse(w, err,
                                "the layer has no usable marker (not a JSON object) and "
                                "the action names no format; give set-marker a format");
    }
    /* hoist_params: false keeps only what the top level says (params ignored, as
     * SGLang and ComfyUI's Embedding read it). */
    if (mk && !a->params.set_marker.hoist_params && stf_pyval_type(mk) == STF_PY_DICT &&
        stf_pyval_find(mk, "params")) {
        if (!stf_pyval_find(mk, "convrot")) sp.convrot = 0;
        if (!stf_pyval_find(mk, "convrot_groupsize")) sp.convrot_groupsize_set = 0;
        if (!stf_pyval_find(mk, "group_size")) sp.group_size_set = 0;
        if (!stf_pyval_find(mk, "linear_dtype")) sp.linear_dtype = NULL;
        if (!stf_pyval_find(mk, "full_precision_matrix_mult")) sp.full_precision_matrix_mult = 0;
        if (!stf_pyval_find(mk, "num_experts")) sp.num_experts_set = 0;
    }
    /* Normalising already drops per_row, quant_group_size, _* and unknown keys;
     * drop_keys may also name canonical ones. */
    for (size_t i = 0; i < a->params.set_marker.drop_key_count; i++) {
        const char *dk = a->params.set_marker.drop_keys[i];
        if (!strcmp(dk, "full_precision_matrix_mult")) sp.full_precision_matrix_mult = 0;
        else if (!strcmp(dk, "group_size")) sp.group_size_set = 0;
        else if (!strcmp(dk, "convrot")) sp.convrot = 0;
        else if (!strcmp(dk, "convrot_groupsize")) sp.convrot_groupsize_set = 0;
        else if (!strcmp(dk, "linear_dtype")) sp.linear_dtype = NULL;
        else if (!strcmp(dk, "num_experts")) sp.num_experts_set = 0;
    }
    if (a->params.set_marker.metadata == STF_META_DROP) w->b->meta_drop = 1;
    if (w->l->conflict)
        stf__work_note(w, "marker channels disagreed (R5): the %s marker wins%s",
                       a->params.set_marker.prefer == STF_PREFER_TENSOR ? "tensor" : "metadata",
                       "");
    w->spec = sp;
    w->marker_change = MARKER_NEW;
    w->format = sp.format;
    /* Emitting the layer says "already" when the bytes are the input's. */
    w->canon_at = w->sum.len + (w->sum.len ? 2 : 0);
    w->canon_noted = 1;
    stf__work_note(w, "marker canonical (%s)%s", sp.format, "");
    return 0;
}

static int layout_matches(stf__layer_work *w, stf_format_id to)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT], *S = &w->s[STF_SFX_WEIGHT_SCALE];
    if (!W->present || !S->present || W->rank != 2) return 0;
    if (to == STF_FMT_INT8_TENSORWISE)
        return W->dtype == STF_I8 && stf__dtype_is_float(S->dtype) &&
               (S->nelem == 1 ||
                (S->nelem == W->shape[0] && (S->rank == 1 || (S->rank == 2 && S->shape[1] == 1))));
    if (to == STF_FMT_CONVROT_W4A4)
        return W->dtype == STF_I8 && S->dtype == STF_F32 && S->nelem == W->shape[0] &&
               (S->rank == 1 || (S->rank == 2 && S->shape[1] == 1));
    const stf_format_info *f = stf_format_at(to);
    return f && W->dtype == f->weight_dtype;
}

/*
 * Rename a non-upstream format when the data already has the target
 * layout; otherwise requantize (to int8_tensorwise / convrot_w4a4) or fail,
 * per the mismatch parameter (nonstandard-format-name).
 */
int stf__work_rewrite_format(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    const char *cur = w->format;
    if (!cur) return 0;
    int sel = 0;
    if (!a->params.rewrite_format.from_count) sel = stf_format_find(cur, strlen(cur)) == NULL;
    for (size_t i = 0; i < a->params.rewrite_format.from_count; i++)
        if (!strcmp(cur, a->params.rewrite_format.from[i])) sel = 1;
    if (!sel) return 0;
    stf_format_id to = a->params.rewrite_format.to;
    if (a->params.rewrite_format.metadata == STF_META_DROP) w->b->meta_drop = 1;
    if (!layout_matches(w, to)) {
        char msg[256];
        if (a->params.rewrite_format.mismatch == STF_MISMATCH_FAIL ||
            (to != STF_FMT_INT8_TENSORWISE && to != STF_FMT_CONVROT_W4A4)) {
            snprintf(msg, sizeof msg, "the data of format '%s' does not have the %s layout "
                     "(mismatch: fail)", cur, stf_format_name(to));
            return stf__work_refuse(w, err, msg);
        }
        /* The requantize it falls back to honours the action's tp (a TP-8
         * recipe's renamed aliases get group sizes dividing K/8 too). */
        stf_action rq;
        stf__requantize_defaults(&rq);
        rq.params.requantize.tp = a->params.rewrite_format.tp;
        rq.params.requantize.tp_count = a->params.rewrite_format.tp_count;
        memcpy(rq.params.requantize.tp_list, a->params.rewrite_format.tp_list,
               sizeof rq.params.requantize.tp_list);
        return stf__work_requantize(w, &rq, to, err);
    }
    stf_action sm;
    memset(&sm, 0, sizeof sm);
    sm.kind = STF_ACT_SET_MARKER;
    sm.params.set_marker.has_format = 1;
    sm.params.set_marker.hoist_params = 1;
    sm.params.set_marker.format = to;
    sm.params.set_marker.metadata = a->params.rewrite_format.metadata;
    int rc = stf__work_set_marker(w, &sm, err);
    if (rc) return rc;
    if (to == STF_FMT_CONVROT_W4A4) {
        w->k = 2 * w->s[STF_SFX_WEIGHT].shape[1];
        /* W4A4 wants (N,); (N, 1) holds the same bytes (stfix-defects(7), SCALE SHAPES),
         * so the rename carries it along. */
        stf__tensor_slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
        if (S->rank == 2) {
            uint64_t n1[1] = { S->shape[0] };
            stf__slot_set_shape(S, 1, n1);
            if (S->op == STF_OUT_COPY) S->op = STF_OUT_RESHAPE;
            stf__work_note(w, "scale (N, 1) -> (N,)%s%s", "", "");
        }
    }
    stf__work_note(w, "format %s -> %s", cur, stf_format_name(to));
    return 0;
}

/* ------------------------------------------------------------ header-only */
