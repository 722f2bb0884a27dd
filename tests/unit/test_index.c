/* Tests for lib/container/index.c: index parsing (I1, I2, caps), I4-I6, and
 * sharded checkpoints opened through stf_ckpt_open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "container/index.h"
#include "stfix.h"
#include "support/st_alloc.h"
#include "support/st_tmp.h"

static int parse(stf__index **ix, const char *json, const stf_open_opts *o, stf_err *e)
{
    return stf__index_parse(ix, (const uint8_t *)json, strlen(json), "m.index.json", o, e);
}

/* Parse `json`, expect failure with `rule` at byte `off` (or any if off < 0). */
static void expect_fail(const char *json, int code, const char *rule, long off)
{
    stf__index *ix = (stf__index *)1;
    stf_err e;
    stf_err_clear(&e);
    int rc = parse(&ix, json, NULL, &e);
    if (rc != code || strcmp(e.rule, rule) != 0)
        fail_msg("%s: got rc %d rule '%s' (%s), want %d %s", json, rc, e.rule, e.msg, code, rule);
    assert_null(ix);
    assert_non_null(strstr(e.msg, "m.index.json"));
    if (off >= 0) {
        assert_true(e.has_offset);
        if (e.offset != (uint64_t)off)
            fail_msg("%s: offset %llu, want %ld (%s)", json, (unsigned long long)e.offset, off, e.msg);
    }
}

static void test_parse_valid(void **state)
{
    (void)state;
    const char *j = "{\"metadata\": {\"total_size\": 32, \"format\": \"pt\", \"x\": {\"a\": [1, 2.5, null]}},\n"
                    " \"weight_map\": {\"b\": \"m-2.safetensors\", \"a\": \"m-1.safetensors\","
                    " \"c\\u00e9\": \"m-1.safetensors\"}, \"other\": [true]}";
    stf__index *ix = NULL;
    stf_err e;
    assert_int_equal(parse(&ix, j, NULL, &e), 0);
    assert_int_equal(ix->nfiles, 2);
    assert_string_equal(ix->files[0], "m-1.safetensors");
    assert_string_equal(ix->files[1], "m-2.safetensors");
    assert_int_equal(ix->nmap, 3);
    assert_string_equal(ix->map[0].name, "a");
    assert_int_equal(ix->map[0].file, 0);
    assert_int_equal(ix->map[0].off, strstr(j, "\"a\": \"m-1") - j);
    assert_string_equal(ix->map[1].name, "b");
    assert_int_equal(ix->map[1].file, 1);
    assert_string_equal(ix->map[2].name, "c\xc3\xa9");
    assert_int_equal(ix->map[2].name_len, 3);
    assert_int_equal(ix->map[2].file, 0);
    assert_true(ix->has_total);
    assert_true(ix->total_ok);
    assert_int_equal(ix->total_size, 32);
    assert_int_equal(ix->total_off, strstr(j, "32") - j);
    /* metadata other than total_size, raw JSON text, file order */
    assert_int_equal(ix->nmeta, 2);
    assert_string_equal(ix->meta[0].key, "format");
    assert_string_equal(ix->meta[0].value, "\"pt\"");
    assert_int_equal(ix->meta[0].value_len, 4);
    assert_string_equal(ix->meta[1].key, "x");
    assert_string_equal(ix->meta[1].value, "{\"a\": [1, 2.5, null]}");
    stf__index_free(ix);
    stf__index_free(NULL);
}

static void test_total_size_forms(void **state)
{
    (void)state;
    static const char *bad[] = { "1.5", "-1", "\"32\"", "1e3", "18446744073709551616", "null" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char j[200];
        snprintf(j, sizeof j, "{\"metadata\":{\"total_size\":%s},\"weight_map\":{\"a\":\"f\"}}", bad[i]);
        stf__index *ix = NULL;
        stf_err e;
        assert_int_equal(parse(&ix, j, NULL, &e), 0);
        assert_true(ix->has_total);
        assert_false(ix->total_ok);
        assert_int_equal(ix->nmeta, 0);
        stf__index_free(ix);
    }
    stf__index *ix = NULL;
    stf_err e;
    assert_int_equal(parse(&ix, "{\"weight_map\":{\"a\":\"f\"}}", NULL, &e), 0);
    assert_false(ix->has_total);
    assert_int_equal(ix->nmeta, 0);
    stf__index_free(ix);
    assert_int_equal(parse(&ix, "{\"\\u006detadata\":{\"total\\u005fsize\":7},\"weight\\u005fmap\":{\"a\":\"f\"}}",
                           NULL, &e),
                     0);
    assert_true(ix->total_ok);
    assert_int_equal(ix->total_size, 7);
    assert_int_equal(ix->nmap, 1);
    assert_int_equal(ix->nmeta, 0);
    stf__index_free(ix);
}

