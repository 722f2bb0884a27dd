/*
 * Tests for lib/model/marker.c: canonical marker bytes (stfix-defects(7),
 * CANONICAL MARKER; exact bytes and lengths), ComfyUI-style field reading and
 * normalisation (MARKER FIELDS; missing-format, nested-params,
 * w4a8-without-convrot, underscore-keys), and the canonical
 * _quantization_metadata value (MARKER CHANNELS). Reading
 * markers out of a checkpoint is exercised through the model in
 * test_layers.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"

static void canon_is(const stf_marker_spec *s, const char *want, size_t want_len)
{
    char *out = NULL;
    size_t len = 0;
    stf_err err;
    assert_int_equal(stf_marker_canonical(&out, &len, s, &err), 0);
    assert_string_equal(out, want);
    assert_int_equal(len, want_len);
    assert_int_equal(strlen(want), want_len);
    stf_model_str_free(out);
}

static void test_canonical_table(void **state)
{
    (void)state;
    stf_marker_spec s;
    memset(&s, 0, sizeof s);
    s.format = "int8_tensorwise";
    s.convrot = 1;
    s.convrot_groupsize_set = 1;
    s.convrot_groupsize = 256;
    canon_is(&s, "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}", 72);
    s.convrot_groupsize = 64;
    canon_is(&s, "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 64}", 71);
    s.convrot_groupsize = 16;
    canon_is(&s, "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 16}", 71);
    s.convrot_groupsize = 256;
    s.full_precision_matrix_mult = 1;
    canon_is(&s, "{\"format\": \"int8_tensorwise\", \"full_precision_matrix_mult\": true, "
                 "\"convrot\": true, \"convrot_groupsize\": 256}", 108);

    memset(&s, 0, sizeof s);
    s.format = "convrot_w4a4";
    s.convrot_groupsize_set = 1;
    s.convrot_groupsize = 256;
    s.linear_dtype = "int4"; /* the default is never written */
    canon_is(&s, "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 256}", 52);
    s.linear_dtype = "int8";
    canon_is(&s, "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 256, \"linear_dtype\": \"int8\"}", 76);

    memset(&s, 0, sizeof s);
    s.format = "asym_w4a8_int8";
    s.group_size_set = 1;
    s.group_size = 16;
    s.convrot = 1;
    s.convrot_groupsize_set = 1;
    s.convrot_groupsize = 256;
    canon_is(&s, "{\"format\": \"asym_w4a8_int8\", \"group_size\": 16, \"convrot\": true, "
                 "\"convrot_groupsize\": 256}", 89);

    memset(&s, 0, sizeof s);
    s.format = "float8_e4m3fn";
    canon_is(&s, "{\"format\": \"float8_e4m3fn\"}", 27);
    s.num_experts_set = 1;
    s.num_experts = 8;
    canon_is(&s, "{\"format\": \"float8_e4m3fn\", \"num_experts\": 8}", 45);

    s.format = NULL;
    char *out = (char *)1;
    assert_int_equal(stf_marker_canonical(&out, NULL, &s, NULL), STF_EINVAL);
    assert_null(out);
}

static stf_pyval *parse(const char *s)
{
    stf_pyval *v = NULL;
    assert_int_equal(stf_pyjson_parse(&v, s, strlen(s), NULL), 0);
    return v;
}

/* Normalise `json` with flags and compare the canonical bytes. */
static void norm_is(const char *json, unsigned flags, const char *want)
{
    stf_pyval *v = parse(json);
    stf_marker_spec s;
    stf_err err;
    stf_err_clear(&err);
    if (stf_marker_normalize(&s, v, flags, &err) != 0) fail_msg("normalize %s: %s", json, err.msg);
    char *out = NULL;
    assert_int_equal(stf_marker_canonical(&out, NULL, &s, &err), 0);
    assert_string_equal(out, want);
    stf_model_str_free(out);
    stf_pyval_free(v);
}

static void norm_fails(const char *json, unsigned flags, const char *msg)
{
    stf_pyval *v = parse(json);
    stf_marker_spec s;
    stf_err err;
    assert_int_equal(stf_marker_normalize(&s, v, flags, &err), STF_EFORMAT);
    assert_string_equal(err.msg, msg);
    stf_pyval_free(v);
}

