/*
 * Tests for lib/container/json_lex.c: Rust-exact UTF-8 (S4), serde_json's
 * grammar (S5), token offsets, unescaping and the u64 digit parser.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "container/json_lex.h"

#define U8(s) ((const uint8_t *)(s))

static void test_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t len, valid;
    } cases[] = {
        { "abc", 3, 3 },
        { "\xc3\xa9", 2, 2 },                 /* U+00E9 */
        { "\xe2\x82\xac", 3, 3 },             /* U+20AC */
        { "\xf0\x9f\x98\x80", 4, 4 },         /* U+1F600 */
        { "\xf4\x8f\xbf\xbf", 4, 4 },         /* U+10FFFF */
        { "\xed\x9f\xbf", 3, 3 },             /* U+D7FF */
        { "\xee\x80\x80", 3, 3 },             /* U+E000 */
        { "a\x00" "b", 3, 3 },                /* NUL is valid UTF-8 */
        { "a\xff", 2, 1 },
        { "\xc0\x80", 2, 0 },                 /* overlong NUL */
        { "\xc1\xbf", 2, 0 },                 /* overlong */
        { "\xe0\x9f\xbf", 3, 0 },             /* overlong 3-byte */
        { "\xf0\x8f\xbf\xbf", 4, 0 },         /* overlong 4-byte */
        { "\xed\xa0\x80", 3, 0 },             /* U+D800 */
        { "\xed\xbf\xbf", 3, 0 },             /* U+DFFF */
        { "\xf4\x90\x80\x80", 4, 0 },         /* U+110000 */
        { "\xf5\x80\x80\x80", 4, 0 },
        { "ab\xc3", 3, 2 },                   /* truncated at the end */
        { "\xe2\x82", 2, 0 },
        { "\xe2\x28\xa1", 3, 0 },             /* bad continuation */
        { "\x80", 1, 0 },                     /* lone continuation */
        { "x\xf0\x9f\x98", 4, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_int_equal(stf__utf8_valid_prefix(U8(cases[i].s), cases[i].len), cases[i].valid);
    assert_int_equal(stf__utf8_valid_prefix(U8(""), 0), 0);
}

static void test_tokens_and_offsets(void **state)
{
    (void)state;
    const char *s = " {\"a\" :\t[1, -0 ,2.5e-3],\r\n\"b\":true,\"c\":false,\"d\":null} ";
    static const struct {
        int type;
        size_t pos, len;
        unsigned flags;
    } want[] = {
        { STF__J_LBRACE, 1, 1, 0 },      { STF__J_STRING, 2, 3, 0 },
        { STF__J_COLON, 6, 1, 0 },       { STF__J_LBRACKET, 8, 1, 0 },
        { STF__J_NUMBER, 9, 1, 0 },      { STF__J_COMMA, 10, 1, 0 },
        { STF__J_NUMBER, 12, 2, STF__JN_MINUS },
        { STF__J_COMMA, 15, 1, 0 },
        { STF__J_NUMBER, 16, 6, STF__JN_FRAC | STF__JN_EXP },
        { STF__J_RBRACKET, 22, 1, 0 },   { STF__J_COMMA, 23, 1, 0 },
        { STF__J_STRING, 26, 3, 0 },     { STF__J_COLON, 29, 1, 0 },
        { STF__J_TRUE, 30, 4, 0 },       { STF__J_COMMA, 34, 1, 0 },
        { STF__J_STRING, 35, 3, 0 },     { STF__J_COLON, 38, 1, 0 },
        { STF__J_FALSE, 39, 5, 0 },      { STF__J_COMMA, 44, 1, 0 },
        { STF__J_STRING, 45, 3, 0 },     { STF__J_COLON, 48, 1, 0 },
        { STF__J_NULL, 49, 4, 0 },       { STF__J_RBRACE, 53, 1, 0 },
        { STF__J_EOF, 55, 0, 0 },
    };
    stf__json_lexer lx;
    stf__json_token t;
    stf__json_error e;
    stf__json_lexer_init(&lx, U8(s), strlen(s));
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        assert_int_equal(stf__json_lexer_next(&lx, &t, &e), 0);
        assert_int_equal(t.type, want[i].type);
        assert_int_equal(t.pos, want[i].pos);
        assert_int_equal(t.len, want[i].len);
        assert_int_equal(t.flags, want[i].flags);
    }
    /* EOF is sticky. */
    assert_int_equal(stf__json_lexer_next(&lx, &t, &e), 0);
    assert_int_equal(t.type, STF__J_EOF);
}

/* Lex one token from s; return 0 or -1 and the error position. */
static int lex1(const char *s, size_t len, stf__json_token *t, size_t *errpos)
{
    stf__json_lexer lx;
    stf__json_error e = {0, NULL};
    stf__json_lexer_init(&lx, U8(s), len);
    int rc = stf__json_lexer_next(&lx, t, &e);
    if (rc) {
        assert_non_null(e.why);
        *errpos = e.pos;
    }
    return rc;
}

