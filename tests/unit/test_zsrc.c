/*
 * Tests for zstd-compressed input (lib/io/zsrc_*.c, zstd_walk.c,
 * zstd_seek.c through source_zstd.c and ckpt.c): a checkpoint compressed as a
 * plain stream and in the seekable format reads back byte for byte; the
 * frames a read decodes are counted; a stream read out of order spools or
 * restarts; every kind of damage is refused with its exact message, rule
 * and compressed offset, before anything large is allocated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#include <zstd.h>

#include <cmocka.h>

#include "io/zstd_seek.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"
#include "support/st_zseek.h"

#define NT 6
#define TBYTES 48000

/* The plain checkpoint: six tensors of 48000 bytes, more than two of
 * libzstd's 128 KiB output blocks in all. */
static unsigned char *g_plain;
static size_t g_plain_len;
static uint64_t g_tbegin[NT]; /* absolute file offsets of the tensors */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int make_plain(void **state)
{
    (void)state;
    if (st_dir_setup(state)) return -1;
    static uint8_t data[NT][TBYTES];
    static const stf_dtype dt[NT] = { STF_BF16, STF_F32, STF_I8, STF_F16, STF_U8, STF_F8_E4M3 };
    static const char *names[NT] = { "a.bf16", "b.f32", "c.i8", "d.f16", "e.u8", "f.fp8" };
    static const unsigned width[NT] = { 2, 4, 1, 2, 1, 1 };
    st_tensor t[NT];
    uint32_t x = 12345;
    for (int k = 0; k < NT; k++) {
        for (int i = 0; i < TBYTES; i++) {
            x = x * 1103515245u + 12345u;
            /* Half random, half runs: compressible, never trivial. */
            data[k][i] = (uint8_t)(i % 64 < 32 ? (int)(x >> 16) : k * 7 + i / 64);
        }
        t[k] = (st_tensor){ names[k], dt[k], 1, { TBYTES / width[k] }, data[k], TBYTES };
    }
    g_plain = st_zplain(t, NT, "{\"k\":\"v\"}", &g_plain_len, g_tbegin);
    return g_plain ? 0 : -1;
}

static int free_plain(void **state)
{
    free(g_plain);
    return st_dir_teardown(state);
}

/* ------------------------------------------------------------ builders */

typedef st_zbuf zbuf;
#define zput st_zput

/*
 * The plain checkpoint in the seekable format: frames of at most `frame`
 * bytes, also cut at every tensor start when `at_tensors`; entries with
 * checksums when `checksum`.
 */
static zbuf seekable(size_t frame, int at_tensors, int checksum)
{
    return st_zseekable(g_plain, g_plain_len, frame, g_tbegin, at_tensors ? NT : 0, checksum);
}

/* The plain checkpoint as one zstd frame, with its content size in the
 * header or (sized 0) without, as `zstd < FILE` writes it. */
static zbuf stream(int sized)
{
    zbuf b = { 0 };
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t cap = ZSTD_compressBound(g_plain_len) + 64;
    b.p = malloc(cap);
    ZSTD_outBuffer out = { b.p, cap, 0 };
    if (sized) ZSTD_CCtx_setPledgedSrcSize(cc, g_plain_len);
    size_t half = g_plain_len / 2;
    ZSTD_inBuffer in1 = { g_plain, half, 0 }, in2 = { g_plain + half, g_plain_len - half, 0 };
    while (in1.pos < in1.size)
        assert_false(ZSTD_isError(ZSTD_compressStream2(cc, &out, &in1, ZSTD_e_continue)));
    size_t left;
    do {
        left = ZSTD_compressStream2(cc, &out, &in2, ZSTD_e_end);
        assert_false(ZSTD_isError(left));
    } while (left);
    ZSTD_freeCCtx(cc);
    b.n = out.pos;
    b.nframes = 1;
    return b;
}

static const char *save(const zbuf *b, const char *name)
{
    const char *p = st_in_dir(name);
    assert_int_equal(st_write_file(p, b->p, b->n), 0);
    return p;
}

/* Open `path` (spool in `spool` when not NULL); the error when it fails. */
static int open_z(stf_ckpt **c, const char *path, const char *spool, stf_err *e)
{
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.spool_dir = spool;
    o.zstd_cache_frames = 2;
    stf_err_clear(e);
    return stf_ckpt_open(c, path, &o, e);
}

