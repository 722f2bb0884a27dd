/*
 * Tests for lib/container/validate.c: duplicate names (S13) and the
 * geometry walk (S15-S20), driven directly with tensor records.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "container/header_internal.h"

typedef struct fx {
    stf_open_opts o;
    stf__findings f;
    stf_err e;
    stf__header_ctx c;
} fx;

static void fx_init(fx *x, int strict)
{
    memset(x, 0, sizeof *x);
    stf_open_opts_init(&x->o);
    x->o.strict = strict;
    stf__findings_init(&x->f);
    x->c.path = "m.safetensors";
    x->c.o = &x->o;
    x->c.findings = &x->f;
    x->c.err = &x->e;
}

static void fx_free(fx *x) { stf__findings_free(&x->f); }

/* A record; shape must outlive it. Offsets: key at 100+i, shape 200+i, data_offsets 300+i. */
static stf__tensor_record rec(unsigned i, const char *name, stf_dtype dt, unsigned rank,
                              const uint64_t *shape, uint64_t b, uint64_t e)
{
    stf__tensor_record r;
    memset(&r, 0, sizeof r);
    r.ti.name = name;
    r.ti.name_len = strlen(name);
    r.ti.dtype = dt;
    r.ti.rank = rank;
    r.ti.shape = rank ? shape : NULL;
    r.ti.begin = b;
    r.ti.end = e;
    r.ti.header_offset = 100 + i;
    r.shape_off = 200 + i;
    r.offs_off = 300 + i;
    return r;
}

static const uint64_t S4[] = { 4 };
static const uint64_t S22[] = { 2, 2 };
static const uint64_t S0[] = { 0 };

static void test_geometry_sorts_and_fills(void **state)
{
    (void)state;
    fx x;
    fx_init(&x, 0);
    stf__tensor_record t[3] = {
        rec(0, "c", STF_F32, 2, S22, 20, 36),
        rec(1, "a", STF_U8, 1, S4, 0, 4),
        rec(2, "b", STF_I32, 0, NULL, 16, 20),
    };
    /* A gap between a [0,4) and b [16,20). */
    uint64_t ds = 77;
    assert_int_equal(stf__validate_geometry(t, 3, 64, 8 + 64 + 36, &ds, &x.c), STF_EFORMAT);
    assert_string_equal(x.e.rule, "S15");
    assert_int_equal(x.e.offset, 302);
    assert_string_equal(x.e.msg, "m.safetensors: S15 InvalidOffset: tensor 'b' (byte 302): "
                                 "data_offsets [16,20] do not start at 4");
    assert_int_equal(ds, 77);

    t[0] = rec(0, "c", STF_F32, 2, S22, 8, 24);
    t[1] = rec(1, "a", STF_U8, 1, S4, 0, 4);
    t[2] = rec(2, "b", STF_I32, 0, NULL, 4, 8);
    assert_int_equal(stf__validate_geometry(t, 3, 64, 8 + 64 + 24, &ds, &x.c), 0);
    assert_int_equal(ds, 24);
    assert_string_equal(t[0].ti.name, "a");
    assert_string_equal(t[1].ti.name, "b");
    assert_string_equal(t[2].ti.name, "c");
    assert_int_equal(t[0].ti.nelem, 4);
    assert_int_equal(t[1].ti.nelem, 1);
    assert_int_equal(t[2].ti.nelem, 4);
    assert_int_equal(t[2].ti.nbytes, 16);
    assert_int_equal(x.f.n, 0);
    fx_free(&x);
}