static void test_normalize(void **state)
{
    (void)state;
    /* canonical input is a fixed point */
    norm_is("{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}", 0,
            "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}");
    /* nested-params: params hoisted; 256.0 through int(); key order fixed; per_row and _* dropped
     * (underscore-keys) */
    norm_is("{\"per_row\": true, \"_is_rowwise\": true, \"params\": {\"convrot_groupsize\": 64.0,"
            " \"convrot\": 1}, \"format\": \"int8_tensorwise\"}", 0,
            "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 64}");
    /* top level wins over params */
    norm_is("{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": \"16\","
            " \"params\": {\"convrot_groupsize\": 256}}", 0,
            "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 16}");
    /* missing-format: the old INT8-Fast marker */
    norm_is("{\"convrot\": true, \"convrot_groupsize\": 256, \"per_row\": true}",
            STF_NORM_ADD_INT8_FORMAT,
            "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}");
    /* convrot truthy with no G: ComfyUI's default 256 is written out */
    norm_is("{\"format\": \"int8_tensorwise\", \"convrot\": \"yes\"}", 0,
            "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}");
    /* rowwise without rotation: no G */
    norm_is("{\"format\": \"int8_tensorwise\", \"convrot\": false}", 0,
            "{\"format\": \"int8_tensorwise\"}");
    norm_is("{\"format\": \"int8_tensorwise\", \"full_precision_matrix_mult\": true,"
            " \"convrot\": true, \"convrot_groupsize\": 256}", 0,
            "{\"format\": \"int8_tensorwise\", \"full_precision_matrix_mult\": true, "
            "\"convrot\": true, \"convrot_groupsize\": 256}");
    /* W4A4: G default, linear_dtype int4 omitted */
    norm_is("{\"format\": \"convrot_w4a4\", \"linear_dtype\": \"int4\"}", 0,
            "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 256}");
    norm_is("{\"linear_dtype\": \"int8\", \"format\": \"convrot_w4a4\", \"convrot_groupsize\": 64}",
            0, "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 64, \"linear_dtype\": \"int8\"}");
    /* w4a8-without-convrot: ComfyUI's own W4A8 marker gets convrot; group_size default 16 */
    norm_is("{\"format\": \"asym_w4a8_int8\"}", STF_NORM_ADD_W4A8_CONVROT,
            "{\"format\": \"asym_w4a8_int8\", \"group_size\": 16, \"convrot\": true, "
            "\"convrot_groupsize\": 256}");
    norm_is("{\"format\": \"asym_w4a8_int8\"}", 0,
            "{\"format\": \"asym_w4a8_int8\", \"group_size\": 16}");
    /* awq: group_size only at the top level (C14) */
    norm_is("{\"format\": \"awq_w4a16\", \"params\": {\"group_size\": 32}}", 0,
            "{\"format\": \"awq_w4a16\"}");
    norm_is("{\"format\": \"awq_w4a16\", \"group_size\": 32}", 0,
            "{\"format\": \"awq_w4a16\", \"group_size\": 32}");
    norm_is("{\"format\": \"float8_e4m3fn\", \"num_experts\": 4}", 0,
            "{\"format\": \"float8_e4m3fn\", \"num_experts\": 4}");

    /* string-metadata-value: a bare string metadata value */
    norm_is("\"float8_e4m3fn\"", STF_NORM_WRAP_STRING, "{\"format\": \"float8_e4m3fn\"}");
    norm_fails("\"float8_e4m3fn\"", 0, "marker is not a JSON object");
    norm_fails("{\"convrot\": true}", 0, "marker has no 'format'");
    norm_fails("{\"format\": 3}", 0, "marker key 'format' is not a string");
    norm_fails("[1]", 0, "marker is not a JSON object");
    norm_fails("{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": \"256.0\"}",
               0, "marker key 'convrot_groupsize': invalid literal for int() with base 10");
    norm_fails("{\"format\": \"convrot_w4a4\", \"linear_dtype\": 8}", 0,
               "marker key 'linear_dtype' is not a string");
}

static void test_qmeta_canonical(void **state)
{
    (void)state;
    const char *p1[] = { "blocks.0.attn.qkv" };
    const char *m1[] = { "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}" };
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(stf_qmeta_canonical(&out, &len, p1, NULL, m1, 1, NULL), 0);
    assert_string_equal(out, "{\"format_version\": \"1.0\", \"layers\": {\"blocks.0.attn.qkv\": "
                             "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                             "\"convrot_groupsize\": 256}}}");
    assert_int_equal(len, 132);
    stf_model_str_free(out);

    const char *p3[] = { "b", "a\xc3\xa9", "B" };
    const char *m3[] = { "{\"format\": \"float8_e4m3fn\"}", "{\"x\": 1}", "{}" };
    assert_int_equal(stf_qmeta_canonical(&out, NULL, p3, NULL, m3, 3, NULL), 0);
    assert_string_equal(out, "{\"format_version\": \"1.0\", \"layers\": {\"B\": {}, "
                             "\"a\\u00e9\": {\"x\": 1}, \"b\": {\"format\": \"float8_e4m3fn\"}}}");
    stf_model_str_free(out);

    assert_int_equal(stf_qmeta_canonical(&out, &len, NULL, NULL, NULL, 0, NULL), 0);
    assert_string_equal(out, "{\"format_version\": \"1.0\", \"layers\": {}}");
    stf_model_str_free(out);

    const char *dup[] = { "a", "a" };
    stf_err err;
    assert_int_equal(stf_qmeta_canonical(&out, NULL, dup, NULL, m3, 2, &err), STF_EINVAL);
    assert_null(out);
    assert_string_equal(err.msg, "layer a listed twice");

    /* Prefixes with lengths: "a" and "a\0b" are two layers, sorted by bytes,
     * and U+0000 is written as Python's json.dumps writes it. */
    const char *pn[] = { "a\0b", "a" };
    const size_t ln[] = { 3, 1 };
    assert_int_equal(stf_qmeta_canonical(&out, NULL, pn, ln, m3, 2, &err), 0);
    assert_string_equal(out, "{\"format_version\": \"1.0\", \"layers\": {\"a\": {\"x\": 1}, "
                             "\"a\\u0000b\": {\"format\": \"float8_e4m3fn\"}}}");
    stf_model_str_free(out);
    const char *pd[] = { "a\0b", "a\0b" };
    const size_t ld[] = { 3, 3 };
    assert_int_equal(stf_qmeta_canonical(&out, NULL, pd, ld, m3, 2, &err), STF_EINVAL);
    assert_string_equal(err.msg, "layer a\\u0000b listed twice");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical_table),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_qmeta_canonical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
