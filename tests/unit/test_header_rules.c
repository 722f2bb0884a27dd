/*
 * Tests for lib/container/header.c, part 2: one hand-built fixture per
 * STRICT rule (stfix-checks(7), CONTAINER RULES) and the content rules S8-S14
 * around them. Part 1 (the reference's reader fixtures, caps, allocation
 * failure) is test_header.c.
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
#include "support/st_expect.h"

/* ----------------------------------------------- stfix-only fixtures */

static void test_bom(void **state)
{
    (void)state;
    st_bytes b = st_bytes_simple("\xef\xbb\xbf{}", 0);
    st_fails(&b, STF_EFORMAT, "S5", 8);
    st_bytes_free(&b);
}

static void test_shape_not_plain_integer(void **state)
{
    (void)state;
    static const char *const bad[] = { "01", "1.0", "1e0", "-1", "18446744073709551616",
                                       "\"1\"", "true", "null", "[1]" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char hdr[200];
        snprintf(hdr, sizeof hdr, "{\"t\":{\"dtype\":\"U8\",\"shape\":[%s],\"data_offsets\":[0,1]}}",
                 bad[i]);
        st_bytes b = st_bytes_simple(hdr, 1);
        if (strcmp(bad[i], "[1]") == 0) st_fails(&b, STF_ELIMIT, "L6", st_at(hdr, "[1]]"));
        else st_fails(&b, STF_EFORMAT, "S11", st_at(hdr, bad[i]));
        st_bytes_free(&b);
    }
    /* A non-array shape, and data_offsets with 1 or 3 values. */
    static const char *const hdrs[] = {
        "{\"t\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1]}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,01]}}",
    };
    static const char *const where[] = { "1,", "]}", "2]", "01]" };
    for (size_t i = 0; i < 4; i++) {
        st_bytes b = st_bytes_simple(hdrs[i], 1);
        st_fails(&b, STF_EFORMAT, "S11", st_at(hdrs[i], where[i]));
        st_bytes_free(&b);
    }
}

/* The reference refuses -0 in every mode: serde_json reads it as the float
 * -0.0, where a usize is expected. */
static void test_negative_zero(void **state)
{
    (void)state;
    static const char *const hdrs[] = {
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[-0],\"data_offsets\":[0,0]}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[-0,0]}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,-0]}}",
    };
    static const char *const field[] = { "shape", "data_offsets", "data_offsets" };
    for (size_t i = 0; i < 3; i++) {
        st_bytes b = st_bytes_simple(hdrs[i], 0);
        st_fails(&b, STF_EFORMAT, "S11", st_at(hdrs[i], "-0"));
        stf__header *h = NULL;
        stf_open_opts o = st_opts(0);
        stf_err e;
        stf_err_clear(&e);
        assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), STF_EFORMAT);
        assert_null(h);
        char msg[256];
        snprintf(msg, sizeof msg,
                 "t.safetensors: S11 InvalidHeaderDeserialization: tensor 't' (byte %llu): %s "
                 "value '-0' is negative zero, a float to the reference reader",
                 (unsigned long long)st_at(hdrs[i], "-0"), field[i]);
        assert_string_equal(e.msg, msg);
        st_bytes_free(&b);
    }
}

static void test_value_above_2_48(void **state)
{
    (void)state;
    /* 2^48 one-byte elements: the geometry holds when the file is 2^48
     * bytes of data long, which only the file size claims. */
    const char *hdr = "{\"t\":{\"dtype\":\"U8\",\"shape\":[65536,65536,65536],"
                      "\"data_offsets\":[0,281474976710656]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    uint64_t fs = b.len + (UINT64_C(1) << 48);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, fs, "S12", st_at(hdr, "281474976710656"), "t", &f);
    assert_int_equal(h->tensors[0].end, UINT64_C(281474976710656));
    assert_int_equal(h->tensors[0].nelem, UINT64_C(281474976710656));
    assert_int_equal(h->data_size, UINT64_C(281474976710656));
    stf__header_free(h);
    stf__findings_free(&f);
    /* 2^48 - 1 is the largest accepted value. */
    const char *ok = "{\"t\":{\"dtype\":\"U8\",\"shape\":[281474976710655],"
                     "\"data_offsets\":[0,281474976710655]}}";
    st_bytes c = st_bytes_simple(ok, 0);
    stf_open_opts o = st_opts(1);
    stf_err e;
    assert_int_equal(st_bytes_parse(&h, &c, c.len + (UINT64_C(1) << 48) - 1, &o, NULL, &e), 0);
    stf__header_free(h);
    st_bytes_free(&c);
    st_bytes_free(&b);
}

