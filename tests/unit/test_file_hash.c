/* Tests for lib/container/file_hash.c and writer_hash.c: a file's SHA-256,
 * AutoV2 and tensor-data hash against OpenSSL's SHA256 of the byte ranges;
 * S29's exact finding for a stale modelspec.hash_sha256 and none for a true
 * one; a writer keeping the value true, with deferred fills and shards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "container/writer_internal.h"
#include "support/st_bytes.h"
#include "support/st_tmp.h"

static void hex(char out[65], const void *p, size_t n)
{
    unsigned char d[32];
    SHA256(p, n, d);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* A file of two tensors (data out of writer order) and `meta` as the
 * whole __metadata__ object text (NULL: none). */
static char *put(const char *name, const char *meta, size_t *data_start, size_t *size)
{
    char hdr[512];
    snprintf(hdr, sizeof hdr,
             "{%s%s%s\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}",
             meta ? "\"__metadata__\":" : "", meta ? meta : "", meta ? "," : "");
    static const unsigned char data[11] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
    size_t n = (strlen(hdr) + 7) / 8 * 8;
    st_bytes b = st_bytes_padded(hdr, n, data, sizeof data);
    char *path = st_in_dir(name);
    assert_int_equal(st_write_file(path, b.p, b.len), 0);
    free(b.p);
    *data_start = 8 + n;
    *size = 8 + n + sizeof data;
    return path;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    unsigned char *b = st_read_file(path, len);
    assert_non_null(b);
    return b;
}

static void test_shard_hash(void **state)
{
    (void)state;
    size_t start, size, len;
    char *path = put("m.safetensors", "{\"k\":\"v\"}", &start, &size);
    stf_ckpt *c = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
    stf_file_hash h;
    assert_int_equal(stf_ckpt_shard_hash(&h, c, 0, NULL, NULL, &err), 0);
    unsigned char *b = slurp(path, &len);
    char want[65];
    hex(want, b, len);
    assert_string_equal(h.sha256, want);
    assert_int_equal(strlen(h.autov2), 10);
    assert_memory_equal(h.autov2, want, 10);
    hex(want, b + start, len - start);
    assert_string_equal(h.data_sha256, want);
    assert_int_equal(h.size, size);
    assert_int_equal(h.data_start, start);
    assert_int_equal(stf_ckpt_shard_hash(&h, c, 1, NULL, NULL, &err), STF_EINVAL);
    free(b);
    stf_ckpt_free(c);
}

static size_t s29_count(const stf_ckpt *c, const stf_finding **last)
{
    size_t n = 0;
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++)
        if (!strcmp(stf_ckpt_finding(c, i)->rule, "S29")) {
            *last = stf_ckpt_finding(c, i);
            n++;
        }
    return n;
}

static void test_check_hashes(void **state)
{
    (void)state;
    size_t start, size, len;
    char *path = put("stale.safetensors", "{\"modelspec.hash_sha256\":\"0xab\\\"c\"}", &start,
                     &size);
    stf_ckpt *c = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
    assert_int_equal(stf_ckpt_check_hashes(c, NULL, NULL, &err), 0);
    const stf_finding *f = NULL;
    assert_int_equal(s29_count(c, &f), 1);
    unsigned char *b = slurp(path, &len);
    char data[65], msg[512];
    hex(data, b + start, len - start);
    free(b);
    snprintf(msg, sizeof msg,
             "%s: S29 stale modelspec.hash_sha256: the metadata says \"0xab\"c\", the tensor "
             "data (bytes %zu to %zu) hash to 0x%s",
             path, start, size, data);
    assert_string_equal(f->message, msg);
    assert_int_equal(f->severity, STF_SEV_INFO);
    assert_true(f->has_offset);
    assert_int_equal(f->offset, start);
    stf_ckpt_free(c);

    /* The true value, in upper case too, is no finding; nor is no key. */
    char meta[128];
    for (int up = 0; up < 2; up++) {
        snprintf(meta, sizeof meta, "{\"modelspec.hash_sha256\":\"0%c%s\"}", up ? 'X' : 'x', data);
        if (up)
            for (char *p = meta + 30; *p; p++)
                if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
        path = put("true.safetensors", meta, &start, &size);
        assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
        assert_int_equal(stf_ckpt_check_hashes(c, NULL, NULL, &err), 0);
        assert_int_equal(s29_count(c, &f), 0);
        stf_ckpt_free(c);
    }
    path = put("none.safetensors", NULL, &start, &size);
    assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
    assert_int_equal(stf_ckpt_check_hashes(c, NULL, NULL, &err), 0);
    assert_int_equal(s29_count(c, &f), 0);
    stf_ckpt_free(c);
}

/* The value a written file's metadata holds, and "0x" + its data's hash. */
static void assert_true_value(const char *path)
{
    size_t len;
    unsigned char *b = slurp(path, &len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    char data[65], want[128];
    hex(data, b + 8 + n, len - 8 - n);
    snprintf(want, sizeof want, "\"modelspec.hash_sha256\":\"0x%s\"", data);
    b[8 + n - 1] = '\0';
    assert_non_null(strstr((char *)b + 8, want));
    free(b);
}

static void test_writer_keeps_it_true(void **state)
{
    (void)state;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    for (int sharded = 0; sharded < 2; sharded++) {
        stf_writer *w = NULL;
        stf_err err;
        stf_err_clear(&err);
        stf_write_opts o;
        stf_write_opts_init(&o);
        o.max_shard_size = sharded ? 16 : 0;
        assert_int_equal(stf_writer_new(&w, st_in_dir("w.safetensors"), &o, &err), 0);
        assert_int_equal(stf_writer_set_meta(w, "modelspec.hash_sha256", "stale", &err), 0);
        static const float f[4] = { 1, 2, 3, 4 };
        static const unsigned char u[24] = { 9, 8, 7 };
        uint64_t s4[1] = { 4 }, s24[1] = { 24 };
        stf_tensor_src mem = { STF_SRC_MEM, f, NULL, 0, NULL, NULL };
        stf_tensor_src def = { STF_SRC_DEFERRED, NULL, NULL, 0, NULL, NULL };
        assert_int_equal(stf_writer_add(w, "f", STF_F32, 1, s4, &mem, &err), 0);
        assert_int_equal(stf_writer_add(w, "u", STF_U8, 1, s24, &def, &err), 0);
        assert_int_equal(stf_writer_prepare(w, &err), 0);
        size_t id;
        assert_int_equal(stf_writer_tensor_id(&id, w, "u"), 0);
        assert_int_equal(stf_writer_fill(w, id, 12, u + 12, 12, &err), 0);
        assert_int_equal(stf_writer_fill(w, id, 0, u, 12, &err), 0);
        assert_int_equal(stf_writer_commit(w, &err), 0);
        stf_writer_free(w);
        if (sharded) {
            assert_true_value(st_in_dir("w-00001-of-00002.safetensors"));
            assert_true_value(st_in_dir("w-00002-of-00002.safetensors"));
        } else
            assert_true_value(st_in_dir("w.safetensors"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shard_hash, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_check_hashes, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_writer_keeps_it_true, st_dir_setup,
                                        st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
