/*
 * Numeric probes (`--numeric`): the only part of a check that reads tensor
 * data beyond the markers. Each probe is a diagnostic:
 *   N1  non-finite scale values, N2  zero or negative scales;
 *   H1  row- versus column-quantization by the max|q| test (stfix-defects(7),
 *       ROW AND COLUMN DETECTION), on INT8 and W4A4 layers and on square
 *       FP8 layers with one scale per row or column;
 *   H2  a Sylvester rather than a regular rotation on a ConvRot layer;
 *   N3  a weight with no elements (nothing to probe).
 * This file computes them as data (probes.h); probe_report.c turns them
 * into findings. Every probe reads every row: no verdict rests on a sample.
 * A weight is read once for H1 and H2 together (probe_scan.c), in blocks of
 * rows, so memory stays O(K) per layer.
 */
#include <math.h>
#include <string.h>

#include "check/check_internal.h"
#include "check/probe_scan.h"
#include "check/probes.h"

#define ROW_CHUNK 4096 /* scale values converted per read */

/* ------------------------------------------------------------- N1, N2 */

stf_suffix stf__probe_scale_suffix(unsigned j)
{
    static const stf_suffix scales[STF__PROBE_SCALES] = {
        STF_SFX_WEIGHT_SCALE, STF_SFX_INPUT_SCALE, STF_SFX_WEIGHT_SCALE_2, STF_SFX_WEIGHT_S_CHANNEL
    };
    return scales[j];
}

/*
 * The N1 and N2 counts of n values: NaN or Inf (exponent all ones), and
 * finite values <= 0 (the sign bit set, or +0). Integer tests on the bits,
 * no branch, so the compiler vectorizes the loop; the counts do not depend
 * on the order they are taken in.
 */
static void count_bad(const float *v, size_t n, uint64_t *nf, uint64_t *np)
{
    uint32_t a = 0, b = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t x;
        memcpy(&x, &v[j], 4);
        uint32_t bad = (x & 0x7F800000u) == 0x7F800000u;
        a += bad;
        b += (bad ^ 1u) & ((x >> 31) | (uint32_t)(x == 0));
    }
    *nf += a;
    *np += b;
}

