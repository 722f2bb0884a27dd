/*
 * What a recipe's selectors see of a layer (stf_layer_view): the layer as
 * read from the input, plus the H1 verdict and the declared rotation. Rules
 * never see the effect of earlier rules (rules.h), so the view is built once
 * per layer from the model.
 */
#include <string.h>

#include "pipeline/plan_internal.h"

static int is_packed(const char *fmt)
{
    if (!fmt) return 0;
    /* The nonstandard-format-name alias of convrot_w4a4 packs the same way. */
    if (!strcmp(fmt, "int4_convrot_w4a4")) return 1;
    const stf_format_info *f = stf_format_find(fmt, strlen(fmt));
    return f && f->weight_shape == STF_SHAPE_NK2;
}

/* Free the texts a view borrowed from its store. No-op on an empty store. */
void stf__view_store_free(stf__view_store *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nfields; i++) stf__free(s->texts[i]);
    stf__free(s->texts);
    stf__free(s->fields);
    memset(s, 0, sizeof *s);
}

/* The marker the plan reads a layer's state from: ComfyUI's choice (metadata wins). */
static const stf_pyval *layer_marker(const stf_layer *l)
{
    if (!l->comfy || l->comfy->status != STF_MARKER_OK || !l->comfy->value) return NULL;
    return stf_pyval_type(l->comfy->value) == STF_PY_DICT ? l->comfy->value : NULL;
}

/*
 * Fill v for model layer l. Marker field texts are json.dumps of each
 * top-level value, owned by `store` (release with stf__view_store_free).
 * probe and rotation are left UNKNOWN. Errors: STF_ENOMEM.
 */
int stf__plan_view(stf_layer_view *v, stf__view_store *store, const stf_model *m,
                   const stf_layer *l, stf_err *err)
{
    int rc = 0;
    memset(v, 0, sizeof *v);
    memset(store, 0, sizeof *store);
    v->prefix = l->prefix;
    v->prefix_len = l->prefix_len;
    v->has_marker = l->nmarkers > 0;
    const stf_pyval *mk = layer_marker(l);
    if (mk) {
        const char *fmt = stf_pyval_str(stf_pyval_find(mk, "format"), NULL);
        v->format = fmt;
        size_t nf = stf_pyval_len(mk);
        if (nf) {
            store->fields = stf__calloc(nf, sizeof *store->fields);
            store->texts = stf__calloc(nf, sizeof *store->texts);
            if (!store->fields || !store->texts) {
                char shown[STF__NAME_SHOWN];
                rc = stf__err(err, STF_ENOMEM, "layer '%s': out of memory",
                              stf__name_render(shown, sizeof shown, l->prefix, l->prefix_len));
                goto done;
            }
            for (size_t i = 0; i < nf; i++) {
                rc = stf_pyjson_dumps(&store->texts[i], NULL, stf_pyval_item(mk, i), err);
                if (rc) goto done;
                store->fields[i].key = stf_pyval_key(mk, i, NULL);
                store->fields[i].json = store->texts[i];
                store->nfields = i + 1;
            }
        }
        v->marker_fields = store->fields;
        v->marker_field_count = store->nfields;
    }
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    if (w) {
        v->has_weight = 1;
        v->weight_dtype = w->dtype;
        v->weight_rank = w->rank;
        v->weight_shape = w->shape;
        if (w->rank == 2) {
            v->n = w->shape[0];
            v->k = is_packed(v->format) ? 2 * w->shape[1] : w->shape[1];
        } else if (w->rank >= 3) {
            /* MoE banks [E,out,in] read as [E*out, in]; conv kernels as [out, in*k...]. */
            if (mk && stf_pyval_find(mk, "num_experts") && w->rank == 3) {
                v->n = w->shape[0] * w->shape[1];
                v->k = w->shape[2];
            } else {
                v->n = w->shape[0];
                v->k = w->nelem / (w->shape[0] ? w->shape[0] : 1);
            }
        } else if (w->rank == 1) {
            v->n = w->shape[0];
            v->k = 1;
        }
    }
    const stf_tensor_info *s = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT_SCALE);
    if (s) {
        v->has_scale = 1;
        v->scale_dtype = s->dtype;
        v->scale_rank = s->rank;
        v->scale_shape = s->shape;
    }
    const stf_tensor_info *in = stf_layer_tensor_info(m, l, STF_SFX_INPUT_SCALE);
    if (in) {
        v->has_input_scale = 1;
        v->input_scale_rank = in->rank;
        v->input_scale_shape = in->shape;
    }
