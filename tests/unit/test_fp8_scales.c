/*
 * FP8 weights (F8_E4M3, F8_E5M2) with per-row and per-column scales
 * through plan and run (stfix-rules(5), requantize; stfix-convrot(7),
 * DEQUANTIZATION): exclude to F32 gives fl32(fp8(code) * s) for each
 * element's row or column scale, edge codes included; requantize gives the
 * bytes of the scalar reference (decode each row, then
 * stf_int8_quantize_rows) with every kernel variant, with and without
 * metrics, on threads and in column pieces of a wide row; a NaN or Inf
 * code stops requantize naming its row and column. A square layer's N
 * scales are read per column exactly when H1 on its codes says COLUMN
 * (stfix-defects(7), ROW AND COLUMN DETECTION).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quant_testutil.h"
#include "support/st_ckptfile.h"

/* How the scale of an [n, k] weight is stored. */
typedef enum shape_kind { S_N, S_N1, S_1N, S_1K, S_K } shape_kind;

static unsigned scale_shape(uint64_t *shape, shape_kind sk, uint64_t n, uint64_t k)
{
    switch (sk) {
    case S_N: shape[0] = n; return 1;
    case S_N1: shape[0] = n; shape[1] = 1; return 2;
    case S_1N: shape[0] = 1; shape[1] = n; return 2;
    case S_1K: shape[0] = 1; shape[1] = k; return 2;
    case S_K: shape[0] = k; return 1;
    }
    return 0;
}

static int per_col(shape_kind sk) { return sk == S_1K || sk == S_K; }

/* A layer "l": weight, scale and a marker naming fmt. */
typedef struct layer {
    stf_dtype dt;
    uint64_t n, k;
    const uint8_t *codes;
    const float *scales;
    shape_kind sk;
    const char *fmt;
    int col_square; /* N == K with N scales that belong to the columns */
} layer;

/* What one fix of the layer wrote: the weight's and the scale's bytes. */
typedef struct fixed {
    unsigned char *w, *s;
    size_t wlen, slen;
} fixed;

static void fixed_free(fixed *o)
{
    free(o->w);
    free(o->s);
    memset(o, 0, sizeof *o);
}

static unsigned char *read_tensor(const stf_ckpt *c, const char *name, size_t *len)
{
    size_t i;
    if (stf_ckpt_find(&i, c, name)) return NULL;
    const stf_tensor_info *t = stf_ckpt_tensor(c, i);
    unsigned char *b = malloc(t->nbytes ? t->nbytes : 1);
    assert_non_null(b);
    assert_int_equal(stf_ckpt_read(b, c, i, 0, t->nbytes, NULL), 0);
    *len = t->nbytes;
    return b;
}

/*
 * Plan the one-rule recipe `do: act` over the layer and run it with
 * max_mem (0: the default), metrics and `threads` (0: inline); the
 * output's l.weight and l.weight_scale into *o. Returns the plan's or the
 * run's code, with its message in *err.
 */
