/*
 * Tests for the read-ahead of seekable zstd input (lib/container/
 * zsrc_seekable.c): which frames a run of contiguous reads has decoded
 * ahead, counted exactly with stf_ckpt_shard_frames_decoded, which run the
 * window follows when two are under way, which cached frame a decode
 * (ahead or for a read) takes the slot of, and a frame the read-ahead
 * fails to decode.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "support/st_ckptfile.h"
#include "support/st_tmp.h"
#include "support/st_zseek.h"

#define NT 12
#define TBYTES 48000

/* The plain checkpoint: NT tensors of TBYTES bytes; tensor i is frame
 * i + 1 of its seekable image (frame 0 holds the header). */
static unsigned char *g_plain;
static size_t g_plain_len;
static uint64_t g_tbegin[NT]; /* absolute file offsets of the tensors */

static int make_plain(void **state)
{
    if (st_dir_setup(state)) return -1;
    g_plain = st_zplain_u8(NT, TBYTES, &g_plain_len, g_tbegin);
    return g_plain ? 0 : -1;
}

static int free_plain(void **state)
{
    free(g_plain);
    return st_dir_teardown(state);
}

/* The seekable image (frames cut at the tensors) opened with a cache of
 * `cache` frames, frame `bad` made corrupt (its magic number's last byte;
 * 0: none, frame 0 holds the header); the frames decoded at open (the
 * header's) checked. *c_off (when not NULL): frame bad's compressed
 * offset. */
static stf_ckpt *open_image(const char *name, unsigned cache, size_t bad, uint64_t *c_off);

/* Image b (freed) written to `name`, frame `bad` made corrupt as above,
 * opened as open_image says. */
static stf_ckpt *open_zbuf(const char *name, unsigned cache, st_zbuf b, size_t bad,
                           uint64_t *c_off)
{
    if (bad) b.p[b.c_off[bad] + 3] ^= 0xFF;
    if (c_off) *c_off = b.c_off[bad];
    const char *p = st_in_dir(name);
    assert_int_equal(st_write_file(p, b.p, b.n), 0);
    free(b.p);
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.zstd_cache_frames = cache;
    stf_ckpt *c = NULL;
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf_ckpt_open(&c, p, &o, &e), 0);
    assert_int_equal(stf_ckpt_shard_frames_decoded(c, 0), 1);
    return c;
}

static stf_ckpt *open_image(const char *name, unsigned cache, size_t bad, uint64_t *c_off)
{
    st_zbuf b = st_zseekable(g_plain, g_plain_len, 65536, g_tbegin, NT, 1);
    assert_int_equal(b.nframes, NT + 1);
    return open_zbuf(name, cache, b, bad, c_off);
}

static stf_ckpt *open_cached(const char *name, unsigned cache)
{
    return open_image(name, cache, 0, NULL);
}

static uint64_t decoded(const stf_ckpt *c) { return stf_ckpt_shard_frames_decoded(c, 0); }

/* Frames decoded once they reach `want`, waiting up to `ms` milliseconds
 * for the read-ahead thread; the count then. */
static uint64_t decoded_within(const stf_ckpt *c, uint64_t want, int ms)
{
    const struct timespec tick = { 0, 1000000 };
    for (int i = 0; i < ms && decoded(c) < want; i++) nanosleep(&tick, NULL);
    return decoded(c);
}

/* Frames decoded once they reach `want`, waiting up to 10 s. */
static uint64_t decoded_reaching(const stf_ckpt *c, uint64_t want)
{
    return decoded_within(c, want, 10000);
}

/* Read tensor i in `parts` contiguous reads; the bytes checked. */
static void read_parts(const stf_ckpt *c, size_t i, int parts)
{
    uint8_t buf[TBYTES];
    stf_err e;
    stf_err_clear(&e);
    size_t at = 0;
    for (int q = 0; q < parts; q++) {
        size_t n = (size_t)TBYTES * (size_t)(q + 1) / (size_t)parts - at;
        assert_int_equal(stf_ckpt_read(buf + at, c, i, at, n, &e), 0);
        at += n;
    }
    assert_memory_equal(buf, g_plain + g_tbegin[i], TBYTES);
}

