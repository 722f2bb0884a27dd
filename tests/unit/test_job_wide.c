/*
 * lib/pipeline/job_wide.c: rows too wide for the cap run in column pieces
 * and give the bytes, scales, metrics and errors of the blocks of whole
 * rows, for every job kind and decode, inline or on a pool, in memory or read,
 * while the runner's buffers stay within the cap. Also the row a NaN is
 * reported at, and the refusal of a weight with no elements.
 */
#include "job_testutil.h"
#include "quant_testutil.h"
#include "support/st_ckptfile.h"

enum { N = 3, K = 3 * 4096 + 1024 };

/* The smallest cap that still holds one piece of STF__WIDE_UNIT columns. */
#define CAP1 ((uint64_t)STF__JOB_COL_BYTES * STF__WIDE_UNIT)

static void randn_vals(float *v, size_t n, double mag, uint64_t seed)
{
    qt_rng r = { seed };
    for (size_t i = 0; i < n; i++) v[i] = (float)(qt_randn(&r) * mag);
}

/*
 * Run j in blocks of whole rows (default cap, inline), then in pieces of
 * 4096 columns inline and of 8192 on a pool of 3: the same bytes and the
 * same metrics; the runner's buffers never exceed the cap.
 */
static void expect_pieces_match(const stf_ckpt *c, const stf__job *j, size_t wbytes, size_t sbytes)
{
    stf_pool *pool;
    stf_err err;
    assert_int_equal(stf_pool_new(&pool, 3, &err), 0);
    sink want;
    sink_init(&want, wbytes, sbytes);
    stf_metrics_result mw;
    assert_int_equal(run_job(&want, c, j, 0, NULL, &mw, &err), 0);
    const uint64_t caps[2] = { CAP1, 2 * CAP1 };
    const size_t pcs[2] = { 4096, 8192 };
    for (int ci = 0; ci < 2; ci++) {
        stf__jobrun jr;
        sink got;
        sink_init(&got, wbytes, sbytes);
        stf__jobrun_init(&jr, c, ci ? pool : NULL, caps[ci], sink_emit, &got);
        assert_int_equal(stf__job_piece_cols(&jr, j), pcs[ci]);
        stf_metrics_result mg;
        if (stf__job_exec(&jr, j, &mg, &err)) fail_msg("%s", err.msg);
        assert_true(jr.raw_cap + jr.ref_cap + jr.test_cap + jr.out_cap + jr.wide_cap +
                        jr.scale_cap + jr.rowm_cap <= caps[ci]);
        stf__jobrun_fini(&jr);
        assert_memory_equal(got.buf[0], want.buf[0], wbytes);
        if (sbytes) assert_memory_equal(got.buf[1], want.buf[1], sbytes);
        assert_memory_equal(&mg, &mw, sizeof mg);
        /* Every piece is its own emission: 4 (or 2) per row, plus the scale. */
        assert_int_equal(got.calls, N * ((ci ? 2u : 4u) + (sbytes ? 1u : 0u)));
        sink_free(&got);
    }
    sink_free(&want);
    stf_pool_free(pool);
}

/* BF16 straight into INT8 ConvRot, in memory and read; and into W4A4 from F32. */
static void test_direct_sources(void **state)
{
    (void)state;
    static float v[N * K];
    static uint16_t b[N * K];
    randn_vals(v, N * K, 0.03, 1);
    v[K + 77] = 9.0f; /* an outlier decides row 1's scale from its first piece */
    for (size_t i = 0; i < N * K; i++) b[i] = stf_f32_to_bf16(v[i]);
    for (int nm = 0; nm < 2; nm++) {
        st_tensor t[] = { { "l.weight", STF_BF16, 2, { N, K }, b, sizeof b } };
        st_ckfx f;
        st_ckfx_open(&f, t, 1, nm);
        stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, N, K, 256, STF_QMODE_CUDA);
        expect_pieces_match(f.c, &j, N * K, N * 4);
        j.mode = STF_QMODE_EAGER;
        expect_pieces_match(f.c, &j, N * K, N * 4);
        st_ckfx_close(&f);
    }
    st_tensor t[] = { { "l.weight", STF_F32, 2, { N, K }, v, sizeof v } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 1);
    stf__job j = float_job(f.c, STF__JOB_REQUANT_W4A4, STF_F32, N, K, 64, STF_QMODE_CUDA);
    expect_pieces_match(f.c, &j, N * K / 2, N * 4);
    j.mode = STF_QMODE_EAGER;
    j.t = STF_BF16; /* through decoded f32 pieces, rounded to BF16 */
    expect_pieces_match(f.c, &j, N * K / 2, N * 4);
    j.t = STF_F32;
    j.kind = STF__JOB_DEQUANT; /* F32 -> F16: a decode of float pieces */
    j.out_dtype = STF_F16;
    expect_pieces_match(f.c, &j, N * K * 2, 0);
    st_ckfx_close(&f);
}