static int fix_layer(fixed *o, const layer *ly, const char *act, uint64_t max_mem, int metrics,
                     unsigned threads, stf_err *err)
{
    memset(o, 0, sizeof *o);
    char mk[96], recipe[256];
    snprintf(mk, sizeof mk, "{\"format\": \"%s\"}", ly->fmt);
    snprintf(recipe, sizeof recipe,
             "stfix: 1\ntarget: sglang\nrules:\n  - name: r\n    match: {prefix: l}\n"
             "    do: %s\n", act);
    st_tensor t[3] = {
        { "l.comfy_quant", STF_U8, 1, { strlen(mk) }, mk, strlen(mk) },
        { "l.weight", ly->dt, 2, { ly->n, ly->k }, ly->codes, (size_t)(ly->n * ly->k) },
        { "l.weight_scale", STF_F32, 0, { 0 }, ly->scales, 0 },
    };
    t[2].rank = scale_shape(t[2].shape, ly->sk, ly->n, ly->k);
    t[2].nbytes = (size_t)(per_col(ly->sk) ? ly->k : ly->n) * sizeof(float);
    st_ckfx f;
    st_ckfx_open(&f, t, 3, 0);
    stf_recipe *r = NULL;
    stf_plan *p = NULL;
    stf_pool *pool = NULL;
    assert_int_equal(stf_recipe_load_mem(&r, NULL, recipe, strlen(recipe), "r.yaml", err), 0);
    if (threads) assert_int_equal(stf_pool_new(&pool, threads, err), 0);
    stf_plan_opts po;
    stf_plan_opts_init(&po);
    po.pool = pool;
    int rc = stf_plan_build(&p, f.c, r, &po, err);
    if (!rc) {
        stf_run_opts ro;
        stf_run_opts_init(&ro);
        ro.pool = pool;
        ro.error_metrics = metrics;
        if (max_mem) ro.max_mem = max_mem;
        char *out = st_path(f.dir, "out.safetensors");
        stf_run_report *rep = NULL;
        rc = stf_plan_run(&rep, p, out, &ro, err);
        if (!rc) {
            stf_ckpt *oc = NULL;
            assert_int_equal(stf_ckpt_open(&oc, out, NULL, err), 0);
            o->w = read_tensor(oc, "l.weight", &o->wlen);
            o->s = read_tensor(oc, "l.weight_scale", &o->slen);
            assert_non_null(o->w);
            stf_ckpt_free(oc);
        }
        stf_run_report_free(rep);
        free(out);
    }
    stf_plan_free(p);
    stf_recipe_free(r);
    stf_pool_free(pool);
    st_ckfx_close(&f);
    return rc;
}

/* The scale of element (row, col). */
static float scale_at(const layer *ly, uint64_t row, uint64_t col)
{
    return ly->scales[per_col(ly->sk) || ly->col_square ? col : row];
}

/* Bits of fl32(fp8(code) * s), the one NaN for every NaN. */
static uint32_t want_bits(uint8_t code, stf_dtype dt, float s)
{
    float v = stf_fp8_to_f32(code, dt) * s;
    return v != v ? 0x7FC00000u : qt_bits(v);
}

/* ------------------------------------------------------------ exclude */

enum { EN = 4, EK = 16 };

/* Rows of edge codes: NaN, Inf (E5M2) or the largest finite value, signed
 * zeros, subnormals, an all-zero row (+0 and -0), ordinary values. */
static const uint8_t E4_CODES[EN * EK] = {
    0x7F, 0xFF, 0x7E, 0xFE, 0x00, 0x80, 0x01, 0x81, 0x07, 0x87, 0x08, 0x38, 0xB8, 0x40, 0x3F, 0x77,
    0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x80, 0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x80, 0x00,
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x08, 0x88,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0x7E, 0xC4,
};
static const uint8_t E5_CODES[EN * EK] = {
    0x7C, 0xFC, 0x7D, 0xFE, 0x7B, 0xFB, 0x00, 0x80, 0x01, 0x81, 0x03, 0x04, 0x3C, 0xBC, 0x40, 0x7F,
    0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80,
    0x01, 0x02, 0x03, 0x81, 0x82, 0x83, 0x04, 0x84, 0x01, 0x02, 0x03, 0x81, 0x82, 0x83, 0x04, 0x84,
    0x38, 0x39, 0x3A, 0x3B, 0xB8, 0xB9, 0xBA, 0xBB, 0x44, 0x45, 0xC6, 0xC7, 0x7B, 0xFB, 0x3C, 0x3D,
};
static const float ROW_S[EN] = { 0.5f, 3.0f, 0.1f, -0.7f };
static const float COL_S[EK] = { 0.5f,  2.0f, 0.1f,  -0.7f, 3.0f, 1e-3f, 0.25f, 7.0f,
                                 0.01f, 1.5f, 0.33f, 1.0f,  4.0f, 0.2f,  9.0f,  0.125f };

