/*
 * One layer of the plan: the matched actions applied, in order, to a
 * working copy of the layer (names, dtypes, shapes, marker, job), then
 * emitted as output tensors. Actions only decide; bytes are produced by the
 * run (jobs) or copied. spec/comfy-quant.md §5, §6, §10; convrot.md §4-§7.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_int.h"

#define MAXR 8

typedef struct slot {
    int present, dropped;
    size_t src;
    stf_dtype in_dtype, dtype;
    unsigned rank;
    uint64_t shape[MAXR];
    uint64_t nelem;
    stf_out_op op;
} slot;

enum { MK_KEEP = 0, MK_NEW, MK_NONE };

typedef struct ws {
    stf__pb *b;
    const stf_layer *l;
    const stf_layer_view *v;
    slot s[STF_SFX_COUNT];
    uint64_t n, k;
    const char *format;      /* current format name (borrowed) */
    int mk;                  /* MK_* */
    stf_marker_spec spec;    /* MK_NEW */
    int flattened, done, requant;
    stf__job job;
    char *out_prefix;
    stf_buf sum;
    const stf__pact *cur;    /* the action being applied (error messages) */
    stf_pyval *salv;         /* marker recovered from unusable tensor-marker bytes */
    int salv_tried;
} ws;

/* STF_EFORMAT naming the layer, the rule and its recipe line. */
static int refuse(ws *w, stf_err *err, const char *what)
{
    const stf__pact *pa = w->cur;
    return stf__err(err, STF_EFORMAT, "layer '%s': rule '%s' (recipe line %u): %s: %s",
                    w->l->prefix, pa ? stf_rule_name(pa->rule) : "?",
                    pa ? pa->a->line : 0u, pa ? stf_action_name(pa->a->kind) : "?", what);
}

static void note(ws *w, const char *fmt, const char *a, const char *b2)
{
    if (w->sum.len) stf__buf_puts(&w->sum, "; ");
    stf__buf_printf(&w->sum, fmt, a, b2);
}

static const char *shape_text(char *buf, size_t cap, unsigned rank, const uint64_t *shape)
{
    size_t at = 0;
    at += (size_t)snprintf(buf + at, cap - at, "(");
    for (unsigned i = 0; i < rank && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, i ? ", %llu" : "%llu",
                               (unsigned long long)shape[i]);
    if (at < cap) at += (size_t)snprintf(buf + at, cap - at, rank == 1 ? ",)" : ")");
    return buf;
}

static void set_shape(slot *sl, unsigned rank, const uint64_t *shape)
{
    sl->rank = rank;
    for (unsigned i = 0; i < rank; i++) sl->shape[i] = shape[i];
}

/* Header-only change of a kept tensor: the op says what the run must do. */
static void retag(slot *sl)
{
    if (sl->op == STF_OUT_CAST) return;
    if (sl->dtype != sl->in_dtype) sl->op = STF_OUT_RELABEL;
    else sl->op = STF_OUT_RESHAPE;
}

static const stf_pyval *marker_value(const stf_layer *l, stf_channel_pref pref)
{
    const stf_pyval *best = NULL;
    stf_marker_channel want = pref == STF_PREFER_TENSOR ? STF_CHAN_TENSOR : STF_CHAN_METADATA;
    for (size_t i = 0; i < l->nmarkers; i++)
        if (l->markers[i].status == STF_MARKER_OK && l->markers[i].channel == want)
            best = l->markers[i].value;
    if (best) return best;
    for (size_t i = 0; i < l->nmarkers; i++)
        if (l->markers[i].value && (l->markers[i].status == STF_MARKER_OK ||
                                    stf_pyval_type(l->markers[i].value) == STF_PY_STR))
            best = l->markers[i].value;
    return best;
}

/*
 * A tensor marker numpy or json.loads rejects can still hold the marker:
 * a C writer's trailing NUL (R6) or JSON bytes under a BF16 label (R8).
 * Parse the raw bytes without the trailing NULs; only a dict counts.
 */
static void salvage(ws *w)
{
    w->salv_tried = 1;
    int64_t ti = w->l->tensor[STF_SFX_COMFY_QUANT];
    if (ti < 0) return;
    const stf_tensor_info *t = stf_ckpt_tensor(w->b->p->c, (size_t)ti);
    if (t->nbytes == 0 || t->nbytes > 65536) return;
    unsigned char *buf = stf__malloc((size_t)t->nbytes);
    if (!buf) return;
    size_t n = (size_t)t->nbytes;
    if (!stf_ckpt_read(w->b->p->c, (size_t)ti, 0, buf, n, NULL)) {
        while (n && buf[n - 1] == 0) n--;
        stf_pyval *v = NULL;
        if (!stf_pyjson_parse(&v, buf, n, NULL) && stf_pyval_type(v) == STF_PY_DICT) w->salv = v;
        else stf_pyval_free(v);
    }
    stf__free(buf);
}

/* The marker an action reads: the preferred channel's, else one recovered from raw bytes. */
static const stf_pyval *src_marker(ws *w, stf_channel_pref pref)
{
    const stf_pyval *v = marker_value(w->l, pref);
    if (v) return v;
    if (!w->salv_tried) salvage(w);
    return w->salv;
}