/*
 * With a cache of 5 frames (2 of read-ahead), random reads decode
 * only their frames, and a run of contiguous reads decodes the next two
 * frames ahead of it, each once: the pass that follows finds them cached.
 */
static void test_seekable_reads_ahead(void **state)
{
    (void)state;
    stf_ckpt *c = open_cached("ra.safetensors.zst", 5);
    read_parts(c, 5, 1);
    read_parts(c, 2, 1);
    assert_int_equal(decoded(c), 3);
    /* Tensor 1 (frame 2) in four contiguous reads: the fourth moves the
     * read-ahead to frames 3 and 4; frame 3 (tensor 2) is cached, frame 4
     * (tensor 3) is decoded ahead. */
    stf_err e;
    stf_err_clear(&e);
    uint8_t buf[TBYTES];
    for (int q = 0; q < 4; q++) {
        assert_int_equal(stf_ckpt_read(buf + q * (TBYTES / 4), c, 1, (uint64_t)q * (TBYTES / 4),
                                       TBYTES / 4, &e), 0);
        /* Nothing ahead after the third: given time, none is decoded. */
        if (q < 3) assert_int_equal(q < 2 ? decoded(c) : decoded_within(c, 5, 300), 4);
    }
    assert_memory_equal(buf, g_plain + g_tbegin[1], TBYTES);
    assert_int_equal(decoded_reaching(c, 5), 5);
    /* The run goes on: tensor 2 moves the window to frames 4 and 5
     * (tensor 4 decoded ahead), tensor 3 to frames 5 and 6 (tensor 5
     * cached); tensors 4 and 5 move it to frames 7 and 8, the last the
     * run reaches. Every frame of the pass was decoded once. */
    read_parts(c, 2, 1);
    read_parts(c, 3, 1);
    assert_int_equal(decoded_reaching(c, 6), 6);
    read_parts(c, 4, 1);
    read_parts(c, 5, 1);
    assert_int_equal(decoded_reaching(c, 8), 8);
    stf_ckpt_free(c);
}

/*
 * Two runs (cache 5, a window of 2): the window stays with the run that
 * moved it last while that run reads on, even when the other is far
 * behind it; once the owner has made no read among the last 64, the run
 * behind takes the window over, and its next frames are decoded ahead,
 * each once.
 */
static void test_seekable_ahead_stays_with_its_owner(void **state)
{
    (void)state;
    stf_ckpt *c = open_cached("own.safetensors.zst", 5);
    /* The owner: tensor 9 (frame 10) in four reads; frames 11 and 12
     * decoded ahead. */
    read_parts(c, 9, 4);
    assert_int_equal(decoded_reaching(c, 4), 4);
    /* A run at the start: tensor 0 (frame 1) in four reads, then tensor 1
     * (frame 2): only their own frames, nothing ahead of them. */
    read_parts(c, 0, 4);
    read_parts(c, 1, 1);
    assert_int_equal(decoded_within(c, 7, 300), 6);
    /* The owner reads on: frames 11 and 12 are still cached. */
    read_parts(c, 10, 1);
    read_parts(c, 11, 1);
    assert_int_equal(decoded(c), 6);
    /* The owner stops; the other run reads tensor 2 (frame 3) in 70 reads:
     * from the 64th read after the owner's last, the window is frames 4
     * and 5 (tensors 3 and 4), decoded ahead, once each. */
    read_parts(c, 2, 70);
    assert_int_equal(decoded_reaching(c, 9), 9);
    /* It reads on through them, the window moving with it: frames 6
     * and 7 decoded ahead. */
    read_parts(c, 3, 1);
    read_parts(c, 4, 1);
    assert_int_equal(decoded_reaching(c, 11), 11);
    stf_ckpt_free(c);
}

