/*
 * lib/pipeline/plan_job.c, requantize: the jobs handed to the run for
 * float, INT8, W4A4, grouped-scale and MoE-bank weights, the group size and
 * mode choices (tensor parallel included), the exact canonical marker bytes
 * and the exact refusals, on small in-memory checkpoints.
 */
#include "plan_testutil.h"

static float g_s16[256];

static void test_requantize_float_linear(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    PT_ADD(&k, L ".weight", "BF16", NULL, 16, 256);
    PT_ADD(&k, L ".bias", "BF16", NULL, 16);
    pt_open(&k);
    pt_recipe1(&k, "{weight_dtype: BF16, shape: \"rank == 2\"}", "requantize");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_tensor_count(k.p), 4);
    const stf_plan_tensor_info *w = pt_out(&k, L ".weight");
    assert_int_equal(w->op, STF_OUT_QUANT_WEIGHT);
    assert_int_equal(w->dtype, STF_I8);
    pt_shape_is(w, 2, PT_SHAPE(16, 256));
    assert_int_equal(w->src, 0);
    const stf_plan_tensor_info *s = pt_out(&k, L ".weight_scale");
    assert_int_equal(s->op, STF_OUT_QUANT_SCALE);
    pt_shape_is(s, 2, PT_SHAPE(16, 1));
    assert_string_equal(pt_new_bytes(&k, L ".comfy_quant", b, sizeof b), MK_G256);
    const stf__job *j = pt_job_of(&k, L ".weight");
    assert_int_equal(j->dec.kind, STF__DEC_FLOAT);
    assert_int_equal(j->dec.w_dtype, STF_BF16);
    assert_int_equal(j->dec.n, 16);
    assert_int_equal(j->dec.k, 256);
    assert_int_equal(j->group, 256);
    assert_int_equal(j->mode, STF_QMODE_CUDA);
    assert_int_equal(j->t, STF_BF16);
    const stf_plan_layer_info *pl = stf_plan_layer(k.p, 0);
    assert_int_equal(pl->requantize, 1);
    assert_int_equal(pl->group, 256);
    assert_string_equal(pl->format, "int8_tensorwise");
    assert_int_equal(k.p->outs[pt_out_index(&k, L ".weight")].group != NULL, 1);
    assert_string_equal(k.p->outs[pt_out_index(&k, L ".weight")].group, L);
    pt_free(&k);
}

static void test_requantize_mode_and_groups(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "F16", NULL, 16, 192);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "{requantize: {group_sizes: [256, 64, 16], quant_mode: eager}}");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, L ".weight");
    assert_int_equal(j->group, 64);
    assert_int_equal(j->mode, STF_QMODE_EAGER);
    assert_int_equal(j->t, STF_F16);
    stf_plan_free(k.p);
    k.p = NULL;
    /* --quant-mode wins over the recipe. */
    stf_plan_opts o;
    stf_plan_opts_init(&o);
    o.quant_mode_set = 1;
    o.quant_mode = STF_QMODE_FP32;
    stf_err err;
    assert_int_equal(pt_plan(&k, &o, &err), 0);
    assert_int_equal(pt_job_of(&k, L ".weight")->mode, STF_QMODE_FP32);
    pt_free(&k);
}

/* A recipe whose `parallel` list gives layer L the style `style`. */
static void tp_recipe(pt_ckpt *k, const char *style, const char *tp)
{
    char y[1024];
    snprintf(y, sizeof y, "stfix: 1\ntarget: sglang\nparallel:\n  - {match: {prefix: '%s'}, "
             "style: %s}\nrules:\n  - name: r\n    match: {weight: present}\n"
             "    do: {requantize: {tp: %s}}\n", L, style, tp);
    pt_recipe(k, y);
}

static void test_requantize_tensor_parallel(void **state)
{
    (void)state;
    /* K = 320: 64 divides K but not K/tp = 160, so a row layer gets G = 16. */
    static const struct { const char *style, *tp; unsigned g; const char *why; } cases[] = {
        { "row", "2", 16, "G=16 (was none; largest allowed G dividing K/2=160, row-parallel)" },
        { "row", "[2, 4]", 16, "G=16 (was none; largest allowed G dividing K/4=80, "
                               "row-parallel)" },
        /* Column and replicated layers are not split along K: G for K. */
        { "column", "2", 64, "G=64 (was none; largest allowed G dividing K=320, column style)" },
        { "replicated", "2", 64, "G=64 (was none; largest allowed G dividing K=320, replicated "
                                 "style)" },
        /* K = 320 does not split into 3 shards: no G helps, so G for K. */
        { "row", "3", 64, "G=64 (was none; row-parallel K=320 does not split at TP 3: G for K)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pt_ckpt k = { 0 };
        PT_ADD(&k, L ".weight", "BF16", NULL, 16, 320);
        pt_open(&k);
        tp_recipe(&k, cases[i].style, cases[i].tp);
        pt_plan_ok(&k);
        assert_int_equal(pt_job_of(&k, L ".weight")->group, cases[i].g);
        char want[256];
        snprintf(want, sizeof want, "requantize to int8_tensorwise, %s", cases[i].why);
        assert_string_equal(stf_plan_layer(k.p, 0)->summary, want);
        pt_free(&k);
    }
    /* No style (no profile, no parallel list): treated as not row-parallel. */
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "BF16", NULL, 16, 320);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "{requantize: {tp: 2}}");
    pt_plan_ok(&k);
    assert_int_equal(pt_job_of(&k, L ".weight")->group, 64);
    pt_free(&k);
}

