/*
 * The tensor-parallel rules through the library (stf_check_run_tp): the
 * per-degree summaries, the exact T1-T5 messages, the profile detected from
 * the names (stf_tp_profile_detect), and the refusals of bad degrees. Run
 * from the repository root (fixtures/tp/, rules/tp/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"

#define FIX "fixtures/tp/"

static const char *const PROFILES[] = { "rules/tp/flux.yaml", "rules/tp/qwen-llama.yaml",
                                        "rules/tp/wan.yaml" };
#define NPROF (sizeof PROFILES / sizeof PROFILES[0])

typedef struct run {
    stf_ckpt *c;
    stf_tp_profile *p[NPROF];
    stf_check_report *r;
} run;

/* Check `file` at `n` degrees with the bundled profile `prof` (an index). */
static void run_tp(run *t, const char *file, size_t prof, const unsigned *deg, size_t n)
{
    stf_err err;
    memset(t, 0, sizeof *t);
    if (stf_ckpt_open(&t->c, file, NULL, &err)) fail_msg("%s", err.msg);
    for (size_t i = 0; i < NPROF; i++)
        if (stf_tp_profile_load_file(&t->p[i], NULL, PROFILES[i], &err)) fail_msg("%s", err.msg);
    stf_tp_opts o;
    stf_tp_opts_init(&o);
    o.count = n;
    memcpy(o.degrees, deg, n * sizeof *deg);
    o.style = stf_tp_layer_style;
    o.style_ctx = (void *)(uintptr_t)t->p[prof];
    o.profile = stf_tp_profile_name(t->p[prof]);
    stf_check_opts co;
    stf_check_opts_init(&co);
    co.profiles = STF_CHECK_CONTAINER;
    if (stf_check_run_tp(&t->r, t->c, &co, &o, &err)) fail_msg("%s", err.msg);
}

static void run_free(run *t)
{
    stf_check_report_free(t->r);
    for (size_t i = 0; i < NPROF; i++) stf_tp_profile_free(t->p[i]);
    stf_ckpt_free(t->c);
}

/* The message of the only finding of `rule` on `layer`. */
static const char *message(const run *t, const char *rule, const char *layer)
{
    const char *m = NULL;
    for (size_t i = 0; i < stf_check_count(t->r); i++) {
        const stf_diag *d = stf_check_diag(t->r, i);
        if (strcmp(d->rule, rule) || strcmp(d->layer, layer)) continue;
        if (m) fail_msg("%s on %s twice", rule, layer);
        assert_string_equal(d->profile, "tp");
        m = d->message;
    }
    if (!m) fail_msg("no %s on %s", rule, layer);
    return m;
}

static void expect_summary(const stf_tp_summary *s, unsigned tp, size_t sharded, size_t by_style,
                           size_t repl, uint64_t bytes, size_t cannot, size_t unknown)
{
    assert_int_equal(s->tp, tp);
    assert_int_equal(s->sharded, sharded);
    assert_int_equal(s->replicated_by_style, by_style);
    assert_int_equal(s->replicated, repl);
    assert_int_equal(s->replicated_bytes, bytes);
    assert_int_equal(s->cannot_load, cannot);
    assert_int_equal(s->unknown, unknown);
}

/* The scaled Qwen3 case: clean at TP 2 and 4, two layers replicated at 8. */
static void test_encoder(void **state)
{
    (void)state;
    static const unsigned deg[] = { 2, 4, 8 };
    run t;
    run_tp(&t, FIX "encoder_tp8.safetensors", 1, deg, 3);
    assert_int_equal(stf_check_tp_count(t.r), 3);
    expect_summary(stf_check_tp_summary(t.r, 0), 2, 7, 0, 0, 0, 0, 0);
    expect_summary(stf_check_tp_summary(t.r, 1), 4, 7, 0, 0, 0, 0, 0);
    /* down_proj 8x1024 I8 + 8 F32 scales; o_proj 32x768 + 32 scales. */
    expect_summary(stf_check_tp_summary(t.r, 2), 8, 5, 0, 2, 8224 + 24704, 0, 0);
    assert_null(stf_check_tp_summary(t.r, 3));
    assert_string_equal(message(&t, "T2", "model.layers.0.mlp.down_proj"),
                        "row-parallel layer model.layers.0.mlp.down_proj: at TP 8 each shard "
                        "holds K/8=128 input columns, not a multiple of its ConvRot group size "
                        "G=256, so rotation groups would straddle shards; SGLang replicates the "
                        "layer on every GPU: 8224 bytes per GPU instead of 1028");
    assert_int_equal(stf_check_count(t.r), 2);
    assert_int_equal(stf_check_count_severity(t.r, STF_SEV_WARNING), 2);
    run_free(&t);
}