static int is_float(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

static int int64_log2_kind(int64_t g)
{
    /* 1: power of 4, 2: power of 2 not of 4, 0: neither */
    if (g < 2 || (g & (g - 1))) return 0;
    unsigned lg = 0;
    while (((int64_t)1 << lg) < g) lg++;
    return lg % 2 ? 2 : 1;
}

/* ------------------------------------------------------------ decode */

/*
 * How to read f32 rows of what the layer holds now (convrot.md §6-§7).
 */
static int make_decode(ws *w, stf__decode *d, stf_err *err)
{
    slot *W = &w->s[STF_SFX_WEIGHT], *S = &w->s[STF_SFX_WEIGHT_SCALE];
    char msg[320];
    memset(d, 0, sizeof *d);
    d->s_idx = -1;
    if (!W->present || W->dropped) return refuse(w, err, "the layer has no weight to decode");
    d->w_idx = W->src;
    d->w_dtype = W->dtype;
    d->n = w->n;
    d->k = w->k;
    if (is_float(W->dtype)) {
        d->kind = STF__DEC_FLOAT;
        return 0;
    }
    const char *fmt = w->format ? w->format : "";
    const stf_pyval *mk = src_marker(w, STF_PREFER_METADATA);
    stf_marker_spec sp;
    memset(&sp, 0, sizeof sp);
    if (mk && stf_pyval_type(mk) == STF_PY_DICT &&
        stf_marker_normalize(&sp, mk, STF_NORM_ADD_INT8_FORMAT, NULL))
        memset(&sp, 0, sizeof sp);
    static const char *const decodable[] = { "int8_tensorwise", "int8_perrow", "convrot_w4a4",
                                             "int4_convrot_w4a4", "float8_e4m3fn",
                                             "float8_e5m2", NULL };
    if (fmt[0]) {
        size_t i = 0;
        while (decodable[i] && strcmp(decodable[i], fmt)) i++;
        if (!decodable[i]) {
            snprintf(msg, sizeof msg, "format '%s' cannot be decoded (stfix reads float, FP8, "
                     "INT8 and convrot_w4a4 layers); exclude needs the original weights", fmt);
            return refuse(w, err, msg);
        }
    }
    if (S->present) {
        d->s_idx = (int64_t)S->src;
        d->s_dtype = S->in_dtype;
        if (!is_float(S->in_dtype)) {
            snprintf(msg, sizeof msg, "scale dtype %s cannot be decoded (F32, BF16 or F16)",
                     stf_dtype_name(S->in_dtype));
            return refuse(w, err, msg);
        }
    }
    if (W->dtype == STF_F8_E4M3 || W->dtype == STF_F8_E5M2) {
        if (S->present && S->nelem != 1)
            return refuse(w, err, "FP8 weight with a non-scalar scale cannot be decoded");
        d->kind = STF__DEC_FP8;
        return 0;
    }
    if (W->dtype != STF_I8) {
        snprintf(msg, sizeof msg,
                 "weight dtype %s cannot be decoded (relabel U8 holding int8 to I8 first)",
                 stf_dtype_name(W->dtype));
        return refuse(w, err, msg);
    }
    if (!S->present) return refuse(w, err, "INT8 weight without weight_scale cannot be decoded");
    int64_t g = sp.convrot_groupsize_set ? sp.convrot_groupsize : 256;
    if (!strcmp(fmt, "convrot_w4a4") || !strcmp(fmt, "int4_convrot_w4a4")) {
        uint64_t kk = 2 * W->shape[1];
        if (W->rank != 2 || S->nelem != W->shape[0]) return refuse(w, err, "W4A4 weight/scale shapes cannot be decoded");
        int kind = int64_log2_kind(g);
        if (!kind || g > 4096 || kk % (uint64_t)g)
            return refuse(w, err, "W4A4 convrot_groupsize is not a power of 2 dividing K");
        d->kind = STF__DEC_W4A4;
        d->n = W->shape[0];
        d->k = kk;
        d->rot_group = (unsigned)g;
        d->sylvester = kind == 2;
        return 0;
    }
    d->kind = STF__DEC_INT8;
    if (S->nelem == 1) d->axis = STF_SCALE_TENSOR;
    else if (S->nelem == w->n && (w->n != w->k || w->v->probe != STF_PROBE_COLUMN))
        d->axis = STF_SCALE_ROW;
    else if (S->nelem == w->k) d->axis = STF_SCALE_COL;
    else {
        char sh[96];
        snprintf(msg, sizeof msg, "scale %s is neither scalar, per row (N=%llu) nor per column "
                 "(K=%llu): grouped/blockwise scales cannot be decoded",
                 shape_text(sh, sizeof sh, S->rank, S->shape), (unsigned long long)w->n,
                 (unsigned long long)w->k);
        return refuse(w, err, msg);
    }
    if (sp.convrot) {
        int kind = int64_log2_kind(g);
        if (!kind || g > 4096) {
            snprintf(msg, sizeof msg, "convrot_groupsize %lld is not a power of 2: the rotation "
                     "cannot be undone", (long long)g);
            return refuse(w, err, msg);
        }
        if (w->k % (uint64_t)g) {
            /* M9: no exporter can rotate such a row (the FHT needs G | K), so the
             * codes were quantized unrotated under a marker that claims otherwise. */
            char gb[24];
            snprintf(gb, sizeof gb, "%lld", (long long)g);
            note(w, "G=%s does not divide K: read as unrotated%s", gb, "");
            return 0;
        }
        d->rot_group = (unsigned)g;
        d->sylvester = kind == 2;
    }
    return 0;
}

/* ------------------------------------------------------------ jobs */

static const stf_suffix companions[] = {
    STF_SFX_WEIGHT_SCALE, STF_SFX_INPUT_SCALE, STF_SFX_WEIGHT_SCALE_2, STF_SFX_WEIGHT_S_REL,
    STF_SFX_WEIGHT_S_CHANNEL, STF_SFX_WEIGHT_CODEBOOK, STF_SFX_WEIGHT_CORRECTION,
    STF_SFX_PRE_QUANT_SCALE, STF_SFX_WEIGHT_ZEROS, STF_SFX_WEIGHT_ZERO, STF_SFX_SCALE_WEIGHT,
    STF_SFX_SCALE_INPUT
};

static void drop_companions(ws *w)
{
    for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++)
        w->s[companions[i]].dropped = 1;
}

