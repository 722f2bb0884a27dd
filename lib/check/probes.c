/*
 * Numeric probes (`--numeric`): the only part of a check that reads tensor
 * data beyond the markers. Each probe is a diagnostic:
 *   N1  non-finite scale values, N2  zero or negative scales;
 *   H1  row- versus column-quantization by the max|q| test (stfix-defects(7),
 *       ROW AND COLUMN DETECTION);
 *   H2  a Sylvester rather than a regular rotation on a ConvRot layer;
 *   N3  a weight with no elements (nothing to probe).
 * Weights are streamed row by row, so memory stays O(K) per layer.
 */
#include <math.h>
#include <string.h>

#include "check/check_internal.h"

#define ROW_CHUNK 4096 /* scale values converted per read */

static uint64_t abs_offset(stf__chk *k, const stf_tensor_info *t, uint64_t byte)
{
    return 8 + stf_ckpt_shard_header_len(k->c, t->shard) + t->begin + byte;
}

/* ------------------------------------------------------------- N1, N2 */

static void probe_scale(stf__chk *k, const stf_layer *l, size_t idx)
{
    const stf_tensor_info *t = stf_ckpt_tensor(k->c, idx);
    if (t->dtype != STF_F32 && t->dtype != STF_F16 && t->dtype != STF_BF16) return;
    size_t isz = stf_dtype_bits(t->dtype) / 8;
    unsigned char raw[ROW_CHUNK * 4];
    float v[ROW_CHUNK];
    uint64_t nonfinite = 0, nonpos = 0, first_nf = 0, first_np = 0;
    float nf_val = 0, np_val = 0;
    for (uint64_t at = 0; at < t->nelem && !k->rc; at += ROW_CHUNK) {
        size_t n = (size_t)(t->nelem - at < ROW_CHUNK ? t->nelem - at : ROW_CHUNK);
        int rc = stf_ckpt_read(k->c, idx, at * isz, raw, n * isz, k->err);
        if (!rc) rc = stf_convert_to_f32(v, raw, t->dtype, n, k->err);
        if (rc) {
            stf__chk_fail(k, rc);
            return;
        }
        for (size_t j = 0; j < n; j++) {
            if (!isfinite(v[j])) {
                if (!nonfinite++) { first_nf = at + j; nf_val = v[j]; }
            } else if (v[j] <= 0.0f) {
                if (!nonpos++) { first_np = at + j; np_val = v[j]; }
            }
        }
    }
    if (nonfinite)
        stf__chk_add(k, "N1", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize the layer from its source weights",
                     "%s: %llu non-finite scale value(s), first %g at element %llu (byte offset "
                     "%llu of %s)", stf__chk_name(k, t->name, t->name_len),
                     (unsigned long long)nonfinite, (double)nf_val,
                     (unsigned long long)first_nf,
                     (unsigned long long)abs_offset(k, t, first_nf * isz),
                     stf_ckpt_shard_path(k->c, t->shard));
    if (nonpos)
        stf__chk_add(k, "N2", STF_SEV_ERROR, l->prefix, l->prefix_len,
                     "requantize the layer; a scale must be positive (kitchen clamps to 1e-10)",
                     "%s: %llu zero or negative scale value(s), first %g at element %llu (byte "
                     "offset %llu of %s)", stf__chk_name(k, t->name, t->name_len),
                     (unsigned long long)nonpos, (double)np_val,
                     (unsigned long long)first_np,
                     (unsigned long long)abs_offset(k, t, first_np * isz),
                     stf_ckpt_shard_path(k->c, t->shard));
}

/* ------------------------------------------------------------------ H1 */

typedef struct h1_stat {
    uint64_t rows_ne, rows_sat, cols_ne, cols_sat;
    uint64_t blk_ne[4], blk_sat[4];  /* b = 32, 64, 128, 256 */
    int any_sat;
} h1_stat;