static void test_i1(void **state)
{
    (void)state;
    expect_fail("", STF_EFORMAT, "I1", 0);
    expect_fail("{\"weight_map\":{\"a\":\"f\"}", STF_EFORMAT, "I1", -1);
    expect_fail("[]", STF_EFORMAT, "I1", 0);
    expect_fail("{}", STF_EFORMAT, "I1", 0);
    expect_fail("{\"weight_map\":[]}", STF_EFORMAT, "I1", 14);
    expect_fail("{\"weight_map\":{}}", STF_EFORMAT, "I1", 0);
    expect_fail("{\"weight_map\":{\"a\":1}}", STF_EFORMAT, "I1", 19);
    expect_fail("{\"weight_map\":{\"a\":[\"f\"]}}", STF_EFORMAT, "I1", 19);
    expect_fail("{\"weight_map\":{\"a\":\"f\",\"a\":\"g\"}}", STF_EFORMAT, "I1", 23);
    /* the same key spelled with an escape is still the same key */
    expect_fail("{\"weight_map\":{\"a\":\"f\",\"\\u0061\":\"f\"}}", STF_EFORMAT, "I1", 23);
    expect_fail("{\"weight_map\":{\"a\":\"f\"},\"weight_map\":{\"b\":\"f\"}}", STF_EFORMAT, "I1", 24);
    expect_fail("{\"metadata\":{},\"metadata\":{},\"weight_map\":{\"a\":\"f\"}}", STF_EFORMAT, "I1", 15);
    /* an escaped spelling of a known key is that key (Python would keep the last) */
    expect_fail("{\"weight_map\":{\"a\":\"f\"},\"weight\\u005fmap\":{\"b\":\"g\"}}", STF_EFORMAT, "I1", 24);
    expect_fail("{\"metadata\":{\"total_size\":1,\"total\\u005fsize\":2},\"weight_map\":{\"a\":\"f\"}}",
                STF_EFORMAT, "I1", 28);
    expect_fail("{\"metadata\":{\"k\":1,\"k\":2},\"weight_map\":{\"a\":\"f\"}}", STF_EFORMAT, "I1", 19);
    expect_fail("{\"metadata\":{\"total_size\":1,\"total_size\":1},\"weight_map\":{\"a\":\"f\"}}",
                STF_EFORMAT, "I1", 28);
    expect_fail("{\"x\":1,\"x\":2,\"weight_map\":{\"a\":\"f\"}}", STF_EFORMAT, "I1", 7);
    expect_fail("{\"metadata\":[],\"weight_map\":{\"a\":\"f\"}}", STF_EFORMAT, "I1", 12);
    expect_fail("{\"weight_map\":{\"a\":\"f\"}} x", STF_EFORMAT, "I1", 25);
    expect_fail("\xef\xbb\xbf{\"weight_map\":{\"a\":\"f\"}}", STF_EFORMAT, "I1", 0);
    expect_fail("{\"weight_map\":{\"a\":\"f\xff\"}}", STF_EFORMAT, "I1", 21);
    expect_fail("{\"weight_map\":{\"a\":\"f\",}}", STF_EFORMAT, "I1", -1);
    expect_fail("{\"weight_map\":{\"a\":\"f\"},\"n\":01}", STF_EFORMAT, "I1", -1);
    expect_fail("{\"weight_map\":{\"a\":\"f\"},\"n\":NaN}", STF_EFORMAT, "I1", -1);
    /* nesting deeper than 16 */
    char deep[128] = "{\"weight_map\":{\"a\":\"f\"},\"x\":";
    for (int i = 0; i < 16; i++) strcat(deep, "[");
    for (int i = 0; i < 16; i++) strcat(deep, "]");
    strcat(deep, "}");
    expect_fail(deep, STF_EFORMAT, "I1", -1);
}

