/*
 * lib/pipeline/plan.c: the driver. Rule order and terminal actions, tensors
 * no layer owns, canonical writer order, totals, argument checks, every
 * allocation failing in turn, and every bundled recipe over the committed
 * fixtures (healthy ones and the broken ones each recipe is meant for),
 * with the exact refusals for layers stfix cannot decode.
 * Run from the repository root.
 */
#include "plan_testutil.h"
#include "support/st_alloc.h"

#define FIX "fixtures/comfy/"

static float g_s[64];

static void test_rules_in_order_until_terminal(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "BF16", g_s, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\"}");
    PT_ADD(&k, "norm", "F32", g_s, 4);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: [sglang, comfyui]\nrules:\n"
                  "  - name: cast\n    match: {scale_dtype: BF16}\n    do: cast-scale\n"
                  "  - name: q\n    match: {marker: present}\n    do: requantize\n"
                  "  - name: never\n    match: {marker: present}\n    do: {exclude: {dtype: F32}}\n");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_layer_count(k.p), 1);
    const stf_plan_layer_info *l = stf_plan_layer(k.p, 0);
    assert_int_equal(l->nrules, 2);
    assert_string_equal(l->rules[0], "cast");
    assert_string_equal(l->rules[1], "q");
    assert_int_equal(l->nactions, 2);
    assert_int_equal(l->actions[0]->kind, STF_ACT_CAST_SCALE);
    assert_int_equal(l->actions[1]->kind, STF_ACT_REQUANTIZE);
    assert_string_equal(l->summary, "scale BF16 -> F32; requantize to int8_tensorwise, G=256");
    assert_int_equal(stf_plan_targets(k.p), STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI);
    /* Writer order: F32 (norm, scale) by name, then I8, then U8. */
    assert_int_equal(stf_plan_tensor_count(k.p), 4);
    assert_string_equal(stf_plan_tensor(k.p, 0)->name, "a.weight_scale");
    assert_string_equal(stf_plan_tensor(k.p, 1)->name, "norm");
    assert_string_equal(stf_plan_tensor(k.p, 2)->name, "a.weight");
    assert_string_equal(stf_plan_tensor(k.p, 3)->name, "a.comfy_quant");
    const stf_plan_tensor_info *n = pt_out(&k, "norm");
    assert_int_equal(n->op, STF_OUT_COPY);
    assert_int_equal(n->layer, SIZE_MAX);
    assert_int_equal(n->src, 3);
    assert_int_equal(pt_out(&k, "a.weight")->layer, 0);
    /* 16 (scale) + 16 (norm) + 1024 (weight) + 72 (marker) bytes; only norm is copied. */
    assert_int_equal(stf_plan_bytes_total(k.p), 16 + 16 + 1024 + 72);
    assert_int_equal(stf_plan_bytes_copied(k.p), 16);
    pt_free(&k);
}

/* A layer's record is made when first asked: when memory runs out for it
 * (the table of records, then the record) the answer is NULL and nothing is
 * kept; the next ask makes it, and every ask after gives the same one. */
static void test_layer_record_when_memory_runs_out(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "BF16", g_s, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\"}");
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n"
                  "  - name: cast\n    match: {scale_dtype: BF16}\n    do: cast-scale\n");
    pt_plan_ok(&k);
    for (long n = 1; n <= 2; n++) {
        st_alloc_arm(n);
        st_alloc_install();
        const stf_plan_layer_info *l = stf_plan_layer(k.p, 0);
        st_alloc_uninstall();
        assert_null(l);
        assert_int_equal(st_alloc_calls(), n);
        assert_int_equal(st_alloc_live(), n - 1); /* only the table, once made */
    }
    const stf_plan_layer_info *l = stf_plan_layer(k.p, 0);
    assert_non_null(l);
    assert_string_equal(l->summary, "scale BF16 -> F32");
    assert_int_equal(l->nrules, 1);
    assert_string_equal(l->rules[0], "cast");
    assert_ptr_equal(stf_plan_layer(k.p, 0), l);
    assert_null(stf_plan_layer(k.p, 1));
    pt_free(&k);
}