/* Scan codes row by row; w4 != 0 unpacks two signed nibbles per byte. */
static int h1_scan(const stf_ckpt *c, size_t wi, const stf_tensor_info *w, int w4, unsigned sat,
                   h1_stat *st, stf_err *err)
{
    uint64_t n = w->shape[0], kb = w->shape[1], kk = w4 ? 2 * kb : kb;
    size_t nb32 = (size_t)((kk + 31) / 32);
    unsigned char *row = stf__malloc((size_t)kb ? (size_t)kb : 1);
    unsigned char *mc = stf__calloc((size_t)kk ? (size_t)kk : 1, 1);
    unsigned char *blkall = stf__calloc(((size_t)((n + 31) / 32)) * (nb32 ? nb32 : 1) + 1, 1);
    int rc = 0;
    memset(st, 0, sizeof *st);
    if (!row || !mc || !blkall) {
        char shown[STF__NAME_SHOWN];
        rc = stf__err(err, STF_ENOMEM, "H1 probe of %s: out of memory",
                      stf__name_render(shown, sizeof shown, w->name, w->name_len));
        goto done;
    }
    for (uint64_t r = 0; r < n; r++) {
        rc = stf_ckpt_read(c, wi, r * kb, row, (size_t)kb, err);
        if (rc) goto done;
        unsigned mr = 0;
        for (uint64_t col = 0; col < kk; col++) {
            int q;
            if (w4) {
                unsigned b = row[col / 2];
                unsigned nib = (col % 2) ? (b >> 4) & 0xF : b & 0xF;
                q = nib >= 8 ? (int)nib - 16 : (int)nib;
            } else {
                q = (int)(signed char)row[col];
            }
            unsigned a = (unsigned)(q < 0 ? -q : q);
            if (a > mr) mr = a;
            if (a > mc[col]) mc[col] = (unsigned char)a;
            unsigned char *bp = &blkall[(size_t)(r / 32) * nb32 + (size_t)(col / 32)];
            if (a > *bp) *bp = (unsigned char)a;
        }
        if (mr) {
            st->rows_ne++;
            if (mr >= sat) st->rows_sat++;
        }
    }
    for (uint64_t col = 0; col < kk; col++) {
        if (!mc[col]) continue;
        st->cols_ne++;
        if (mc[col] >= sat) {
            st->cols_sat++;
            st->any_sat = 1;
        }
    }
    if (st->rows_sat) st->any_sat = 1;
    /* Blocks of b = 32 << j are maxima over (b/32)^2 aligned 32-blocks. */
    size_t nbr = (size_t)((n + 31) / 32);
    for (unsigned j = 0; j < 4; j++) {
        size_t f = (size_t)1 << j;
        for (size_t br = 0; br < nbr; br += f)
            for (size_t bc = 0; bc < nb32; bc += f) {
                unsigned mx = 0;
                for (size_t a = br; a < br + f && a < nbr; a++)
                    for (size_t b = bc; b < bc + f && b < nb32; b++)
                        if (blkall[a * nb32 + b] > mx) mx = blkall[a * nb32 + b];
                if (!mx) continue;
                st->blk_ne[j]++;
                if (mx >= sat) st->blk_sat[j]++;
            }
    }
done:
    stf__free(row);
    stf__free(mc);
    stf__free(blkall);
    return rc;
}

static double frac(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

/*
 * The one H1 implementation: the check profile reports it, the plan acts on
 * it (reshape-scale, transpose-scale, requantize's column decode).
 */
int stf_probe_h1(stf_h1_result *out, const stf_ckpt *c, const stf_model *m, const stf_layer *l,
                 int w4, double tau, stf_err *err)
{
    memset(out, 0, sizeof *out);
    out->verdict = STF_PROBE_UNKNOWN;
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *s = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT_SCALE);
    /* A weight with no elements has no data to probe (and its other
     * dimension, with nothing behind it, must not size a loop). */
    if (!w || w->dtype != STF_I8 || w->rank != 2 || !s || w->nelem == 0) return 0;
    h1_stat st;
    unsigned sat = w4 ? 7 : 126;
    int rc = h1_scan(c, (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT), w, w4, sat, &st, err);
    if (rc) return rc;
    if (tau <= 0) tau = 0.99;
    uint64_t n = w->shape[0], kk = w4 ? 2 * w->shape[1] : w->shape[1];
    double fr = frac(st.rows_sat, st.rows_ne), fc = frac(st.cols_sat, st.cols_ne);
    stf_probe_verdict v;
    if (fr >= tau && fc < tau) v = STF_PROBE_ROW;
    else if (fr < tau && fc >= tau) v = STF_PROBE_COLUMN;
    else if (fr >= tau && fc >= tau)
        v = n == kk ? STF_PROBE_AMBIGUOUS
            : s->nelem == n ? STF_PROBE_ROW
            : s->nelem == kk ? STF_PROBE_COLUMN : STF_PROBE_AMBIGUOUS;
    else if (s->nelem == 1 && st.any_sat) v = STF_PROBE_TENSOR;
    else {
        v = STF_PROBE_UNKNOWN;
        for (unsigned j = 0; j < 4; j++)
            if (st.blk_ne[j] && frac(st.blk_sat[j], st.blk_ne[j]) >= tau) {
                v = STF_PROBE_BLOCK;
                break;
            }
    }
    out->probed = 1;
    out->verdict = v;
    out->fr = fr;
    out->fc = fc;
    out->rows_ne = st.rows_ne;
    out->rows_sat = st.rows_sat;
    out->cols_ne = st.cols_ne;
    out->cols_sat = st.cols_sat;
    out->sat = sat;
    return 0;
}