static void test_i2(void **state)
{
    (void)state;
    static const char *bad[] = { "../x.safetensors", "sub/x.safetensors", "/etc/passwd",
                                 "a\\\\b", "", ".", "..", "a..b", "x\\u0000y", "\\/x" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char j[200];
        snprintf(j, sizeof j, "{\"weight_map\":{\"ok\":\"f\",\"w\":\"%s\"}}", bad[i]);
        expect_fail(j, STF_EFORMAT, "I2", 28);
    }
    /* dots inside a name are fine */
    stf__index *ix = NULL;
    stf_err e;
    assert_int_equal(parse(&ix, "{\"weight_map\":{\"w\":\".a.b.\"}}", NULL, &e), 0);
    assert_string_equal(ix->files[0], ".a.b.");
    stf__index_free(ix);
}

static void test_caps(void **state)
{
    (void)state;
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.max_shards = 2;
    stf__index *ix = NULL;
    stf_err e;
    const char *three = "{\"weight_map\":{\"a\":\"f1\",\"b\":\"f2\",\"c\":\"f3\",\"d\":\"f1\"}}";
    assert_int_equal(parse(&ix, three, &o, &e), STF_ELIMIT);
    assert_int_equal(e.code, STF_ELIMIT);
    assert_string_equal(e.rule, "L7");
    assert_string_equal(e.msg, "m.index.json: L7 LimitExceeded: the index names 3 shard files, "
                               "more than the cap of 2");
    assert_null(ix);
    o.max_shards = 3;
    assert_int_equal(parse(&ix, three, &o, &e), 0);
    assert_int_equal(ix->nfiles, 3);
    stf__index_free(ix);

    o.max_meta_entries = 1;
    assert_int_equal(parse(&ix, "{\"metadata\":{\"total_size\":0,\"a\":\"1\",\"b\":2},\"weight_map\":{\"a\":\"f\"}}",
                           &o, &e),
                     STF_ELIMIT);
    assert_string_equal(e.rule, "L5");
    assert_int_equal(e.offset, 36);
    assert_string_equal(e.msg, "m.index.json: L5 LimitExceeded (byte 36): index metadata has "
                               "more than 1 entries");

    char p[300];
    snprintf(p, sizeof p, "%s/cap.safetensors.index.json", st_dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(three, f);
    fclose(f);
    stf_open_opts_init(&o);
    o.max_index_size = strlen(three) - 1;
    assert_int_equal(stf__index_load(&ix, p, &o, &e), STF_ELIMIT);
    assert_string_equal(e.rule, "L8");
    char want[400];
    snprintf(want, sizeof want, "%s: L8 LimitExceeded: the index is %zu bytes, more than the cap "
             "of %zu", p, strlen(three), strlen(three) - 1);
    assert_string_equal(e.msg, want);
    o.max_index_size = strlen(three);
    assert_int_equal(stf__index_load(&ix, p, &o, &e), 0);
    assert_int_equal(ix->nmap, 4);
    stf__index_free(ix);
    unlink(p);
}

/* ---- I4-I6 on hand-made tensor tables ---- */

static stf_tensor_info ti(const char *name, unsigned shard, uint64_t nbytes, uint64_t hoff)
{
    stf_tensor_info t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.name_len = strlen(name);
    t.shard = shard;
    t.nbytes = nbytes;
    t.header_offset = hoff;
    return t;
}

static const char *k_idx = "{\"metadata\":{\"total_size\":30},\"weight_map\":"
                           "{\"a\":\"s1\",\"b\":\"s2\",\"c\":\"s1\"}}";

static int check(const stf_tensor_info *t, size_t nt, const size_t *order, stf__findings *f,
                 stf_err *e)
{
    stf__index *ix = NULL;
    assert_int_equal(parse(&ix, k_idx, NULL, e), 0);
    int rc = stf__index_check(ix, "m.index.json", t, nt, order, f, e);
    stf__index_free(ix);
    return rc;
}

static void test_check_ok_and_i6(void **state)
{
    (void)state;
    stf_tensor_info t[3] = { ti("a", 0, 10, 100), ti("c", 0, 10, 200), ti("b", 1, 10, 300) };
    size_t order[3] = { 0, 2, 1 };
    stf__findings f;
    stf_err e;
    stf__findings_init(&f);
    assert_int_equal(check(t, 3, order, &f, &e), 0);
    assert_int_equal(f.n, 0);
    t[2].nbytes = 11;
    assert_int_equal(check(t, 3, order, &f, &e), 0);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].rule, "I6");
    assert_int_equal(f.v[0].severity, STF_SEV_WARNING);
    assert_string_equal(f.v[0].path, "m.index.json");
    assert_true(f.v[0].has_offset);
    assert_int_equal(f.v[0].offset, strstr(k_idx, "30") - k_idx);
    assert_non_null(strstr(f.v[0].message, "total_size is 30 but the tensors hold 31 bytes"));
    stf__findings_free(&f);
}