static void test_requantize_indivisible(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 24);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 1);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"int8_tensorwise\"}");
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "{requantize: {fallback_dtype: F32}}");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *w = pt_out(&k, L ".weight");
    assert_int_equal(w->op, STF_OUT_DEQUANT);
    assert_int_equal(w->dtype, STF_F32);
    assert_true(pt_dropped(&k, L ".weight_scale"));
    assert_true(pt_dropped(&k, L ".comfy_quant"));
    assert_int_equal(stf_plan_layer(k.p, 0)->requantize, 0);
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "BF16", NULL, 16, 24);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "{requantize: {on_indivisible: fail}}");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): requantize: no allowed group size "
                   "divides K=24 (on_indivisible: fail)");
    pt_free(&k);
}

static void test_requantize_decodes(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    /* Sylvester-rotated G=128, FP8 with a scalar scale, W4A4 -> W4A4. */
    PT_ADD(&k, "s.weight", "I8", NULL, 16, 256);
    PT_ADD(&k, "s.weight_scale", "F32", g_s16, 16, 1);
    pt_marker(&k, "s.comfy_quant", "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                                   "\"convrot_groupsize\": 128}");
    PT_ADD(&k, "f.weight", "F8_E4M3", NULL, 16, 256);
    pt_add(&k, "f.weight_scale", "F32", 0, NULL, g_s16);
    pt_add(&k, "f.input_scale", "F32", 0, NULL, g_s16);
    pt_marker(&k, "f.comfy_quant", "{\"format\": \"float8_e4m3fn\"}");
    PT_ADD(&k, "w.weight", "I8", NULL, 16, 128);
    PT_ADD(&k, "w.weight_scale", "F32", g_s16, 16);
    pt_marker(&k, "w.comfy_quant", W4M);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n"
                  "  - name: w4\n    match: {format: convrot_w4a4}\n"
                  "    do: {requantize: {format: convrot_w4a4, linear_dtype: int8}}\n"
                  "  - name: q\n    match: {marker: present}\n    do: requantize\n");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, "s.weight");
    assert_int_equal(j->dec.kind, STF__DEC_INT8);
    assert_int_equal(j->dec.rot_group, 128);
    assert_int_equal(j->dec.sylvester, 1);
    assert_int_equal(j->group, 256);
    j = pt_job_of(&k, "f.weight");
    assert_int_equal(j->dec.kind, STF__DEC_FP8);
    assert_int_equal(j->dec.w_dtype, STF_F8_E4M3);
    assert_true(j->dec.s_idx >= 0);
    assert_true(pt_dropped(&k, "f.input_scale"));
    j = pt_job_of(&k, "w.weight");
    assert_int_equal(j->kind, STF__JOB_REQUANT_W4A4);
    assert_int_equal(j->dec.kind, STF__DEC_W4A4);
    assert_int_equal(j->dec.k, 256);
    assert_int_equal(j->dec.rot_group, 256);
    pt_shape_is(pt_out(&k, "w.weight"), 2, PT_SHAPE(16, 128));
    pt_shape_is(pt_out(&k, "w.weight_scale"), 1, PT_SHAPE(16));
    assert_string_equal(pt_new_bytes(&k, "w.comfy_quant", b, sizeof b),
                        "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 256, "
                        "\"linear_dtype\": \"int8\"}");
    pt_free(&k);
}

/* `(N,g)` (stfix-defects(7), SCALE SHAPES): an [N,g] scale with g | K decodes
 * per row per group, also when N*g == K (not a column scale); [N,1] stays per
 * row; g not dividing K is refused with the shapes. */
