/* Prefix globs: segment-local '*' and '?', segment-crossing '**'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"

static void test_literal(void **state)
{
    (void)state;
    assert_int_equal(stf__glob_match("blocks.0.attn.qkv", "blocks.0.attn.qkv"), 1);
    assert_int_equal(stf__glob_match("blocks.0.attn.qkv", "blocks.0.attn.qkv_proj"), 0);
    assert_int_equal(stf__glob_match("blocks.0.attn", "blocks.0.attn.qkv"), 0);
}

static void test_star_stays_in_segment(void **state)
{
    (void)state;
    assert_int_equal(stf__glob_match("blocks.*.attn.qkv", "blocks.17.attn.qkv"), 1);
    assert_int_equal(stf__glob_match("blocks.*.attn.qkv", "blocks.1.7.attn.qkv"), 0);
    assert_int_equal(stf__glob_match("blocks.*", "blocks."), 1);
    assert_int_equal(stf__glob_match("*embed*", "x_embedder"), 1);
    assert_int_equal(stf__glob_match("*embed*", "a.x_embedder"), 0);
    assert_int_equal(stf__glob_match("blocks.?.ff", "blocks.3.ff"), 1);
    assert_int_equal(stf__glob_match("blocks.?.ff", "blocks.13.ff"), 0);
    assert_int_equal(stf__glob_match("a?b", "a.b"), 0);
}

static void test_double_star(void **state)
{
    (void)state;
    assert_int_equal(stf__glob_match("**", "a.b.c"), 1);
    assert_int_equal(stf__glob_match("**", ""), 1);
    assert_int_equal(stf__glob_match("model.**", "model.diffusion_model.x"), 1);
    /* A whole-segment ** also matches zero segments. */
    assert_int_equal(stf__glob_match("model.**", "model"), 1);
    assert_int_equal(stf__glob_match("model.**", "modelx"), 0);
    assert_int_equal(stf__glob_match("a.**.b", "a.b"), 1);
    assert_int_equal(stf__glob_match("a.**.b", "a.x.y.b"), 1);
    assert_int_equal(stf__glob_match("a.**.b", "a.xb"), 0);
    assert_int_equal(stf__glob_match("**.*embed*", "pos_embed"), 1);
    assert_int_equal(stf__glob_match("**.*embed*", "model.blocks.0.pos_embed"), 1);
    assert_int_equal(stf__glob_match("**.*embed*", "model.embed.proj"), 0);
    /* Inside a segment, ** is just "anything", dots included. */
    assert_int_equal(stf__glob_match("a**z", "a.b.z"), 1);
    assert_int_equal(stf__glob_match("a**z", "a.b.y"), 0);
}

static void test_check(void **state)
{
    (void)state;
    size_t pos = 99;
    const char *why = NULL;
    assert_int_equal(stf__glob_check("blocks.**.attn", &pos, &why), 0);
    assert_int_equal(stf__glob_check("", &pos, &why), -1);
    assert_string_equal(why, "empty pattern");
    assert_int_equal(stf__glob_check("a.***", &pos, &why), -1);
    assert_int_equal(pos, 2);
    assert_string_equal(why,
                        "'***' is not a glob (use '*' within a segment or '**' across segments)");
    assert_int_equal(stf__glob_check("a\tb", &pos, &why), -1);
    assert_int_equal(pos, 1);
    assert_string_equal(why, "control character in pattern");
    /* An invalid pattern never matches. */
    assert_int_equal(stf__glob_match("a.***", "a.b"), 0);
}

/* Many stars cost O(pattern x name), not exponential backtracking. */
static void test_no_blowup(void **state)
{
    (void)state;
    char name[4001];
    memset(name, 'a', 4000);
    name[4000] = '\0';
    assert_int_equal(stf__glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", name), 0);
    assert_int_equal(stf__glob_match("**a**a**a**a**a**a**a**a**a**a**a**a", name), 1);
}

/* A name is all its bytes: U+0000 is an ordinary character, not the end. */
static void test_name_with_nul(void **state)
{
    (void)state;
    assert_int_equal(stf__glob_match_n("a", "a\0b", 3), 0);
    assert_int_equal(stf__glob_match_n("a", "a\0b", 1), 1);
    assert_int_equal(stf__glob_match_n("a*", "a\0b", 3), 1);
    assert_int_equal(stf__glob_match_n("a?b", "a\0b", 3), 1);
    assert_int_equal(stf__glob_match_n("a.*", "a.\0", 3), 1);
    assert_int_equal(stf__glob_match_n("*.b", "a\0.b", 4), 1);
    assert_int_equal(stf__glob_match_n("a", "", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal), cmocka_unit_test(test_star_stays_in_segment),
        cmocka_unit_test(test_double_star), cmocka_unit_test(test_check),
        cmocka_unit_test(test_no_blowup), cmocka_unit_test(test_name_with_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
