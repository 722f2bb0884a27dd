/* Tests for lib/io/fill_stage.c through the sink: which fills are
 * staged and written with O_DIRECT (seen through the write hook, which
 * every write passes), out-of-order and concurrent fills, more blocks in
 * flight than slots, small fills and their cap, blocks that also hold
 * prepare's bytes (read back, so fills make no page-cache write), a fill
 * waiting for a slot while the writer is behind instead of spilling, the
 * padded last block cut back to the exact size, an unfinished staged block
 * refused at finish, the no_direct switch, a sink on /dev/shm, and ENOSPC
 * on a direct write leaving nothing. The direct writes run on the stage's
 * writer thread; the fill that completes the file waits for them, so the
 * file is whole when it returns. */
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
#include <time.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "io/sink_file.h"
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
/* The write at g_gate_off holds its thread (the stage's writer) until
 * g_gate_open; g_at_gate says it got there. */
static uint64_t g_gate_off = UINT64_MAX;
static int g_at_gate, g_gate_open;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;

static int rec_hook(void *ud, uint64_t off, size_t len)
{
    (void)ud;
    pthread_mutex_lock(&g_mu);
    if (g_ncalls < 4096) g_calls[g_ncalls++] = (wcall){ off, len };
    if (off == g_gate_off) {
        g_at_gate = 1;
        pthread_cond_broadcast(&g_gate_cv);
        while (!g_gate_open) pthread_cond_wait(&g_gate_cv, &g_mu);
    }
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
    g_gate_off = UINT64_MAX;
    g_at_gate = g_gate_open = 0;
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

/* Wait until the stage's writer has written every complete block. */
static void idle(stf__sink *s)
{
    uint64_t at, bad;
    int e;
    (void)stf__fs_drain(&stf__sink_file_of(s)->stage, &at, &e, &bad);
}

static int has_call(uint64_t off, size_t len)
{
    for (size_t i = 0; i < g_ncalls; i++)
        if (g_calls[i].off == off && g_calls[i].len == len) return 1;
    return 0;
}

/* Fills in reverse order, 256 KiB each: blocks 1 and 2 go out whole, the
 * last (1100 bytes, padded) too and the size is cut back; block 0, which
 * also holds the header written in prepare, goes out whole as well. The
 * fill that completes the file leaves no staging buffer behind. */
static void test_reverse_fills(void **state)
{
    (void)state;
    uint64_t size = 3 * B + 1100, piece = 256 << 10;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("r"), want, size - HDR);
    assert_true(stf__sink_file_of(&s)->stage.live);
    uint64_t at = size;
    while (at > HDR) {
        uint64_t a = at - piece < HDR || at < piece ? HDR : at - piece;
        fill(&s, want, a, at - a);
        at = a;
    }
    expect_file(&s, want, size);
    /* The last fill freed the staging buffers. */
    const stf__fstage *stage = &stf__sink_file_of(&s)->stage;
    for (int i = 0; i < STF__FS_SLOTS; i++) assert_null(stage->slot[i].buf);
    assert_true(has_call(B, B));
    assert_true(has_call(2 * B, B));
    assert_true(has_call(3 * B, 1100));
    assert_true(has_call(0, B));
    assert_int_equal(direct_writes(size), 4);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

/* More blocks started than there are slots: the first STF__FS_SLOTS take a
 * slot, the one after them goes through the page cache, and every byte
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
    /* Block 0 goes out, header and all, and gives its slot back. */
    fill(&s, want, HDR, B - HDR);
    idle(&s);
    assert_true(has_call(0, B));
    for (uint64_t b = 1; b < nb; b++) fill(&s, want, b * B, head);
    assert_int_equal(direct_writes(size), 1);
    for (uint64_t b = 1; b < nb; b++) fill(&s, want, b * B + head, B - head);
    assert_int_equal(direct_writes(size), 1 + STF__FS_SLOTS);
    for (uint64_t b = 1; b <= STF__FS_SLOTS; b++) assert_true(has_call(b * B, B));
    assert_false(has_call((STF__FS_SLOTS + 1) * B, B));
    assert_true(has_call((STF__FS_SLOTS + 1) * B + head, B - head));
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

typedef struct opener {
    stf__sink *s;
    uint64_t block;
} opener;

/* Open the gate once a fill waits for a slot, or once `block` is settled
 * without waiting (spilled: the test then fails). */
static void *open_gate(void *ud)
{
    opener *o = ud;
    stf__fstage *st = &stf__sink_file_of(o->s)->stage;
    for (;;) {
        pthread_mutex_lock(&st->mu);
        int go = st->waits > 0 || st->state[o->block] != STF__FS_FREE;
        pthread_mutex_unlock(&st->mu);
        if (go) break;
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    pthread_mutex_lock(&g_mu);
    g_gate_open = 1;
    pthread_cond_broadcast(&g_gate_cv);
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* Every slot in use, one of them held by the writer's direct write: a fill
 * that starts another block waits for that write to free its slot, and the
 * block is staged, not sent through the page cache. */
static void test_fill_waits_for_writer(void **state)
{
    (void)state;
    uint64_t nb = STF__FS_SLOTS + 2, size = nb * B, head = 128 << 10, last = nb - 1;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    g_gate_off = B;
    open_holed(&s, st_in_dir("g"), want, size - HDR);
    fill(&s, want, HDR, B - HDR);
    idle(&s);
    fill(&s, want, B, B); /* block 1: queued, then held at the gate */
    pthread_mutex_lock(&g_mu);
    while (!g_at_gate) pthread_cond_wait(&g_gate_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    for (uint64_t b = 2; b < last; b++) fill(&s, want, b * B, head);
    opener o = { &s, last };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, open_gate, &o), 0);
    fill(&s, want, last * B, head);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(stf__sink_file_of(&s)->stage.waits, 1);
    assert_false(has_call(last * B, head));
    for (uint64_t b = 2; b <= last; b++) fill(&s, want, b * B + head, B - head);
    assert_int_equal(direct_writes(size), nb);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

/* Fills under STF__FS_MIN (scale rows) start staged blocks while such
 * blocks hold fewer than half the slots: with STF__FS_SLOTS / 2 of them
 * open, the next block a small fill starts goes through the page cache;
 * once they are written, small fills start staged blocks again. */
static void test_small_fills_capped(void **state)
{
    (void)state;
    uint64_t half = STF__FS_SLOTS / 2, nb = half + 3, size = nb * B, piece = 4096;
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    open_holed(&s, st_in_dir("s"), want, size - HDR);
    fill(&s, want, HDR, B - HDR);
    idle(&s);
    for (uint64_t b = 1; b <= half + 1; b++) fill(&s, want, b * B, piece);
    for (uint64_t b = 1; b <= half + 1; b++)
        for (uint64_t at = b * B + piece; at < (b + 1) * B; at += piece) fill(&s, want, at, piece);
    idle(&s);
    assert_int_equal(direct_writes(size), 1 + half);
    for (uint64_t b = 0; b <= half; b++) assert_true(has_call(b * B, B));
    /* Block half + 1 took the page cache, a piece at a time. */
    assert_false(has_call((half + 1) * B, B));
    assert_true(has_call((half + 1) * B, piece));
    assert_true(has_call((half + 2) * B - piece, piece));
    /* The cap counts open blocks only: the last block is staged again. */
    for (uint64_t at = (nb - 1) * B; at < size; at += piece) fill(&s, want, at, piece);
    assert_int_equal(direct_writes(size), 2 + half);
    assert_true(has_call((nb - 1) * B, B));
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    expect_file(&s, want, size);
    stf__sink_abort(&s);
    free(want);
}

/*
 * Blocks that hold bytes written in prepare between and around the holes
 * (a header, copied tensors in the middle of a block, markers across a
 * block boundary and at the end of the file): each block with a hole goes
 * out in one direct write with prepare's bytes read back in place, a block
 * with no hole is never written again, and the fills make no page-cache
 * write at all, small ones included. The last block is padded and cut back.
 */
static void test_prepare_bytes_read_back(void **state)
{
    (void)state;
    /* [begin, end) of each range; even ranges are written in prepare, odd
     * ones are holes. Block 4 lies wholly inside a written range. */
    static const uint64_t r[][2] = {
        { 0, HDR },
        { HDR, B + 1000 },
        { B + 1000, B + 6000 },
        { B + 6000, 3 * B - 50 },
        { 3 * B - 50, 3 * B + 300 },
        { 3 * B + 300, 3 * B + 4096 },
        { 3 * B + 4096, 5 * B + 8192 },
        { 5 * B + 8192, 5 * B + 20000 },
        { 5 * B + 20000, 5 * B + 20100 },
    };
    enum { NR = sizeof r / sizeof r[0] };
    uint64_t size = r[NR - 1][1];
    unsigned char *want = pattern(size);
    stf__sink s;
    stf_err err;
    hooks(0);
    assert_int_equal(stf__sink_open(&s, st_in_dir("p"), &err), 0);
    for (size_t i = 0; i < NR; i++) {
        uint64_t n = r[i][1] - r[i][0];
        if (i % 2) assert_int_equal(stf__sink_reserve(&s, n, &err), 0);
        else assert_int_equal(stf__sink_write(&s, want + r[i][0], (size_t)n, &err), 0);
    }
    assert_int_equal(stf__sink_seal(&s, &err), 0);
    assert_true(stf__sink_file_of(&s)->stage.live);
    g_ncalls = 0;
    /* The holes back to front, in 200 KiB pieces from each hole's end. */
    for (size_t i = NR - 2; i < NR; i -= 2) {
        uint64_t at = r[i][1];
        while (at > r[i][0]) {
            uint64_t a = at - r[i][0] > (200 << 10) ? at - (200 << 10) : r[i][0];
            fill(&s, want, a, at - a);
            at = a;
        }
    }
    idle(&s);
    for (uint64_t b = 0; b < 4; b++) assert_true(has_call(b * B, B));
    assert_true(has_call(5 * B, 20100));
    assert_int_equal(g_ncalls, 5);
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
    assert_int_equal(stf__sink_finish(&s, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "bytes never filled in the block at byte 4194304"));
    /* Block 0 went out whole; block 1 never did. */
    assert_int_equal(direct_writes(size), 1);
    assert_true(has_call(0, B));
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
    assert_int_equal(direct_writes(size), 6); /* blocks 0..5 */
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
        /* A memory file has no stage at all. */
        assert_true(mem ? !stf__sink_file_of(&s) : !stf__sink_file_of(&s)->stage.live);
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
    int live = stf__sink_file_of(&s)->stage.live;
    assert_int_equal(direct_writes(size), live ? 3 : 0); /* blocks 0, 1 and 2 */
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
        cmocka_unit_test_setup_teardown(test_fill_waits_for_writer, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_fills_capped, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare_bytes_read_back, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_unfinished_block, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_fills, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_direct, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmpfs, st_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_enospc_direct, st_dir_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
