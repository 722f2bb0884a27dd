/*
 * Tests for lib/container/header.c: framing (S1-S3), the golden reader fixtures
 * of the safetensors reference tests (test_deserialization,
 * test_header_too_large, test_validation_overflow, ...) built byte by byte, the
 * resource caps (L1-L6), and allocation failure at every step. The stfix-only
 * fixtures (one per STRICT rule) are in test_header_rules.c (split for size).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "container/container_internal.h"
#include "support/st_alloc.h"
#include "support/st_expect.h"

#define DESER "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}"

/* ------------------------------------------ reference reader fixtures */

/* b opens leniently with no findings at all; the caller frees the header. */
static stf__header *ok_clean(const st_bytes *b)
{
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_ok_lenient(b, 0, &f);
    assert_int_equal(f.n, 0);
    stf__findings_free(&f);
    return h;
}

static void test_empty_shapes_allowed(void **state)
{
    (void)state;
    const char *hdr = "{\"test\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    assert_int_equal(strlen(hdr), 56);
    st_bytes b = st_bytes_simple(hdr, 4);
    stf__header *h = ok_clean(&b);
    assert_int_equal(h->n, 56);
    assert_int_equal(h->data_size, 4);
    assert_int_equal(h->ntensors, 1);
    assert_int_equal(h->has_meta, 0);
    assert_int_equal(h->nmeta, 0);
    st_tensor_is(&h->tensors[0], "test", STF_I32, 0, NULL, 0, 4, 9);
    stf__header_free(h);
    st_bytes_free(&b);
}

static void test_deserialization(void **state)
{
    (void)state;
    static const uint64_t shape[] = { 2, 2 };
    assert_int_equal(strlen(DESER), 60);
    st_bytes b = st_bytes_simple(DESER, 16);
    assert_int_equal(b.p[0], '<');
    stf__header *h = ok_clean(&b);
    assert_int_equal(h->ntensors, 1);
    assert_int_equal(h->data_size, 16);
    st_tensor_is(&h->tensors[0], "test", STF_I32, 2, shape, 0, 16, 9);
    stf__header_free(h);
    /* Strict mode accepts it too: nothing STRICT is violated. */
    stf_open_opts o = st_opts(1);
    stf_err e;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), 0);
    stf__header_free(h);
    st_bytes_free(&b);
}

static void test_zero_sized_tensor(void **state)
{
    (void)state;
    static const uint64_t shape[] = { 2, 0 };
    const char *hdr = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}";
    assert_int_equal(strlen(hdr), 60);
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__header *h = ok_clean(&b);
    assert_int_equal(h->data_size, 0);
    st_tensor_is(&h->tensors[0], "test", STF_I32, 2, shape, 0, 0, 9);
    stf__header_free(h);
    st_bytes_free(&b);
}

static void test_whitespace_padded_header(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(6, "{}\r \t\n", 6, NULL, 0);
    assert_int_equal(b.len, 14);
    stf__header *h = ok_clean(&b);
    assert_int_equal(h->ntensors, 0);
    assert_null(h->tensors);
    assert_int_equal(h->data_size, 0);
    stf__header_free(h);
    st_bytes_free(&b);
}

static void test_whitespace_leading_padded_header(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(6, "\t\n{}\r ", 6, NULL, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, 0, "S7", 8, NULL, &f);
    assert_int_equal(h->ntensors, 0);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_invalid_info(void **state)
{
    (void)state;
    const char *hdr = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0, 4]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    /* Reported at the data_offsets array. */
    st_fails(&b, STF_EFORMAT, "S18", st_at(hdr, "[0, 4]"));
    st_bytes_free(&b);
}

static void test_metadata_incomplete_buffer(void **state)
{
    (void)state;
    static const char extra[] = "extra_bogus_data_for_polyglot_file";
    uint8_t data[16 + 34];
    assert_int_equal(strlen(extra), 34);
    memset(data, 0, 16);
    memcpy(data + 16, extra, 34);
    st_bytes a = st_bytes_file(60, DESER, 60, data, sizeof data);
    st_fails(&a, STF_EFORMAT, "S19", 68);
    st_bytes_free(&a);
    st_bytes b = st_bytes_file(60, DESER, 60, NULL, 14);
    st_fails(&b, STF_EFORMAT, "S19", 68);
    st_bytes_free(&b);
}

static void test_header_too_large(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(0, DESER, 60, NULL, 16);
    static const uint8_t n[8] = { 0x3c, 0, 0, 0, 0, 0xff, 0xff, 0xff };
    memcpy(b.p, n, 8);
    st_fails(&b, STF_EFORMAT, "S2", 0);
    st_bytes_free(&b);
}