/* Tensor i read whole equals the plain file's bytes. */
static void same_tensor(const stf_ckpt *c, size_t i)
{
    uint8_t buf[TBYTES];
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf_ckpt_read(buf, c, i, 0, TBYTES, &e), 0);
    assert_memory_equal(buf, g_plain + g_tbegin[i], TBYTES);
}

static void expect_msg(const stf_err *e, int code, const char *rule, uint64_t off,
                       const char *msg)
{
    assert_int_equal(e->code, code);
    assert_string_equal(e->rule, rule);
    assert_true(e->has_offset);
    assert_int_equal(e->offset, off);
    assert_string_equal(e->msg, msg);
}

/* ------------------------------------------------------------ seekable */

/* Every tensor reads back, and the shard reports how it is stored. */
static void test_seekable_reads(void **state)
{
    (void)state;
    zbuf b = seekable(1000, 0, 1);
    const char *p = save(&b, "s.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, NULL, &e), 0);
    assert_int_equal(stf_ckpt_shard_storage(c, 0), STF_STORAGE_ZSTD_SEEKABLE);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
    assert_int_equal(stf_ckpt_shard_stored_size(c, 0), b.n);
    assert_int_equal(stf_ckpt_shard_frame_count(c, 0), b.nframes);
    assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_NONE);
    assert_int_equal(stf_ckpt_tensor_count(c), NT);
    for (size_t i = NT; i-- > 0;) same_tensor(c, i);
    /* A read across a frame boundary: 10 bytes either side of 1000. */
    uint8_t buf[20];
    size_t k = 0;
    while (g_tbegin[k] + TBYTES < 1010) k++;
    assert_int_equal(stf_ckpt_read(buf, c, k, 990 - g_tbegin[k], 20, &e), 0);
    assert_memory_equal(buf, g_plain + 990, 20);
    stf_ckpt_free(c);
    free(b.p);
}

/*
 * Frames cut at tensor starts: reading one tensor from the middle decodes
 * exactly the one frame that holds it, and reading it again none.
 */
