/*
 * One layer of the plan: the matched actions applied, in order, to a working
 * copy of the layer (names, dtypes, shapes, marker, job), then emitted as
 * output tensors. Actions only decide; bytes are produced by the run (jobs) or
 * copied. See stfix-defects(7), DEFECTS, SCALE SHAPES and REPAIR TO INT8
 * CONVROT; stfix-convrot(7), MODES to SYLVESTER ORDER.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_work.h"

/* Header-only change of a kept tensor: the op says what the run must do. */
static void retag(stf__tensor_slot *sl)
{
    if (sl->op == STF_OUT_CAST) return;
    if (sl->dtype != sl->in_dtype) sl->op = STF_OUT_RELABEL;
    else sl->op = STF_OUT_RESHAPE;
}

/* ------------------------------------------------------------ header-only actions */

static int do_reshape_scale(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    stf__tensor_slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    char msg[320], from[96], tob[96];
    if (!S->present || S->dropped) return stf__work_refuse(w, err, "the layer has no weight_scale");
    stf__shape_text(from, sizeof from, S->rank, S->shape);
    uint64_t nr[2] = { w->n, 1 };
    switch (a->params.reshape_scale.to) {
    case STF_SCALE_ROWS:
        if (S->rank == 2 && S->shape[0] == w->n && S->shape[1] == 1) return 0;
        if (S->nelem != w->n || !((S->rank == 1) || (S->rank == 2 && S->shape[0] == 1))) {
            snprintf(msg, sizeof msg, "scale %s is not [N] or [1,N] with N=%llu", from,
                     (unsigned long long)w->n);
            return stf__work_refuse(w, err, msg);
        }
        if ((a->params.reshape_scale.require_probe || w->n == w->k) &&
            w->v->probe != STF_PROBE_ROW) {
            snprintf(msg, sizeof msg, "the row/column probe (H1) says %s, not ROW%s; the scale "
                     "is left as %s", stf_probe_verdict_name(w->v->probe),
                     w->n == w->k ? " (square layer: never without the probe)" : "", from);
            return stf__work_refuse(w, err, msg);
        }
        stf__slot_set_shape(S, 2, nr);
        break;
    case STF_SCALE_VECTOR:
        if (S->rank == 1 && S->shape[0] == w->n) return 0;
        if (!(S->rank == 2 && S->shape[0] == w->n && S->shape[1] == 1)) {
            snprintf(msg, sizeof msg, "scale %s is not [N,1] with N=%llu", from,
                     (unsigned long long)w->n);
            return stf__work_refuse(w, err, msg);
        }
        stf__slot_set_shape(S, 1, nr);
        break;
    default:
        if (S->rank == 0) return 0;
        if (!(S->rank == 1 && S->shape[0] == 1)) {
            snprintf(msg, sizeof msg, "scale %s is not [1]", from);
            return stf__work_refuse(w, err, msg);
        }
        stf__slot_set_shape(S, 0, nr);
        break;
    }
    retag(S);
    stf__work_note(w, "scale %s -> %s", from, stf__shape_text(tob, sizeof tob, S->rank, S->shape));
    return 0;
}

static int do_transpose_scale(stf__layer_work *w, stf_err *err)
{
    stf__tensor_slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    char msg[320], from[96];
    if (!S->present || S->dropped) return stf__work_refuse(w, err, "the layer has no weight_scale");
    stf__shape_text(from, sizeof from, S->rank, S->shape);
    if (!(S->rank == 2 && S->shape[0] == 1)) {
        snprintf(msg, sizeof msg, "scale %s is not a row vector [1,N]", from);
        return stf__work_refuse(w, err, msg);
    }
    if (w->v->probe == STF_PROBE_ROW && S->nelem == w->n) {
        uint64_t nr[2] = { w->n, 1 };
        stf__slot_set_shape(S, 2, nr);
        retag(S);
        stf__work_note(w, "scale %s -> (%s, 1)", from, "N");
        return 0;
    }
    if (w->v->probe == STF_PROBE_COLUMN && S->nelem == w->k) {
        stf_action rq;
        stf__requantize_defaults(&rq);
        stf__work_note(w, "column scale %s%s", from, "");
        return stf__work_requantize(w, &rq, STF_FMT_INT8_TENSORWISE, err);
    }
    snprintf(msg, sizeof msg, "the row/column probe (H1) says %s for scale %s; transpose needs "
             "ROW with N values or COLUMN with K values",
             stf_probe_verdict_name(w->v->probe), from);
    return stf__work_refuse(w, err, msg);
}

