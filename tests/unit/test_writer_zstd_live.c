/* Tests for lib/io/zstd_live.c through the writer: a compressed
 * output's frames are compressed when the fill that completes them
 * returns, not at commit; deferred tensors filled out of order, in pieces,
 * give the bytes a writer of the same tensors from memory gives (plain and
 * grouped, with and without a pool); a spool that cannot be written fails
 * the fill naming the output and the frame's offset, and leaves nothing. */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "container/zstd_pack.h"
#include "stfix.h"
#include "support/st_tmp.h"

enum { NELEM = 960, NT = 6 };

/* Six tensors, "t0".."t5": BF16, F32, I8, F16, U8, F32, [NELEM] each. */
static const stf_dtype g_dt[NT] = { STF_BF16, STF_F32, STF_I8, STF_F16, STF_U8, STF_F32 };
static unsigned char g_data[NT][NELEM * 4];

static size_t nbytes(size_t i)
{
    return NELEM * (g_dt[i] == STF_F32 ? 4 : g_dt[i] == STF_I8 || g_dt[i] == STF_U8 ? 1 : 2);
}

static void make_data(void)
{
    uint32_t x = 11;
    for (size_t t = 0; t < NT; t++)
        for (size_t i = 0; i < sizeof g_data[t]; i++) {
            x = x * 1103515245u + 12345u;
            g_data[t][i] = (unsigned char)(i % 3 ? 0x40 + (x >> 29) : x >> 16);
        }
}

/* Add the tensors: from memory, or deferred. */
static int add_all(stf_writer *w, int deferred, stf_err *err)
{
    int rc = 0;
    for (size_t t = 0; !rc && t < NT; t++) {
        char name[4];
        snprintf(name, sizeof name, "t%zu", t);
        uint64_t shape[1] = { NELEM };
        stf_tensor_src src = { deferred ? STF_SRC_DEFERRED : STF_SRC_MEM,
                               deferred ? NULL : g_data[t], NULL, 0, NULL, NULL };
        rc = stf_writer_add(w, name, g_dt[t], 1, shape, &src, err);
    }
    return rc;
}

static int write_mem(const char *path, const stf_write_opts *o, stf_err *err)
{
    stf_writer *w = NULL;
    int rc = stf_writer_new(&w, path, o, err);
    if (!rc) rc = add_all(w, 0, err);
    if (!rc) rc = stf_writer_commit(w, err);
    stf_writer_free(w);
    return rc;
}

/* Fill every tensor last to first, each second half before first half. */
static int fill_all(stf_writer *w, stf_err *err)
{
    for (size_t t = NT; t-- > 0;) {
        size_t n = nbytes(t), h = n / 2 + 7;
        int rc = stf_writer_fill(w, t, h, g_data[t] + h, n - h, err);
        if (!rc) rc = stf_writer_fill(w, t, 0, g_data[t], h, err);
        if (rc) return rc;
    }
    return 0;
}

static stf_write_opts zopts(int grouped)
{
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.zstd_level = 3;
    o.zstd_grouped = grouped;
    o.zstd_frame = 1024;
    return o;
}

/* Out of order, in pieces: the bytes of the memory writer. */
static void same_bytes(int grouped, unsigned threads)
{
    make_data();
    stf_err err;
    stf_pool *pool = NULL;
    if (threads) assert_int_equal(stf_pool_new(&pool, threads, &err), 0);
    stf_write_opts o = zopts(grouped);
    o.pool = pool;
    const char *sfx = grouped ? "stz" : "zst";
    char a[32], b[32];
    snprintf(a, sizeof a, "a.safetensors.%s", sfx);
    snprintf(b, sizeof b, "b.safetensors.%s", sfx);
    if (write_mem(st_in_dir(a), &o, &err)) fail_msg("%s", err.msg);
    stf_writer *w = NULL;
    if (stf_writer_new(&w, st_in_dir(b), &o, &err) || add_all(w, 1, &err) ||
        stf_writer_prepare(w, &err) || fill_all(w, &err) || stf_writer_commit(w, &err))
        fail_msg("%s", err.msg);
    stf_writer_free(w);
    size_t an, bn;
    unsigned char *x = st_read_file(st_in_dir(a), &an), *y = st_read_file(st_in_dir(b), &bn);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(an, bn);
    assert_memory_equal(x, y, an);
    /* The two outputs and nothing else: no spool, no temp file. */
    assert_int_equal(st_dir_entries(st_dir), 2);
    free(x);
    free(y);
    stf_pool_free(pool);
}

static void test_same_bytes_plain(void **state)
{
    (void)state;
    same_bytes(0, 0);
    same_bytes(0, 2);
}