/* INT8 codes with row, column and grouped scales, rotated or not, requantized and dequantized. */
static void test_int8_decodes(void **state)
{
    (void)state;
    static int8_t q[N * K];
    static float srow[N], scol[K], sgrp[N * 13];
    qt_rng r = { 3 };
    for (size_t i = 0; i < N * K; i++) q[i] = (int8_t)((int)(qt_next(&r) % 255u) - 127);
    for (size_t i = 0; i < N; i++) srow[i] = (float)(0.001 + 0.01 * qt_unif(&r));
    for (size_t i = 0; i < K; i++) scol[i] = (float)(0.001 + 0.01 * qt_unif(&r));
    for (size_t i = 0; i < N * 13; i++) sgrp[i] = (float)(0.001 + 0.01 * qt_unif(&r));
    struct {
        stf_scale_axis axis;
        const float *s;
        unsigned rank;
        uint64_t shape[2];
        size_t bytes;
        uint64_t groups;
        unsigned rot;
        int syl;
    } cases[] = {
        { STF_SCALE_ROW, srow, 2, { N, 1 }, sizeof srow, 0, 256, 0 },
        { STF_SCALE_ROW, srow, 2, { N, 1 }, sizeof srow, 0, 512, 1 },
        { STF_SCALE_COL, scol, 1, { K }, sizeof scol, 0, 0, 0 },
        { STF_SCALE_ROW, sgrp, 2, { N, 13 }, sizeof sgrp, 13, 1024, 0 }, /* K/13 = 1024 */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        st_tensor t[] = { { "l.weight", STF_I8, 2, { N, K }, q, sizeof q },
                          { "l.weight_scale", STF_F32, cases[ci].rank,
                            { cases[ci].shape[0], cases[ci].shape[1] }, cases[ci].s,
                            cases[ci].bytes } };
        st_ckfx f;
        st_ckfx_open(&f, t, 2, (int)(ci % 2));
        stf__job j = scaled_job(f.c, STF__JOB_REQUANT_INT8, STF__DEC_INT8, STF_I8, cases[ci].axis,
                                N, K, 64);
        j.dec.groups = cases[ci].groups;
        j.dec.rot_group = cases[ci].rot;
        j.dec.sylvester = cases[ci].syl;
        expect_pieces_match(f.c, &j, N * K, N * 4);
        j.kind = STF__JOB_DEQUANT;
        j.out_dtype = STF_F32;
        expect_pieces_match(f.c, &j, N * K * 4, 0);
        st_ckfx_close(&f);
    }
}

