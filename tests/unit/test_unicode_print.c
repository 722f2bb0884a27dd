/*
 * Tests for lib/util/unicode_print.c: the printability table must agree
 * with CPython 3.11's str.isprintable() (which repr() uses) everywhere; the
 * total and the spot values below were printed by CPython 3.11.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "model/model_internal.h"

static void test_spot_values(void **state)
{
    (void)state;
    static const struct { uint32_t cp; int printable; } want[] = {
        { 0x1f, 0 }, { 0x20, 1 }, { 0x7e, 1 }, { 0x7f, 0 }, { 0xa0, 0 }, { 0xa1, 1 },
        { 0xad, 0 }, { 0x378, 0 }, { 0x2028, 0 }, { 0x3000, 0 }, { 0x4e00, 1 }, { 0x9fff, 1 },
        { 0xd800, 0 }, { 0xe000, 0 }, { 0xfeff, 0 }, { 0x1f600, 1 }, { 0x323af, 0 },
        { 0xe0001, 0 }, { 0x10ffff, 0 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (stf__unicode_printable(want[i].cp) != want[i].printable)
            fail_msg("U+%04X: got %d", (unsigned)want[i].cp, !want[i].printable);
}

static void test_total_matches_cpython(void **state)
{
    (void)state;
    unsigned long n = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) n += (unsigned long)stf__unicode_printable(cp);
    /* sum(chr(c).isprintable() for c in range(0x110000)) on CPython 3.11 */
    assert_int_equal(n, 144516);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spot_values),
        cmocka_unit_test(test_total_matches_cpython),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