static void test_duplicate_tensor_same_offsets(void **state)
{
    (void)state;
    const char *hdr = "{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    st_bytes b = st_bytes_simple(hdr, 4);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, 0, "S13", st_at(hdr, ",\"w\"") + 1, "w", &f);
    /* The reference keeps the last one. */
    static const uint64_t shape[] = { 1 };
    assert_int_equal(h->ntensors, 1);
    st_tensor_is(&h->tensors[0], "w", STF_F32, 1, shape, 0, 4, st_at(hdr, ",\"w\"") + 1);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_duplicate_tensor_other_offsets(void **state)
{
    (void)state;
    /* Keep-last leaves a hole at [0,4): the reference's misleading
     * InvalidOffset, in both modes. */
    const char *hdr = "{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}";
    st_bytes b = st_bytes_simple(hdr, 8);
    st_fails(&b, STF_EFORMAT, "S15", st_at(hdr, "[4,8]"));
    st_bytes_free(&b);
}

static void test_raw_newline_in_name(void **state)
{
    (void)state;
    const char *hdr = "{\"a\nb\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    st_fails(&b, STF_EFORMAT, "S5", st_at(hdr, "\n"));
    st_bytes_free(&b);
}

static void test_nul_escape_in_name(void **state)
{
    (void)state;
    const char *hdr = "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, 0, "S14", 9, "a", &f);
    assert_int_equal(h->tensors[0].name_len, 3);
    assert_memory_equal(h->tensors[0].name, "a\0b", 4);
    assert_non_null(strstr(f.v[0].message, "tensor 'a\\u0000b' (byte 9)"));
    assert_int_equal(f.v[0].tensor_len, 3);
    assert_memory_equal(f.v[0].tensor, "a\0b", 4);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_name_rules(void **state)
{
    (void)state;
    /* Empty, escaped control, DEL, C1 control (U+0085). */
    static const char *const names[] = { "", "a\\nb", "a\x7f", "a\xc2\x85" };
    for (size_t i = 0; i < 4; i++) {
        char hdr[200];
        snprintf(hdr, sizeof hdr,
                 "{\"%s\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", names[i]);
        st_bytes b = st_bytes_simple(hdr, 0);
        st_fails_mode(&b, 0, 1, STF_EFORMAT, "S14", 9);
        stf__findings f;
        stf__findings_init(&f);
        stf__header_free(st_ok_lenient(&b, 0, &f));
        assert_int_equal(f.n, 1);
        assert_string_equal(f.v[0].rule, "S14");
        stf__findings_free(&f);
        st_bytes_free(&b);
    }
    /* Non-ASCII names are fine. */
    const char *hdr = "{\"\xc3\xa9\\u00e9\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 0);
    assert_string_equal(h->tensors[0].name, "\xc3\xa9\xc3\xa9");
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_metadata_null(void **state)
{
    (void)state;
    const char *hdr = "{\"__metadata__\":null}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, 0, "S8", st_at(hdr, "null"), NULL, &f);
    assert_int_equal(h->has_meta, 0);
    assert_int_equal(h->nmeta, 0);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_metadata_not_strings(void **state)
{
    (void)state;
    static const char *const hdrs[] = {
        "{\"__metadata__\":{\"format\":1}}",
        "{\"__metadata__\":{\"format\":{\"a\":\"b\"}}}",
        "{\"__metadata__\":[\"pt\"]}",
        "{\"__metadata__\":\"pt\"}",
    };
    static const char *const where[] = { "1}", "{\"a\"", "[", "\"pt\"" };
    for (size_t i = 0; i < 4; i++) {
        st_bytes b = st_bytes_simple(hdrs[i], 0);
        st_fails(&b, STF_EFORMAT, "S8", st_at(hdrs[i], where[i]));
        st_bytes_free(&b);
    }
}

static void test_metadata_entries(void **state)
{
    (void)state;
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\",\"b\\n\":\"x\\\"\\u00e9\\ud83d\\ude00\","
                      "\"a\":\"\"},\"t\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(hdr, 2);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 0);
    assert_int_equal(h->has_meta, 1);
    assert_int_equal(h->nmeta, 3);
    assert_string_equal(h->meta[0].key, "format");
    assert_string_equal(h->meta[0].value, "pt");
    assert_int_equal(h->meta[1].key_len, 2);
    assert_string_equal(h->meta[1].key, "b\n");
    assert_string_equal(h->meta[1].value, "x\"\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(h->meta[1].value_len, 8);
    assert_string_equal(h->meta[2].key, "a");
    assert_int_equal(h->meta[2].value_len, 0);
    assert_string_equal(h->meta[2].value, "");
    assert_int_equal(h->ntensors, 1);
    assert_int_equal(h->tensors[0].dtype, STF_BF16);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);

    /* An empty object still counts as present; an escaped key still is
     * __metadata__ to serde. */
    st_bytes c = st_bytes_simple("{\"\\u005f_metadata__\":{}}", 0);
    stf__findings_init(&f);
    h = st_ok_lenient(&c, 0, &f);
    assert_int_equal(h->has_meta, 1);
    assert_int_equal(h->nmeta, 0);
    assert_int_equal(h->ntensors, 0);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&c);
}

static void test_metadata_duplicates(void **state)
{
    (void)state;
    const char *hdr = "{\"__metadata__\":{\"k\":\"1\",\"j\":\"2\",\"k\":\"3\"}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, 0, "S13", st_at(hdr, "\"k\":\"3"), NULL, &f);
    assert_int_equal(h->nmeta, 2);
    assert_string_equal(h->meta[0].key, "k");
    assert_string_equal(h->meta[0].value, "3");
    assert_string_equal(h->meta[1].key, "j");
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
    /* A second __metadata__ is refused by serde's derived struct. */
    const char *two = "{\"__metadata__\":{},\"__metadata__\":{}}";
    st_bytes c = st_bytes_simple(two, 0);
    st_fails(&c, STF_EFORMAT, "S13", st_at(two, ",") + 1);
    st_bytes_free(&c);
}

