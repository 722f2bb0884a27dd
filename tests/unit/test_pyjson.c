/*
 * Tests for lib/model/pyjson.c: the parser must give exactly what CPython's
 * json.loads(bytes) gives (values, or the error message), since ComfyUI and
 * SGLang read markers with it. Expected messages were taken from CPython 3.11.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"
#include "support/st_pyjson.h"
#include "support/st_alloc.h"

static void expect_err(const char *s, size_t n, int code, const char *msg, uint64_t off)
{
    stf_pyval *v = (stf_pyval *)1;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_pyjson_parse(&v, s, n, &err), code);
    assert_null(v);
    assert_int_equal(err.code, code);
    assert_string_equal(err.msg, msg);
    assert_int_equal(err.has_offset, 1);
    assert_int_equal(err.offset, off);
}
#define ERR(lit, msg, off) expect_err(lit, sizeof(lit) - 1, STF_EFORMAT, msg, off)

static void test_marker_object(void **state)
{
    (void)state;
    stf_pyval *v =
        ST_PYJSON("{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}");
    assert_int_equal(stf_pyval_type(v), STF_PY_DICT);
    assert_int_equal(stf_pyval_len(v), 3);
    size_t kl = 0;
    assert_string_equal(stf_pyval_key(v, 0, &kl), "format");
    assert_int_equal(kl, 6);
    assert_string_equal(stf_pyval_key(v, 2, NULL), "convrot_groupsize");
    assert_null(stf_pyval_key(v, 3, NULL));
    size_t sl = 0;
    assert_string_equal(stf_pyval_str(stf_pyval_find(v, "format"), &sl), "int8_tensorwise");
    assert_int_equal(sl, 15);
    assert_int_equal(stf_pyval_is_true(stf_pyval_find(v, "convrot")), 1);
    const stf_pyval *g = stf_pyval_find(v, "convrot_groupsize");
    assert_int_equal(stf_pyval_type(g), STF_PY_INT);
    assert_string_equal(stf_pyval_int_text(g), "256");
    int64_t i = 0;
    assert_int_equal(stf_pyval_int64(&i, g), 0);
    assert_int_equal(i, 256);
    assert_null(stf_pyval_find(v, "missing"));
    assert_null(stf_pyval_find(g, "format")); /* not a dict */
    stf_pyval_free(v);
}

static void test_duplicate_keys_last_wins_first_position(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("{\"a\": 1, \"b\": 2, \"a\": 3}");
    assert_int_equal(stf_pyval_len(v), 2);
    assert_string_equal(stf_pyval_key(v, 0, NULL), "a");
    assert_string_equal(stf_pyval_int_text(stf_pyval_item(v, 0)), "3");
    assert_string_equal(stf_pyval_key(v, 1, NULL), "b");
    assert_string_equal(stf_pyval_int_text(stf_pyval_find(v, "a")), "3");
    stf_pyval_free(v);
    /* A replaced container is released with its strings; the empty one stays. */
    v = ST_PYJSON("{\"a\": {\"x\": [1, \"s\"]}, \"b\": [], \"a\": {\"y\": \"z\"}}");
    assert_int_equal(stf_pyval_len(v), 2);
    assert_string_equal(stf_pyval_key(v, 0, NULL), "a");
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_pyval_item(v, 0), "y"), NULL), "z");
    assert_null(stf_pyval_find(stf_pyval_item(v, 0), "x"));
    assert_int_equal(stf_pyval_len(stf_pyval_find(v, "b")), 0);
    stf_pyval_free(v);
}

/* A doc with equal small containers of scalars, some replaced by a later
 * duplicate key: what each reads stays its own. */
static const char SHARED_DOC[] =
    "{\"x\": {\"format\": \"int8\"}, \"y\": {\"format\": \"int8\"}, \"x\": {\"format\": \"w4\"},"
    " \"l\": [[1, 2.5, true], [1, 2.5, true], [1, 2.5, false], {\"format\": \"w4\"}],"
    " \"z\": {\"format\": \"w4\"}}";

static int parse_shared(void *ud, stf_err *err)
{
    (void)ud;
    stf_pyval *v = NULL;
    int rc = stf_pyjson_parse(&v, SHARED_DOC, sizeof SHARED_DOC - 1, err);
    stf_pyval_free(v);
    return rc;
}