static void test_lexical_errors(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t len, pos;
    } bad[] = {
        { "\"a\nb\"", 5, 2 },            /* raw control character */
        { "\"a\x1f\"", 4, 2 },
        { "\"a\\x\"", 5, 2 },            /* invalid escape */
        { "\"\\u12g4\"", 8, 1 },         /* bad hex */
        { "\"\\u12\"", 6, 1 },
        { "\"\\udc00\"", 8, 1 },         /* lone trailing surrogate */
        { "\"\\ud800\"", 8, 1 },         /* lone leading surrogate */
        { "\"\\ud800\\u0041\"", 14, 1 }, /* leading + non-trailing */
        { "\"\\ud800x\"", 9, 1 },
        { "\"abc", 4, 4 },               /* unterminated */
        { "\"ab\\", 4, 4 },
        { "-", 1, 1 },
        { "1.", 2, 2 },
        { "1.e3", 4, 2 },
        { "1e", 2, 2 },
        { "1e+", 3, 3 },
        { ".5", 2, 0 },
        { "+1", 2, 0 },
        { "-a", 2, 1 },
        { "NaN", 3, 0 },
        { "Infinity", 8, 0 },
        { "nul", 3, 0 },
        { "tru", 3, 0 },
        { "True", 4, 0 },
        { "'a'", 3, 0 },
        { "/", 1, 0 },                   /* comments */
        { "\x0c{}", 3, 0 },              /* form feed is not whitespace */
        { "\x0b{}", 3, 0 },
        { "\xef\xbb\xbf{}", 5, 0 },      /* BOM */
        { "\x00", 1, 0 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        stf__json_token t;
        size_t pos = 999;
        assert_int_equal(lex1(bad[i].s, bad[i].len, &t, &pos), -1);
        assert_int_equal(pos, bad[i].pos);
    }
}

static void test_valid_strings_and_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t len;
        int type;
        unsigned flags;
    } good[] = {
        { "\"\"", 2, STF__J_STRING, 0 },
        { "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 18, STF__J_STRING, STF__JS_ESCAPE },
        { "\"\\u0000\"", 8, STF__J_STRING, STF__JS_ESCAPE },
        { "\"\\ud83d\\ude00\"", 14, STF__J_STRING, STF__JS_ESCAPE },
        { "\"\x7f\xc3\xa9\"", 5, STF__J_STRING, 0 }, /* DEL and UTF-8 raw */
        { "0", 1, STF__J_NUMBER, 0 },
        { "01", 2, STF__J_NUMBER, STF__JN_LEADZERO },
        { "-01", 3, STF__J_NUMBER, STF__JN_MINUS | STF__JN_LEADZERO },
        { "0.0", 3, STF__J_NUMBER, STF__JN_FRAC },
        { "1E+9", 4, STF__J_NUMBER, STF__JN_EXP },
        { "123456789012345678901234567890", 30, STF__J_NUMBER, 0 },
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        stf__json_token t;
        size_t pos = 0;
        assert_int_equal(lex1(good[i].s, good[i].len, &t, &pos), 0);
        assert_int_equal(t.type, good[i].type);
        assert_int_equal(t.pos, 0);
        assert_int_equal(t.len, good[i].len);
        assert_int_equal(t.flags, good[i].flags);
    }
    /* A number ends at the first byte that cannot continue it. */
    stf__json_token t;
    size_t pos;
    assert_int_equal(lex1("12]", 3, &t, &pos), 0);
    assert_int_equal(t.len, 2);
    assert_int_equal(lex1("1x", 2, &t, &pos), 0);
    assert_int_equal(t.len, 1);
}

static int check(const char *s, size_t len, unsigned depth, stf__json_root *jc, size_t *pos)
{
    stf__json_error e = {0, NULL};
    int rc = stf__json_check(jc, U8(s), len, depth, &e);
    *pos = e.pos;
    return rc;
}

static void test_grammar(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int rc;
        size_t pos;
    } cases[] = {
        { "{}", 0, 0 },
        { " \t\r\n{} \t\r\n", 0, 0 },
        { "{\"a\":[1,2,[]],\"b\":{\"c\":\"d\"}}", 0, 0 },
        { "[]", 0, 0 },
        { "\"x\"", 0, 0 },
        { "-0", 0, 0 },
        { "", -1, 0 },                   /* EOF while parsing a value */
        { "   ", -1, 3 },
        { "{", -1, 1 },
        { "{\"a\"", -1, 4 },
        { "{\"a\":", -1, 5 },
        { "{\"a\":1", -1, 6 },
        { "{\"a\":1,}", -1, 7 },         /* trailing comma in an object */
        { "[1,]", -1, 3 },               /* ... and in an array */
        { "[1 2]", -1, 3 },
        { "{\"a\" 1}", -1, 5 },
        { "{1:2}", -1, 1 },              /* key must be a string */
        { "{'a':1}", -1, 1 },
        { "{} {}", -1, 3 },              /* trailing characters */
        { "{}x", -1, 2 },
        { "{} //c", -1, 3 },
        { "{\"a\":NaN}", -1, 5 },
        { "[,1]", -1, 1 },
        { "{,}", -1, 1 },
        { "]", -1, 0 },
        { "{]", -1, 1 },
        { "[}", -1, 1 },
        { "{\"a\":1]", -1, 6 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        stf__json_root jc;
        size_t pos = 12345;
        size_t len = strlen(cases[i].s);
        int rc = check(cases[i].s, len, 3, &jc, &pos);
        if (rc != cases[i].rc) fail_msg("case %zu \"%s\": rc %d", i, cases[i].s, rc);
        if (rc) assert_int_equal(pos, cases[i].pos);
    }
    /* NUL padding is not whitespace. */
    stf__json_root jc;
    size_t pos;
    assert_int_equal(check("{}\0", 3, 3, &jc, &pos), -1);
    assert_int_equal(pos, 2);
}