static void test_geometry_errors(void **state)
{
    (void)state;
    static const uint64_t huge[] = { UINT64_C(1) << 32, UINT64_C(1) << 32 };
    static const uint64_t big[] = { UINT64_C(1) << 62 };
    static const uint64_t s3[] = { 3 };
    static const struct {
        stf_dtype dt;
        unsigned rank;
        const uint64_t *shape;
        uint64_t b, e;
        const char *rule;
        uint64_t off;
    } cases[] = {
        { STF_U8, 1, S4, 0, 4, "", 0 },
        { STF_U8, 1, S4, 4, 0, "S15", 300 },    /* does not start at the cursor */
        { STF_U8, 1, S4, 0, UINT64_MAX, "S18", 300 },
        { STF_U8, 2, huge, 0, 4, "S16", 200 },  /* element count overflows */
        { STF_F32, 1, big, 0, 4, "S16", 200 },  /* bit count overflows */
        { STF_F4, 1, s3, 0, 2, "S17", 200 },
        { STF_F6_E2M3, 1, s3, 0, 3, "S17", 200 },
        { STF_F32, 1, S4, 0, 15, "S18", 300 },
        { STF_F32, 1, S4, 0, 17, "S18", 300 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fx x;
        uint64_t ds = 0;
        fx_init(&x, 0);
        stf__tensor_record t =
            rec(0, "w", cases[i].dt, cases[i].rank, cases[i].shape, cases[i].b, cases[i].e);
        uint64_t fs = 8 + 10 + (cases[i].e >= cases[i].b ? cases[i].e : 0);
        int rc = stf__validate_geometry(&t, 1, 10, fs, &ds, &x.c);
        if (cases[i].rule[0] == '\0') {
            assert_int_equal(rc, 0);
        } else {
            assert_int_equal(rc, STF_EFORMAT);
            assert_string_equal(x.e.rule, cases[i].rule);
            assert_int_equal(x.e.offset, cases[i].off);
        }
        fx_free(&x);
    }
    /* end < begin at the cursor: S15 too (the reference's second test). */
    fx x;
    uint64_t ds;
    fx_init(&x, 0);
    stf__tensor_record t[2] = {rec(0, "a", STF_U8, 1, S4, 0, 4), rec(1, "b", STF_U8, 1, S0, 4, 3)};
    assert_int_equal(stf__validate_geometry(t, 2, 10, 8 + 10 + 4, &ds, &x.c), STF_EFORMAT);
    assert_string_equal(x.e.rule, "S15");
    fx_free(&x);
}

static void test_geometry_file_end(void **state)
{
    (void)state;
    fx x;
    uint64_t ds = 0;
    fx_init(&x, 0);
    stf__tensor_record t = rec(0, "w", STF_U8, 1, S4, 0, 4);
    assert_int_equal(stf__validate_geometry(&t, 1, 16, 8 + 16 + 5, &ds, &x.c), STF_EFORMAT);
    assert_string_equal(x.e.rule, "S19");
    assert_int_equal(x.e.offset, 24);
    assert_string_equal(x.e.msg, "m.safetensors: S19 MetadataIncompleteBuffer (byte 24): the "
                                 "tensors cover 4 data bytes, so the file should be 28 bytes, "
                                 "but it is 29");
    assert_int_equal(stf__validate_geometry(&t, 1, 16, 8 + 16 + 3, &ds, &x.c), STF_EFORMAT);
    assert_string_equal(x.e.rule, "S19");
    /* No tensors: the data section must be empty. */
    assert_int_equal(stf__validate_geometry(NULL, 0, 16, 8 + 16 + 1, &ds, &x.c), STF_EFORMAT);
    assert_string_equal(x.e.rule, "S19");
    assert_int_equal(stf__validate_geometry(NULL, 0, 16, 8 + 16, &ds, &x.c), 0);
    assert_int_equal(ds, 0);
    /* 8 + N + cursor overflowing u64 is S19, not a wrap-around match:
     * nine tensors ending at byte 2^64 - 1 of the data section (one U8
     * tensor holds at most 2^61 - 1 bytes before its bit count overflows). */
    static const uint64_t big[] = { (UINT64_C(1) << 61) - 1 };
    static const uint64_t seven[] = { 7 };
    static const char *const names[9] = { "a", "b", "c", "d", "e", "f", "g", "h", "i" };
    stf__tensor_record u[9];
    for (unsigned i = 0; i < 9; i++)
        u[i] = rec(i, names[i], STF_U8, 1, i < 8 ? big : seven, i * big[0],
                   i < 8 ? (i + 1) * big[0] : UINT64_MAX);
    assert_int_equal(stf__validate_geometry(u, 9, 16, 7, &ds, &x.c), STF_EFORMAT);
    assert_string_equal(x.e.rule, "S19");
    assert_non_null(strstr(x.e.msg, "should be more than 18446744073709551615 bytes"));
    fx_free(&x);
}

static void test_zero_size_alias(void **state)
{
    (void)state;
    fx x;
    uint64_t ds;
    fx_init(&x, 1); /* a warning even under strict */
    stf__tensor_record t[4] = {
        rec(0, "w", STF_F32, 1, S4, 0, 16), rec(1, "z1", STF_F32, 1, S0, 0, 0),
        rec(2, "z2", STF_F32, 1, S0, 0, 0),
        rec(3, "end", STF_F32, 1, S0, 16, 16), /* alone at its offset: fine */
    };
    assert_int_equal(stf__validate_geometry(t, 4, 8, 8 + 8 + 16, &ds, &x.c), 0);
    assert_int_equal(x.c.has_pending, 0);
    assert_int_equal(x.f.n, 2);
    assert_string_equal(x.f.v[0].rule, "S20");
    assert_string_equal(x.f.v[0].tensor, "z1");
    assert_int_equal(x.f.v[0].offset, 301);
    assert_string_equal(x.f.v[1].tensor, "z2");
    assert_string_equal(t[0].ti.name, "z1");
    assert_string_equal(t[1].ti.name, "z2");
    assert_string_equal(t[2].ti.name, "w");
    assert_string_equal(t[3].ti.name, "end");
    fx_free(&x);
}

static void test_dup_tensors(void **state)
{
    (void)state;
    fx x;
    fx_init(&x, 0);
    stf__tensor_record t[5] = {
        rec(0, "a", STF_U8, 1, S4, 0, 4),   rec(1, "b", STF_U8, 1, S4, 4, 8),
        rec(2, "a", STF_U8, 1, S4, 8, 12),  rec(3, "ab", STF_U8, 1, S4, 12, 16),
        rec(4, "a", STF_F32, 1, S4, 0, 16),
    };
    size_t n = 5;
    assert_int_equal(stf__validate_dup_tensors(t, &n, &x.c), 0);
    /* Keep-last, header order otherwise. */
    assert_int_equal(n, 3);
    assert_string_equal(t[0].ti.name, "b");
    assert_string_equal(t[1].ti.name, "ab");
    assert_string_equal(t[2].ti.name, "a");
    assert_int_equal(t[2].ti.dtype, STF_F32);
    assert_int_equal(t[2].ti.header_offset, 104);
    /* One finding per later duplicate, in header order. */
    assert_int_equal(x.f.n, 2);
    assert_string_equal(x.f.v[0].rule, "S13");
    assert_int_equal(x.f.v[0].offset, 102);
    assert_int_equal(x.f.v[1].offset, 104);
    assert_non_null(strstr(x.f.v[1].message, "(also at byte 102)"));
    fx_free(&x);

    /* Strict: deferred, the first duplicate in header order. */
    fx_init(&x, 1);
    stf__tensor_record u[3] = {rec(0, "q", STF_U8, 1, S4, 0, 4), rec(1, "p", STF_U8, 1, S4, 0, 4),
                               rec(2, "p", STF_U8, 1, S4, 0, 4)};
    n = 3;
    u[0].ti.name = "p";
    assert_int_equal(stf__validate_dup_tensors(u, &n, &x.c), 0);
    assert_int_equal(n, 1);
    assert_int_equal(x.f.n, 0);
    assert_int_equal(x.c.has_pending, 1);
    assert_string_equal(x.c.pending.rule, "S13");
    assert_int_equal(x.c.pending.offset, 101);
    fx_free(&x);

    /* Nothing to do for 0 or 1 record. */
    n = 1;
    fx_init(&x, 0);
    assert_int_equal(stf__validate_dup_tensors(u, &n, &x.c), 0);
    assert_int_equal(n, 1);
    fx_free(&x);
}

static void test_dup_meta(void **state)
{
    (void)state;
    fx x;
    fx_init(&x, 0);
    stf_meta_entry m[5] = {
        { "k", 1, "1", 1 }, { "j", 1, "2", 1 }, { "k", 1, "33", 2 },
        { "kk", 2, "4", 1 }, { "k", 1, "5", 1 },
    };
    uint64_t off[5] = { 10, 20, 30, 40, 50 };
    size_t n = 5;
    assert_int_equal(stf__validate_dup_meta(m, off, &n, &x.c), 0);
    assert_int_equal(n, 3);
    assert_string_equal(m[0].key, "k");
    assert_string_equal(m[0].value, "5");
    assert_int_equal(m[0].value_len, 1);
    assert_string_equal(m[1].key, "j");
    assert_string_equal(m[2].key, "kk");
    assert_int_equal(off[0], 10);
    assert_int_equal(off[1], 20);
    assert_int_equal(off[2], 40);
    assert_int_equal(x.f.n, 2);
    assert_int_equal(x.f.v[0].offset, 30);
    assert_int_equal(x.f.v[1].offset, 50);
    assert_null(x.f.v[0].tensor);
    assert_non_null(strstr(x.f.v[0].message, "duplicate __metadata__ key \"k\" (first at byte 10)"));
    fx_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry_sorts_and_fills),
        cmocka_unit_test(test_geometry_errors),
        cmocka_unit_test(test_geometry_file_end),
        cmocka_unit_test(test_zero_size_alias),
        cmocka_unit_test(test_dup_tensors),
        cmocka_unit_test(test_dup_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