done:
    if (rc) stf__view_store_free(store);
    return rc;
}

/* Whether H1 reads l's codes as packed int4 pairs: a convrot_w4a4 marker. */
int stf__plan_probe_w4(const stf_layer *l)
{
    const stf_pyval *mk = layer_marker(l);
    const char *fmt = mk ? stf_pyval_str(stf_pyval_find(mk, "format"), NULL) : NULL;
    return fmt && !strcmp(fmt, "convrot_w4a4");
}

/*
 * The probes' read block: 128 KiB a thread (0), or under max_mem an equal
 * share of it for each thread, halved to leave room for the per-column
 * arrays, at least 4 KiB.
 */
size_t stf__plan_probe_block(const stf_plan_opts *o)
{
    if (!o || o->version < 2u || !o->max_mem) return 0;
    uint64_t threads = o->pool ? stf_pool_threads(o->pool) : 1;
    uint64_t b = o->max_mem / (threads ? threads : 1) / 2;
    if (b > 128u * 1024u) b = 128u * 1024u;
    if (b < 4096u) b = 4096u;
    return (size_t)b;
}

/*
 * Run H1 on an INT8 or W4A4 layer (stfix-defects(7), ROW AND COLUMN
 * DETECTION) and give the selector its verdict. Layers H1 cannot read
 * give UNKNOWN. Errors: STF_EIO, STF_ENOMEM.
 */
int stf__plan_probe_h1(stf_probe_verdict *out, const stf_plan_opts *o, const stf_model *m,
                       const stf_layer *l, int w4, stf_err *err)
{
    *out = STF_PROBE_UNKNOWN;
    stf_h1_result h;
    int rc = stf__probe_h1_block(&h, stf_model_ckpt(m), m, l, w4, o ? o->tau : 0.99,
                                 stf__plan_probe_block(o), err);
    if (rc) {
        char shown[STF__NAME_SHOWN];
        return stf__err_prefix(err, "probe of layer '%s': ",
                               stf__name_render(shown, sizeof shown, l->prefix, l->prefix_len));
    }
    *out = h.verdict;
    return 0;
}

/*
 * The rotation the marker declares (stfix-convrot(7), SYLVESTER ORDER): convrot
 * truthy and G (default 256) a power of 4 is the regular matrix; a power of 2
 * that is not one of 4 is the exporters' Sylvester fallback; anything else
 * unknown.
 */
stf_rotation_kind stf__plan_rotation(const stf_layer *l)
{
    const stf_pyval *mk = layer_marker(l);
    if (!mk) return STF_ROTATION_UNKNOWN;
    const stf_pyval *p = stf_pyval_find(mk, "params");
    const stf_pyval *cv = stf_pyval_find(mk, "convrot");
    if (!cv && p && stf_pyval_type(p) == STF_PY_DICT) cv = stf_pyval_find(p, "convrot");
    if (!stf_pyval_truthy(cv)) return STF_ROTATION_UNKNOWN;
    const stf_pyval *gv = stf_pyval_find(mk, "convrot_groupsize");
    if (!gv && p && stf_pyval_type(p) == STF_PY_DICT) gv = stf_pyval_find(p, "convrot_groupsize");
    int64_t g = 256;
    if (gv && stf_pyval_pyint(&g, gv, NULL)) return STF_ROTATION_UNKNOWN;
    if (g < 2 || (g & (g - 1))) return STF_ROTATION_UNKNOWN;
    unsigned log2g = 0;
    while (((int64_t)1 << log2g) < g) log2g++;
    return log2g % 2 ? STF_ROTATION_SYLVESTER : STF_ROTATION_REGULAR;
}
