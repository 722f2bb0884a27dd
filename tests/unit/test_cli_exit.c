/*
 * cmd/cli_exit.c: the one table from library error code to exit status
 * (the library's, stf_err_exit_status, which bindings share).
 * Every code the library names (stf_strerror knows it) is listed with its
 * status from the contract in stfix(1); a code it does not know is a failed
 * operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

static const struct {
    int code;
    const char *name;
    int status;
} contract[] = {
    { STF_EIO, "STF_EIO", 4 },           { STF_ENOMEM, "STF_ENOMEM", 4 },
    { STF_EINVAL, "STF_EINVAL", 3 },     { STF_EFORMAT, "STF_EFORMAT", 2 },
    { STF_ELIMIT, "STF_ELIMIT", 2 },     { STF_EUNSUPPORTED, "STF_EUNSUPPORTED", 2 },
    { STF_ENOTFOUND, "STF_ENOTFOUND", 2 }, { STF_ENUMERIC, "STF_ENUMERIC", 2 },
    { STF_EBUSY, "STF_EBUSY", 4 },       { STF_ECANCELED, "STF_ECANCELED", 4 },
};
#define NCONTRACT (sizeof contract / sizeof contract[0])

static void test_contract(void **state)
{
    (void)state;
    assert_int_equal(cli_exit_for(STF_OK), 0);
    assert_null(cli_exit_code_name(STF_OK));
    for (size_t i = 0; i < NCONTRACT; i++) {
        assert_int_equal(cli_exit_for(contract[i].code), contract[i].status);
        assert_string_equal(cli_exit_code_name(contract[i].code), contract[i].name);
    }
}

/* A code added to the library without a row in the table fails here. */
static void test_every_library_code_listed(void **state)
{
    (void)state;
    const char *unknown = stf_strerror(-1000);
    size_t named = 0;
    for (int code = -1; code >= -256; code--) {
        if (!strcmp(stf_strerror(code), unknown)) continue;
        named++;
        assert_non_null(cli_exit_code_name(code));
        int listed = 0;
        for (size_t i = 0; i < NCONTRACT; i++) listed |= contract[i].code == code;
        assert_true(listed);
    }
    assert_int_equal(named, NCONTRACT);
}

static void test_unknown_is_failure(void **state)
{
    (void)state;
    assert_int_equal(cli_exit_for(-1000), 4);
    assert_int_equal(cli_exit_for(7), 4);
    assert_null(cli_exit_code_name(-1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract),
        cmocka_unit_test(test_every_library_code_listed),
        cmocka_unit_test(test_unknown_is_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
