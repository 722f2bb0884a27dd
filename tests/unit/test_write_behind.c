/* Tests for lib/io/write_behind.c: which ranges fills hand to the
 * disk (in batches merged into runs) and which they drop, in landing order,
 * with the calls recorded through stf__wb_ops; small fills left alone; the
 * window's slot limit; a keeping write-behind that waits where it would
 * drop; a write-out error kept and reported by the sink's finish; and,
 * with the real system calls, bytes that read back the same, and their
 * sha256, from a sink staged for O_DIRECT and from one that keeps its
 * pages in the page cache (stf__sink_keep_cache) until the hash drops them. */
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
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "io/sink_file.h"
#include "support/st_tmp.h"
#include "util/sha256.h"

#define MIB ((uint64_t)1 << 20)

typedef struct call {
    char what; /* 's' start, 'd' drop, 'w' wait */
    uint64_t off, len;
} call;

static call g_calls[256];
static size_t g_ncalls;
static int g_drop_errno;

static int rec_start(void *ud, int fd, uint64_t off, uint64_t len)
{
    (void)ud, (void)fd;
    if (g_ncalls < 256) g_calls[g_ncalls++] = (call){ 's', off, len };
    return 0;
}

static int rec_drop(void *ud, int fd, uint64_t off, uint64_t len)
{
    (void)ud, (void)fd;
    if (g_ncalls < 256) g_calls[g_ncalls++] = (call){ 'd', off, len };
    return g_drop_errno;
}

static int rec_wait(void *ud, int fd, uint64_t off, uint64_t len)
{
    (void)ud, (void)fd;
    if (g_ncalls < 256) g_calls[g_ncalls++] = (call){ 'w', off, len };
    return g_drop_errno;
}

static int setup(void **state)
{
    g_ncalls = 0;
    g_drop_errno = 0;
    stf__wb_ops_set(&(stf__wb_ops){ rec_start, rec_drop, NULL, rec_wait });
    return st_dir_setup(state);
}

static int teardown(void **state)
{
    stf__wb_ops_set(NULL);
    return st_dir_teardown(state);
}

static void expect_call(size_t i, char what, uint64_t off, uint64_t len)
{
    assert_true(i < g_ncalls);
    assert_int_equal(g_calls[i].what, what);
    assert_int_equal(g_calls[i].off, off);
    assert_int_equal(g_calls[i].len, len);
}

/* 1 MiB fills in order: every second one hands the pair over as one run;
 * the first run is dropped when 16 MiB of later runs have gone out. */
static void test_window(void **state)
{
    (void)state;
    stf__wbehind wb;
    assert_int_equal(stf__wb_init(&wb), 0);
    stf__wb_wrote(&wb, 3, 0, MIB);
    assert_int_equal(g_ncalls, 0);
    for (uint64_t i = 1; i < 16; i++) stf__wb_wrote(&wb, 3, i * MIB, MIB);
    assert_int_equal(g_ncalls, 8);
    for (size_t i = 0; i < 8; i++) expect_call(i, 's', i * 2 * MIB, 2 * MIB);
    stf__wb_wrote(&wb, 3, 16 * MIB, MIB);
    assert_int_equal(g_ncalls, 8);
    stf__wb_wrote(&wb, 3, 17 * MIB, MIB);
    assert_int_equal(g_ncalls, 10);
    expect_call(8, 's', 16 * MIB, 2 * MIB);
    expect_call(9, 'd', 0, 2 * MIB);
    stf__wb_wrote(&wb, 3, 18 * MIB, 2 * MIB);
    assert_int_equal(g_ncalls, 12);
    expect_call(11, 'd', 2 * MIB, 2 * MIB);
    assert_int_equal(stf__wb_error(&wb, NULL), 0);
    stf__wb_fini(&wb);
    stf__wb_fini(&wb); /* twice is a no-op */
}

/* Landing order, not file order: a run that goes out late is dropped late. */
static void test_landing_order(void **state)
{
    (void)state;
    stf__wbehind wb;
    assert_int_equal(stf__wb_init(&wb), 0);
    stf__wb_wrote(&wb, 3, 40 * MIB, 8 * MIB);
    stf__wb_wrote(&wb, 3, 0, 8 * MIB);
    stf__wb_wrote(&wb, 3, 8 * MIB, 8 * MIB);
    stf__wb_wrote(&wb, 3, 16 * MIB, 8 * MIB);
    assert_int_equal(g_ncalls, 6);
    expect_call(0, 's', 40 * MIB, 8 * MIB);
    expect_call(1, 's', 0, 8 * MIB);
    expect_call(2, 's', 8 * MIB, 8 * MIB);
    expect_call(3, 'd', 40 * MIB, 8 * MIB);
    expect_call(4, 's', 16 * MIB, 8 * MIB);
    expect_call(5, 'd', 0, 8 * MIB);
    stf__wb_fini(&wb);
}

