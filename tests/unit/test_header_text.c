/* Tests for lib/container/header_text.c: serde escaping (lib/README.md,
 * Canonical form), strict UTF-8, writer order and the header text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "container/writer_internal.h"

static void put_expect(const char *in, size_t n, const char *want)
{
    stf_buf b;
    stf__buf_init(&b);
    assert_int_equal(stf__json_put_string(&b, in, n), 0);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    stf__buf_free(&b);
}

static void test_escapes(void **state)
{
    (void)state;
    put_expect("", 0, "\"\"");
    put_expect("a.b/c", 5, "\"a.b/c\"");
    put_expect("\"\\", 2, "\"\\\"\\\\\"");
    put_expect("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
    put_expect("\x00\x01\x1f", 3, "\"\\u0000\\u0001\\u001f\"");
    put_expect("\x0b\x1a", 2, "\"\\u000b\\u001a\"");
    put_expect("\x7f", 1, "\"\x7f\"");
    put_expect("\xc3\xa9\xf0\x9f\x98\x80", 6, "\"\xc3\xa9\xf0\x9f\x98\x80\"");
    put_expect("x\ny", 3, "\"x\\ny\"");
    /* Every control byte: short escape or \u00xx lowercase. */
    stf_buf b;
    stf__buf_init(&b);
    for (int c = 0; c < 0x20; c++) {
        char ch = (char)c;
        b.len = 0;
        assert_int_equal(stf__json_put_string(&b, &ch, 1), 0);
        const char *s = strchr("\b\f\n\r\t", c);
        if (c && s) assert_int_equal(b.len, 4);
        else {
            char want[16];
            snprintf(want, sizeof want, "\"\\u00%02x\"", c);
            assert_string_equal(b.data, want);
        }
    }
    stf__buf_free(&b);
}