static int do_exclude(ws *w, stf_dtype want, stf_err *err)
{
    slot *W = &w->s[STF_SFX_WEIGHT];
    drop_companions(w);
    w->s[STF_SFX_COMFY_QUANT].dropped = 1;
    w->mk = MK_NONE;
    w->format = NULL;
    w->done = 1;
    if (!W->present) {
        note(w, "exclude: markers and scales dropped%s%s", "", "");
        return 0;
    }
    stf_dtype src_float = is_float(W->dtype) ? W->dtype : STF_BF16;
    stf_dtype out = want == STF_DTYPE_SOURCE ? src_float : want;
    if (is_float(W->dtype) && W->dtype == out && W->op == STF_OUT_COPY) {
        note(w, "exclude: weight kept as %s, marker and scales dropped", stf_dtype_name(out), "");
        return 0;
    }
    stf__decode d;
    int rc = make_decode(w, &d, err);
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
    note(w, "exclude: weight dequantized to %s, marker and scales dropped", stf_dtype_name(out),
         "");
    return 0;
}

static int pick_group(const stf_action *a, uint64_t k, unsigned *g)
{
    unsigned tp = a->requantize.tp > 1 ? a->requantize.tp : 1;
    for (size_t i = 0; i < a->requantize.group_size_count; i++) {
        uint64_t gi = a->requantize.group_sizes[i];
        if (!gi || k % gi) continue;
        if (tp > 1 && (k % tp || (k / tp) % gi)) continue;
        *g = (unsigned)gi;
        return 1;
    }
    return 0;
}

/* Requantize to int8_tensorwise+ConvRot or convrot_w4a4 (a = the requantize parameters). */
static int do_requantize(ws *w, const stf_action *a, stf_quant_format to, stf_err *err)
{
    slot *W = &w->s[STF_SFX_WEIGHT];
    char msg[320];
    if (!W->present || W->dropped) return refuse(w, err, "the layer has no weight");
    if (W->rank != 2 && !w->flattened) {
        snprintf(msg, sizeof msg, "weight has rank %u; requantize needs a Linear weight "
                 "(flatten-conv first, or exclude it)", W->rank);
        return refuse(w, err, msg);
    }
    if (to != STF_QFMT_INT8_TENSORWISE && to != STF_QFMT_CONVROT_W4A4) {
        snprintf(msg, sizeof msg, "stfix quantizes only to int8_tensorwise and convrot_w4a4, "
                 "not %s", stf_quant_format_name(to));
        return refuse(w, err, msg);
    }
    stf__decode d;
    int rc = make_decode(w, &d, err);
    if (rc) return rc;
    unsigned g = 0;
    if (!pick_group(a, d.k, &g)) {
        if (a->requantize.on_indivisible == STF_INDIVISIBLE_FAIL) {
            snprintf(msg, sizeof msg, "no allowed group size divides K=%llu (on_indivisible: "
                     "fail)", (unsigned long long)d.k);
            return refuse(w, err, msg);
        }
        note(w, "no group size divides K%s%s", "", "");
        return do_exclude(w, a->requantize.fallback_dtype, err);
    }
    memset(&w->job, 0, sizeof w->job);
    w->job.dec = d;
    w->job.group = g;
    w->job.mode = w->b->o && w->b->o->quant_mode_set ? w->b->o->quant_mode
                                                       : a->requantize.quant_mode;
    w->job.t = d.kind == STF__DEC_FLOAT ? d.w_dtype : a->requantize.compute_dtype;
    /* The old marker's fp-matmul flag survives (§4 canonical row). */
    int fpmm = 0;
    const stf_pyval *mk = src_marker(w, STF_PREFER_METADATA);
    if (mk && stf_pyval_type(mk) == STF_PY_DICT)
        fpmm = stf_pyval_truthy(stf_pyval_get(mk, "full_precision_matrix_mult"));
    drop_companions(w);
    slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
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
    if (to == STF_QFMT_INT8_TENSORWISE) {
        w->job.kind = STF__JOB_REQUANT_INT8;
        W->shape[1] = d.k;
        S->rank = 2;
        S->shape[0] = d.n;
        S->shape[1] = 1;
        w->spec.format = "int8_tensorwise";
        w->spec.convrot = 1;
        w->spec.full_precision_matrix_mult = fpmm;
    } else {
        if (d.k % 2) return refuse(w, err, "K is odd: W4A4 packs two columns per byte");
        w->job.kind = STF__JOB_REQUANT_W4A4;
        W->shape[1] = d.k / 2;
        S->rank = 1;
        S->shape[0] = d.n;
        w->spec.format = "convrot_w4a4";
        w->spec.linear_dtype = a->requantize.int8_activations ? "int8" : NULL;
    }
    S->nelem = d.n;
    w->n = d.n;
    w->k = d.k;
    w->mk = MK_NEW;
    w->format = w->spec.format;
    w->requant = 1;
    w->done = 1;
    char gb[16];
    snprintf(gb, sizeof gb, "%u", g);
    note(w, "requantize to %s, G=%s", w->spec.format, gb);
    return 0;
}

