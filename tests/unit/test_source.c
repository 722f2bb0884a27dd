/* Tests for lib/io/source_file.c and source_mem.c: file sources (pread) and memory sources. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
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

#include "container/sink.h"
#include "io/source.h"
#include "container/writer_internal.h"
#include "support/st_alloc.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", st_dir, name);
}

static void test_missing_file(void **state)
{
    (void)state;
    char p[300];
    path_in(p, sizeof p, "nope.safetensors");
    stf__source *s = (stf__source *)1;
    stf_err e;
    stf_err_clear(&e);
    int sys = 0;
    assert_int_equal(stf__source_open(&s, p, NULL, &sys, &e), STF_ENOTFOUND);
    assert_null(s);
    assert_int_equal(e.code, STF_ENOTFOUND);
    assert_int_equal(sys, ENOENT);
    assert_non_null(strstr(e.msg, p));
    assert_non_null(strstr(e.msg, strerror(ENOENT)));
}

static void test_directory(void **state)
{
    (void)state;
    stf__source *s = NULL;
    stf_err e;
    assert_int_equal(stf__source_open(&s, st_dir, NULL, NULL, &e), STF_EIO);
    assert_null(s);
    assert_non_null(strstr(e.msg, st_dir));
    assert_non_null(strstr(e.msg, strerror(EISDIR)));
}

/* A FIFO with no writer would block a plain open(); it must fail at once. */
static void test_fifo_refused(void **state)
{
    (void)state;
    char p[300];
    path_in(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    stf__source *s = NULL;
    stf_err e;
    assert_int_equal(stf__source_open(&s, p, NULL, NULL, &e), STF_EIO);
    assert_null(s);
    assert_non_null(strstr(e.msg, "not a regular file"));
    unlink(p);
}

static void test_permission_denied(void **state)
{
    (void)state;
    if (geteuid() == 0) skip(); /* root reads mode-000 files anyway */
    char p[300];
    path_in(p, sizeof p, "noperm");
    assert_int_equal(st_write_file(p, "abcdefgh", 8), 0);
    assert_int_equal(chmod(p, 0), 0);
    stf__source *s = NULL;
    stf_err e;
    assert_int_equal(stf__source_open(&s, p, NULL, NULL, &e), STF_EIO);
    assert_non_null(strstr(e.msg, strerror(EACCES)));
    unlink(p);
}

static void check_reads(stf__source *s, const uint8_t *want, size_t n)
{
    uint8_t buf[64];
    stf_err e;
    assert_int_equal(stf__source_size(s), n);
    assert_int_equal(stf__source_read(s, 0, buf, n, &e), 0);
    assert_memory_equal(buf, want, n);
    assert_int_equal(stf__source_read(s, 3, buf, 4, &e), 0);
    assert_memory_equal(buf, want + 3, 4);
    /* An empty read at the very end is in bounds. */
    assert_int_equal(stf__source_read(s, n, buf, 0, &e), 0);
    assert_int_equal(stf__source_read(s, n - 2, buf, 3, &e), STF_EINVAL);
    assert_int_equal(stf__source_read(s, n + 1, buf, 0, &e), STF_EINVAL);
    assert_int_equal(stf__source_read(s, UINT64_MAX, buf, 2, &e), STF_EINVAL);
}

/* A file source has no pointer to its bytes (it is never mapped): reads
 * go through pread. */
static void test_file_reads(void **state)
{
    (void)state;
    static const uint8_t bytes[] = "0123456789abcdefghijklmnop";
    const size_t n = sizeof bytes - 1;
    char p[300];
    path_in(p, sizeof p, "plain.bin");
    assert_int_equal(st_write_file(p, bytes, n), 0);
    stf_err e;

    stf__source *m = NULL;
    assert_int_equal(stf__source_open(&m, p, NULL, NULL, &e), 0);
    assert_null(stf__source_data(m));
    int fd = -1;
    assert_int_equal(stf__source_fd_acquire(m, &fd, &e), 0);
    assert_true(fd >= 0);
    stf__source_fd_release(m);
    assert_string_equal(stf__source_path(m), p);
    check_reads(m, bytes, n);
    stf__source_free(m);
    unlink(p);
}

static void test_memory_source(void **state)
{
    (void)state;
    static const uint8_t bytes[] = "abcdefghijkl";
    stf__source *s = NULL;
    stf_err e;
    assert_int_equal(stf__source_open_mem(&s, bytes, 12, "mem.st", &e), 0);
    assert_ptr_equal(stf__source_data(s), bytes);
    int fd = -1;
    assert_int_equal(stf__source_fd_acquire(s, &fd, &e), STF_EINVAL);
    assert_non_null(strstr(e.msg, "mem.st: a memory source has no file descriptor"));
    assert_string_equal(stf__source_path(s), "mem.st");
    check_reads(s, bytes, 12);
    stf__source_free(s);
    stf__source_free(NULL);
}

/* The pread path must notice a file that shrank after it was opened. */
static void test_truncated_after_open(void **state)
{
    (void)state;
    char p[300];
    path_in(p, sizeof p, "shrinks.bin");
    assert_int_equal(st_write_file(p, "0123456789abcdef", 16), 0);
    stf__source *s = NULL;
    stf_err e;
    assert_int_equal(stf__source_open(&s, p, NULL, NULL, &e), 0);
    assert_int_equal(truncate(p, 10), 0);
    uint8_t buf[16];
    assert_int_equal(stf__source_read(s, 4, buf, 6, &e), 0);
    assert_memory_equal(buf, "456789", 6);
    assert_int_equal(stf__source_read(s, 8, buf, 8, &e), STF_EIO);
    assert_true(e.has_offset);
    assert_int_equal(e.offset, 10);
    assert_non_null(strstr(e.msg, "unexpected end of file at offset 10"));
    assert_non_null(strstr(e.msg, p));
    stf__source_free(s);
    unlink(p);
}

/* Offsets above 2^32, without writing 4 GiB. */
static void test_sparse_over_4gib(void **state)
{
    (void)state;
    char p[300];
    path_in(p, sizeof p, "sparse.bin");
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    const uint64_t size = ((uint64_t)1 << 32) + 4096;
    const uint64_t at = ((uint64_t)1 << 32) + 100;
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        unlink(p);
        skip();
    }
    assert_int_equal(pwrite(fd, "HIGH", 4, (off_t)at), 4);
    assert_int_equal(pwrite(fd, "LOW", 3, 7), 3);
    close(fd);

    stf__source *s = NULL;
    stf_err e;
    uint8_t buf[8];
    assert_int_equal(stf__source_open(&s, p, NULL, NULL, &e), 0);
    assert_int_equal(stf__source_size(s), size);
    assert_int_equal(stf__source_read(s, at - 2, buf, 8, &e), 0);
    assert_memory_equal(buf, "\0\0HIGH\0\0", 8);
    assert_int_equal(stf__source_read(s, 7, buf, 3, &e), 0);
    assert_memory_equal(buf, "LOW", 3);
    /* the same low offset plus 2^32 must not alias it */
    assert_int_equal(stf__source_read(s, ((uint64_t)1 << 32) + 7, buf, 3, &e), 0);
    assert_memory_equal(buf, "\0\0\0", 3);
    assert_int_equal(stf__source_read(s, size - 4, buf, 4, &e), 0);
    assert_int_equal(stf__source_read(s, size - 4, buf, 5, &e), STF_EINVAL);
    stf__source_free(s);
    unlink(p);
}