/* Read bytes [at, at + n) of tensor i; the bytes checked. */
static void read_span(const stf_ckpt *c, size_t i, size_t at, size_t n)
{
    uint8_t buf[TBYTES];
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf_ckpt_read(buf, c, i, at, n, &e), 0);
    assert_memory_equal(buf, g_plain + g_tbegin[i] + at, n);
}

/* Read quarter q of tensor i (the quarters of the tensors in file order are
 * the chunks of a pass, as the jobs of fix take them). */
static void read_quarter(const stf_ckpt *c, size_t i, int q)
{
    read_span(c, i, (size_t)q * (TBYTES / 4), TBYTES / 4);
}

/*
 * The default cache (4 frames) reads two frames ahead of one reader, and a
 * reader that lags behind the pass keeps its frame: two readers share a
 * pass in quarter-tensor chunks; the second has taken the first quarter of
 * tensor 1 (frame 2) but is held up while the first reads on through
 * tensors 1 to 3 (frames 2 to 4), the window moving to frames 5 and 6.
 * The decodes ahead take the slots of the frames read through, never
 * frame 2, which the late read finds cached: each frame decoded once.
 */
static void test_seekable_lagging_reader_keeps_its_frame(void **state)
{
    (void)state;
    stf_ckpt *c = open_cached("lag.safetensors.zst", 4);
    for (int q = 0; q < 4; q++) read_quarter(c, 0, q);
    /* Frame 1 read in a run of four: frames 2 and 3 decoded ahead. */
    assert_int_equal(decoded_reaching(c, 4), 4);
    for (int q = 1; q < 4; q++) read_quarter(c, 1, q);
    for (size_t i = 2; i < 4; i++)
        for (int q = 0; q < 4; q++) read_quarter(c, i, q);
    /* Frames 4 to 6 decoded ahead of the first reader, once each. */
    assert_int_equal(decoded_reaching(c, 7), 7);
    read_quarter(c, 1, 0);
    assert_int_equal(decoded(c), 7);
    stf_ckpt_free(c);
}

/*
 * A decode ahead takes the slot of a frame far behind the window (more
 * than a cache: 4 frames) or past it, never that of a frame a reader
 * lagging behind has still to read, up to a cache behind: with the default
 * cache, a reader has read the first quarter of tensor 2 (frame 3), then
 * the first quarter of frame g, far behind (frame 2 of a window at frame
 * 7: 2 + 4 < 7) or past the window (frame 10), then a run reads half of
 * tensor 5 (frame 6) in four reads, which moves the window to frames 7
 * and 8. Frame 3 (3 + 4 >= 7) is the least recently used of the frames
 * neither read through nor next to the window, yet the decodes ahead take
 * frame 0's slot and frame g's, and the lagging reader finds frame 3
 * cached.
 */
static void test_seekable_ahead_spares_a_lagging_frame(void **state)
{
    (void)state;
    static const size_t far[] = { 2, 10 };
    for (size_t t = 0; t < sizeof far / sizeof far[0]; t++) {
        const size_t g = far[t];
        stf_ckpt *c = open_cached(t ? "sparep.safetensors.zst" : "spareb.safetensors.zst", 4);
        read_quarter(c, 2, 0);
        read_quarter(c, g - 1, 0);
        assert_int_equal(decoded(c), 3);
        for (int q = 0; q < 4; q++) read_span(c, 5, (size_t)q * (TBYTES / 8), TBYTES / 8);
        /* Frames 3, g and 6 decoded for the reads, 7 and 8 ahead. */
        assert_int_equal(decoded_reaching(c, 6), 6);
        /* The lagging reader reads on: frame 3 is cached. */
        read_quarter(c, 2, 1);
        assert_int_equal(decoded(c), 6);
        /* So are frames 7 and 8 (tensors 6 and 7), and frame 6. */
        read_quarter(c, 6, 0);
        read_quarter(c, 7, 0);
        read_span(c, 5, TBYTES / 2, TBYTES / 2);
        assert_int_equal(decoded(c), 6);
        /* Frame g is not: reading it decodes it again. */
        read_quarter(c, g - 1, 1);
        assert_int_equal(decoded(c), 7);
        stf_ckpt_free(c);
    }
}