static void want_check_fail(stf_tensor_info *t, size_t nt, const size_t *order, const char *rule,
                         uint64_t off, const char *needle)
{
    stf__findings f;
    stf_err e;
    stf__findings_init(&f);
    assert_int_equal(check(t, nt, order, &f, &e), STF_EFORMAT);
    assert_string_equal(e.rule, rule);
    assert_true(e.has_offset);
    assert_int_equal(e.offset, off);
    if (!strstr(e.msg, needle)) fail_msg("'%s' not in '%s'", needle, e.msg);
    stf__findings_free(&f);
}

static void test_check_i4_i5(void **state)
{
    (void)state;
    /* I5: "b" in both shards (also an I4 for the copy in s1, but I5 wins) */
    stf_tensor_info t5[4] = { ti("a", 0, 10, 100), ti("b", 0, 10, 150), ti("c", 0, 10, 200),
                              ti("b", 1, 10, 300) };
    size_t o5[4] = { 0, 1, 3, 2 };
    want_check_fail(t5, 4, o5, "I5", 300, "tensor 'b' is in shard 's1' (byte 150) and in shard 's2' (byte 300)");
    /* I4: a tensor weight_map does not list */
    stf_tensor_info t4[4] = { ti("a", 0, 10, 100), ti("c", 0, 10, 200), ti("b", 1, 10, 300),
                              ti("bb", 1, 0, 400) };
    size_t o4[4] = { 0, 2, 3, 1 };
    want_check_fail(t4, 4, o4, "I4", 400, "tensor 'bb' of shard 's2' (byte 400) is not in weight_map");
    /* I4: weight_map lists a name no shard holds */
    stf_tensor_info tm[2] = { ti("a", 0, 10, 100), ti("b", 1, 10, 300) };
    size_t om[2] = { 0, 1 };
    want_check_fail(tm, 2, om, "I4", (uint64_t)(strstr(k_idx, "\"c\"") - k_idx),
                 "weight_map lists 'c' in shard 's1', but no shard holds it");
    /* I4: a name in the wrong shard */
    stf_tensor_info tw[3] = { ti("a", 0, 10, 100), ti("b", 0, 10, 150), ti("c", 1, 10, 300) };
    size_t ow[3] = { 0, 1, 2 };
    want_check_fail(tw, 3, ow, "I4", (uint64_t)(strstr(k_idx, "\"b\"") - k_idx),
                 "weight_map puts 'b' in shard 's2', but it is in shard 's1'");
}

/* ---- whole sharded checkpoints on disk ---- */

static void put_st(const char *dir, const char *name, const char *json, size_t data_len, uint8_t fill)
{
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    uint64_t n = strlen(json);
    for (int i = 0; i < 8; i++) fputc((int)((n >> (8 * i)) & 0xff), f);
    fputs(json, f);
    for (size_t i = 0; i < data_len; i++) fputc(fill + (int)i, f);
    assert_int_equal(fclose(f), 0);
}