static void test_untouched_checkpoint_is_all_copies(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "z.weight", "BF16", NULL, 2, 8);
    PT_ADD(&k, "a.weight", "BF16", NULL, 2, 8);
    PT_ADD(&k, "a.bias", "F32", g_s, 2);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: comfyui\nrules:\n"
                  "  - name: nothing\n    match: {marker: present}\n    do: cast-scale\n");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_tensor_count(k.p), 3);
    assert_string_equal(stf_plan_tensor(k.p, 0)->name, "a.bias");
    assert_string_equal(stf_plan_tensor(k.p, 1)->name, "a.weight");
    assert_string_equal(stf_plan_tensor(k.p, 2)->name, "z.weight");
    for (size_t i = 0; i < 3; i++) assert_int_equal(stf_plan_tensor(k.p, i)->op, STF_OUT_COPY);
    assert_int_equal(stf_plan_bytes_total(k.p), 8 + 32 + 32);
    assert_int_equal(stf_plan_bytes_copied(k.p), stf_plan_bytes_total(k.p));
    assert_string_equal(stf_plan_layer(k.p, 0)->summary, "unchanged");
    assert_int_equal(stf_plan_layer(k.p, 0)->nrules, 0);
    assert_int_equal(k.p->njobs, 0);
    pt_free(&k);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    stf_plan *p = (stf_plan *)1;
    stf_err err;
    assert_int_equal(stf_plan_build(&p, NULL, NULL, NULL, &err), STF_EINVAL);
    assert_null(p);
    stf_plan_free(NULL);
}

/* ------------------------------------------------------------ allocation failures */

/* Whether two plans describe the same output (names, ops, dtypes, sizes, metadata). */
static int same_plan(const stf_plan *a, const stf_plan *b)
{
    if (stf_plan_tensor_count(a) != stf_plan_tensor_count(b) ||
        stf_plan_meta_count(a) != stf_plan_meta_count(b) ||
        stf_plan_dropped_count(a) != stf_plan_dropped_count(b) ||
        stf_plan_layer_count(a) != stf_plan_layer_count(b))
        return 0;
    for (size_t i = 0; i < stf_plan_tensor_count(a); i++) {
        const stf_plan_tensor_info *x = stf_plan_tensor(a, i), *y = stf_plan_tensor(b, i);
        if (strcmp(x->name, y->name) || x->op != y->op || x->dtype != y->dtype ||
            x->nbytes != y->nbytes)
            return 0;
    }
    for (size_t i = 0; i < stf_plan_meta_count(a); i++)
        if (strcmp(stf_plan_meta(a, i)->value, stf_plan_meta(b, i)->value)) return 0;
    for (size_t i = 0; i < stf_plan_layer_count(a); i++)
        if (strcmp(stf_plan_layer(a, i)->summary, stf_plan_layer(b, i)->summary))
            return 0;
    return 1;
}

/* Layers the same rules and actions apply to show the same lists, kept
 * once for a run of them; a layer between them with other rules keeps
 * its own (freeing each once: test_every_allocation_failure counts). */
static void test_same_rules_kept_once(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "BF16", g_s, 4, 1);
    PT_ADD(&k, "b.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "b.weight_scale", "BF16", g_s, 4, 1);
    PT_ADD(&k, "c.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "c.weight_scale", "F32", g_s, 4, 1);
    PT_ADD(&k, "d.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "d.weight_scale", "BF16", g_s, 4, 1);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n"
                  "  - name: cast\n    match: {scale_dtype: BF16}\n    do: cast-scale\n"
                  "  - name: rn\n    match: {prefix: \"**\"}\n    do: {rename: {from: \"\", to: x.}}\n");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_layer_count(k.p), 4);
    const stf_plan_layer_info *l[4];
    for (size_t i = 0; i < 4; i++) l[i] = stf_plan_layer(k.p, i);
    for (size_t i = 0; i < 4; i++) {
        size_t n = i == 2 ? 1 : 2;
        assert_int_equal(l[i]->nrules, n);
        assert_int_equal(l[i]->nactions, n);
        assert_string_equal(l[i]->rules[n - 1], "rn");
        assert_int_equal(l[i]->actions[n - 1]->kind, STF_ACT_RENAME);
        if (n == 2) {
            assert_string_equal(l[i]->rules[0], "cast");
            assert_int_equal(l[i]->actions[0]->kind, STF_ACT_CAST_SCALE);
        }
    }
    assert_ptr_equal(l[0]->rules, l[1]->rules);
    assert_ptr_equal(l[0]->actions, l[1]->actions);
    assert_ptr_not_equal(l[2]->rules, l[1]->rules);
    assert_ptr_not_equal(l[3]->rules, l[1]->rules);
    assert_string_equal(l[1]->out_prefix, "x.b");
    pt_free(&k);
}

