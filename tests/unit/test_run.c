/*
 * lib/pipeline/run.c: a hand-built plan executed into a real file. Exact
 * output bytes for every output kind (copy, reshape, cast, new marker,
 * requantized weight and scale, dequantized weight), determinism across
 * pool sizes, ENOSPC during the fills, verification failure and in-place
 * runs: a failure never leaves a file at the output path nor a temp file,
 * and never changes the input, nor does a plan that changes nothing; an
 * input rewritten while it is read is never published.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "quant_testutil.h"
#include "run_testplan.h"
#include "support/st_alloc.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"

static const char MARKER16[] =
    "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 16}";

enum { BN = 4, BK = 16 };

typedef struct fx {
    char *dir, *in, *out;
    stf_ckpt *c;
    uint16_t a_w[3 * 32], a_b[3], c_s[3];
    int8_t b_q[BN * BK];
    float b_s[BN], d_w[8];
    tplan t;
} fx;

static void fx_input(fx *f)
{
    for (size_t k = 0; k < 32; k++) {
        f->a_w[k] = stf_f32_to_bf16(k == 0 ? 1.0f : 0.0f);
        f->a_w[32 + k] = stf_f32_to_bf16((float)((int)(k % 5) - 2));
        f->a_w[64 + k] = 0;
    }
    f->a_b[0] = 0x3F80;
    f->a_b[1] = 0x4000;
    f->a_b[2] = 0xC040;
    f->c_s[0] = 0x3E80; /* 0.25 */
    f->c_s[1] = 0x4120; /* 10 */
    f->c_s[2] = 0x0001; /* the smallest subnormal BF16 */
    for (size_t i = 0; i < BN * BK; i++) f->b_q[i] = (int8_t)((int)(i * 7 % 255) - 127);
    for (size_t n = 0; n < BN; n++) f->b_s[n] = 0.125f * (float)(n + 1);
    for (size_t i = 0; i < 8; i++) f->d_w[i] = (float)i - 3.5f;
    st_tensor t[] = {
        { "a.weight", STF_BF16, 2, { 3, 32 }, f->a_w, sizeof f->a_w },
        { "a.bias", STF_BF16, 1, { 3 }, f->a_b, sizeof f->a_b },
        { "b.weight", STF_I8, 2, { BN, BK }, f->b_q, sizeof f->b_q },
        { "b.weight_scale", STF_F32, 2, { BN, 1 }, f->b_s, sizeof f->b_s },
        { "c.scale", STF_BF16, 1, { 3 }, f->c_s, sizeof f->c_s },
        { "d.weight", STF_F32, 1, { 8 }, f->d_w, sizeof f->d_w },
    };
    assert_int_equal(st_write_ckpt(f->in, t, 6, "{\"k\":\"v\"}"), 0);
}

/* The plan: requantize a (G=16, BF16 source), keep its bias, dequantize b to
 * BF16 (dropping its scale), cast c's scale to F32, reshape d. */
