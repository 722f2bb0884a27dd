/*
 * infer-marker: a layer whose marker is missing (missing-markers) or cannot
 * be read at all (unreadable-marker: zeroed, empty or non-UTF-8 bytes, where
 * set-marker finds no JSON object even without trailing NULs) gets the
 * marker the file itself determines, or the plan
 * refuses the layer and says which rule would settle it. The sources, in
 * order (stfix-rules(5), infer-marker):
 *
 *  - metadata: the layer's own _quantization_metadata entry, the channel
 *    ComfyUI reads first;
 *  - peers: the file's readable markers whose format fits the layer's
 *    tensors, when they all say the same;
 *  - tensors: the one format whose tensor set the layer's tensors fit,
 *    when that format's marker has no options to guess (float8_e4m3fn,
 *    float8_e5m2, nvfp4, mxfp8; INT8 and the 4-bit formats carry a
 *    rotation or group size no tensor shows).
 *
 * A marker is taken only when the layer's tensors fit its format (weight
 * dtype and shape, each required companion present, every companion of a
 * known dtype and shape, none foreign to the format, a ConvRot group that
 * divides K). Header-only: the new marker's bytes are canonical.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_work.h"

/* Per format of the table: the first readable marker of the file with that
 * format, normalised, and whether another one says something else. */
typedef struct peer_fmt {
    char *text;            /* canonical marker text; NULL: none seen */
    stf_marker_spec spec;  /* format points into the table, strings into the model */
    size_t layer, other;   /* the layer it came from; one that differs */
    int differ;
} peer_fmt;

struct stf__peers {
    peer_fmt f[STF_FMT_COUNT];
};

/* See plan_work.h. */
void stf__peers_free(stf__peers *p)
{
    if (!p) return;
    for (size_t i = 0; i < STF_FMT_COUNT; i++) stf_model_str_free(p->f[i].text);
    stf__free(p);
}

/* A marker normalised as ComfyUI reads it, its format the table's name;
 * 1 when it is not one stfix can read (no format, unknown format, a key
 * int() refuses), 0 with *spec and *fi, or STF_ENOMEM for the text. */
static int normalised(stf_marker_spec *spec, const stf_format_info **fi, char **text,
                      const stf_pyval *v, stf_err *err)
{
    *text = NULL;
    if (!v || stf_pyval_type(v) != STF_PY_DICT || stf_marker_normalize(spec, v, 0, NULL)) return 1;
    *fi = stf_format_find(spec->format, strlen(spec->format));
    if (!*fi) return 1;
    spec->format = (*fi)->name;
    int rc = stf_marker_canonical(text, NULL, spec, err);
    return rc ? rc : 0;
}

/* The file's readable markers by format, once per plan (O(markers)). */
static int peers_build(stf__plan_builder *b, stf_err *err)
{
    if (b->peers) return 0;
    stf__peers *p = stf__calloc(1, sizeof *p);
    if (!p) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    size_t nl = stf_model_layer_count(b->m);
    for (size_t li = 0; li < nl; li++) {
        stf__layer_tmp lt;
        const stf_layer *l = stf__model_layer_at(b->m, li, &lt);
        for (size_t j = 0; j < l->nmarkers; j++) {
            const stf_marker *mk = &l->markers[j];
            if (mk->status != STF_MARKER_OK) continue;
            stf_marker_spec sp;
            const stf_format_info *fi = NULL;
            char *text = NULL;
            int rc = normalised(&sp, &fi, &text, mk->value, err);
            if (rc < 0) {
                stf__peers_free(p);
                return rc;
            }
            if (rc) continue;
            peer_fmt *f = &p->f[fi->id];
            if (!f->text) {
                f->text = text;
                f->spec = sp;
                f->layer = li;
                continue;
            }
            if (strcmp(f->text, text) && !f->differ) {
                f->differ = 1;
                f->other = li;
            }
            stf_model_str_free(text);
        }
    }
    b->peers = p;
    return 0;
}

/* Whether slot S has one of the row's dtypes and its shape (or alt shape). */
static int companion_fits(const stf__tensor_slot *S, const stf_format_tensor *ft, uint64_t n,
                          uint64_t k, uint64_t gs)
{
    unsigned d = 0;
    while (d < ft->ndtypes && ft->dtypes[d] != S->dtype) d++;
    if (d == ft->ndtypes) return 0;
    const stf_shape_rule rules[2] = { ft->shape, ft->alt_shape };
    for (int r = 0; r < 2; r++) {
        uint64_t dims[2];
        unsigned rank = 0;
        if (rules[r] == STF_SHAPE_NONE || stf_shape_rule_dims(dims, &rank, rules[r], n, k, gs))
            continue;
        if (rank != S->rank) continue;
        unsigned i = 0;
        while (i < rank && dims[i] == S->shape[i]) i++;
        if (i == rank) return 1;
    }
    return 0;
}

/*
 * Whether the layer's tensors, as the earlier actions left them, have the
 * layout of format fi with the options of spec (NULL: the format's
 * defaults, no rotation).
 */
