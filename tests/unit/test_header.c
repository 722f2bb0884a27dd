/*
 * Tests for lib/container/header.c: framing (S1-S3), the golden reader
 * fixtures of spec/safetensors.md §9.2 and §9.3 built byte by byte, the
 * resource caps (L1-L6), and allocation failure at every step.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "container/st_internal.h"
#include "support/st_bytes.h"

static stf_open_opts opts(int strict)
{
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.strict = strict;
    return o;
}

/* Parse in one mode, expecting failure with code/rule/offset. */
static void fails_mode(const st_bytes *b, uint64_t fs, int strict, int code, const char *rule,
                       uint64_t off)
{
    stf_open_opts o = opts(strict);
    stf__header *h = (stf__header *)1;
    stf__findings f;
    stf_err e;
    stf__findings_init(&f);
    stf_err_clear(&e);
    int rc = st_bytes_parse(&h, b, fs, &o, &f, &e);
    assert_int_equal(rc, code);
    assert_int_equal(e.code, code);
    assert_string_equal(e.rule, rule);
    assert_int_equal(e.has_offset, 1);
    assert_int_equal(e.offset, off);
    assert_null(h);
    /* Every message starts with the path, then the rule id. */
    assert_int_equal(strncmp(e.msg, "t.safetensors: ", 15), 0);
    assert_int_equal(strncmp(e.msg + 15, rule, strlen(rule)), 0);
    stf__findings_free(&f);
}

/* A REF failure: the same verdict with and without --strict. */
static void fails(const st_bytes *b, int code, const char *rule, uint64_t off)
{
    fails_mode(b, 0, 0, code, rule, off);
    fails_mode(b, 0, 1, code, rule, off);
}

/* Parse leniently, expecting success; returns the header, fills f. */
static stf__header *ok_lenient(const st_bytes *b, uint64_t fs, stf__findings *f)
{
    stf_open_opts o = opts(0);
    stf__header *h = NULL;
    stf_err e;
    stf_err_clear(&e);
    int rc = st_bytes_parse(&h, b, fs, &o, f, &e);
    if (rc) fail_msg("unexpected failure %d: %s", rc, e.msg);
    assert_non_null(h);
    return h;
}

/* Expect exactly one finding, with this rule, offset and tensor. */
static void one_finding(const stf__findings *f, const char *rule, uint64_t off, const char *tensor)
{
    assert_int_equal(f->n, 1);
    assert_string_equal(f->v[0].rule, rule);
    assert_int_equal(f->v[0].severity, STF_SEV_WARNING);
    assert_int_equal(f->v[0].has_offset, 1);
    assert_int_equal(f->v[0].offset, off);
    assert_string_equal(f->v[0].path, "t.safetensors");
    if (tensor) assert_string_equal(f->v[0].tensor, tensor);
    else assert_null(f->v[0].tensor);
}

/* A STRICT rule: error under strict, success plus one warning otherwise. */
static stf__header *strict_only(const st_bytes *b, uint64_t fs, const char *rule, uint64_t off,
                                const char *tensor, stf__findings *f)
{
    fails_mode(b, fs, 1, STF_EFORMAT, rule, off);
    stf__header *h = ok_lenient(b, fs, f);
    one_finding(f, rule, off, tensor);
    return h;
}

static void tensor_is(const stf_tensor_info *t, const char *name, stf_dtype dt, unsigned rank,
                      const uint64_t *shape, uint64_t begin, uint64_t end, uint64_t hoff)
{
    assert_string_equal(t->name, name);
    assert_int_equal(t->name_len, strlen(name));
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    uint64_t nelem = 1;
    for (unsigned i = 0; i < rank; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        nelem *= shape[i];
    }
    if (rank == 0) assert_null(t->shape);
    assert_int_equal(t->nelem, nelem);
    assert_int_equal(t->begin, begin);
    assert_int_equal(t->end, end);
    assert_int_equal(t->nbytes, end - begin);
    assert_int_equal(t->header_offset, hoff);
    assert_int_equal(t->shard, 0);
}

