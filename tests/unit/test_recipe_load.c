/* Recipe loading: the schema, exact positioned problems, SHA-256, bundled recipes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rules/rules_internal.h"
#include "support/st_alloc.h"

static const char good[] =
    "# a comment\n"
    "stfix: 1\n"
    "target: [sglang, comfyui]\n"
    "description: test recipe\n"
    "rules:\n"
    "  - name: cast\n"
    "    match: {scale_dtype: [BF16, F16]}\n"
    "    do: cast-scale\n"
    "  - name: conv\n"
    "    description: quantized-conv\n"
    "    match: {marker: present, shape: 'rank != 2'}\n"
    "    do:\n"
    "      - {exclude: {dtype: F16}}\n"
    "      - drop\n";

/* The problems of the len bytes at src, which may hold a NUL. */
static void expect_problems_n(const char *src, size_t len, size_t n, const char *const *want)
{
    stf_recipe *r = (stf_recipe *)1;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_recipe_load_mem(&r, &d, src, len, "bad.yaml", &err), STF_EFORMAT);
    assert_null(r);
    assert_non_null(d);
    for (size_t i = 0; i < stf_recipe_diags_count(d) && i < n; i++)
        assert_string_equal(stf_recipe_diags_text(d, i), want[i]);
    assert_int_equal(stf_recipe_diags_count(d), n);
    assert_string_equal(err.msg, want[0]);
    assert_int_equal(err.code, STF_EFORMAT);
    stf_recipe_diags_free(d);
}

static void expect_problems(const char *src, size_t n, const char *const *want)
{
    expect_problems_n(src, strlen(src), n, want);
}

static void expect_problem(const char *src, const char *want)
{
    expect_problems(src, 1, &want);
}

/* Whether the rule selects v; the match itself must not fail. */
static int rule_matches(const stf_rule *ru, const stf_layer_view *v)
{
    int m = -1;
    stf_err err;
    assert_int_equal(stf_rules_match(&m, ru, v, &err), 0);
    return m;
}

static void test_good(void **state)
{
    (void)state;
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(stf_recipe_load_mem(&r, &d, good, strlen(good), "good.yaml", &err), 0);
    assert_null(d);
    assert_int_equal(stf_recipe_targets(r), STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI);
    assert_string_equal(stf_recipe_description(r), "test recipe");
    assert_null(stf_recipe_kind(r)); /* it says none */
    for (int k = 0; k < 2; k++) {
        const char *y = k ? "stfix: 1\nkind: conversion\ntarget: sglang\nrules: []\n"
                          : "stfix: 1\nkind: repair\ntarget: sglang\nrules: []\n";
        stf_recipe *kr = NULL;
        assert_int_equal(stf_recipe_load_mem(&kr, NULL, y, strlen(y), "k.yaml", &err), 0);
        assert_string_equal(stf_recipe_kind(kr), k ? "conversion" : "repair");
        stf_recipe_free(kr);
    }
    assert_string_equal(stf_recipe_sha256(r),
                        "4f708b438f1c24350077997d59e395869047bac58b7f974714affdbf80405d41");
    assert_int_equal(stf_recipe_rule_count(r), 2);
    const stf_rule *r0 = stf_recipe_rule(r, 0), *r1 = stf_recipe_rule(r, 1);
    assert_null(stf_recipe_rule(r, 2));
    assert_string_equal(stf_rule_name(r0), "cast");
    assert_int_equal(stf_rule_line(r0), 6);
    assert_int_equal(stf_rule_action_count(r0), 1);
    assert_int_equal(stf_rule_action(r0, 0)->kind, STF_ACT_CAST_SCALE);
    assert_string_equal(stf_rule_name(r1), "conv");
    assert_int_equal(stf_rule_line(r1), 9);
    assert_int_equal(stf_rule_action_count(r1), 2);
    assert_int_equal(stf_rule_action(r1, 0)->kind, STF_ACT_EXCLUDE);
    assert_int_equal(stf_rule_action(r1, 0)->params.exclude.dtype, STF_F16);
    assert_int_equal(stf_rule_action(r1, 0)->line, 13);
    assert_int_equal(stf_rule_action(r1, 0)->column, 10);
    assert_int_equal(stf_rule_action(r1, 1)->kind, STF_ACT_DROP);
    assert_null(stf_rule_action(r1, 2));

    static const uint64_t w[4] = { 8, 4, 3, 3 }, s[1] = { 8 };
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.prefix = "x.conv";
    v.has_weight = 1;
    v.weight_dtype = STF_I8;
    v.weight_rank = 4;
    v.weight_shape = w;
    v.n = 8;
    v.k = 36;
    v.has_scale = 1;
    v.scale_dtype = STF_BF16;
    v.scale_rank = 1;
    v.scale_shape = s;
    assert_int_equal(rule_matches(r0, &v), 1);
    assert_int_equal(rule_matches(r1, &v), 0);
    v.has_marker = 1;
    assert_int_equal(rule_matches(r1, &v), 1);
    v.scale_dtype = STF_F32;
    assert_int_equal(rule_matches(r0, &v), 0);
    assert_int_equal(rule_matches(NULL, &v), 0);
    stf_recipe_free(r);
    stf_recipe_free(NULL);
}