static void test_every_allocation_failure(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    signed char *w = pt_rows_i8(16, 256);
    PT_ADD(&k, "a.weight", "I8", w, 16, 256);
    PT_ADD(&k, "a.weight_scale", "BF16", g_s, 16);
    pt_marker(&k, "a.comfy_quant", "{\"convrot\": true, \"convrot_groupsize\": 256}");
    PT_ADD(&k, "m.b.weight", "BF16", NULL, 4, 64);
    PT_ADD(&k, "c.weight", "I8", NULL, 4, 4, 2, 2);
    PT_ADD(&k, "c.weight_scale", "F32", g_s, 4, 1);
    pt_marker(&k, "c.comfy_quant", "{\"format\": \"int8_tensorwise\"}");
    /* d: both channels already canonical; s: a marker with a C writer's trailing NUL. */
    PT_ADD(&k, "d.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "d.weight_scale", "F32", g_s, 4, 1);
    pt_marker(&k, "d.comfy_quant", "{\"format\": \"int8_tensorwise\"}");
    static const char nul_marker[] = "{\"format\": \"int8_tensorwise\"}";
    PT_ADD(&k, "s.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "s.weight_scale", "F32", g_s, 4, 1);
    pt_add(&k, "s.comfy_quant", "U8", 1, (const uint64_t[]){ sizeof nul_marker }, nul_marker);
    k.meta_json = "{\"format\":\"pt\",\"_quantization_metadata\":\"{\\\"format_version\\\": "
                  "\\\"1.0\\\", \\\"layers\\\": {\\\"d\\\": {\\\"format\\\": "
                  "\\\"int8_tensorwise\\\"}}}\"}";
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n"
                  "  - name: rn\n    match: {prefix: \"**\"}\n    do: {rename: {from: m., to: n.}}\n"
                  "  - name: cast\n    match: {scale_dtype: BF16}\n    do: cast-scale\n"
                  "  - name: rows\n    match: {scale_shape: [[N]], probe: rowwise}\n"
                  "    do: {reshape-scale: {to: rows, require_probe: true}}\n"
                  "  - name: conv\n    match: {shape: \"rank != 2\"}\n    do: exclude\n"
                  "  - name: mk\n    match: {marker: present}\n    do: set-marker\n"
                  "  - name: q\n    match: {weight_dtype: BF16}\n    do: requantize\n");
    stf_err err;
    pt_plan_ok(&k);
    assert_int_equal(pt_out(&k, "s.comfy_quant")->op, STF_OUT_NEW);
    assert_int_equal(pt_out(&k, "s.comfy_quant")->nbytes, 29);
    assert_int_equal(pt_out(&k, "d.comfy_quant")->op, STF_OUT_COPY);
    /* A plan makes a layer's public record when first asked: the reference
     * plan's are made before the allocations are counted. */
    for (size_t i = 0; i < stf_plan_layer_count(k.p); i++)
        assert_non_null(stf_plan_layer(k.p, i));
    st_alloc_install();
    int done = 0;
    for (long n = 0; n < 5000 && !done; n++) {
        st_alloc_arm(n + 1);
        stf_plan *p = NULL;
        stf_err_clear(&err);
        int rc = stf_plan_build(&p, k.c, k.r, NULL, &err);
        if (rc == 0) {
            done = 1;
            /* A swallowed failure would show as a different plan. */
            int same = same_plan(p, k.p);
            stf_plan_free(p);
            st_alloc_uninstall();
            assert_true(same);
            assert_non_null(pt_out(&k, "n.b.weight"));
        } else {
            if (rc != STF_ENOMEM || p) st_alloc_uninstall();
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(p);
        }
        if (st_alloc_live()) st_alloc_uninstall();
        assert_int_equal(st_alloc_live(), 0);
    }
    st_alloc_uninstall();
    assert_true(done);
    free(w);
    pt_free(&k);
}

/* ------------------------------------- metadata-prefix-mismatch merge */

#define PREFIX_META(key, mk)                                                                     \
    "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", \\\"layers\\\": "      \
    "{\\\"" key "\\\": " mk "}}\"}"
#define PREFIX_MK "{\\\"format\\\": \\\"int8_tensorwise\\\", \\\"convrot\\\": true, "           \
                  "\\\"convrot_groupsize\\\": 256}"

static const char prefix_yaml[] =
    "stfix: 1\ntarget: sglang\nrules:\n"
    "  - name: rk\n    match: {marker: present, weight: absent, prefix: \"model.diffusion_model.**\"}\n"
    "    do: {rename: {from: model.diffusion_model., to: \"\"}}\n"
    "  - name: orphan\n    match: {marker: present, weight: absent}\n    do: drop\n"
    "  - name: q\n    match: {marker: present, weight: present}\n"
    "    do: {set-marker: {metadata: mirror}}\n";

/* metadata-prefix-mismatch: a metadata-only marker renamed onto a layer without
 * a marker is merged into it before any rule sees that layer: the later rules
 * (here set-marker, which only matches layers with a weight and a marker) plan
 * the merged layer, the orphan's own later actions (drop) do not apply. */
static void test_prefix_merge_before_rules(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s, 16, 1);
    k.meta_json = PREFIX_META("model.diffusion_model." L, PREFIX_MK);
    pt_open(&k);
    pt_recipe(&k, prefix_yaml);
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_layer_count(k.p), 2);
    const stf_plan_layer_info *t = stf_plan_layer(k.p, 0), *o = stf_plan_layer(k.p, 1);
    assert_string_equal(t->prefix, L);
    assert_int_equal(t->nrules, 1);
    assert_string_equal(t->rules[0], "q");
    assert_string_equal(t->format, "int8_tensorwise");
    assert_string_equal(o->prefix, "model.diffusion_model." L);
    assert_string_equal(o->out_prefix, L);
    assert_int_equal(o->nrules, 1);
    assert_string_equal(o->rules[0], "rk");
    assert_int_equal(o->nactions, 1);
    assert_int_equal(o->actions[0]->kind, STF_ACT_RENAME);
    assert_string_equal(o->summary, "rename -> '" L "'; marker merged into that layer");
    assert_null(o->format);
    char b[128];
    assert_string_equal(pt_new_bytes(&k, L ".comfy_quant", b, sizeof b), MK_G256);
    assert_string_equal(pt_meta(&k, "_quantization_metadata"),
                        "{\"format_version\": \"1.0\", \"layers\": {\"" L "\": " MK_G256 "}}");
    assert_int_equal(stf_plan_tensor_count(k.p), 3);
    assert_int_equal(k.p->ndropped, 0);

    /* Every allocation of the merge failing in turn: ENOMEM, no plan, no leak. */
    stf_err err;
    st_alloc_install();
    int done = 0;
    for (long n = 0; n < 2000 && !done; n++) {
        st_alloc_arm(n + 1);
        stf_plan *p = NULL;
        int rc = stf_plan_build(&p, k.c, k.r, NULL, &err);
        if (rc == 0) {
            done = 1;
            int same = same_plan(p, k.p);
            stf_plan_free(p);
            st_alloc_uninstall();
            assert_true(same);
        } else {
            if (rc != STF_ENOMEM || p) st_alloc_uninstall();
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(p);
        }
        if (st_alloc_live()) st_alloc_uninstall();
        assert_int_equal(st_alloc_live(), 0);
    }
    st_alloc_uninstall();
    assert_true(done);
    pt_free(&k);
}

