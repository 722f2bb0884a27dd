/*
 * lib/pipeline/job.c: one layer job in row blocks. Golden vectors of
 * stfix-convrot(7), GOLDEN VECTORS through the direct BF16/F32 path, requantize
 * of a rowwise INT8 layer, dequantize to BF16, W4A4, metrics, and independence
 * from block size and thread count.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job_testutil.h"
#include "quant_testutil.h"
#include "support/st_ckptfile.h"

static const int8_t V1_Q[32] = { 127, 127, 127, -127, 127, 127, 127, -127, 127, 127, 127,
                                 -127, -127, -127, -127, 127 };
static const int8_t V2_Q[32] = { -102, 76,  0,   -76, -26, -102, 76,  0,   51,  -26, -102,
                                 76,   127, 51,  -26, -102, -114, -64, 114, 38,  -38, 13,
                                 -64,  114, 38,  89,  13,  -64,  -13, 38,  -38, -114 };

/* BF16 rows V1, V2, zero (G=16, K=32, mode cuda): golden q and scale bits, in
 * one block and in blocks of one row. */
static void test_golden_bf16_v1_v2_zero(void **state)
{
    (void)state;
    uint16_t w[3 * 32];
    for (size_t k = 0; k < 32; k++) {
        w[k] = stf_f32_to_bf16(k == 0 ? 1.0f : 0.0f);
        w[32 + k] = stf_f32_to_bf16((float)((int)(k % 5) - 2));
        w[64 + k] = 0;
    }
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { 3, 32 }, w, sizeof w } };
    for (int in_mem = 0; in_mem < 2; in_mem++) { /* read into the block buffer, then in place */
        st_ckfx f;
        st_ckfx_open(&f, t, 1, in_mem);
        stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, 3, 32, 16, STF_QMODE_CUDA);
        uint64_t caps[2] = { 0, 1 }; /* default cap; 1 byte: one row per block */
        for (int ci = 0; ci < 2; ci++) {
            sink s;
            sink_init(&s, 96, 12);
            stf__jobrun jr;
            stf__jobrun_init(&jr, f.c, NULL, caps[ci], sink_emit, &s);
            assert_int_equal(stf__job_block_rows(&jr, &j), ci ? 1 : 3);
            stf_err err;
            assert_int_equal(stf__job_exec(&jr, &j, NULL, &err), 0);
            stf__jobrun_fini(&jr);
            assert_memory_equal(s.buf[0], V1_Q, 32);
            assert_memory_equal(s.buf[0] + 32, V2_Q, 32);
            for (size_t k = 0; k < 32; k++) assert_int_equal(s.buf[0][64 + k], 0);
            float sc[3];
            memcpy(sc, s.buf[1], sizeof sc);
            assert_int_equal(qt_bits(sc[0]), 0x3B010204u);
            assert_int_equal(qt_bits(sc[1]), 0x3CA14285u);
            assert_int_equal(qt_bits(sc[2]), 0x0DA24260u);
            assert_int_equal(s.calls, ci ? 6 : 2);
            sink_free(&s);
        }
        st_ckfx_close(&f);
    }
}

static const char V6_CUDA[] =
    "f82edcdff307f9fc10e016f7faec23e1b0c540443527d4d8c900f2d25feadc24f3c3d7fc1103173c2e20f0aef60ada"
    "440238080bfd12e1e4f80d2102e2192decef0317f80cfecef3e51cebeef1061afa530115f6a3b710354a19e975ef"
    "e1f5d60cbaf038c31cc9cc9cf52b505401f3b1f90dffe01708fa201204f6f91eee240508faecef03d2090cfe1204"
    "2ae81f1114e3f82e312315078095cc02282b3fecefbfd32cc86613e208d80e999c28f80c3235e2f6f9ebff141709"
    "1dec12f329f9fcee02d2192edbeff206f80ded1327f7fa0e4414d2c41d32346bf60aebccbe171a0cfe3415a0f92f"
    "cb02d20850ecded0f51aeadc241608f9fd1103f5d51d31dfe2";