static void test_equal_containers_share_a_block(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON(SHARED_DOC);
    assert_int_equal(stf_pyval_len(v), 4);
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_pyval_find(v, "x"), "format"), NULL), "w4");
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_pyval_find(v, "y"), "format"), NULL), "int8");
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_pyval_find(v, "z"), "format"), NULL), "w4");
    const stf_pyval *l = stf_pyval_find(v, "l");
    assert_int_equal(stf_pyval_len(l), 4);
    assert_true(stf_pyval_is_true(stf_pyval_item(stf_pyval_item(l, 1), 2)));
    assert_false(stf_pyval_is_true(stf_pyval_item(stf_pyval_item(l, 2), 2)));
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_pyval_item(l, 3), "format"), NULL), "w4");
    stf_pyval_free(v);
    /* Every failing allocation leaves nothing behind, counted blocks included. */
    st_alloc_install();
    st_alloc_sweep(parse_shared, NULL, NULL);
    st_alloc_uninstall();
    /* A thousand equal markers are one block, not one each: the root, the
     * list, the one block and the parse's scratch are all that is made. */
    size_t n = 0;
    char *buf = malloc(40000);
    assert_non_null(buf);
    buf[n++] = '[';
    for (int k = 0; k < 1000; k++) n += (size_t)sprintf(buf + n, "%s{\"format\": \"int8_tensorwise\"}", k ? ", " : "");
    buf[n++] = ']';
    st_alloc_install();
    st_alloc_arm(0);
    stf_err err;
    v = NULL;
    assert_int_equal(stf_pyjson_parse(&v, buf, n, &err), 0);
    assert_int_equal(st_alloc_live(), 3);
    assert_int_equal(stf_pyval_len(v), 1000);
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_pyval_item(v, 999), "format"), NULL),
                        "int8_tensorwise");
    stf_pyval_free(v);
    assert_int_equal(st_alloc_live(), 0);
    st_alloc_uninstall();
    free(buf);
}

static void test_large_dict_hash_index(void **state)
{
    (void)state;
    /* 300 keys k0..k299, then k5 reassigned: the hashed path must agree with the linear one. */
    char *buf = malloc(8192);
    assert_non_null(buf);
    size_t n = 0;
    buf[n++] = '{';
    for (int k = 0; k < 300; k++) n += (size_t)sprintf(buf + n, "\"k%d\": %d, ", k, k);
    n += (size_t)sprintf(buf + n, "\"k5\": \"x\"}");
    stf_pyval *v = st_pyjson_ok(buf, n);
    assert_int_equal(stf_pyval_len(v), 300);
    assert_string_equal(stf_pyval_key(v, 5, NULL), "k5");
    assert_string_equal(stf_pyval_str(stf_pyval_item(v, 5), NULL), "x");
    assert_string_equal(stf_pyval_int_text(stf_pyval_find(v, "k299")), "299");
    assert_string_equal(stf_pyval_key(v, 299, NULL), "k299");
    free(buf);
    stf_pyval_free(v);
}

static void test_numbers(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("[256, 256.0, 2.56e2, -0, -0.0, 1E400, 123456789012345678901234567890,"
                         " NaN, Infinity, -Infinity, -12, 0.5e-1]");
    assert_int_equal(stf_pyval_len(v), 12);
    assert_int_equal(stf_pyval_type(stf_pyval_item(v, 0)), STF_PY_INT);
    assert_int_equal(stf_pyval_type(stf_pyval_item(v, 1)), STF_PY_FLOAT);
    assert_true(stf_pyval_float(stf_pyval_item(v, 1)) == 256.0);
    assert_int_equal(stf_pyval_type(stf_pyval_item(v, 2)), STF_PY_FLOAT);
    assert_true(stf_pyval_float(stf_pyval_item(v, 2)) == 256.0);
    assert_string_equal(stf_pyval_int_text(stf_pyval_item(v, 3)), "0");
    assert_true(signbit(stf_pyval_float(stf_pyval_item(v, 4))));
    assert_true(isinf(stf_pyval_float(stf_pyval_item(v, 5))));
    const stf_pyval *big = stf_pyval_item(v, 6);
    assert_string_equal(stf_pyval_int_text(big), "123456789012345678901234567890");
    int64_t i = 0;
    assert_int_equal(stf_pyval_int64(&i, big), STF_ELIMIT);
    assert_true(isnan(stf_pyval_float(stf_pyval_item(v, 7))));
    assert_true(stf_pyval_float(stf_pyval_item(v, 8)) == INFINITY);
    assert_true(stf_pyval_float(stf_pyval_item(v, 9)) == -INFINITY);
    assert_int_equal(stf_pyval_int64(&i, stf_pyval_item(v, 10)), 0);
    assert_int_equal(i, -12);
    assert_true(stf_pyval_float(stf_pyval_item(v, 11)) == 0.05);
    assert_int_equal(stf_pyval_int64(&i, stf_pyval_item(v, 1)), STF_EINVAL);
    stf_pyval_free(v);

    v = ST_PYJSON("-9223372036854775808");
    assert_int_equal(stf_pyval_int64(&i, v), 0);
    assert_true(i == INT64_MIN);
    stf_pyval_free(v);
    v = ST_PYJSON("9223372036854775808");
    assert_int_equal(stf_pyval_int64(&i, v), STF_ELIMIT);
    stf_pyval_free(v);
}