static void test_top_level_problems(void **state)
{
    (void)state;
    expect_problem("", "bad.yaml:1:1: recipe: empty document (expected a mapping with stfix, "
                       "target and rules)");
    expect_problem("- a\n", "bad.yaml: not a recipe (the top level is a sequence, not a mapping)");
    static const char *const missing[] = {
        "bad.yaml:1:1: recipe: unknown key 'stfx' (expected one of: stfix, target, kind, "
        "description, include, rules, parallel)",
        "bad.yaml:1:1: recipe: missing required key 'stfix'",
        "bad.yaml:1:1: recipe: missing required key 'target'",
    };
    expect_problems("stfx: 1\nrules: []\n", 3, missing);
    expect_problem("stfix: 1\nkind: fix\ntarget: sglang\nrules: []\n",
                   "bad.yaml:2:7: kind: expected repair or conversion, got 'fix'");
    expect_problem("stfix: 1\nkind: [repair]\ntarget: sglang\nrules: []\n",
                   "bad.yaml:2:7: kind: expected repair or conversion, got a sequence");
    expect_problem("stfix: 2\ntarget: sglang\nrules: []\n",
                   "bad.yaml:1:8: stfix: unsupported recipe format version 2 (this stfix reads "
                   "version 1)");
    expect_problem("stfix: '1'\ntarget: sglang\nrules: []\n",
                   "bad.yaml:1:8: stfix: expected the format version 1, got '1'");
    expect_problem("stfix: 1\ntarget: vllm\nrules: []\n",
                   "bad.yaml:2:9: target: expected sglang or comfyui, got 'vllm'");
    expect_problem("stfix: 1\ntarget: [comfyui, comfyui]\nrules: []\n",
                   "bad.yaml:2:19: target[1]: 'comfyui' is listed twice");
    expect_problem("stfix: 1\ntarget: []\nrules: []\n",
                   "bad.yaml:2:9: target: expected sglang, comfyui, or a list of them, got a "
                   "sequence");
    expect_problem("stfix: 1\ntarget: sglang\ndescription: [a]\nrules: []\n",
                   "bad.yaml:3:14: description: expected a string, got a sequence");
    expect_problem("stfix: 1\ntarget: sglang\nrules: {}\n",
                   "bad.yaml:3:8: rules: expected a sequence of rules, got a mapping");
    static const char *const rule_keys[] = {
        "bad.yaml:3:9: rules[0]: unknown key 'x' (expected one of: name, description, match, "
        "do)",
        "bad.yaml:3:9: rules[0]: missing required key 'name'",
        "bad.yaml:3:9: rules[0]: missing required key 'match'",
        "bad.yaml:3:9: rules[0]: missing required key 'do'",
    };
    expect_problems("stfix: 1\ntarget: sglang\nrules: [x: 1]\n", 4, rule_keys);
}