static void test_same_bytes_grouped(void **state)
{
    (void)state;
    same_bytes(1, 0);
    same_bytes(1, 3);
}

static int to_mem(void *ud, const void *p, size_t n, stf_err *err)
{
    (void)err;
    unsigned char **at = ud;
    memcpy(*at, p, n);
    *at += n;
    return 0;
}

/*
 * Frames are compressed when their last fill returns: bytes changed in the
 * temp file behind the writer's back after the fills are not what the
 * compressed file restores. Compressed at commit, they would be.
 */
static void test_compressed_when_filled(void **state)
{
    (void)state;
    make_data();
    stf_err err;
    stf_write_opts plain;
    stf_write_opts_init(&plain);
    if (write_mem(st_in_dir("p.safetensors"), &plain, &err)) fail_msg("%s", err.msg);
    stf_write_opts o = zopts(0);
    stf_writer *w = NULL;
    const char *zp = st_in_dir("z.safetensors.zst");
    if (stf_writer_new(&w, zp, &o, &err) || add_all(w, 1, &err) ||
        stf_writer_prepare(w, &err) || fill_all(w, &err))
        fail_msg("%s", err.msg);
    int fd = open(stf_writer_temp_path(w, 0), O_RDWR);
    assert_true(fd >= 0);
    unsigned char le[8];
    assert_int_equal(pread(fd, le, 8, 0), 8);
    uint64_t data = 8;
    for (int i = 0; i < 8; i++) data += (uint64_t)le[i] << (8 * i);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    size_t n = (size_t)st.st_size - (size_t)data;
    unsigned char *junk = malloc(n);
    memset(junk, 0xA5, n);
    assert_int_equal(pwrite(fd, junk, n, (off_t)data), (ssize_t)n);
    close(fd);
    free(junk);
    if (stf_writer_commit(w, &err)) fail_msg("%s", err.msg);
    stf_writer_free(w);
    size_t pn;
    unsigned char *p = st_read_file(st_in_dir("p.safetensors"), &pn);
    assert_non_null(p);
    assert_int_equal((uint64_t)pn, (uint64_t)st.st_size);
    unsigned char *got = malloc(pn), *at = got;
    fd = open(zp, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    if (stf__zstd_unpack(fd, zp, (uint64_t)st.st_size, to_mem, &at, &err))
        fail_msg("%s", err.msg);
    close(fd);
    assert_int_equal((size_t)(at - got), pn);
    assert_memory_equal(got, p, pn);
    free(got);
    free(p);
}

static int g_armed;

/* Once armed, a write at offset 0 (the spool's first frame: the output's
 * offset 0 went out in prepare) fails as if the disk were full. */
static int fail_spool(void *ud, uint64_t off, size_t len)
{
    (void)ud;
    (void)len;
    return g_armed && off == 0;
}

/* A spool write failing fails the fill that completed the frame, names
 * the output and the frame's offset; commit refuses; nothing is left. */
static void test_spool_failure(void **state)
{
    (void)state;
    make_data();
    stf_err err;
    stf__write_test_hooks h = { 0 };
    h.write_hook = fail_spool;
    stf__write_test_hooks_set(&h);
    g_armed = 0;
    stf_write_opts o = zopts(0);
    stf_writer *w = NULL;
    const char *zp = st_in_dir("z.safetensors.zst");
    if (stf_writer_new(&w, zp, &o, &err) || add_all(w, 1, &err) || stf_writer_prepare(w, &err))
        fail_msg("%s", err.msg);
    int fd = open(stf_writer_temp_path(w, 0), O_RDONLY);
    assert_true(fd >= 0);
    unsigned char le[8];
    assert_int_equal(pread(fd, le, 8, 0), 8);
    close(fd);
    uint64_t data = 8;
    for (int i = 0; i < 8; i++) data += (uint64_t)le[i] << (8 * i);
    g_armed = 1;
    /* t1 (F32, 3840 bytes) comes first in the file (lib/README.md,
     * Canonical form): its first 1024 bytes are a frame of their own, the
     * first this fill completes. */
    int rc = stf_writer_fill(w, 1, 0, g_data[1], nbytes(1), &err);
    stf__write_test_hooks_set(NULL);
    assert_int_equal(rc, STF_EIO);
    char want[1024];
    snprintf(want, sizeof want,
             "%s: spooling the compressed frame at byte %llu failed: %s", zp,
             (unsigned long long)data, strerror(ENOSPC));
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, data);
    assert_int_equal(stf_writer_commit(w, &err), STF_EIO);
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_bytes_plain, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes_grouped, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_compressed_when_filled, st_dir_setup,
                                        st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_spool_failure, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