/* Every element of exclude {dtype: F32} is fl32(fp8(code) * its scale). */
static void expect_exact(const layer *ly, const fixed *o)
{
    assert_int_equal(o->wlen, ly->n * ly->k * 4);
    assert_null(o->s);
    for (uint64_t r = 0; r < ly->n; r++)
        for (uint64_t c = 0; c < ly->k; c++) {
            uint32_t got;
            memcpy(&got, o->w + 4 * (r * ly->k + c), 4);
            assert_int_equal(got, want_bits(ly->codes[r * ly->k + c], ly->dt, scale_at(ly, r, c)));
        }
}

static uint32_t out_bits(const fixed *o, size_t i)
{
    uint32_t b;
    memcpy(&b, o->w + 4 * i, 4);
    return b;
}

static void test_exclude_exact(void **state)
{
    (void)state;
    static const shape_kind shapes[] = { S_N, S_N1, S_1N, S_1K, S_K };
    static const char *const fmts[] = { "float8_e4m3fn", "float8_e4m3fn_rowwise" };
    stf_err err;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int col = per_col(shapes[si]);
        /* E4M3 under both names; E5M2. */
        for (int fi = 0; fi < 3; fi++) {
            layer ly = { fi < 2 ? STF_F8_E4M3 : STF_F8_E5M2, EN, EK,
                         fi < 2 ? E4_CODES : E5_CODES, col ? COL_S : ROW_S, shapes[si],
                         fi < 2 ? fmts[fi] : "float8_e5m2", 0 };
            fixed o;
            int rc = fix_layer(&o, &ly, "{exclude: {dtype: F32}}", 0, 0, 0, &err);
            if (rc) fprintf(stderr, "exclude: %s\n", err.msg);
            assert_int_equal(rc, 0);
            expect_exact(&ly, &o);
            /* By hand, row 0 (scale 0.5) or columns 0..8 (0.5, 2, 0.1,
             * -0.7, 3, 1e-3, 0.25, 7, 0.01); row 1 (3, or 0.5 and 2):
             * the zeros keep their sign. */
            if (fi < 2) {
                assert_int_equal(out_bits(&o, 0), 0x7FC00000u);
                assert_int_equal(out_bits(&o, 1), 0x7FC00000u);
                assert_int_equal(out_bits(&o, 2), qt_bits(col ? 448.0f * 0.1f : 224.0f));
                assert_int_equal(out_bits(&o, 3), qt_bits(col ? 448.0f * 0.7f : -224.0f));
                assert_int_equal(out_bits(&o, 4), 0x00000000u);
                assert_int_equal(out_bits(&o, 5), 0x80000000u);
                assert_int_equal(out_bits(&o, 6), qt_bits(col ? 0x1p-11f : 0x1p-10f));
                assert_int_equal(out_bits(&o, 16), 0x00000000u);
                assert_int_equal(out_bits(&o, 17), 0x80000000u);
            } else {
                assert_int_equal(out_bits(&o, 0), 0x7F800000u);
                assert_int_equal(out_bits(&o, 1), 0xFF800000u);
                assert_int_equal(out_bits(&o, 2), 0x7FC00000u);
                assert_int_equal(out_bits(&o, 3), 0x7FC00000u);
                assert_int_equal(out_bits(&o, 4), qt_bits(col ? 172032.0f : 28672.0f));
                assert_int_equal(out_bits(&o, 6), 0x00000000u);
                assert_int_equal(out_bits(&o, 7), 0x80000000u);
                assert_int_equal(out_bits(&o, 8), qt_bits(col ? 0x1p-16f * 0.01f : 0x1p-17f));
                assert_int_equal(out_bits(&o, 16), 0x80000000u);
                assert_int_equal(out_bits(&o, 17), 0x00000000u);
            }
            fixed_free(&o);
        }
    }
}

/* --------------------------------------------------------- requantize */

enum { RN = 6 };

/* n rows of k finite codes: each row reaches the largest magnitude once;
 * row 1 is all zeros (+0 and -0), row 2 holds signed zeros and
 * subnormals only. */