static void test_rule_problems(void **state)
{
    (void)state;
    expect_problem("stfix: 1\ntarget: sglang\nrules:\n  - cast-scale\n",
                   "bad.yaml:4:5: rules[0]: expected a mapping with name, match and do, got "
                   "'cast-scale'");
    static const char *const several[] = {
        "bad.yaml:5:5: rules[0]: missing required key 'do'",
        "bad.yaml:6:13: rules[0].match: unknown key 'dtyp' (expected one of: prefix, regex, "
        "weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, probe, "
        "rotation, parallel, not)",
        "bad.yaml:8:11: rules[1].name: duplicate rule name 'a' (first at line 5)",
        "bad.yaml:10:27: rules[1].do.exclude.dtype: expected one of BF16, F16, F32, source, "
        "got 'I8'",
        "bad.yaml:11:11: rules[2].name: expected a non-empty string, got ''",
    };
    expect_problems("stfix: 1\n"
                    "target: sglang\n"
                    "rules:\n"
                    "  # first\n"
                    "  - name: a\n"
                    "    match: {dtyp: I8}\n"
                    "\n"
                    "  - name: a\n"
                    "    match: {}\n"
                    "    do: {exclude: {dtype: I8}}\n"
                    "  - name: ''\n"
                    "    match: {}\n"
                    "    do: drop\n",
                    5, several);
}

/* A file that is no recipe is refused as a whole, and nothing of its text
 * but the first 16 bytes of a key is ever shown. */
static void expect_not_recipe(const char *src, size_t len, const char *want)
{
    expect_problems_n(src, len, 1, &want);
}

static void test_not_a_recipe(void **state)
{
    (void)state;
    static const char shadow[] = "root:$6$saltsalt$SECRETHASH:20228:0:99999:7:::\n"
                                 "bin:*:20228:0:99999:7:::\n";
    expect_not_recipe(shadow, sizeof shadow - 1,
                      "bad.yaml: not a recipe (none of the keys stfix, target, kind, description, "
                      "include, rules, parallel at the top level)");
    expect_not_recipe("stfix: 1\0\n", 10, "bad.yaml: not a recipe (a NUL byte at offset 8)");
    expect_not_recipe("stfix: \xe9t\xe9\n", 11,
                      "bad.yaml: not a recipe (bytes that are not UTF-8 at offset 7)");
    /* An encoded surrogate is not UTF-8 either. */
    expect_not_recipe("a: \xed\xa0\x80\n", 7,
                      "bad.yaml: not a recipe (bytes that are not UTF-8 at offset 3)");
    expect_not_recipe("SECRETHASH\n", 11,
                      "bad.yaml: not a recipe (the top level is a scalar, not a mapping)");
    /* In a recipe, an unknown or duplicate key is shown by its first 16 bytes. */
    static const char *const keys[] = {
        "bad.yaml:4:1: recipe: unknown key 'root:$6$saltsalt...' (expected one of: stfix, "
        "target, kind, description, include, rules, parallel)",
    };
    expect_problems("stfix: 1\ntarget: sglang\nrules: []\nroot:$6$saltsalt$SECRETHASH: 1\n", 1,
                    keys);
    expect_problem("stfix: 1\nroot:$6$saltsalt$SECRETHASH: 1\nroot:$6$saltsalt$SECRETHASH: 1\n",
                   "bad.yaml:3:1: duplicate key 'root:$6$saltsalt...' (first at line 2)");
}

/* Each pattern is compiled once per recipe, however many rules use it; a
 * run searches a layer name once per pattern and stops every search once
 * its step budget is spent, with rule L12. */