static void test_int_digit_limit(void **state)
{
    (void)state;
    char *buf = malloc(4302);
    assert_non_null(buf);
    memset(buf, '1', 4301);
    stf_pyval *v = st_pyjson_ok(buf, 4300);
    assert_int_equal(strlen(stf_pyval_int_text(v)), 4300);
    stf_pyval_free(v);
    expect_err(buf, 4301, STF_EFORMAT,
               "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 "
               "digits; use sys.set_int_max_str_digits() to increase the limit", 0);
    free(buf);
}

static void test_literals_and_whitespace(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON(" \t\n\r[null, true, false, \"\"] \r\n");
    assert_int_equal(stf_pyval_type(stf_pyval_item(v, 0)), STF_PY_NONE);
    assert_int_equal(stf_pyval_bool(stf_pyval_item(v, 1)), 1);
    assert_int_equal(stf_pyval_type(stf_pyval_item(v, 2)), STF_PY_BOOL);
    assert_int_equal(stf_pyval_bool(stf_pyval_item(v, 2)), 0);
    assert_null(stf_pyval_item(v, 4));
    stf_pyval_free(v);
    ERR("\f1", "Expecting value: line 1 column 1 (char 0)", 0);
    ERR("nul", "Expecting value: line 1 column 1 (char 0)", 0);
    ERR("", "Expecting value: line 1 column 1 (char 0)", 0);
    ERR("-", "Expecting value: line 1 column 1 (char 0)", 0);
}