static void make_codes(uint8_t *q, stf_dtype dt, uint64_t n, uint64_t k, uint64_t seed)
{
    qt_rng g = { seed };
    uint8_t top = dt == STF_F8_E4M3 ? 0x7E : 0x7B, sub = dt == STF_F8_E4M3 ? 0x07 : 0x03;
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t c = 0; c < k; c++) {
            uint8_t v = (uint8_t)qt_next(&g);
            if (r == 1) v &= 0x80;
            else if (r == 2) v &= (uint8_t)(0x80 | sub);
            else if (dt == STF_F8_E4M3 && (v & 0x7F) == 0x7F) v ^= 1;
            else if (dt == STF_F8_E5M2 && (v & 0x7C) == 0x7C) v = (uint8_t)(v - 4);
            q[r * k + c] = v;
        }
    for (uint64_t r = 3; r < n; r++) q[r * k + (r * 37) % k] = (uint8_t)(top | (r % 2 ? 0x80 : 0));
}

/* The scalar reference: each row decoded with its scales (fl32 products),
 * then stf_int8_quantize_rows with requantize's defaults for K. */
static void reference(int8_t *q, float *s, const layer *ly)
{
    stf_err err;
    size_t n = (size_t)ly->n, k = (size_t)ly->k;
    float *x = malloc(n * k * sizeof *x);
    assert_non_null(x);
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < k; c++)
            x[r * k + c] = stf_fp8_to_f32(ly->codes[r * k + c], ly->dt) * scale_at(ly, r, c);
    unsigned g = k % 256 == 0 ? 256 : k % 64 == 0 ? 64 : 16;
    stf_int8_opts o = { g, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_simd_select(STF_SIMD_SCALAR, &err), 0);
    assert_int_equal(stf_int8_quantize_rows(q, s, x, STF_F32, n, k, &o, NULL, &err), 0);
    free(x);
}

static void test_requantize_equals_reference(void **state)
{
    (void)state;
    stf_simd was = stf_simd_active();
    static const uint64_t ks[] = { 256, 64, 48, 8192 };
    static const stf_simd simds[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    stf_err err;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        uint64_t k = ks[ki];
        uint8_t *codes = malloc((size_t)(RN * k));
        float *sc = malloc((size_t)k * sizeof *sc);
        int8_t *wq = malloc((size_t)(RN * k));
        float ws[RN];
        assert_true(codes && sc && wq);
        for (size_t c = 0; c < k; c++) sc[c] = 0.001f * (float)(1 + c % 13);
        for (int dti = 0; dti < 2; dti++) {
            stf_dtype dt = dti ? STF_F8_E5M2 : STF_F8_E4M3;
            make_codes(codes, dt, RN, k, 7 + ki);
            for (int col = 0; col < 2; col++) {
                layer ly = { dt, RN, k, codes, sc, col ? S_1K : (dti ? S_N1 : S_N),
                             dti ? "float8_e5m2" : "float8_e4m3fn_rowwise", 0 };
                reference(wq, ws, &ly);
                for (size_t vi = 0; vi < 3; vi++) {
                    if (!stf_simd_supported(simds[vi])) continue;
                    assert_int_equal(stf_simd_select(simds[vi], &err), 0);
                    /* Fused, with metrics (decode, then quantize), on 3
                     * threads; the 8192-wide rows also in column pieces. */
                    for (int path = 0; path < (k > 4096 ? 4 : 3); path++) {
                        fixed o;
                        int rc = fix_layer(&o, &ly, "requantize", path == 3 ? 65536 : 0,
                                           path == 1, path == 2 ? 3 : 0, &err);
                        if (rc) fprintf(stderr, "requantize: %s\n", err.msg);
                        assert_int_equal(rc, 0);
                        assert_int_equal(o.wlen, RN * k);
                        assert_int_equal(o.slen, sizeof ws);
                        assert_memory_equal(o.w, wq, (size_t)(RN * k));
                        assert_memory_equal(o.s, ws, sizeof ws);
                        fixed_free(&o);
                    }
                }
            }
        }
        free(codes);
        free(sc);
        free(wq);
    }
    assert_int_equal(stf_simd_select(was, &err), 0);
}