/* err says STF_EIO at byte `at` of `path`, naming both. */
static void expect_eio_at(int rc, const stf_err *e, const char *path, uint64_t at)
{
    char off[32];
    snprintf(off, sizeof off, " %llu", (unsigned long long)at);
    if (rc != STF_EIO || !strstr(e->msg, path) || !strstr(e->msg, off))
        fail_msg("want STF_EIO naming %s and byte%s; got rc %d: %s", path, off, rc, e->msg);
    assert_true(e->has_offset);
    assert_int_equal(e->offset, at);
}

/*
 * Every reader of a checkpoint's bytes, on a file another process cut short
 * after it was opened (as `cp new model.safetensors` over it would): each
 * one fails with STF_EIO naming the file and the byte where it ended. While
 * files were memory-mapped, the first read past the cut raised SIGBUS.
 * Data order: marker, scale, weight; the file is cut three times, each cut
 * reaching further back: into the weight, the marker, then the header.
 */
static void test_truncated_checkpoint_every_reader(void **state)
{
    (void)state;
    enum { R = 16, K = 256 };
    static const char marker[] = "{\"format\": \"int8_tensorwise\"}";
    float scale[R];
    static int8_t w[R * K];
    for (size_t i = 0; i < R; i++) scale[i] = 1.0f;
    for (size_t i = 0; i < R * K; i++) w[i] = (int8_t)(i % 251);
    st_tensor t[] = {
        { "x.comfy_quant", STF_U8, 1, { sizeof marker - 1 }, marker, sizeof marker - 1 },
        { "x.weight_scale", STF_F32, 2, { R, 1 }, scale, sizeof scale },
        { "x.weight", STF_I8, 2, { R, K }, w, sizeof w },
    };
    char p[300], out[300];
    path_in(p, sizeof p, "cut.safetensors");
    path_in(out, sizeof out, "cut-out.safetensors");
    assert_int_equal(st_write_ckpt(p, t, 3, NULL), 0);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), 0);
    const uint64_t data = 8 + stf_ckpt_shard_header_len(c, 0);
    size_t wi = 0;
    assert_int_equal(stf_ckpt_find(&wi, c, "x.weight"), 0);

    /* 1. Into the weight: its readers fail, the marker still reads. */
    const uint64_t cut1 = data + (sizeof marker - 1) + sizeof scale + 3 * K + 5;
    assert_int_equal(truncate(p, (off_t)cut1), 0);
    static int8_t buf[R * K];
    stf_err_clear(&e);
    expect_eio_at(stf_ckpt_read(buf, c, wi, 0, sizeof buf, &e), &e, p, cut1);
    assert_non_null(strstr(e.msg, "tensor 'x.weight'"));
    stf_check_opts co;
    stf_check_opts_init(&co);
    co.profiles = STF_CHECK_ALL | STF_CHECK_NUMERIC;
    stf_check_report *r = NULL;
    stf_err_clear(&e);
    expect_eio_at(stf_check_run(&r, c, &co, &e), &e, p, cut1);
    assert_null(r);
    stf_write_opts wo;
    stf_write_opts_init(&wo);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    stf_err_clear(&e);
    expect_eio_at(stf_ckpt_rewrite(c, out, &wo, &e), &e, p, cut1);
    assert_int_equal(access(out, F_OK), -1); /* nothing at the output path */

    /* 2. Into the marker tensor: the marker reader. */
    const uint64_t cut2 = data + 10;
    assert_int_equal(truncate(p, (off_t)cut2), 0);
    stf_model *m = NULL;
    stf_err_clear(&e);
    expect_eio_at(stf_model_build(&m, c, &e), &e, p, cut2);
    assert_null(m);

    /* 3. Into the header: the canonical-form check re-reads it. */
    const uint64_t cut3 = 8 + 12;
    assert_int_equal(truncate(p, (off_t)cut3), 0);
    stf_err_clear(&e);
    expect_eio_at(stf__ckpt_canon_findings(c, &e), &e, p, cut3);
    assert_int_equal(stf_ckpt_shard_is_canonical(c, 0), 0);
    stf_ckpt_free(c);
    unlink(p);
}

/* ---- allocation failure: fail the Nth allocation ---- */

static void test_alloc_failures(void **state)
{
    (void)state;
    char p[300];
    path_in(p, sizeof p, "alloc.bin");
    assert_int_equal(st_write_file(p, "abcdefgh", 8), 0);
    st_alloc_install();
    int ok = 0;
    long n;
    for (n = 1; n < 50 && !ok; n++) {
        st_alloc_arm(n);
        stf__source *s = NULL;
        stf_err e;
        int rc = stf__source_open(&s, p, NULL, NULL, &e);
        if (rc == 0) {
            ok = 1;
            stf__source_free(s);
        } else {
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(s);
        }
        assert_int_equal(st_alloc_live(), 0);
    }
    st_alloc_uninstall();
    assert_true(ok);
    assert_true(n > 2); /* at least one failure was exercised */
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_permission_denied),
        cmocka_unit_test(test_file_reads),
        cmocka_unit_test(test_memory_source),
        cmocka_unit_test(test_truncated_after_open),
        cmocka_unit_test(test_truncated_checkpoint_every_reader),
        cmocka_unit_test(test_sparse_over_4gib),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, st_dir_setup, st_dir_teardown);
}