static void fx_plan(fx *f, unsigned targets)
{
    tplan *t = &f->t;
    tp_init(t, f->c, targets);
    size_t la = tp_layer(t, "a"), lb = tp_layer(t, "b");
    const uint64_t s_aw[2] = { 3, 32 }, s_as[2] = { 3, 1 }, s_m[1] = { sizeof MARKER16 - 1 },
                   s_ab[1] = { 3 }, s_bw[2] = { BN, BK }, s_d[2] = { 2, 4 };
    size_t aw = tp_out(t, "a.weight", STF_I8, 2, s_aw, STF_OUT_QUANT_WEIGHT, NULL, NULL);
    size_t as = tp_out(t, "a.weight_scale", STF_F32, 2, s_as, STF_OUT_QUANT_SCALE, NULL, NULL);
    tp_out(t, "a.comfy_quant", STF_U8, 1, s_m, STF_OUT_NEW, NULL, MARKER16);
    tp_out(t, "a.bias", STF_BF16, 1, s_ab, STF_OUT_COPY, "a.bias", NULL);
    size_t bw = tp_out(t, "b.weight", STF_BF16, 2, s_bw, STF_OUT_DEQUANT, NULL, NULL);
    tp_out(t, "c.scale", STF_F32, 1, s_ab, STF_OUT_CAST, "c.scale", NULL);
    tp_out(t, "d.weight", STF_F32, 2, s_d, STF_OUT_RESHAPE, "d.weight", NULL);
    stf__job *j = tp_job(t, STF__JOB_REQUANT_INT8, aw, as, la);
    j->dec.kind = STF__DEC_FLOAT;
    j->dec.w_idx = tp_in(f->c, "a.weight");
    j->dec.w_dtype = STF_BF16;
    j->dec.n = 3;
    j->dec.k = 32;
    j->group = 16;
    j->mode = STF_QMODE_CUDA;
    j->t = STF_BF16;
    j = tp_job(t, STF__JOB_DEQUANT, bw, SIZE_MAX, lb);
    j->dec.kind = STF__DEC_INT8;
    j->dec.w_idx = tp_in(f->c, "b.weight");
    j->dec.w_dtype = STF_I8;
    j->dec.s_idx = (int64_t)tp_in(f->c, "b.weight_scale");
    j->dec.s_dtype = STF_F32;
    j->dec.axis = STF_SCALE_ROW;
    j->dec.n = BN;
    j->dec.k = BK;
    j->out_dtype = STF_BF16;
    tp_meta(t, "k", "v");
    t->p.emit_meta = 1;
}

static fx *fx_new(unsigned targets)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = st_tmpdir();
    f->in = st_path(f->dir, "in.safetensors");
    f->out = st_path(f->dir, "out.safetensors");
    fx_input(f);
    stf_err err;
    if (stf_ckpt_open(&f->c, f->in, NULL, &err)) fail_msg("%s", err.msg);
    fx_plan(f, targets);
    return f;
}

static void fx_free(fx *f)
{
    stf_ckpt_free(f->c);
    st_rmtree(f->dir);
    free(f->in);
    free(f->out);
    free(f->dir);
    free(f);
}

static stf_run_opts opts(stf_pool *pool)
{
    stf_run_opts o;
    stf_run_opts_init(&o);
    o.pool = pool;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    return o;
}

/* Copies handed out by tensor_bytes, freed together by tensor_bytes_free. */
static void *g_copies[16];
static size_t g_ncopies;

/* A copy of tensor `name`'s bytes (a file checkpoint has no pointer to give),
 * valid until tensor_bytes_free. */
static const void *tensor_bytes(const stf_ckpt *c, const char *name, const stf_tensor_info **ti)
{
    size_t i;
    stf_err err;
    assert_int_equal(stf_ckpt_find(&i, c, name), 0);
    *ti = stf_ckpt_tensor(c, i);
    assert_true(g_ncopies < sizeof g_copies / sizeof g_copies[0]);
    void *p = malloc((*ti)->nbytes ? (size_t)(*ti)->nbytes : 1);
    assert_non_null(p);
    g_copies[g_ncopies++] = p;
    if (stf_ckpt_read(p, c, i, 0, (size_t)(*ti)->nbytes, &err)) fail_msg("%s", err.msg);
    return p;
}

static void tensor_bytes_free(void)
{
    while (g_ncopies) free(g_copies[--g_ncopies]);
}

static const int8_t V1_Q[16] = { 127, 127, 127, -127, 127, 127, 127, -127,
                                 127, 127, 127, -127, -127, -127, -127, 127 };
static const int8_t V2_Q[32] = { -102, 76,  0,   -76, -26, -102, 76,  0,   51,  -26, -102,
                                 76,   127, 51,  -26, -102, -114, -64, 114, 38,  -38, 13,
                                 -64,  114, 38,  89,  13,  -64,  -13, 38,  -38, -114 };

