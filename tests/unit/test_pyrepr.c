/*
 * Tests for lib/model/pyrepr.c: repr()/str()/json.dumps() text must match
 * CPython byte for byte (SGLang messages are reproduced exactly). Every
 * expected string below was printed by CPython 3.11.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"

static void check_str(const char *in, size_t n, const char *want)
{
    char *out = NULL;
    stf_err err;
    assert_int_equal(stf_pyrepr_str(&out, in, n, &err), 0);
    assert_string_equal(out, want);
    stf_model_str_free(out);
}
#define STR(lit, want) check_str(lit, sizeof(lit) - 1, want)

static void test_repr_str(void **state)
{
    (void)state;
    STR("blocks.0.fc1", "'blocks.0.fc1'");
    STR("it's", "\"it's\"");
    STR("a'b\"c", "'a\\'b\"c'");
    STR("a\\b", "'a\\\\b'");
    STR("\n\t\r\0\x7f", "'\\n\\t\\r\\x00\\x7f'");
    STR("\xc2\x85\xc2\xa0\xc3\xa9", "'\\x85\\xa0\xc3\xa9'");        /* NEL, NBSP escaped, é kept */
    STR("\xe2\x80\x8b", "'\\u200b'");                                 /* ZERO WIDTH SPACE (Cf) */
    STR("\xf3\xa0\x80\x81", "'\\U000e0001'");                         /* LANGUAGE TAG */
    STR("\xf0\x9f\x98\x80", "'\xf0\x9f\x98\x80'");                    /* emoji is printable */
    STR("\xed\xa0\x80", "'\\ud800'");                                 /* lone surrogate */
    STR("\xff", "'\\udcff'");                                         /* surrogateescape */
    STR("", "''");
    STR("\xcd\xb8", "'\\u0378'");                                     /* unassigned (Cn) */
    char *out = (char *)1;
    stf_err err;
    assert_int_equal(stf_pyrepr_str(&out, NULL, 3, &err), STF_EINVAL);
    assert_null(out);
}

static void check_double(double d, const char *want)
{
    char *out = NULL;
    assert_int_equal(stf_pyrepr_double(&out, d, NULL), 0);
    assert_string_equal(out, want);
    stf_model_str_free(out);
}

static void test_repr_float(void **state)
{
    (void)state;
    check_double(256.0, "256.0");
    check_double(1e16, "1e+16");
    check_double(1e15, "1000000000000000.0");
    check_double(0.1, "0.1");
    check_double(1e-5, "1e-05");
    check_double(0.0001, "0.0001");
    check_double(-0.0, "-0.0");
    check_double(0.0, "0.0");
    check_double(INFINITY, "inf");
    check_double(-INFINITY, "-inf");
    check_double(NAN, "nan");
    check_double(1.5e300, "1.5e+300");
    check_double(5e-324, "5e-324");
    check_double(1.7976931348623157e308, "1.7976931348623157e+308");
    check_double(123456789.123, "123456789.123");
    check_double(0.1 + 0.2, "0.30000000000000004");
    check_double(2.5, "2.5");
    check_double(100.0, "100.0");
    check_double(1e22, "1e+22");
    check_double(12345678901234567.0, "1.2345678901234568e+16");
    check_double(-2.5e-7, "-2.5e-07");
}

static stf_pyval *parse(const char *s)
{
    stf_pyval *v = NULL;
    assert_int_equal(stf_pyjson_parse(&v, s, strlen(s), NULL), 0);
    return v;
}

static void test_repr_and_str_values(void **state)
{
    (void)state;
    stf_pyval *v = parse("{\"a\": [1, 2.5, null, true, \"x'y\"], \"b\": {}, \"c\": 256.0,"
                         " \"d\": \"int8\", \"e\": false, \"f\": 12345678901234567890}");
    char *out = NULL;
    assert_int_equal(stf_pyrepr_value(&out, v, NULL), 0);
    assert_string_equal(out, "{'a': [1, 2.5, None, True, \"x'y\"], 'b': {}, 'c': 256.0, "
                             "'d': 'int8', 'e': False, 'f': 12345678901234567890}");
    stf_model_str_free(out);
    static const struct { const char *key, *repr, *str; } want[] = {
        { "c", "256.0", "256.0" }, { "d", "'int8'", "int8" }, { "e", "False", "False" },
        { "b", "{}", "{}" },
    };
    for (size_t i = 0; i < 4; i++) {
        const stf_pyval *x = stf_pyval_find(v, want[i].key);
        assert_int_equal(stf_pyrepr_value(&out, x, NULL), 0);
        assert_string_equal(out, want[i].repr);
        stf_model_str_free(out);
        assert_int_equal(stf_pystr_value(&out, x, NULL), 0);
        assert_string_equal(out, want[i].str);
        stf_model_str_free(out);
    }
    stf_pyval_free(v);
    v = parse("null");
    assert_int_equal(stf_pystr_value(&out, v, NULL), 0);
    assert_string_equal(out, "None");
    stf_model_str_free(out);
    stf_pyval_free(v);
    assert_int_equal(stf_pyrepr_value(&out, NULL, NULL), STF_EINVAL);
}

