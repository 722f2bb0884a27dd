/*
 * Tests for lib/model/pyval.c: Python semantics on parsed values (==,
 * truthiness, int()), as SGLang's R5 and the consumers' field reads use
 * them. Expected results were checked against CPython 3.11.
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

static void test_python_equality(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("[1, 1.0, true, 0, false, 0.0, \"1\", NaN, [NaN], [NaN],"
                         " {\"a\": 1, \"b\": [2]}, {\"b\": [2.0], \"a\": true},"
                         " 9007199254740993, 9007199254740992.0, 9007199254740992, null, null,"
                         " [1, 2], [2, 1], 1e400, Infinity, {\"a\": 1, \"b\": 3}]");
#define IT(k) stf_pyval_item(v, k)
    assert_true(stf_pyval_equal(IT(0), IT(1)));
    assert_true(stf_pyval_equal(IT(0), IT(2)));
    assert_true(stf_pyval_equal(IT(1), IT(2)));
    assert_true(stf_pyval_equal(IT(3), IT(4)));
    assert_true(stf_pyval_equal(IT(4), IT(5)));
    assert_false(stf_pyval_equal(IT(0), IT(6)));
    assert_false(stf_pyval_equal(IT(7), IT(7)));   /* NaN != NaN */
    assert_true(stf_pyval_equal(IT(8), IT(9)));    /* [NaN] == [NaN]: one shared object */
    assert_true(stf_pyval_equal(IT(10), IT(11)));  /* dicts: order ignored, 1 == True */
    assert_false(stf_pyval_equal(IT(10), IT(21))); /* same keys, value differs */
    assert_false(stf_pyval_equal(IT(12), IT(13))); /* 2**53+1 != float(2**53) */
    assert_true(stf_pyval_equal(IT(14), IT(13)));
    assert_true(stf_pyval_equal(IT(15), IT(16)));
    assert_false(stf_pyval_equal(IT(17), IT(18)));
    assert_true(stf_pyval_equal(IT(19), IT(20)));  /* 1e400 == inf */
    assert_false(stf_pyval_equal(IT(15), IT(3)));  /* None != 0 */

    assert_true(stf_pyval_eq_int(IT(1), 1));
    assert_true(stf_pyval_eq_int(IT(2), 1));
    assert_false(stf_pyval_eq_int(IT(6), 1));
    assert_false(stf_pyval_eq_int(IT(7), 0));
#undef IT
    stf_pyval_free(v);
}

static void test_truthiness(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("[NaN, 0.0, \"\", {}, [], \"0\", 0, 2, null, true, [0]]");
    static const int want[] = { 1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1 };
    for (size_t i = 0; i < 11; i++) assert_int_equal(stf_pyval_truthy(stf_pyval_item(v, i)), want[i]);
    assert_int_equal(stf_pyval_truthy(NULL), 0);
    assert_int_equal(stf_pyval_is_true(stf_pyval_item(v, 7)), 0); /* 2 is not True */
    stf_pyval_free(v);
}

static void test_python_int_conversion(void **state)
{
    (void)state;
    stf_pyval *v = ST_PYJSON("[\"256\", \" 2_56 \", \"256.0\", 256.9, -1.5, true, null, NaN, 1e30,"
                         " \"-0\", \"1__0\", \"_1\", \"\", \"+7\", [1], 64]");
    static const struct { int rc; int64_t val; } want[] = {
        { 0, 256 }, { 0, 256 }, { STF_EINVAL, 0 }, { 0, 256 }, { 0, -1 }, { 0, 1 },
        { STF_EINVAL, 0 }, { STF_EINVAL, 0 }, { STF_ELIMIT, 0 }, { 0, 0 }, { STF_EINVAL, 0 },
        { STF_EINVAL, 0 }, { STF_EINVAL, 0 }, { 0, 7 }, { STF_EINVAL, 0 }, { 0, 64 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int64_t out = -99;
        stf_err err;
        int rc = stf_pyval_pyint(&out, stf_pyval_item(v, i), &err);
        if (rc != want[i].rc) fail_msg("item %zu: rc %d, want %d", i, rc, want[i].rc);
        if (rc == 0) assert_int_equal(out, want[i].val);
    }
    stf_pyval_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_equality),
        cmocka_unit_test(test_truthiness),
        cmocka_unit_test(test_python_int_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