static void test_python_error_messages(void **state)
{
    (void)state;
    expect_err("{\"a\": 1}\0", 9, STF_EFORMAT, "Extra data: line 1 column 9 (char 8)", 8);
    ERR("{\"a\": \"x\ny\"}", "Invalid control character at: line 1 column 9 (char 8)", 8);
    ERR("{\"a\" 1}", "Expecting ':' delimiter: line 1 column 6 (char 5)", 5);
    ERR("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)", 3);
    ERR("{1: 2}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)", 1);
    ERR("\"abc", "Unterminated string starting at: line 1 column 1 (char 0)", 0);
    ERR("\"\\x\"", "Invalid \\escape: line 1 column 2 (char 1)", 1);
    ERR("\"\\u12\"", "Invalid \\uXXXX escape: line 1 column 3 (char 2)", 2);
    ERR("\"\\ud800\\uzzzz\"", "Invalid \\uXXXX escape: line 1 column 9 (char 8)", 8);
    ERR("\n\n  x", "Expecting value: line 3 column 3 (char 4)", 4);
    ERR("01", "Extra data: line 1 column 2 (char 1)", 1);
    ERR("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)", 1);
    ERR("[", "Expecting value: line 1 column 2 (char 1)", 1);
    ERR("[1,]", "Expecting value: line 1 column 4 (char 3)", 3);
    ERR("{\"a\":1,}", "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)",
        7);
    /* char counts code points: "é" is one char, two bytes. */
    ERR("[\"\xc3\xa9\" 1]", "Expecting ',' delimiter: line 1 column 6 (char 5)", 6);
    ERR("\xff", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte", 0);
    ERR("{\"a\": \"\xc3\"}",
        "'utf-8' codec can't decode byte 0xc3 in position 7: invalid continuation byte", 7);
}

/* UnicodeDecodeError texts, ranges as CPython's decoder reports them (json.loads raises them too). */
static void test_decode_error_messages(void **state)
{
    (void)state;
    ERR("\"\xe2\x80\"", "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte", 1);
    ERR("\"\xe2\x80", "'utf-8' codec can't decode bytes in position 1-2: unexpected end of data", 1);
    ERR("\"\xf0\x9f\x98\"", "'utf-8' codec can't decode bytes in position 1-3: invalid continuation byte", 1);
    ERR("\"\xf0\x9f\x98", "'utf-8' codec can't decode bytes in position 1-3: unexpected end of data", 1);
    ERR("\"\xed\xa0" "A\"", "'utf-8' codec can't decode byte 0xed in position 1: invalid continuation byte", 1);
    ERR("\"\xe0\x80\x80\"", "'utf-8' codec can't decode byte 0xe0 in position 1: invalid continuation byte", 1);
    /* after a BOM, utf-8-sig counts from the end of the BOM */
    ERR("\xef\xbb\xbf\"\xc3\"", "'utf-8' codec can't decode byte 0xc3 in position 1: invalid continuation byte", 4);
    ERR("{\0\"\0a", "'utf-16-le' codec can't decode byte 0x61 in position 4: truncated data", 4);
    ERR("\0\0\0[\0\0", "'utf-32-be' codec can't decode bytes in position 4-5: truncated data", 4);
}

static void test_encodings_and_bom(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("\xef\xbb\xbf{\"a\": 1}");
    assert_string_equal(stf_pyval_int_text(stf_pyval_find(v, "a")), "1");
    stf_pyval_free(v);
    /* bytes: only one BOM is stripped, the second is simply not a value */
    ERR("\xef\xbb\xbf\xef\xbb\xbf{}", "Expecting value: line 1 column 1 (char 0)", 3);

    /* '{"a": "é"}'.encode('utf-16-le') */
    static const char u16le[] = "{\0\"\0a\0\"\0:\0 \0\"\0\xe9\0\"\0}\0";
    v = st_pyjson_ok(u16le, sizeof u16le - 1);
    assert_string_equal(stf_pyval_str(stf_pyval_find(v, "a"), NULL), "\xc3\xa9");
    stf_pyval_free(v);
    /* '[1]'.encode('utf-16') with its BOM */
    static const char u16bom[] = "\xff\xfe[\0" "1\0]\0";
    v = st_pyjson_ok(u16bom, sizeof u16bom - 1);
    assert_string_equal(stf_pyval_int_text(stf_pyval_item(v, 0)), "1");
    stf_pyval_free(v);
    /* '[1]'.encode('utf-32-be') */
    static const char u32be[] = "\0\0\0[\0\0\0" "1\0\0\0]";
    v = st_pyjson_ok(u32be, sizeof u32be - 1);
    assert_int_equal(stf_pyval_len(v), 1);
    stf_pyval_free(v);
    /* utf-32-be "[x]": error at char 1 maps back to byte 4 */
    static const char u32bad[] = "\0\0\0[\0\0\0x\0\0\0]";
    expect_err(u32bad, sizeof u32bad - 1, STF_EFORMAT,
               "Expecting value: line 1 column 2 (char 1)", 4);
    /* utf-16-le U+1F600 as a surrogate pair is one char: error after it is char 3, byte 8 */
    static const char u16pair[] = "[\0\"\0\x3d\xd8\x00\xde\"\0x\0]\0";
    expect_err(u16pair, sizeof u16pair - 1, STF_EFORMAT,
               "Expecting ',' delimiter: line 1 column 5 (char 4)", 10);
}

static void test_string_escapes(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("[\"\\ud83d\\ude00\", \"\\ud800\", \"\\u00e9\\/\\b\\f\\n\\r\\t\\\"\\\\\", "
                         "\"\xed\xa0\x80\", \"\x7f\"]");
    assert_string_equal(stf_pyval_str(stf_pyval_item(v, 0), NULL), "\xf0\x9f\x98\x80");
    assert_string_equal(stf_pyval_str(stf_pyval_item(v, 1), NULL), "\xed\xa0\x80");
    assert_string_equal(stf_pyval_str(stf_pyval_item(v, 2), NULL), "\xc3\xa9/\b\f\n\r\t\"\\");
    /* a raw encoded surrogate passes, as with 'surrogatepass' */
    assert_string_equal(stf_pyval_str(stf_pyval_item(v, 3), NULL), "\xed\xa0\x80");
    assert_string_equal(stf_pyval_str(stf_pyval_item(v, 4), NULL), "\x7f");
    stf_pyval_free(v);
    size_t n = 0;
    v = ST_PYJSON("\"a\\u0000b\"");
    assert_non_null(stf_pyval_str(v, &n));
    assert_int_equal(n, 3);
    assert_memory_equal(stf_pyval_str(v, NULL), "a\0b", 3);
    stf_pyval_free(v);
}

/* `depth` containers, level i opened by kind(i) ("[" or "{\"a\": "), around
 * `inner`; malloc'd, *n its length. */
static char *nested(unsigned depth, const char *(*kind)(unsigned), const char *inner, size_t *n)
{
    size_t cap = (size_t)depth * 7 + strlen(inner) + 1, k = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    for (unsigned i = 0; i < depth; i++) {
        const char *o = kind(i);
        memcpy(b + k, o, strlen(o));
        k += strlen(o);
    }
    memcpy(b + k, inner, strlen(inner));
    k += strlen(inner);
    for (unsigned i = depth; i-- > 0;) b[k++] = kind(i)[0] == '[' ? ']' : '}';
    *n = k;
    return b;
}

static const char *arrays(unsigned i) { (void)i; return "["; }
static const char *objects(unsigned i) { (void)i; return "{\"a\": "; }
static const char *mixed(unsigned i) { return i % 2 ? "{\"a\": " : "["; }

static void expect_too_deep(const char *s, size_t n, const char *what, uint64_t off)
{
    char msg[128];
    snprintf(msg, sizeof msg,
             "maximum recursion depth exceeded while decoding a JSON %s from a unicode string",
             what);
    expect_err(s, n, STF_ELIMIT, msg, off);
}

/*
 * CPython 3.11's json.loads decodes 995 nested containers when called from
 * a script's top level and raises RecursionError at the 996th, naming the
 * kind of that container; the check comes when the container opens, before
 * anything after it is read.
 */
static void test_depth_limit(void **state)
{
    (void)state;
    assert_int_equal(STF_PYJSON_MAX_DEPTH, 995);
    const char *(*kinds[3])(unsigned) = { arrays, objects, mixed };
    for (int k = 0; k < 3; k++) {
        size_t n;
        char *ok = nested(995, kinds[k], "1", &n);
        stf_pyval *v = st_pyjson_ok(ok, n);
        /* The deepest tree is compared, printed and freed within bounded stack. */
        stf_pyval *w = st_pyjson_ok(ok, n);
        assert_true(stf_pyval_equal(v, w));
        char *d = NULL;
        assert_int_equal(stf_pyjson_dumps(&d, NULL, v, NULL), 0);
        char *r = NULL;
        assert_int_equal(stf_pyrepr_value(&r, v, NULL), 0);
        assert_true(strlen(d) >= n && strlen(r) >= 2 * 995);
        stf_model_str_free(d);
        stf_model_str_free(r);
        stf_pyval_free(w);
        stf_pyval_free(v);
        free(ok);
        char *deep = nested(996, kinds[k], "1", &n);
        const char *last = kinds[k](995);
        uint64_t off = (uint64_t)(strstr(deep, "1") - deep) - strlen(last);
        expect_too_deep(deep, n, last[0] == '[' ? "array" : "object", off);
        free(deep);
    }
    /* RecursionError wins over the missing brackets that follow. */
    char open[996];
    memset(open, '[', sizeof open);
    expect_too_deep(open, 996, "array", 995);
    expect_err(open, 995, STF_EFORMAT, "Expecting value: line 1 column 996 (char 995)", 995);
    /* The limit counts open containers, not brackets read: siblings do not add up. */
    size_t n;
    char *wide = nested(994, arrays, "[], [], {}", &n);
    stf_pyval_free(st_pyjson_ok(wide, n));
    free(wide);
}

/* ------------------------------------------------------- allocation failure */

static void test_allocation_failures(void **state)
{
    (void)state;
    static const char doc[] = "{\"format\": \"int8_tensorwise\", \"params\": {\"convrot\": true,"
                              " \"g\": [1, 2.5, \"x\\u00e9\"]}, \"k\": -7}";
    st_alloc_install();
    long k;
    for (k = 0; k < 1000; k++) {
        st_alloc_arm(k + 1);
        stf_pyval *v = NULL;
        stf_err err;
        int rc = stf_pyjson_parse(&v, doc, sizeof doc - 1, &err);
        if (rc == 0) {
            assert_non_null(v);
            stf_pyval_free(v);
            break;
        }
        assert_int_equal(rc, STF_ENOMEM);
        assert_null(v);
    }
    st_alloc_uninstall();
    /* the parser allocates through the hook: its scratch, one block per
     * container, the root */
    assert_true(k > 5);
    assert_true(k < 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marker_object),
        cmocka_unit_test(test_duplicate_keys_last_wins_first_position),
        cmocka_unit_test(test_equal_containers_share_a_block),
        cmocka_unit_test(test_large_dict_hash_index),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_int_digit_limit),
        cmocka_unit_test(test_literals_and_whitespace),
        cmocka_unit_test(test_python_error_messages),
        cmocka_unit_test(test_decode_error_messages),
        cmocka_unit_test(test_encodings_and_bom),
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
