/* Tests for lib/container/fill_stage.c through the sink: which fills are
 * staged and written with O_DIRECT (seen through the write hook, which
 * every write passes), out-of-order and concurrent fills, more blocks in
 * flight than slots, small fills, the padded last block cut back to the
 * exact size, an unfinished staged block refused at finish, the no_direct switch,
 * a sink on /dev/shm, and ENOSPC on a direct write leaving nothing. The
 * direct writes run on the stage's writer thread; the fill that completes
 * the file waits for them, so the file is whole when it returns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <sys/stat.h>

#include "container/sink.h"
#include "support/st_tmp.h"

#define B STF__FS_BLOCK
#define HDR ((uint64_t)100)

typedef struct wcall {
    uint64_t off;
    size_t len;
} wcall;

static wcall g_calls[4096];
static size_t g_ncalls;
static uint64_t g_fail_off = UINT64_MAX; /* fail the write of exactly this offset and length B */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static int rec_hook(void *ud, uint64_t off, size_t len)
{
    (void)ud;
    pthread_mutex_lock(&g_mu);
    if (g_ncalls < 4096) g_calls[g_ncalls++] = (wcall){ off, len };
    pthread_mutex_unlock(&g_mu);
    return off == g_fail_off && len == B;
}

static void hooks(int no_direct)
{
    g_ncalls = 0;
    stf__write_test_hooks_set(&(stf__write_test_hooks){
        .no_fsync = 1, .write_hook = rec_hook, .no_direct = no_direct });
}

static int teardown(void **state)
{
    g_fail_off = UINT64_MAX;
    return st_dir_teardown(state);
}

/* Byte i of the test file. */
static unsigned char pat(uint64_t i) { return (unsigned char)(i * 131 + (i >> 12) * 7 + 1); }

static unsigned char *pattern(uint64_t n)
{
    unsigned char *p = malloc(n);
    assert_non_null(p);
    for (uint64_t i = 0; i < n; i++) p[i] = pat(i);
    return p;
}

/* A sink for `path`: HDR bytes of header, then one hole of `hole` bytes to
 * the end of the file, sealed. */
static void open_holed(stf__sink *s, const char *path, const unsigned char *want, uint64_t hole)
{
    stf_err err;
    assert_int_equal(stf__sink_open(s, path, &err), 0);
    assert_int_equal(stf__sink_write(s, want, HDR, &err), 0);
    assert_int_equal(stf__sink_reserve(s, hole, &err), 0);
    assert_int_equal(stf__sink_extend(s, &err), 0);
    assert_int_equal(stf__sink_seal(s, &err), 0);
}

static void fill(stf__sink *s, const unsigned char *want, uint64_t at, uint64_t n)
{
    stf_err err;
    assert_int_equal(stf__sink_pwrite(s, at, want + at, (size_t)n, "t", &err), 0);
}

/* The file at the sink's temp path is exactly want[0..n). */
static void expect_file(const stf__sink *s, const unsigned char *want, uint64_t n)
{
    size_t got_n = 0;
    unsigned char *got = st_read_file(s->tmp_path, &got_n);
    assert_non_null(got);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, want, n);
    free(got);
}

/* How many hook calls wrote one whole block (or the padded last one) at a
 * block offset: the direct writes. */
static size_t direct_writes(uint64_t size)
{
    size_t k = 0;
    for (size_t i = 0; i < g_ncalls; i++) {
        uint64_t o = g_calls[i].off, want = size - o < B ? size - o : B;
        if (o % B == 0 && g_calls[i].len == want && (want >= STF__FS_MIN || o + want == size)) k++;
    }
    return k;
}

static int has_call(uint64_t off, size_t len)
{
    for (size_t i = 0; i < g_ncalls; i++)
        if (g_calls[i].off == off && g_calls[i].len == len) return 1;
    return 0;
}

/* Fills in reverse order, 256 KiB each: blocks 1 and 2 go out whole, the
 * last (1100 bytes, padded) too and the size is cut back; block 0 holds
 * the header written in prepare, so its fills take the page cache. */