static int do_flatten_conv(stf__layer_work *w, stf_err *err)
{
    stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    char msg[320], from[96], tob[96];
    if (!W->present || W->dropped) return stf__work_refuse(w, err, "the layer has no weight");
    if (W->rank < 3 || W->rank > 5) {
        snprintf(msg, sizeof msg, "weight has rank %u, not a conv kernel (rank 3-5); use "
                 "exclude to dequantize the layer instead", W->rank);
        return stf__work_refuse(w, err, msg);
    }
    stf__shape_text(from, sizeof from, W->rank, W->shape);
    uint64_t out = W->shape[0];
    uint64_t two[2] = { out, out ? W->nelem / out : 0 };
    stf__slot_set_shape(W, 2, two);
    retag(W);
    w->n = two[0];
    w->k = two[1];
    w->flattened = 1;
    stf__work_note(w, "weight %s -> %s", from, stf__shape_text(tob, sizeof tob, 2, two));
    return 0;
}

/* Widen one half-precision scale slot; nothing when it is absent or already wide. */
static void cast_slot(stf__layer_work *w, stf__tensor_slot *S, stf_suffix sx, stf_dtype to)
{
    if (!S->present || S->dropped || S->dtype == to) return;
    const char *from = stf_dtype_name(S->dtype);
    S->dtype = to;
    S->op = STF_OUT_CAST;
    switch (sx) {
    case STF_SFX_WEIGHT_SCALE_2: stf__work_note(w, "weight_scale_2 %s -> %s", from, stf_dtype_name(to)); break;
    case STF_SFX_INPUT_SCALE: stf__work_note(w, "input_scale %s -> %s", from, stf_dtype_name(to)); break;
    case STF_SFX_WEIGHT_S_CHANNEL:
        stf__work_note(w, "weight_s_channel %s -> %s", from, stf_dtype_name(to));
        break;
    default: stf__work_note(w, "scale %s -> %s", from, stf_dtype_name(to)); break;
    }
}

static int do_cast_scale(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    stf_dtype to = a->params.cast_scale.to;
    if (a->params.cast_scale.tensors == STF_CAST_ALL_SCALES) {
        /* Every scale its format keeps in F32; a block scale (F8, U8) is
         * not a half-precision one and stays. */
        static const stf_suffix sx[] = { STF_SFX_WEIGHT_SCALE, STF_SFX_WEIGHT_SCALE_2,
                                         STF_SFX_INPUT_SCALE, STF_SFX_WEIGHT_S_CHANNEL };
        for (size_t i = 0; i < sizeof sx / sizeof sx[0]; i++) {
            stf__tensor_slot *S = &w->s[sx[i]];
            if (S->dtype == STF_BF16 || S->dtype == STF_F16) cast_slot(w, S, sx[i], to);
        }
        return 0;
    }
    stf__tensor_slot *S = &w->s[STF_SFX_WEIGHT_SCALE];
    if (!S->present || S->dropped) return stf__work_refuse(w, err, "the layer has no weight_scale");
    if (S->dtype == to) return 0;
    if (S->dtype != STF_BF16 && S->dtype != STF_F16) {
        char msg[128];
        snprintf(msg, sizeof msg, "scale dtype %s is not BF16 or F16", stf_dtype_name(S->dtype));
        return stf__work_refuse(w, err, msg);
    }
    cast_slot(w, S, STF_SFX_WEIGHT_SCALE, to);
    return 0;
}