/*
 * A reader's decode spares the window and the two frames before it, where
 * the run's readers are: with a cache of 5 (a window of 2), a run reads the
 * last quarter of tensor 2 (frame 3) and the first of tensor 3 (frame 4)
 * in four reads, a random read of tensor 9 (frame 10) coming between its
 * second and third. The window is frames 5 and 6, decoded ahead into the
 * free slot and frame 0's (read through at open). A random read of tensor
 * 10 (frame 11) then takes frame 10's slot, past the window, not frame 3's,
 * used less recently but next to the window.
 */
static void test_seekable_read_spares_the_run(void **state)
{
    (void)state;
    const size_t e8 = TBYTES / 8;
    stf_ckpt *c = open_cached("run.safetensors.zst", 5);
    read_span(c, 2, 6 * e8, e8);
    read_span(c, 2, 7 * e8, e8);
    read_quarter(c, 9, 0);
    read_span(c, 3, 0, e8);
    read_span(c, 3, e8, e8);
    assert_int_equal(decoded_reaching(c, 6), 6);
    read_quarter(c, 10, 0);
    assert_int_equal(decoded(c), 7);
    /* Frames 3 to 6 are cached. */
    read_span(c, 2, 0, e8);
    read_span(c, 3, 5 * e8, e8);
    read_quarter(c, 4, 0);
    read_quarter(c, 5, 0);
    assert_int_equal(decoded(c), 7);
    /* Frame 10 is not. */
    read_quarter(c, 9, 1);
    assert_int_equal(decoded(c), 8);
    stf_ckpt_free(c);
}

/*
 * When every idle slot holds the window or the two frames before it, a
 * read takes the least recently used of them rather than wait: with the
 * default cache, a run reads the last quarter of tensor 2 (frame 3) and
 * the first of tensor 3 (frame 4) in four reads; frames 5 and 6 are
 * decoded ahead into the free slot and frame 0's. A random read of tensor
 * 9 (frame 10) takes frame 3's slot, and returns.
 */
static void test_seekable_read_takes_a_run_slot_last(void **state)
{
    (void)state;
    const size_t e8 = TBYTES / 8;
    stf_ckpt *c = open_cached("last.safetensors.zst", 4);
    read_span(c, 2, 6 * e8, e8);
    read_span(c, 2, 7 * e8, e8);
    read_span(c, 3, 0, e8);
    read_span(c, 3, e8, e8);
    assert_int_equal(decoded_reaching(c, 5), 5);
    read_quarter(c, 9, 0);
    assert_int_equal(decoded(c), 6);
    /* Frames 4 to 6 and 10 are cached, frame 3 is not. */
    read_span(c, 3, 5 * e8, e8);
    read_quarter(c, 4, 0);
    read_quarter(c, 5, 0);
    read_quarter(c, 9, 1);
    assert_int_equal(decoded(c), 6);
    read_span(c, 2, 0, e8);
    assert_int_equal(decoded(c), 7);
    stf_ckpt_free(c);
}

/*
 * A read continues the longest run it extends: a random read of the
 * middle of tensor 2 (frame 3) comes first; a pass reads tensor 1 (frame
 * 2) in four reads (cache 5: frames 3 and 4 then ahead of it), then the
 * first half of tensor 2, ending where the random read ended. The pass's
 * next reads, the rest of tensor 2 and tensor 3 (frame 4), continue the
 * pass, not the random read, and move the window to frames 5 and 6:
 * frame 6 is decoded ahead.
 */