/* Absolute file offset of the first occurrence of `needle` in the header. */
static uint64_t at(const char *hdr, const char *needle)
{
    const char *p = strstr(hdr, needle);
    assert_non_null(p);
    return (uint64_t)(p - hdr) + 8;
}

#define DESER "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}"

/* ------------------------------------------------------------ §9.2 */

static void test_empty_shapes_allowed(void **state)
{
    (void)state;
    const char *hdr = "{\"test\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    assert_int_equal(strlen(hdr), 56);
    st_bytes b = st_bytes_simple(hdr, 4);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 0);
    assert_int_equal(h->n, 56);
    assert_int_equal(h->data_size, 4);
    assert_int_equal(h->ntensors, 1);
    assert_int_equal(h->has_meta, 0);
    assert_int_equal(h->nmeta, 0);
    tensor_is(&h->tensors[0], "test", STF_I32, 0, NULL, 0, 4, 9);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_deserialization(void **state)
{
    (void)state;
    static const uint64_t shape[] = { 2, 2 };
    assert_int_equal(strlen(DESER), 60);
    st_bytes b = st_bytes_simple(DESER, 16);
    assert_int_equal(b.p[0], '<');
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 0);
    assert_int_equal(h->ntensors, 1);
    assert_int_equal(h->data_size, 16);
    tensor_is(&h->tensors[0], "test", STF_I32, 2, shape, 0, 16, 9);
    stf__header_free(h);
    /* Strict mode accepts it too: nothing STRICT is violated. */
    stf_open_opts o = opts(1);
    stf_err e;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), 0);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_zero_sized_tensor(void **state)
{
    (void)state;
    static const uint64_t shape[] = { 2, 0 };
    const char *hdr = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}";
    assert_int_equal(strlen(hdr), 60);
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 0);
    assert_int_equal(h->data_size, 0);
    tensor_is(&h->tensors[0], "test", STF_I32, 2, shape, 0, 0, 9);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_whitespace_padded_header(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(6, "{}\r \t\n", 6, NULL, 0);
    assert_int_equal(b.len, 14);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 0);
    assert_int_equal(h->ntensors, 0);
    assert_null(h->tensors);
    assert_int_equal(h->data_size, 0);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
}