static int do_relabel(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    stf_dtype from = a->params.relabel.from, to = a->params.relabel.to;
    stf__tensor_slot *T =
        &w->s[a->params.relabel.tensor == STF_RELABEL_SCALE ? STF_SFX_WEIGHT_SCALE : STF_SFX_WEIGHT];
    char msg[200];
    if (!T->present || T->dropped)
        return stf__work_refuse(w, err, "the tensor to relabel is absent");
    if (T->dtype == to) return 0;
    if (T->dtype != from || stf_dtype_bits(from) != stf_dtype_bits(to)) {
        snprintf(msg, sizeof msg, "tensor is %s, not %s (relabel keeps the bytes of a same-size dtype)",
                 stf_dtype_name(T->dtype), stf_dtype_name(from));
        return stf__work_refuse(w, err, msg);
    }
    T->dtype = to;
    if (T->op == STF_OUT_COPY || T->op == STF_OUT_RESHAPE) T->op = STF_OUT_RELABEL;
    stf__work_note(w, "relabel %s -> %s", stf_dtype_name(from), stf_dtype_name(to));
    return 0;
}

static int do_drop(stf__layer_work *w, const stf_action *a)
{
    if (a->params.drop.scales)
        for (size_t i = 0; i < stf__weight_ncompanions; i++)
            if (stf__weight_companions[i] != STF_SFX_INPUT_SCALE)
                w->s[stf__weight_companions[i]].dropped = 1;
    if (a->params.drop.input_scale) w->s[STF_SFX_INPUT_SCALE].dropped = 1;
    if (a->params.drop.markers) {
        w->s[STF_SFX_COMFY_QUANT].dropped = 1;
        w->marker_change = MARKER_NONE;
        w->format = NULL;
    }
    w->done = 1;
    stf__work_note(w, "drop%s%s", a->params.drop.scales ? " scales" : "",
                   a->params.drop.markers ? " markers" : "");
    return 0;
}

static int do_rename(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    int hit;
    size_t nlen = 0;
    char *np = stf__rename_apply(a, w->out_prefix, w->out_prefix_len, &nlen, &hit);
    if (!hit) return 0;
    if (!np) return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->shown);
    stf__free(w->out_prefix);
    w->out_prefix = np;
    w->out_prefix_len = nlen;
    if (w->l->nmarkers) w->b->markers_changed = 1;
    char to[STF__NAME_SHOWN];
    stf__work_note(w, "rename -> '%s'%s", stf__name_render(to, sizeof to, np, nlen), "");
    return 0;
}

static int apply(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    if (w->done && a->kind != STF_ACT_RENAME) return 0;
    switch (a->kind) {
    case STF_ACT_RESHAPE_SCALE: return do_reshape_scale(w, a, err);
    case STF_ACT_TRANSPOSE_SCALE: return do_transpose_scale(w, err);
    case STF_ACT_FLATTEN_CONV: return do_flatten_conv(w, err);
    case STF_ACT_EXCLUDE: return stf__work_exclude(w, a->params.exclude.dtype, err);
    case STF_ACT_REWRITE_FORMAT: return stf__work_rewrite_format(w, a, err);
    case STF_ACT_SET_MARKER: return stf__work_set_marker(w, a, err);
    case STF_ACT_CAST_SCALE: return do_cast_scale(w, a, err);
    case STF_ACT_RELABEL: return do_relabel(w, a, err);
    case STF_ACT_REQUANTIZE: return stf__work_requantize(w, a, a->params.requantize.format, err);
    case STF_ACT_RENAME: return do_rename(w, a, err);
    case STF_ACT_DROP: return do_drop(w, a);
    case STF_ACT_MIGRATE_SCALED_FP8: return stf__work_migrate_scaled_fp8(w, err);
    case STF_ACT_INFER_MARKER: return stf__work_infer_marker(w, a, err);
    default: return stf__work_refuse(w, err, "unknown action");
    }
}

/* ------------------------------------------------------------ emit */

static int emit(stf__layer_work *w, size_t li, stf_suffix sx, stf__tensor_slot *sl, size_t *oi,
                stf_err *err)
{
    stf__plan_builder *b = w->b;
    size_t i;
    int rc = stf__builder_add_out(b, &i, err);
    if (rc) return rc;
    stf__out *o = &b->p->outs[i];
    stf_buf nm;
    stf__buf_init(&nm);
    stf__buf_put(&nm, w->out_prefix, w->out_prefix_len);
    stf__buf_puts(&nm, stf_suffix_name(sx));
    o->group = stf__strndup(w->out_prefix, w->out_prefix_len);
    o->group_len = w->out_prefix_len;
    if (nm.oom || !o->group) {
        stf__buf_free(&nm);
        return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->shown);
    }
    o->pub.name = nm.data;
    o->pub.name_len = nm.len;
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
            return stf__err(err, STF_EFORMAT, "layer '%s': output shape overflows", w->shown);
    rc = stf_dtype_nbytes(&o->pub.nbytes, sl->dtype, ne, err);
    if (rc) return stf__err_prefix(err, "layer '%s': ", w->shown);
    if (oi) *oi = i;
    return 0;
}

