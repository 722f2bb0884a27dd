/*
 * Progress of the probes (stf_check_opts.progress, stf_plan_opts.progress):
 * the weight bytes probed of those to probe, with the layer just probed,
 * always on the calling thread, never going down, and a last call with
 * done == total, whatever the pool's size. Run from the repository root.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define STF_EXPERIMENTAL
#include "stfix.h"

/* Two INT8 layers: blocks.0.attn.qkv (4096 weight bytes), blocks.0.mlp.fc1 (2048). */
#define TWO "fixtures/comfy/healthy_int8_g256.safetensors"

typedef struct calls {
    pthread_t owner;
    size_t n;
    uint64_t done[16], total[16];
    char what[16][64];
    int other_thread;
} calls;

static void record(void *ud, uint64_t done, uint64_t total, const char *what, size_t len)
{
    calls *c = ud;
    if (!pthread_equal(pthread_self(), c->owner)) c->other_thread = 1;
    if (c->n >= 16) return;
    c->done[c->n] = done;
    c->total[c->n] = total;
    snprintf(c->what[c->n], sizeof c->what[0], "%.*s", what ? (int)len : 6,
             what ? what : "(none)");
    c->n++;
}

/* Calls of a run on any pool: on the caller's thread, done never down, the
 * last one done == total == 6144 with no layer named. */
static void expect_sane(const calls *c)
{
    assert_int_equal(c->other_thread, 0);
    assert_true(c->n >= 1);
    for (size_t i = 0; i < c->n; i++) {
        assert_int_equal(c->total[i], 6144);
        assert_true(c->done[i] <= 6144);
        if (i) assert_true(c->done[i] >= c->done[i - 1]);
    }
    assert_int_equal(c->done[c->n - 1], 6144);
    assert_string_equal(c->what[c->n - 1], "(none)");
}

static stf_ckpt *open_two(void)
{
    stf_err err;
    stf_ckpt *c = NULL;
    if (stf_ckpt_open(&c, TWO, NULL, &err)) fail_msg("open: %s", err.msg);
    return c;
}

static void test_check_numeric_progress(void **state)
{
    (void)state;
    stf_ckpt *c = open_two();
    for (unsigned threads = 1; threads <= 4; threads += 3) {
        stf_err err;
        stf_pool *pool = NULL;
        assert_int_equal(stf_pool_new(&pool, threads, &err), 0);
        calls k;
        memset(&k, 0, sizeof k);
        k.owner = pthread_self();
        stf_check_opts o;
        stf_check_opts_init(&o);
        o.profiles = STF_CHECK_ALL | STF_CHECK_NUMERIC;
        o.pool = threads > 1 ? pool : NULL;
        o.progress = record;
        o.progress_ud = &k;
        stf_check_report *r = NULL;
        assert_int_equal(stf_check_run(&r, c, &o, &err), 0);
        expect_sane(&k);
        if (threads == 1) {
            /* Inline: one call a layer, in layer order, then the last. */
            assert_int_equal(k.n, 3);
            assert_int_equal(k.done[0], 4096);
            assert_string_equal(k.what[0], "blocks.0.attn.qkv");
            assert_int_equal(k.done[1], 6144);
            assert_string_equal(k.what[1], "blocks.0.mlp.fc1");
        }
        stf_check_report_free(r);
        stf_pool_free(pool);
    }
    /* Without the numeric profile no weight is read: no call. */
    calls k;
    memset(&k, 0, sizeof k);
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.progress = record;
    o.progress_ud = &k;
    stf_err err;
    stf_check_report *r = NULL;
    assert_int_equal(stf_check_run(&r, c, &o, &err), 0);
    assert_int_equal(k.n, 0);
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

static void test_plan_progress(void **state)
{
    (void)state;
    stf_ckpt *c = open_two();
    stf_err err;
    stf_recipe *rc = NULL;
    assert_int_equal(stf_recipe_load_file(&rc, NULL, "rules/comfyui-int8-convrot.yaml", &err), 0);
    for (unsigned threads = 1; threads <= 4; threads += 3) {
        stf_pool *pool = NULL;
        assert_int_equal(stf_pool_new(&pool, threads, &err), 0);
        calls k;
        memset(&k, 0, sizeof k);
        k.owner = pthread_self();
        stf_plan_opts o;
        stf_plan_opts_init(&o);
        o.pool = threads > 1 ? pool : NULL;
        o.progress = record;
        o.progress_ud = &k;
        stf_plan *p = NULL;
        assert_int_equal(stf_plan_build(&p, c, rc, &o, &err), 0);
        expect_sane(&k);
        if (threads == 1) {
            assert_int_equal(k.n, 3);
            assert_int_equal(k.done[0], 4096);
            assert_string_equal(k.what[0], "blocks.0.attn.qkv");
            assert_int_equal(k.done[1], 6144);
            assert_string_equal(k.what[1], "blocks.0.mlp.fc1");
        }
        stf_plan_free(p);
        stf_pool_free(pool);
    }
    stf_recipe_free(rc);
    stf_ckpt_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_numeric_progress),
        cmocka_unit_test(test_plan_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
