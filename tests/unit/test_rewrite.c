/* Tests for lib/container/rewrite.c: canonical input comes back byte for
 * byte; non-canonical input comes back canonical with the same tensors and
 * metadata; shards split and join losslessly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "container/writer_internal.h"
#include "stfix/experimental/container.h"
#include "support/st_bytes.h"
#include "support/st_tmp.h"

static void put_file(const char *name, const void *b, size_t n)
{
    assert_int_equal(st_write_file(st_in_dir(name), b, n), 0);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    unsigned char *b = st_read_file(path, len);
    assert_non_null(b);
    return b;
}

/* le64(N) + hdr + spaces to `n` + data */
static unsigned char *image(const char *hdr, size_t n, const void *data, size_t dlen, size_t *len)
{
    st_bytes b = st_bytes_padded(hdr, n, data, dlen);
    *len = b.len;
    return b.p;
}

static int rewrite_opt(const char *in, const char *out, uint64_t max_shard, int replace,
                       stf_err *err)
{
    stf_ckpt *c = NULL;
    int rc = stf_ckpt_open(&c, in, NULL, err);
    if (rc) return rc;
    stf_write_opts o;
    stf_write_opts_init(&o);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    o.max_shard_size = max_shard;
    o.replace_input = replace;
    rc = stf_ckpt_rewrite(c, out, &o, err);
    stf_ckpt_free(c);
    return rc;
}

/* The canonical image of hdr: padded to 8 as the writer does. */
static unsigned char *canon_image(const char *hdr, const void *data, size_t dlen, size_t *len)
{
    return image(hdr, (strlen(hdr) + 7) / 8 * 8, data, dlen, len);
}

static int rewrite(const char *in, const char *out, uint64_t max_shard, stf_err *err)
{
    return rewrite_opt(in, out, max_shard, 0, err);
}

static void rewrite_ok(const char *in, const char *out, uint64_t max_shard)
{
    stf_err err;
    if (rewrite(st_in_dir(in), st_in_dir(out), max_shard, &err)) fail_msg("%s", err.msg);
}

/* The file `name` holds exactly want[0..len). */
static void expect_file(const char *name, const unsigned char *want, size_t len)
{
    size_t got_len;
    unsigned char *got = slurp(st_in_dir(name), &got_len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(got);
}

static const char CANON[] =
    "{\"__metadata__\":{\"format\":\"pt\",\"q\":\"{\\\"a\\\": 1}\"},"
    "\"w.scale\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]},"
    "\"norm\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]},"
    "\"w\":{\"dtype\":\"I8\",\"shape\":[2,2],\"data_offsets\":[12,16]},"
    "\"w.comfy_quant\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[16,19]}}";
static const unsigned char DATA[19] = { 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0x80, 0x3f, 0, 0x40,
                                        1, 2, 0xff, 0x80, '{', '}', ' ' };

static void test_canonical_identity(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = canon_image(CANON, DATA, sizeof DATA, &len);
    put_file("in.safetensors", b, len);
    rewrite_ok("in.safetensors", "out.safetensors", 0);
    expect_file("out.safetensors", b, len);
    free(b);
}

static void test_noncanonical(void **state)
{
    (void)state;
    /* Unpadded, spaces, metadata last and unsorted, data in the wrong order. */
    static const char hdr[] =
        "{ \"w\":{\"dtype\":\"I8\",\"shape\":[2, 2],\"data_offsets\":[0,4]},"
        "\"w.comfy_quant\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[4,7]},"
        "\"norm\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[7,11]},"
        "\"w.scale\":{\"data_offsets\":[11,19],\"dtype\":\"F32\",\"shape\":[2,1]},"
        "\"__metadata__\":{\"q\":\"{\\\"a\\\": 1}\",\"format\":\"p\\u0074\"}}";
    unsigned char data[19];
    memcpy(data, DATA + 12, 4);
    memcpy(data + 4, DATA + 16, 3);
    memcpy(data + 7, DATA + 8, 4);
    memcpy(data + 11, DATA, 8);
    size_t len;
    unsigned char *b = image(hdr, strlen(hdr), data, sizeof data, &len);
    put_file("nc.safetensors", b, len);
    free(b);
    rewrite_ok("nc.safetensors", "out.safetensors", 0);
    unsigned char *want = canon_image(CANON, DATA, sizeof DATA, &len);
    expect_file("out.safetensors", want, len);
    free(want);
}

static void test_shard_and_join(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = canon_image(CANON, DATA, sizeof DATA, &len);
    put_file("in.safetensors", b, len);
    rewrite_ok("in.safetensors", "m.safetensors", 8);
    /* w.scale (8) | norm + w (8) | comfy_quant (3) */
    static const char want_idx[] =
        "{\n  \"metadata\": {\n    \"total_size\": 19\n  },\n  \"weight_map\": {\n"
        "    \"norm\": \"m-00002-of-00003.safetensors\",\n"
        "    \"w\": \"m-00002-of-00003.safetensors\",\n"
        "    \"w.comfy_quant\": \"m-00003-of-00003.safetensors\",\n"
        "    \"w.scale\": \"m-00001-of-00003.safetensors\"\n  }\n}\n";
    expect_file("m.safetensors.index.json", (const unsigned char *)want_idx, strlen(want_idx));
    rewrite_ok("m.safetensors.index.json", "joined.safetensors", 0);
    expect_file("joined.safetensors", b, len);
    free(b);
}

/* The source may be the target: every byte is copied before the rename. */
static void test_in_place(void **state)
{
    (void)state;
    static const char hdr[] = "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}";
    const unsigned char data[6] = { 7, 8, 0, 0, 0x80, 0x3f };
    size_t len;
    unsigned char *b = image(hdr, strlen(hdr), data, 6, &len);
    put_file("ip.safetensors", b, len);
    /* The guard refuses the input as output unless told it is in place. */
    stf_err err;
    assert_int_equal(rewrite(st_in_dir("ip.safetensors"), st_in_dir("ip.safetensors"), 0, &err),
                     STF_EINVAL);
    char msg[1200];
    snprintf(msg, sizeof msg,
             "%s: the output would overwrite the input file '%s'; choose another output path",
             st_in_dir("ip.safetensors"), st_in_dir("ip.safetensors"));
    assert_string_equal(err.msg, msg);
    expect_file("ip.safetensors", b, len);
    free(b);
    if (rewrite_opt(st_in_dir("ip.safetensors"), st_in_dir("ip.safetensors"), 0, 1, &err))
        fail_msg("%s", err.msg);
    static const char want_hdr[] =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}";
    const unsigned char want_data[6] = { 0, 0, 0x80, 0x3f, 7, 8 };
    unsigned char *want = canon_image(want_hdr, want_data, 6, &len);
    expect_file("ip.safetensors", want, len);
    free(want);
}