/* Kept: the same runs start, and the runs out of the window are waited
 * for where they would be dropped; a wait's error is kept all the same. */
static void test_keep(void **state)
{
    (void)state;
    stf__wbehind wb;
    assert_int_equal(stf__wb_init(&wb), 0);
    stf__wb_keep(&wb);
    stf__wb_wrote(&wb, 3, 40 * MIB, 8 * MIB);
    stf__wb_wrote(&wb, 3, 0, 8 * MIB);
    stf__wb_wrote(&wb, 3, 8 * MIB, 8 * MIB);
    g_drop_errno = EIO;
    stf__wb_wrote(&wb, 3, 16 * MIB, 8 * MIB);
    assert_int_equal(g_ncalls, 6);
    expect_call(0, 's', 40 * MIB, 8 * MIB);
    expect_call(1, 's', 0, 8 * MIB);
    expect_call(2, 's', 8 * MIB, 8 * MIB);
    expect_call(3, 'w', 40 * MIB, 8 * MIB);
    expect_call(4, 's', 16 * MIB, 8 * MIB);
    expect_call(5, 'w', 0, 8 * MIB);
    uint64_t at = 0;
    assert_int_equal(stf__wb_error(&wb, &at), EIO);
    assert_int_equal(at, 0);
    stf__wb_fini(&wb);
}

/* A batch is sorted and adjacent fills merge, page edges included; only
 * whole pages start, the window keeps every page a run touched. Fills
 * under 64 KiB are left to the fsync. */
static void test_edges_and_small(void **state)
{
    (void)state;
    stf__wbehind wb;
    assert_int_equal(stf__wb_init(&wb), 0);
    stf__wb_wrote(&wb, 3, 100, (64 << 10) - 1);
    assert_int_equal(g_ncalls, 0);
    stf__wb_wrote(&wb, 3, MIB + 50, MIB);
    stf__wb_wrote(&wb, 3, 50, MIB);
    assert_int_equal(g_ncalls, 1);
    expect_call(0, 's', 4096, 2 * MIB - 4096);
    stf__wb_wrote(&wb, 3, 3 * MIB + 100, 20 * MIB);
    expect_call(1, 's', 3 * MIB + 4096, 20 * MIB - 4096);
    expect_call(2, 'd', 0, 2 * MIB + 4096); /* 20 MiB went out after it */
    stf__wb_wrote(&wb, 3, 23 * MIB + 100, 64 << 10); /* batched, not started */
    assert_int_equal(g_ncalls, 3);
    stf__wb_wrote(&wb, 3, 32 * MIB, 16 * MIB); /* not adjacent: two runs */
    assert_int_equal(g_ncalls, 7);
    expect_call(3, 's', 23 * MIB + 4096, (64 << 10) - 4096);
    expect_call(4, 's', 32 * MIB, 16 * MIB);
    expect_call(5, 'd', 3 * MIB, 20 * MIB + 4096);
    expect_call(6, 'd', 23 * MIB, 68 << 10);
    stf__wb_fini(&wb);
}

/* The window holds 64 runs at most: more drop the oldest early. */
static void test_slots(void **state)
{
    (void)state;
    stf__wbehind wb;
    assert_int_equal(stf__wb_init(&wb), 0);
    for (uint64_t i = 0; i < 96; i++) stf__wb_wrote(&wb, 3, i << 17, 1 << 16);
    assert_int_equal(g_ncalls, 128);
    for (size_t i = 0; i < 96; i++) expect_call(i, 's', (uint64_t)i << 17, 1 << 16);
    for (size_t i = 0; i < 32; i++) expect_call(96 + i, 'd', (uint64_t)i << 17, 1 << 16);
    stf__wb_fini(&wb);
}

/* A wait's error is kept (the first one) and fails the sink's finish, which
 * the fsync alone would no longer do; "not supported here" is no error. */
static void test_error(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    char *buf = calloc(1, 2 * MIB);
    assert_non_null(buf);
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    assert_int_equal(stf__sink_reserve(&s, 40 * MIB, &err), 0);
    g_drop_errno = EINVAL;
    for (uint64_t i = 0; i < 10; i++)
        assert_int_equal(stf__sink_pwrite(&s, i * 2 * MIB, buf, 2 * MIB, NULL, &err), 0);
    assert_int_equal(stf__wb_error(&stf__sink_file_of(&s)->wb, NULL), 0);
    g_drop_errno = EIO;
    assert_int_equal(stf__sink_pwrite(&s, 20 * MIB, buf, 2 * MIB, NULL, &err), 0);
    g_drop_errno = ENOSPC;
    assert_int_equal(stf__sink_pwrite(&s, 22 * MIB, buf, 2 * MIB, NULL, &err), 0);
    uint64_t at = 0;
    assert_int_equal(stf__wb_error(&stf__sink_file_of(&s)->wb, &at), EIO);
    assert_int_equal(at, 4 * MIB);
    assert_int_equal(stf__sink_finish(&s, &err), STF_EIO);
    char want[400];
    snprintf(want, sizeof want, "%s: write failed at byte %llu: %s", st_in_dir("out"),
             (unsigned long long)(4 * MIB), strerror(EIO));
    assert_string_equal(err.msg, want);
    stf__sink_abort(&s);
    assert_int_equal(st_dir_entries(st_dir), 0);
    free(buf);
}