/* The requantize action with every default (transpose-scale, rewrite-format mismatch). */
static void default_requant(stf_action *a)
{
    memset(a, 0, sizeof *a);
    a->kind = STF_ACT_REQUANTIZE;
    a->requantize.group_size_count = 3;
    a->requantize.group_sizes[0] = 256;
    a->requantize.group_sizes[1] = 64;
    a->requantize.group_sizes[2] = 16;
    a->requantize.fallback_dtype = STF_BF16;
    a->requantize.quant_mode = STF_QMODE_CUDA;
    a->requantize.compute_dtype = STF_BF16;
}

/* ------------------------------------------------------------ markers */

static int do_set_marker(ws *w, const stf_action *a, stf_err *err)
{
    char msg[600];
    if (w->mk == MK_NEW && !a->set_marker.has_format) {
        note(w, "marker canonical%s%s", "", "");
        return 0;
    }
    const stf_pyval *mk = src_marker(w, a->set_marker.prefer);
    slot *W = &w->s[STF_SFX_WEIGHT], *S = &w->s[STF_SFX_WEIGHT_SCALE];
    unsigned flags = STF_NORM_WRAP_STRING;
    int m1 = W->present && W->dtype == STF_I8 && S->present && S->dtype == STF_F32;
    if (a->set_marker.has_format || m1) flags |= STF_NORM_ADD_INT8_FORMAT;
    const char *fmt = a->set_marker.has_format ? stf_quant_format_name(a->set_marker.format)
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
            return refuse(w, err, msg);
        }
        if (fmt) sp.format = fmt;
        /* Point at the format table's name, which outlives a recovered marker. */
        const stf_format_info *fi = stf_format_find(sp.format, strlen(sp.format));
        if (fi) sp.format = fi->name;
        else if (mk == w->salv) return refuse(w, err, "the recovered marker names an unknown format");
        if (!strcmp(sp.format, "asym_w4a8_int8") && !sp.convrot) sp.convrot = 1;
    } else if (fmt) {
        sp.format = fmt;
    } else {
        return refuse(w, err, "the layer has no usable marker (not a JSON object) and the action "
                              "names no format; give set-marker a format");
    }
    if (a->set_marker.metadata == STF_META_DROP) w->b->meta_drop = 1;
    w->spec = sp;
    w->mk = MK_NEW;
    w->format = sp.format;
    note(w, "marker canonical (%s)%s", sp.format, "");
    return 0;
}

static int layout_matches(ws *w, stf_quant_format to)
{
    slot *W = &w->s[STF_SFX_WEIGHT], *S = &w->s[STF_SFX_WEIGHT_SCALE];
    if (!W->present || !S->present || W->rank != 2) return 0;
    if (to == STF_QFMT_INT8_TENSORWISE)
        return W->dtype == STF_I8 && is_float(S->dtype) &&
               (S->nelem == 1 || (S->nelem == W->shape[0] &&
                                  (S->rank == 1 || (S->rank == 2 && S->shape[1] == 1))));
    if (to == STF_QFMT_CONVROT_W4A4)
        return W->dtype == STF_I8 && S->dtype == STF_F32 && S->nelem == W->shape[0] &&
               (S->rank == 1 || (S->rank == 2 && S->shape[1] == 1));
    const stf_format_info *f = stf_format_find(stf_quant_format_name(to),
                                               strlen(stf_quant_format_name(to)));
    return f && W->dtype == f->weight_dtype;
}

