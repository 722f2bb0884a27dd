/*
 * Tests for the vocabulary the layers share: one enum and one name table
 * for each of probe verdicts, formats and consumers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"

/* Every verdict has its own name; the first value past the enum has none. */
static void test_verdict_names(void **state)
{
    (void)state;
    static const char *const want[STF_PROBE_COUNT] = {
        "UNKNOWN", "ROW", "COLUMN", "TENSOR", "BLOCK", "AMBIGUOUS"
    };
    for (stf_probe_verdict v = STF_PROBE_UNKNOWN; v < STF_PROBE_COUNT; v++)
        assert_string_equal(stf_probe_verdict_name(v), want[v]);
    assert_null(stf_probe_verdict_name(STF_PROBE_COUNT));
    /* The H1 result carries the same type the selector reads. */
    stf_h1_result h = { 0 };
    stf_layer_view lv = { 0 };
    h.verdict = STF_PROBE_COLUMN;
    lv.probe = h.verdict;
    assert_int_equal(lv.probe, STF_PROBE_COLUMN);
}

/*
 * One format table: every id has a name, names are distinct, and each
 * name leads back to its own row, the one recipes and markers both use.
 */
static void test_format_names(void **state)
{
    (void)state;
    static const char *const want[STF_FMT_COUNT] = {
        "int8_tensorwise", "convrot_w4a4", "asym_w4a8_int8", "float8_e4m3fn",
        "float8_e5m2", "nvfp4", "mxfp8", "awq_w4a16"
    };
    for (stf_format_id f = 0; f < STF_FMT_COUNT; f++) {
        const char *name = stf_format_name(f);
        assert_string_equal(name, want[f]);
        const stf_format_info *row = stf_format_find(name, strlen(name));
        assert_non_null(row);
        assert_int_equal(row->id, f);
        assert_ptr_equal(row, stf_format_at(f));
        assert_ptr_equal(row->name, name);
    }
    assert_null(stf_format_name(STF_FMT_COUNT));
    assert_null(stf_format_name((stf_format_id)-1));
}

/* A recipe's format parameter parses to the table's id, for every format. */
static void test_recipe_formats(void **state)
{
    (void)state;
    for (stf_format_id f = 0; f < STF_FMT_COUNT; f++) {
        char src[256];
        snprintf(src, sizeof src,
                 "stfix: 1\ntarget: [comfyui]\nrules:\n  - name: r\n    match: {prefix: \"*\"}\n"
                 "    do: [{set-marker: {format: %s}}]\n", stf_format_name(f));
        stf_recipe *r = NULL;
        stf_err err;
        assert_int_equal(stf_recipe_load_mem(&r, NULL, src, strlen(src), "v.yaml", &err), 0);
        const stf_action *a = stf_rule_action(stf_recipe_rule(r, 0), 0);
        assert_int_equal(a->kind, STF_ACT_SET_MARKER);
        assert_int_equal(a->params.set_marker.has_format, 1);
        assert_int_equal(a->params.set_marker.format, f);
        stf_recipe_free(r);
    }
}

/* One consumer bit set: the format table, recipes and check profiles agree. */
static void test_consumer_bits(void **state)
{
    (void)state;
    assert_int_equal(STF_CONSUMER_SGLANG, 2);
    assert_int_equal(STF_CONSUMER_COMFYUI, 4);
    assert_int_equal(STF_CHECK_ALL, STF_CHECK_CONTAINER | STF_CONSUMER_ALL);
    assert_int_equal(STF_CONSUMER_ALL & (STF_CHECK_CONTAINER | STF_CHECK_NUMERIC), 0);
    assert_int_equal(stf_format_at(STF_FMT_FLOAT8_E5M2)->consumers, STF_CONSUMER_COMFYUI);
    assert_int_equal(stf_format_at(STF_FMT_INT8_TENSORWISE)->consumers, STF_CONSUMER_ALL);
    static const struct { const char *target; unsigned bits; } cases[] = {
        { "sglang", STF_CONSUMER_SGLANG },
        { "comfyui", STF_CONSUMER_COMFYUI },
        { "[comfyui, sglang]", STF_CONSUMER_ALL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[256];
        snprintf(src, sizeof src,
                 "stfix: 1\ntarget: %s\nrules:\n  - name: r\n    match: {prefix: \"*\"}\n"
                 "    do: [cast-scale]\n", cases[i].target);
        stf_recipe *r = NULL;
        stf_err err;
        assert_int_equal(stf_recipe_load_mem(&r, NULL, src, strlen(src), "v.yaml", &err), 0);
        assert_int_equal(stf_recipe_targets(r), cases[i].bits);
        stf_recipe_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_recipe_formats),
        cmocka_unit_test(test_consumer_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