static void test_seekable_run_continues_the_longest(void **state)
{
    (void)state;
    stf_ckpt *c = open_cached("long.safetensors.zst", 5);
    read_quarter(c, 2, 1);
    assert_int_equal(decoded(c), 2);
    read_parts(c, 1, 4);
    assert_int_equal(decoded_reaching(c, 4), 4);
    read_span(c, 2, 0, TBYTES / 2);
    assert_int_equal(decoded_reaching(c, 5), 5);
    read_span(c, 2, TBYTES / 2, TBYTES / 2);
    read_parts(c, 3, 1);
    assert_int_equal(decoded_reaching(c, 6), 6);
    stf_ckpt_free(c);
}

/*
 * A frame the read-ahead fails to decode is left to its reader, whose
 * read fails naming the file and the frame's compressed offset; the
 * read-ahead stops short of it and does not try it again: with the
 * default cache and frame 5 (tensor 4) corrupt, a run reads tensor 2
 * (frame 3) in four reads; frame 4 is decoded ahead, frame 5 tried once.
 */
static void test_seekable_ahead_stops_at_a_bad_frame(void **state)
{
    (void)state;
    uint64_t at;
    stf_ckpt *c = open_image("bad.safetensors.zst", 4, 5, &at);
    read_parts(c, 2, 4);
    assert_int_equal(decoded_reaching(c, 4), 4);
    assert_int_equal(decoded_within(c, 5, 300), 4);
    uint8_t buf[TBYTES / 4];
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf_ckpt_read(buf, c, 4, 0, sizeof buf, &e), STF_EFORMAT);
    assert_int_equal(decoded(c), 5);
    char want[512];
    snprintf(want, sizeof want,
             "%s: S26 ZstdCorrupt: frame 5 at compressed byte %llu does not start with the zstd "
             "or grouped-frame magic number", st_in_dir("bad.safetensors.zst"),
             (unsigned long long)at);
    assert_non_null(strstr(e.msg, want));
    assert_string_equal(e.rule, "S26");
    assert_true(e.has_offset);
    assert_int_equal(e.offset, at);
    /* Frame 4, decoded ahead, reads from the cache. */
    read_span(c, 3, 100, TBYTES - 100);
    assert_int_equal(decoded(c), 5);
    stf_ckpt_free(c);
}

/* ------------------------------------------------------------ a held decode */

/*
 * An allocator that holds the first allocation of g_gate_size bytes (a
 * frame buffer of that size, the first time a slot grows to it) until the
 * test opens the gate: the decode of that frame stays under way, for as
 * long as the test needs, without timing.
 */
static pthread_mutex_t g_gmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gcv = PTHREAD_COND_INITIALIZER;
static size_t g_gate_size;
static int g_gate; /* 0 closed, 1 a decode waits at it, 2 open */

static void *gate_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    pthread_mutex_lock(&g_gmu);
    if (n == g_gate_size && g_gate == 0) {
        g_gate = 1;
        pthread_cond_broadcast(&g_gcv);
        while (g_gate != 2) pthread_cond_wait(&g_gcv, &g_gmu);
    }
    pthread_mutex_unlock(&g_gmu);
    return realloc(p, n);
}

static void gate_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

static void gate_set(int to)
{
    pthread_mutex_lock(&g_gmu);
    g_gate = to;
    pthread_cond_broadcast(&g_gcv);
    pthread_mutex_unlock(&g_gmu);
}

/* Until a decode waits at the gate. */
static void gate_reached(void)
{
    pthread_mutex_lock(&g_gmu);
    while (g_gate != 1) pthread_cond_wait(&g_gcv, &g_gmu);
    pthread_mutex_unlock(&g_gmu);
}

/* After a test, failed or not: the gate open, the allocator the default. */
static int gate_teardown(void **state)
{
    (void)state;
    gate_set(2);
    stf_set_allocator(NULL);
    return 0;
}

/* A read of another thread: the second quarter of tensor i. */
typedef struct reader {
    const stf_ckpt *c;
    size_t i;
    int rc;
    uint8_t buf[TBYTES / 4];
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    stf_err e;
    stf_err_clear(&e);
    r->rc = stf_ckpt_read(r->buf, r->c, r->i, sizeof r->buf, sizeof r->buf, &e);
    return NULL;
}