static void test_run_exact_outputs(void **state)
{
    (void)state;
    fx *f = fx_new(STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI);
    stf_run_opts o = opts(NULL);
    o.error_metrics = 1;
    stf_run_report *rep = NULL;
    stf_err err;
    int rc = stf_plan_run(&rep, &f->t.p, f->out, &o, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(stf_run_report_file_count(rep), 1);
    assert_string_equal(stf_run_report_file(rep, 0), f->out);
    assert_non_null(stf_run_report_check(rep));
    assert_int_equal(stf_check_count_severity(stf_run_report_check(rep), STF_SEV_ERROR), 0);
    assert_int_equal(stf_run_report_metrics_count(rep), 2);
    assert_string_equal(stf_run_report_metrics(rep, 0)->prefix, "a");
    assert_string_equal(stf_run_report_metrics(rep, 1)->prefix, "b");
    assert_true(stf_run_report_metrics(rep, 0)->m.cosine > 0.99);
    assert_null(stf_run_report_metrics(rep, 2));
    stf_run_report_free(rep);
    assert_int_equal(st_dir_entries(f->dir), 2); /* in + out, no temp left */

    stf_ckpt *c;
    if (stf_ckpt_open(&c, f->out, NULL, &err)) fail_msg("%s", err.msg);
    assert_int_equal(stf_ckpt_tensor_count(c), 7);
    assert_true(stf_ckpt_shard_is_canonical(c, 0));
    const stf_meta_entry *m = stf_ckpt_meta_find(c, 0, "k");
    assert_non_null(m);
    assert_string_equal(m->value, "v");
    const stf_tensor_info *ti;
    const int8_t *q = tensor_bytes(c, "a.weight", &ti);
    assert_int_equal(ti->dtype, STF_I8);
    assert_memory_equal(q, V1_Q, 16);
    assert_memory_equal(q + 32, V2_Q, 32);
    const float *s = tensor_bytes(c, "a.weight_scale", &ti);
    assert_int_equal(ti->rank, 2);
    assert_int_equal(ti->shape[1], 1);
    assert_int_equal(qt_bits(s[0]), 0x3B010204u);
    assert_int_equal(qt_bits(s[1]), 0x3CA14285u);
    assert_int_equal(qt_bits(s[2]), 0x0DA24260u);
    const char *mk = tensor_bytes(c, "a.comfy_quant", &ti);
    assert_int_equal(ti->nbytes, 71);
    assert_memory_equal(mk, MARKER16, 71);
    assert_memory_equal(tensor_bytes(c, "a.bias", &ti), f->a_b, sizeof f->a_b);
    /* b: BF16 of the exact dequantization. */
    float deq[BN * BK];
    uint16_t want[BN * BK];
    stf_dequant_opts dqo = { STF_SCALE_ROW, 0, 0 };
    assert_int_equal(stf_int8_dequantize(deq, f->b_q, f->b_s, BN, BK, &dqo, NULL, &err), 0);
    assert_int_equal(stf_convert_from_f32(want, STF_BF16, deq, BN * BK, &err), 0);
    assert_memory_equal(tensor_bytes(c, "b.weight", &ti), want, sizeof want);
    assert_int_equal(ti->dtype, STF_BF16);
    const float *cs = tensor_bytes(c, "c.scale", &ti);
    assert_int_equal(ti->dtype, STF_F32);
    assert_int_equal(qt_bits(cs[0]), 0x3E800000u);
    assert_int_equal(qt_bits(cs[1]), 0x41200000u);
    assert_int_equal(qt_bits(cs[2]), 0x00010000u);
    assert_memory_equal(tensor_bytes(c, "d.weight", &ti), f->d_w, sizeof f->d_w);
    assert_int_equal(ti->rank, 2);
    assert_int_equal(ti->shape[0], 2);
    assert_int_equal(stf_ckpt_find(&(size_t){ 0 }, c, "b.weight_scale"), STF_ENOTFOUND);
    tensor_bytes_free();
    stf_ckpt_free(c);
    fx_free(f);
}

/* Pool of 1 and of 2 threads, small blocks or not: identical files. */
static void test_deterministic(void **state)
{
    (void)state;
    fx *f = fx_new(0);
    stf_pool *p2;
    stf_err err;
    assert_int_equal(stf_pool_new(&p2, 2, &err), 0);
    stf_run_opts o1 = opts(NULL), o2 = opts(p2);
    o2.max_mem = 1; /* one row per block */
    o2.error_metrics = 1;
    char *out2 = st_path(f->dir, "out2.safetensors");
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->out, &o1, &err), 0);
    assert_int_equal(stf_plan_run(NULL, &f->t.p, out2, &o2, &err), 0);
    size_t l1, l2;
    unsigned char *b1 = st_read_file(f->out, &l1), *b2 = st_read_file(out2, &l2);
    assert_non_null(b1);
    assert_non_null(b2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    free(out2);
    stf_pool_free(p2);
    fx_free(f);
}