static void test_seekable_touches_its_frames(void **state)
{
    (void)state;
    zbuf b = seekable(65536, 1, 1);
    const char *p = save(&b, "t.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, NULL, &e), 0);
    assert_int_equal(b.nframes, NT + 1); /* the header, then one frame per tensor */
    uint64_t at_open = stf_ckpt_shard_frames_decoded(c, 0);
    assert_int_equal(at_open, 1);
    same_tensor(c, 3);
    assert_int_equal(stf_ckpt_shard_frames_decoded(c, 0), at_open + 1);
    same_tensor(c, 3);
    assert_int_equal(stf_ckpt_shard_frames_decoded(c, 0), at_open + 1);
    /* A cache of 2: three other tensors evict it, and it is decoded again. */
    same_tensor(c, 0);
    same_tensor(c, 1);
    same_tensor(c, 3);
    assert_int_equal(stf_ckpt_shard_frames_decoded(c, 0), at_open + 4);
    stf_ckpt_free(c);
    free(b.p);
}

/* A table without checksums reads too. */
static void test_seekable_no_checksum(void **state)
{
    (void)state;
    zbuf b = seekable(2048, 0, 0);
    const char *p = save(&b, "n.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, NULL, &e), 0);
    for (size_t i = 0; i < NT; i++) same_tensor(c, i);
    stf_ckpt_free(c);
    free(b.p);
}

/* Open the damaged bytes and return the error of opening, or of reading
 * every tensor when the open succeeds. */
static int damaged(const zbuf *b, const char *name, stf_err *e)
{
    stf_ckpt *c = NULL;
    int rc = open_z(&c, save(b, name), NULL, e);
    if (rc) {
        assert_null(c);
        return rc;
    }
    uint8_t buf[TBYTES];
    for (size_t i = 0; i < NT && !rc; i++) rc = stf_ckpt_read(buf, c, i, 0, TBYTES, e);
    stf_ckpt_free(c);
    return rc;
}

static void test_seekable_wrong_checksum(void **state)
{
    (void)state;
    zbuf b = seekable(1000, 0, 1);
    /* Entry 2's checksum, in the table after its 8-byte frame header. */
    size_t tbl = b.n - 9 - b.nframes * 12 - 8;
    b.p[tbl + 8 + 2 * 12 + 8] ^= 0x01;
    /* The tensor holding byte 2000, the first one frame 2 serves. */
    stf_ckpt *c = NULL;
    assert_int_equal(stf_ckpt_open(&c, st_in_dir("plain.safetensors"), NULL, NULL), 0);
    size_t k = 0;
    while (g_tbegin[k] + TBYTES <= 2000) k++;
    char want[512];
    uint32_t good = (uint32_t)XXH64(g_plain + 2000, 1000, 0);
    snprintf(want, sizeof want,
             "tensor '%s': %s: S28 ZstdChecksum: frame 2 at compressed byte %llu decodes "
             "to bytes whose checksum is 0x%08lx, the seek table says 0x%08lx",
             stf_ckpt_tensor(c, k)->name, st_in_dir("ck.safetensors.zst"),
             (unsigned long long)b.c_off[2], (unsigned long)good, (unsigned long)(good ^ 1));
    stf_ckpt_free(c);
    stf_err e;
    assert_int_equal(damaged(&b, "ck.safetensors.zst", &e), STF_EFORMAT);
    expect_msg(&e, STF_EFORMAT, "S28", b.c_off[2], want);
    free(b.p);
}

/* The last frame lost bytes while the table stayed: the frames the table
 * lists no longer reach it. */
static void test_seekable_truncated_last_frame(void **state)
{
    (void)state;
    zbuf b = seekable(1000, 0, 1);
    size_t tsize = 8 + b.nframes * 12 + 9;
    uint64_t start = b.n - tsize;
    memmove(b.p + start - 5, b.p + start, tsize); /* drop 5 bytes of the last frame */
    b.n -= 5;
    stf_err e;
    assert_int_equal(damaged(&b, "tr.safetensors.zst", &e), STF_EFORMAT);
    char want[512];
    snprintf(want, sizeof want,
             "%s: S27 ZstdSeekTable: the frames the seek table lists run to compressed byte "
             "%llu (frame %zu), past the seek table at %llu",
             st_in_dir("tr.safetensors.zst"), (unsigned long long)start, b.nframes - 1,
             (unsigned long long)(start - 5));
    expect_msg(&e, STF_EFORMAT, "S27", start - 5, want);
    free(b.p);
}

/* Seek-table damage, each with its message. */
static void test_seekable_bad_tables(void **state)
{
    (void)state;
    stf_err e;
    char want[512];
    zbuf b = seekable(1000, 0, 1);
    size_t tsize = 8 + b.nframes * 12 + 9;
    uint64_t start = b.n - tsize;
    const char *name = st_in_dir("bt.safetensors.zst");

    /* Reserved descriptor bits. */
    b.p[b.n - 5] = 0x84;
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_EFORMAT);
    snprintf(want, sizeof want,
             "%s: S27 ZstdSeekTable: the seek table descriptor 0x84 at compressed byte %llu "
             "has reserved bits set", name, (unsigned long long)(b.n - 5));
    expect_msg(&e, STF_EFORMAT, "S27", b.n - 5, want);
    b.p[b.n - 5] = 0x80;

    /* A frame count whose table would not fit the file. */
    put32(b.p + b.n - 9, 1000000);
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_EFORMAT);
    snprintf(want, sizeof want,
             "%s: S27 ZstdSeekTable: the footer at compressed byte %llu lists 1000000 frames, "
             "a 12000017-byte seek table, but the file is %zu bytes",
             name, (unsigned long long)(b.n - 9), b.n);
    expect_msg(&e, STF_EFORMAT, "S27", b.n - 9, want);

    /* More frames than the cap: L10, before anything is read. */
    put32(b.p + b.n - 9, 0xFFFFFFFFu);
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_ELIMIT);
    snprintf(want, sizeof want,
             "%s: L10 LimitExceeded: the seek table at compressed byte %llu lists 4294967295 "
             "frames, more than the cap of 16777216", name, (unsigned long long)(b.n - 9));
    expect_msg(&e, STF_ELIMIT, "L10", b.n - 9, want);
    put32(b.p + b.n - 9, (uint32_t)b.nframes);

    /* The skippable frame's magic. */
    b.p[start] ^= 0x01;
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_EFORMAT);
    snprintf(want, sizeof want,
             "%s: S27 ZstdSeekTable: expected the seek table frame (magic 0x184d2a5e) at "
             "compressed byte %llu, found 0x184d2a5f", name, (unsigned long long)start);
    expect_msg(&e, STF_EFORMAT, "S27", start, want);
    b.p[start] ^= 0x01;

    /* A frame claiming 4 GiB - 1 decompressed bytes: L9, nothing allocated. */
    uint8_t keep[4];
    memcpy(keep, b.p + start + 8 + 12 + 4, 4);
    put32(b.p + start + 8 + 12 + 4, 0xFFFFFFFFu);
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_ELIMIT);
    snprintf(want, sizeof want,
             "%s: L9 LimitExceeded: frame 1 at compressed byte %llu claims 4294967295 "
             "decompressed bytes, more than the cap of 67108864",
             name, (unsigned long long)b.c_off[1]);
    expect_msg(&e, STF_ELIMIT, "L9", b.c_off[1], want);

    /* Within the cap, the same total, but not what frame 1's header says:
     * one byte moved from frame 2's entry to frame 1's. */
    uint8_t keep2[4];
    memcpy(keep2, b.p + start + 8 + 24 + 4, 4);
    put32(b.p + start + 8 + 12 + 4, 1001);
    put32(b.p + start + 8 + 24 + 4, 999);
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_EFORMAT);
    snprintf(want, sizeof want,
             "S27 ZstdSeekTable: frame 1 at compressed byte %llu holds 1000 bytes by its "
             "header, 1001 by the seek table", (unsigned long long)b.c_off[1]);
    assert_string_equal(e.rule, "S27");
    assert_int_equal(e.offset, b.c_off[1]);
    assert_non_null(strstr(e.msg, want));
    memcpy(b.p + start + 8 + 12 + 4, keep, 4);
    memcpy(b.p + start + 8 + 24 + 4, keep2, 4);

    /* A compressed size of zero. */
    memcpy(keep, b.p + start + 8, 4);
    put32(b.p + start + 8, 0);
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), STF_EFORMAT);
    snprintf(want, sizeof want,
             "%s: S27 ZstdSeekTable: seek table entry 0 (compressed byte %llu) gives frame 0 "
             "no compressed bytes", name, (unsigned long long)(start + 8));
    expect_msg(&e, STF_EFORMAT, "S27", start + 8, want);
    memcpy(b.p + start + 8, keep, 4);

    /* Intact again: it reads. */
    assert_int_equal(damaged(&b, "bt.safetensors.zst", &e), 0);
    free(b.p);
}