static int do_rewrite_format(ws *w, const stf_action *a, stf_err *err)
{
    const char *cur = w->format;
    if (!cur) return 0;
    int sel = 0;
    if (!a->rewrite_format.from_count) sel = stf_format_find(cur, strlen(cur)) == NULL;
    for (size_t i = 0; i < a->rewrite_format.from_count; i++)
        if (!strcmp(cur, a->rewrite_format.from[i])) sel = 1;
    if (!sel) return 0;
    stf_quant_format to = a->rewrite_format.to;
    if (a->rewrite_format.metadata == STF_META_DROP) w->b->meta_drop = 1;
    if (!layout_matches(w, to)) {
        char msg[256];
        if (a->rewrite_format.mismatch == STF_MISMATCH_FAIL ||
            (to != STF_QFMT_INT8_TENSORWISE && to != STF_QFMT_CONVROT_W4A4)) {
            snprintf(msg, sizeof msg, "the data of format '%s' does not have the %s layout "
                     "(mismatch: fail)", cur, stf_quant_format_name(to));
            return refuse(w, err, msg);
        }
        stf_action rq;
        default_requant(&rq);
        return do_requantize(w, &rq, to, err);
    }
    stf_action sm;
    memset(&sm, 0, sizeof sm);
    sm.kind = STF_ACT_SET_MARKER;
    sm.set_marker.has_format = 1;
    sm.set_marker.format = to;
    sm.set_marker.metadata = a->rewrite_format.metadata;
    int rc = do_set_marker(w, &sm, err);
    if (rc) return rc;
    if (to == STF_QFMT_CONVROT_W4A4) w->k = 2 * w->s[STF_SFX_WEIGHT].shape[1];
    note(w, "format %s -> %s", cur, stf_quant_format_name(to));
    return 0;
}

/* ------------------------------------------------------------ header-only */

static int do_reshape_scale(ws *w, const stf_action *a, stf_err *err)
{
    slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    char msg[320], from[96], tob[96];
    if (!S->present || S->dropped) return refuse(w, err, "the layer has no weight_scale");
    shape_text(from, sizeof from, S->rank, S->shape);
    uint64_t nr[2] = { w->n, 1 };
    switch (a->reshape_scale.to) {
    case STF_SCALE_ROWS:
        if (S->rank == 2 && S->shape[0] == w->n && S->shape[1] == 1) return 0;
        if (S->nelem != w->n || !((S->rank == 1) || (S->rank == 2 && S->shape[0] == 1))) {
            snprintf(msg, sizeof msg, "scale %s is not [N] or [1,N] with N=%llu", from,
                     (unsigned long long)w->n);
            return refuse(w, err, msg);
        }
        if ((a->reshape_scale.require_probe || w->n == w->k) && w->v->probe != STF_PROBE_ROW) {
            snprintf(msg, sizeof msg, "the row/column probe (H1) says %s, not ROW%s; the scale "
                     "is left as %s", stf_h1_verdict_name((stf_h1_verdict)w->v->probe),
                     w->n == w->k ? " (square layer: never without the probe)" : "", from);
            return refuse(w, err, msg);
        }
        set_shape(S, 2, nr);
        break;
    case STF_SCALE_VECTOR:
        if (S->rank == 1 && S->shape[0] == w->n) return 0;
        if (!(S->rank == 2 && S->shape[0] == w->n && S->shape[1] == 1)) {
            snprintf(msg, sizeof msg, "scale %s is not [N,1] with N=%llu", from,
                     (unsigned long long)w->n);
            return refuse(w, err, msg);
        }
        set_shape(S, 1, nr);
        break;
    default:
        if (S->rank == 0) return 0;
        if (!(S->rank == 1 && S->shape[0] == 1)) {
            snprintf(msg, sizeof msg, "scale %s is not [1]", from);
            return refuse(w, err, msg);
        }
        set_shape(S, 0, nr);
        break;
    }
    retag(S);
    note(w, "scale %s -> %s", from, shape_text(tob, sizeof tob, S->rank, S->shape));
    return 0;
}

static int do_transpose_scale(ws *w, stf_err *err)
{
    slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    char msg[320], from[96];
    if (!S->present || S->dropped) return refuse(w, err, "the layer has no weight_scale");
    shape_text(from, sizeof from, S->rank, S->shape);
    if (!(S->rank == 2 && S->shape[0] == 1)) {
        snprintf(msg, sizeof msg, "scale %s is not a row vector [1,N]", from);
        return refuse(w, err, msg);
    }
    if (w->v->probe == STF_PROBE_ROW && S->nelem == w->n) {
        uint64_t nr[2] = { w->n, 1 };
        set_shape(S, 2, nr);
        retag(S);
        note(w, "scale %s -> (%s, 1)", from, "N");
        return 0;
    }
    if (w->v->probe == STF_PROBE_COLUMN && S->nelem == w->k) {
        stf_action rq;
        default_requant(&rq);
        note(w, "column scale %s%s", from, "");
        return do_requantize(w, &rq, STF_QFMT_INT8_TENSORWISE, err);
    }
    snprintf(msg, sizeof msg, "the row/column probe (H1) says %s for scale %s; transpose needs "
             "ROW with N values or COLUMN with K values",
             stf_h1_verdict_name((stf_h1_verdict)w->v->probe), from);
    return refuse(w, err, msg);
}