/* A write hook that fails once the fills start (past the header). */
typedef struct hook {
    uint64_t fail_from;
    int hits;
} hook;

static int enospc_hook(void *ud, uint64_t file_off, size_t len)
{
    hook *h = ud;
    (void)len;
    if (file_off >= h->fail_from) {
        h->hits++;
        return 1;
    }
    return 0;
}

static void test_enospc_leaves_nothing(void **state)
{
    (void)state;
    fx *f = fx_new(0);
    size_t lin;
    unsigned char *before = st_read_file(f->in, &lin);
    /* Where a.weight's data lands in the output: measure with a first good run. */
    stf_run_opts o = opts(NULL);
    stf_err err;
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->out, &o, &err), 0);
    stf_ckpt *c;
    assert_int_equal(stf_ckpt_open(&c, f->out, NULL, &err), 0);
    size_t ai;
    assert_int_equal(stf_ckpt_find(&ai, c, "a.weight"), 0);
    uint64_t data0 = 8 + stf_ckpt_shard_header_len(c, 0);
    hook h = { data0 + stf_ckpt_tensor(c, ai)->begin, 0 };
    stf_ckpt_free(c);
    remove(f->out);

    stf__write_test_hooks_set(&(stf__write_test_hooks){
        .no_fsync = 1, .write_hook = enospc_hook, .write_hook_ud = &h });
    stf_run_report *rep = NULL;
    int rc = stf_plan_run(&rep, &f->t.p, f->out, &o, &err);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    assert_true(rc == STF_EIO);
    assert_true(h.hits >= 1);
    assert_non_null(rep);
    assert_null(stf_run_report_check(rep)); /* verification never ran */
    stf_run_report_free(rep);
    assert_null(st_read_file(f->out, NULL));
    assert_int_equal(st_dir_entries(f->dir), 1);
    size_t lafter;
    unsigned char *after = st_read_file(f->in, &lafter);
    assert_int_equal(lin, lafter);
    assert_memory_equal(before, after, lin);
    free(before);
    free(after);
    fx_free(f);
}

/* A caller's progress callback that asks the run to stop. */
static void stop_on_progress(void *ud, uint64_t done, uint64_t total, const char *what,
                             size_t len)
{
    (void)done, (void)total, (void)what, (void)len;
    *(volatile int *)ud = 1;
}

/* stf_run_opts.cancel: set before the run, or by the first progress call,
 * the run fails with STF_ECANCELED and leaves only the input. */
static void test_cancel_leaves_nothing(void **state)
{
    (void)state;
    for (int from_progress = 0; from_progress < 2; from_progress++) {
        fx *f = fx_new(0);
        volatile int stop = !from_progress;
        stf_run_opts o = opts(NULL);
        o.cancel = &stop;
        if (from_progress) {
            o.progress = stop_on_progress;
            o.progress_ud = (void *)&stop;
        }
        stf_err err;
        stf_run_report *rep = NULL;
        assert_int_equal(stf_plan_run(&rep, &f->t.p, f->out, &o, &err), STF_ECANCELED);
        assert_int_equal(err.code, STF_ECANCELED);
        char want[4200];
        snprintf(want, sizeof want, "%s: canceled; nothing written", f->out);
        assert_string_equal(err.msg, want);
        stf_run_report_free(rep);
        assert_null(st_read_file(f->out, NULL));
        assert_int_equal(st_dir_entries(f->dir), 1);
        /* Not asked: the same run succeeds. */
        stop = 0;
        o.progress = NULL;
        assert_int_equal(stf_plan_run(NULL, &f->t.p, f->out, &o, &err), 0);
        fx_free(f);
    }
}