/* No merge when the target has a marker of its own (the orphan is renamed,
 * then dropped by its later rule), nor when the renamed prefix names no layer. */
static void test_prefix_no_merge(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s, 16, 1);
    pt_marker(&k, L ".comfy_quant", MK_G64);
    k.meta_json = PREFIX_META("model.diffusion_model." L, PREFIX_MK);
    pt_open(&k);
    pt_recipe(&k, prefix_yaml);
    pt_plan_ok(&k);
    const stf_plan_layer_info *o = stf_plan_layer(k.p, 1);
    assert_string_equal(o->prefix, "model.diffusion_model." L);
    assert_int_equal(o->nrules, 2);
    assert_string_equal(o->rules[1], "orphan");
    assert_string_equal(pt_meta(&k, "_quantization_metadata"),
                        "{\"format_version\": \"1.0\", \"layers\": {\"" L "\": " MK_G64 "}}");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s, 16, 1);
    k.meta_json = PREFIX_META("model.diffusion_model.other", PREFIX_MK);
    pt_open(&k);
    pt_recipe(&k, prefix_yaml);
    pt_plan_ok(&k);
    o = stf_plan_layer(k.p, 1);
    assert_int_equal(o->nrules, 2);
    assert_string_equal(o->out_prefix, "other");
    assert_null(stf_plan_layer(k.p, 0)->format);
    assert_null(pt_meta(&k, "_quantization_metadata"));
    pt_free(&k);
}

