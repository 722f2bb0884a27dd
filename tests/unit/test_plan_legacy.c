/*
 * Tests for lib/pipeline/plan_legacy.c: migrate-scaled-fp8 turns a legacy
 * scaled-FP8 layer into comfy_quant form in the plan (renamed and widened
 * scales, the input scale of exactly 1.0 dropped, the marker of the
 * weight's own format, full_precision_matrix_mult from a two-element
 * scaled_fp8), leaves other layers alone, and refuses what it cannot
 * migrate with the layer, rule and recipe line.
 */
#include "plan_testutil.h"

#define RECIPE                                                                        \
    "stfix: 1\ntarget: comfyui\nrules:\n  - name: r\n    match: {weight: present}\n" \
    "    do: migrate-scaled-fp8\n  - name: s\n"                                       \
    "    match: {weight: absent, prefix: [scaled_fp8, \"**.scaled_fp8\"]}\n    do: drop\n"

static const float one_f32 = 1.0f, s_f32 = 0.015625f, in_f32 = 0.75f;
static const uint16_t one_f16 = 0x3C00, s_bf16 = 0x3C80 /* 0.015625 */, in_bf16 = 0x3F40;
static const unsigned char codes[16 * 32];

static const stf_plan_tensor_info *out_ok(const pt_ckpt *k, const char *name, const char *dtype,
                                          stf_out_op op)
{
    const stf_plan_tensor_info *t = pt_out(k, name);
    if (!t) fail_msg("no output %s", name);
    assert_string_equal(stf_dtype_name(t->dtype), dtype);
    assert_int_equal(t->op, op);
    return t;
}

static int64_t in_index(const pt_ckpt *k, const char *name)
{
    size_t i;
    assert_int_equal(stf_ckpt_find(&i, k->c, name), 0);
    return (int64_t)i;
}

/* E4M3 without a prefix: F32 scales copied under their new names, the
 * 1.0 input scale dropped, scaled_fp8 dropped, the other layer unchanged. */
static void test_e4m3(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "a.weight", "F8_E4M3", codes, 16, 32);
    pt_add(&k, "a.scale_weight", "F32", 0, NULL, &s_f32);
    pt_add(&k, "a.scale_input", "F32", 0, NULL, &one_f32);
    PT_ADD(&k, "b.weight", "F8_E4M3", codes, 16, 32);
    pt_add(&k, "b.scale_weight", "F32", 0, NULL, &s_f32);
    pt_add(&k, "b.scale_input", "F32", 0, NULL, &in_f32);
    PT_ADD(&k, "n.weight", "BF16", NULL, 32);
    PT_ADD(&k, "scaled_fp8", "F8_E4M3", NULL, 0);
    pt_open(&k);
    pt_recipe(&k, RECIPE);
    pt_plan_ok(&k);
    char buf[128];
    assert_string_equal(pt_new_bytes(&k, "a.comfy_quant", buf, sizeof buf),
                        "{\"format\": \"float8_e4m3fn\"}");
    assert_string_equal(pt_new_bytes(&k, "b.comfy_quant", buf, sizeof buf),
                        "{\"format\": \"float8_e4m3fn\"}");
    assert_int_equal(out_ok(&k, "a.weight", "F8_E4M3", STF_OUT_COPY)->src,
                     in_index(&k, "a.weight"));
    assert_int_equal(out_ok(&k, "a.weight_scale", "F32", STF_OUT_COPY)->src,
                     in_index(&k, "a.scale_weight"));
    assert_int_equal(out_ok(&k, "b.input_scale", "F32", STF_OUT_COPY)->src,
                     in_index(&k, "b.scale_input"));
    assert_null(pt_out(&k, "a.input_scale"));
    assert_null(pt_out(&k, "a.scale_weight"));
    assert_true(pt_dropped(&k, "a.scale_input"));
    assert_true(pt_dropped(&k, "scaled_fp8"));
    assert_false(pt_dropped(&k, "a.scale_weight"));
    assert_int_equal(stf_plan_tensor_count(k.p), 8);
    assert_string_equal(stf_plan_layer(k.p, 0)->summary,
                        "scale_weight -> weight_scale F32; marker float8_e4m3fn; scale_input "
                        "dropped (1.0)");
    assert_string_equal(stf_plan_layer(k.p, 1)->summary,
                        "scale_weight -> weight_scale F32; marker float8_e4m3fn; scale_input -> "
                        "input_scale F32");
    assert_string_equal(stf_plan_layer(k.p, 2)->summary, "unchanged");
    pt_free(&k);
}

/* E5M2 under a prefix whose scaled_fp8 holds two elements: float8_e5m2
 * with full_precision_matrix_mult, BF16 scales widened; an F16 input
 * scale of exactly 1.0 is dropped. */
static void test_e5m2_prefix(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "m.a.weight", "F8_E5M2", codes, 16, 32);
    pt_add(&k, "m.a.scale_weight", "BF16", 0, NULL, &s_bf16);
    pt_add(&k, "m.a.scale_input", "BF16", 0, NULL, &in_bf16);
    PT_ADD(&k, "m.b.weight", "F8_E5M2", codes, 16, 32);
    pt_add(&k, "m.b.scale_weight", "BF16", 0, NULL, &s_bf16);
    pt_add(&k, "m.b.scale_input", "F16", 0, NULL, &one_f16);
    PT_ADD(&k, "m.scaled_fp8", "F8_E5M2", NULL, 2);
    pt_open(&k);
    pt_recipe(&k, RECIPE);
    pt_plan_ok(&k);
    char buf[128];
    assert_string_equal(pt_new_bytes(&k, "m.a.comfy_quant", buf, sizeof buf),
                        "{\"format\": \"float8_e5m2\", \"full_precision_matrix_mult\": true}");
    assert_int_equal(out_ok(&k, "m.a.weight_scale", "F32", STF_OUT_CAST)->src,
                     in_index(&k, "m.a.scale_weight"));
    assert_int_equal(out_ok(&k, "m.a.input_scale", "F32", STF_OUT_CAST)->src,
                     in_index(&k, "m.a.scale_input"));
    assert_null(pt_out(&k, "m.b.input_scale"));
    assert_true(pt_dropped(&k, "m.b.scale_input"));
    assert_true(pt_dropped(&k, "m.scaled_fp8"));
    pt_free(&k);
}

/* What cannot be migrated is refused, naming the layer, rule and line. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *wdt, *sdt, *extra, *msg;
    } c[] = {
        { "BF16", "F32", NULL, "the weight is BF16, not F8_E4M3 or F8_E5M2" },
        { "F8_E4M3", "I8", NULL, "scale_weight is I8, not F32, BF16 or F16" },
        { "F8_E4M3", "F32", "l.weight_scale", "the layer has both scale_weight and weight_scale" },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pt_ckpt k = { 0 };
        PT_ADD(&k, "l.weight", c[i].wdt, NULL, 16, 32);
        PT_ADD(&k, "l.scale_weight", c[i].sdt, NULL, 1);
        if (c[i].extra) PT_ADD(&k, c[i].extra, "F32", NULL, 1);
        pt_open(&k);
        pt_recipe(&k, RECIPE);
        char want[256];
        snprintf(want, sizeof want, "layer 'l': rule 'r' (recipe line 6): migrate-scaled-fp8: %s",
                 c[i].msg);
        pt_expect_err(&k, want);
        pt_free(&k);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3),
        cmocka_unit_test(test_e5m2_prefix),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
