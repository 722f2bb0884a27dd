/*
 * The numeric half of stf_diff_run: each quantized or dequantized layer
 * present in both checkpoints decoded as exclude would decode it, and the
 * two f32 weights compared block of rows by block of rows (stfix-convrot(7),
 * ERROR METRICS), A the reference. Memory is bounded by the options'
 * max_mem: a row too wide for it goes in column pieces, the way fix takes
 * such a row (job_wide.c), with the same results as whole rows.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/diff_internal.h"

static int is_float(stf_dtype t) { return t == STF_BF16 || t == STF_F16 || t == STF_F32; }

/* Weight bytes (contract in diff_internal.h). */
uint64_t stf__diff_weight_bytes(const stf_model *m, size_t li)
{
    stf__layer_tmp lt;
    const stf_tensor_info *t =
        stf_layer_tensor_info(m, stf__model_layer_at(m, li, &lt), STF_SFX_WEIGHT);
    return t ? t->nbytes : 0;
}

/* Whether a layer is compared (contract in diff_internal.h). */
int stf__diff_numeric_wanted(size_t *ib, const stf_model *ma, size_t ia, const stf_model *mb)
{
    stf__layer_tmp at, bt;
    const stf_layer *la = stf__model_layer_at(ma, ia, &at), *lb;
    if (stf_model_find_layer(ib, mb, la->prefix, la->prefix_len)) return 0;
    lb = stf__model_layer_at(mb, *ib, &bt);
    const stf_tensor_info *wa = stf_layer_tensor_info(ma, la, STF_SFX_WEIGHT);
    const stf_tensor_info *wb = stf_layer_tensor_info(mb, lb, STF_SFX_WEIGHT);
    if (!wa || !wb) return 0;
    return la->comfy || lb->comfy || !is_float(wa->dtype) || !is_float(wb->dtype);
}

/* Record a layer that is not compared, and why. */
static int not_compared(stf_diff_numeric_info *r, stf_err *err, const char *fmt, const char *a,
                        const char *b)
{
    char msg[sizeof ((stf_err *)0)->msg + 64];
    snprintf(msg, sizeof msg, fmt, a, b);
    r->compared = 0;
    r->why = stf__strdup(msg);
    return r->why ? 0 : stf__err(err, STF_ENOMEM, "diff: out of memory");
}

/*
 * Columns per piece when one row of each side (two f32 rows and both
 * sides' bytes, `per_row`) does not fit max_mem and the row is wider than
 * STF__WIDE_UNIT: a multiple of it (at least one) within max_mem, as
 * stf__decoder_cols takes them. 0 when blocks of whole rows fit.
 */
static size_t piece_cols(const stf__decoder *da, const stf__decoder *db, uint64_t per_row,
                         uint64_t max_mem)
{
    uint64_t k = da->d.k;
    if (k <= STF__WIDE_UNIT || per_row <= max_mem) return 0;
    /* Per column: two f32 values and at most 4 input bytes a side. */
    uint64_t per_unit = (uint64_t)STF__WIDE_UNIT * 8 + stf__decoder_span_bytes(da, STF__WIDE_UNIT) +
                        stf__decoder_span_bytes(db, STF__WIDE_UNIT);
    uint64_t c = max_mem / per_unit * STF__WIDE_UNIT;
    if (c < STF__WIDE_UNIT) c = STF__WIDE_UNIT;
    return (size_t)(c < k ? c : k);
}

/* A comparison's buffers: `nf` f32 values of each side, and the input
 * bytes of a side read from a file (na, nb bytes; none for one in memory). */
typedef struct sides {
    float *fa, *fb;
    unsigned char *sa, *sb;
} sides;