/* An int8 layer whose scale is missing: SGLang refuses it. */
static void broken_layer(fx *f)
{
    /* Drop a.weight_scale from the outputs: the layer keeps its marker. */
    tplan *t = &f->t;
    size_t si = SIZE_MAX;
    for (size_t i = 0; i < t->p.nouts; i++)
        if (!strcmp(t->outs[i].pub.name, "a.weight_scale")) si = i;
    assert_true(si != SIZE_MAX);
    /* Keep the job's scale output but rename it, so the layer has no weight_scale. */
    t->outs[si].pub.name = "a.other_scale";
}

static void test_verification_failure(void **state)
{
    (void)state;
    fx *f = fx_new(STF_CONSUMER_SGLANG);
    broken_layer(f);
    stf_run_opts o = opts(NULL);
    stf_run_report *rep = NULL;
    stf_err err;
    assert_int_equal(stf_plan_run(&rep, &f->t.p, f->out, &o, &err), STF_EFORMAT);
    assert_non_null(strstr(err.msg, f->out));
    assert_non_null(strstr(err.msg, "would not pass the sglang profile"));
    assert_string_equal(err.rule, "R12");
    assert_non_null(strstr(err.msg, "R12 (layer 'a'): Comfy layer 'a' is missing checkpoint "
                                    "tensors: ['a.weight_scale']"));
    const stf_check_report *cr = stf_run_report_check(rep);
    assert_non_null(cr);
    assert_true(stf_check_count_severity(cr, STF_SEV_ERROR) >= 1);
    stf_run_report_free(rep);
    assert_null(st_read_file(f->out, NULL));
    assert_int_equal(st_dir_entries(f->dir), 1);

    /* --allow-noncompliant keeps it, and the report still says why. */
    o.allow_noncompliant = 1;
    assert_int_equal(stf_plan_run(&rep, &f->t.p, f->out, &o, &err), 0);
    assert_true(stf_check_count_severity(stf_run_report_check(rep), STF_SEV_ERROR) >= 1);
    stf_run_report_free(rep);
    assert_int_equal(st_dir_entries(f->dir), 2);
    fx_free(f);
}

/* In place: a failed run leaves the input byte-identical; a good one replaces it. */
static void test_in_place(void **state)
{
    (void)state;
    fx *f = fx_new(STF_CONSUMER_SGLANG);
    broken_layer(f);
    size_t lin;
    unsigned char *before = st_read_file(f->in, &lin);
    stf_run_opts o = opts(NULL);
    stf_err err;
    /* Not said to be in place: the guard refuses the input as output. */
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->in, &o, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "the output would overwrite the input file"));
    o.write.replace_input = 1;
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->in, &o, &err), STF_EFORMAT);
    size_t l2;
    unsigned char *after = st_read_file(f->in, &l2);
    assert_int_equal(lin, l2);
    assert_memory_equal(before, after, lin);
    free(after);
    assert_int_equal(st_dir_entries(f->dir), 1);
    fx_plan(f, 0);
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->in, &o, &err), 0);
    after = st_read_file(f->in, &l2);
    assert_true(l2 != lin || memcmp(before, after, lin) != 0);
    free(after);
    free(before);
    assert_int_equal(st_dir_entries(f->dir), 1);
    stf_ckpt *c;
    assert_int_equal(stf_ckpt_open(&c, f->in, NULL, &err), 0);
    assert_int_equal(stf_ckpt_tensor_count(c), 7);
    stf_ckpt_free(c);
    fx_free(f);
}

/* The input rewritten while the run reads it (its size kept): STF_EIO
 * naming it, nothing published, to a new path or in place, no temp file. */