/* A corrupt byte inside a frame: its frame and compressed offset named. */
static void test_seekable_corrupt_frame(void **state)
{
    (void)state;
    zbuf b = seekable(1000, 0, 0);
    b.p[b.c_off[1] + 3] ^= 0xFF; /* the magic number's last byte */
    stf_err e;
    assert_int_equal(damaged(&b, "cf.safetensors.zst", &e), STF_EFORMAT);
    char want[512];
    snprintf(want, sizeof want,
             "%s: S26 ZstdCorrupt: frame 1 at compressed byte %llu does not start with the zstd "
             "or grouped-frame magic number", st_in_dir("cf.safetensors.zst"), (unsigned long long)b.c_off[1]);
    assert_non_null(strstr(e.msg, want));
    expect_msg(&e, STF_EFORMAT, "S26", b.c_off[1], e.msg);
    free(b.p);
}

/* ------------------------------------------------------------ streams */

/* In data order: no spool, and the mode says so. */
static void test_stream_in_order(void **state)
{
    (void)state;
    zbuf b = stream(1);
    const char *p = save(&b, "st.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, st_dir, &e), 0);
    assert_int_equal(stf_ckpt_shard_storage(c, 0), STF_STORAGE_ZSTD_STREAM);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
    assert_int_equal(stf_ckpt_shard_frame_count(c, 0), 1);
    assert_int_equal(stf_ckpt_shard_frames_decoded(c, 0), 0);
    for (size_t i = 0; i < NT; i++) same_tensor(c, i);
    assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_IN_ORDER);
    stf_ckpt_free(c);
    free(b.p);
}

/* Out of order with a spool directory: served from an unnamed spool. */
static void test_stream_spooled(void **state)
{
    (void)state;
    zbuf b = stream(1);
    const char *p = save(&b, "sp.safetensors.zst");
    char *spool = st_path(st_dir, "spool");
    assert_int_equal(system("true"), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", spool);
    assert_int_equal(system(cmd), 0);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, spool, &e), 0);
    same_tensor(c, 4);
    assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_IN_ORDER);
    for (size_t i = 0; i < NT; i++) same_tensor(c, i);
    assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_SPOOLED);
    assert_int_equal(st_dir_entries(spool), 0); /* the spool has no name */
    same_tensor(c, 2);
    stf_ckpt_free(c);
    assert_int_equal(st_dir_entries(spool), 0);
    free(spool);
    free(b.p);
}