/* W4A4 codes (the kernel's regular path and the Sylvester fallback) and FP8. */
static void test_w4a4_and_fp8_decodes(void **state)
{
    (void)state;
    static int8_t p[N * K / 2];
    static uint8_t e4[N * K];
    static float s[N];
    qt_rng r = { 5 };
    for (size_t i = 0; i < sizeof p; i++) {
        unsigned lo = (unsigned)(qt_next(&r) % 15u), hi = (unsigned)(qt_next(&r) % 15u);
        p[i] = (int8_t)(uint8_t)(((lo + 9u) & 0xFu) | (((hi + 9u) & 0xFu) << 4)); /* no -8 */
    }
    for (size_t i = 0; i < sizeof e4; i++) e4[i] = (uint8_t)(qt_next(&r) % 0x7Eu);
    for (size_t i = 0; i < N; i++) s[i] = (float)(0.01 + qt_unif(&r));
    for (int syl = 0; syl < 2; syl++) {
        st_tensor t[] = { { "l.weight", STF_I8, 2, { N, K / 2 }, p, sizeof p },
                          { "l.weight_scale", STF_F32, 1, { N }, s, sizeof s } };
        st_ckfx f;
        st_ckfx_open(&f, t, 2, 1);
        stf__job j = scaled_job(f.c, STF__JOB_REQUANT_W4A4, STF__DEC_W4A4, STF_I8, STF_SCALE_ROW, N,
                                K, 64);
        j.dec.rot_group = syl ? 32 : 64;
        j.dec.sylvester = syl;
        j.group = 256;
        expect_pieces_match(f.c, &j, N * K / 2, N * 4);
        j.kind = STF__JOB_DEQUANT;
        j.out_dtype = STF_F32;
        expect_pieces_match(f.c, &j, N * K * 4, 0);
        st_ckfx_close(&f);
    }
    st_tensor t[] = { { "l.weight", STF_F8_E4M3, 2, { N, K }, e4, sizeof e4 },
                      { "l.weight_scale", STF_F32, 0, { 0 }, s, 4 } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf__job j = scaled_job(f.c, STF__JOB_DEQUANT, STF__DEC_FP8, STF_F8_E4M3, STF_SCALE_TENSOR, N, K,
                            64);
    j.out_dtype = STF_F32;
    expect_pieces_match(f.c, &j, N * K * 4, 0);
    j.kind = STF__JOB_REQUANT_INT8;
    expect_pieces_match(f.c, &j, N * K, N * 4);
    st_ckfx_close(&f);
}

/*
 * A NaN is named by the layer's row and column, whichever pool chunk,
 * block or piece holds it: rows of 16384 BF16 columns make pool chunks of
 * 32 rows, so row 40 is row 8 of the second chunk.
 */
static void test_nonfinite_named_by_layer_row(void **state)
{
    (void)state;
    enum { RN = 64, RK = 16384 };
    uint16_t *w = malloc((size_t)RN * RK * 2);
    assert_non_null(w);
    for (size_t i = 0; i < (size_t)RN * RK; i++) w[i] = stf_f32_to_bf16((float)(i % 7) - 3.0f);
    w[(size_t)40 * RK + 5000] = 0x7F80; /* +Inf */
    w[(size_t)41 * RK + 3] = 0x7FC0;    /* a later NaN is not the one named */
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { RN, RK }, w, (size_t)RN * RK * 2 } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 1);
    stf_pool *pool;
    stf_err err;
    assert_int_equal(stf_pool_new(&pool, 2, &err), 0);
    const stf__job_kind kinds[2] = { STF__JOB_REQUANT_INT8, STF__JOB_REQUANT_W4A4 };
    const uint64_t caps[3] = { 0, 0, CAP1 };
    stf_pool *pools[3] = { NULL, pool, pool };
    for (int ki = 0; ki < 2; ki++)
        for (int ci = 0; ci < 3; ci++) {
            stf__job j = float_job(f.c, kinds[ki], STF_BF16, RN, RK, 64, STF_QMODE_CUDA);
            sink s;
            sink_init(&s, (size_t)RN * RK, RN * 4);
            stf_err_clear(&err);
            assert_int_equal(run_job(&s, f.c, &j, caps[ci], pools[ci], NULL, &err), STF_ENUMERIC);
            assert_string_equal(err.msg, "requantize 'l.weight': row 40, column 5000: non-finite "
                                         "value (NaN or Inf) cannot be quantized");
            sink_free(&s);
        }
    stf_pool_free(pool);
    st_ckfx_close(&f);
    free(w);
}

