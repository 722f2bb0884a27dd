/*
 * cmd/cli_size.c: sizes as people type them. Units of any case, decimal
 * fractions taken exactly (the rational they spell, times the unit, a
 * fraction of a byte dropped), a clear refusal of anything else, and
 * overflow refused at the exact bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

static const struct {
    const char *s;
    int rc;
    unsigned long long v;
} cases[] = {
    { "0", 0, 0 },
    { "5000000000", 0, 5000000000ULL },
    { "12B", 0, 12 },
    { "12b", 0, 12 },
    /* Decimal units, any case. */
    { "5GB", 0, 5000000000ULL },
    { "5gb", 0, 5000000000ULL },
    { "5Gb", 0, 5000000000ULL },
    { "500MB", 0, 500000000ULL },
    { "3kB", 0, 3000 },
    { "3KB", 0, 3000 },
    { "2TB", 0, 2000000000000ULL },
    { "1PB", 0, 1000000000000000ULL },
    { "1EB", 0, 1000000000000000000ULL },
    /* Binary units: "iB", "i", or the letter alone. */
    { "512MiB", 0, 512ULL << 20 },
    { "512mib", 0, 512ULL << 20 },
    { "4GiB", 0, 4ULL << 30 },
    { "4Gi", 0, 4ULL << 30 },
    { "5G", 0, 5ULL << 30 },
    { "5g", 0, 5ULL << 30 },
    { "64K", 0, 64ULL << 10 },
    { "1T", 0, 1ULL << 40 },
    { "1P", 0, 1ULL << 50 },
    { "15EiB", 0, 15ULL << 60 },
    /* Fractions, exact: no binary floating point on the way. */
    { "1.5GB", 0, 1500000000ULL },
    { "1.1GB", 0, 1100000000ULL },
    { "0.1GB", 0, 100000000ULL },
    { "1.5GiB", 0, 3ULL << 29 },
    { "0.5K", 0, 512 },
    { "0.0009765625KiB", 0, 1 },      /* 2^-10 KiB is one byte exactly */
    { "0.0009765624KiB", 0, 0 },      /* a hair under: no byte */
    { "0.3KiB", 0, 307 },             /* 307.2: the fifth of a byte dropped */
    { "2.999B", 0, 2 },
    { "4.4", 0, 4 },
    { "1.000000000000000000000000000001GB", 0, 1000000000ULL },
    { "000000000000000000000000000005GB", 0, 5000000000ULL },
    { "1.23456789012MB", 0, 1234567 },
    /* The bound: 2^64 - 1 bytes, and no byte more. */
    { "18446744073709551615", 0, 18446744073709551615ULL },
    { "18446744073709551615B", 0, 18446744073709551615ULL },
    { "18446744073709551615.9", 0, 18446744073709551615ULL },
    { "18446744073709551616", -2, 0 },
    { "99999999999999999999999999", -2, 0 },
    { "16EiB", -2, 0 },
    { "15.999999999999999999EiB", 0, 18446744073709551614ULL },
    { "16EB", 0, 16000000000000000000ULL },
    { "18.446744073709551615EB", 0, 18446744073709551615ULL },
    { "18.446744073709551616EB", -2, 0 },
    { "17179869184GiB", -2, 0 },
    { "17179869183.999999999GiB", 0, 18446744073709551614ULL },
    /* Not sizes. */
    { "", -1, 0 },
    { "GB", -1, 0 },
    { " 5GB", -1, 0 },
    { "5 GB", -1, 0 },
    { "5GB ", -1, 0 },
    { "-1", -1, 0 },
    { "+1", -1, 0 },
    { ".5GB", -1, 0 },
    { "5.GB", -1, 0 },
    { "5..5GB", -1, 0 },
    { "1.5.5", -1, 0 },
    { "5XB", -1, 0 },
    { "5GBs", -1, 0 },
    { "5gig", -1, 0 },
    { "5iB", -1, 0 },
    { "5Bi", -1, 0 },
    { "1e9", -1, 0 },
    { "0x10", -1, 0 },
    { "5,5GB", -1, 0 },
    { "5_000", -1, 0 },
    { "5\xef\xbc\xa7\xef\xbc\xa2", -1, 0 }, /* fullwidth GB */
};

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned long long v = 77;
        int rc = cli_parse_size(cases[i].s, &v);
        if (rc != cases[i].rc || (rc == 0 && v != cases[i].v) || (rc && v != 77))
            fail_msg("'%s': got %d %llu, want %d %llu", cases[i].s, rc, v, cases[i].rc,
                     cases[i].v);
    }
    assert_int_equal(cli_parse_size(NULL, NULL), -1);
}

/* Every count of bytes k/10 MB for k < 10^4, and k/8 GiB: the fraction as
 * exact as integer arithmetic makes it. */
static void test_fractions_exact(void **state)
{
    (void)state;
    char s[64];
    for (unsigned k = 0; k < 10000; k++) {
        unsigned long long v = 0;
        snprintf(s, sizeof s, "%u.%uMB", k / 10, k % 10);
        assert_int_equal(cli_parse_size(s, &v), 0);
        assert_true(v == (unsigned long long)k * 100000ULL);
        snprintf(s, sizeof s, "%u.%03uGiB", k / 8, (k % 8) * 125);
        assert_int_equal(cli_parse_size(s, &v), 0);
        assert_true(v == ((unsigned long long)k << 30) / 8);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_fractions_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
