/*
 * The numeric profile: probes.c measures each layer (N1/N2 over every
 * scale tensor, H1 on INT8, W4A4 and square FP8 layers, H2 on INT8
 * ConvRot layers, N3 instead of H1/H2 on a layer whose weight has no
 * elements), layers in parallel on the options' pool; the findings are
 * then added here in layer order, so the report is the same for every
 * thread count.
 */
#include <stdio.h>
#include <string.h>

#include "check/check_internal.h"
#include "check/probes.h"

#define LAYER_WINDOW 256 /* layers measured before their findings are added */

static uint64_t abs_offset(stf__chk *k, const stf_tensor_info *t, uint64_t byte)
{
    return 8 + stf_ckpt_shard_header_len(k->c, t->shard) + t->begin + byte;
}

/* One N1/N2 finding: `count` bad values of scale tensor t, the first `val`
 * at element `first`, named with its byte offset in its shard. */
static void report_bad_scales(stf__chk *k, const stf_layer *l, const stf_tensor_info *t,
                              const char *rule, const char *fix, const char *what,
                              uint64_t count, float val, uint64_t first)
{
    size_t isz = stf_dtype_bits(t->dtype) / 8;
    stf__chk_add(k, rule, STF_SEV_ERROR, l->prefix, l->prefix_len, fix,
                 "%s: %llu %s scale value(s), first %g at element %llu (byte offset %llu of %s)",
                 stf__chk_name(k, t->name, t->name_len), (unsigned long long)count, what,
                 (double)val, (unsigned long long)first,
                 (unsigned long long)abs_offset(k, t, first * isz),
                 stf_ckpt_shard_path(k->c, t->shard));
}

static void report_scale(stf__chk *k, const stf_layer *l, size_t idx, const stf__scale_probe *p)
{
    const stf_tensor_info *t = stf_ckpt_tensor(k->c, idx);
    if (p->nonfinite)
        report_bad_scales(k, l, t, "N1", "requantize the layer from its source weights",
                          "non-finite", p->nonfinite, p->nf_val, p->first_nf);
    if (p->nonpos)
        report_bad_scales(k, l, t, "N2",
                          "requantize the layer; a scale must be positive (kitchen clamps to "
                          "1e-10)",
                          "zero or negative", p->nonpos, p->np_val, p->first_np);
}

/* Contract in probes.h. */
int stf__h1_is_error(stf_probe_verdict v)
{
    return v == STF_PROBE_COLUMN;
}

static void report_h1(stf__chk *k, const stf_layer *l, int w4, const stf_h1_result *h)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *s = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_SCALE);
    if (!h->probed) return;
    /* FP8 codes: a square weight whose N scales (weight_scale or the
     * legacy scale_weight) fix reads per row unless H1 says COLUMN. */
    int fp8 = w->dtype == STF_F8_E4M3 || w->dtype == STF_F8_E5M2;
    if (!s && fp8) s = stf_layer_tensor_info(k->m, l, STF_SFX_SCALE_WEIGHT);
    if (!s) return;
    uint64_t n = w->shape[0];
    const char *verdict = stf_probe_verdict_name(h->verdict);
    uint64_t want2[2] = { n, 1 };
    int canonical = w4 ? stf__chk_shape_is(s, 1, &n) : stf__chk_shape_is(s, 2, want2);
    stf_severity sev = STF_SEV_WARNING;
    const char *fix = fp8 ? "report only; fix reads the scales per row"
                          : "report only; decide with a recipe rule";
    if (h->verdict == STF_PROBE_ROW && s->nelem == n) {
        sev = canonical || fp8 ? STF_SEV_INFO : STF_SEV_WARNING;
        fix = canonical || fp8 ? "none"
              : w4             ? "header-only reshape of the scale to (N,)"
                               : "header-only reshape of the scale to (N, 1)";
    } else if (stf__h1_is_error(h->verdict)) {
        sev = STF_SEV_ERROR;
        fix = "requantize rowwise: dequantize with the column scales, un-rotate, quantize per row";
    } else if (h->verdict == STF_PROBE_TENSOR) {
        sev = STF_SEV_INFO;
        fix = "none for ComfyUI; requantize rowwise for SGLang";
    }
    char reach[48];
    snprintf(reach, sizeof reach, fp8 ? "the largest code 0x%02X" : "|q| >= %u", h->sat);
    stf__chk_add(k, "H1", sev, l->prefix, l->prefix_len, fix,
                 "%s quantization in %s: %.1f%% of %llu non-empty rows and %.1f%% of %llu "
                 "non-empty columns reach %s; weight %s, scale %s", verdict,
                 stf__chk_name(k, w->name, w->name_len),
                 100.0 * h->fr, (unsigned long long)h->rows_ne, 100.0 * h->fc,
                 (unsigned long long)h->cols_ne, reach, stf__chk_shape(k, w),
                 stf__chk_shape(k, s));
}