/* The plan copies a weight with no elements; a job over one is refused before any work. */
static void test_empty_weight_refused(void **state)
{
    (void)state;
    const uint64_t shapes[2][2] = { { (uint64_t)1 << 40, 0 }, { 0, (uint64_t)1 << 47 } };
    const char *msgs[2] = {
        "run: weight 'l.weight' has no elements (1099511627776 x 0): nothing to requantize or "
        "dequantize",
        "run: weight 'l.weight' has no elements (0 x 140737488355328): nothing to requantize or "
        "dequantize",
    };
    for (int i = 0; i < 2; i++) {
        st_tensor t[] = { { "l.weight", STF_BF16, 2, { shapes[i][0], shapes[i][1] }, NULL, 0 } };
        st_ckfx f;
        st_ckfx_open(&f, t, 1, 1);
        stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, shapes[i][0], shapes[i][1],
                               256, STF_QMODE_CUDA);
        sink s;
        sink_init(&s, 0, 0);
        stf_err err;
        stf__jobrun jr;
        stf__jobrun_init(&jr, f.c, NULL, 0, sink_emit, &s);
        assert_int_equal(stf__job_exec(&jr, &j, NULL, &err), STF_EINVAL);
        assert_string_equal(err.msg, msgs[i]);
        assert_int_equal(s.calls, 0);
        assert_int_equal(jr.raw_cap + jr.out_cap + jr.scale_cap, 0);
        stf__jobrun_fini(&jr);
        sink_free(&s);
        st_ckfx_close(&f);
    }
}

/* When rows go in pieces: only a row that, with the quantizers' scratch of
 * every thread, does not fit max_mem (32 MiB when 0). */
static void test_piece_decision(void **state)
{
    (void)state;
    uint16_t w[2];
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { 1, 2 }, w, sizeof w } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 1);
    stf_pool *pool;
    stf_err err;
    assert_int_equal(stf_pool_new(&pool, 8, &err), 0);
    stf__jobrun jr;
    stf__jobrun_init(&jr, f.c, NULL, 0, NULL, NULL);
    /* 1 Mi columns: 11 bytes each plus a 4-byte scratch fits 32 MiB inline. */
    stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, 4, (uint64_t)1 << 20, 256,
                           STF_QMODE_CUDA);
    assert_int_equal(stf__job_piece_cols(&jr, &j), 0);
    assert_int_equal(stf__job_block_rows(&jr, &j), 2);
    /* Eight threads' scratch leaves no room for one row: pieces then, here
     * as wide as the row, since a piece needs no scratch per thread. */
    jr.pool = pool;
    assert_int_equal(stf__job_piece_cols(&jr, &j), (size_t)1 << 20);
    j.dec.k = (uint64_t)1 << 22;
    assert_int_equal(stf__job_piece_cols(&jr, &j), ((size_t)32 << 20) / 20 / 4096 * 4096);
    /* Under --max-mem 2GiB (the default) both rows fit the limit: whole rows,
     * one a block, since the threads' scratch fills the 32 MiB block cap. */
    jr.max_mem = (uint64_t)2 << 30;
    assert_int_equal(stf__job_piece_cols(&jr, &j), 0);
    assert_int_equal(stf__job_block_rows(&jr, &j), 1);
    j.dec.k = (uint64_t)1 << 20;
    assert_int_equal(stf__job_piece_cols(&jr, &j), 0);
    assert_int_equal(stf__job_block_rows(&jr, &j), 1);
    /* A row no wider than one unit never goes in pieces, whatever the limit. */
    jr.max_mem = 1;
    j.dec.k = STF__WIDE_UNIT;
    jr.pool = NULL;
    assert_int_equal(stf__job_piece_cols(&jr, &j), 0);
    assert_int_equal(stf__job_block_rows(&jr, &j), 1);
    j.dec.k = STF__WIDE_UNIT * 3;
    assert_int_equal(stf__job_piece_cols(&jr, &j), STF__WIDE_UNIT);
    /* A row whose byte counts would overflow 64 bits still gets pieces of the cap. */
    jr.max_mem = 0;
    j.dec.k = (uint64_t)1 << 62;
    assert_int_equal(stf__job_piece_cols(&jr, &j), ((size_t)32 << 20) / 20 / 4096 * 4096);
    assert_int_equal(stf__job_block_rows(&jr, &j), 1);
    stf__jobrun_fini(&jr);
    stf_pool_free(pool);
    st_ckfx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_sources),
        cmocka_unit_test(test_int8_decodes),
        cmocka_unit_test(test_w4a4_and_fp8_decodes),
        cmocka_unit_test(test_nonfinite_named_by_layer_row),
        cmocka_unit_test(test_empty_weight_refused),
        cmocka_unit_test(test_piece_decision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
