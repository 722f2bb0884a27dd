/* Tests for lib/container/canon.c: S21-S25 verdicts and findings on
 * hand-built files (stfix-checks(7), CONTAINER RULES; the reference's reader
 * fixtures) and on writer output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "container/writer_internal.h"
#include "support/st_bytes.h"

/* Padding that makes N a multiple of 8, as the canonical writer pads. */
#define AUTO ((size_t)-1)

/* A file image: le64(N) + header + `pad` spaces + dlen zero bytes; N covers
 * the header and padding. */
static unsigned char *image(const char *hdr, size_t pad, size_t dlen, size_t *len)
{
    size_t hl = strlen(hdr);
    if (pad == AUTO) pad = (8 - hl % 8) % 8;
    st_bytes b = st_bytes_padded(hdr, hl + pad, NULL, dlen);
    *len = b.len;
    return b.p;
}

/* Open the image, collect canon findings, compare the rule list (space
 * separated, in order) and the verdict. */
static void expect_rules(const char *hdr, size_t pad, size_t dlen, const char *rules)
{
    size_t len;
    unsigned char *b = image(hdr, pad, dlen, &len);
    stf_ckpt *c = NULL;
    stf_err err;
    int rc = stf_ckpt_open_mem(&c, b, len, "t.safetensors", NULL, &err);
    if (rc) fail_msg("open: %s", err.msg);
    size_t before = stf_ckpt_finding_count(c);
    assert_int_equal(stf__ckpt_canon_findings(c, &err), 0);
    char got[128] = "";
    for (size_t i = before; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        assert_int_equal(f->severity, STF_SEV_INFO);
        assert_string_equal(f->path, "t.safetensors");
        assert_true(f->has_offset);
        if (*got) strcat(got, " ");
        strcat(got, f->rule);
    }
    assert_string_equal(got, rules);
    assert_int_equal(stf_ckpt_shard_is_canonical(c, 0), *rules == '\0');
    stf_ckpt_free(c);
    free(b);
}

static void test_canonical(void **state)
{
    (void)state;
    expect_rules("{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}", 0,
                 24, "");
    expect_rules("{}", AUTO, 0, "");
    expect_rules("{\"__metadata__\":{\"framework\":\"pt\"}}", AUTO, 0, "");
    expect_rules("{\"__metadata__\":{}}", AUTO, 0, "");
    expect_rules("{\"__metadata__\":{\"a\":\"x\\u001f\\n\"},\"s\":{\"dtype\":\"I32\",\"shape\":[],"
                 "\"data_offsets\":[0,4]}}",
                 AUTO, 4, "");
}

static void test_s21(void **state)
{
    (void)state;
    /* test_deserialization: N = 60 */
    expect_rules("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 0, 16,
                 "S21");
    /* too much padding */
    expect_rules("{}", 14, 0, "S21");
}

static void test_ws_padding(void **state)
{
    (void)state;
    /* test_whitespace_padded_header: {} then 0D 20 09 0A, N = 6 */
    expect_rules("{}\r \t\n", 0, 0, "S21");
}

static void test_s22(void **state)
{
    (void)state;
    /* test_zero_sized_tensor: note the space */
    expect_rules("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}", 0, 0,
                 "S21 S22");
    expect_rules("{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"__metadata__\":{}}",
                 AUTO, 1, "S22");
    expect_rules("{\"t\":{\"shape\":[1],\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", AUTO, 1, "S22");
    /* Keys listed out of offset order (the data order itself is canonical). */
    expect_rules("{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
                 "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                 AUTO, 2, "S22");
}

static void test_s23(void **state)
{
    (void)state;
    expect_rules("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]}}",
                 AUTO, 5, "S23");
    expect_rules("{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                 "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                 AUTO, 2, "S23");
}

static void test_s24_s25(void **state)
{
    (void)state;
    expect_rules("{\"__metadata__\":{\"b\":\"1\",\"a\":\"2\"}}", AUTO, 0, "S24");
    expect_rules("{\"__metadata__\":{\"k\":\"a\\/b\"}}", AUTO, 0, "S25");
    expect_rules("{\"__metadata__\":{\"k\":\"\\u00e9\"}}", AUTO, 0, "S25");
    expect_rules("{\"__metadata__\":{\"k\":\"\\u000A\"}}", AUTO, 0, "S25");
}

static void test_finding_text(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = image("{\"__metadata__\":{\"b\":\"1\",\"a\":\"2\"}}", AUTO, 0, &len);
    stf_ckpt *c;
    stf_err err;
    assert_int_equal(stf_ckpt_open_mem(&c, b, len, "m.safetensors", NULL, &err), 0);
    size_t before = stf_ckpt_finding_count(c);
    assert_int_equal(stf__ckpt_canon_findings(c, &err), 0);
    assert_int_equal(stf_ckpt_finding_count(c), before + 1);
    const stf_finding *f = stf_ckpt_finding(c, before);
    assert_int_equal(f->offset, 9);
    assert_string_equal(f->message, "m.safetensors: S24 not canonical: __metadata__ keys are not "
                                    "sorted bytewise (byte 9)");
    stf_ckpt_free(c);
    free(b);
}

/* Writer output is canonical when read back; a file from disk is re-read. */
static void test_writer_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/stfix-canon.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    stf_writer *w;
    stf_err err;
    uint64_t s2[] = { 2 }, s0[] = { 0 };
    unsigned char d[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    stf_tensor_src m = { STF_SRC_MEM, d, NULL, 0, NULL, NULL };
    assert_int_equal(stf_writer_new(&w, path, NULL, &err), 0);
    assert_int_equal(stf_writer_add(w, "z\"\x01", STF_U8, 1, s2, &m, &err), 0);
    assert_int_equal(stf_writer_add(w, "a", STF_BF16, 1, s2, &m, &err), 0);
    assert_int_equal(stf_writer_add(w, "e", STF_F64, 1, s0, &m, &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "k/\xc3\xa9", "v\\", &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    stf_writer_free(w);
    stf_ckpt *c;
    assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
    size_t before = stf_ckpt_finding_count(c);
    assert_int_equal(stf__ckpt_canon_findings(c, &err), 0);
    assert_int_equal(stf_ckpt_finding_count(c), before);
    assert_int_equal(stf_ckpt_shard_is_canonical(c, 0), 1);
    assert_int_equal(stf_ckpt_shard_is_canonical(c, 1), 0);
    stf_ckpt_free(c);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical),     cmocka_unit_test(test_s21),
        cmocka_unit_test(test_ws_padding),    cmocka_unit_test(test_s22),
        cmocka_unit_test(test_s23),           cmocka_unit_test(test_s24_s25),
        cmocka_unit_test(test_finding_text),  cmocka_unit_test(test_writer_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