static void report_h2(stf__chk *k, const stf_layer *l, const stf_h2_result *h)
{
    if (h->declared_sylvester)
        stf__chk_add(k, "H2", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "undo with the Sylvester matrix (sylvester-rotation) and requantize with a "
                     "regular G",
                     "Layer %s declares convrot_groupsize %lld, a power of 2 but not of 4: the "
                     "exporter's fallback rotated it with a Sylvester matrix", stf__chk_layer(k, l),
                     (long long)h->group);
    else if (h->evidence)
        stf__chk_add(k, "H2", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "confirm with the producer; if Sylvester, undo it (sylvester-rotation) and "
                     "requantize",
                     "Layer %s: position 0 of each ConvRot group holds %.1fx the mean energy of the "
                     "other positions, evidence of a Sylvester rather than a regular rotation",
                     stf__chk_layer(k, l), h->ratio);
}

/*
 * A weight with no elements: N or K is 0, so the other dimension is only a
 * number in the header. Nothing is probed, and fix copies such a layer
 * unchanged instead of requantizing or dequantizing it.
 */
static void report_empty(stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    stf__chk_add(k, "N3", STF_SEV_WARNING, l->prefix, l->prefix_len,
                 "re-export the layer with its weights, or drop it",
                 "%s %s %s has no elements: nothing to probe, and fix copies the layer "
                 "unchanged", stf__chk_name(k, w->name, w->name_len), stf_dtype_name(w->dtype),
                 stf__chk_shape(k, w));
}

static void report_layer(stf__chk *k, const stf_layer *l, const stf__layer_probe *p)
{
    for (unsigned j = 0; j < STF__PROBE_SCALES; j++) {
        int64_t ti = stf_layer_tensor(l, stf__probe_scale_suffix(j));
        if (ti >= 0 && p->scale[j].probed) report_scale(k, l, (size_t)ti, &p->scale[j]);
    }
    if (p->empty) {
        report_empty(k, l);
        return;
    }
    if (p->h1_run) report_h1(k, l, p->w4, &p->h1);
    if (p->h2_run) report_h2(k, l, &p->h2);
}

typedef struct window_job {
    stf__chk *k;
    size_t base;
    stf__layer_probe *res;
    stf__progress *pg;
} window_job;

/* The bytes of l's weight: what a layer's probes count for progress. */
static uint64_t weight_bytes(const stf_model *m, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    return w ? w->nbytes : 0;
}

static int window_item(void *ud, size_t i, stf_err *err)
{
    window_job *j = ud;
    stf__layer_tmp l_tmp;
    const stf_layer *l = stf__model_layer_at(j->k->m, j->base + i, &l_tmp);
    int rc = stf__probe_layer(&j->res[i], j->k->c, j->k->m, l, j->k->o->tau, err);
    stf__progress_add(j->pg, weight_bytes(j->k->m, l), l->prefix, l->prefix_len);
    return rc;
}

/*
 * The numeric profile. A failure is the one of the first failing layer in
 * layer order, whatever the thread count. Returns 0 or the sticky k->rc.
 */
int stf__check_numeric(stf__chk *k)
{
    k->profile = "numeric";
    size_t nl = stf_model_layer_count(k->m);
    size_t win = nl < LAYER_WINDOW ? nl : LAYER_WINDOW;
    if (!nl) return k->rc;
    stf__layer_probe *res = stf__calloc(win, sizeof *res);
    if (!res) {
        stf__chk_fail(k, STF_ENOMEM);
        return k->rc;
    }
    stf__progress pg;
    uint64_t total = 0;
    for (size_t i = 0; k->o->progress && i < nl; i++) {
        stf__layer_tmp lt;
        total += weight_bytes(k->m, stf__model_layer_at(k->m, i, &lt));
    }
    stf__progress_init(&pg, k->o->progress, k->o->progress_ud, total);
    for (size_t base = 0; base < nl && !k->rc; base += win) {
        size_t n = nl - base < win ? nl - base : win, failed;
        window_job j = { k, base, res, &pg };
        int rc = stf__pool_each(k->o->pool, n, window_item, &j, &failed, k->err);
        size_t upto = rc ? (failed == SIZE_MAX ? 0 : failed) : n;
        for (size_t i = 0; i < upto && !k->rc; i++) {
            stf__layer_tmp lt;
            report_layer(k, stf__model_layer_at(k->m, base + i, &lt), &res[i]);
        }
        if (rc) stf__chk_fail(k, rc);
    }
    stf__free(res);
    if (!k->rc) stf__progress_end(&pg);
    return k->rc;
}