static const char V6_EAGER[] =
    "f82edcdff307f9fc10e016f7faec22e1b1c540433527d5d8ca00f2d35feadc24f3c3d7fc1103173c2e20f0aef60ada"
    "440238080bfd11e1e4f80c2102e2192decef0317f80cfecef3e51bebeef1051afb530115f6a4b810354a19e974ef"
    "e1f5d60cbaf038c31cc9cc9cf52b505401f3b2f90dffe01608fa201204f6f91eee240508faecef03d3090cfe1204"
    "2ae81f1114e4f82e312315078195cc02282a3fecefbfd32cc86613e308d80e9a9c28f80c3134e2f6f9ebff141709"
    "1dec12f329f9fcee02d2192edbeff206f80ced1327f7fa0e4414d2c51d31346bf60aebccbe161a0cfe3415a0f92f"
    "cc02d20850ecded0f51aeadc241608fafd1103f5d61d31dfe2";

/* V6 (G=256, K=256) in modes cuda and eager, on a pool of 2. */
static void test_golden_v6_modes(void **state)
{
    (void)state;
    uint16_t w[256];
    for (unsigned k = 0; k < 256; k++)
        w[k] = stf_f32_to_bf16((float)((int)((37u * k) % 251u) - 125) / 64.0f);
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { 1, 256 }, w, sizeof w } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf_pool *pool;
    stf_err err;
    assert_int_equal(stf_pool_new(&pool, 2, &err), 0);
    const char *hex[2] = { V6_CUDA, V6_EAGER };
    const uint32_t sbits[2] = { 0x3CEA64CAu, 0x3CEAD5ABu };
    const stf_quant_mode modes[2] = { STF_QMODE_CUDA, STF_QMODE_EAGER };
    /* Every kernel variant this CPU runs gives the golden bytes through the job. */
    static const stf_simd variants[3] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    for (int vi = 0; vi < 6; vi++) {
        int i = vi % 2;
        if (!stf_simd_supported(variants[vi / 2])) continue;
        assert_int_equal(stf_simd_select(variants[vi / 2], &err), 0);
        uint8_t want[256];
        assert_int_equal(qt_hex(want, sizeof want, hex[i]), 256);
        stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, 1, 256, 256, modes[i]);
        sink s;
        sink_init(&s, 256, 4);
        assert_int_equal(run_job(&s, f.c, &j, 0, pool, NULL, &err), 0);
        assert_memory_equal(s.buf[0], want, 256);
        float sc;
        memcpy(&sc, s.buf[1], 4);
        assert_int_equal(qt_bits(sc), sbits[i]);
        sink_free(&s);
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, &err), 0);
    stf_pool_free(pool);
    st_ckfx_close(&f);
}