static void test_extra_field(void **state)
{
    (void)state;
    const char *hdr = "{\"t\":{\"dtype\":\"U8\",\"crc\":1,\"shape\":[2],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(hdr, 2);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = st_strict_only(&b, 0, "S9", st_at(hdr, "\"crc\""), "t", &f);
    assert_int_equal(h->tensors[0].nbytes, 2);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
    /* serde still parses an ignored value: a leading zero in it is S5. */
    const char *lz = "{\"t\":{\"dtype\":\"U8\",\"crc\":[01],\"shape\":[2],\"data_offsets\":[0,2]}}";
    st_bytes c = st_bytes_simple(lz, 2);
    st_fails_mode(&c, 0, 0, STF_EFORMAT, "S5", st_at(lz, "01"));
    st_bytes_free(&c);
}

static void test_missing_and_duplicate_fields(void **state)
{
    (void)state;
    static const char *const hdrs[] = {
        "{\"t\":{\"shape\":[2],\"data_offsets\":[0,2]}}",
        "{\"t\":{\"dtype\":\"U8\",\"data_offsets\":[0,2]}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[2]}}",
        "{\"t\":{}}",
        "{\"t\":{\"dtype\":\"U8\",\"shape\":[2],\"shape\":[2],\"data_offsets\":[0,2]}}",
        "{\"t\":[]}",
        "{\"t\":{\"dtype\":\"U8\",\"sh\\u0061pe\":[2],\"shape\":[2],\"data_offsets\":[0,2]}}",
    };
    static const char *const why[] = { "missing field `dtype`", "missing field `shape`",
                                       "missing field `data_offsets`", "missing field `dtype`",
                                       "duplicate field `shape`", "not a tensor object",
                                       "duplicate field `shape`" };
    for (size_t i = 0; i < sizeof hdrs / sizeof *hdrs; i++) {
        st_bytes b = st_bytes_simple(hdrs[i], 2);
        stf_err e;
        stf__header *h;
        assert_int_equal(st_bytes_parse(&h, &b, 0, NULL, NULL, &e), STF_EFORMAT);
        assert_string_equal(e.rule, "S9");
        assert_non_null(strstr(e.msg, why[i]));
        st_bytes_free(&b);
    }
}