static void test_reverse_fills(void **state)
{
    (void)state;
    uint64_t size = 3 * B + 1100, piece = 256 << 10;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("r"), want, size - HDR);
    assert_true(s.stage.live);
    uint64_t at = size;
    while (at > HDR) {
        uint64_t a = at - piece < HDR || at < piece ? HDR : at - piece;
        fill(&s, want, a, at - a);
        at = a;
    }
    expect_file(&s, want, size);
    assert_true(has_call(B, B));
    assert_true(has_call(2 * B, B));
    assert_true(has_call(3 * B, 1100));
    assert_int_equal(direct_writes(size), 3);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

/* More blocks started than there are slots: the first STF__FS_SLOTS take a
 * slot, the two after them go through the page cache, and every byte
 * lands; no block is ever waited for. */
static void test_more_blocks_than_slots(void **state)
{
    (void)state;
    uint64_t nb = STF__FS_SLOTS + 2, size = nb * B, head = 128 << 10;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("w"), want, size - HDR);
    /* Block 0 shares its page-cache fate with the header. */
    fill(&s, want, HDR, B - HDR);
    for (uint64_t b = 1; b < nb; b++) fill(&s, want, b * B, head);
    assert_int_equal(direct_writes(size), 0);
    for (uint64_t b = 1; b < nb; b++) fill(&s, want, b * B + head, B - head);
    assert_int_equal(direct_writes(size), STF__FS_SLOTS);
    for (uint64_t b = 1; b <= STF__FS_SLOTS; b++) assert_true(has_call(b * B, B));
    assert_false(has_call((STF__FS_SLOTS + 1) * B, B));
    assert_true(has_call((STF__FS_SLOTS + 1) * B + head, B - head));
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

/* Fills under STF__FS_MIN never start a staged block (scale rows). */
static void test_small_fills_not_staged(void **state)
{
    (void)state;
    uint64_t size = 2 * B, piece = 4096;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("s"), want, size - HDR);
    fill(&s, want, HDR, B - HDR);
    for (uint64_t at = B; at < size; at += piece) fill(&s, want, at, piece);
    assert_int_equal(direct_writes(size), 0);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

/* A staged block with fills missing at finish (commit refuses such an
 * output before it gets there): finish fails naming the block, and abort
 * leaves nothing. */
static void test_unfinished_block(void **state)
{
    (void)state;
    uint64_t size = 2 * B + 5000;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("u"), want, size - HDR);
    fill(&s, want, HDR, B - HDR);
    fill(&s, want, B, B / 2);
    assert_int_equal(direct_writes(size), 0);
    assert_int_equal(stf__sink_finish(&s, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "bytes never filled in the block at byte 4194304"));
    assert_int_equal(direct_writes(size), 0);
    stf__sink_abort(&s);
    assert_int_equal(st_dir_entries(st_dir), 0);
    free(want);
}

typedef struct worker {
    stf__sink *s;
    const unsigned char *want;
    uint64_t size, piece;
    unsigned k, of;
} worker;

static void *work(void *ud)
{
    worker *w = ud;
    stf_err err;
    /* Piece i goes to thread i % of, so the threads interleave in every block. */
    uint64_t i = 0;
    for (uint64_t at = HDR; at < w->size; at += w->piece, i++) {
        uint64_t n = w->size - at < w->piece ? w->size - at : w->piece;
        if (i % w->of == w->k &&
            stf__sink_pwrite(w->s, at, w->want + at, (size_t)n, "t", &err) != 0)
            return (void *)1;
    }
    return NULL;
}

/* Three threads fill interleaved 96 KiB pieces of six blocks (every fill
 * at least STF__FS_MIN, so which piece of a block lands first does not
 * matter). */