/* ------------------------------------------------------------ bundled recipes */

static int plan_file(const char *recipe, const char *file, stf_err *err)
{
    stf_recipe *r = NULL;
    stf_ckpt *c = NULL;
    stf_plan *p = NULL;
    stf_err_clear(err);
    if (stf_recipe_load_file(&r, NULL, recipe, err)) fail_msg("%s: %s", recipe, err->msg);
    if (stf_ckpt_open(&c, file, NULL, err)) fail_msg("%s: %s", file, err->msg);
    int rc = stf_plan_build(&p, c, r, NULL, err);
    if (!rc) {
        /* Every output has a size, and every requantize/dequantize output a job. */
        for (size_t i = 0; i < stf_plan_tensor_count(p); i++) {
            const stf_plan_tensor_info *t = stf_plan_tensor(p, i);
            if (t->op >= STF_OUT_QUANT_WEIGHT) assert_true(p->outs[i].job < p->njobs);
            if (t->op == STF_OUT_NEW) assert_non_null(p->outs[i].bytes);
        }
    }
    stf_plan_free(p);
    stf_ckpt_free(c);
    stf_recipe_free(r);
    return rc;
}

static const char *const recipes[] = {
    "rules/sglang-int8-convrot.yaml", "rules/comfyui-int8-convrot.yaml",
    "rules/repair-scales.yaml", "rules/exclude-conv-and-embeddings.yaml",
    "rules/quantize-int8-convrot.yaml", "rules/migrate-scaled-fp8.yaml",
};

static void test_bundled_recipes_on_healthy(void **state)
{
    (void)state;
    static const char *const healthy[] = {
        "healthy_int8_g16.safetensors", "healthy_int8_g64.safetensors",
        "healthy_int8_g256.safetensors", "healthy_w4a4.safetensors",
        "healthy_mixed_int8_w4a4.safetensors", "healthy_meta_only.safetensors",
        "healthy_fp8.safetensors", "healthy_sharded.safetensors.index.json",
    };
    char path[256];
    stf_err err;
    for (size_t r = 0; r < sizeof recipes / sizeof recipes[0]; r++)
        for (size_t f = 0; f < sizeof healthy / sizeof healthy[0]; f++) {
            snprintf(path, sizeof path, FIX "%s", healthy[f]);
            if (plan_file(recipes[r], path, &err))
                fail_msg("%s on %s: %s", recipes[r], healthy[f], err.msg);
        }
    /* The demo checkpoints of `make demo`. */
    for (size_t r = 0; r < sizeof recipes / sizeof recipes[0]; r++) {
        if (plan_file(recipes[r], "fixtures/demo/demo.safetensors", &err))
            fail_msg("%s on demo: %s", recipes[r], err.msg);
        if (plan_file(recipes[r], "fixtures/demo/healthy.safetensors", &err))
            fail_msg("%s on demo healthy: %s", recipes[r], err.msg);
    }
}

/* The INT8 broken fixtures each repair recipe targets (the fixtures of formats
 * stfix cannot decode — W4A8, NVFP4 — are refused below). */
static void test_bundled_recipes_on_broken(void **state)
{
    (void)state;
    static const char *const int8_broken[] = {
        "r01_meta_not_json", "r02_meta_not_object", "r03_meta_no_layers",
        "r04_meta_layer_string", "r05_conflict", "r06_marker_nul", "r08_marker_bf16",
        "r12_missing_scale", "r12_missing_weight", "r13_tensorwise_3d",
        "r14_scale_bf16", "r15_flat_scale_square", "r15_grouped_scale", "r16_w4a4_scale_f16",
        "r17_w4a4_scale_2d", "r18_w4a4_g128", "r19_w4a4_k96", "r20_collision",
        "r23_convrot_int", "r23_no_convrot", "r23_params_nested", "r24_g128",
        "r24_g_string", "r25_conv_marker", "r27_k_not_multiple", "r30_int8_plus_fp8",
        "r30_missing_format", "r30_unknown_format", "r40_scalar_scale_convrot",
        "probe_colquant_square", "probe_rowquant_flat", "probe_sylvester_data",
        "probe_bad_scales",
    };
    char path[256];
    stf_err err;
    for (size_t f = 0; f < sizeof int8_broken / sizeof int8_broken[0]; f++) {
        snprintf(path, sizeof path, FIX "%s.safetensors", int8_broken[f]);
        for (size_t r = 0; r < 3; r++)
            if (plan_file(recipes[r], path, &err))
                fail_msg("%s on %s: %s", recipes[r], int8_broken[f], err.msg);
    }
}

