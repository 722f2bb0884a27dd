/*
 * Tests for lib/util/text_escape.c: the JSON string literal, the printable
 * form of names and of free text, and names cut for messages. Whatever the
 * input bytes, every form must come out as valid UTF-8, cut only after a
 * whole character or escape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/util.h"

/* Strict UTF-8 (no surrogates, no overlongs) of a NUL-terminated output. */
static int valid_utf8(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = stf__utf8_decode((const unsigned char *)s, n, i, &cp);
        if (!k || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k;
    }
    return 1;
}

#define QUOTE(in, want)                                                                       \
    do {                                                                                      \
        char b_[128];                                                                         \
        assert_int_equal(stf_json_quote(b_, sizeof b_, in, sizeof in - 1), strlen(want));     \
        assert_string_equal(b_, want);                                                        \
        assert_true(valid_utf8(b_));                                                          \
    } while (0)

static void test_json_quote(void **state)
{
    (void)state;
    char buf[32];
    assert_int_equal(stf_json_quote(NULL, 0, "a\"b", 3), 6);
    assert_int_equal(stf_json_quote(buf, sizeof buf, "a\"b", 3), 6);
    assert_string_equal(buf, "\"a\\\"b\"");
    assert_int_equal(stf_json_quote(buf, 4, "abcdef", 6), 8);
    assert_string_equal(buf, "\"ab");
    assert_int_equal(stf_json_quote(buf, 1, "abc", 3), 5);
    assert_string_equal(buf, "");
    /* An escape is never cut in half. */
    assert_int_equal(stf_json_quote(buf, 5, "\x01", 1), 8);
    assert_string_equal(buf, "\"");
    QUOTE("\x01", "\"\\u0001\"");
    QUOTE("a\0b", "\"a\\u0000b\"");
    QUOTE("\b\f\n\r\t\\/", "\"\\b\\f\\n\\r\\t\\\\/\"");
    /* serde writes DEL, C1 controls and all other UTF-8 raw. */
    QUOTE("\x7f\xc2\x85\xc3\xa9\xe2\x80\xae", "\"\x7f\xc2\x85\xc3\xa9\xe2\x80\xae\"");
    /* Not UTF-8: a lone surrogate from Python-parsed JSON, stray bytes. */
    QUOTE("\xed\xa0\x80", "\"\\ud800\"");
    QUOTE("x\xed\xbf\xbfy", "\"x\\udfffy\"");
    QUOTE("\xff", "\"\\udcff\"");
    QUOTE("\xc3(", "\"\\udcc3(\"");
    QUOTE("\xf0\x9f\x98", "\"\\udcf0\\udc9f\\udc98\"");
    QUOTE("\xc0\xaf", "\"\\udcc0\\udcaf\"");
}

#define NAME(in, want)                                                                        \
    do {                                                                                      \
        char b_[128];                                                                         \
        assert_int_equal(stf_name_escape(b_, sizeof b_, in, sizeof in - 1), strlen(want));    \
        assert_string_equal(b_, want);                                                        \
        assert_true(valid_utf8(b_));                                                          \
    } while (0)

static void test_name_escape(void **state)
{
    (void)state;
    char buf[16];
    NAME("", "");
    NAME("blocks.0.attn qkv", "blocks.0.attn qkv");
    NAME("a\0b", "a\\u0000b");
    NAME("a\nb\x7f", "a\\u000ab\\u007f");
    NAME("it's a\\b", "it\\'s a\\\\b");
    NAME("\"q\"", "\"q\"");
    NAME("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80", "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80");
    /* Not printable: C1, NBSP, bidi override, BOM, a tag character. */
    NAME("\xc2\x85\xc2\xa0", "\\u0085\\u00a0");
    NAME("a\xe2\x80\xae" "b\xef\xbb\xbf", "a\\u202eb\\ufeff");
    NAME("\xf3\xa0\x80\x81", "\\udb40\\udc01");
    NAME("\xed\xa0\x80", "\\ud800");
    NAME("\xff\xfe", "\\udcff\\udcfe");
    /* Two names that differ never print alike. */
    NAME("a\\u0000b", "a\\\\u0000b");
    /* Whole units only, full length returned. */
    assert_int_equal(stf_name_escape(buf, 4, "ab\n", 3), 8);
    assert_string_equal(buf, "ab");
    assert_int_equal(stf_name_escape(buf, 4, "a\xc3\xa9\xc3\xa9", 5), 5);
    assert_string_equal(buf, "a\xc3\xa9");
    assert_int_equal(stf_name_escape(NULL, 0, "\0", 1), 6);
}

static void test_text_escape(void **state)
{
    (void)state;
    char buf[64];
    const char msg[] = "tensor 'a\\u0000b': it's \"x\"";
    assert_int_equal(stf_text_escape(buf, sizeof buf, msg, strlen(msg)), strlen(msg));
    assert_string_equal(buf, msg);
    assert_int_equal(stf_text_escape(buf, sizeof buf, "x\x1b[2Jy\xed\xa0\x80", 9), 17);
    assert_string_equal(buf, "x\\u001b[2Jy\\ud800");
}

static void test_name_render(void **state)
{
    (void)state;
    char b[16];
    assert_string_equal(stf__name_render(b, sizeof b, "blocks.0", 8), "blocks.0");
    assert_string_equal(stf__name_render(b, sizeof b, "a\nb", 3), "a\\u000ab");
    assert_string_equal(stf__name_render(b, sizeof b, "a\0'\\", 4), "a\\u0000\\'\\\\");
    assert_string_equal(stf__name_render(b, sizeof b, "\xc3\xa9\x7f", 3), "\xc3\xa9\\u007f");
    /* 15 usable bytes: a longer name is cut with a visible "...". */
    assert_string_equal(stf__name_render(b, sizeof b, "abcdefghijklmnopqrstu", 21),
                        "abcdefghijkl...");
    assert_string_equal(stf__name_render(b, sizeof b, "abcdefghijklmnop", 16), "abcdefghijkl...");
    assert_string_equal(stf__name_render(b, sizeof b, "abcdefghijklmno", 15), "abcdefghijklmno");
    assert_string_equal(stf__name_render(b, sizeof b, "abcdefghi\n", 10), "abcdefghi\\u000a");
    assert_string_equal(stf__name_render(b, sizeof b, "abcdefghij\n", 11), "abcdefghij...");
    /* Never inside a character: 9 x U+00E9 is 18 bytes, 6 fit before "...". */
    assert_string_equal(stf__name_render(b, sizeof b,
                                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
                                         "\xa9\xc3\xa9\xc3\xa9",
                                         18),
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...");
    assert_string_equal(stf__name_render(b, 4, "abcdef", 6), "...");
    assert_string_equal(stf__name_render(b, 2, "abcdef", 6), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_quote),
        cmocka_unit_test(test_name_escape),
        cmocka_unit_test(test_text_escape),
        cmocka_unit_test(test_name_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