static void put_text(const char *dir, const char *name, const char *text)
{
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

#define SH1 "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}," \
            "\"c\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[2,5]}}"
#define SH2 "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]}}"

static void make_ckpt(const char *sub, const char *index_text)
{
    char d[300];
    snprintf(d, sizeof d, "%s/%s", st_dir, sub);
    assert_int_equal(mkdir(d, 0700), 0);
    put_st(d, "m-00001-of-00002.safetensors", SH1, 5, 0x10);
    put_st(d, "m-00002-of-00002.safetensors", SH2, 4, 0x20);
    put_text(d, "m.safetensors.index.json", index_text);
}

#define GOOD_INDEX                                                                    \
    "{\"metadata\": {\"total_size\": 9, \"quant\": [1, \"x\"]}, \"weight_map\": {"    \
    "\"b\": \"m-00002-of-00002.safetensors\", \"a\": \"m-00001-of-00002.safetensors\", " \
    "\"c\": \"m-00001-of-00002.safetensors\"}}"

static void test_sharded_open(void **state)
{
    (void)state;
    make_ckpt("good", GOOD_INDEX);
    char p[300], s1[300], s2[300];
    snprintf(p, sizeof p, "%s/good/m.safetensors.index.json", st_dir);
    snprintf(s1, sizeof s1, "%s/good/m-00001-of-00002.safetensors", st_dir);
    snprintf(s2, sizeof s2, "%s/good/m-00002-of-00002.safetensors", st_dir);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), 0);
    assert_string_equal(stf_ckpt_index_path(c), p);
    assert_int_equal(stf_ckpt_shard_count(c), 2);
    assert_string_equal(stf_ckpt_shard_path(c, 0), s1);
    assert_string_equal(stf_ckpt_shard_path(c, 1), s2);
    assert_int_equal(stf_ckpt_shard_has_meta(c, 0), 0);
    assert_int_equal(stf_ckpt_shard_has_meta(c, 1), 1);
    assert_string_equal(stf_ckpt_meta_find(c, 1, "format")->value, "pt");
    assert_int_equal(stf_ckpt_index_meta_count(c), 1);
    assert_string_equal(stf_ckpt_index_meta(c, 0)->key, "quant");
    assert_string_equal(stf_ckpt_index_meta(c, 0)->value, "[1, \"x\"]");
    assert_null(stf_ckpt_index_meta(c, 1));
    /* (shard, begin) order */
    assert_int_equal(stf_ckpt_tensor_count(c), 3);
    assert_string_equal(stf_ckpt_tensor(c, 0)->name, "a");
    assert_int_equal(stf_ckpt_tensor(c, 0)->shard, 0);
    assert_string_equal(stf_ckpt_tensor(c, 1)->name, "c");
    assert_int_equal(stf_ckpt_tensor(c, 1)->shard, 0);
    assert_string_equal(stf_ckpt_tensor(c, 2)->name, "b");
    assert_int_equal(stf_ckpt_tensor(c, 2)->shard, 1);
    size_t idx;
    assert_int_equal(stf_ckpt_find(&idx, c, "b"), 0);
    assert_int_equal(idx, 2);
    uint8_t buf[4];
    assert_int_equal(stf_ckpt_read(buf, c, 2, 0, 4, &e), 0);
    assert_memory_equal(buf, "\x20\x21\x22\x23", 4);
    assert_int_equal(stf_ckpt_read(buf, c, 1, 0, 3, &e), 0);
    assert_memory_equal(buf, "\x12\x13\x14", 3);
    assert_int_equal(stf_ckpt_finding_count(c), 0);
    stf_ckpt_free(c);
}

/* Hub caches keep shards as symlinks into a blob store: they must be followed. */
static void test_sharded_symlinks(void **state)
{
    (void)state;
    char d[300], blob[400], link[400], p[400];
    make_ckpt("blobs", GOOD_INDEX);
    snprintf(d, sizeof d, "%s/snap", st_dir);
    assert_int_equal(mkdir(d, 0700), 0);
    static const char *names[] = { "m-00001-of-00002.safetensors", "m-00002-of-00002.safetensors",
                                   "m.safetensors.index.json" };
    for (int i = 0; i < 3; i++) {
        snprintf(blob, sizeof blob, "../blobs/%s", names[i]);
        snprintf(link, sizeof link, "%s/%s", d, names[i]);
        assert_int_equal(symlink(blob, link), 0);
    }
    snprintf(p, sizeof p, "%s/m.safetensors.index.json", d);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), 0);
    assert_int_equal(stf_ckpt_tensor_count(c), 3);
    snprintf(link, sizeof link, "%s/m-00002-of-00002.safetensors", d);
    assert_string_equal(stf_ckpt_shard_path(c, 1), link);
    stf_ckpt_free(c);
}

