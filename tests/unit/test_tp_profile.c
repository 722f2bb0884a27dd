/*
 * Parallel-style profiles (stfix-rules(5), PARALLEL STYLES): loading, the
 * first entry that selects a layer, a recipe's parallel list before its
 * attached profile, the `parallel` selector key, the bundled profiles'
 * styles of Flux, Qwen/Llama and Wan names, and every problem of a bad
 * profile at its FILE:LINE:COL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"

static stf_tp_profile *load(const char *src)
{
    stf_tp_profile *p = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (stf_tp_profile_load_mem(&p, NULL, src, strlen(src), "p.yaml", &err))
        fail_msg("%s", err.msg);
    return p;
}

static stf_parallel_style style_of(const stf_tp_profile *p, const char *prefix)
{
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.prefix = prefix;
    stf_parallel_style s = STF_PARALLEL_COUNT;
    stf_err err;
    assert_int_equal(stf_tp_profile_style(&s, p, &v, &err), 0);
    return s;
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(stf_parallel_style_name(STF_PARALLEL_UNKNOWN), "unknown");
    assert_string_equal(stf_parallel_style_name(STF_PARALLEL_COLUMN), "column");
    assert_string_equal(stf_parallel_style_name(STF_PARALLEL_ROW), "row");
    assert_string_equal(stf_parallel_style_name(STF_PARALLEL_REPLICATED), "replicated");
    assert_null(stf_parallel_style_name(STF_PARALLEL_COUNT));
}

/* The first entry whose selector holds wins; no entry: unknown. */
static void test_first_entry(void **state)
{
    (void)state;
    stf_tp_profile *p = load("stfix: 1\nprofile: t\ndescription: a test\nstyles:\n"
                             "  - {match: {prefix: 'a.proj'}, style: replicated}\n"
                             "  - {match: {prefix: '**.proj'}, style: row}\n"
                             "  - {match: {regex: 'qkv$'}, style: column}\n");
    assert_string_equal(stf_tp_profile_name(p), "t");
    assert_string_equal(stf_tp_profile_description(p), "a test");
    assert_int_equal(style_of(p, "a.proj"), STF_PARALLEL_REPLICATED);
    assert_int_equal(style_of(p, "b.proj"), STF_PARALLEL_ROW);
    assert_int_equal(style_of(p, "x.qkv"), STF_PARALLEL_COLUMN);
    assert_int_equal(style_of(p, "x.qkv.bias"), STF_PARALLEL_UNKNOWN);
    assert_int_equal(style_of(NULL, "b.proj"), STF_PARALLEL_UNKNOWN);
    stf_tp_profile_free(p);
}

/* A recipe's parallel list comes before its profile; the selector sees it. */
static void test_recipe_override(void **state)
{
    (void)state;
    stf_tp_profile *p = load("stfix: 1\nprofile: t\nstyles:\n"
                             "  - {match: {prefix: '**.proj'}, style: row}\n");
    static const char y[] = "stfix: 1\ntarget: sglang\nparallel:\n"
                            "  - {match: {prefix: 'a.proj'}, style: column}\n"
                            "rules:\n  - name: r\n    match: {parallel: [row, replicated]}\n"
                            "    do: requantize\n";
    stf_recipe *r = NULL;
    stf_err err;
    assert_int_equal(stf_recipe_load_mem(&r, NULL, y, strlen(y), "r.yaml", &err), 0);
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    stf_parallel_style s;
    v.prefix = "b.proj";
    assert_int_equal(stf_recipe_parallel_style(&s, r, &v, &err), 0);
    assert_int_equal(s, STF_PARALLEL_UNKNOWN); /* no profile attached yet */
    assert_null(stf_recipe_tp_profile(r));
    stf_recipe_set_tp_profile(r, p);
    assert_ptr_equal(stf_recipe_tp_profile(r), p);
    assert_int_equal(stf_recipe_parallel_style(&s, r, &v, &err), 0);
    assert_int_equal(s, STF_PARALLEL_ROW);
    v.prefix = "a.proj";
    assert_int_equal(stf_recipe_parallel_style(&s, r, &v, &err), 0);
    assert_int_equal(s, STF_PARALLEL_COLUMN);
    /* The parallel selector key reads the view's style. */
    int m = -1;
    v.parallel = STF_PARALLEL_ROW;
    assert_int_equal(stf_rules_match(&m, stf_recipe_rule(r, 0), &v, &err), 0);
    assert_int_equal(m, 1);
    v.parallel = STF_PARALLEL_COLUMN;
    assert_int_equal(stf_rules_match(&m, stf_recipe_rule(r, 0), &v, &err), 0);
    assert_int_equal(m, 0);
    stf_recipe_free(r);
    stf_tp_profile_free(p);
}