static void test_regex_budget(void **state)
{
    (void)state;
    static const char src[] = "stfix: 1\n"
                              "target: comfyui\n"
                              "parallel:\n"
                              "  - {match: {regex: '(a+)+$'}, style: row}\n"
                              "rules:\n"
                              "  - {name: r0, match: {regex: '(a+)+$'}, do: cast-scale}\n"
                              "  - {name: r1, match: {regex: '(a+)+$'}, do: cast-scale}\n"
                              "  - {name: r2, match: {regex: 'attn'}, do: cast-scale}\n"
                              "  - {name: r3, match: {not: {regex: '(a+)+$'}}, do: cast-scale}\n";
    stf_recipe *r = NULL;
    stf_err err;
    assert_int_equal(stf_recipe_load_mem(&r, NULL, src, sizeof src - 1, "re.yaml", &err), 0);
    assert_int_equal(r->nregex, 2);
    assert_int_equal(r->max_regex_steps, 0);
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.prefix = "aaaaaaaaaaaab";
    stf__rules_run run;
    assert_int_equal(stf__rules_run_init(&run, r, UINT64_MAX, &err), 0);
    assert_true(run.budget.left == STF__REGEX_STEPS_DEFAULT);
    int m = -1;
    assert_int_equal(stf__rules_match_run(&m, stf_recipe_rule(r, 0), &v, &run, &err), 0);
    assert_int_equal(m, 0);
    uint64_t left = run.budget.left;
    assert_true(left < STF__REGEX_STEPS_DEFAULT);
    /* The same pattern on the same name: no step taken. */
    assert_int_equal(stf__rules_match_run(&m, stf_recipe_rule(r, 1), &v, &run, &err), 0);
    assert_int_equal(stf__rules_match_run(&m, stf_recipe_rule(r, 3), &v, &run, &err), 0);
    assert_int_equal(m, 1);
    stf_parallel_style st;
    assert_int_equal(stf__recipe_parallel_style_run(&st, r, &v, &run, &err), 0);
    assert_int_equal(st, STF_PARALLEL_UNKNOWN);
    assert_true(run.budget.left == left);
    uint64_t used = STF__REGEX_STEPS_DEFAULT - left;
    stf__rules_run_free(&run);

    /* A budget one step short: the search that needs it fails, and so does
     * every later one, with the same message. */
    assert_int_equal(stf__rules_run_init(&run, r, used - 1, &err), 0);
    static const char want[] =
        "re.yaml:6:31: rules[0].match.regex: L12 LimitExceeded: '(a+)+$' spent the run's budget "
        "of 100000000 regex steps matching 'aaaaaaaaaaaab'; simplify the regex, or raise the "
        "budget with --max-regex-steps";
    assert_int_equal(stf__rules_match_run(&m, stf_recipe_rule(r, 0), &v, &run, &err),
                     STF_ELIMIT);
    assert_string_equal(err.msg, want);
    assert_string_equal(err.rule, "L12");
    v.prefix = "attn";
    stf_err_clear(&err);
    assert_int_equal(stf__rules_match_run(&m, stf_recipe_rule(r, 2), &v, &run, &err),
                     STF_ELIMIT);
    assert_string_equal(err.msg, want);
    stf__rules_run_free(&run);
    /* Exactly enough is enough. */
    v.prefix = "aaaaaaaaaaaab";
    assert_int_equal(stf__rules_run_init(&run, r, used, &err), 0);
    assert_int_equal(stf__rules_match_run(&m, stf_recipe_rule(r, 0), &v, &run, &err), 0);
    assert_true(run.budget.left == 0);
    stf__rules_run_free(&run);
    stf_recipe_free(r);

    /* The budget comes from the options. */
    stf_recipe_opts o;
    stf_recipe_opts_init(&o);
    o.max_regex_steps = 1000;
    char path[] = "/tmp/stfix-regex-budget-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, src, sizeof src - 1), (ssize_t)(sizeof src - 1));
    close(fd);
    assert_int_equal(stf_recipe_load_file_opts(&r, NULL, path, &o, &err), 0);
    unlink(path);
    assert_int_equal(stf__rules_run_init(&run, r, UINT64_MAX, &err), 0);
    assert_true(run.budget.left == 1000);
    stf__rules_run_free(&run);
    stf_recipe_free(r);
}

static void test_file_errors(void **state)
{
    (void)state;
    stf_recipe *r = (stf_recipe *)1;
    stf_recipe_diags *d = (stf_recipe_diags *)1;
    stf_err err;
    assert_int_equal(stf_recipe_load_file(&r, &d, "/nonexistent/x.yaml", &err), STF_ENOTFOUND);
    assert_null(r);
    assert_null(d);
    assert_string_equal(err.msg, "/nonexistent/x.yaml: cannot open: No such file or directory");
    size_t big = (1u << 20) + 1;
    char *buf = calloc(1, big);
    assert_non_null(buf);
    assert_int_equal(stf_recipe_load_mem(&r, NULL, buf, big, "big.yaml", &err), STF_ELIMIT);
    assert_string_equal(err.msg, "big.yaml: recipe is larger than 1048576 bytes");
    free(buf);
    /* A directory or a device is refused before it is read. */
    assert_int_equal(stf_recipe_load_file(&r, &d, "/", &err), STF_EIO);
    assert_null(r);
    assert_null(d);
    assert_string_equal(err.msg, "/: not a recipe (a directory, not a regular file)");
    assert_int_equal(stf_recipe_load_file(&r, &d, "/dev/zero", &err), STF_EIO);
    assert_string_equal(err.msg, "/dev/zero: not a recipe (a character device, not a regular file)");
}