/* T1, T3, T4 and T5 with their exact messages. */
static void test_rules(void **state)
{
    (void)state;
    static const unsigned d8[] = { 8 };
    run t;
    run_tp(&t, FIX "flux_tp_unsplittable.safetensors", 0, d8, 1);
    assert_string_equal(message(&t, "T1", "single_blocks.0.linear2"),
                        "row-parallel layer single_blocks.0.linear2: K=100 input columns do not "
                        "split into 8 equal shards; SGLang's RowParallelLinear refuses the layer "
                        "and the model does not load at TP 8");
    assert_string_equal(message(&t, "T3", "double_blocks.0.txt_mlp.0"),
                        "column-parallel layer double_blocks.0.txt_mlp.0: N=100 output rows do "
                        "not split into 8 equal shards; SGLang's ColumnParallelLinear refuses "
                        "the layer and the model does not load at TP 8");
    expect_summary(stf_check_tp_summary(t.r, 0), 8, 1, 0, 0, 0, 2, 0);
    assert_int_equal(stf_check_count_severity(t.r, STF_SEV_ERROR), 2);
    run_free(&t);
    run_tp(&t, FIX "encoder_tp_nvfp4.safetensors", 1, d8, 1);
    assert_string_equal(message(&t, "T4", "model.layers.0.mlp.down_proj"),
                        "row-parallel layer model.layers.0.mlp.down_proj (nvfp4): at TP 8 each "
                        "shard holds K/8=8 input columns, which splits its scale blocks of 16 "
                        "columns; SGLang cannot load the shard's scales and the model does not "
                        "load at TP 8");
    run_free(&t);
    /* The qwen-llama profile knows no Flux name: every layer is unknown, T5
     * once per layer whatever the number of degrees. */
    static const unsigned d48[] = { 4, 8 };
    run_tp(&t, FIX "flux_tp8.safetensors", 1, d48, 2);
    assert_string_equal(message(&t, "T5", "img_in"),
                        "layer img_in (64x64) has no parallel style in profile qwen-llama: not "
                        "checked for tensor parallelism");
    assert_int_equal(stf_check_count(t.r), 9);
    expect_summary(stf_check_tp_summary(t.r, 1), 8, 0, 0, 0, 0, 0, 9);
    run_free(&t);
}

/* Detection picks the profile that classifies the most Linear layers. */
static void test_detect(void **state)
{
    (void)state;
    static const struct { const char *file; size_t best, classified, linear; } c[] = {
        { FIX "flux_tp8.safetensors", 0, 8, 9 },
        { FIX "encoder_tp8.safetensors", 1, 7, 7 },
        /* Only "qkv" is known (to flux); norm_out is a 2-D BF16 Linear too. */
        { "fixtures/comfy/healthy_int8_g64.safetensors", 0, 1, 2 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        run t;
        stf_err err;
        memset(&t, 0, sizeof t);
        if (stf_ckpt_open(&t.c, c[i].file, NULL, &err)) fail_msg("%s", err.msg);
        for (size_t j = 0; j < NPROF; j++)
            if (stf_tp_profile_load_file(&t.p[j], NULL, PROFILES[j], &err))
                fail_msg("%s", err.msg);
        stf_model *m = NULL;
        assert_int_equal(stf_model_build(&m, t.c, &err), 0);
        size_t best, cl, lin;
        assert_int_equal(stf_tp_profile_detect(&best, &cl, &lin,
                                               (const stf_tp_profile *const *)t.p, NPROF, m,
                                               &err), 0);
        assert_int_equal(best, c[i].best);
        assert_int_equal(cl, c[i].classified);
        assert_int_equal(lin, c[i].linear);
        /* With the Wan profile alone, none of these names is known. */
        assert_int_equal(stf_tp_profile_detect(&best, &cl, &lin,
                                               (const stf_tp_profile *const *)t.p + 2, 1, m,
                                               &err), 0);
        assert_int_equal(best, SIZE_MAX);
        assert_int_equal(cl, 0);
        assert_int_equal(lin, c[i].linear);
        stf_model_free(m);
        run_free(&t);
    }
}

/* No degrees: exactly stf_check_run. Bad degrees: refused, no report. */
static void test_degrees(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err err;
    assert_int_equal(stf_ckpt_open(&c, FIX "encoder_tp8.safetensors", NULL, &err), 0);
    stf_tp_opts o;
    stf_tp_opts_init(&o);
    assert_int_equal(o.version, STF_TP_OPTS_VERSION);
    assert_int_equal(o.count, 0);
    stf_check_report *r = NULL, *plain = NULL;
    assert_int_equal(stf_check_run_tp(&r, c, NULL, &o, &err), 0);
    assert_int_equal(stf_check_run(&plain, c, NULL, &err), 0);
    assert_int_equal(stf_check_count(r), stf_check_count(plain));
    assert_int_equal(stf_check_tp_count(r), 0);
    stf_check_report_free(r);
    stf_check_report_free(plain);
    o.count = 1;
    o.degrees[0] = 0;
    r = (stf_check_report *)1;
    assert_int_equal(stf_check_run_tp(&r, c, NULL, &o, &err), STF_EINVAL);
    assert_null(r);
    assert_string_equal(err.msg, "stf_tp_opts: degree 0 is outside 1 to 65536");
    o.count = STF_TP_MAX_DEGREES + 1;
    assert_int_equal(stf_check_run_tp(&r, c, NULL, &o, &err), STF_EINVAL);
    assert_string_equal(err.msg, "stf_tp_opts: 17 degrees (at most 16)");
    o.version = 0;
    assert_int_equal(stf_check_run_tp(&r, c, NULL, &o, &err), STF_EINVAL);
    /* Without a classifier every Linear layer is unknown. */
    stf_tp_opts_init(&o);
    o.count = 1;
    o.degrees[0] = 8;
    assert_int_equal(stf_check_run_tp(&r, c, NULL, &o, &err), 0);
    expect_summary(stf_check_tp_summary(r, 0), 8, 0, 0, 0, 0, 0, 7);
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoder), cmocka_unit_test(test_rules),
        cmocka_unit_test(test_detect),  cmocka_unit_test(test_degrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