static void test_whitespace_leading_padded_header(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(6, "\t\n{}\r ", 6, NULL, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = strict_only(&b, 0, "S7", 8, NULL, &f);
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
    fails(&b, STF_EFORMAT, "S18", at(hdr, "[0, 4]"));
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
    fails(&a, STF_EFORMAT, "S19", 68);
    st_bytes_free(&a);
    st_bytes b = st_bytes_file(60, DESER, 60, NULL, 14);
    fails(&b, STF_EFORMAT, "S19", 68);
    st_bytes_free(&b);
}

static void test_header_too_large(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(0, DESER, 60, NULL, 16);
    static const uint8_t n[8] = { 0x3c, 0, 0, 0, 0, 0xff, 0xff, 0xff };
    memcpy(b.p, n, 8);
    fails(&b, STF_EFORMAT, "S2", 0);
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
    fails(&b, STF_EFORMAT, "S3", 0);
    st_bytes_free(&b);
}

static void test_invalid_header_non_utf8(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(1, "\xff", 1, NULL, 0);
    fails(&b, STF_EFORMAT, "S4", 8);
    st_bytes_free(&b);
}

static void test_invalid_header_not_json(void **state)
{
    (void)state;
    st_bytes b = st_bytes_file(1, "{", 1, NULL, 0);
    fails(&b, STF_EFORMAT, "S5", 9);
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
        fails(&b, STF_EFORMAT, "S16", 39);
        stf_open_opts o = opts(0);
        stf__findings f;
        stf__header *h;
        stf_err e;
        stf__findings_init(&f);
        assert_int_equal(st_bytes_parse(&h, &b, 0, &o, &f, &e), STF_EFORMAT);
        assert_string_equal(e.rule, "S16");
        one_finding(&f, "S12", 42, "test");
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

/* ------------------------------------------------------------ §9.3 */

static void test_bom(void **state)
{
    (void)state;
    st_bytes b = st_bytes_simple("\xef\xbb\xbf{}", 0);
    fails(&b, STF_EFORMAT, "S5", 8);
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
        if (strcmp(bad[i], "[1]") == 0) fails(&b, STF_ELIMIT, "L6", at(hdr, "[1]]"));
        else fails(&b, STF_EFORMAT, "S11", at(hdr, bad[i]));
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
        fails(&b, STF_EFORMAT, "S11", at(hdrs[i], where[i]));
        st_bytes_free(&b);
    }
}

static void test_negative_zero(void **state)
{
    (void)state;
    const char *hdr = "{\"t\":{\"dtype\":\"U8\",\"shape\":[-0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = strict_only(&b, 0, "S11", at(hdr, "-0"), "t", &f);
    static const uint64_t shape[] = { 0 };
    tensor_is(&h->tensors[0], "t", STF_U8, 1, shape, 0, 0, 9);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
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
    stf__header *h = strict_only(&b, fs, "S12", at(hdr, "281474976710656"), "t", &f);
    assert_int_equal(h->tensors[0].end, UINT64_C(281474976710656));
    assert_int_equal(h->tensors[0].nelem, UINT64_C(281474976710656));
    assert_int_equal(h->data_size, UINT64_C(281474976710656));
    stf__header_free(h);
    stf__findings_free(&f);
    /* 2^48 - 1 is the largest accepted value. */
    const char *ok = "{\"t\":{\"dtype\":\"U8\",\"shape\":[281474976710655],"
                     "\"data_offsets\":[0,281474976710655]}}";
    st_bytes c = st_bytes_simple(ok, 0);
    stf_open_opts o = opts(1);
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
    stf__header *h = strict_only(&b, 0, "S13", at(hdr, ",\"w\"") + 1, "w", &f);
    /* The reference keeps the last one. */
    static const uint64_t shape[] = { 1 };
    assert_int_equal(h->ntensors, 1);
    tensor_is(&h->tensors[0], "w", STF_F32, 1, shape, 0, 4, at(hdr, ",\"w\"") + 1);
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
    fails(&b, STF_EFORMAT, "S15", at(hdr, "[4,8]"));
    st_bytes_free(&b);
}

static void test_raw_newline_in_name(void **state)
{
    (void)state;
    const char *hdr = "{\"a\nb\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    fails(&b, STF_EFORMAT, "S5", at(hdr, "\n"));
    st_bytes_free(&b);
}

static void test_nul_escape_in_name(void **state)
{
    (void)state;
    const char *hdr = "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = strict_only(&b, 0, "S14", 9, "a", &f);
    assert_int_equal(h->tensors[0].name_len, 3);
    assert_memory_equal(h->tensors[0].name, "a\0b", 4);
    assert_non_null(strstr(f.v[0].message, "tensor 'a\\x00b' (byte 9)"));
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
        fails_mode(&b, 0, 1, STF_EFORMAT, "S14", 9);
        stf__findings f;
        stf__findings_init(&f);
        stf__header_free(ok_lenient(&b, 0, &f));
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
    stf__header *h = ok_lenient(&b, 0, &f);
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
    stf__header *h = strict_only(&b, 0, "S8", at(hdr, "null"), NULL, &f);
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
        fails(&b, STF_EFORMAT, "S8", at(hdrs[i], where[i]));
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
    stf__header *h = ok_lenient(&b, 0, &f);
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
    h = ok_lenient(&c, 0, &f);
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
    stf__header *h = strict_only(&b, 0, "S13", at(hdr, "\"k\":\"3"), NULL, &f);
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
    fails(&c, STF_EFORMAT, "S13", at(two, ",") + 1);
    st_bytes_free(&c);
}

static void test_extra_field(void **state)
{
    (void)state;
    const char *hdr = "{\"t\":{\"dtype\":\"U8\",\"crc\":1,\"shape\":[2],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(hdr, 2);
    stf__findings f;
    stf__findings_init(&f);
    stf__header *h = strict_only(&b, 0, "S9", at(hdr, "\"crc\""), "t", &f);
    assert_int_equal(h->tensors[0].nbytes, 2);
    stf__header_free(h);
    stf__findings_free(&f);
    st_bytes_free(&b);
    /* serde still parses an ignored value: a leading zero in it is S5. */
    const char *lz = "{\"t\":{\"dtype\":\"U8\",\"crc\":[01],\"shape\":[2],\"data_offsets\":[0,2]}}";
    st_bytes c = st_bytes_simple(lz, 2);
    fails_mode(&c, 0, 0, STF_EFORMAT, "S5", at(lz, "01"));
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
        fails(&b, STF_EFORMAT, "S10", at(hdr, "\"dtype\":") + 8);
        st_bytes_free(&b);
    }
    const char *num = "{\"t\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}";
    st_bytes c = st_bytes_simple(num, 4);
    fails(&c, STF_EFORMAT, "S10", at(num, "7"));
    st_bytes_free(&c);
    /* Escapes are resolved before the lookup, as serde does. */
    const char *esc = "{\"t\":{\"dtype\":\"F\\u00332\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    st_bytes d = st_bytes_simple(esc, 4);
    stf__header *h = ok_lenient(&d, 0, NULL);
    assert_int_equal(h->tensors[0].dtype, STF_F32);
    stf__header_free(h);
    st_bytes_free(&d);
}