/* W4A4-1 (G=16, K=64) from F32: the golden packed row and scale. */
static void test_golden_w4a4(void **state)
{
    (void)state;
    float w[64];
    for (unsigned k = 0; k < 64; k++) w[k] = 0.5f * (float)((int)((37u * k) % 11u) - 5);
    st_tensor t[] = { { "l.weight", STF_F32, 2, { 1, 64 }, w, sizeof w } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf__job j = float_job(f.c, STF__JOB_REQUANT_W4A4, STF_F32, 1, 64, 16, STF_QMODE_CUDA);
    uint8_t want[32];
    assert_int_equal(qt_hex(want, sizeof want,
                            "d3 f0 1e 3b c2 ef 51 ef 4c d3 f1 1e f0 17 f0 1d 3f 01 9f 01 2f f1 "
                            "d3 4c 12 fb 12 e4 5d 2f 01 d3"),
                     32);
    sink s;
    sink_init(&s, 32, 4);
    stf_err err;
    assert_int_equal(run_job(&s, f.c, &j, 0, NULL, NULL, &err), 0);
    assert_memory_equal(s.buf[0], want, 32);
    float sc;
    memcpy(&sc, s.buf[1], 4);
    assert_int_equal(qt_bits(sc), 0x3F16DB6Eu);
    sink_free(&s);
    st_ckfx_close(&f);
}

/* A rowwise INT8 layer (F32 [N,1] scale) -> ConvRot G=16 with T=BF16 equals
 * stf_int8_quantize_rows on stf_int8_dequantize of the same codes. */
enum { RN = 37, RK = 64 };

static void make_rowwise(int8_t *q, float *s)
{
    qt_rng r = { 42 };
    for (size_t i = 0; i < RN * RK; i++) q[i] = (int8_t)(int)(qt_next(&r) % 255u) - 127 + 0;
    for (size_t n = 0; n < RN; n++) s[n] = (float)(0.001 + 0.01 * qt_unif(&r));
}

static stf__job rowwise_job(const stf_ckpt *c, stf__job_kind kind)
{
    return scaled_job(c, kind, STF__DEC_INT8, STF_I8, STF_SCALE_ROW, RN, RK, 16);
}

static void test_rowwise_requant_equals_kernels(void **state)
{
    (void)state;
    static int8_t q[RN * RK], want_q[RN * RK];
    static float s[RN], deq[RN * RK], want_s[RN];
    make_rowwise(q, s);
    st_tensor t[] = { { "l.weight", STF_I8, 2, { RN, RK }, q, sizeof q },
                      { "l.weight_scale", STF_F32, 2, { RN, 1 }, s, sizeof s } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf_err err;
    stf_dequant_opts dqo = { STF_SCALE_ROW, 0, 0 };
    assert_int_equal(stf_int8_dequantize(deq, q, s, RN, RK, &dqo, NULL, &err), 0);
    stf_int8_opts qo = { 16, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(want_q, want_s, deq, STF_F32, RN, RK, &qo, NULL, &err),
                     0);
    stf__job j = rowwise_job(f.c, STF__JOB_REQUANT_INT8);
    uint64_t caps[3] = { 0, 1000, 1 };
    for (int ci = 0; ci < 3; ci++) {
        sink s2;
        sink_init(&s2, RN * RK, RN * 4);
        assert_int_equal(run_job(&s2, f.c, &j, caps[ci], NULL, NULL, &err), 0);
        assert_memory_equal(s2.buf[0], want_q, sizeof want_q);
        assert_memory_equal(s2.buf[1], want_s, sizeof want_s);
        sink_free(&s2);
    }
    st_ckfx_close(&f);
}

/* Grouped F32 [N,4] scales (`(N,g)`, stfix-defects(7), SCALE SHAPES) under a
 * G=16 ConvRot marker -> ConvRot G=16 equals stf_int8_quantize_rows of the
 * exact grouped dequantization: fl32(q * s[n, x / 16]), then the rotation
 * undone per row. */
static void test_grouped_requant_equals_kernels(void **state)
{
    (void)state;
    enum { GR = 4 };
    static int8_t q[RN * RK], want_q[RN * RK];
    static float s[RN], gs[RN * GR], deq[RN * RK], want_s[RN];
    make_rowwise(q, s);
    for (size_t i = 0; i < RN * GR; i++) gs[i] = s[i / GR] * (float)(1 + i % GR);
    st_tensor t[] = { { "l.weight", STF_I8, 2, { RN, RK }, q, sizeof q },
                      { "l.weight_scale", STF_F32, 2, { RN, GR }, gs, sizeof gs } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf_err err;
    for (size_t n = 0; n < RN; n++) {
        for (size_t x = 0; x < RK; x++)
            deq[n * RK + x] = (float)q[n * RK + x] * gs[n * GR + x / (RK / GR)];
        assert_int_equal(stf_hadamard_regular(deq + n * RK, RK, 16, NULL), 0);
    }
    stf_int8_opts qo = { 16, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(want_q, want_s, deq, STF_F32, RN, RK, &qo, NULL, &err),
                     0);
    stf__job j = rowwise_job(f.c, STF__JOB_REQUANT_INT8);
    j.dec.groups = GR;
    j.dec.rot_group = 16;
    stf_pool *pool = NULL;
    assert_int_equal(stf_pool_new(&pool, 3, &err), 0);
    uint64_t caps[3] = { 0, 1000, 1 };
    for (int ci = 0; ci < 3; ci++) {
        sink s2;
        sink_init(&s2, RN * RK, RN * 4);
        assert_int_equal(run_job(&s2, f.c, &j, caps[ci], ci == 1 ? pool : NULL, NULL, &err), 0);
        assert_memory_equal(s2.buf[0], want_q, sizeof want_q);
        assert_memory_equal(s2.buf[1], want_s, sizeof want_s);
        sink_free(&s2);
    }
    stf_pool_free(pool);
    st_ckfx_close(&f);
}

/* DEQUANT to BF16 = stf_convert_from_f32 of stf_int8_dequantize; with metrics. */
static void test_dequant_bf16(void **state)
{
    (void)state;
    static int8_t q[RN * RK];
    static float s[RN], deq[RN * RK];
    static uint16_t want[RN * RK];
    make_rowwise(q, s);
    st_tensor t[] = { { "l.weight", STF_I8, 2, { RN, RK }, q, sizeof q },
                      { "l.weight_scale", STF_F32, 2, { RN, 1 }, s, sizeof s } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf_err err;
    stf_dequant_opts dqo = { STF_SCALE_ROW, 0, 0 };
    assert_int_equal(stf_int8_dequantize(deq, q, s, RN, RK, &dqo, NULL, &err), 0);
    assert_int_equal(stf_convert_from_f32(want, STF_BF16, deq, RN * RK, &err), 0);
    stf__job j = rowwise_job(f.c, STF__JOB_DEQUANT);
    sink s2;
    sink_init(&s2, RN * RK * 2, 0);
    stf_metrics_result m;
    assert_int_equal(run_job(&s2, f.c, &j, 5000, NULL, &m, &err), 0);
    assert_memory_equal(s2.buf[0], want, sizeof want);
    /* The metrics compare the BF16 result with the exact f32 values. */
    static float back[RN * RK];
    assert_int_equal(stf_convert_to_f32(back, want, STF_BF16, RN * RK, &err), 0);
    stf_metrics acc;
    stf_metrics_init(&acc);
    for (size_t n = 0; n < RN; n++) {
        stf_metrics row;
        stf_metrics_init(&row);
        stf_metrics_add(&row, deq + n * RK, back + n * RK, RK, n, 0);
        stf_metrics_merge(&acc, &row);
    }
    stf_metrics_result wm;
    stf_metrics_finish(&wm, &acc);
    assert_memory_equal(&m, &wm, sizeof m);
    assert_true(m.rel_l2 > 0 && m.rel_l2 < 0.004); /* BF16 rounding: < 2^-8 relative */
    sink_free(&s2);
    st_ckfx_close(&f);
}

/* Metrics and bytes do not depend on block size or the pool. */
static void test_metrics_blocks_and_threads(void **state)
{
    (void)state;
    enum { N = 50, K = 256 };
    static uint16_t w[N * K];
    qt_rng r = { 7 };
    for (size_t i = 0; i < N * K; i++) w[i] = stf_f32_to_bf16((float)qt_randn(&r));
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { N, K }, w, sizeof w } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf_pool *pool;
    stf_err err;
    assert_int_equal(stf_pool_new(&pool, 2, &err), 0);
    stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, N, K, 256, STF_QMODE_CUDA);
    sink a, b;
    sink_init(&a, N * K, N * 4);
    sink_init(&b, N * K, N * 4);
    stf_metrics_result ma, mb;
    assert_int_equal(run_job(&a, f.c, &j, 0, NULL, &ma, &err), 0);
    assert_int_equal(run_job(&b, f.c, &j, 7 * K * 10, pool, &mb, &err), 0);
    assert_true(b.calls > 2);
    assert_memory_equal(a.buf[0], b.buf[0], N * K);
    assert_memory_equal(a.buf[1], b.buf[1], N * 4);
    assert_memory_equal(&ma, &mb, sizeof ma);
    /* INT8 ConvRot of Gaussian rows: relative L2 near 1%. */
    assert_true(ma.rel_l2 > 0.003 && ma.rel_l2 < 0.03);
    assert_true(ma.cosine > 0.999);
    sink_free(&a);
    sink_free(&b);
    stf_pool_free(pool);
    st_ckfx_close(&f);
}

/* Rows wide enough for several pool chunks per block (grain 32 rows at K =
 * 16384): 1 and 2 threads, and blocks cut across chunks, all give the bytes
 * and metrics of one stf_int8_quantize_rows call over the whole tensor. */
/* A WN x WK BF16 weight of normal values (seed), its reference codes and
 * scales from one stf_int8_quantize_rows call, and a pool of `threads`. */
enum { WN = 100, WK = 16384 };
typedef struct wide_case {
    uint16_t *w;
    int8_t *q;
    float s[WN];
    stf_pool *pool;
} wide_case;

static void wide_case_make(wide_case *c, uint32_t seed, unsigned threads)
{
    c->w = malloc((size_t)WN * WK * 2);
    c->q = malloc((size_t)WN * WK);
    assert_non_null(c->w);
    assert_non_null(c->q);
    qt_rng r = { seed };
    for (size_t i = 0; i < (size_t)WN * WK; i++) c->w[i] = stf_f32_to_bf16((float)qt_randn(&r));
    stf_err err;
    assert_int_equal(stf_pool_new(&c->pool, threads, &err), 0);
    stf_int8_opts o = { 256, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(c->q, c->s, c->w, STF_BF16, WN, WK, &o, NULL, &err), 0);
}

static void wide_case_free(wide_case *c)
{
    stf_pool_free(c->pool);
    free(c->w);
    free(c->q);
}

static void test_chunks_across_threads(void **state)
{
    (void)state;
    enum { N = WN, K = WK };
    wide_case wc;
    wide_case_make(&wc, 11, 2);
    uint16_t *w = wc.w;
    const int8_t *q = wc.q;
    const float *s = wc.s;
    stf_pool *pool = wc.pool;
    stf_err err;
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { N, K }, w, (size_t)N * K * 2 } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, N, K, 256, STF_QMODE_CUDA);
    stf_metrics_result m0, m1;
    const uint64_t caps[3] = { 0, 0, (uint64_t)45 * K * 11 }; /* last: 45-row blocks */
    stf_pool *pools[3] = { NULL, pool, pool };
    for (int ci = 0; ci < 3; ci++) {
        sink sk;
        sink_init(&sk, (size_t)N * K, N * 4);
        assert_int_equal(run_job(&sk, f.c, &j, caps[ci], pools[ci], ci ? &m1 : &m0, &err), 0);
        assert_memory_equal(sk.buf[0], q, (size_t)N * K);
        assert_memory_equal(sk.buf[1], s, sizeof wc.s);
        if (ci) assert_memory_equal(&m0, &m1, sizeof m0);
        assert_true(sk.calls >= 8); /* at least 4 chunks: weight + scale each */
        sink_free(&sk);
    }
    st_ckfx_close(&f);
    wide_case_free(&wc);
}