static void probe_h1(stf__chk *k, const stf_layer *l, int w4)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    const stf_tensor_info *s = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT_SCALE);
    stf_h1_result h;
    int rc = stf_probe_h1(&h, k->c, k->m, l, w4, k->o->tau, k->err);
    if (rc) {
        stf__chk_fail(k, rc);
        return;
    }
    if (!h.probed) return;
    uint64_t n = w->shape[0];
    const char *verdict = stf_probe_verdict_name(h.verdict);
    uint64_t want2[2] = { n, 1 };
    int canonical = w4 ? stf__chk_shape_is(s, 1, &n) : stf__chk_shape_is(s, 2, want2);
    stf_severity sev = STF_SEV_WARNING;
    const char *fix = "report only; decide with a recipe rule";
    if (h.verdict == STF_PROBE_ROW && s->nelem == n) {
        sev = canonical ? STF_SEV_INFO : STF_SEV_WARNING;
        fix = canonical ? "none" : w4 ? "header-only reshape of the scale to (N,)"
                                      : "header-only reshape of the scale to (N, 1)";
    } else if (h.verdict == STF_PROBE_COLUMN) {
        sev = STF_SEV_ERROR;
        fix = "requantize rowwise: dequantize with the column scales, un-rotate, quantize per row";
    } else if (h.verdict == STF_PROBE_TENSOR) {
        sev = STF_SEV_INFO;
        fix = "none for ComfyUI; requantize rowwise for SGLang";
    }
    stf__chk_add(k, "H1", sev, l->prefix, l->prefix_len, fix,
                 "%s quantization in %s: %.1f%% of %llu non-empty rows and %.1f%% of %llu "
                 "non-empty columns reach |q| >= %u; weight %s, scale %s", verdict,
                 stf__chk_name(k, w->name, w->name_len),
                 100.0 * h.fr, (unsigned long long)h.rows_ne, 100.0 * h.fc,
                 (unsigned long long)h.cols_ne, h.sat, stf__chk_shape(k, w), stf__chk_shape(k, s));
}

/* ------------------------------------------------------------------ H2 */

/*
 * A Sylvester matrix has an all-ones first row, so it moves each group's
 * mean into position 0 of the group; the regular ConvRot matrix has every
 * row summing to sqrt(G) and spreads it evenly. Position 0 carrying far
 * more energy than the other positions is therefore evidence of Sylvester.
 * With zero-mean groups the data cannot tell; then nothing is reported.
 */
/* The H2 evidence (see check.h); the check profile reports it, callers may act on it. */
int stf_probe_h2(stf_h2_result *out, const stf_ckpt *c, const stf_model *m, const stf_layer *l,
                 stf_err *err)
{
    memset(out, 0, sizeof *out);
    const stf_pyval *mk = stf__chk_marker(l);
    const stf_tensor_info *w = stf_layer_tensor_info(m, l, STF_SFX_WEIGHT);
    int64_t g = 0;
    if (!mk || !stf_pyval_truthy(stf_pyval_get(mk, "convrot"))) return 0;
    if (stf_pyval_pyint(&g, stf_pyval_get(mk, "convrot_groupsize"), NULL) || g < 2) return 0;
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
    uint64_t n = w->shape[0], kk = w->shape[1];
    double *e = stf__calloc((size_t)g, sizeof *e);
    signed char *row = stf__malloc((size_t)kk ? (size_t)kk : 1);
    int rc = 0;
    if (!e || !row) {
        char shown[STF__NAME_SHOWN];
        rc = stf__err(err, STF_ENOMEM, "H2 probe of %s: out of memory",
                      stf__name_render(shown, sizeof shown, w->name, w->name_len));
        goto done;
    }
    for (uint64_t r = 0; r < n; r++) {
        rc = stf_ckpt_read(c, (size_t)stf_layer_tensor(l, STF_SFX_WEIGHT), r * kk, row,
                           (size_t)kk, err);
        if (rc) goto done;
        /* Energy relative to the row's own peak, so per-row scales cancel. */
        int peak = 1;
        for (uint64_t col = 0; col < kk; col++) {
            int a = row[col] < 0 ? -row[col] : row[col];
            if (a > peak) peak = a;
        }
        for (uint64_t col = 0; col < kk; col++) {
            double v = (double)row[col] / peak;
            e[col % (uint64_t)g] += v * v;
        }
    }
    double rest = 0;
    for (int64_t j = 1; j < g; j++) rest += e[j];
    rest /= (double)(g - 1);
    out->probed = 1;
    out->ratio = rest > 0 ? e[0] / rest : 0.0;
    out->evidence = n >= 4 && rest > 0 && e[0] / rest >= 8.0;
done:
    stf__free(e);
    stf__free(row);
    return rc;
}