static void test_requantize_grouped_scales(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    static const char mk[] = "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                             "\"convrot_groupsize\": 256}";
    PT_ADD(&k, "a.weight", "I8", NULL, 16, 256);
    PT_ADD(&k, "a.weight_scale", "F32", g_s16, 16, 2);
    pt_marker(&k, "a.comfy_quant", mk);
    PT_ADD(&k, "b.weight", "I8", NULL, 16, 256);
    PT_ADD(&k, "b.weight_scale", "F32", g_s16, 16, 16);
    pt_marker(&k, "b.comfy_quant", mk);
    PT_ADD(&k, "c.weight", "I8", NULL, 16, 256);
    PT_ADD(&k, "c.weight_scale", "F32", g_s16, 16, 1);
    pt_marker(&k, "c.comfy_quant", mk);
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "requantize");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, "a.weight");
    assert_int_equal(j->dec.kind, STF__DEC_INT8);
    assert_int_equal(j->dec.axis, STF_SCALE_ROW);
    assert_int_equal(j->dec.groups, 2);
    assert_int_equal(j->dec.rot_group, 256);
    assert_int_equal(j->group, 256);
    pt_shape_is(pt_out(&k, "a.weight_scale"), 2, PT_SHAPE(16, 1));
    j = pt_job_of(&k, "b.weight");
    assert_int_equal(j->dec.axis, STF_SCALE_ROW);
    assert_int_equal(j->dec.groups, 16);
    j = pt_job_of(&k, "c.weight");
    assert_int_equal(j->dec.axis, STF_SCALE_ROW);
    assert_int_equal(j->dec.groups, 0);
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 3);
    pt_marker(&k, L ".comfy_quant", mk);
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "requantize");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): requantize: scale (16, 3) is "
                      "neither scalar, per row (N=16) nor per column (K=256): grouped/blockwise "
                      "scales cannot be decoded");
    pt_free(&k);
}

static void test_requantize_refusals(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "U8", NULL, 16, 128);
    PT_ADD(&k, L ".weight_scale", "F8_E4M3", NULL, 16, 16);
    pt_add(&k, L ".weight_scale_2", "F32", 0, NULL, g_s16);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"nvfp4\"}");
    pt_open(&k);
    pt_recipe1(&k, "{format: nvfp4}", "requantize");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): requantize: format 'nvfp4' cannot be "
                   "decoded (stfix reads float, FP8, INT8 and convrot_w4a4 layers); exclude needs "
                   "the original weights");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, "c.weight", "BF16", NULL, 8, 4, 3, 3);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "requantize");
    pt_expect_err(&k, "layer 'c': rule 'r' (recipe line 6): requantize: weight has rank 4; requantize "
                   "needs a Linear weight (flatten-conv first, or exclude it)");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, "c.weight", "BF16", NULL, 8, 4, 4, 4);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "[flatten-conv, requantize]");
    pt_plan_ok(&k);
    pt_shape_is(pt_out(&k, "c.weight"), 2, PT_SHAPE(8, 64));
    assert_int_equal(pt_job_of(&k, "c.weight")->group, 64);
    pt_free(&k);
}

static void test_requantize_moe_bank(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    PT_ADD(&k, "e.weight", "I8", NULL, 2, 8, 256);
    PT_ADD(&k, "e.weight_scale", "F32", g_s16, 2, 8, 1);
    pt_marker(&k, "e.comfy_quant", "{\"format\": \"int8_tensorwise\", \"num_experts\": 2}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "requantize");
    pt_plan_ok(&k);
    pt_shape_is(pt_out(&k, "e.weight"), 3, PT_SHAPE(2, 8, 256));
    pt_shape_is(pt_out(&k, "e.weight_scale"), 3, PT_SHAPE(2, 8, 1));
    const stf__job *j = pt_job_of(&k, "e.weight");
    assert_int_equal(j->dec.n, 16);
    assert_int_equal(j->dec.k, 256);
    assert_int_equal(j->dec.axis, STF_SCALE_ROW);
    assert_int_equal(j->dec.rot_group, 0);
    assert_string_equal(pt_new_bytes(&k, "e.comfy_quant", b, sizeof b),
                        "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                        "\"convrot_groupsize\": 256, \"num_experts\": 2}");
    pt_free(&k);
}

int main(void)
{
    for (int i = 0; i < 256; i++) g_s16[i] = 0.01f * (float)(i + 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requantize_float_linear),
        cmocka_unit_test(test_requantize_mode_and_groups),
        cmocka_unit_test(test_requantize_tensor_parallel),
        cmocka_unit_test(test_requantize_indivisible),
        cmocka_unit_test(test_requantize_decodes),
        cmocka_unit_test(test_requantize_grouped_scales),
        cmocka_unit_test(test_requantize_refusals),
        cmocka_unit_test(test_requantize_moe_bank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