static int g_ticks;
static void count_tick(void *ud, const stf__job *job)
{
    (void)ud;
    (void)job;
    g_ticks++;
}

/*
 * Without metrics a job streams: one pool run over all its rows, each
 * chunk in a buffer set of its own, one set per thread. Three threads give
 * the bytes of one stf_int8_quantize_rows call over the whole tensor, in
 * buffers of 3 sets of 7 rows (the 256 KiB grain: 100 rows of 32 KiB in 15
 * chunks) instead of a 100-row block; a NaN in two chunks is named by the
 * lower row; progress ticks on the calling thread every block's worth of
 * rows and once at the end.
 */
static void test_streamed_job(void **state)
{
    (void)state;
    enum { N = WN, K = WK };
    wide_case wc;
    wide_case_make(&wc, 5, 3);
    uint16_t *w = wc.w;
    const int8_t *q = wc.q;
    const float *s = wc.s;
    stf_pool *pool = wc.pool;
    stf_err err;
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { N, K }, w, (size_t)N * K * 2 } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, N, K, 256, STF_QMODE_CUDA);
    sink sk;
    sink_init(&sk, (size_t)N * K, N * 4);
    stf__jobrun jr;
    stf__jobrun_init(&jr, f.c, pool, 0, sink_emit, &sk);
    assert_int_equal(stf__job_block_rows(&jr, &j), N);
    assert_int_equal(stf__job_exec(&jr, &j, NULL, &err), 0);
    assert_int_equal(jr.out_cap, 3 * 7 * K);
    assert_int_equal(jr.scale_cap, 3 * 7 * 4);
    stf__jobrun_fini(&jr);
    assert_memory_equal(sk.buf[0], q, (size_t)N * K);
    assert_memory_equal(sk.buf[1], s, sizeof wc.s);
    assert_int_equal(sk.calls, 2 * 15);
    sink_free(&sk);
    st_ckfx_close(&f);

    /* NaNs at rows 80 and 13, in different chunks: row 13 is named. */
    w[80 * K + 9] = 0x7FC0;
    w[13 * K + 3] = 0x7F80; /* +Inf */
    st_ckfx_open(&f, t, 1, 0);
    j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, N, K, 256, STF_QMODE_CUDA);
    sink_init(&sk, (size_t)N * K, N * 4);
    assert_int_equal(run_job(&sk, f.c, &j, 0, pool, NULL, &err), STF_ENUMERIC);
    assert_string_equal(err.msg, "requantize 'l.weight': row 13, column 3: non-finite value "
                                 "(NaN or Inf) cannot be quantized");
    sink_free(&sk);
    st_ckfx_close(&f);
    w[80 * K + 9] = w[13 * K + 3] = 0;

    /* One thread, blocks of 3 rows by the cap: chunks of 3 rows, a tick
     * after rows 3, 6 and 9 and one at the end. */
    st_tensor t10[] = { { "l.weight", STF_BF16, 2, { 10, K }, w, (size_t)10 * K * 2 } };
    st_ckfx_open(&f, t10, 1, 0);
    j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, 10, K, 256, STF_QMODE_CUDA);
    uint64_t row = 2 * K + 8 * K + K + 4 + sizeof(stf_metrics);
    sink_init(&sk, (size_t)10 * K, 10 * 4);
    stf__jobrun_init(&jr, f.c, NULL, 3 * row + 4 * K, sink_emit, &sk);
    jr.tick = count_tick;
    g_ticks = 0;
    assert_int_equal(stf__job_block_rows(&jr, &j), 3);
    assert_int_equal(stf__job_exec(&jr, &j, NULL, &err), 0);
    stf__jobrun_fini(&jr);
    assert_int_equal(g_ticks, 4);
    assert_int_equal(sk.calls, 2 * 4);
    assert_memory_equal(sk.buf[0], q, (size_t)10 * K);
    assert_memory_equal(sk.buf[1], s, 10 * 4);
    sink_free(&sk);
    st_ckfx_close(&f);
    wide_case_free(&wc);
}

