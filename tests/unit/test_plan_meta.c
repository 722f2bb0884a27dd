/*
 * lib/pipeline/plan_meta.c: the output __metadata__ — input keys kept
 * (union over shards), stfix.version and stfix.recipe_sha256 stamped when
 * the output differs from the input (plan_same.c), and
 * _quantization_metadata kept verbatim, rebuilt from the output markers,
 * dropped on request or when no marker is left, never invented.
 * Run from the repository root.
 */
#include "plan_testutil.h"

static float g_s[16];

static const char *const set_marker_yaml =
    "stfix: 1\ntarget: sglang\nrules:\n  - name: m\n    match: {marker: present}\n"
    "    do: set-marker\n";

static void layer(pt_ckpt *k, const char *marker)
{
    PT_ADD(k, L ".weight", "I8", NULL, 16, 256);
    PT_ADD(k, L ".weight_scale", "F32", g_s, 16, 1);
    if (marker) pt_marker(k, L ".comfy_quant", marker);
}

static void test_keys_kept_and_stamped(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    layer(&k, MK_G256);
    k.meta_json = "{\"zeta\":\"1\",\"format\":\"pt\",\"stfix.version\":\"0.0.1\","
                  "\"quant_format\":\"mxfp8\"}";
    pt_open(&k);
    pt_recipe(&k, set_marker_yaml);
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_meta_count(k.p), 4);
    assert_string_equal(stf_plan_meta(k.p, 0)->key, "format");
    assert_string_equal(stf_plan_meta(k.p, 0)->value, "pt");
    assert_string_equal(stf_plan_meta(k.p, 1)->key, "stfix.recipe_sha256");
    assert_string_equal(stf_plan_meta(k.p, 1)->value, stf_recipe_sha256(k.r));
    assert_int_equal(strlen(stf_plan_meta(k.p, 1)->value), 64);
    /* The input's own stfix.version is replaced by this version's. */
    assert_string_equal(stf_plan_meta(k.p, 2)->key, "stfix.version");
    assert_string_equal(stf_plan_meta(k.p, 2)->value, STF_VERSION_STRING);
    assert_string_equal(stf_plan_meta(k.p, 3)->key, "zeta");
    /* quant_format is never written (stfix-defects(7), MARKER CHANNELS). */
    assert_null(pt_meta(&k, "quant_format"));
    /* No _quantization_metadata in, none out (markers are not invented in metadata). */
    assert_null(pt_meta(&k, "_quantization_metadata"));
    assert_int_equal(k.p->emit_meta, 1);
    pt_free(&k);
}

/* A plan whose actions leave every byte of a canonical file as it is: not
 * changed, not stamped, its marker "already canonical". The same layer in
 * a file that is not canonical, or with a metadata key the plan drops, is
 * a change of the file though not of the layer, and is stamped. */
static void test_unchanged_not_stamped(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_recipe *r = NULL;
    stf_plan *p = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_ckpt_open(&c, "fixtures/comfy/healthy_int8_g256.safetensors", NULL,
                                   &err), 0);
    assert_int_equal(stf_recipe_load_mem(&r, NULL, set_marker_yaml, strlen(set_marker_yaml),
                                         "m.yaml", &err), 0);
    assert_int_equal(stf_plan_build(&p, c, r, NULL, &err), 0);
    assert_int_equal(stf_plan_changed(p), 0);
    assert_int_equal(stf_plan_layer(p, 0)->changed, 0);
    assert_int_equal(stf_plan_layer(p, 0)->nactions, 1);
    assert_string_equal(stf_plan_layer(p, 0)->summary,
                        "marker already canonical (int8_tensorwise)");
    for (size_t i = 0; i < stf_plan_meta_count(p); i++)
        assert_null(strstr(stf_plan_meta(p, i)->key, "stfix."));
    assert_int_equal(stf_plan_meta_count(p), stf_ckpt_meta_count(c, 0));
    stf_plan_free(p);
    stf_recipe_free(r);
    stf_ckpt_free(c);

    for (int drop = 0; drop < 2; drop++) {
        pt_ckpt k = { 0 };
        layer(&k, MK_G256);
        k.meta_json = drop ? "{\"format\":\"pt\",\"quant_format\":\"int8\"}"
                           : "{\"format\":\"pt\"}"; /* after the tensors: not canonical */
        pt_open(&k);
        pt_recipe(&k, set_marker_yaml);
        pt_plan_ok(&k);
        assert_int_equal(stf_plan_changed(k.p), 1);
        assert_int_equal(stf_plan_layer(k.p, 0)->changed, 0);
        assert_string_equal(pt_meta(&k, "stfix.version"), STF_VERSION_STRING);
        pt_free(&k);
    }
}

