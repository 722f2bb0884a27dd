/* Tests for lib/container/dtype.c: the 22-entry table of lib/README.md, Dtypes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "container/container_internal.h"

/* The Dtypes table, in enum order: name and bits. */
static const struct {
    const char *name;
    unsigned bits;
} k_table[] = {
    { "BOOL", 8 },         { "F4", 4 },           { "F6_E2M3", 6 },  { "F6_E3M2", 6 },
    { "U8", 8 },           { "I8", 8 },           { "F8_E5M2", 8 },  { "F8_E4M3", 8 },
    { "F8_E8M0", 8 },      { "F8_E4M3FNUZ", 8 },  { "F8_E5M2FNUZ", 8 }, { "I16", 16 },
    { "U16", 16 },         { "F16", 16 },         { "BF16", 16 },    { "I32", 32 },
    { "U32", 32 },         { "F32", 32 },         { "C64", 64 },     { "F64", 64 },
    { "I64", 64 },         { "U64", 64 },
};

static void test_table(void **state)
{
    (void)state;
    assert_int_equal(STF_DTYPE_COUNT, 22);
    assert_int_equal(sizeof k_table / sizeof *k_table, 22);
    for (int i = 0; i < STF_DTYPE_COUNT; i++) {
        stf_dtype d = (stf_dtype)99;
        assert_string_equal(stf_dtype_name((stf_dtype)i), k_table[i].name);
        assert_int_equal(stf_dtype_bits((stf_dtype)i), k_table[i].bits);
        assert_int_equal(stf_dtype_from_name(&d, k_table[i].name, strlen(k_table[i].name)), 0);
        assert_int_equal(d, i);
    }
    assert_int_equal(STF_F32, 17);
    assert_int_equal(STF_U64, 21);
}

static void test_out_of_range(void **state)
{
    (void)state;
    assert_null(stf_dtype_name(STF_DTYPE_COUNT));
    assert_null(stf_dtype_name((stf_dtype)-1));
    assert_int_equal(stf_dtype_bits(STF_DTYPE_COUNT), 0);
    assert_int_equal(stf_dtype_bits((stf_dtype)-1), 0);
    uint64_t nb = 7;
    stf_err e;
    assert_int_equal(stf_dtype_nbytes(&nb, STF_DTYPE_COUNT, 1, &e), STF_EINVAL);
    assert_int_equal(nb, 7);
}

static void test_from_name_exact(void **state)
{
    (void)state;
    stf_dtype d = STF_BOOL;
    static const char *const bad[] = { "f32", "F32 ", " F32", "F3", "F322", "bool", "",
                                       "F8_E4M3FN", "FLOAT" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(stf_dtype_from_name(&d, bad[i], strlen(bad[i])), STF_ENOTFOUND);
    assert_int_equal(d, STF_BOOL);
    /* Length-delimited: a prefix of a longer buffer matches, an embedded
     * NUL does not. */
    assert_int_equal(stf_dtype_from_name(&d, "F16xyz", 3), 0);
    assert_int_equal(d, STF_F16);
    assert_int_equal(stf_dtype_from_name(&d, "F16\0", 4), STF_ENOTFOUND);
    assert_int_equal(stf_dtype_from_name(&d, NULL, 0), STF_ENOTFOUND);
}

static void test_nbytes(void **state)
{
    (void)state;
    uint64_t nb = 0;
    stf_err e;
    assert_int_equal(stf_dtype_nbytes(&nb, STF_F32, 6, &e), 0);
    assert_int_equal(nb, 24);
    assert_int_equal(stf_dtype_nbytes(&nb, STF_F4, 2, &e), 0);
    assert_int_equal(nb, 1);
    assert_int_equal(stf_dtype_nbytes(&nb, STF_F6_E2M3, 4, &e), 0);
    assert_int_equal(nb, 3);
    assert_int_equal(stf_dtype_nbytes(&nb, STF_BOOL, 0, &e), 0);
    assert_int_equal(nb, 0);
    assert_int_equal(stf_dtype_nbytes(&nb, STF_U64, UINT64_MAX / 64, &e), 0);
    assert_int_equal(nb, (UINT64_MAX / 64) * 8);

    nb = 5;
    assert_int_equal(stf_dtype_nbytes(&nb, STF_F4, 3, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S17");
    assert_int_equal(nb, 5);
    assert_int_equal(stf_dtype_nbytes(&nb, STF_F6_E3M2, 2, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S17");
    /* test_validation_overflow (b): 2^63-1 elements fit, their bits do not. */
    assert_int_equal(stf_dtype_nbytes(&nb, STF_I32, UINT64_C(9223372036854775807), &e),
                     STF_EFORMAT);
    assert_string_equal(e.rule, "S16");
    assert_int_equal(stf_dtype_nbytes(&nb, STF_U64, UINT64_MAX / 64 + 1, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S16");
    assert_int_equal(nb, 5);
    /* err may be NULL. */
    assert_int_equal(stf_dtype_nbytes(&nb, STF_F4, 1, NULL), STF_EFORMAT);
}

static void test_open_opts_defaults(void **state)
{
    (void)state;
    stf_open_opts o;
    memset(&o, 0xab, sizeof o);
    stf_open_opts_init(&o);
    assert_int_equal(o.strict, 0);
    assert_int_equal(o.no_mmap, 0);
    assert_int_equal(o.max_header, 100000000);
    assert_int_equal(o.max_tensors, 1000000);
    assert_int_equal(o.max_rank, 8);
    assert_int_equal(o.max_dim, UINT64_C(281474976710655));
    assert_int_equal(o.max_name, 4096);
    assert_int_equal(o.max_meta_entries, 65536);
    assert_int_equal(o.max_shards, 10000);
    assert_int_equal(o.max_index_size, 100000000);
    stf_open_opts_init(NULL); /* no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_from_name_exact),
        cmocka_unit_test(test_nbytes),
        cmocka_unit_test(test_open_opts_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