/* Out of order without one: decompressed again from the start. */
static void test_stream_restarted(void **state)
{
    (void)state;
    zbuf b = stream(1);
    const char *p = save(&b, "rs.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, NULL, &e), 0);
    same_tensor(c, 5);
    same_tensor(c, 1);
    assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_RESTARTED);
    for (size_t i = 0; i < NT; i++) same_tensor(c, i);
    stf_ckpt_free(c);
    free(b.p);
}

/* No content size in the frame header: the size the header declares. */
static void test_stream_unsized(void **state)
{
    (void)state;
    zbuf b = stream(0);
    assert_int_equal(ZSTD_getFrameContentSize(b.p, b.n), ZSTD_CONTENTSIZE_UNKNOWN);
    const char *p = save(&b, "us.safetensors.zst");
    for (int spooled = 0; spooled < 2; spooled++) {
        stf_ckpt *c = NULL;
        stf_err e;
        assert_int_equal(open_z(&c, p, spooled ? st_dir : NULL, &e), 0);
        assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
        for (size_t i = NT; i-- > 0;) same_tensor(c, i);
        assert_int_equal(stf_ckpt_shard_stream_mode(c, 0),
                         spooled ? STF_STREAM_SPOOLED : STF_STREAM_RESTARTED);
        stf_ckpt_free(c);
    }
    free(b.p);
}