static int probe_scale(stf__scale_probe *out, const stf_ckpt *c, size_t idx, stf_err *err)
{
    const stf_tensor_info *t = stf_ckpt_tensor(c, idx);
    memset(out, 0, sizeof *out);
    if (t->dtype != STF_F32 && t->dtype != STF_F16 && t->dtype != STF_BF16) return 0;
    size_t isz = stf_dtype_bits(t->dtype) / 8;
    unsigned char raw[ROW_CHUNK * 4];
    float v[ROW_CHUNK];
    out->probed = 1;
    for (uint64_t at = 0; at < t->nelem; at += ROW_CHUNK) {
        size_t n = (size_t)(t->nelem - at < ROW_CHUNK ? t->nelem - at : ROW_CHUNK);
        int rc = stf_ckpt_read(raw, c, idx, at * isz, n * isz, err);
        if (!rc) rc = stf_convert_to_f32(v, raw, t->dtype, n, err);
        if (rc) return rc;
        uint64_t nf = out->nonfinite, np = out->nonpos;
        count_bad(v, n, &out->nonfinite, &out->nonpos);
        /* The first bad value of each kind, from the chunk that has it. */
        for (size_t j = 0; j < n && ((!nf && out->nonfinite) || (!np && out->nonpos)); j++) {
            if (!isfinite(v[j])) {
                if (!nf++) {
                    out->first_nf = at + j;
                    out->nf_val = v[j];
                }
            } else if (v[j] <= 0.0f && !np++) {
                out->first_np = at + j;
                out->np_val = v[j];
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ H1 */

static double frac(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

static int is_fp8(stf_dtype d) { return d == STF_F8_E4M3 || d == STF_F8_E5M2; }

/* The scale H1 weighs its verdict with: weight_scale, or for an FP8 weight
 * without one the legacy scale_weight; NULL when there is none. */
static const stf_tensor_info *h1_scale(const stf_model *m, const stf_layer *l,
                                       const stf_tensor_info *w)
{
    const stf_tensor_info *s = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT_SCALE);
    if (!s && w && is_fp8(w->dtype)) s = stf_layer_tensor_info(m, l, STF_SFX_SCALE_WEIGHT);
    return s;
}

/* Whether H1 can read layer l: an I8 or FP8 rank-2 weight with elements,
 * and a scale. */
static int h1_applies(const stf_model *m, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    /* A weight with no elements has no data to probe (and its other
     * dimension, with nothing behind it, must not size a loop). */
    return w && (w->dtype == STF_I8 || is_fp8(w->dtype)) && w->rank == 2 && h1_scale(m, l, w) &&
           w->nelem != 0;
}

/* The H1 verdict from the counts. */
static void h1_finish(stf_h1_result *out, const stf__h1_stat *st, const stf_tensor_info *w,
                      const stf_tensor_info *s, int w4, unsigned sat, double tau)
{
    if (tau <= 0) tau = 0.99;
    uint64_t n = w->shape[0], kk = w4 ? 2 * w->shape[1] : w->shape[1];
    double fr = frac(st->rows_sat, st->rows_ne), fc = frac(st->cols_sat, st->cols_ne);
    stf_probe_verdict v;
    if (fr >= tau && fc < tau) v = STF_PROBE_ROW;
    else if (fr < tau && fc >= tau) v = STF_PROBE_COLUMN;
    else if (fr >= tau && fc >= tau)
        v = n == kk ? STF_PROBE_AMBIGUOUS
            : s->nelem == n ? STF_PROBE_ROW
            : s->nelem == kk ? STF_PROBE_COLUMN : STF_PROBE_AMBIGUOUS;
    else if (s->nelem == 1 && st->any_sat) v = STF_PROBE_TENSOR;
    else {
        v = STF_PROBE_UNKNOWN;
        for (unsigned j = 0; j < 4; j++)
            if (st->blk_ne[j] && frac(st->blk_sat[j], st->blk_ne[j]) >= tau) {
                v = STF_PROBE_BLOCK;
                break;
            }
    }
    out->probed = 1;
    out->verdict = v;
    out->fr = fr;
    out->fc = fc;
    out->rows_ne = st->rows_ne;
    out->rows_sat = st->rows_sat;
    out->cols_ne = st->cols_ne;
    out->cols_sat = st->cols_sat;
    out->sat = sat;
}

/*
 * The one H1 implementation: the check profile reports it, the plan acts on
 * it (reshape-scale, transpose-scale, requantize's column decode).
 */
int stf_probe_h1(stf_h1_result *out, const stf_ckpt *c, const stf_model *m, const stf_layer *l,
                 int w4, double tau, stf_err *err)
{
    return stf__probe_h1_block(out, c, m, l, w4, tau, 0, err);
}

/* Contract in probes.h. */
int stf__probe_h1_block(stf_h1_result *out, const stf_ckpt *c, const stf_model *m,
                        const stf_layer *l, int w4, double tau, size_t block, stf_err *err)
{
    memset(out, 0, sizeof *out);
    out->verdict = STF_PROBE_UNKNOWN;
    if (!h1_applies(m, l)) return 0;
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    int fp8 = is_fp8(w->dtype) ? (int)w->dtype : 0;
    if (fp8) w4 = 0;
    stf__h1_stat st;
    stf__scan_req req = { .h1 = 1, .w4 = w4, .fp8 = fp8, .sat = stf__h1_sat(w->dtype, w4),
                          .block = block };
    int rc = stf__probe_scan(c, (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT), w, &req, &st, NULL,
                             err);
    if (rc) return rc;
    h1_finish(out, &st, w, h1_scale(m, l, w), w4, req.sat, tau);
    return 0;
}

/* Contract in probes.h. */
int stf__probe_h1_rows(stf_h1_result *out, const stf_ckpt *c, size_t wi, size_t si,
                       stf__h1_acc *acc, double tau, stf_err *err)
{
    const stf_tensor_info *w = stf_ckpt_tensor(c, wi), *s = stf_ckpt_tensor(c, si);
    stf__h1_stat st;
    memset(out, 0, sizeof *out);
    out->verdict = STF_PROBE_UNKNOWN;
    unsigned sat = stf__h1_sat(w->dtype, 0);
    if (!acc || !stf__h1_acc_finish(acc, &st)) {
        stf__scan_req req = { .h1 = 1, .fp8 = is_fp8(w->dtype) ? (int)w->dtype : 0, .sat = sat };
        int rc = stf__probe_scan(c, wi, w, &req, &st, NULL, err);
        if (rc) return rc;
    }
    h1_finish(out, &st, w, s, 0, sat, tau);
    return 0;
}

/* ------------------------------------------------------------------ H2 */

/*
 * A Sylvester matrix has an all-ones first row, so it moves each group's
 * mean into position 0 of the group; the regular ConvRot matrix has every
 * row summing to sqrt(G) and spreads it evenly. Position 0 carrying far
 * more energy than the other positions is therefore evidence of Sylvester.
 * With zero-mean groups the data cannot tell; then nothing is reported.
 */

/* The declaration part of H2 into *out; returns the G whose data to scan, or 0. */
static size_t h2_begin(stf_h2_result *out, const stf_model *m, const stf_layer *l)
{
    memset(out, 0, sizeof *out);
    const stf_pyval *mk = stf__chk_marker(l);
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    int64_t g = 0;
    if (!mk || !stf_pyval_truthy(stf_pyval_find(mk, "convrot"))) return 0;
    if (stf_pyval_pyint(&g, stf_pyval_find(mk, "convrot_groupsize"), NULL) || g < 2) return 0;
    out->group = g;
    int log2g = 0;
    while (((int64_t)1 << log2g) < g && log2g < 62) log2g++;
    if ((g & (g - 1)) == 0 && log2g % 2) {
        out->declared_sylvester = 1;
        return 0;
    }
    if (!w || w->dtype != STF_I8 || w->rank != 2 || w->nelem == 0 || w->shape[1] % (uint64_t)g ||
        g > 4096)
        return 0;
    return (size_t)g;
}

/* The evidence from the energies e[0..g) of n rows. */
static void h2_finish(stf_h2_result *out, const double *e, size_t g, uint64_t n)
{
    double rest = 0;
    for (size_t j = 1; j < g; j++) rest += e[j];
    rest /= (double)(g - 1);
    out->probed = 1;
    out->ratio = rest > 0 ? e[0] / rest : 0.0;
    out->evidence = n >= 4 && rest > 0 && e[0] / rest >= 8.0;
}

static int h2_oom(const stf_tensor_info *w, stf_err *err)
{
    char shown[STF__NAME_SHOWN];
    return stf__err(err, STF_ENOMEM, "H2 probe of %s: out of memory",
                    stf__name_render(shown, sizeof shown, w->name, w->name_len));
}

/* The H2 evidence (see check.h); the check profile reports it, callers may act on it. */
int stf_probe_h2(stf_h2_result *out, const stf_ckpt *c, const stf_model *m, const stf_layer *l,
                 stf_err *err)
{
    size_t g = h2_begin(out, m, l);
    if (!g) return 0;
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    double *e = stf__calloc(g, sizeof *e);
    if (!e) return h2_oom(w, err);
    stf__scan_req req = { .h2_group = g };
    int rc = stf__probe_scan(c, (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT), w, &req, NULL, e, err);
    if (!rc) h2_finish(out, e, g, w->shape[0]);
    stf__free(e);
    return rc;
}

/* --------------------------------------------------------- one layer */

/* Contract in probes.h: the scales in slot order, then N3, or H1 and H2
 * from one scan of the weight. */
int stf__probe_layer(stf__layer_probe *out, const stf_ckpt *c, const stf_model *m,
                     const stf_layer *l, double tau, stf_err *err)
{
    memset(out, 0, sizeof *out);
    for (unsigned j = 0; j < STF__PROBE_SCALES; j++) {
        int64_t ti = stf_layer_tensor(l, stf__probe_scale_suffix(j));
        if (ti < 0) continue;
        int rc = probe_scale(&out->scale[j], c, (size_t)ti, err);
        if (rc) return rc;
    }
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    if (w && !w->nelem) {
        out->empty = 1;
        return 0;
    }
    const char *fmt = stf__chk_format(stf__chk_marker(l));
    int int8 = fmt && !strcmp(fmt, "int8_tensorwise");
    if (!int8 && !(fmt && !strcmp(fmt, "convrot_w4a4"))) {
        /* FP8 codes: H1 where the shapes cannot place N scales, a square
         * weight (the plan reads its scales by the verdict). */
        const stf_tensor_info *s = w && is_fp8(w->dtype) ? h1_scale(m, l, w) : NULL;
        if (!s || w->rank != 2 || w->shape[0] != w->shape[1] || s->nelem != w->shape[0] ||
            s->nelem < 2)
            return 0;
        out->h1_run = 1;
        return stf__probe_h1_block(&out->h1, c, m, l, 0, tau, 0, err);
    }
    out->h1_run = 1;
    out->w4 = !int8;
    out->h1.verdict = STF_PROBE_UNKNOWN;
    size_t g = 0;
    if (int8) {
        out->h2_run = 1;
        g = h2_begin(&out->h2, m, l);
    }
    int h1 = h1_applies(m, l) && w->dtype == STF_I8;
    if (!h1 && !g) return 0;
    double *e = g ? stf__calloc(g, sizeof *e) : NULL;
    if (g && !e) return h2_oom(w, err);
    stf__h1_stat st;
    stf__scan_req req = { .h1 = h1, .w4 = out->w4, .sat = out->w4 ? 7 : 126, .h2_group = g };
    int rc = stf__probe_scan(c, (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT), w, &req, &st, e, err);
    if (!rc && h1)
        h1_finish(&out->h1, &st, w, stf_layer_tensor_info(m, l, STF_SFX_WEIGHT_SCALE), out->w4,
                  req.sat, tau);
    if (!rc && g) h2_finish(&out->h2, e, g, w->shape[0]);
    stf__free(e);
    return rc;
}
