/*
 * lib/pipeline/plan_view.c: what selectors see of a layer — logical N and K
 * (packed W4A4, conv kernels, MoE banks), scale fields, the marker's
 * top-level fields as JSON text, the declared rotation, and the H1 verdict
 * mapped from stf_probe_h1, also as measured ahead on a pool
 * (plan_probe.c). Run from the repository root.
 */
#include "plan_testutil.h"

static float g_s[32];

typedef struct vt {
    stf_ckpt *c;
    stf_model *m;
} vt;

static const stf_layer *open_layer(vt *v, pt_ckpt *k, const char *prefix)
{
    stf_err err;
    stf_err_clear(&err);
    pt_open(k);
    assert_int_equal(stf_model_build(&v->m, k->c, &err), 0);
    size_t i;
    assert_int_equal(stf_model_find_layer(&i, v->m, prefix, strlen(prefix)), 0);
    return stf_model_layer(v->m, i);
}

static void test_view_int8_and_marker_fields(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    vt v = { 0 };
    PT_ADD(&k, "a.weight", "I8", NULL, 8, 64);
    PT_ADD(&k, "a.weight_scale", "BF16", g_s, 8);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                                   "\"convrot_groupsize\": 64.0, \"params\": {\"x\": [1, 2]}}");
    const stf_layer *l = open_layer(&v, &k, "a");
    stf_layer_view lv;
    stf__view_store st;
    stf_err err;
    assert_int_equal(stf__plan_view(&lv, &st, v.m, l, &err), 0);
    assert_string_equal(lv.prefix, "a");
    assert_int_equal(lv.has_weight, 1);
    assert_int_equal(lv.weight_dtype, STF_I8);
    assert_int_equal(lv.n, 8);
    assert_int_equal(lv.k, 64);
    assert_int_equal(lv.has_scale, 1);
    assert_int_equal(lv.scale_dtype, STF_BF16);
    assert_int_equal(lv.scale_rank, 1);
    assert_int_equal(lv.scale_shape[0], 8);
    assert_int_equal(lv.has_marker, 1);
    assert_string_equal(lv.format, "int8_tensorwise");
    assert_int_equal(lv.marker_field_count, 4);
    assert_string_equal(lv.marker_fields[0].key, "format");
    assert_string_equal(lv.marker_fields[0].json, "\"int8_tensorwise\"");
    assert_string_equal(lv.marker_fields[1].json, "true");
    assert_string_equal(lv.marker_fields[2].json, "64.0");
    assert_string_equal(lv.marker_fields[3].key, "params");
    assert_string_equal(lv.marker_fields[3].json, "{\"x\": [1, 2]}");
    assert_int_equal(lv.probe, STF_PROBE_UNKNOWN);
    assert_int_equal(stf__plan_rotation(l), STF_ROTATION_REGULAR);
    stf__view_store_free(&st);
    stf_model_free(v.m);
    pt_free(&k);
}

static void test_view_packed_conv_moe(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    vt v = { 0 };
    PT_ADD(&k, "w.weight", "I8", NULL, 16, 128);
    PT_ADD(&k, "w.weight_scale", "F32", g_s, 16);
    pt_marker(&k, "w.comfy_quant", "{\"format\": \"convrot_w4a4\"}");
    PT_ADD(&k, "a.weight", "I8", NULL, 16, 64);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int4_convrot_w4a4\"}");
    PT_ADD(&k, "c.weight", "BF16", NULL, 8, 4, 3, 3);
    PT_ADD(&k, "e.weight", "I8", NULL, 2, 8, 32);
    pt_marker(&k, "e.comfy_quant", "{\"format\": \"int8_tensorwise\", \"num_experts\": 2}");
    pt_open(&k);
    stf_err err;
    assert_int_equal(stf_model_build(&v.m, k.c, &err), 0);
    static const struct { const char *p; uint64_t n, k; } want[] = {
        { "w", 16, 256 }, { "c", 8, 36 }, { "e", 16, 32 }, { "a", 16, 128 }
    };
    for (size_t i = 0; i < 4; i++) {
        size_t li;
        assert_int_equal(stf_model_find_layer(&li, v.m, want[i].p, 1), 0);
        stf_layer_view lv;
        stf__view_store st;
        assert_int_equal(stf__plan_view(&lv, &st, v.m, stf_model_layer(v.m, li), &err), 0);
        assert_int_equal(lv.n, want[i].n);
        assert_int_equal(lv.k, want[i].k);
        stf__view_store_free(&st);
    }
    stf_model_free(v.m);
    pt_free(&k);
}

