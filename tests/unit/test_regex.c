/* Regexes: the shape rules lint warns about (a repeated group that holds a
 * repeat), and one pattern compiled once per set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"

/* *pos of the repeated group in p, or -1 when the pattern has none. */
static long nested(const char *p)
{
    size_t pos = 0;
    return stf__regex_nested_repeat(p, strlen(p), &pos) ? (long)pos : -1;
}

static void test_nested_repeats(void **state)
{
    (void)state;
    assert_int_equal(nested("(a+)+$"), 0);
    assert_int_equal(nested("(a*)*"), 0);
    assert_int_equal(nested("^x(a+)+$"), 2);
    assert_int_equal(nested("(?:b|(a|c)*)*"), 0);
    assert_int_equal(nested("((a{1,3}){2,5})"), 1);
    assert_int_equal(nested("(a{2,}){3}"), 0);
    assert_int_equal(nested("((a+)?)+"), 0);
    assert_int_equal(nested("(x(y+))+"), 0);
    assert_int_equal(nested("(a+?)+"), 0);
    /* Not nested repeats. */
    assert_int_equal(nested("(a++)+"), -1);      /* possessive inside */
    assert_int_equal(nested("(a+)?"), -1);       /* at most once */
    assert_int_equal(nested("(a+){1}"), -1);
    assert_int_equal(nested("(a+)b+"), -1);
    assert_int_equal(nested("[(a+)]+"), -1);     /* a class */
    assert_int_equal(nested("\\(a+\\)+"), -1);   /* escaped parentheses */
    assert_int_equal(nested("\\Q(a+)+\\E"), -1); /* quoted */
    assert_int_equal(nested("(a{1})+"), -1);
    assert_int_equal(nested("(a{x})+"), -1);     /* a literal brace */
    assert_int_equal(nested("(?i)(ab)+"), -1);
    assert_int_equal(nested("(*LIMIT_MATCH=10)(ab)+"), -1);
    assert_int_equal(nested("blocks\\.\\d+\\.(attn|mlp)"), -1);
    assert_int_equal(nested("[[:digit:]+]+"), -1);
    assert_int_equal(nested(""), -1);
}

static void test_set_compiles_once(void **state)
{
    (void)state;
    stf__regex_set set;
    memset(&set, 0, sizeof set);
    stf__regex *a = NULL, *b = NULL, *c = NULL;
    size_t pos;
    char msg[256];
    assert_int_equal(stf__regex_compile(&a, &set, "(a+)+$", 6, &pos, msg, sizeof msg), 0);
    assert_int_equal(stf__regex_compile(&b, &set, "(a+)+$", 6, &pos, msg, sizeof msg), 0);
    assert_int_equal(stf__regex_compile(&c, &set, "(a+)+", 5, &pos, msg, sizeof msg), 0);
    assert_ptr_equal(a, b);
    assert_ptr_not_equal(a, c);
    assert_int_equal(set.n, 2);
    assert_int_equal(stf__regex_id(a), 0);
    assert_int_equal(stf__regex_id(c), 1);
    assert_string_equal(stf__regex_text(c), "(a+)+");
    /* An invalid pattern is not kept. */
    assert_int_equal(stf__regex_compile(&b, &set, "(a", 2, &pos, msg, sizeof msg), STF_EFORMAT);
    assert_null(b);
    assert_int_equal(set.n, 2);
    /* The set's references go; the holders' stay. */
    stf__regex_set_clear(&set);
    int found = -1;
    assert_int_equal(stf__regex_search(&found, a, "xaa", 3, NULL, msg, sizeof msg), 0);
    assert_int_equal(found, 1);
    stf__regex_free(a);
    stf__regex_free(a);
    stf__regex_free(c);
    /* Without a set, every compile is a new regex. */
    assert_int_equal(stf__regex_compile(&a, NULL, "x", 1, &pos, msg, sizeof msg), 0);
    assert_true(stf__regex_id(a) == SIZE_MAX);
    stf__regex_free(a);
}

/* A counted search stops when the next step would go past the budget. */
static void test_budget(void **state)
{
    (void)state;
    stf__regex *re = NULL;
    size_t pos;
    char msg[256];
    int found = -1;
    assert_int_equal(stf__regex_compile(&re, NULL, "(a+)+$", 6, &pos, msg, sizeof msg), 0);
    stf__regex_budget b = { 100000000, 0 };
    assert_int_equal(stf__regex_search(&found, re, "aaaaaaaaab", 10, &b, msg, sizeof msg), 0);
    assert_int_equal(found, 0);
    uint64_t used = 100000000 - b.left;
    assert_true(used > 1000);
    stf__regex_budget exact = { used, 0 };
    assert_int_equal(stf__regex_search(&found, re, "aaaaaaaaab", 10, &exact, msg, sizeof msg), 0);
    assert_true(exact.left == 0 && !exact.spent);
    stf__regex_budget shy = { used - 1, 0 };
    assert_int_equal(stf__regex_search(&found, re, "aaaaaaaaab", 10, &shy, msg, sizeof msg),
                     STF_ELIMIT);
    assert_int_equal(shy.spent, 1);
    assert_int_equal(found, 0);
    stf__regex_free(re);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_repeats),
        cmocka_unit_test(test_set_compiles_once),
        cmocka_unit_test(test_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
