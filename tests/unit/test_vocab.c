/*
 * Tests for the vocabulary the layers share: one enum and one name table
 * for each of probe verdicts, formats and consumers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stfix.h"

/* Every verdict has its own name; the first value past the enum has none. */
static void test_verdict_names(void **state)
{
    (void)state;
    static const char *const want[STF_PROBE_COUNT] = {
        "UNKNOWN", "ROW", "COLUMN", "TENSOR", "BLOCK", "AMBIGUOUS"
    };
    for (stf_probe_verdict v = STF_PROBE_UNKNOWN; v < STF_PROBE_COUNT; v++)
        assert_string_equal(stf_probe_verdict_name(v), want[v]);
    assert_null(stf_probe_verdict_name(STF_PROBE_COUNT));
    /* The H1 result carries the same type the selector reads. */
    stf_h1_result h = { 0 };
    stf_layer_view lv = { 0 };
    h.verdict = STF_PROBE_COLUMN;
    lv.probe = h.verdict;
    assert_int_equal(lv.probe, STF_PROBE_COLUMN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