/*
 * A Sylvester matrix has an all-ones first row, so it moves each group's
 * mean into position 0 of the group; the regular ConvRot matrix has every
 * row summing to sqrt(G) and spreads it evenly. Position 0 carrying far
 * more energy than the other positions is therefore evidence of Sylvester.
 * With zero-mean groups the data cannot tell; then nothing is reported.
 */
static void probe_h2(stf__chk *k, const stf_layer *l)
{
    stf_h2_result h;
    int rc = stf_probe_h2(&h, k->c, k->m, l, k->err);
    if (rc) {
        stf__chk_fail(k, rc);
        return;
    }
    if (h.declared_sylvester)
        stf__chk_add(k, "H2", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "undo with the Sylvester matrix (sylvester-rotation) and requantize with a "
                     "regular G",
                     "Layer %s declares convrot_groupsize %lld, a power of 2 but not of 4: the "
                     "exporter's fallback rotated it with a Sylvester matrix", stf__chk_layer(k, l),
                     (long long)h.group);
    else if (h.evidence)
        stf__chk_add(k, "H2", STF_SEV_WARNING, l->prefix, l->prefix_len,
                     "confirm with the producer; if Sylvester, undo it (sylvester-rotation) and "
                     "requantize",
                     "Layer %s: position 0 of each ConvRot group holds %.1fx the mean energy of the "
                     "other positions, evidence of a Sylvester rather than a regular rotation",
                     stf__chk_layer(k, l), h.ratio);
}

/* ------------------------------------------------------------------ N3 */

/*
 * A weight with no elements: N or K is 0, so the other dimension is only a
 * number in the header. Nothing is probed, and fix copies such a layer
 * unchanged instead of requantizing or dequantizing it. Returns 1 then.
 */
static int probe_empty(stf__chk *k, const stf_layer *l)
{
    const stf_tensor_info *w = stf_layer_tensor_info(k->m, l, STF_SFX_WEIGHT);
    if (!w || w->nelem) return 0;
    stf__chk_add(k, "N3", STF_SEV_WARNING, l->prefix, l->prefix_len,
                 "re-export the layer with its weights, or drop it",
                 "%s %s %s has no elements: nothing to probe, and fix copies the layer "
                 "unchanged", stf__chk_name(k, w->name, w->name_len), stf_dtype_name(w->dtype),
                 stf__chk_shape(k, w));
    return 1;
}

/*
 * The numeric profile: N1/N2 over every scale tensor, H1 on INT8 and W4A4
 * layers, H2 on INT8 ConvRot layers, N3 instead of H1/H2 on a layer whose
 * weight has no elements. Returns 0 or the sticky k->rc.
 */
int stf__check_numeric(stf__chk *k)
{
    static const stf_suffix scales[] = { STF_SFX_WEIGHT_SCALE, STF_SFX_INPUT_SCALE,
                                         STF_SFX_WEIGHT_SCALE_2, STF_SFX_WEIGHT_S_CHANNEL };
    k->profile = "numeric";
    size_t nl = stf_model_layer_count(k->m);
    for (size_t i = 0; i < nl && !k->rc; i++) {
        const stf_layer *l = stf_model_layer(k->m, i);
        for (size_t j = 0; j < sizeof scales / sizeof scales[0] && !k->rc; j++) {
            if (stf_layer_tensor(l, scales[j]) >= 0)
                probe_scale(k, l, (size_t)stf_layer_tensor(l, scales[j]));
        }
        if (k->rc || probe_empty(k, l)) continue;
        const stf_pyval *mk = stf__chk_marker(l);
        const char *fmt = stf__chk_format(mk);
        if (!fmt) continue;
        if (!strcmp(fmt, "int8_tensorwise")) {
            probe_h1(k, l, 0);
            if (!k->rc) probe_h2(k, l);
        } else if (!strcmp(fmt, "convrot_w4a4")) {
            probe_h1(k, l, 1);
        }
    }
    return k->rc;
}