static void test_header_too_small(void **state)
{
    (void)state;
    uint64_t n = 7;
    stf_err e;
    assert_int_equal(stf__frame_check(&n, NULL, 0, "t.safetensors", NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S1");
    assert_int_equal(n, 7); /* untouched */
    static const uint8_t seven[7] = { 0 };
    assert_int_equal(stf__frame_check(&n, seven, 7, "t.safetensors", NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S1");
    assert_string_equal(e.msg, "t.safetensors: S1 HeaderTooSmall (byte 0): the file is 7 bytes, "
                               "shorter than the 8-byte header length");
}

static void test_invalid_header_length(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(60, NULL, 0, NULL, 0);
    assert_int_equal(b.len, 8);
    st_fails(&b, STF_EFORMAT, "S3", 0);
    st_bytes_free(&b);
}

static void test_invalid_header_non_utf8(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(1, "\xff", 1, NULL, 0);
    st_fails(&b, STF_EFORMAT, "S4", 8);
    st_bytes_free(&b);
}

static void test_invalid_header_not_json(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(1, "{", 1, NULL, 0);
    st_fails(&b, STF_EFORMAT, "S5", 9);
    st_bytes_free(&b);
}

static void test_validation_overflow(void **state)
{
    (void)state;
    const char *ha = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,18446744073709551614],"
                     "\"data_offsets\":[0,16]}}";
    const char *hb = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,9223372036854775807],"
                     "\"data_offsets\":[0,16]}}";
    assert_int_equal(strlen(ha), 79);
    assert_int_equal(strlen(hb), 78);
    const char *hs[2] = { ha, hb };
    for (int i = 0; i < 2; i++) {
        st_bytes b = st_bytes_simple(hs[i], 16);
        assert_int_equal(b.p[0], i == 0 ? 'O' : 'N');
        /* S16 (REF) is the verdict in both modes, at the shape array (byte
         * 8 + 31); leniently S12 is also noted as a warning. */
        st_fails(&b, STF_EFORMAT, "S16", 39);
        stf_open_opts o = st_opts(0);
        stf__findings f;
        stf__header *h;
        stf_err e;
        stf__findings_init(&f);
        assert_int_equal(st_bytes_parse(&h, &b, 0, &o, &f, &e), STF_EFORMAT);
        assert_string_equal(e.rule, "S16");
        st_one_finding(&f, "S12", 42, "test");
        stf__findings_free(&f);
        st_bytes_free(&b);
    }
}

static void test_json_attack(void **state)
{
    (void)state;
    char hdr[700];
    size_t o = 0;
    hdr[o++] = '{';
    for (int i = 0; i < 10; i++)
        o += (size_t)snprintf(hdr + o, sizeof hdr - o,
                              "%s\"weight_%d\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                              "\"data_offsets\":[0,16]}",
                              i ? "," : "", i);
    hdr[o++] = '}';
    hdr[o] = '\0';
    assert_int_equal(o, 631);
    st_bytes b = st_bytes_simple(hdr, 16);
    stf_err e;
    stf__header *h;
    assert_int_equal(st_bytes_parse(&h, &b, 0, NULL, NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S15");
    /* Ties on (begin, end) are broken by name, so the second is weight_1. */
    assert_non_null(strstr(e.msg, "S15 InvalidOffset: tensor 'weight_1' (byte "));
    assert_non_null(strstr(e.msg, "data_offsets [0,16] do not start at 16"));
    st_bytes_free(&b);
}

/* ------------------------------------------------------------ caps */

static void test_frame_boundary(void **state)
{
    (void)state;
    uint8_t first[8];
    uint64_t n = 0, big = 100000000u;
    stf_err e;
    for (int i = 0; i < 8; i++) first[i] = (uint8_t)(big >> (8 * i));
    /* A fake file size: nothing of that size is allocated. */
    assert_int_equal(stf__frame_check(&n, first, 8 + big, "t.safetensors", NULL, &e), 0);
    assert_int_equal(n, big);
    first[0]++;
    assert_int_equal(stf__frame_check(&n, first, 16 + big, "t.safetensors", NULL, &e),
                     STF_EFORMAT);
    assert_string_equal(e.rule, "S2");
    /* Exactly 8 + N bytes passes S3; one short fails. */
    first[0]--;
    assert_int_equal(stf__frame_check(&n, first, 7 + big, "t.safetensors", NULL, &e),
                     STF_EFORMAT);
    assert_string_equal(e.rule, "S3");
    /* N near 2^64 must not wrap the S3 comparison. */
    memset(first, 0xff, 8);
    assert_int_equal(stf__frame_check(&n, first, UINT64_MAX, "t.safetensors", NULL, &e),
                     STF_EFORMAT);
    assert_string_equal(e.rule, "S2");
    /* A lower max_header is a cap (L1), checked after S3. */
    stf_open_opts o = st_opts(0);
    o.max_header = 1000;
    for (int i = 0; i < 8; i++) first[i] = (uint8_t)(UINT64_C(1001) >> (8 * i));
    assert_int_equal(stf__frame_check(&n, first, 2000, "t.safetensors", &o, &e), STF_ELIMIT);
    assert_string_equal(e.rule, "L1");
    assert_int_equal(stf__frame_check(&n, first, 1000, "t.safetensors", &o, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S3");
}

/* b opens under o; the caller inspects and frees the header. */
static stf__header *parse_ok(const st_bytes *b, const stf_open_opts *o)
{
    stf__header *h = NULL;
    stf_err e;
    assert_int_equal(st_bytes_parse(&h, b, 0, o, NULL, &e), 0);
    assert_non_null(h);
    return h;
}

/* b is refused under o by the cap `rule` at byte `at`; e is left for the caller. */
static void cap_fails(const st_bytes *b, const stf_open_opts *o, const char *rule, uint64_t at,
                      stf_err *e)
{
    stf__header *h = NULL;
    assert_int_equal(st_bytes_parse(&h, b, 0, o, NULL, e), STF_ELIMIT);
    assert_string_equal(e->rule, rule);
    assert_int_equal(e->offset, at);
}

static void test_tensor_cap(void **state)
{
    (void)state;
    const char *hdr = "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
                      "\"__metadata__\":{},"
                      "\"c\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf_open_opts o = st_opts(0);
    stf_err e;
    o.max_tensors = 3;
    stf__header *h = parse_ok(&b, &o);
    assert_int_equal(h->ntensors, 3);
    stf__header_free(h);
    o.max_tensors = 2;
    cap_fails(&b, &o, "L2", st_at(hdr, "\"c\""), &e);
    st_bytes_free(&b);
}

static void test_rank_cap(void **state)
{
    (void)state;
    const char *r8 = "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,2],\"data_offsets\":[0,2]}}";
    const char *r9 = "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(r8, 2);
    stf__header *h = st_ok_lenient(&b, 0, NULL);
    assert_int_equal(h->tensors[0].rank, 8);
    assert_int_equal(h->tensors[0].shape[7], 2);
    stf__header_free(h);
    st_bytes_free(&b);
    st_bytes c = st_bytes_simple(r9, 2);
    st_fails(&c, STF_ELIMIT, "L3", st_at(r9, "2]"));
    /* The cap is configurable up to STF_MAX_RANK_HARD. */
    stf_open_opts o = st_opts(0);
    o.max_rank = 1000;
    h = parse_ok(&c, &o);
    assert_int_equal(h->tensors[0].rank, 9);
    stf__header_free(h);
    st_bytes_free(&c);
}

static void test_name_cap(void **state)
{
    (void)state;
    const char *hdr = "{\"abcd\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
                      "\"ab\\u0063de\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf_open_opts o = st_opts(0);
    stf_err e;
    o.max_name = 5;
    stf__header_free(parse_ok(&b, &o));
    o.max_name = 4; /* counted after unescaping: "abcde" is 5 */
    cap_fails(&b, &o, "L4", st_at(hdr, "\"ab\\"), &e);
    st_bytes_free(&b);
    /* Far over the cap: refused from the raw length (30 bytes >= 6 x (4 + 1)). */
    const char *lng = "{\"abcdefghijklmnopqrstuvwxyzABCD\":{\"dtype\":\"U8\",\"shape\":[0],"
                      "\"data_offsets\":[0,0]}}";
    st_bytes c = st_bytes_simple(lng, 0);
    cap_fails(&c, &o, "L4", 9, &e);
    assert_non_null(strstr(e.msg, "30 raw bytes"));
    st_bytes_free(&c);
}

static void test_meta_cap_and_depth(void **state)
{
    (void)state;
    const char *hdr = "{\"__metadata__\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf_open_opts o = st_opts(0);
    stf_err e;
    o.max_meta_entries = 3;
    stf__header *h = parse_ok(&b, &o);
    assert_int_equal(h->nmeta, 3);
    stf__header_free(h);
    o.max_meta_entries = 2;
    cap_fails(&b, &o, "L5", st_at(hdr, "\"c\""), &e);
    st_bytes_free(&b);

    const char *deep = "{\"t\":{\"x\":[[]]}}";
    st_bytes c = st_bytes_simple(deep, 0);
    st_fails(&c, STF_ELIMIT, "L6", st_at(deep, "[]"));
    st_bytes_free(&c);
}

static void test_message_shape(void **state)
{
    (void)state;
    const char *hdr = "{\"blocks.0.w\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[32,48]}}";
    st_bytes b = st_bytes_simple(hdr, 48);
    stf_err e;
    stf__header *h;
    assert_int_equal(st_bytes_parse(&h, &b, 0, NULL, NULL, &e), STF_EFORMAT);
    char want[200];
    snprintf(want, sizeof want,
             "t.safetensors: S15 InvalidOffset: tensor 'blocks.0.w' (byte %llu): "
             "data_offsets [32,48] do not start at 0",
             (unsigned long long)st_at(hdr, "[32"));
    assert_string_equal(e.msg, want);
    st_bytes_free(&b);
}

static void test_many_warnings_are_capped(void **state)
{
    (void)state;
    /* 1002 unknown fields: 1000 listed, then one summary. */
    size_t cap = 64 + 1002 * 16, o = 0;
    char *hdr = malloc(cap);
    assert_non_null(hdr);
    o += (size_t)snprintf(hdr + o, cap - o, "{\"t\":{\"dtype\":\"U8\",\"shape\":[],");
    for (int i = 0; i < 1002; i++) o += (size_t)snprintf(hdr + o, cap - o, "\"x%d\":0,", i);
    o += (size_t)snprintf(hdr + o, cap - o, "\"data_offsets\":[0,1]}}");
    st_bytes b = st_bytes_simple(hdr, 1);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 1001);
    assert_string_equal(f.v[999].rule, "S9");
    assert_int_equal(f.v[999].offset, st_at(hdr, "\"x999\""));
    assert_string_equal(f.v[1000].rule, "S9");
    assert_int_equal(f.v[1000].has_offset, 0);
    assert_string_equal(f.v[1000].message, "t.safetensors: S9 UnknownField: 2 more findings like "
                                           "this were not listed");
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
    free(hdr);
}

/* ------------------------------------------------------------ allocation */

static void test_allocation_failures(void **state)
{
    (void)state;
    /* Touches every allocating path: metadata with a duplicate, several
     * tensors with a duplicate and shapes, and warnings into findings. */
    const char *hdr = "\n{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\",\"f\":\"pt\"},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16],\"x\":0},"
                      "\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[16,16]},"
                      "\"c\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[16,19]},"
                      "\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[16,20]}}";
    st_bytes b = st_bytes_simple(hdr, 20);
    st_alloc_install();
    int done = 0;
    long k;
    for (k = 0; k < 1000 && !done; k++) {
        stf__findings f;
        stf__header *h = NULL;
        stf_err e;
        stf__findings_init(&f);
        st_alloc_arm(k + 1);
        int rc = st_bytes_parse(&h, &b, 0, NULL, &f, &e);
        st_alloc_disarm();
        if (rc == 0) {
            done = 1;
            assert_int_equal(h->ntensors, 3);
            assert_int_equal(h->nmeta, 2);
            assert_string_equal(h->meta[0].value, "2");
            assert_int_equal(f.n, 5); /* S7, S9, S13 (meta), S13 (tensor), S20 */
        } else {
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(h);
        }
        stf__header_free(h);
        stf__findings_free(&f);
        assert_int_equal(st_alloc_live(), 0);
    }
    st_alloc_uninstall();
    assert_true(done);
    assert_true(k > 5); /* the loop really failed some allocations first */
    st_bytes_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_shapes_allowed),
        cmocka_unit_test(test_deserialization),
        cmocka_unit_test(test_zero_sized_tensor),
        cmocka_unit_test(test_whitespace_padded_header),
        cmocka_unit_test(test_whitespace_leading_padded_header),
        cmocka_unit_test(test_invalid_info),
        cmocka_unit_test(test_metadata_incomplete_buffer),
        cmocka_unit_test(test_header_too_large),
        cmocka_unit_test(test_header_too_small),
        cmocka_unit_test(test_invalid_header_length),
        cmocka_unit_test(test_invalid_header_non_utf8),
        cmocka_unit_test(test_invalid_header_not_json),
        cmocka_unit_test(test_validation_overflow),
        cmocka_unit_test(test_json_attack),
        cmocka_unit_test(test_frame_boundary),
        cmocka_unit_test(test_tensor_cap),
        cmocka_unit_test(test_rank_cap),
        cmocka_unit_test(test_name_cap),
        cmocka_unit_test(test_meta_cap_and_depth),
        cmocka_unit_test(test_message_shape),
        cmocka_unit_test(test_many_warnings_are_capped),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