static int sides_alloc(sides *s, const stf__decoder *da, const stf__decoder *db, size_t nf,
                       size_t na, size_t nb)
{
    s->fa = stf__malloc(nf * sizeof *s->fa);
    s->fb = stf__malloc(nf * sizeof *s->fb);
    s->sa = da->mem ? NULL : stf__malloc(na);
    s->sb = db->mem ? NULL : stf__malloc(nb);
    return s->fa && s->fb && (da->mem || s->sa) && (db->mem || s->sb) ? 0 : STF_ENOMEM;
}

static void sides_free(sides *s)
{
    stf__free(s->fa);
    stf__free(s->fb);
    stf__free(s->sa);
    stf__free(s->sb);
}

/*
 * Every row in column pieces of pc columns: each piece of A and of B
 * decoded (the values of the whole rows) and added to *m in column order,
 * so the sums and the first position of the maximum are those of the rows.
 */
static int compare_pieces(stf_metrics *m, const stf_diff_numeric_info *r, const stf__decoder *da,
                          const stf__decoder *db, size_t pc, const stf_diff_opts *o,
                          stf__diff_progress *pg, stf_err *err)
{
    uint64_t n = da->d.n, k = da->d.k;
    sides b;
    int rc = sides_alloc(&b, da, db, pc, (size_t)stf__decoder_span_bytes(da, pc),
                         (size_t)stf__decoder_span_bytes(db, pc));
    if (rc) rc = stf__err(err, STF_ENOMEM, "diff: out of memory for a piece of %zu columns", pc);
    for (uint64_t row = 0; row < n && !rc; row++) {
        for (uint64_t c0 = 0; c0 < k && !rc; c0 += pc) {
            size_t cols = (size_t)(k - c0 < pc ? k - c0 : pc);
            if ((rc = stf__decoder_cols(da, b.fa, row, c0, cols, b.sa, o->pool, err)) ||
                (rc = stf__decoder_cols(db, b.fb, row, c0, cols, b.sb, o->pool, err)))
                break;
            stf_metrics_add(m, b.fa, b.fb, cols, row, c0);
            uint64_t read = stf__decoder_span_bytes(da, cols) + stf__decoder_span_bytes(db, cols);
            stf__diff_tick(pg, read, r->prefix, r->prefix_len);
        }
    }
    sides_free(&b);
    return rc;
}

/* Decode both sides in blocks of rows (or a row too wide for max_mem in
 * column pieces) and accumulate B against A. */
static int compare(stf_diff_numeric_info *r, const stf__decoder *da, const stf__decoder *db,
                   const stf_diff_opts *o, stf__diff_progress *pg, stf_err *err)
{
    uint64_t n = da->d.n, k = da->d.k;
    size_t ra = da->row_bytes, rb = db->row_bytes;
    /* Per row: two f32 rows and the raw bytes of each side. */
    uint64_t per_row = 8 * k + ra + rb;
    stf_metrics m;
    stf_metrics_init(&m);
    size_t pc = n ? piece_cols(da, db, per_row, o->max_mem) : 0;
    int rc = 0;
    if (pc) {
        if ((rc = compare_pieces(&m, r, da, db, pc, o, pg, err))) return rc;
        stf_metrics_finish(&r->m, &m);
        r->compared = 1;
        return 0;
    }
    uint64_t rows = per_row ? o->max_mem / per_row : n;
    if (rows < 1) rows = 1;
    if (rows > n) rows = n;
    if (k && rows > SIZE_MAX / 8 / k) rows = SIZE_MAX / 8 / k;
    sides b = { NULL, NULL, NULL, NULL };
    if (n && k && sides_alloc(&b, da, db, (size_t)(rows * k), (size_t)rows * ra,
                              (size_t)rows * rb)) {
        rc = stf__err(err, STF_ENOMEM, "diff: out of memory for %llu rows of %llu columns",
                      (unsigned long long)rows, (unsigned long long)k);
        goto done;
    }
    for (uint64_t r0 = 0; r0 < n && k; r0 += rows) {
        uint64_t r1 = n - r0 < rows ? n : r0 + rows;
        if ((rc = stf__decoder_rows(da, b.fa, r0, r1, b.sa, o->pool, err)) ||
            (rc = stf__decoder_rows(db, b.fb, r0, r1, b.sb, o->pool, err)))
            goto done;
        for (uint64_t i = r0; i < r1; i++)
            stf_metrics_add(&m, b.fa + (i - r0) * k, b.fb + (i - r0) * k, (size_t)k, i, 0);
        stf__diff_tick(pg, (r1 - r0) * (ra + rb), r->prefix, r->prefix_len);
    }
    stf_metrics_finish(&r->m, &m);
    r->compared = 1;
done:
    sides_free(&b);
    return rc;
}