static void test_input_changed(void **state)
{
    (void)state;
    fx *f = fx_new(0);
    /* Opened with an old modification time, so the write is seen however
     * coarse the file system's clock. */
    stf_ckpt_free(f->c);
    struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    assert_int_equal(utimensat(AT_FDCWD, f->in, old, 0), 0);
    stf_err err;
    char want[1200];
    snprintf(want, sizeof want,
             "%s: the input changed while stfix was reading it (modification time "
             "2001-09-09T01:46:40.000000000Z, now ",
             f->in);
    for (int in_place = 0; in_place < 2; in_place++) {
        assert_int_equal(utimensat(AT_FDCWD, f->in, old, 0), 0);
        if (stf_ckpt_open(&f->c, f->in, NULL, &err)) fail_msg("%s", err.msg);
        fx_plan(f, 0);
        size_t lin;
        unsigned char *before = st_read_file(f->in, &lin);
        /* The progress callback stands in for another process. */
        st_meddler fl = { f->in, 0x55, 0, 0 };
        stf_run_opts o = opts(NULL);
        o.progress = st_meddle;
        o.progress_ud = &fl;
        o.write.replace_input = in_place;
        stf_err_clear(&err);
        assert_int_equal(stf_plan_run(NULL, &f->t.p, in_place ? f->in : f->out, &o, &err),
                         STF_EIO);
        assert_true(fl.calls > 0);
        if (strncmp(err.msg, want, strlen(want))) fail_msg("got '%s'", err.msg);
        assert_int_equal(st_dir_entries(f->dir), 1);
        /* The input is what the other process made of it, not the output. */
        size_t l2;
        unsigned char *after = st_read_file(f->in, &l2);
        assert_int_equal(l2, lin);
        assert_memory_equal(after, before, lin - 1);
        assert_int_equal(after[lin - 1], before[lin - 1] ^ 0x55);
        free(after);
        free(before);
        stf_ckpt_free(f->c);
        f->c = NULL;
    }
    /* Left alone, the same run publishes. */
    if (stf_ckpt_open(&f->c, f->in, NULL, &err)) fail_msg("%s", err.msg);
    fx_plan(f, 0);
    stf_run_opts o = opts(NULL);
    if (stf_plan_run(NULL, &f->t.p, f->out, &o, &err)) fail_msg("%s", err.msg);
    assert_int_equal(st_dir_entries(f->dir), 2);
    fx_free(f);
}

/* In place, a plan that changes nothing touches nothing: not the bytes, not
 * the modification time, no lock or temporary beside it; the input is
 * verified as it stands and the report lists no file. */
static void test_in_place_unchanged(void **state)
{
    (void)state;
    fx *f = fx_new(0);
    f->t.p.changed = 0;
    size_t lin;
    unsigned char *before = st_read_file(f->in, &lin);
    struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    assert_int_equal(utimensat(AT_FDCWD, f->in, old, 0), 0);
    stf_run_opts o = opts(NULL);
    o.write.replace_input = 1;
    stf_run_report *rep = NULL;
    stf_err err;
    assert_int_equal(stf_plan_run(&rep, &f->t.p, f->in, &o, &err), 0);
    assert_int_equal(stf_run_report_file_count(rep), 0);
    assert_non_null(stf_run_report_check(rep));
    stf_run_report_free(rep);
    struct stat st;
    assert_int_equal(stat(f->in, &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, 1000000000);
    size_t l2;
    unsigned char *after = st_read_file(f->in, &l2);
    assert_int_equal(lin, l2);
    assert_memory_equal(before, after, lin);
    free(after);
    free(before);
    assert_int_equal(st_dir_entries(f->dir), 1);
    fx_free(f);
}

/* A plan whose job output size disagrees with the job fails before writing. */
static void test_plan_mismatch(void **state)
{
    (void)state;
    fx *f = fx_new(0);
    f->t.jobs[0].dec.k = 16; /* a.weight holds 32 columns */
    stf_run_opts o = opts(NULL);
    stf_err err;
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->out, &o, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "'a.weight'"));
    assert_int_equal(st_dir_entries(f->dir), 1);
    f->t.jobs[0].dec.k = 32;
    /* A verbatim copy whose size differs from its input. */
    f->t.outs[6].pub.nbytes = 16;
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->out, &o, &err), STF_EINVAL);
    assert_string_equal(err.msg, "run: output 'd.weight' (16 bytes) cannot be a verbatim copy of "
                                 "'d.weight' (32 bytes)");
    f->t.outs[6].pub.nbytes = 32;
    /* New bytes missing. */
    f->t.outs[2].bytes = NULL;
    assert_int_equal(stf_plan_run(NULL, &f->t.p, f->out, &o, &err), STF_EINVAL);
    assert_string_equal(err.msg, "run: new output 'a.comfy_quant' has no bytes");
    assert_int_equal(st_dir_entries(f->dir), 1);
    fx_free(f);
}