/* A NaN weight fails with STF_ENUMERIC naming the weight; emission errors propagate. */
static void test_errors(void **state)
{
    (void)state;
    uint16_t w[4 * 16];
    for (size_t i = 0; i < 64; i++) w[i] = stf_f32_to_bf16(1.0f);
    w[2 * 16 + 3] = 0x7FC0;
    st_tensor t[] = { { "l.weight", STF_BF16, 2, { 4, 16 }, w, sizeof w } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf__job j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, 4, 16, 16, STF_QMODE_CUDA);
    sink s;
    sink_init(&s, 64, 16);
    stf_err err;
    assert_int_equal(run_job(&s, f.c, &j, 0, NULL, NULL, &err), STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "requantize 'l.weight': "));
    sink_free(&s);
    w[2 * 16 + 3] = stf_f32_to_bf16(2.0f);
    st_ckfx_close(&f);
    st_ckfx_open(&f, t, 1, 0);
    j = float_job(f.c, STF__JOB_REQUANT_INT8, STF_BF16, 4, 16, 16, STF_QMODE_CUDA);
    sink_init(&s, 64, 16);
    s.fail_at = 3; /* weight of block 2 (one row per block) */
    assert_int_equal(run_job(&s, f.c, &j, 1, NULL, NULL, &err), STF_EIO);
    assert_string_equal(err.msg, "test sink: write failed");
    assert_int_equal(s.calls, 3);
    sink_free(&s);
    /* DEQUANT to an integer dtype is the plan's bug. */
    j.kind = STF__JOB_DEQUANT;
    j.out_dtype = STF_I8;
    sink_init(&s, 64, 16);
    assert_int_equal(run_job(&s, f.c, &j, 0, NULL, NULL, &err), STF_EINVAL);
    assert_int_equal(s.calls, 0);
    sink_free(&s);
    st_ckfx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_bf16_v1_v2_zero),
        cmocka_unit_test(test_golden_v6_modes),
        cmocka_unit_test(test_golden_w4a4),
        cmocka_unit_test(test_rowwise_requant_equals_kernels),
        cmocka_unit_test(test_grouped_requant_equals_kernels),
        cmocka_unit_test(test_dequant_bf16),
        cmocka_unit_test(test_metrics_blocks_and_threads),
        cmocka_unit_test(test_chunks_across_threads),
        cmocka_unit_test(test_streamed_job),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