static int layer_fits(const stf__layer_work *w, const stf_format_info *fi,
                      const stf_marker_spec *spec)
{
    const stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    if (!W->present || W->dropped || W->rank != 2 || W->dtype != fi->weight_dtype) return 0;
    uint64_t n = W->shape[0], k = W->shape[1];
    if (fi->weight_shape == STF_SHAPE_NK2) k *= 2;
    int64_t gs = spec && spec->group_size_set ? spec->group_size : fi->default_group_size;
    if (gs < 0) return 0;
    for (size_t i = 0; i < stf__weight_ncompanions; i++) {
        stf_suffix sx = stf__weight_companions[i];
        const stf__tensor_slot *S = &w->s[sx];
        size_t t = 0;
        while (t < fi->ntensors && fi->tensors[t].suffix != sx) t++;
        int here = S->present && !S->dropped;
        if (t == fi->ntensors) {
            if (here) return 0; /* a tensor the format does not have */
            continue;
        }
        if (!here) {
            if (fi->tensors[t].required) return 0;
            continue;
        }
        if (!companion_fits(S, &fi->tensors[t], n, k, (uint64_t)gs)) return 0;
    }
    int rotated = fi->id == STF_FMT_CONVROT_W4A4 || (spec && spec->convrot);
    if (rotated) {
        int64_t g = spec && spec->convrot_groupsize_set ? spec->convrot_groupsize : 256;
        if (g <= 0 || k % (uint64_t)g) return 0;
    }
    return 1;
}

/* Formats whose whole marker is {"format": F}: nothing else to guess. */
static int option_free(stf_format_id id)
{
    return id == STF_FMT_FLOAT8_E4M3FN || id == STF_FMT_FLOAT8_E5M2 || id == STF_FMT_NVFP4 ||
           id == STF_FMT_MXFP8;
}

/* The reasons a source gave nothing, "; "-separated, for the refusal. */
static void why(stf_buf *b, const char *fmt, const char *a1, const char *a2)
{
    if (b->len) stf__buf_puts(b, "; ");
    stf__buf_printf(b, fmt, a1, a2);
}

/* metadata: the layer's own entries, all alike and fitting. 1 when found. */
static int from_metadata(stf__layer_work *w, stf_marker_spec *out, stf_buf *no, stf_err *err)
{
    const stf_layer *l = w->l;
    char *first = NULL;
    int listed = 0, bad = 0, differ = 0, rc = 0;
    const stf_format_info *fi = NULL;
    for (size_t j = 0; j < l->nmarkers && !rc; j++) {
        const stf_marker *mk = &l->markers[j];
        if (mk->channel != STF_CHAN_METADATA) continue;
        listed = 1;
        stf_marker_spec sp;
        char *text = NULL;
        int r = mk->status == STF_MARKER_OK ? normalised(&sp, &fi, &text, mk->value, err) : 1;
        if (r < 0) rc = r;
        else if (r) bad = 1;
        else if (!first) {
            first = text;
            *out = sp;
            text = NULL;
        } else if (strcmp(first, text)) {
            differ = 1;
        }
        stf_model_str_free(text);
    }
    stf_model_str_free(first);
    if (rc) return rc;
    if (!listed) why(no, "_quantization_metadata does not list the layer%s%s", "", "");
    else if (bad) why(no, "its _quantization_metadata entry is not a marker stfix reads%s%s", "", "");
    else if (differ) why(no, "its _quantization_metadata entries differ%s%s", "", "");
    if (!listed || bad || differ) return 0;
    if (!layer_fits(w, stf_format_find(out->format, strlen(out->format)), out)) {
        why(no, "its _quantization_metadata entry names %s, which its tensors do not fit%s",
            out->format, "");
        return 0;
    }
    return 1;
}

/* peers: the file's readable markers that fit the layer, all alike. */
static int from_peers(stf__layer_work *w, stf_marker_spec *out, stf_buf *no, stf_err *err)
{
    int rc = peers_build(w->b, err);
    if (rc) return rc;
    const stf__peers *p = w->b->peers;
    const peer_fmt *hit = NULL;
    for (size_t i = 0; i < STF_FMT_COUNT; i++) {
        const peer_fmt *f = &p->f[i];
        if (!f->text || !layer_fits(w, stf_format_at((stf_format_id)i), &f->spec)) continue;
        if (hit) {
            why(no, "readable %s and %s markers of the file both fit its tensors", hit->spec.format,
                f->spec.format);
            return 0;
        }
        hit = f;
    }
    if (!hit) {
        why(no, "no readable marker of the file fits its tensors%s%s", "", "");
        return 0;
    }
    if (hit->differ) {
        char a[STF__NAME_SHOWN], c[STF__NAME_SHOWN];
        stf__layer_tmp at, ct;
        const stf_layer *la = stf__model_layer_at(w->b->m, hit->layer, &at);
        const stf_layer *lc = stf__model_layer_at(w->b->m, hit->other, &ct);
        stf__name_render(a, sizeof a, la->prefix, la->prefix_len);
        stf__name_render(c, sizeof c, lc->prefix, lc->prefix_len);
        char two[2 * 80 + 16];
        snprintf(two, sizeof two, "'%.80s' and '%.80s'", a, c);
        why(no, "the file's readable %s markers differ (layers %s)", hit->spec.format, two);
        return 0;
    }
    *out = hit->spec;
    return 1;
}