/*
 * A reader that would wait for a frame being decoded decodes a frame of
 * the window instead, once, then waits; a window frame it fails to decode
 * stops the window short of it (it is not tried again while the reader
 * waits), and its own reader gets the error. The image has frame 6 twice
 * as long (tensors 5 and 6; frame k holds tensor k - 1 before it, tensor k
 * after), cache 5. A run reads tensor 4 (frame 5) in four reads: the
 * window is frames 6 and 7, and the read-ahead's decode of frame 6 is held.
 * Another thread reads the second quarter of tensor 5 (frame 6; not where
 * the run goes on): it decodes frame 7 (good or corrupt), and waits. A
 * read of this thread meanwhile makes two readers at once. With frame 7
 * good, the run's next read (tensor 5) moves the window to frames 7 to 9,
 * one more than those two readers: frames 8 and 9 decoded ahead.
 */
static void test_seekable_waiting_reader_decodes_ahead(void **state)
{
    (void)state;
    uint64_t cuts[NT];
    size_t nc = 0;
    for (size_t i = 0; i < NT; i++)
        if (i != 6) cuts[nc++] = g_tbegin[i];
    stf_allocator a = { gate_realloc, gate_free, NULL };
    for (size_t bad = 0; bad <= 7; bad += 7) {
        g_gate_size = 2 * TBYTES;
        gate_set(0);
        stf_set_allocator(&a);
        st_zbuf b = st_zseekable(g_plain, g_plain_len, 4 * TBYTES, cuts, nc, 1);
        assert_int_equal(b.nframes, NT);
        uint64_t at;
        stf_ckpt *c = open_zbuf(bad ? "gbad.safetensors.zst" : "gate.safetensors.zst", 5, b,
                                bad, &at);
        read_parts(c, 4, 4);
        gate_reached();
        assert_int_equal(decoded(c), 3);
        reader r = { c, 5, -1, { 0 } };
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, reader_main, &r), 0);
        assert_int_equal(decoded_reaching(c, 4), 4);
        assert_int_equal(decoded_within(c, 5, 300), 4);
        read_span(c, 4, 0, 100);
        gate_set(2);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_int_equal(r.rc, 0);
        assert_memory_equal(r.buf, g_plain + g_tbegin[5] + sizeof r.buf, sizeof r.buf);
        assert_int_equal(decoded(c), 4);
        if (bad) {
            uint8_t buf[TBYTES / 4];
            stf_err e;
            stf_err_clear(&e);
            assert_int_equal(stf_ckpt_read(buf, c, 7, 0, sizeof buf, &e), STF_EFORMAT);
            assert_non_null(strstr(e.msg, st_in_dir("gbad.safetensors.zst")));
            assert_string_equal(e.rule, "S26");
            assert_int_equal(e.offset, at);
            assert_int_equal(decoded(c), 5);
        } else {
            read_parts(c, 5, 1);
            assert_int_equal(decoded_reaching(c, 6), 6);
            read_quarter(c, 7, 0);
            read_quarter(c, 8, 0);
            read_quarter(c, 9, 0);
            assert_int_equal(decoded(c), 6);
        }
        stf_ckpt_free(c);
        stf_set_allocator(NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seekable_reads_ahead),
        cmocka_unit_test(test_seekable_ahead_stays_with_its_owner),
        cmocka_unit_test(test_seekable_lagging_reader_keeps_its_frame),
        cmocka_unit_test(test_seekable_ahead_spares_a_lagging_frame),
        cmocka_unit_test(test_seekable_read_spares_the_run),
        cmocka_unit_test(test_seekable_read_takes_a_run_slot_last),
        cmocka_unit_test(test_seekable_run_continues_the_longest),
        cmocka_unit_test(test_seekable_ahead_stops_at_a_bad_frame),
        cmocka_unit_test_teardown(test_seekable_waiting_reader_decodes_ahead, gate_teardown),
    };
    return cmocka_run_group_tests(tests, make_plain, free_plain);
}