/* A sharded output: the layer's tensors stay in one shard (I7), every shard is
 * verified, and the index opens with every tensor. */
static void test_sharded(void **state)
{
    (void)state;
    fx *f = fx_new(STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI);
    /* Only a's tensors are grouped (tp_job groups b's weight too). */
    for (size_t i = 0; i < f->t.p.nouts; i++) {
        int a = !strncmp(f->t.outs[i].pub.name, "a.", 2);
        f->t.outs[i].group = a ? "a" : NULL;
        f->t.outs[i].group_len = a ? 1 : 0;
    }
    /* A rebuilt _quantization_metadata cannot be right for every shard (I7):
     * it is left out of a sharded output, other keys are kept. */
    tp_meta(&f->t, "_quantization_metadata", "{\"format_version\": \"1.0\", \"layers\": {}}");
    stf_run_opts o = opts(NULL);
    o.max_shard_size = 150;
    stf_run_report *rep = NULL;
    stf_err err;
    int rc = stf_plan_run(&rep, &f->t.p, f->out, &o, &err);
    if (rc) fail_msg("%s", err.msg);
    size_t nf = stf_run_report_file_count(rep);
    assert_true(nf >= 3);
    char *index = st_path(f->dir, "out.safetensors.index.json");
    assert_string_equal(stf_run_report_file(rep, nf - 1), index);
    assert_int_equal(st_dir_entries(f->dir), 1 + nf);
    stf_run_report_free(rep);
    stf_ckpt *c;
    if (stf_ckpt_open(&c, index, NULL, &err)) fail_msg("%s", err.msg);
    assert_int_equal(stf_ckpt_shard_count(c), nf - 1);
    assert_int_equal(stf_ckpt_tensor_count(c), 7);
    size_t w, s, m, b;
    assert_int_equal(stf_ckpt_find(&w, c, "a.weight"), 0);
    assert_int_equal(stf_ckpt_find(&s, c, "a.weight_scale"), 0);
    assert_int_equal(stf_ckpt_find(&m, c, "a.comfy_quant"), 0);
    assert_int_equal(stf_ckpt_find(&b, c, "a.bias"), 0);
    unsigned sh = stf_ckpt_tensor(c, w)->shard;
    assert_int_equal(stf_ckpt_tensor(c, s)->shard, sh);
    assert_int_equal(stf_ckpt_tensor(c, m)->shard, sh);
    assert_int_equal(stf_ckpt_tensor(c, b)->shard, sh);
    int8_t q[16];
    assert_int_equal(stf_ckpt_read(q, c, w, 0, sizeof q, &err), 0);
    assert_memory_equal(q, V1_Q, 16);
    for (size_t k = 0; k < stf_ckpt_shard_count(c); k++) {
        assert_null(stf_ckpt_meta_find(c, k, "_quantization_metadata"));
        assert_string_equal(stf_ckpt_meta_find(c, k, "k")->value, "v");
    }
    stf_ckpt_free(c);
    free(index);
    fx_free(f);
}

/* A layer wide enough for several pool chunks per block, written through the
 * real writer from two threads at once: the same file as inline, and the
 * kernel's bytes. */