/* tensors: the formats whose tensor set fits, by table order; *n of them. */
static size_t fitting_formats(const stf__layer_work *w, stf_format_id ids[STF_FMT_COUNT])
{
    size_t n = 0;
    for (size_t i = 0; i < STF_FMT_COUNT; i++)
        if (layer_fits(w, stf_format_at((stf_format_id)i), NULL)) ids[n++] = (stf_format_id)i;
    return n;
}

/* "a, b and c" of the formats' names into buf. */
static const char *format_list(char *buf, size_t cap, const stf_format_id *ids, size_t n,
                               const char *last)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i == 0 ? "" : i + 1 == n ? last : ", ",
                               stf_format_name(ids[i]));
    return buf;
}

/*
 * Whether the layer has no marker, or a comfy_quant tensor whose bytes hold
 * none: not JSON, not an object, a dtype numpy refuses, and nothing left
 * once trailing NULs are stripped. Bytes set-marker still reads (a C
 * writer's trailing NUL, JSON under a BF16 label) and metadata entries
 * (a string value) are set-marker's to rewrite.
 */
static int needs_marker(stf__layer_work *w)
{
    const stf_layer *l = w->l;
    if (!l->nmarkers) return 1;
    int bad = 0;
    for (size_t j = 0; j < l->nmarkers; j++)
        if (l->markers[j].channel == STF_CHAN_TENSOR &&
            (l->markers[j].status != STF_MARKER_OK ||
             stf_pyval_type(l->markers[j].value) != STF_PY_DICT))
            bad = 1;
    return bad && !stf__work_recovered(w);
}

/* See plan_work.h. */
int stf__work_infer_marker(stf__layer_work *w, const stf_action *a, stf_err *err)
{
    if (w->marker_change != MARKER_KEEP || !needs_marker(w)) {
        if (w->recover_rc)
            return stf__err(err, w->recover_rc, "layer '%s': out of memory", w->shown);
        return 0;
    }
    const stf__tensor_slot *W = &w->s[STF_SFX_WEIGHT];
    if (!W->present || W->dropped)
        return stf__work_refuse(w, err, "the layer has no weight to infer a marker for");
    unsigned from = a->params.infer_marker.from;
    stf_marker_spec sp;
    memset(&sp, 0, sizeof sp);
    stf_buf no;
    stf__buf_init(&no);
    const char *src = NULL;
    int rc = 0;
    if (from & STF_INFER_FROM_METADATA) {
        rc = from_metadata(w, &sp, &no, err);
        if (rc > 0) src = "metadata";
    }
    if (rc >= 0 && !src && (from & STF_INFER_FROM_PEERS)) {
        rc = from_peers(w, &sp, &no, err);
        if (rc > 0) src = "peers";
    }
    stf_format_id ids[STF_FMT_COUNT];
    size_t nfit = rc >= 0 ? fitting_formats(w, ids) : 0;
    char names[200];
    if (rc >= 0 && !src && (from & STF_INFER_FROM_TENSORS)) {
        rc = 0;
        if (nfit == 1 && option_free(ids[0])) {
            memset(&sp, 0, sizeof sp);
            sp.format = stf_format_name(ids[0]);
            src = "tensors";
        } else if (nfit == 1) {
            why(&no, "its tensors fit %s but do not tell its rotation or group size",
                stf_format_name(ids[0]), "");
        } else if (nfit) {
            why(&no, "its tensors fit %s%s", format_list(names, sizeof names, ids, nfit, " and "),
                "");
        } else {
            why(&no, "its tensors fit no format%s%s", "", "");
        }
    }
    if (rc < 0 || no.oom) {
        stf__buf_free(&no);
        return rc < 0 ? rc : stf__err(err, STF_ENOMEM, "layer '%s': out of memory", w->shown);
    }
    if (!src) {
        char msg[900];
        const char *lead = w->l->nmarkers ? "the marker cannot be read" : "the layer has no marker";
        if (nfit)
            snprintf(msg, sizeof msg, "%s and the file does not determine it (%.500s); settle it "
                     "with a rule for this layer, ahead of this one, that does set-marker: "
                     "{format: %s}", lead, no.data,
                     format_list(names, sizeof names, ids, nfit, " or "));
        else
            snprintf(msg, sizeof msg, "%s and the file does not determine it (%.500s); store the "
                     "layer in BF16 with a rule for it, ahead of this one, that does exclude",
                     lead, no.data);
        stf__buf_free(&no);
        return stf__work_refuse(w, err, msg);
    }
    stf__buf_free(&no);
    int rebuilt = w->l->nmarkers > 0;
    w->spec = sp;
    w->marker_change = MARKER_NEW;
    w->format = sp.format;
    stf__work_note(w, rebuilt ? "marker rebuilt from %s (%s)" : "marker inferred from %s (%s)", src,
                   sp.format);
    return 0;
}