static void test_form_feed_before_brace(void **state)
{
    (void)state;
    st_bytes b = st_bytes_simple("\x0c{}", 0);
    fails(&b, STF_EFORMAT, "S5", 8);
    st_bytes_free(&b);
}

static void test_root_not_object(void **state)
{
    (void)state;
    static const char *const hdrs[] = { "[]", "\"x\"", "1", "null", " true " };
    static const uint64_t off[] = { 8, 8, 8, 8, 9 };
    for (size_t i = 0; i < 5; i++) {
        st_bytes b = st_bytes_simple(hdrs[i], 0);
        fails(&b, STF_EFORMAT, "S6", off[i]);
        st_bytes_free(&b);
    }
    st_bytes e = st_bytes_file(0, NULL, 0, NULL, 0);
    fails(&e, STF_EFORMAT, "S5", 8);
    st_bytes_free(&e);
}

static void test_f4_misaligned(void **state)
{
    (void)state;
    const char *hdr = "{\"t\":{\"dtype\":\"F4\",\"shape\":[1,3],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(hdr, 2);
    fails(&b, STF_EFORMAT, "S17", at(hdr, "[1,3]"));
    st_bytes_free(&b);
    /* [1,2] is one byte. */
    const char *ok = "{\"t\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}";
    st_bytes c = st_bytes_simple(ok, 1);
    stf__header *h = ok_lenient(&c, 0, NULL);
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
        stf_open_opts o = opts(strict);
        stf__findings f;
        stf__header *h;
        stf_err e;
        stf__findings_init(&f);
        assert_int_equal(st_bytes_parse(&h, &b, 0, &o, &f, &e), 0);
        one_finding(&f, "S20", at(hdr, "[0,0]"), "a");
        /* File order: the zero-size one sorts first. */
        assert_int_equal(h->ntensors, 2);
        assert_string_equal(h->tensors[0].name, "a");
        assert_string_equal(h->tensors[1].name, "b");
        stf__header_free(h);
        stf__findings_free(&f);
    }
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
    stf_open_opts o = opts(0);
    o.max_header = 1000;
    for (int i = 0; i < 8; i++) first[i] = (uint8_t)(UINT64_C(1001) >> (8 * i));
    assert_int_equal(stf__frame_check(&n, first, 2000, "t.safetensors", &o, &e), STF_ELIMIT);
    assert_string_equal(e.rule, "L1");
    assert_int_equal(stf__frame_check(&n, first, 1000, "t.safetensors", &o, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S3");
}

static void test_tensor_cap(void **state)
{
    (void)state;
    const char *hdr = "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
                      "\"__metadata__\":{},"
                      "\"c\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf_open_opts o = opts(0);
    stf__header *h;
    stf_err e;
    o.max_tensors = 3;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), 0);
    assert_int_equal(h->ntensors, 3);
    stf__header_free(h);
    o.max_tensors = 2;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), STF_ELIMIT);
    assert_string_equal(e.rule, "L2");
    assert_int_equal(e.offset, at(hdr, "\"c\""));
    st_bytes_free(&b);
}