static void test_dtype_names(void **state)
{
    (void)state;
    static const char *const bad[] = { "f32", "F32 ", "", "FP32", "\\u0046\\u0033" };
    for (size_t i = 0; i < 5; i++) {
        char hdr[200];
        snprintf(hdr, sizeof hdr, "{\"t\":{\"dtype\":\"%s\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                 bad[i]);
        st_bytes b = st_bytes_simple(hdr, 4);
        st_fails(&b, STF_EFORMAT, "S10", st_at(hdr, "\"dtype\":") + 8);
        st_bytes_free(&b);
    }
    const char *num = "{\"t\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}";
    st_bytes c = st_bytes_simple(num, 4);
    st_fails(&c, STF_EFORMAT, "S10", st_at(num, "7"));
    st_bytes_free(&c);
    /* Escapes are resolved before the lookup, as serde does. */
    const char *esc = "{\"t\":{\"dtype\":\"F\\u00332\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    st_bytes d = st_bytes_simple(esc, 4);
    stf__header *h = st_ok_lenient(&d, 0, NULL);
    assert_int_equal(h->tensors[0].dtype, STF_F32);
    stf__header_free(h);
    st_bytes_free(&d);
}

static void test_form_feed_before_brace(void **state)
{
    (void)state;
    st_bytes b = st_bytes_simple("\x0c{}", 0);
    st_fails(&b, STF_EFORMAT, "S5", 8);
    st_bytes_free(&b);
}

static void test_root_not_object(void **state)
{
    (void)state;
    static const char *const hdrs[] = { "[]", "\"x\"", "1", "null", " true " };
    static const uint64_t off[] = { 8, 8, 8, 8, 9 };
    for (size_t i = 0; i < 5; i++) {
        st_bytes b = st_bytes_simple(hdrs[i], 0);
        st_fails(&b, STF_EFORMAT, "S6", off[i]);
        st_bytes_free(&b);
    }
    st_bytes e = st_bytes_file(0, NULL, 0, NULL, 0);
    st_fails(&e, STF_EFORMAT, "S5", 8);
    st_bytes_free(&e);
}

static void test_f4_misaligned(void **state)
{
    (void)state;
    const char *hdr = "{\"t\":{\"dtype\":\"F4\",\"shape\":[1,3],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(hdr, 2);
    st_fails(&b, STF_EFORMAT, "S17", st_at(hdr, "[1,3]"));
    st_bytes_free(&b);
    /* [1,2] is one byte. */
    const char *ok = "{\"t\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}";
    st_bytes c = st_bytes_simple(ok, 1);
    stf__header *h = st_ok_lenient(&c, 0, NULL);
    assert_int_equal(h->tensors[0].nbytes, 1);
    assert_int_equal(h->tensors[0].nelem, 2);
    stf__header_free(h);
    st_bytes_free(&c);
}

static void test_zero_size_alias(void **state)
{
    (void)state;
    const char *hdr = "{\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 16);
    /* A warning even under --strict: not a safety problem. */
    for (int strict = 0; strict < 2; strict++) {
        stf_open_opts o = st_opts(strict);
        stf__findings f;
        stf__header *h;
        stf_err e;
        stf__findings_init(&f);
        assert_int_equal(st_bytes_parse(&h, &b, 0, &o, &f, &e), 0);
        st_one_finding(&f, "S20", st_at(hdr, "[0,0]"), "a");
        /* File order: the zero-size one sorts first. */
        assert_int_equal(h->ntensors, 2);
        assert_string_equal(h->tensors[0].name, "a");
        assert_string_equal(h->tensors[1].name, "b");
        stf__header_free(h);
        stf__findings_free(&f);
    }
    st_bytes_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bom),
        cmocka_unit_test(test_shape_not_plain_integer),
        cmocka_unit_test(test_negative_zero),
        cmocka_unit_test(test_value_above_2_48),
        cmocka_unit_test(test_duplicate_tensor_same_offsets),
        cmocka_unit_test(test_duplicate_tensor_other_offsets),
        cmocka_unit_test(test_raw_newline_in_name),
        cmocka_unit_test(test_nul_escape_in_name),
        cmocka_unit_test(test_name_rules),
        cmocka_unit_test(test_metadata_null),
        cmocka_unit_test(test_metadata_not_strings),
        cmocka_unit_test(test_metadata_entries),
        cmocka_unit_test(test_metadata_duplicates),
        cmocka_unit_test(test_extra_field),
        cmocka_unit_test(test_missing_and_duplicate_fields),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_form_feed_before_brace),
        cmocka_unit_test(test_root_not_object),
        cmocka_unit_test(test_f4_misaligned),
        cmocka_unit_test(test_zero_size_alias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