static int do_flatten_conv(ws *w, stf_err *err)
{
    slot *W = &w->s[STF_SFX_WEIGHT];
    char msg[320], from[96], tob[96];
    if (!W->present || W->dropped) return refuse(w, err, "the layer has no weight");
    if (W->rank < 3 || W->rank > 5) {
        snprintf(msg, sizeof msg, "weight has rank %u, not a conv kernel (rank 3-5); use "
                 "exclude to dequantize the layer instead", W->rank);
        return refuse(w, err, msg);
    }
    shape_text(from, sizeof from, W->rank, W->shape);
    uint64_t out = W->shape[0];
    uint64_t two[2] = { out, out ? W->nelem / out : 0 };
    set_shape(W, 2, two);
    retag(W);
    w->n = two[0];
    w->k = two[1];
    w->flattened = 1;
    note(w, "weight %s -> %s", from, shape_text(tob, sizeof tob, 2, two));
    return 0;
}

static int do_cast_scale(ws *w, const stf_action *a, stf_err *err)
{
    slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    if (!S->present || S->dropped) return refuse(w, err, "the layer has no weight_scale");
    if (S->dtype == a->cast_scale.to) return 0;
    if (S->dtype != STF_BF16 && S->dtype != STF_F16) {
        char msg[128];
        snprintf(msg, sizeof msg, "scale dtype %s is not BF16 or F16", stf_dtype_name(S->dtype));
        return refuse(w, err, msg);
    }
    const char *from = stf_dtype_name(S->dtype);
    S->dtype = a->cast_scale.to;
    S->op = STF_OUT_CAST;
    note(w, "scale %s -> %s", from, stf_dtype_name(S->dtype));
    return 0;
}

static int do_relabel(ws *w, const stf_action *a, stf_err *err)
{
    slot *T = &w->s[a->relabel.tensor == STF_RELABEL_SCALE ? STF_SFX_WEIGHT_SCALE : STF_SFX_WEIGHT];
    char msg[200];
    if (!T->present || T->dropped) return refuse(w, err, "the tensor to relabel is absent");
    if (T->dtype == a->relabel.to) return 0;
    if (T->dtype != a->relabel.from || stf_dtype_bits(a->relabel.from) != stf_dtype_bits(a->relabel.to)) {
        snprintf(msg, sizeof msg, "tensor is %s, not %s (relabel keeps the bytes of a same-size dtype)",
                 stf_dtype_name(T->dtype), stf_dtype_name(a->relabel.from));
        return refuse(w, err, msg);
    }
    T->dtype = a->relabel.to;
    if (T->op == STF_OUT_COPY || T->op == STF_OUT_RESHAPE) T->op = STF_OUT_RELABEL;
    note(w, "relabel %s -> %s", stf_dtype_name(a->relabel.from), stf_dtype_name(a->relabel.to));
    return 0;
}

static int do_drop(ws *w, const stf_action *a)
{
    if (a->drop.scales)
        for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++)
            if (companions[i] != STF_SFX_INPUT_SCALE) w->s[companions[i]].dropped = 1;
    if (a->drop.input_scale) w->s[STF_SFX_INPUT_SCALE].dropped = 1;
    if (a->drop.markers) {
        w->s[STF_SFX_COMFY_QUANT].dropped = 1;
        w->mk = MK_NONE;
        w->format = NULL;
    }
    w->done = 1;
    note(w, "drop%s%s", a->drop.scales ? " scales" : "", a->drop.markers ? " markers" : "");
    return 0;
}

static int do_rename(ws *w, const stf_action *a, stf_err *err)
{
    const char *from = a->rename.from ? a->rename.from : "";
    const char *to = a->rename.to ? a->rename.to : "";
    size_t fl = strlen(from);
    if (strncmp(w->out_prefix, from, fl)) return 0;
    stf_buf nb;
    stf__buf_init(&nb);
    stf__buf_puts(&nb, to);
    stf__buf_puts(&nb, w->out_prefix + fl);
    if (nb.oom || !nb.data) {
        stf__buf_free(&nb);
        if (nb.oom) return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->l->prefix);
        char *e = stf__strdup("");
        if (!e) return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->l->prefix);
        stf__free(w->out_prefix);
        w->out_prefix = e;
    } else {
        stf__free(w->out_prefix);
        w->out_prefix = nb.data;
    }
    if (w->l->nmarkers) w->b->markers_changed = 1;
    note(w, "rename -> '%s'%s", w->out_prefix, "");
    return 0;
}