static void test_sharded_i3_i6(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err e;
    char p[300];

    make_ckpt("miss", "{\"weight_map\":{\"a\":\"m-00001-of-00002.safetensors\","
                      "\"c\":\"m-00001-of-00002.safetensors\",\"z\":\"gone.safetensors\"}}");
    snprintf(p, sizeof p, "%s/miss/m.safetensors.index.json", st_dir);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_EFORMAT);
    assert_null(c);
    assert_string_equal(e.rule, "I3");
    assert_non_null(strstr(e.msg, "shard 'gone.safetensors' (holding 'z' per weight_map)"));

    /* A shard that exists but is no file is I3 with the code that path
     * gets when opened directly (an I/O failure), not a malformed index. */
    make_ckpt("adir", GOOD_INDEX);
    char sp[300];
    snprintf(sp, sizeof sp, "%s/adir/m-00002-of-00002.safetensors", st_dir);
    assert_int_equal(unlink(sp), 0);
    assert_int_equal(mkdir(sp, 0700), 0);
    snprintf(p, sizeof p, "%s/adir/m.safetensors.index.json", st_dir);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_EIO);
    assert_null(c);
    assert_string_equal(e.rule, "I3");
    assert_non_null(strstr(e.msg, "shard 'm-00002-of-00002.safetensors' (holding 'b' per "
                                  "weight_map) cannot be read"));
    assert_int_equal(stf_ckpt_open(&c, sp, NULL, &e), STF_EIO);
    assert_int_equal(rmdir(sp), 0);
    assert_int_equal(mkfifo(sp, 0600), 0);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_EIO);
    assert_string_equal(e.rule, "I3");
    assert_non_null(strstr(e.msg, "not a regular file"));
    assert_int_equal(stf_ckpt_open(&c, sp, NULL, &e), STF_EIO);

    /* a shard that breaks S19 keeps its own rule, prefixed with the index */
    make_ckpt("bad", GOOD_INDEX);
    put_st(st_dir, "bad/m-00002-of-00002.safetensors", SH2, 5, 0);
    snprintf(p, sizeof p, "%s/bad/m.safetensors.index.json", st_dir);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S19");
    assert_non_null(strstr(e.msg, "I3 shard 'm-00002-of-00002.safetensors' is invalid"));

    make_ckpt("total", "{\"metadata\":{\"total_size\":10},\"weight_map\":{"
                       "\"b\":\"m-00002-of-00002.safetensors\",\"a\":\"m-00001-of-00002.safetensors\","
                       "\"c\":\"m-00001-of-00002.safetensors\"}}");
    snprintf(p, sizeof p, "%s/total/m.safetensors.index.json", st_dir);
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.strict = 1; /* I6 stays a warning even when strict */
    assert_int_equal(stf_ckpt_open(&c, p, &o, &e), 0);
    assert_int_equal(stf_ckpt_finding_count(c), 1);
    assert_string_equal(stf_ckpt_finding(c, 0)->rule, "I6");
    assert_string_equal(stf_ckpt_finding(c, 0)->path, p);
    stf_ckpt_free(c);
}

/* ---- allocation failure: fail the Nth allocation ---- */

static void test_alloc_failures(void **state)
{
    (void)state;
    char p[300];
    make_ckpt("alloc", GOOD_INDEX);
    snprintf(p, sizeof p, "%s/alloc/m.safetensors.index.json", st_dir);
    int ok = 0;
    long failures = 0;
    st_alloc_install();
    for (long n = 1; n < 10000 && !ok; n++) {
        st_alloc_arm(n);
        stf_ckpt *c = NULL;
        stf_err e;
        int rc = stf_ckpt_open(&c, p, NULL, &e);
        if (rc == 0) {
            ok = 1;
            stf_ckpt_free(c);
        } else {
            failures++;
            if (rc != STF_ENOMEM) {
                st_alloc_uninstall();
                fail_msg("allocation %ld: rc %d (%s)", n, rc, e.msg);
            }
        }
        if (st_alloc_live() != 0) {
            st_alloc_uninstall();
            fail_msg("allocation %ld: %ld blocks leaked", n, st_alloc_live());
        }
    }
    st_alloc_uninstall();
    assert_true(ok);
    assert_true(failures >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_total_size_forms),
        cmocka_unit_test(test_i1),
        cmocka_unit_test(test_i2),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_check_ok_and_i6),
        cmocka_unit_test(test_check_i4_i5),
        cmocka_unit_test(test_sharded_open),
        cmocka_unit_test(test_sharded_symlinks),
        cmocka_unit_test(test_sharded_i3_i6),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, st_dir_setup, st_dir_teardown);
}