/* Whether input tensor i holds exactly the n bytes at text. */
static int tensor_equals(const stf_ckpt *c, size_t i, const char *text, size_t n)
{
    if (n > 65536) return 0;
    unsigned char buf[65536];
    if (stf_ckpt_read(buf, c, i, 0, n, NULL)) return 0;
    return !memcmp(buf, text, n);
}

/* Whether layer l's metadata-channel marker is usable and is `text` as
 * Python writes it. */
static int meta_text_is(int *is, const stf_layer *l, const char *text, stf_err *err)
{
    *is = 0;
    const stf_marker *m = NULL;
    for (size_t i = 0; i < l->nmarkers; i++)
        if (l->markers[i].channel == STF_CHAN_METADATA) m = &l->markers[i];
    if (!text || !m || m->status != STF_MARKER_OK || !m->value) return 0;
    char *t = NULL;
    int rc = stf_pyjson_dumps(&t, NULL, m->value, err);
    if (rc) return rc;
    *is = !strcmp(t, text);
    stf_model_str_free(t);
    return 0;
}

/*
 * Whether _quantization_metadata already says `text` for this layer (json
 * text of the metadata-channel marker equal to it), or the input has no
 * _quantization_metadata to keep in step.
 */
static int meta_agrees(int *agrees, const stf_layer *l, const stf__plan_builder *b,
                       const char *text, stf_err *err)
{
    const stf_ckpt *c = b->p->c;
    int any_q = 0;
    *agrees = 1;
    for (size_t s = 0; s < stf_ckpt_shard_count(c); s++)
        if (stf_ckpt_meta_find(c, s, "_quantization_metadata")) any_q = 1;
    return any_q ? meta_text_is(agrees, l, text, err) : 0;
}

/*
 * Whether the layer's own metadata-channel marker (no merged one) is
 * `text`: a canonical marker found there only is left there, not copied
 * into a new tensor marker, so that the layer stays as it is.
 */
static int meta_holds(int *holds, const stf__layer_work *w, const char *text, stf_err *err)
{
    *holds = 0;
    if (w->b->merged) return 0;
    return meta_text_is(holds, w->l, text, err);
}

/* The summary's "marker canonical" note of set-marker becomes "marker
 * already canonical": its bytes are the input's. */
static int note_already(stf__layer_work *w)
{
    if (!w->canon_noted || w->canon_at > w->sum.len) return 0;
    stf_buf nb;
    stf__buf_init(&nb);
    stf__buf_put(&nb, w->sum.data, w->canon_at);
    stf__buf_puts(&nb, "marker already");
    stf__buf_put(&nb, w->sum.data + w->canon_at + strlen("marker"),
                 w->sum.len - w->canon_at - strlen("marker"));
    if (nb.oom) {
        stf__buf_free(&nb);
        return -1;
    }
    stf__buf_free(&w->sum);
    w->sum = nb;
    return 0;
}