static int apply(ws *w, const stf_action *a, stf_err *err)
{
    if (w->done && a->kind != STF_ACT_RENAME) return 0;
    switch (a->kind) {
    case STF_ACT_RESHAPE_SCALE: return do_reshape_scale(w, a, err);
    case STF_ACT_TRANSPOSE_SCALE: return do_transpose_scale(w, err);
    case STF_ACT_FLATTEN_CONV: return do_flatten_conv(w, err);
    case STF_ACT_EXCLUDE: return do_exclude(w, a->exclude.dtype, err);
    case STF_ACT_REWRITE_FORMAT: return do_rewrite_format(w, a, err);
    case STF_ACT_SET_MARKER: return do_set_marker(w, a, err);
    case STF_ACT_CAST_SCALE: return do_cast_scale(w, a, err);
    case STF_ACT_RELABEL: return do_relabel(w, a, err);
    case STF_ACT_REQUANTIZE: return do_requantize(w, a, a->requantize.format, err);
    case STF_ACT_RENAME: return do_rename(w, a, err);
    case STF_ACT_DROP: return do_drop(w, a);
    default: return refuse(w, err, "unknown action");
    }
}

/* ------------------------------------------------------------ emit */

static int emit(ws *w, size_t li, stf_suffix sx, slot *sl, size_t *oi, stf_err *err)
{
    stf__pb *b = w->b;
    size_t i;
    int rc = stf__pb_add_out(b, &i, err);
    if (rc) return rc;
    stf__out *o = &b->p->outs[i];
    stf_buf nm;
    stf__buf_init(&nm);
    stf__buf_puts(&nm, w->out_prefix);
    stf__buf_puts(&nm, stf_suffix_name(sx));
    o->group = stf__strdup(w->out_prefix);
    if (nm.oom || !o->group) {
        stf__buf_free(&nm);
        return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->l->prefix);
    }
    o->pub.name = nm.data;
    o->pub.dtype = sl->dtype;
    o->pub.rank = sl->rank;
    for (unsigned r = 0; r < sl->rank; r++) o->shape_store[r] = sl->shape[r];
    o->pub.shape = o->shape_store;
    o->pub.op = sl->op;
    o->pub.src = sl->present ? (int64_t)sl->src : -1;
    o->pub.layer = li;
    o->cast_from = sl->in_dtype;
    uint64_t ne = 1;
    for (unsigned r = 0; r < sl->rank; r++)
        if (stf__mul_u64(&ne, ne, sl->shape[r]))
            return stf__err(err, STF_EFORMAT, "layer '%s': output shape overflows", w->l->prefix);
    rc = stf_dtype_nbytes(&o->pub.nbytes, sl->dtype, ne, err);
    if (rc) return stf__err_prefix(err, "layer '%s': ", w->l->prefix);
    if (oi) *oi = i;
    return 0;
}

/* Whether input tensor i holds exactly the n bytes at text. */
static int tensor_equals(const stf_ckpt *c, size_t i, const char *text, size_t n)
{
    if (n > 65536) return 0;
    unsigned char buf[65536];
    if (stf_ckpt_read(c, i, 0, buf, n, NULL)) return 0;
    return !memcmp(buf, text, n);
}

/*
 * Whether _quantization_metadata already says `text` for this layer (json
 * text of the metadata-channel marker equal to it), or the input has no
 * _quantization_metadata to keep in step.
 */
static int meta_agrees(const stf_layer *l, const stf__pb *b, const char *text)
{
    const stf_ckpt *c = b->p->c;
    int any_q = 0;
    for (size_t s = 0; s < stf_ckpt_shard_count(c); s++)
        if (stf_ckpt_meta_find(c, s, "_quantization_metadata")) any_q = 1;
    if (!any_q) return 1;
    if (!text) return 0;
    const stf_marker *m = NULL;
    for (size_t i = 0; i < l->nmarkers; i++)
        if (l->markers[i].channel == STF_CHAN_METADATA) m = &l->markers[i];
    if (!m || m->status != STF_MARKER_OK || !m->value) return 0;
    char *t = NULL;
    if (stf_pyjson_dumps(&t, NULL, m->value, NULL)) return 0;
    int eq = !strcmp(t, text);
    stf_model_str_free(t);
    return eq;
}