static void test_refusals_name_layer_and_rule(void **state)
{
    (void)state;
    stf_err err;
    assert_int_equal(plan_file("rules/sglang-int8-convrot.yaml",
                               FIX "r44_w4a8_group2.safetensors", &err), STF_EFORMAT);
    assert_string_equal(err.msg, "layer 'blocks.0.attn.qkv': rule 'requantize-other-formats' "
                                 "(recipe line 100): requantize: format 'asym_w4a8_int8' cannot "
                                 "be decoded (stfix reads float, FP8, INT8 and convrot_w4a4 "
                                 "layers); exclude needs the original weights");
    assert_int_equal(plan_file("rules/sglang-int8-convrot.yaml",
                               FIX "r07_marker_not_object.safetensors", &err), STF_EFORMAT);
    assert_string_equal(err.msg, "layer 'blocks.0.attn.qkv': rule 'infer-markers' (recipe line "
                                 "132): infer-marker: the marker cannot be read and the file does "
                                 "not determine it (_quantization_metadata does not list the "
                                 "layer; no readable marker of the file fits its tensors; its "
                                 "tensors fit int8_tensorwise but do not tell its rotation or "
                                 "group size); settle it with a rule for this layer, ahead of "
                                 "this one, that does set-marker: {format: int8_tensorwise}");
    /* An I8 weight without any marker: its rotation and group size are
     * unknown (the sglang and comfyui recipes). */
    for (size_t r = 0; r < 2; r++) {
        assert_int_equal(plan_file(recipes[r], FIX "r10_no_marker.safetensors", &err),
                         STF_EFORMAT);
        assert_non_null(strstr(err.msg, "infer-marker: the layer has no marker and the file does "
                                        "not determine it"));
    }
}

/* A regular rotation above 1024 (a power of 4: 4096) is refused by the
 * plan, INT8 and W4A4 alike, naming the group; below it, or a G that does
 * not divide K (read as unrotated), the plan goes on. */
static void test_regular_rotation_above_1024(void **state)
{
    (void)state;
    static const struct { const char *fmt; uint64_t cols; long g; int ok; } cases[] = {
        { "int8_tensorwise", 4096, 4096, 0 }, { "convrot_w4a4", 2048, 4096, 0 },
        { "int8_tensorwise", 4096, 1024, 1 }, { "int8_tensorwise", 2048, 4096, 1 },
        { "convrot_w4a4", 2048, 1024, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char mk[128];
        snprintf(mk, sizeof mk, "{\"format\": \"%s\", \"convrot\": true, \"convrot_groupsize\": "
                 "%ld}", cases[i].fmt, cases[i].g);
        pt_ckpt k = { 0 };
        PT_ADD(&k, "l.weight", "I8", NULL, 4, cases[i].cols);
        PT_ADD(&k, "l.weight_scale", "F32", g_s, 4);
        pt_marker(&k, "l.comfy_quant", mk);
        pt_open(&k);
        pt_recipe1(&k, "{prefix: l}", "requantize");
        if (cases[i].ok)
            pt_plan_ok(&k);
        else
            pt_expect_err(&k, "layer 'l': rule 'r' (recipe line 6): requantize: "
                              "convrot_groupsize 4096 is a power of 4 above 1024: stfix cannot "
                              "undo that regular rotation");
        pt_free(&k);
    }
}

int main(void)
{
    for (int i = 0; i < 64; i++) g_s[i] = 0.5f + 0.01f * (float)i;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_in_order_until_terminal),
        cmocka_unit_test(test_untouched_checkpoint_is_all_copies),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_same_rules_kept_once),
        cmocka_unit_test(test_every_allocation_failure),
        cmocka_unit_test(test_prefix_merge_before_rules),
        cmocka_unit_test(test_prefix_no_merge),
        cmocka_unit_test(test_bundled_recipes_on_healthy),
        cmocka_unit_test(test_layer_record_when_memory_runs_out),
        cmocka_unit_test(test_bundled_recipes_on_broken),
        cmocka_unit_test(test_refusals_name_layer_and_rule),
        cmocka_unit_test(test_regular_rotation_above_1024),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