/* A NaN or Inf code cannot be quantized: the run names its row and column. */
static void test_requantize_nonfinite(void **state)
{
    (void)state;
    enum { K = 64 };
    static uint8_t codes[RN * K];
    static float sc[RN];
    for (size_t r = 0; r < RN; r++) sc[r] = 0.5f;
    stf_err err;
    for (int dti = 0; dti < 2; dti++) {
        stf_dtype dt = dti ? STF_F8_E5M2 : STF_F8_E4M3;
        make_codes(codes, dt, RN, K, 3);
        codes[4 * K + 9] = dti ? 0x7C : 0xFF; /* Inf (E5M2), NaN (E4M3) */
        layer ly = { dt, RN, K, codes, sc, S_N, dti ? "float8_e5m2" : "float8_e4m3fn", 0 };
        fixed o;
        assert_int_equal(fix_layer(&o, &ly, "requantize", 0, 0, 0, &err), STF_ENUMERIC);
        assert_non_null(strstr(err.msg, "requantize 'l.weight': row 4, column 9: non-finite"));
        fixed_free(&o);
    }
}

/* ------------------------------------------------- square layers: H1 */

enum { SQ = 64, SQ_TOP_ROWS = 8 };

/*
 * An SQ x SQ weight of finite codes below the largest one, where the
 * largest magnitude (either sign) sits once in each column, in the rows
 * 0..7 (cols: column-quantized), or once in each row, in the columns
 * 0..7 (the transpose: row-quantized). nonfinite: every row also holds
 * a NaN code (E5M2: Inf and NaN), which must not count as the largest.
 */
static void square_codes(uint8_t *q, stf_dtype dt, int cols, int nonfinite, uint64_t seed)
{
    qt_rng g = { seed };
    uint8_t top = dt == STF_F8_E4M3 ? 0x7E : 0x7B;
    for (size_t i = 0; i < SQ * SQ; i++) {
        uint8_t v = (uint8_t)qt_next(&g);
        if ((v & 0x7F) >= top) v = (uint8_t)(v & 0x80); /* +-0 instead */
        q[i] = v;
    }
    for (size_t j = 0; j < SQ; j++) {
        size_t r = cols ? j % SQ_TOP_ROWS : j, c = cols ? j : j % SQ_TOP_ROWS;
        q[r * SQ + c] = (uint8_t)(top | (j % 3 ? 0 : 0x80));
    }
    if (nonfinite)
        for (size_t r = 0; r < SQ; r++)
            q[r * SQ + (r * 5 + 11) % SQ] = dt == STF_F8_E4M3 ? (r % 2 ? 0xFF : 0x7F)
                                                              : (r % 2 ? 0xFC : 0x7D);
}

/* stf_probe_h1 on layer "l" of a square FP8 weight with an [N] scale. */
static void probe_square(stf_h1_result *h, stf_dtype dt, const uint8_t *codes, const float *sc)
{
    const char *mk = dt == STF_F8_E4M3 ? "{\"format\": \"float8_e4m3fn\"}"
                                       : "{\"format\": \"float8_e5m2\"}";
    st_tensor t[3] = {
        { "l.comfy_quant", STF_U8, 1, { strlen(mk) }, mk, strlen(mk) },
        { "l.weight", dt, 2, { SQ, SQ }, codes, SQ * SQ },
        { "l.weight_scale", STF_F32, 1, { SQ }, sc, SQ * sizeof(float) },
    };
    st_ckfx f;
    st_ckfx_open(&f, t, 3, 0);
    stf_model *m = NULL;
    stf_err err;
    assert_int_equal(stf_model_build(&m, f.c, &err), 0);
    assert_int_equal(stf_probe_h1(h, f.c, m, stf_model_layer(m, 0), 0, 0.99, &err), 0);
    stf_model_free(m);
    st_ckfx_close(&f);
}