/* The bundled recipes load, and quantize-int8-convrot selects what its comments say. */
static void test_bundled(void **state)
{
    (void)state;
    static const char *const files[] = {
        "rules/sglang-int8-convrot.yaml", "rules/comfyui-int8-convrot.yaml",
        "rules/repair-scales.yaml", "rules/exclude-conv-and-embeddings.yaml",
        "rules/migrate-scaled-fp8.yaml", "rules/quantize-int8-convrot.yaml",
    };
    stf_recipe *r = NULL;
    stf_err err;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        stf_recipe_diags *d = NULL;
        int rc = stf_recipe_load_file(&r, &d, files[i], &err);
        if (rc) fail_msg("%s: %s", files[i], err.msg);
        assert_int_equal(strlen(stf_recipe_sha256(r)), 64);
        if (i + 1 < sizeof files / sizeof files[0]) stf_recipe_free(r);
    }
    /* r is quantize-int8-convrot.yaml: keep-embeddings, keep-non-linear, quantize-linear. */
    assert_int_equal(stf_recipe_rule_count(r), 3);
    static const uint64_t lin[2] = { 3072, 3072 }, norm[1] = { 3072 }, odd[2] = { 64, 40 };
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.has_weight = 1;
    v.weight_dtype = STF_BF16;
    v.weight_rank = 2;
    v.weight_shape = lin;
    v.n = v.k = 3072;
    v.prefix = "blocks.0.mlp.fc1";
    assert_int_equal(rule_matches(stf_recipe_rule(r, 0), &v), 0);
    assert_int_equal(rule_matches(stf_recipe_rule(r, 1), &v), 0);
    assert_int_equal(rule_matches(stf_recipe_rule(r, 2), &v), 1);
    const stf_action *a = stf_rule_action(stf_recipe_rule(r, 2), 0);
    assert_int_equal(a->kind, STF_ACT_REQUANTIZE);
    assert_int_equal(a->params.requantize.fallback_dtype, STF_DTYPE_SOURCE);
    assert_int_equal(a->params.requantize.quant_mode_set, 1);
    v.prefix = "model.pos_embed";
    assert_int_equal(rule_matches(stf_recipe_rule(r, 0), &v), 1);
    v.prefix = "blocks.0.norm1";
    v.weight_rank = 1;
    v.weight_shape = norm;
    assert_int_equal(rule_matches(stf_recipe_rule(r, 1), &v), 1);
    /* K = 40: no group size divides it; requantize's on_indivisible keeps it. */
    v.weight_rank = 2;
    v.weight_shape = odd;
    v.n = 64;
    v.k = 40;
    assert_int_equal(rule_matches(stf_recipe_rule(r, 2), &v), 1);
    assert_int_equal(a->params.requantize.on_indivisible, STF_INDIVISIBLE_EXCLUDE);
    stf_recipe_free(r);
}

/* ---------------------------------------------------- allocation failures */

static void run_alloc_failures(const char *src, int want_rc)
{
    st_alloc_install();
    int done = 0;
    for (long i = 0; i < 5000 && !done; i++) {
        st_alloc_arm(i + 1);
        stf_recipe *r = NULL;
        stf_recipe_diags *d = NULL;
        stf_err err;
        int rc = stf_recipe_load_mem(&r, &d, src, strlen(src), "a.yaml", &err);
        if (rc == STF_ENOMEM) {
            assert_null(r);
            assert_null(d);
            assert_int_equal(err.code, STF_ENOMEM);
        } else {
            assert_int_equal(rc, want_rc);
            done = 1;
        }
        stf_recipe_free(r);
        stf_recipe_diags_free(d);
    }
    st_alloc_uninstall();
    assert_int_equal(done, 1);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    run_alloc_failures(good, 0);
    run_alloc_failures("stfix: 1\ntarget: sglang\nrules:\n"
                       "  - {name: a, match: {dtyp: 1, shape: 'K ='}, do: [{rename: {}}]}\n",
                       STF_EFORMAT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),        cmocka_unit_test(test_top_level_problems),
        cmocka_unit_test(test_rule_problems), cmocka_unit_test(test_not_a_recipe),
        cmocka_unit_test(test_file_errors), cmocka_unit_test(test_regex_budget),
        cmocka_unit_test(test_bundled),     cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