/* Truncated: found by the walk at open, with the offset where it ends. */
static void test_stream_truncated(void **state)
{
    (void)state;
    zbuf b = stream(1);
    b.n -= 7;
    stf_err e;
    assert_int_equal(damaged(&b, "tt.safetensors.zst", &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S26");
    assert_true(e.has_offset);
    char want[512];
    snprintf(want, sizeof want, "%s: S26 ZstdCorrupt: the file ends inside ",
             st_in_dir("tt.safetensors.zst"));
    assert_memory_equal(e.msg, want, strlen(want));
    assert_non_null(strstr(e.msg, " (truncated) at compressed byte "));
    free(b.p);
}

/* A corrupt byte in a block: found while decompressing, with its offset. */
static void test_stream_corrupt(void **state)
{
    (void)state;
    zbuf b = stream(1);
    b.p[b.n - 4] ^= 0x5A; /* the frame's content checksum */
    stf_err e;
    assert_int_equal(damaged(&b, "sc.safetensors.zst", &e), STF_EFORMAT);
    char want[512];
    snprintf(want, sizeof want,
             "%s: S28 ZstdChecksum: decoding failed at compressed byte %zu: Restored data "
             "doesn't match checksum", st_in_dir("sc.safetensors.zst"), b.n - 4);
    if (!strstr(e.msg, want)) fail_msg("%s\nwant %s", e.msg, want);
    assert_string_equal(e.rule, "S28");
    assert_int_equal(e.offset, b.n - 4); /* where the checksum starts */
    free(b.p);
}

/* A window over 128 MiB: refused at open, nothing allocated for it. */
static void test_stream_window_too_large(void **state)
{
    (void)state;
    /* Magic, descriptor (no size, not single-segment), window 2^31, one
     * empty raw last block. */
    static const uint8_t f[] = { 0x28, 0xB5, 0x2F, 0xFD, 0x00, 0xA8, 0x01, 0x00, 0x00 };
    zbuf b = { 0 };
    zput(&b, f, sizeof f);
    stf_err e;
    assert_int_equal(damaged(&b, "wl.safetensors.zst", &e), STF_ELIMIT);
    char want[512];
    snprintf(want, sizeof want,
             "%s: L9 LimitExceeded: the frame at compressed byte 0 needs a 2147483648-byte "
             "window to decode, more than the 134217728 bytes allowed",
             st_in_dir("wl.safetensors.zst"));
    expect_msg(&e, STF_ELIMIT, "L9", 0, want);
    free(b.p);
}

/* ------------------------------------------------------------ shards */

/* An index naming a .zst shard reads like the plain file, of each kind. */
static void test_index_of_zst_shards(void **state)
{
    (void)state;
    zbuf z[2] = { seekable(1000, 0, 1), stream(1) };
    static const char *names[NT] = { "a.bf16", "b.f32", "c.i8", "d.f16", "e.u8", "f.fp8" };
    for (int kind = 0; kind < 2; kind++) {
        save(&z[kind], "m-00001-of-00001.safetensors.zst");
        FILE *f = fopen(st_in_dir("m.safetensors.index.json"), "w");
        assert_non_null(f);
        fputs("{\"metadata\": {}, \"weight_map\": {", f);
        for (int k = 0; k < NT; k++)
            fprintf(f, "%s\"%s\": \"m-00001-of-00001.safetensors.zst\"", k ? ", " : "",
                    names[k]);
        fputs("}}", f);
        fclose(f);
        stf_ckpt *c = NULL;
        stf_err e;
        assert_int_equal(open_z(&c, st_in_dir("m.safetensors.index.json"), NULL, &e), 0);
        assert_int_equal(stf_ckpt_shard_count(c), 1);
        assert_int_equal(stf_ckpt_shard_storage(c, 0),
                         kind ? STF_STORAGE_ZSTD_STREAM : STF_STORAGE_ZSTD_SEEKABLE);
        for (size_t i = 0; i < NT; i++) same_tensor(c, i);
        stf_ckpt_free(c);
        free(z[kind].p);
    }
}

/* ------------------------------------------------------------ memory */

/* A hook that knows the bytes it has handed out and their peak. */
static size_t g_live, g_peak;

static void *count_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    size_t old = 0;
    unsigned char *b = p ? (unsigned char *)p - 16 : NULL;
    if (b) memcpy(&old, b, sizeof old);
    unsigned char *nb = realloc(b, n + 16);
    if (!nb) return NULL;
    memcpy(nb, &n, sizeof n);
    g_live = g_live - old + n;
    if (g_live > g_peak) g_peak = g_live;
    return nb + 16;
}

static void count_free(void *ud, void *p)
{
    (void)ud;
    if (!p) return;
    size_t old;
    memcpy(&old, (unsigned char *)p - 16, sizeof old);
    g_live -= old;
    free((unsigned char *)p - 16);
}

/*
 * Reading every tensor holds at most what the caps say: for a seekable
 * file, the cache's 2 frames of 64 KiB and their compressed bytes; for a
 * stream, libzstd's 128 KiB buffers and the held header; on top, what any
 * open holds (the header parser's 64 KiB arena block, the tables). The
 * file is 288,000 bytes decompressed, so a reader that held it would fail
 * here.
 */
static void test_bounded_memory(void **state)
{
    (void)state;
    zbuf z[2] = { seekable(65536, 1, 1), stream(1) };
    const size_t any = 65536 + 16384;
    const size_t bound[2] = { 2 * (65536 + ZSTD_COMPRESSBOUND(65536)) + any,
                              2 * 131072 + 8192 + any };
    stf_allocator a = { count_realloc, count_free, NULL };
    for (int kind = 0; kind < 2; kind++) {
        const char *p = save(&z[kind], kind ? "mb.safetensors.zst" : "ms.safetensors.zst");
        stf_set_allocator(&a);
        g_live = g_peak = 0;
        stf_ckpt *c = NULL;
        stf_err e;
        assert_int_equal(open_z(&c, p, NULL, &e), 0);
        for (size_t i = NT; i-- > 0;) same_tensor(c, i);
        stf_ckpt_free(c);
        stf_set_allocator(NULL);
        assert_int_equal(g_live, 0);
        if (g_peak > bound[kind]) fail_msg("kind %d: peak %zu > %zu", kind, g_peak, bound[kind]);
        assert_true(g_peak > 65536); /* the hook saw the frame buffers */
        free(z[kind].p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seekable_reads),
        cmocka_unit_test(test_seekable_touches_its_frames),
        cmocka_unit_test(test_seekable_no_checksum),
        cmocka_unit_test(test_seekable_wrong_checksum),
        cmocka_unit_test(test_seekable_truncated_last_frame),
        cmocka_unit_test(test_seekable_bad_tables),
        cmocka_unit_test(test_seekable_corrupt_frame),
        cmocka_unit_test(test_stream_in_order),
        cmocka_unit_test(test_stream_spooled),
        cmocka_unit_test(test_stream_restarted),
        cmocka_unit_test(test_stream_unsized),
        cmocka_unit_test(test_stream_truncated),
        cmocka_unit_test(test_stream_corrupt),
        cmocka_unit_test(test_stream_window_too_large),
        cmocka_unit_test(test_index_of_zst_shards),
        cmocka_unit_test(test_bounded_memory),
    };
    return cmocka_run_group_tests(tests, make_plain, free_plain);
}