/* The real calls: 48 MiB in 1 MiB fills, out of order, read back whole. */
static void test_real_calls(void **state)
{
    (void)state;
    stf__wb_ops_set(NULL);
    stf__sink s;
    stf_err err;
    size_t n = 48 * MIB;
    unsigned char *buf = malloc(n), *back = malloc(n);
    assert_non_null(buf);
    assert_non_null(back);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 131u + (i >> 20));
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    assert_int_equal(stf__sink_write(&s, "hdr", 3, &err), 0);
    assert_int_equal(stf__sink_reserve(&s, n, &err), 0);
    for (size_t i = 0; i < 48; i++) {
        size_t j = (i * 7) % 48; /* every MiB once, out of order */
        assert_int_equal(stf__sink_pwrite(&s, 3 + j * MIB, buf + j * MIB, MIB, NULL, &err), 0);
    }
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s);
    FILE *f = fopen(st_in_dir("out"), "rb");
    assert_non_null(f);
    char h[3];
    assert_int_equal(fread(h, 1, 3, f), 3);
    assert_memory_equal(h, "hdr", 3);
    assert_int_equal(fread(back, 1, n, f), n);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
    assert_memory_equal(back, buf, n);
    free(buf);
    free(back);
}

/* Pages of the file at path in the page cache (mincore), of how many. */
static size_t resident(const char *path, size_t *pages)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    size_t len = (size_t)st.st_size, pg = (size_t)sysconf(_SC_PAGESIZE);
    *pages = (len + pg - 1) / pg;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    unsigned char *v = malloc(*pages);
    assert_non_null(v);
    assert_int_equal(mincore(m, len, v), 0);
    size_t n = 0;
    for (size_t i = 0; i < *pages; i++) n += v[i] & 1;
    free(v);
    munmap(m, len);
    close(fd);
    return n;
}

/*
 * 4 KiB of header, then 40 MiB filled in 4 MiB pieces out of order, with
 * the real system calls: through the O_DIRECT stage (where the file system
 * takes it) or, kept, through the page cache with every page still there
 * at the end. The same bytes either way, and the file's sha256 is the
 * digest of those bytes; a kept file's pages leave the cache once hashed
 * with `uncache` (not on tmpfs, whose pages are the file).
 */
static void keep_case(int keep)
{
    stf__wb_ops_set(NULL);
    stf__sink s;
    stf_err err;
    size_t head = 4096, n = 40 * MIB;
    unsigned char *buf = malloc(head + n), *back = malloc(head + n);
    assert_non_null(buf);
    assert_non_null(back);
    for (size_t i = 0; i < head + n; i++) buf[i] = (unsigned char)(i * 167u + (i >> 16));
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    if (keep) stf__sink_keep_cache(&s);
    assert_int_equal(stf__sink_write(&s, buf, head, &err), 0);
    assert_int_equal(stf__sink_reserve(&s, n, &err), 0);
    assert_int_equal(stf__sink_seal(&s, &err), 0);
    if (keep) assert_false(stf__sink_file_of(&s)->stage.live);
    for (size_t i = 0; i < 10; i++) {
        size_t j = (i * 3) % 10;
        uint64_t at = head + j * 4 * MIB;
        assert_int_equal(stf__sink_pwrite(&s, at, buf + at, 4 * MIB, NULL, &err), 0);
    }
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s);
    size_t pages, in = resident(st_in_dir("out"), &pages);
    if (keep) assert_int_equal(in, pages);
    char want[65], hex[65];
    uint64_t size = 0;
    stf__sha256_hex(want, buf, head + n);
    assert_int_equal(stf__sha256_file_x(hex, &size, st_in_dir("out"), keep, &err), 0);
    assert_string_equal(hex, want);
    assert_int_equal(size, head + n);
    struct statfs fs;
    assert_int_equal(statfs(st_dir, &fs), 0);
    if (keep && fs.f_type != TMPFS_MAGIC) assert_int_equal(resident(st_in_dir("out"), &pages), 0);
    FILE *f = fopen(st_in_dir("out"), "rb");
    assert_non_null(f);
    assert_int_equal(fread(back, 1, head + n, f), head + n);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
    assert_memory_equal(back, buf, head + n);
    free(buf);
    free(back);
}

static void test_direct_sha256(void **state)
{
    (void)state;
    keep_case(0);
}

static void test_keep_cache_sha256(void **state)
{
    (void)state;
    keep_case(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_landing_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edges_and_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_sha256, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_cache_sha256, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