static void test_qmeta_verbatim_when_unchanged(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    layer(&k, MK_G256);
    /* Compact separators: not canonical, but equal, so it is kept byte for byte. */
    k.meta_json = "{\"_quantization_metadata\":\"{\\\"layers\\\":{\\\"" L "\\\":{\\\"format\\\":"
                  "\\\"int8_tensorwise\\\",\\\"convrot\\\":true,\\\"convrot_groupsize\\\":256}},"
                  "\\\"format_version\\\":\\\"1.0\\\"}\"}";
    pt_open(&k);
    pt_recipe(&k, set_marker_yaml);
    pt_plan_ok(&k);
    assert_string_equal(pt_meta(&k, "_quantization_metadata"),
                        "{\"layers\":{\"" L "\":{\"format\":\"int8_tensorwise\",\"convrot\":true,"
                        "\"convrot_groupsize\":256}},\"format_version\":\"1.0\"}");
    assert_int_equal(k.p->qmeta_mode, STF__QMETA_VERBATIM);
    assert_int_equal(k.p->nqmeta, 1);
    pt_free(&k);
}

static void test_qmeta_rebuilt_from_markers(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    /* Tensor marker says 256, metadata 64 (R5): metadata wins, both channels agree after. */
    layer(&k, MK_G256);
    PT_ADD(&k, "model.x.weight", "BF16", NULL, 4, 16);
    k.meta_json = "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", "
                  "\\\"layers\\\": {\\\"" L "\\\": {\\\"format\\\": \\\"int8_tensorwise\\\", "
                  "\\\"convrot\\\": true, \\\"convrot_groupsize\\\": 64, \\\"per_row\\\": true}}}\"}";
    pt_open(&k);
    pt_recipe(&k, set_marker_yaml);
    pt_plan_ok(&k);
    char b[256];
    assert_string_equal(pt_new_bytes(&k, L ".comfy_quant", b, sizeof b), MK_G64);
    assert_string_equal(stf_plan_layer(k.p, 0)->summary,
                        "marker channels disagreed (R5): the metadata marker wins; marker "
                        "canonical (int8_tensorwise)");
    assert_string_equal(pt_meta(&k, "_quantization_metadata"),
                        "{\"format_version\": \"1.0\", \"layers\": {\"" L "\": " MK_G64 "}}");
    /* The per-layer texts stay with the plan for a run that shards the output. */
    assert_int_equal(k.p->qmeta_mode, STF__QMETA_REBUILT);
    assert_int_equal(k.p->nqmeta, 1);
    assert_string_equal(k.p->qmeta_prefix[0], L);
    assert_string_equal(k.p->qmeta_text[0], MK_G64);
    pt_free(&k);
}

static void test_qmeta_follows_rename_and_drop(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "model.diffusion_model.a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "model.diffusion_model.a.weight_scale", "F32", g_s, 4, 1);
    pt_marker(&k, "model.diffusion_model.a.comfy_quant", MK_G256);
    PT_ADD(&k, "model.diffusion_model.b.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "model.diffusion_model.b.weight_scale", "F32", g_s, 4, 1);
    pt_marker(&k, "model.diffusion_model.b.comfy_quant", MK_G256);
    k.meta_json = "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", "
                  "\\\"layers\\\": {\\\"model.diffusion_model.a\\\": " "{\\\"format\\\": "
                  "\\\"int8_tensorwise\\\", \\\"convrot\\\": true, \\\"convrot_groupsize\\\": 256}, "
                  "\\\"model.diffusion_model.b\\\": {\\\"format\\\": \\\"int8_tensorwise\\\", "
                  "\\\"convrot\\\": true, \\\"convrot_groupsize\\\": 256}}}\"}";
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: comfyui\nrules:\n"
                  "  - name: rn\n    match: {prefix: \"**\"}\n"
                  "    do: {rename: {from: model.diffusion_model., to: \"\"}}\n"
                  "  - name: ex\n    match: {prefix: \"**.b\"}\n    do: exclude\n");
    pt_plan_ok(&k);
    assert_non_null(pt_out(&k, "a.comfy_quant"));
    assert_int_equal(pt_out(&k, "a.comfy_quant")->op, STF_OUT_COPY);
    assert_string_equal(pt_meta(&k, "_quantization_metadata"),
                        "{\"format_version\": \"1.0\", \"layers\": {\"a\": " MK_G256 "}}");
    pt_free(&k);
}