static void test_wide_layer_threads(void **state)
{
    (void)state;
    enum { N = 96, K = 16384 };
    uint16_t *w = malloc((size_t)N * K * 2);
    int8_t *q = malloc((size_t)N * K);
    float s[N];
    assert_non_null(w);
    assert_non_null(q);
    qt_rng r = { 5 };
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = stf_f32_to_bf16((float)qt_randn(&r));
    char *dir = st_tmpdir(), *in = st_path(dir, "in.safetensors");
    char *o1 = st_path(dir, "o1.safetensors"), *o2 = st_path(dir, "o2.safetensors");
    st_tensor t[] = { { "w.weight", STF_BF16, 2, { N, K }, w, (size_t)N * K * 2 } };
    assert_int_equal(st_write_ckpt(in, t, 1, NULL), 0);
    stf_open_opts oo;
    stf_open_opts_init(&oo);
    stf_ckpt *c;
    stf_err err;
    assert_int_equal(stf_ckpt_open(&c, in, &oo, &err), 0);
    tplan tp;
    tp_init(&tp, c, 0);
    size_t li = tp_layer(&tp, "w");
    const uint64_t sw[2] = { N, K }, ss[2] = { N, 1 };
    size_t ow = tp_out(&tp, "w.weight", STF_I8, 2, sw, STF_OUT_QUANT_WEIGHT, NULL, NULL);
    size_t os = tp_out(&tp, "w.weight_scale", STF_F32, 2, ss, STF_OUT_QUANT_SCALE, NULL, NULL);
    stf__job *j = tp_job(&tp, STF__JOB_REQUANT_INT8, ow, os, li);
    j->dec.kind = STF__DEC_FLOAT;
    j->dec.w_idx = 0;
    j->dec.w_dtype = STF_BF16;
    j->dec.n = N;
    j->dec.k = K;
    j->group = 256;
    j->mode = STF_QMODE_CUDA;
    j->t = STF_BF16;
    stf_pool *pool;
    assert_int_equal(stf_pool_new(&pool, 2, &err), 0);
    stf_run_opts r1 = opts(NULL), r2 = opts(pool);
    assert_int_equal(stf_plan_run(NULL, &tp.p, o1, &r1, &err), 0);
    assert_int_equal(stf_plan_run(NULL, &tp.p, o2, &r2, &err), 0);
    size_t l1, l2;
    unsigned char *b1 = st_read_file(o1, &l1), *b2 = st_read_file(o2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    stf_int8_opts qo = { 256, STF_QMODE_CUDA, STF_BF16 };
    assert_int_equal(stf_int8_quantize_rows(q, s, w, STF_BF16, N, K, &qo, NULL, &err), 0);
    stf_ckpt *oc;
    assert_int_equal(stf_ckpt_open(&oc, o2, NULL, &err), 0);
    const stf_tensor_info *ti;
    assert_memory_equal(tensor_bytes(oc, "w.weight", &ti), q, (size_t)N * K);
    assert_memory_equal(tensor_bytes(oc, "w.weight_scale", &ti), s, sizeof s);
    tensor_bytes_free();
    stf_ckpt_free(oc);
    stf_ckpt_free(c);
    stf_pool_free(pool);
    free(b1);
    free(b2);
    st_rmtree(dir);
    free(in);
    free(o1);
    free(o2);
    free(dir);
    free(w);
    free(q);
}

/* Failing the Nth allocation: STF_ENOMEM, nothing at OUT, no temp file; until it succeeds. */
static void test_alloc_failures(void **state)
{
    (void)state;
    fx *f = fx_new(STF_CONSUMER_SGLANG);
    stf_run_opts o = opts(NULL);
    o.error_metrics = 1;
    int ok = 0, fails = 0;
    for (int i = 0; i < 5000 && !ok; i++) {
        st_alloc_arm(i + 1);
        stf_run_report *rep = NULL;
        stf_err err;
        st_alloc_install();
        int rc = stf_plan_run(&rep, &f->t.p, f->out, &o, &err);
        stf_run_report_free(rep);
        st_alloc_uninstall();
        if (rc == 0) {
            ok = 1;
        } else {
            if (rc != STF_ENOMEM) fail_msg("allocation %d: rc %d: %s", i, rc, err.msg);
            assert_int_equal(st_dir_entries(f->dir), 1);
            fails++;
        }
    }
    assert_true(ok);
    assert_true(fails > 20);
    assert_int_equal(st_dir_entries(f->dir), 2);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_exact_outputs),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_enospc_leaves_nothing),
        cmocka_unit_test(test_cancel_leaves_nothing),
        cmocka_unit_test(test_verification_failure),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_input_changed),
        cmocka_unit_test(test_in_place_unchanged),
        cmocka_unit_test(test_plan_mismatch),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_wide_layer_threads),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