static void test_rotation_kinds(void **state)
{
    (void)state;
    static const struct { const char *mk; stf_rotation_kind want; } cases[] = {
        { "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 16}",
          STF_ROTATION_REGULAR },
        { "{\"format\": \"int8_tensorwise\", \"convrot\": true}", STF_ROTATION_REGULAR },
        { "{\"format\": \"int8_tensorwise\", \"convrot\": 1, \"convrot_groupsize\": 128}",
          STF_ROTATION_SYLVESTER },
        { "{\"format\": \"int8_tensorwise\", \"params\": {\"convrot\": true, "
          "\"convrot_groupsize\": \"512\"}}", STF_ROTATION_SYLVESTER },
        { "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 96}",
          STF_ROTATION_UNKNOWN },
        { "{\"format\": \"int8_tensorwise\", \"convrot\": false}", STF_ROTATION_UNKNOWN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pt_ckpt k = { 0 };
        vt v = { 0 };
        PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
        pt_marker(&k, "a.comfy_quant", cases[i].mk);
        const stf_layer *l = open_layer(&v, &k, "a");
        assert_int_equal(stf__plan_rotation(l), cases[i].want);
        stf_model_free(v.m);
        pt_free(&k);
    }
}

/* The probes' read block under max_mem: an equal share per thread, halved,
 * between 4 KiB and 128 KiB; 0 (their default) without a cap or for a
 * layout-1 caller. */
static void test_probe_block(void **state)
{
    (void)state;
    stf_plan_opts po;
    stf_err err;
    stf_plan_opts_init(&po);
    assert_int_equal(stf__plan_probe_block(NULL), 0);
    assert_int_equal(stf__plan_probe_block(&po), 0);
    po.max_mem = 64u << 20;
    assert_int_equal(stf__plan_probe_block(&po), 128u * 1024u);
    po.max_mem = 100000;
    assert_int_equal(stf__plan_probe_block(&po), 50000);
    assert_int_equal(stf_pool_new(&po.pool, 4, &err), 0);
    assert_int_equal(stf__plan_probe_block(&po), 12500);
    po.max_mem = 1000;
    assert_int_equal(stf__plan_probe_block(&po), 4096);
    po.version = 1;
    assert_int_equal(stf__plan_probe_block(&po), 0);
    stf_pool_free(po.pool);
}

static void test_probe_verdicts(void **state)
{
    (void)state;
    signed char *rows = pt_rows_i8(32, 32), *cols = pt_cols_i8(32, 32);
    const signed char *data[2] = { rows, cols };
    stf_probe_verdict want[2] = { STF_PROBE_ROW, STF_PROBE_COLUMN };
    for (int i = 0; i < 2; i++) {
        pt_ckpt k = { 0 };
        vt v = { 0 };
        PT_ADD(&k, "a.weight", "I8", data[i], 32, 32);
        PT_ADD(&k, "a.weight_scale", "F32", g_s, 32);
        pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\"}");
        const stf_layer *l = open_layer(&v, &k, "a");
        stf_probe_verdict pv = STF_PROBE_AMBIGUOUS;
        stf_err err;
        assert_int_equal(stf__plan_probe_w4(l), 0);
        assert_int_equal(stf__plan_probe_h1(&pv, NULL, v.m, l, 0, &err), 0);
        assert_int_equal(pv, want[i]);
        /* The same verdict measured ahead on a pool of 3 threads. */
        size_t li;
        assert_int_equal(stf_model_find_layer(&li, v.m, "a", 1), 0);
        stf_plan_opts po;
        stf_plan_opts_init(&po);
        assert_int_equal(stf_pool_new(&po.pool, 3, &err), 0);
        stf__probe_ahead pa;
        assert_int_equal(stf__probe_ahead_init(&pa, stf_model_layer_count(v.m), &err), 0);
        stf__probe_ahead_want(&pa, li, l);
        assert_int_equal(stf__probe_ahead_run(&pa, &po, v.m, &err), 0);
        assert_int_equal(pa.verdict[li], want[i] + 1);
        pv = STF_PROBE_AMBIGUOUS;
        assert_int_equal(stf__probe_ahead_get(&pv, &pa, &po, v.m, li, l, &err), 0);
        assert_int_equal(pv, want[i]);
        /* Under a memory cap the probe reads smaller blocks: same verdict. */
        po.max_mem = 1;
        pv = STF_PROBE_AMBIGUOUS;
        assert_int_equal(stf__plan_probe_h1(&pv, &po, v.m, l, 0, &err), 0);
        assert_int_equal(pv, want[i]);
        po.max_mem = 0;
        stf__probe_ahead_free(&pa);
        stf_pool_free(po.pool);
        stf_model_free(v.m);
        pt_free(&k);
    }
    /* A float layer cannot be probed: UNKNOWN, no error. */
    pt_ckpt k = { 0 };
    vt v = { 0 };
    PT_ADD(&k, "a.weight", "BF16", NULL, 4, 4);
    const stf_layer *l = open_layer(&v, &k, "a");
    stf_probe_verdict pv = STF_PROBE_ROW;
    stf_err err;
    assert_int_equal(stf__plan_probe_h1(&pv, NULL, v.m, l, 0, &err), 0);
    assert_int_equal(pv, STF_PROBE_UNKNOWN);
    stf_model_free(v.m);
    pt_free(&k);
    free(rows);
    free(cols);
}

int main(void)
{
    for (int i = 0; i < 32; i++) g_s[i] = 1.0f;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_int8_and_marker_fields),
        cmocka_unit_test(test_view_packed_conv_moe),
        cmocka_unit_test(test_rotation_kinds),
        cmocka_unit_test(test_probe_block),
        cmocka_unit_test(test_probe_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