static void test_qmeta_dropped_on_request(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    layer(&k, MK_G256);
    k.meta_json = "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", "
                  "\\\"layers\\\": {}}\",\"format\":\"pt\"}";
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n  - name: m\n    match: {marker: present}\n"
                  "    do: {set-marker: {metadata: drop}}\n");
    pt_plan_ok(&k);
    assert_null(pt_meta(&k, "_quantization_metadata"));
    assert_string_equal(pt_meta(&k, "format"), "pt");
    assert_int_equal(k.p->qmeta_mode, STF__QMETA_ABSENT);
    assert_int_equal(k.p->nqmeta, 0);
    assert_int_equal(stf_plan_meta_count(k.p), 3);
    pt_free(&k);
}

/* metadata-prefix-mismatch: metadata keyed by the prefixed name, tensors bare;
 * renaming the metadata-only layer moves its entry onto the real layer. */
static void test_qmeta_m5_rename(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    layer(&k, NULL);
    k.meta_json = "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", "
                  "\\\"layers\\\": {\\\"model.diffusion_model." L "\\\": {\\\"format\\\": "
                  "\\\"int8_tensorwise\\\", \\\"convrot\\\": true, "
                  "\\\"convrot_groupsize\\\": 256}}}\"}";
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n  - name: m5\n"
                  "    match: {prefix: \"model.diffusion_model.**\", weight: absent}\n"
                  "    do: {rename: {from: model.diffusion_model., to: \"\"}}\n");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_layer_count(k.p), 2);
    assert_string_equal(stf_plan_layer(k.p, 1)->out_prefix, L);
    assert_string_equal(pt_meta(&k, "_quantization_metadata"),
                        "{\"format_version\": \"1.0\", \"layers\": {\"" L "\": " MK_G256 "}}");
    pt_free(&k);
}

static void test_sharded_union(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_recipe *r = NULL;
    stf_plan *p = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_ckpt_open(&c, "fixtures/comfy/healthy_sharded.safetensors.index.json",
                                   NULL, &err), 0);
    assert_int_equal(stf_recipe_load_file(&r, NULL, "rules/repair-scales.yaml", &err), 0);
    assert_int_equal(stf_plan_build(&p, c, r, NULL, &err), 0);
    /* Both shards say format=pt: one entry; nothing changes, so no stamp. */
    assert_int_equal(stf_plan_changed(p), 0);
    assert_int_equal(stf_plan_meta_count(p), 1);
    assert_string_equal(stf_plan_meta(p, 0)->key, "format");
    assert_string_equal(stf_plan_meta(p, 0)->value, "pt");
    assert_int_equal(stf_plan_tensor_count(p), 8);
    stf_plan_free(p);
    stf_recipe_free(r);
    stf_ckpt_free(c);
}

int main(void)
{
    for (int i = 0; i < 16; i++) g_s[i] = 0.25f;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_kept_and_stamped),
        cmocka_unit_test(test_unchanged_not_stamped),
        cmocka_unit_test(test_qmeta_verbatim_when_unchanged),
        cmocka_unit_test(test_qmeta_rebuilt_from_markers),
        cmocka_unit_test(test_qmeta_follows_rename_and_drop),
        cmocka_unit_test(test_qmeta_dropped_on_request),
        cmocka_unit_test(test_qmeta_m5_rename),
        cmocka_unit_test(test_sharded_union),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