static void test_utf8(void **state)
{
    (void)state;
    assert_true(stf__utf8_valid("", 0));
    assert_true(stf__utf8_valid("abc", 3));
    assert_true(stf__utf8_valid("\xc3\xa9", 2));
    assert_true(stf__utf8_valid("\xef\xbf\xbf", 3));
    assert_true(stf__utf8_valid("\xf4\x8f\xbf\xbf", 4));
    assert_false(stf__utf8_valid("\xff", 1));
    assert_false(stf__utf8_valid("\xc0\xaf", 2));     /* overlong */
    assert_false(stf__utf8_valid("\xe0\x80\xaf", 3)); /* overlong */
    assert_false(stf__utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
    assert_false(stf__utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_false(stf__utf8_valid("\xc3", 1));          /* truncated */
    assert_false(stf__utf8_valid("\xe2\x82", 2));
}

static void test_bytes_cmp(void **state)
{
    (void)state;
    assert_int_equal(stf__bytes_cmp("a", 1, "a", 1), 0);
    assert_true(stf__bytes_cmp("a", 1, "ab", 2) < 0);
    assert_true(stf__bytes_cmp("b", 1, "ab", 2) > 0);
    assert_true(stf__bytes_cmp("Z", 1, "a", 1) < 0);
    assert_true(stf__bytes_cmp("\xc3\xa9", 2, "z", 1) > 0);
}

static stf_tensor_info ti(const char *name, stf_dtype dt, uint64_t nbytes)
{
    stf_tensor_info t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.name_len = strlen(name);
    t.dtype = dt;
    t.nbytes = nbytes;
    return t;
}

static void test_order(void **state)
{
    (void)state;
    stf_tensor_info t[6] = { ti("b", STF_BOOL, 1), ti("a", STF_U64, 8), ti("c", STF_F32, 4),
                             ti("ab", STF_F32, 0), ti("B", STF_F32, 8), ti("x", STF_I8, 3) };
    stf_err err;
    assert_int_equal(stf__canon_order(t, 6, &err), 0);
    static const char *want[6] = { "a", "B", "ab", "c", "x", "b" };
    static const uint64_t beg[6] = { 0, 8, 16, 16, 20, 23 };
    for (int i = 0; i < 6; i++) {
        assert_string_equal(t[i].name, want[i]);
        assert_int_equal(t[i].begin, beg[i]);
        assert_int_equal(t[i].end, beg[i] + t[i].nbytes);
    }
    stf_tensor_info o[2] = { ti("a", STF_U8, UINT64_MAX), ti("b", STF_U8, 1) };
    assert_int_equal(stf__canon_order(o, 2, &err), STF_EINVAL);
}

static void header_expect(const stf_tensor_info *t, size_t n, const stf_meta_entry *m,
                          size_t nm, int emit, const char *want)
{
    stf_buf b;
    stf_err err;
    stf__buf_init(&b);
    assert_int_equal(stf__canon_header(&b, t, n, m, nm, emit, &err), 0);
    size_t wl = strlen(want);
    assert_int_equal(b.len % 8, 0);
    assert_true(b.len >= wl && b.len < wl + 8);
    assert_memory_equal(b.data, want, wl);
    for (size_t i = wl; i < b.len; i++) assert_int_equal(b.data[i], ' ');
    stf__buf_free(&b);
}

static void test_header(void **state)
{
    (void)state;
    uint64_t sh[3] = { 1, 2, 3 };
    stf_tensor_info t = ti("attn.0", STF_F32, 24);
    t.rank = 3;
    t.shape = sh;
    t.end = 24;
    header_expect(&t, 1, NULL, 0, 0,
                  "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}");
    header_expect(NULL, 0, NULL, 0, 0, "{}");
    header_expect(NULL, 0, NULL, 0, 1, "{\"__metadata__\":{}}");
    stf_meta_entry m[3] = { { "z", 1, "1", 1 }, { "a", 1, "x\x01", 2 }, { "z", 1, "2", 1 } };
    header_expect(NULL, 0, m, 3, 0, "{\"__metadata__\":{\"a\":\"x\\u0001\",\"z\":\"2\"}}");
    stf_tensor_info s = ti("s", STF_I32, 4);
    s.end = 4;
    header_expect(&s, 1, m, 1, 1,
                  "{\"__metadata__\":{\"z\":\"1\"},\"s\":{\"dtype\":\"I32\",\"shape\":[],"
                  "\"data_offsets\":[0,4]}}");
    /* Large integers never go through %g. */
    uint64_t big[1] = { 281474976710655ULL };
    stf_tensor_info g = ti("g", STF_U8, 281474976710655ULL);
    g.rank = 1;
    g.shape = big;
    g.begin = 0;
    g.end = 281474976710655ULL;
    header_expect(&g, 1, NULL, 0, 0,
                  "{\"g\":{\"dtype\":\"U8\",\"shape\":[281474976710655],"
                  "\"data_offsets\":[0,281474976710655]}}");
}

static void test_header_limit(void **state)
{
    (void)state;
    /* 100,000,000 exactly passes; one padded block more fails with S2. */
    size_t vlen = 100000000 - strlen("{\"__metadata__\":{\"k\":\"\"}}");
    char *v = malloc(vlen + 8);
    memset(v, 'a', vlen + 8);
    stf_meta_entry m = { "k", 1, v, vlen };
    stf_buf b;
    stf_err err;
    stf__buf_init(&b);
    assert_int_equal(stf__canon_header(&b, NULL, 0, &m, 1, 0, &err), 0);
    assert_int_equal(b.len, 100000000);
    b.len = 0;
    m.value_len = vlen + 1;
    assert_int_equal(stf__canon_header(&b, NULL, 0, &m, 1, 0, &err), STF_ELIMIT);
    assert_string_equal(err.rule, "S2");
    assert_string_equal(err.msg, "S2 HeaderTooLarge: the header would be 100000008 bytes, more "
                                 "than 100,000,000");
    stf__buf_free(&b);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_utf8),     cmocka_unit_test(test_bytes_cmp),
        cmocka_unit_test(test_order),    cmocka_unit_test(test_header),
        cmocka_unit_test(test_header_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