/* Rewrite `in` into `out` (in place when they are the same) while
 * `victim` changes: STF_EIO naming it, nothing at `out` (or `out` still
 * the input as the other process left it), no temporary file left. */
static void changed_mid_run(const char *in, const char *out, const char *victim,
                            unsigned char flip, uint64_t max_shard)
{
    /* An old time, so the write is seen whatever the clock's granularity. */
    struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    assert_int_equal(utimensat(AT_FDCWD, st_in_dir(victim), old, 0), 0);
    size_t before = st_dir_entries(st_dir);
    stf_ckpt *c = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_ckpt_open(&c, st_in_dir(in), NULL, &err), 0);
    /* The progress callback stands in for another process. */
    st_meddler m = { st_in_dir(victim), flip, 0, 0 };
    stf_write_opts o;
    stf_write_opts_init(&o);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    o.max_shard_size = max_shard;
    o.replace_input = !strcmp(in, out);
    o.progress = st_meddle;
    o.progress_ud = &m;
    assert_int_equal(stf_ckpt_rewrite(c, st_in_dir(out), &o, &err), STF_EIO);
    stf_ckpt_free(c);
    assert_true(m.calls > 0);
    char want[1200];
    snprintf(want, sizeof want,
             "%s: the input changed while stfix was reading it (modification time "
             "2001-09-09T01:46:40.000000000Z, now ",
             st_in_dir(victim));
    if (strncmp(err.msg, want, strlen(want))) fail_msg("got '%s', expected '%s...'", err.msg, want);
    assert_non_null(strstr(err.msg, "); nothing was written: run again once nothing changes it"));
    /* Nothing new in the directory; the victim is as the other process left it. */
    assert_int_equal(st_dir_entries(st_dir), before);
    size_t len;
    unsigned char *b = slurp(st_in_dir(victim), &len);
    assert_int_equal(b[len - 1], m.last);
    free(b);
}

/* A single file, in place or not, each shard and the index of a sharded
 * checkpoint, and a compressed file: rewritten while read, the output is
 * never published. */
static void test_input_changed(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = canon_image(CANON, DATA, sizeof DATA, &len);
    put_file("in.safetensors", b, len);
    free(b);
    changed_mid_run("in.safetensors", "out.safetensors", "in.safetensors", 0x55, 0);
    assert_true(access(st_in_dir("out.safetensors"), F_OK) != 0);
    changed_mid_run("in.safetensors", "in.safetensors", "in.safetensors", 0x55, 0);
    changed_mid_run("in.safetensors", "s.safetensors", "in.safetensors", 0x55, 8);
    assert_true(access(st_in_dir("s.safetensors.index.json"), F_OK) != 0);
    rewrite_ok("in.safetensors", "m.safetensors", 8);
    changed_mid_run("m.safetensors.index.json", "j.safetensors", "m-00002-of-00003.safetensors",
                    0x55, 0);
    /* The index's last byte is its newline: a space keeps it JSON. */
    changed_mid_run("m.safetensors.index.json", "j.safetensors", "m.safetensors.index.json",
                    '\n' ^ ' ', 0);
    assert_true(access(st_in_dir("j.safetensors"), F_OK) != 0);
    /* Compressed: the file as stored; its last byte is written back as it
     * was (the footer, read at open), which is a change all the same. */
    stf_write_opts zo;
    stf_write_opts_init(&zo);
    zo.zstd_level = 1;
    stf_err err;
    if (stf_zstd_compress(st_in_dir("in.safetensors"), st_in_dir("in.safetensors.zst"), &zo, 0, &err))
        fail_msg("%s", err.msg);
    changed_mid_run("in.safetensors.zst", "z.safetensors", "in.safetensors.zst", 0, 0);
    assert_true(access(st_in_dir("z.safetensors"), F_OK) != 0);
    /* Unchanged, the same rewrites succeed. */
    rewrite_ok("in.safetensors.zst", "z.safetensors", 0);
    rewrite_ok("m.safetensors.index.json", "j.safetensors", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_canonical_identity, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_noncanonical, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_shard_and_join, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_in_place, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_input_changed, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