static void test_concurrent_fills(void **state)
{
    (void)state;
    uint64_t size = 6 * B;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("c"), want, size - HDR);
    worker w[3];
    pthread_t th[3];
    for (unsigned k = 0; k < 3; k++) {
        w[k] = (worker){ &s, want, size, 96 << 10, k, 3 };
        assert_int_equal(pthread_create(&th[k], NULL, work, &w[k]), 0);
    }
    for (unsigned k = 0; k < 3; k++) {
        void *r;
        assert_int_equal(pthread_join(th[k], &r), 0);
        assert_null(r);
    }
    expect_file(&s, want, size);
    assert_int_equal(direct_writes(size), 5); /* blocks 1..5 */
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    stf__sink_abort(&s);
    free(want);
}

/* The tests' no_direct switch, and a memory file: page cache only, same bytes. */
static void test_no_direct(void **state)
{
    (void)state;
    uint64_t size = 2 * B + 10;
    unsigned char *want = pattern(size);
    for (int mem = 0; mem < 2; mem++) {
        stf__sink s;
        stf_err err;
        hooks(!mem);
        if (mem) {
            assert_int_equal(stf__sink_open_mem(&s, "m", &err), 0);
            assert_int_equal(stf__sink_write(&s, want, HDR, &err), 0);
            assert_int_equal(stf__sink_reserve(&s, size - HDR, &err), 0);
            assert_int_equal(stf__sink_extend(&s, &err), 0);
            assert_int_equal(stf__sink_seal(&s, &err), 0);
        } else open_holed(&s, st_in_dir("n"), want, size - HDR);
        assert_false(s.stage.live);
        fill(&s, want, HDR, size - HDR);
        assert_int_equal(direct_writes(size), 0);
        assert_int_equal(stf__sink_finish(&s, &err), 0);
        expect_file(&s, want, size);
        stf__sink_abort(&s);
    }
    free(want);
}

/* A sink on /dev/shm (tmpfs): staged where the kernel takes O_DIRECT
 * there, through the page cache where it refuses; the bytes either way. */
static void test_tmpfs(void **state)
{
    (void)state;
    char dir[256];
    struct stat st;
    if (stat("/dev/shm", &st) != 0 || st_tmp_setup_in(dir, sizeof dir, "/dev/shm", "fs") != 0)
        skip();
    uint64_t size = 2 * B + 3;
    unsigned char *want = pattern(size);
    char *path = st_path(dir, "o");
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, path, want, size - HDR);
    fill(&s, want, HDR, size - HDR);
    assert_int_equal(direct_writes(size), s.stage.live ? 2 : 0); /* blocks 1 and 2 */
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    size_t n = 0;
    unsigned char *got = st_read_file(path, &n);
    assert_int_equal(n, size);
    assert_memory_equal(got, want, size);
    free(got);
    stf__sink_abort(&s);
    free(path);
    st_rmtree(dir);
    free(want);
}

/* ENOSPC on the direct write of block 1 (on the writer thread): the fill
 * that completes the file fails naming the tensor and the block's offset,
 * and so does finish; abort leaves nothing. */
static void test_enospc_direct(void **state)
{
    (void)state;
    uint64_t size = 3 * B;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    g_fail_off = B;
    open_holed(&s, st_in_dir("e"), want, size - HDR);
    fill(&s, want, HDR, B - HDR);
    /* The writer may fail block 1 before this fill returns, or after. */
    int rc = stf__sink_pwrite(&s, B, want + B, (size_t)B, "t", &err);
    assert_true(rc == 0 || rc == STF_EIO);
    assert_int_equal(stf__sink_pwrite(&s, 2 * B, want + 2 * B, (size_t)B, "t", &err), STF_EIO);
    assert_non_null(strstr(err.msg, "tensor 't': write failed at byte 4194304"));
    assert_non_null(strstr(err.msg, "No space left on device"));
    assert_int_equal(stf__sink_finish(&s, &err), STF_EIO);
    assert_non_null(strstr(err.msg, "write failed at byte 4194304"));
    stf__sink_abort(&s);
    assert_int_equal(st_dir_entries(st_dir), 0);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reverse_fills, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_more_blocks_than_slots, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_fills_not_staged, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_unfinished_block, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_fills, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_direct, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmpfs, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_enospc_direct, st_dir_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