/* H1 reads FP8 codes: the largest code in every column (and in 8 of 64
 * rows) is COLUMN, its transpose ROW; NaN and Inf codes count as 0. */
static void test_square_probe_verdicts(void **state)
{
    (void)state;
    static uint8_t codes[SQ * SQ];
    float sc[SQ];
    for (size_t i = 0; i < SQ; i++) sc[i] = 0.01f;
    for (int dti = 0; dti < 2; dti++) {
        stf_dtype dt = dti ? STF_F8_E5M2 : STF_F8_E4M3;
        for (int cols = 0; cols < 2; cols++)
            for (int nf = 0; nf < 2; nf++) {
                stf_h1_result h;
                square_codes(codes, dt, cols, nf, 11u + (unsigned)dti);
                probe_square(&h, dt, codes, sc);
                assert_int_equal(h.probed, 1);
                assert_int_equal(h.sat, dti ? 0x7Bu : 0x7Eu);
                assert_int_equal(h.verdict, cols ? STF_PROBE_COLUMN : STF_PROBE_ROW);
                assert_int_equal(h.rows_sat, cols ? SQ_TOP_ROWS : SQ);
                assert_int_equal(h.cols_sat, cols ? SQ : SQ_TOP_ROWS);
                assert_int_equal(h.rows_ne, SQ);
                assert_int_equal(h.cols_ne, SQ);
            }
        /* The largest code in every row and every column: AMBIGUOUS. */
        square_codes(codes, dt, 0, 0, 5);
        for (size_t j = 0; j < SQ; j++) codes[j * SQ + (j * 7 + 3) % SQ] = dti ? 0xFB : 0x7E;
        stf_h1_result h;
        probe_square(&h, dt, codes, sc);
        assert_int_equal(h.verdict, STF_PROBE_AMBIGUOUS);
    }
}

/* Exclude and requantize read a column-quantized square layer's N scales
 * per column, a row-quantized one's per row. */
static void test_square_decode_by_probe(void **state)
{
    (void)state;
    static uint8_t codes[SQ * SQ];
    static int8_t wq[SQ * SQ];
    float sc[SQ], ws[SQ];
    stf_err err;
    for (size_t i = 0; i < SQ; i++) sc[i] = 0.001f * (float)(1 + (i * 7) % 13);
    for (int dti = 0; dti < 2; dti++) {
        stf_dtype dt = dti ? STF_F8_E5M2 : STF_F8_E4M3;
        for (int cols = 0; cols < 2; cols++) {
            square_codes(codes, dt, cols, 0, 21u + (unsigned)dti);
            layer ly = { dt, SQ, SQ, codes, sc, dti ? S_N1 : S_N,
                         dti ? "float8_e5m2" : "float8_e4m3fn", cols };
            fixed o;
            int rc = fix_layer(&o, &ly, "{exclude: {dtype: F32}}", 0, 0, 0, &err);
            if (rc) fprintf(stderr, "exclude: %s\n", err.msg);
            assert_int_equal(rc, 0);
            expect_exact(&ly, &o);
            /* Row 1, column 0 by hand: its own column's or row's scale. */
            assert_int_equal(out_bits(&o, SQ),
                             want_bits(codes[SQ], dt, cols ? sc[0] : sc[1]));
            fixed_free(&o);
            reference(wq, ws, &ly);
            for (unsigned th = 0; th <= 2; th += 2) {
                rc = fix_layer(&o, &ly, "requantize", 0, 0, th, &err);
                if (rc) fprintf(stderr, "requantize: %s\n", err.msg);
                assert_int_equal(rc, 0);
                assert_memory_equal(o.w, wq, sizeof wq);
                assert_memory_equal(o.s, ws, sizeof ws);
                fixed_free(&o);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclude_exact),
        cmocka_unit_test(test_requantize_equals_reference),
        cmocka_unit_test(test_requantize_nonfinite),
        cmocka_unit_test(test_square_probe_verdicts),
        cmocka_unit_test(test_square_decode_by_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
