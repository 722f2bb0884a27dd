/*
 * Tests for lib/io/fdcache.c: the bound on open descriptors, held
 * descriptors never closed, reopen with the identity check, running out of
 * descriptors, and many threads at once.
 */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/fdcache.h"
#include "support/st_tmp.h"

enum { NFILES = 12 };

static char g_paths[NFILES][300];

/* File i holds 64 bytes of (i * 64 + j) & 0xff. */
static void make_files(void)
{
    for (int i = 0; i < NFILES; i++) {
        unsigned char b[64];
        for (int j = 0; j < 64; j++) b[j] = (unsigned char)((i * 64 + j) & 0xff);
        snprintf(g_paths[i], sizeof g_paths[i], "%s/f%02d.bin", st_dir, i);
        assert_int_equal(st_write_file(g_paths[i], b, sizeof b), 0);
    }
}

/* Acquire f, pread its byte `j`, release; the byte must be file i's. */
static void expect_byte(stf__fdfile *f, int i, int j)
{
    int fd = -1;
    stf_err e;
    unsigned char b = 0;
    if (stf__fdfile_acquire(f, &fd, &e)) fail_msg("acquire file %d: %s", i, e.msg);
    assert_int_equal(pread(fd, &b, 1, j), 1);
    assert_int_equal(b, (unsigned char)((i * 64 + j) & 0xff));
    stf__fdfile_release(f);
}

static void open_all(stf__fdcache *c, stf__fdfile **f)
{
    for (int i = 0; i < NFILES; i++) {
        uint64_t size = 0;
        stf_err e;
        int se = -1;
        if (stf__fdfile_open(&f[i], c, g_paths[i], &size, &se, &e))
            fail_msg("open %d: %s", i, e.msg);
        assert_int_equal(size, 64);
        assert_int_equal(se, 0);
    }
}

static void close_all(stf__fdfile **f)
{
    for (int i = 0; i < NFILES; i++) stf__fdfile_close(f[i]);
}

/* Twelve files through a cache of 3: never more than 3 open, all readable. */
static void test_bound(void **state)
{
    (void)state;
    make_files();
    stf__fdcache *c = NULL;
    stf_err e;
    assert_int_equal(stf__fdcache_new(&c, 3, &e), 0);
    stf__fdfile *f[NFILES];
    open_all(c, f);
    assert_int_equal(stf__fdcache_open_count(c), 3);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < NFILES; i++) {
            expect_byte(f[(i * 5) % NFILES], (i * 5) % NFILES, i);
            assert_true(stf__fdcache_open_count(c) <= 3);
        }
    close_all(f);
    assert_int_equal(stf__fdcache_open_count(c), 0);
    stf__fdcache_free(c);
    assert_int_equal(stf__fdcache_new(&c, 0, &e), STF_EINVAL);
}

/* A held descriptor survives any amount of eviction; the surplus opened
 * while it is held is closed once it is given back. */
static void test_held_never_closed(void **state)
{
    (void)state;
    make_files();
    stf__fdcache *c = NULL;
    stf_err e;
    assert_int_equal(stf__fdcache_new(&c, 1, &e), 0);
    stf__fdfile *f[NFILES];
    open_all(c, f);
    int held = -1;
    assert_int_equal(stf__fdfile_acquire(f[0], &held, &e), 0);
    for (int i = 1; i < NFILES; i++) {
        expect_byte(f[i], i, 7);
        assert_true(fcntl(held, F_GETFD) >= 0); /* still open */
        unsigned char b = 0;
        assert_int_equal(pread(held, &b, 1, 9), 1);
        assert_int_equal(b, 9);
    }
    /* Each of those was closed as it was given back: f[0] alone is open. */
    assert_int_equal(stf__fdcache_open_count(c), 1);
    int held2 = -1;
    assert_int_equal(stf__fdfile_acquire(f[5], &held2, &e), 0);
    assert_int_equal(stf__fdcache_open_count(c), 2); /* one over the cap while both are held */
    stf__fdfile_release(f[5]);
    assert_int_equal(stf__fdcache_open_count(c), 1);
    assert_true(fcntl(held, F_GETFD) >= 0);
    stf__fdfile_release(f[0]);
    assert_int_equal(stf__fdcache_open_count(c), 1);
    expect_byte(f[0], 0, 3); /* still cached: no reopen needed */
    close_all(f);
    stf__fdcache_free(c);
}