static void test_json_dumps(void **state)
{
    (void)state;
    stf_pyval *v = parse("{\"format\": \"int8_tensorwise\", \"x\": \"\\u00e9\\ud83d\\ude00\\u007f\\n\","
                         " \"n\": NaN, \"i\": -Infinity, \"f\": 1e16, \"l\": [], \"d\": {},"
                         " \"t\": [true, null, -0, 2.0]}");
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(stf_pyjson_dumps(&out, &len, v, NULL), 0);
    static const char want[] =
        "{\"format\": \"int8_tensorwise\", \"x\": \"\\u00e9\\ud83d\\ude00\\u007f\\n\", "
        "\"n\": NaN, \"i\": -Infinity, \"f\": 1e+16, \"l\": [], \"d\": {}, "
        "\"t\": [true, null, 0, 2.0]}";
    assert_string_equal(out, want);
    assert_int_equal(len, sizeof want - 1);
    stf_model_str_free(out);
    stf_pyval_free(v);
}

static void test_shapes_and_tensor_meta(void **state)
{
    (void)state;
    char *out = NULL;
    static const uint64_t s2[] = { 2, 256 };
    assert_int_equal(stf_pyrepr_shape(&out, 0, NULL, NULL), 0);
    assert_string_equal(out, "()");
    stf_model_str_free(out);
    assert_int_equal(stf_pyrepr_shape(&out, 1, s2, NULL), 0);
    assert_string_equal(out, "(2,)");
    stf_model_str_free(out);
    assert_int_equal(stf_pyrepr_shape(&out, 2, s2, NULL), 0);
    assert_string_equal(out, "(2, 256)");
    stf_model_str_free(out);

    stf_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = STF_I8;
    t.rank = 2;
    t.shape = s2;
    assert_int_equal(stf_pyrepr_tensor_meta(&out, &t, NULL), 0);
    assert_string_equal(out, "('I8', (2, 256))");
    stf_model_str_free(out);
    t.dtype = STF_F32;
    t.rank = 0;
    t.shape = NULL;
    assert_int_equal(stf_pyrepr_tensor_meta(&out, &t, NULL), 0);
    assert_string_equal(out, "('F32', ())");
    stf_model_str_free(out);
    assert_int_equal(stf_pyrepr_tensor_meta(&out, NULL, NULL), 0);
    assert_string_equal(out, "None");
    stf_model_str_free(out);
}

static void test_sorted_lists(void **state)
{
    (void)state;
    const char *names[] = { "b", "a.weight", "a", "\xc3\xa9", "Z" };
    char *out = NULL;
    assert_int_equal(stf_pyrepr_sorted(&out, names, NULL, 5, 5, NULL), 0);
    assert_string_equal(out, "['Z', 'a', 'a.weight', 'b', '\xc3\xa9']");
    stf_model_str_free(out);
    assert_int_equal(stf_pyrepr_sorted(&out, names, NULL, 5, 2, NULL), 0);
    assert_string_equal(out, "['Z', 'a']");
    stf_model_str_free(out);
    assert_int_equal(stf_pyrepr_sorted(&out, NULL, NULL, 0, SIZE_MAX, NULL), 0);
    assert_string_equal(out, "[]");
    stf_model_str_free(out);
    /* explicit lengths: "ab" cut to "a" sorts before "a\0"-free "aa" */
    const char *two[] = { "aa", "ab" };
    const size_t lens[] = { 2, 1 };
    assert_int_equal(stf_pyrepr_sorted(&out, two, lens, 2, SIZE_MAX, NULL), 0);
    assert_string_equal(out, "['a', 'aa']");
    stf_model_str_free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repr_str),
        cmocka_unit_test(test_repr_float),
        cmocka_unit_test(test_repr_and_str_values),
        cmocka_unit_test(test_json_dumps),
        cmocka_unit_test(test_shapes_and_tensor_meta),
        cmocka_unit_test(test_sorted_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