static int emit_all(ws *w, size_t li, stf_err *err)
{
    stf__pb *b = w->b;
    int rc = 0;
    char *text = NULL;
    size_t tlen = 0;
    size_t job = SIZE_MAX;
    if (w->job.kind != STF__JOB_NONE) {
        rc = stf__pb_add_job(b, &job, err);
        if (rc) return rc;
        b->p->jobs[job] = w->job;
        b->p->jobs[job].out_weight = SIZE_MAX;
        b->p->jobs[job].out_scale = SIZE_MAX;
    }
    if (w->mk == MK_NEW) {
        rc = stf_marker_canonical(&text, &tlen, &w->spec, err);
        if (rc) return stf__err_prefix(err, "layer '%s': ", w->l->prefix);
    }
    for (int sx = 0; sx < STF_SFX_COUNT; sx++) {
        slot *sl = &w->s[sx];
        if (!sl->present) continue;
        if (sx == STF_SFX_COMFY_QUANT && w->mk == MK_NEW) continue; /* replaced below */
        if (sl->dropped || (sx == STF_SFX_COMFY_QUANT && w->mk == MK_NONE)) {
            const stf_tensor_info *t = stf_ckpt_tensor(b->p->c, sl->src);
            if ((rc = stf__pb_drop(b, t->name, err))) goto done;
            continue;
        }
        size_t oi;
        if ((rc = emit(w, li, (stf_suffix)sx, sl, &oi, err))) goto done;
        if (job != SIZE_MAX) {
            if (sx == STF_SFX_WEIGHT) {
                b->p->outs[oi].job = job;
                b->p->jobs[job].out_weight = oi;
            } else if (sx == STF_SFX_WEIGHT_SCALE && (sl->op == STF_OUT_QUANT_SCALE)) {
                b->p->outs[oi].job = job;
                b->p->jobs[job].out_scale = oi;
            }
        }
    }
    if (w->mk == MK_NEW) {
        slot *q = &w->s[STF_SFX_COMFY_QUANT];
        const char *mt = text; /* stays valid: ownership moves to the output below */
        int same = q->present && q->in_dtype == STF_U8 && q->rank == 1 && q->nelem == tlen &&
                   tensor_equals(b->p->c, q->src, text, tlen);
        if (q->present || (w->s[STF_SFX_WEIGHT].present && !w->s[STF_SFX_WEIGHT].dropped)) {
            slot m;
            memset(&m, 0, sizeof m);
            m.dtype = m.in_dtype = STF_U8;
            m.rank = 1;
            m.shape[0] = tlen;
            m.op = same ? STF_OUT_COPY : STF_OUT_NEW;
            m.present = same;
            m.src = q->src;
            size_t oi;
            if ((rc = emit(w, li, STF_SFX_COMFY_QUANT, &m, &oi, err))) goto done;
            if (!same) {
                b->p->outs[oi].bytes = (unsigned char *)text;
                text = NULL;
            }
        }
        if (!same || !meta_agrees(w->l, w->b, mt)) b->markers_changed = 1;
        rc = stf__pb_qmeta(b, w->out_prefix, mt, err);
    } else if (w->mk == MK_KEEP) {
        const stf_marker *c = w->l->comfy;
        if (c && c->value && c->status == STF_MARKER_OK) {
            char *t = NULL;
            rc = stf_pyjson_dumps(&t, NULL, c->value, err);
            if (!rc) rc = stf__pb_qmeta(b, w->out_prefix, t, err);
            stf_model_str_free(t);
        }
    } else if (w->l->nmarkers) {
        b->markers_changed = 1;
    }
done:
    stf_model_str_free(text);
    return rc;
}

/* Apply a layer's matched actions and append its outputs (see plan_int.h). */
int stf__plan_layer(stf__pb *b, size_t li, const stf_layer *l, const stf_layer_view *v,
                    const stf__pact *acts, size_t n, stf_err *err)
{
    ws w;
    int rc = 0;
    memset(&w, 0, sizeof w);
    w.b = b;
    w.l = l;
    w.v = v;
    w.n = v->n;
    w.k = v->k;
    w.format = v->format;
    stf__buf_init(&w.sum);
    for (int sx = 0; sx < STF_SFX_COUNT; sx++) {
        if (l->tensor[sx] < 0) continue;
        const stf_tensor_info *t = stf_ckpt_tensor(b->p->c, (size_t)l->tensor[sx]);
        slot *sl = &w.s[sx];
        if (t->rank > MAXR) return stf__err(err, STF_EUNSUPPORTED, "%s: rank %u", t->name, t->rank);
        sl->present = 1;
        sl->src = (size_t)l->tensor[sx];
        sl->in_dtype = sl->dtype = t->dtype;
        set_shape(sl, t->rank, t->shape);
        sl->nelem = t->nelem;
        sl->op = STF_OUT_COPY;
    }
    w.out_prefix = stf__strdup(l->prefix);
    if (!w.out_prefix) return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", l->prefix);
    for (size_t i = 0; i < n; i++) {
        w.cur = &acts[i];
        if ((rc = apply(&w, acts[i].a, err))) goto done;
    }
    w.cur = NULL;
    if ((rc = emit_all(&w, li, err))) goto done;

    stf__player *pl = &b->p->layers[li];
    pl->prefix_store = stf__strdup(l->prefix);
    pl->out_prefix_store = w.out_prefix;
    w.out_prefix = NULL;
    pl->summary_store = stf__strdup(w.sum.len ? w.sum.data : "unchanged");
    if (!pl->prefix_store || !pl->summary_store || w.sum.oom) {
        rc = stf__err(err, STF_ENOMEM, "layer '%s': out of memory", l->prefix);
        goto done;
    }
    pl->pub.prefix = pl->prefix_store;
    pl->pub.out_prefix = pl->out_prefix_store;
    pl->pub.summary = pl->summary_store;
    pl->pub.requantize = w.requant;
    /* Format strings point into the model (kept by the plan) or are static names. */
    pl->pub.format = w.mk == MK_NONE ? NULL : w.mk == MK_NEW ? w.spec.format : w.format;
    pl->pub.group = w.requant ? w.job.group : 0;
    pl->pub.mode = w.job.mode;
done:
    stf__free(w.out_prefix);
    stf__buf_free(&w.sum);
    stf_pyval_free(w.salv);
    return rc;
}
