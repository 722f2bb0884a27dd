/* lib/util/version.c: the run-time version agrees with the headers' macros. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"

/* The number is usable in #if, as its comment in base.h promises. */
#if STF_VERSION_NUMBER != STF_VERSION_MAJOR * 10000 + STF_VERSION_MINOR * 100 + STF_VERSION_PATCH
#error "STF_VERSION_NUMBER is not MAJOR * 10000 + MINOR * 100 + PATCH"
#endif

static void test_string(void **state)
{
    (void)state;
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", STF_VERSION_MAJOR, STF_VERSION_MINOR,
             STF_VERSION_PATCH);
    assert_string_equal(STF_VERSION_STRING, want);
    assert_string_equal(stf_version(), want);
}

static void test_number(void **state)
{
    (void)state;
    assert_true(STF_VERSION_MINOR < 100);
    assert_true(STF_VERSION_PATCH < 100);
    assert_int_equal(stf_version_number(),
                     STF_VERSION_MAJOR * 10000 + STF_VERSION_MINOR * 100 + STF_VERSION_PATCH);
    unsigned maj, min, pat;
    assert_int_equal(sscanf(stf_version(), "%u.%u.%u", &maj, &min, &pat), 3);
    assert_int_equal(stf_version_number(), maj * 10000 + min * 100 + pat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string),
        cmocka_unit_test(test_number),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