static void test_root_info_and_depth(void **state)
{
    (void)state;
    stf__json_root jc;
    size_t pos;
    const char *s = "\n {\"a\":{\"x\":[1]},\"b\":{},\"c\":\"\"}";
    assert_int_equal(check(s, strlen(s), 3, &jc, &pos), 0);
    assert_int_equal(jc.root_type, STF__J_LBRACE);
    assert_int_equal(jc.root_pos, 2);
    assert_int_equal(jc.root_members, 3);
    assert_int_equal(check(s, strlen(s), 2, &jc, &pos), -2);
    assert_int_equal(pos, strlen("\n {\"a\":{\"x\":"));
    assert_int_equal(check("[1]", 3, 3, &jc, &pos), 0);
    assert_int_equal(jc.root_type, STF__J_LBRACKET);
    assert_int_equal(jc.root_members, 0);
    assert_int_equal(check("[[[[]]]]", 8, 3, &jc, &pos), -2);
    assert_int_equal(pos, 3);
    /* Depth 0 refuses any container; max_depth above 64 is clamped. */
    assert_int_equal(check("{}", 2, 0, &jc, &pos), -2);
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    assert_int_equal(check(deep, 130, 1000, &jc, &pos), -2);
    assert_int_equal(pos, 64);
    assert_int_equal(check(deep + 1, 128, 1000, &jc, &pos), 0);
}

static void test_unescape(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        size_t outlen;
    } cases[] = {
        { "abc", "abc", 3 },
        { "\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t", 8 },
        { "a\\u0000b", "a\0b", 3 },
        { "\\u00e9", "\xc3\xa9", 2 },
        { "\\u20AC", "\xe2\x82\xac", 3 },
        { "\\ud83d\\ude00", "\xf0\x9f\x98\x80", 4 },
        { "\\uDBFF\\uDFFF", "\xf4\x8f\xbf\xbf", 4 },
        { "\\u007f\\u0041", "\x7f" "A", 2 },
        { "\xc3\xa9", "\xc3\xa9", 2 },
        { "", "", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t out[64];
        size_t len = strlen(cases[i].in);
        memset(out, 0xee, sizeof out);
        size_t n = stf__json_unescape(out, U8(cases[i].in), len);
        assert_int_equal(n, cases[i].outlen);
        assert_true(n <= len);
        assert_memory_equal(out, cases[i].out, n);
        assert_int_equal(out[n], 0xee); /* nothing written past the result */
    }
}

static void test_u64(void **state)
{
    (void)state;
    uint64_t v = 42;
    assert_int_equal(stf__json_u64(&v, U8("0"), 1), 0);
    assert_int_equal(v, 0);
    assert_int_equal(stf__json_u64(&v, U8("18446744073709551615"), 20), 0);
    assert_int_equal(v, UINT64_MAX);
    assert_int_equal(stf__json_u64(&v, U8("281474976710655"), 15), 0);
    assert_int_equal(v, UINT64_C(281474976710655));
    v = 42;
    assert_int_equal(stf__json_u64(&v, U8("18446744073709551616"), 20), -1);
    assert_int_equal(stf__json_u64(&v, U8("99999999999999999999"), 20), -1);
    assert_int_equal(stf__json_u64(&v, U8("184467440737095516150"), 21), -1);
    assert_int_equal(stf__json_u64(&v, U8(""), 0), -1);
    assert_int_equal(stf__json_u64(&v, U8("-1"), 2), -1);
    assert_int_equal(stf__json_u64(&v, U8("1.0"), 3), -1);
    assert_int_equal(stf__json_u64(&v, U8("1 "), 2), -1);
    assert_int_equal(v, 42);
    /* Leading zeros are the caller's business. */
    assert_int_equal(stf__json_u64(&v, U8("007"), 3), 0);
    assert_int_equal(v, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_tokens_and_offsets),
        cmocka_unit_test(test_lexical_errors),
        cmocka_unit_test(test_valid_strings_and_numbers),
        cmocka_unit_test(test_grammar),
        cmocka_unit_test(test_root_info_and_depth),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_u64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