/* Evicted, then the name points elsewhere: the reopen refuses it. */
static void test_reopen_checks_identity(void **state)
{
    (void)state;
    make_files();
    stf__fdcache *c = NULL;
    stf_err e;
    int fd = -1;
    assert_int_equal(stf__fdcache_new(&c, 1, &e), 0);
    stf__fdfile *f[NFILES];
    open_all(c, f); /* only f[11] stays open */

    /* same size, another inode: replaced by rename */
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.new", g_paths[0]);
    unsigned char same[64] = { 0 };
    assert_int_equal(st_write_file(tmp, same, sizeof same), 0);
    assert_int_equal(rename(tmp, g_paths[0]), 0);
    stf_err_clear(&e);
    assert_int_equal(stf__fdfile_acquire(f[0], &fd, &e), STF_EIO);
    char want[512];
    snprintf(want, sizeof want,
             "%s: the file was replaced by another since it was opened (device or inode "
             "changed); open the checkpoint again", g_paths[0]);
    assert_string_equal(e.msg, want);

    /* same inode, cut short in place */
    assert_int_equal(truncate(g_paths[1], 10), 0);
    assert_int_equal(stf__fdfile_acquire(f[1], &fd, &e), STF_EIO);
    snprintf(want, sizeof want,
             "%s: the file changed size since it was opened (64 bytes, now 10); open the "
             "checkpoint again", g_paths[1]);
    assert_string_equal(e.msg, want);

    /* gone */
    assert_int_equal(unlink(g_paths[2]), 0);
    assert_int_equal(stf__fdfile_acquire(f[2], &fd, &e), STF_EIO);
    snprintf(want, sizeof want, "%s: cannot reopen: %s", g_paths[2], strerror(ENOENT));
    assert_string_equal(e.msg, want);

    /* untouched files still reopen, and a failed reopen left nothing open */
    assert_int_equal(stf__fdcache_open_count(c), 1);
    expect_byte(f[3], 3, 1);
    close_all(f);
    stf__fdcache_free(c);
}

/* The lowest free descriptor number: with RLIMIT_NOFILE at it, open fails. */
static int lowest_free_fd(void)
{
    int t = dup(0);
    assert_true(t >= 0);
    close(t);
    return t;
}

/* Out of descriptors: the cache gives its idle ones back and retries; when
 * that is not enough, a resource error that names the limit. */
static void test_out_of_descriptors(void **state)
{
    (void)state;
    make_files();
    stf__fdcache *c = NULL;
    stf_err e;
    assert_int_equal(stf__fdcache_new(&c, 8, &e), 0);
    stf__fdfile *f[NFILES] = { 0 };
    uint64_t size;
    int se = 0;
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)lowest_free_fd() + 2; /* room for two descriptors */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
    int rc = 0;
    for (int i = 0; i < 4 && !rc; i++) rc = stf__fdfile_open(&f[i], c, g_paths[i], &size, &se, &e);
    int held = -1, held2 = -1, rc_full = 0, se_full = 0;
    stf_err e_full;
    if (!rc) {
        /* hold both descriptors the limit allows: a third file cannot open */
        rc = stf__fdfile_acquire(f[0], &held, &e);
        if (!rc) rc = stf__fdfile_acquire(f[1], &held2, &e);
        if (!rc) rc_full = stf__fdfile_open(&f[4], c, g_paths[4], &size, &se_full, &e_full);
        if (held >= 0) stf__fdfile_release(f[0]);
        if (held2 >= 0) stf__fdfile_release(f[1]);
    }
    setrlimit(RLIMIT_NOFILE, &old);
    if (rc) fail_msg("with two descriptors: %s", e.msg);
    assert_int_equal(stf__fdcache_open_count(c), 2);
    assert_int_equal(rc_full, STF_EIO);
    assert_int_equal(se_full, EMFILE);
    assert_null(f[4]);
    char want[512];
    snprintf(want, sizeof want,
             "%s: cannot open: %s (this process's open-file limit is reached; raise it with "
             "ulimit -n)", g_paths[4], strerror(EMFILE));
    assert_string_equal(e_full.msg, want);
    for (int i = 0; i < 4; i++) expect_byte(f[i], i, 63);
    close_all(f);
    stf__fdcache_free(c);
}

/* Eight threads read twelve files through a cache of 2 at once. */
typedef struct reader {
    stf__fdfile **f;
    int seed, bad;
    stf_err e;
} reader;

static void *read_many(void *ud)
{
    reader *r = ud;
    for (int k = 0; k < 2000 && !r->bad; k++) {
        int i = (r->seed * 7 + k * 5) % NFILES, j = (k * 13 + r->seed) % 64, fd = -1;
        unsigned char b = 0;
        if (stf__fdfile_acquire(r->f[i], &fd, &r->e)) {
            r->bad = 1;
            break;
        }
        if (pread(fd, &b, 1, j) != 1 || b != (unsigned char)((i * 64 + j) & 0xff)) r->bad = 2;
        stf__fdfile_release(r->f[i]);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    make_files();
    stf__fdcache *c = NULL;
    stf_err e;
    assert_int_equal(stf__fdcache_new(&c, 2, &e), 0);
    stf__fdfile *f[NFILES];
    open_all(c, f);
    pthread_t th[8];
    reader r[8];
    for (int t = 0; t < 8; t++) {
        r[t] = (reader){ f, t, 0, { 0 } };
        assert_int_equal(pthread_create(&th[t], NULL, read_many, &r[t]), 0);
    }
    for (int t = 0; t < 8; t++) {
        pthread_join(th[t], NULL);
        if (r[t].bad) fail_msg("thread %d: %d %s", t, r[t].bad, r[t].e.msg);
    }
    assert_true(stf__fdcache_open_count(c) <= 2);
    close_all(f);
    stf__fdcache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bound, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_held_never_closed, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_reopen_checks_identity, st_dir_setup,
                                        st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_out_of_descriptors, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_threads, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