static int emit_all(stf__layer_work *w, size_t li, stf_err *err)
{
    stf__plan_builder *b = w->b;
    int rc = 0;
    char *text = NULL;
    size_t tlen = 0;
    size_t job = SIZE_MAX;
    /* The layer changed when a tensor's name, dtype, shape or bytes do,
     * one is added or dropped, or its metadata-channel marker does. */
    w->changed = stf__bytes_cmp(w->out_prefix, w->out_prefix_len, w->l->prefix,
                                w->l->prefix_len) != 0;
    if (w->job.kind != STF__JOB_NONE) {
        rc = stf__builder_add_job(b, &job, err);
        if (rc) return rc;
        b->p->jobs[job] = w->job;
        b->p->jobs[job].out_weight = SIZE_MAX;
        b->p->jobs[job].out_scale = SIZE_MAX;
    }
    if (w->marker_change == MARKER_NEW) {
        rc = stf_marker_canonical(&text, &tlen, &w->spec, err);
        if (rc) return stf__err_prefix(err, "layer '%s': ", w->shown);
    }
    for (int sx = 0; sx < STF_SFX_COUNT; sx++) {
        stf__tensor_slot *sl = &w->s[sx];
        if (!sl->present) continue;
        if (sx == STF_SFX_COMFY_QUANT && w->marker_change == MARKER_NEW)
            continue; /* replaced below */
        if (sl->dropped || (sx == STF_SFX_COMFY_QUANT && w->marker_change == MARKER_NONE)) {
            const stf_tensor_info *t = stf_ckpt_tensor(b->p->c, sl->src);
            w->changed = 1;
            if ((rc = stf__builder_drop(b, t->name, t->name_len, err))) goto done;
            continue;
        }
        if (sl->op != STF_OUT_COPY) w->changed = 1;
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
    if (w->marker_change == MARKER_NEW) {
        stf__tensor_slot *q = &w->s[STF_SFX_COMFY_QUANT];
        const char *mt = text; /* stays valid: ownership moves to the output below */
        int same = q->present && q->in_dtype == STF_U8 && q->rank == 1 && q->nelem == tlen &&
                   tensor_equals(b->p->c, q->src, text, tlen);
        int only_meta = 0;
        if (!q->present && (rc = meta_holds(&only_meta, w, mt, err))) goto done;
        if (only_meta) {
            same = 1;
        } else if (q->present ||
                   (w->s[STF_SFX_WEIGHT].present && !w->s[STF_SFX_WEIGHT].dropped)) {
            stf__tensor_slot m;
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
        int agrees = 0;
        if ((rc = meta_agrees(&agrees, w->l, w->b, mt, err))) goto done;
        if (!same || !agrees) {
            b->markers_changed = 1;
            w->changed = 1;
        } else if (note_already(w)) {
            rc = stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->shown);
            goto done;
        }
        rc = stf__builder_add_qmeta(b, w->out_prefix, w->out_prefix_len, mt, err);
    } else if (w->marker_change == MARKER_KEEP) {
        const stf_marker *c = w->l->comfy;
        /* A layer a repair recipe leaves alone keeps its metadata entry,
         * and gains none. */
        if (b->leave && c && c->channel != STF_CHAN_METADATA) c = NULL;
        if (c && c->value && c->status == STF_MARKER_OK) {
            char *t = NULL;
            rc = stf_pyjson_dumps(&t, NULL, c->value, err);
            if (!rc) rc = stf__builder_add_qmeta(b, w->out_prefix, w->out_prefix_len, t, err);
            stf_model_str_free(t);
        }
    } else if (w->l->nmarkers) {
        b->markers_changed = 1;
        w->changed = 1;
    }
done:
    stf_model_str_free(text);
    return rc;
}

/* The working state of layer l as the input holds it: its tensors' slots. */
static int work_init(stf__layer_work *w, stf__plan_builder *b, const stf_layer *l,
                     const stf_layer_view *v, stf_err *err)
{
    memset(w, 0, sizeof *w);
    w->b = b;
    w->l = l;
    w->v = v;
    w->n = v->n;
    w->k = v->k;
    w->format = v->format;
    stf__name_render(w->shown, sizeof w->shown, l->prefix, l->prefix_len);
    stf__buf_init(&w->sum);
    for (int sx = 0; sx < STF_SFX_COUNT; sx++) {
        int64_t ti = stf_layer_tensor(l, sx);
        if (ti < 0) continue;
        const stf_tensor_info *t = stf_ckpt_tensor(b->p->c, (size_t)ti);
        stf__tensor_slot *sl = &w->s[sx];
        if (t->rank > SLOT_MAX_RANK) {
            char tn[STF__NAME_SHOWN];
            return stf__err(err, STF_EUNSUPPORTED, "%s: rank %u",
                            stf__name_render(tn, sizeof tn, t->name, t->name_len), t->rank);
        }
        sl->present = 1;
        sl->src = (size_t)ti;
        sl->in_dtype = sl->dtype = t->dtype;
        stf__slot_set_shape(sl, t->rank, t->shape);
        sl->nelem = t->nelem;
        sl->op = STF_OUT_COPY;
    }
    return 0;
}

/* How to read layer li's weight as it is stored (contract in plan_internal.h). */
int stf__layer_decode(stf__decode *d, const stf_model *m, size_t li, stf_err *err)
{
    stf__layer_tmp lt;
    const stf_layer *l = stf__model_layer_at(m, li, &lt);
    if (!l) return stf__err(err, STF_EINVAL, "decode: layer %zu out of range", li);
    /* A plan of no rules, so that the actions' helpers see the checkpoint. */
    stf_plan p;
    stf__plan_builder b;
    memset(&p, 0, sizeof p);
    memset(&b, 0, sizeof b);
    p.c = stf_model_ckpt(m);
    b.p = &p;
    b.m = m;
    stf__view_store store;
    memset(&store, 0, sizeof store);
    stf_layer_view v;
    int rc = stf__plan_view(&v, &store, m, l, err);
    /* Per-channel scales of a square weight: the H1 probe tells rows from
     * columns, as for a recipe that asks for it. */
    int64_t wi = stf_layer_tensor(l, STF_SFX_WEIGHT), si = stf_layer_tensor(l, STF_SFX_WEIGHT_SCALE);
    if (!rc && si < 0 && (v.weight_dtype == STF_F8_E4M3 || v.weight_dtype == STF_F8_E5M2))
        si = stf_layer_tensor(l, STF_SFX_SCALE_WEIGHT);
    if (!rc && wi >= 0 && si >= 0 && v.n == v.k &&
        (v.weight_dtype == STF_I8 || v.weight_dtype == STF_F8_E4M3 ||
         v.weight_dtype == STF_F8_E5M2) &&
        stf_ckpt_tensor(p.c, (size_t)si)->nelem == v.n)
        rc = stf__plan_probe_h1(&v.probe, NULL, m, l, stf__plan_probe_w4(l), err);
    stf__layer_work w;
    if (!rc) rc = work_init(&w, &b, l, &v, err);
    if (!rc) {
        rc = stf__work_decode(&w, d, err);
        stf__buf_free(&w.sum);
        stf_pyval_free(w.recovered);
    }
    stf__view_store_free(&store);
    return rc;
}

/* Apply a layer's matched actions and append its outputs (see plan_internal.h). */
int stf__plan_layer(stf__plan_builder *b, size_t li, const stf_layer *l, const stf_layer_view *v,
                    const stf__matched_action *acts, size_t n, stf_err *err)
{
    stf__layer_work w;
    int rc = work_init(&w, b, l, v, err);
    if (rc) {
        stf__buf_free(&w.sum);
        return rc;
    }
    w.out_prefix = stf__strndup(l->prefix, l->prefix_len);
    w.out_prefix_len = l->prefix_len;
    if (!w.out_prefix) return stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w.shown);
    for (size_t i = 0; i < n; i++) {
        w.cur = &acts[i];
        if ((rc = apply(&w, acts[i].a, err))) goto done;
    }
    w.cur = NULL;
    if ((rc = emit_all(&w, li, err))) goto done;

    stf__player *pl = &b->cur;
    pl->out_prefix_store = w.out_prefix;
    w.out_prefix = NULL;
    pl->summary_store = w.sum.len ? stf__strdup(w.sum.data) : NULL;
    if ((w.sum.len && !pl->summary_store) || w.sum.oom) {
        rc = stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w.shown);
        goto done;
    }
    pl->pub.prefix = l->prefix; /* the model's, which the plan keeps */
    pl->pub.prefix_len = l->prefix_len;
    pl->pub.out_prefix = pl->out_prefix_store;
    pl->pub.out_prefix_len = w.out_prefix_len;
    pl->pub.summary = pl->summary_store ? pl->summary_store : "unchanged";
    pl->pub.requantize = w.requant;
    /* Format strings point into the model (kept by the plan) or are static names. */
    pl->pub.format = w.marker_change == MARKER_NONE  ? NULL
                     : w.marker_change == MARKER_NEW ? w.spec.format
                                                     : w.format;
    pl->pub.group = w.requant ? w.job.group : 0;
    pl->pub.mode = w.job.mode;
    pl->pub.changed = w.changed;
done:
    stf__free(w.out_prefix);
    stf__buf_free(&w.sum);
    stf_pyval_free(w.recovered);
    return rc;
}