/* One layer: decode descriptors, shapes, then the comparison. */
static int one(stf_diff_numeric_info *r, const stf_model *ma, size_t ia, const stf_model *mb,
               size_t ib, const stf_diff_opts *o, stf__diff_progress *pg, stf_err *err)
{
    stf__decode xa, xb;
    stf__decoder da, db;
    memset(&da, 0, sizeof da);
    memset(&db, 0, sizeof db);
    stf_err e;
    stf_err_clear(&e);
    /* A layer stfix cannot decode is a result, not a failure of the diff. */
    if (stf__layer_decode(&xa, ma, ia, &e) || stf__decoder_open(&da, stf_model_ckpt(ma), &xa, &e))
        return e.code == STF_ENOMEM ? stf__err(err, STF_ENOMEM, "diff: out of memory")
                                    : not_compared(r, err, "A: %s%s", e.msg, "");
    int rc = 0;
    if (stf__layer_decode(&xb, mb, ib, &e) || stf__decoder_open(&db, stf_model_ckpt(mb), &xb, &e)) {
        rc = e.code == STF_ENOMEM ? stf__err(err, STF_ENOMEM, "diff: out of memory")
                                  : not_compared(r, err, "B: %s%s", e.msg, "");
    } else if (xa.n != xb.n || xa.k != xb.k) {
        char sa[48], sb[48];
        snprintf(sa, sizeof sa, "%llux%llu", (unsigned long long)xa.n, (unsigned long long)xa.k);
        snprintf(sb, sizeof sb, "%llux%llu", (unsigned long long)xb.n, (unsigned long long)xb.k);
        rc = not_compared(r, err, "the weights are %s in A and %s in B", sa, sb);
    } else {
        rc = compare(r, &da, &db, o, pg, err);
    }
    stf__decoder_close(&da);
    stf__decoder_close(&db);
    return rc;
}

/* Every wanted layer (contract in diff_internal.h). */
int stf__diff_numeric(stf_diff *d, const stf_model *ma, const stf_model *mb,
                      const stf_diff_opts *o, stf__diff_progress *pg, stf_err *err)
{
    for (size_t i = 0; i < stf_model_layer_count(ma); i++) {
        size_t j;
        if (!stf__diff_numeric_wanted(&j, ma, i, mb)) continue;
        if (d->nnumeric == d->ncap) {
            size_t nc = d->ncap ? 2 * d->ncap : 16;
            stf_diff_numeric_info *v = stf__realloc(d->numeric, nc * sizeof *v);
            if (!v) return stf__err(err, STF_ENOMEM, "diff: out of memory");
            d->numeric = v;
            d->ncap = nc;
        }
        stf__layer_tmp lt;
        const stf_layer *l = stf__model_layer_at(ma, i, &lt);
        stf_diff_numeric_info *r = &d->numeric[d->nnumeric++];
        memset(r, 0, sizeof *r);
        r->prefix = l->prefix;
        r->prefix_len = l->prefix_len;
        int rc = one(r, ma, i, mb, j, o, pg, err);
        if (rc) return rc;
        /* A layer not compared: its bytes count as done. */
        if (!r->compared)
            stf__diff_tick(pg, stf__diff_weight_bytes(ma, i) + stf__diff_weight_bytes(mb, j),
                           l->prefix, l->prefix_len);
    }
    return 0;
}
