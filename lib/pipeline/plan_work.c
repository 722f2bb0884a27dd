/*
 * The helpers both kinds of plan action share (plan_layer.c's header-only
 * actions and plan_job.c's data and marker actions): refusing an action,
 * the summary line, shapes, the marker an action reads, and the
 * companions of a weight.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_work.h"

/* STF_EFORMAT naming the layer, the rule and its recipe line. */
int stf__work_refuse(stf__layer_work *w, stf_err *err, const char *what)
{
    const stf__matched_action *pa = w->cur;
    if (!pa) return stf__err(err, STF_EFORMAT, "layer '%s': %s", w->shown, what);
    return stf__err(err, STF_EFORMAT, "layer '%s': rule '%s' (recipe line %u): %s: %s",
                    w->shown, pa ? stf_rule_name(pa->rule) : "?",
                    pa ? pa->a->line : 0u, pa ? stf_action_name(pa->a->kind) : "?", what);
}

/* Add a phrase to the summary line ("; "-separated). */
void stf__work_note(stf__layer_work *w, const char *fmt, const char *a, const char *b2)
{
    if (w->sum.len) stf__buf_puts(&w->sum, "; ");
    stf__buf_printf(&w->sum, fmt, a, b2);
}

/* "(16, 1)", "(16,)", "()" into buf (cap bytes); returns buf. */
const char *stf__shape_text(char *buf, size_t cap, unsigned rank, const uint64_t *shape)
{
    size_t at = 0;
    at += (size_t)snprintf(buf + at, cap - at, "(");
    for (unsigned i = 0; i < rank && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, i ? ", %llu" : "%llu",
                               (unsigned long long)shape[i]);
    if (at < cap) at += (size_t)snprintf(buf + at, cap - at, rank == 1 ? ",)" : ")");
    return buf;
}

/* Set a slot's shape (rank <= SLOT_MAX_RANK). */
void stf__slot_set_shape(stf__tensor_slot *sl, unsigned rank, const uint64_t *shape)
{
    sl->rank = rank;
    for (unsigned i = 0; i < rank; i++) sl->shape[i] = shape[i];
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
static void recover_marker(stf__layer_work *w)
{
    w->recover_tried = 1;
    int64_t ti = stf_layer_tensor(w->l, STF_SFX_COMFY_QUANT);
    if (ti < 0) return;
    const stf_tensor_info *t = stf_ckpt_tensor(w->b->p->c, (size_t)ti);
    if (t->nbytes == 0 || t->nbytes > 65536) return;
    unsigned char *buf = stf__malloc((size_t)t->nbytes);
    if (!buf) {
        w->recover_rc = STF_ENOMEM;
        return;
    }
    size_t n = (size_t)t->nbytes;
    int rc = stf_ckpt_read(buf, w->b->p->c, (size_t)ti, 0, n, NULL);
    if (!rc) {
        while (n && buf[n - 1] == 0) n--;
        stf_pyval *v = NULL;
        rc = stf_pyjson_parse(&v, buf, n, NULL);
        if (!rc && stf_pyval_type(v) == STF_PY_DICT) w->recovered = v;
        else stf_pyval_free(v);
    }
    /* Unparseable bytes just mean "no marker"; running out of memory must not. */
    if (rc == STF_ENOMEM) w->recover_rc = rc;
    stf__free(buf);
}

/* The marker an action reads: the preferred channel's, else one recovered from raw bytes. */
const stf_pyval *stf__work_marker(stf__layer_work *w, stf_channel_pref pref)
{
    const stf_pyval *v = marker_value(w->l, pref);
    if (v) return v;
    if (!w->recover_tried) recover_marker(w);
    return w->recovered;
}

/* The marker recovered from the layer's tensor-marker bytes, or NULL. */
const stf_pyval *stf__work_recovered(stf__layer_work *w)
{
    if (!w->recover_tried) recover_marker(w);
    return w->recovered;
}

/* BF16, F16 or F32. */
int stf__dtype_is_float(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

/* 1: power of 4; 2: power of 2 but not of 4; 0: neither. */
int stf__power_kind(int64_t g)
{
    if (g < 2 || (g & (g - 1))) return 0;
    unsigned lg = 0;
    while (((int64_t)1 << lg) < g) lg++;
    return lg % 2 ? 2 : 1;
}

/* Every tensor that only means something next to a quantized weight. */
const stf_suffix stf__weight_companions[] = {
    STF_SFX_WEIGHT_SCALE, STF_SFX_INPUT_SCALE, STF_SFX_WEIGHT_SCALE_2, STF_SFX_WEIGHT_S_REL,
    STF_SFX_WEIGHT_S_CHANNEL, STF_SFX_WEIGHT_CODEBOOK, STF_SFX_WEIGHT_CORRECTION,
    STF_SFX_PRE_QUANT_SCALE, STF_SFX_WEIGHT_ZEROS, STF_SFX_WEIGHT_ZERO, STF_SFX_SCALE_WEIGHT,
    STF_SFX_SCALE_INPUT
};
const size_t stf__weight_ncompanions =
    sizeof stf__weight_companions / sizeof stf__weight_companions[0];