/* The bundled profiles, on the names of the families they describe. */
static void test_bundled(void **state)
{
    (void)state;
    static const struct { const char *file, *prefix; stf_parallel_style s; } c[] = {
        { "rules/tp/flux.yaml", "double_blocks.3.img_attn.qkv", STF_PARALLEL_COLUMN },
        { "rules/tp/flux.yaml", "model.diffusion_model.double_blocks.3.txt_mlp.0",
          STF_PARALLEL_COLUMN },
        { "rules/tp/flux.yaml", "single_blocks.7.linear1", STF_PARALLEL_COLUMN },
        { "rules/tp/flux.yaml", "double_blocks.3.img_attn.proj", STF_PARALLEL_ROW },
        { "rules/tp/flux.yaml", "double_blocks.3.img_mlp.2", STF_PARALLEL_ROW },
        { "rules/tp/flux.yaml", "single_blocks.7.linear2", STF_PARALLEL_ROW },
        { "rules/tp/flux.yaml", "double_blocks.3.img_mod.lin", STF_PARALLEL_REPLICATED },
        { "rules/tp/flux.yaml", "single_blocks.7.modulation.lin", STF_PARALLEL_REPLICATED },
        { "rules/tp/flux.yaml", "double_stream_modulation_img.lin", STF_PARALLEL_REPLICATED },
        { "rules/tp/flux.yaml", "img_in", STF_PARALLEL_UNKNOWN },
        { "rules/tp/qwen-llama.yaml", "model.layers.0.self_attn.k_proj", STF_PARALLEL_COLUMN },
        { "rules/tp/qwen-llama.yaml", "model.layers.0.mlp.gate_proj", STF_PARALLEL_COLUMN },
        { "rules/tp/qwen-llama.yaml", "model.layers.0.self_attn.o_proj", STF_PARALLEL_ROW },
        { "rules/tp/qwen-llama.yaml", "model.layers.0.mlp.down_proj", STF_PARALLEL_ROW },
        { "rules/tp/qwen-llama.yaml", "model.embed_tokens", STF_PARALLEL_UNKNOWN },
        { "rules/tp/wan.yaml", "blocks.0.self_attn.q", STF_PARALLEL_COLUMN },
        { "rules/tp/wan.yaml", "blocks.0.cross_attn.v_img", STF_PARALLEL_COLUMN },
        { "rules/tp/wan.yaml", "blocks.0.ffn.0", STF_PARALLEL_COLUMN },
        { "rules/tp/wan.yaml", "blocks.0.self_attn.o", STF_PARALLEL_ROW },
        { "rules/tp/wan.yaml", "blocks.0.ffn.2", STF_PARALLEL_ROW },
        { "rules/tp/wan.yaml", "blocks.0.norm3", STF_PARALLEL_UNKNOWN },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        stf_tp_profile *p = NULL;
        stf_err err;
        if (stf_tp_profile_load_file(&p, NULL, c[i].file, &err)) fail_msg("%s", err.msg);
        if (style_of(p, c[i].prefix) != c[i].s)
            fail_msg("%s: %s is not %s", c[i].file, c[i].prefix,
                     stf_parallel_style_name(c[i].s));
        stf_tp_profile_free(p);
    }
}

/* Every problem at FILE:LINE:COL (the top-level keys first, then the
 * entries in order); nothing loaded. */
static void test_problems(void **state)
{
    (void)state;
    static const char src[] = "stfix: 2\nprofil: x\nstyles:\n"
                              "  - {match: {prefix: 'a.***'}, style: row}\n"
                              "  - {match: {dtyp: I8}, style: row}\n"
                              "  - {match: {}, style: diagonal}\n"
                              "  - {match: {}}\n"
                              "  - row\n";
    static const char *const want[] = {
        "p.yaml:2:1: profile: unknown key 'profil' (expected one of: stfix, profile, "
        "description, styles)",
        "p.yaml:1:1: profile: missing required key 'profile'",
        "p.yaml:1:8: stfix: expected the format version 1, got '2'",
        "p.yaml:4:22: styles[0].match.prefix: invalid glob 'a.***': '***' is not a glob (use "
        "'*' within a segment or '**' across segments)",
        "p.yaml:5:14: styles[1].match: unknown key 'dtyp' (expected one of: prefix, regex, "
        "weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, probe, "
        "rotation, parallel, not)",
        "p.yaml:6:24: styles[2].style: expected one of column, row, replicated, got 'diagonal'",
        "p.yaml:7:5: styles[3]: missing required key 'style'",
        "p.yaml:8:5: styles[4]: expected a mapping with match and style, got 'row'",
    };
    stf_tp_profile *p = (stf_tp_profile *)1;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(stf_tp_profile_load_mem(&p, &d, src, strlen(src), "p.yaml", &err),
                     STF_EFORMAT);
    assert_null(p);
    size_t n = sizeof want / sizeof want[0];
    for (size_t i = 0; i < stf_recipe_diags_count(d) && i < n; i++)
        assert_string_equal(stf_recipe_diags_text(d, i), want[i]);
    assert_int_equal(stf_recipe_diags_count(d), n);
    assert_string_equal(err.msg, want[0]);
    stf_recipe_diags_free(d);
    assert_int_equal(stf_tp_profile_load_file(&p, NULL, "/nonexistent/p.yaml", &err),
                     STF_ENOTFOUND);
    assert_int_equal(stf_tp_profile_load_mem(&p, NULL, "", 0, "e.yaml", &err), STF_EFORMAT);
    assert_string_equal(err.msg, "e.yaml:1:1: profile: empty document (expected a mapping with "
                                 "stfix, profile and styles)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),           cmocka_unit_test(test_first_entry),
        cmocka_unit_test(test_recipe_override), cmocka_unit_test(test_bundled),
        cmocka_unit_test(test_problems),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