static void test_rank_cap(void **state)
{
    (void)state;
    const char *r8 = "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,2],\"data_offsets\":[0,2]}}";
    const char *r9 = "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,2]}}";
    st_bytes b = st_bytes_simple(r8, 2);
    stf__header *h = ok_lenient(&b, 0, NULL);
    assert_int_equal(h->tensors[0].rank, 8);
    assert_int_equal(h->tensors[0].shape[7], 2);
    stf__header_free(h);
    st_bytes_free(&b);
    st_bytes c = st_bytes_simple(r9, 2);
    fails(&c, STF_ELIMIT, "L3", at(r9, "2]"));
    /* The cap is configurable up to STF_MAX_RANK_HARD. */
    stf_open_opts o = opts(0);
    stf_err e;
    o.max_rank = 1000;
    assert_int_equal(st_bytes_parse(&h, &c, 0, &o, NULL, &e), 0);
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
    stf_open_opts o = opts(0);
    stf__header *h;
    stf_err e;
    o.max_name = 5;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), 0);
    stf__header_free(h);
    o.max_name = 4; /* counted after unescaping: "abcde" is 5 */
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), STF_ELIMIT);
    assert_string_equal(e.rule, "L4");
    assert_int_equal(e.offset, at(hdr, "\"ab\\"));
    st_bytes_free(&b);
}

static void test_meta_cap_and_depth(void **state)
{
    (void)state;
    const char *hdr = "{\"__metadata__\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}";
    st_bytes b = st_bytes_simple(hdr, 0);
    stf_open_opts o = opts(0);
    stf__header *h;
    stf_err e;
    o.max_meta_entries = 3;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), 0);
    assert_int_equal(h->nmeta, 3);
    stf__header_free(h);
    o.max_meta_entries = 2;
    assert_int_equal(st_bytes_parse(&h, &b, 0, &o, NULL, &e), STF_ELIMIT);
    assert_string_equal(e.rule, "L5");
    assert_int_equal(e.offset, at(hdr, "\"c\""));
    st_bytes_free(&b);

    const char *deep = "{\"t\":{\"x\":[[]]}}";
    st_bytes c = st_bytes_simple(deep, 0);
    fails(&c, STF_ELIMIT, "L6", at(deep, "[]"));
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
             (unsigned long long)at(hdr, "[32"));
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
    stf__header *h = ok_lenient(&b, 0, &f);
    assert_int_equal(f.n, 1001);
    assert_string_equal(f.v[999].rule, "S9");
    assert_int_equal(f.v[999].offset, at(hdr, "\"x999\""));
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

typedef struct fail_alloc {
    long countdown; /* fail when it reaches 0; negative: never */
    long live;
} fail_alloc;

static void *fa_realloc(void *ud, void *p, size_t n)
{
    fail_alloc *fa = ud;
    if (fa->countdown >= 0 && fa->countdown-- == 0) return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q && !p) fa->live++;
    return q;
}

static void fa_free(void *ud, void *p)
{
    fail_alloc *fa = ud;
    if (p) fa->live--;
    free(p);
}

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
    fail_alloc fa = { -1, 0 };
    stf_allocator al = { fa_realloc, fa_free, &fa };
    stf_set_allocator(&al);
    int done = 0;
    long k;
    for (k = 0; k < 1000 && !done; k++) {
        stf__findings f;
        stf__header *h = NULL;
        stf_err e;
        stf__findings_init(&f);
        fa.countdown = k;
        int rc = st_bytes_parse(&h, &b, 0, NULL, &f, &e);
        fa.countdown = -1;
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
        assert_int_equal(fa.live, 0);
    }
    stf_set_allocator(NULL);
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
