/*
 * Tests for zstd streams whose frames do not record their content size
 * (lib/io/zsrc_stream.c, zstd_walk.c through source_zstd.c and ckpt.c):
 * open decompresses nothing past the header and takes the size the header
 * declares; the walk's bounds refuse a stream that surely decodes to more
 * or less (S19); a read that reaches the end finds one that does (S19); a
 * spool never holds more than max_spool bytes (L11). Every message exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <cmocka.h>

#include "support/st_ckptfile.h"
#include "support/st_tmp.h"
#include "support/st_zseek.h"

#define NT 6
#define TBYTES 48000

static unsigned char *g_plain;
static size_t g_plain_len;
static uint64_t g_tbegin[NT];

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

/* p[0..n) as one zstd frame without its content size (as `zstd < FILE`),
 * appended to b; `sized` records it instead. */
static void frame(st_zbuf *b, const void *p, size_t n, int sized)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(n) + 64;
    uint8_t *o = malloc(cap);
    ZSTD_outBuffer out = { o, cap, 0 };
    if (sized) ZSTD_CCtx_setPledgedSrcSize(cc, n);
    /* Fed before the end is asked for, the size is not known in time. */
    ZSTD_inBuffer in = { p, n, 0 }, none = { NULL, 0, 0 };
    while (!sized && in.pos < in.size)
        assert_false(ZSTD_isError(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_continue)));
    size_t left;
    do {
        left = ZSTD_compressStream2(cc, &out, sized ? &in : &none, ZSTD_e_end);
        assert_false(ZSTD_isError(left));
    } while (left);
    if (!sized) assert_int_equal(ZSTD_getFrameContentSize(o, out.pos), ZSTD_CONTENTSIZE_UNKNOWN);
    st_zput(b, o, out.pos);
    ZSTD_freeCCtx(cc);
    free(o);
}

/* A frame header without content size (window 1 MiB), then blocks. */
static void hand_frame(st_zbuf *b)
{
    static const uint8_t h[] = { 0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x50 };
    st_zput(b, h, sizeof h);
}

static void block(st_zbuf *b, unsigned type, uint32_t size, int last, const void *body,
                  size_t n)
{
    uint32_t bh = size << 3 | type << 1 | (last ? 1u : 0u);
    uint8_t x[3] = { (uint8_t)bh, (uint8_t)(bh >> 8), (uint8_t)(bh >> 16) };
    st_zput(b, x, 3);
    st_zput(b, body, n);
}

/* The 8 + N bytes of a header declaring one U8 tensor of `d` bytes. */
static size_t u8_header(uint8_t *out, uint64_t d)
{
    char j[128];
    int n = snprintf(j, sizeof j, "{\"w\":{\"dtype\":\"U8\",\"shape\":[%llu],"
                                  "\"data_offsets\":[0,%llu]}}",
                     (unsigned long long)d, (unsigned long long)d);
    while (n % 8) j[n++] = ' ';
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(out + 8, j, (size_t)n);
    return 8 + (size_t)n;
}

/* The header in a raw block, then `rle` bytes of 0x5A in RLE blocks. */
static st_zbuf rle_bomb(uint64_t declared, uint64_t rle, size_t *hlen)
{
    st_zbuf b = { 0 };
    uint8_t h[136], z = 0x5A;
    *hlen = u8_header(h, declared);
    hand_frame(&b);
    block(&b, 0, (uint32_t)*hlen, rle == 0, h, *hlen);
    while (rle) {
        uint32_t k = rle > 131072 ? 131072 : (uint32_t)rle;
        rle -= k;
        block(&b, 1, k, rle == 0, &z, 1);
    }
    return b;
}

static const char *save(const st_zbuf *b, const char *name)
{
    const char *p = st_in_dir(name);
    assert_int_equal(st_write_file(p, b->p, b->n), 0);
    free(b->p);
    return p;
}

static int open_z(stf_ckpt **c, const char *path, const char *spool, uint64_t max_spool,
                  stf_err *e)
{
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.spool_dir = spool;
    o.max_spool = max_spool;
    stf_err_clear(e);
    return stf_ckpt_open(c, path, &o, e);
}

static void expect(const stf_err *e, int code, const char *rule, uint64_t off, const char *msg)
{
    assert_string_equal(e->msg, msg);
    assert_int_equal(e->code, code);
    assert_string_equal(e->rule, rule);
    assert_true(e->has_offset);
    assert_int_equal(e->offset, off);
}

static void s19(char *want, size_t cap, const char *path, size_t hlen, uint64_t size,
                const char *how, uint64_t bytes)
{
    snprintf(want, cap,
             "%s: S19 MetadataIncompleteBuffer (byte %zu): the tensors cover %llu data bytes, "
             "so the file should be %llu bytes, but its zstd stream, whose frames do not "
             "record their size, decodes to %s %llu",
             path, hlen, (unsigned long long)(size - hlen), (unsigned long long)size, how,
             (unsigned long long)bytes);
}

/* Open reads the header and no further than one output buffer (128 KiB)
 * past it: blocks beyond that cannot be decoded and are found only by a
 * read that gets there. */
static void test_open_reads_only_the_header(void **state)
{
    (void)state;
    size_t h = (size_t)g_tbegin[0];
    static uint8_t junk[200];
    memset(junk, 0xFF, sizeof junk);
    st_zbuf b = { 0 };
    hand_frame(&b);
    block(&b, 0, (uint32_t)h, 0, g_plain, h);
    block(&b, 0, 131072, 0, g_plain + h, 131072);
    block(&b, 0, 131072, 0, g_plain + h + 131072, 131072);
    block(&b, 2, sizeof junk, 0, junk, sizeof junk);
    block(&b, 2, sizeof junk, 0, junk, sizeof junk);
    block(&b, 2, sizeof junk, 1, junk, sizeof junk);
    const char *p = save(&b, "hd.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    for (int spooled = 0; spooled < 2; spooled++) {
        if (open_z(&c, p, spooled ? st_dir : NULL, 0, &e)) fail_msg("%s", e.msg);
        assert_int_equal(stf_ckpt_tensor_count(c), NT);
        assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
        assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_NONE);
        uint8_t x[TBYTES];
        assert_int_equal(stf_ckpt_read(x, c, 0, 0, TBYTES, &e), 0);
        assert_memory_equal(x, g_plain + h, TBYTES);
        stf_err_clear(&e);
        assert_int_equal(stf_ckpt_read(x, c, 5, 0, TBYTES, &e), STF_EFORMAT);
        assert_string_equal(e.rule, "S26");
        char want[256];
        snprintf(want, sizeof want,
                 "tensor 'f': %s: S26 ZstdCorrupt: decoding failed at compressed byte ", p);
        assert_memory_equal(e.msg, want, strlen(want));
        stf_ckpt_free(c);
    }
}

/* The walk's exact bounds (raw and RLE blocks) against the declared size:
 * more or less is S19 at open; equal opens without decompressing, even
 * when the header claims 16 GiB. */
static void test_bounds_at_open(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err e;
    char want[512];
    size_t h;
    const uint64_t d = 3 * 131072 + 5;

    st_zbuf b = rle_bomb(d, d + 1, &h);
    const char *p = save(&b, "more.safetensors.zst");
    assert_int_equal(open_z(&c, p, st_dir, 0, &e), STF_EFORMAT);
    s19(want, sizeof want, p, h, h + d, "at least", h + d + 1);
    expect(&e, STF_EFORMAT, "S19", h, want);
    assert_null(c);

    b = rle_bomb(d, d - 1, &h);
    p = save(&b, "less.safetensors.zst");
    assert_int_equal(open_z(&c, p, st_dir, 0, &e), STF_EFORMAT);
    s19(want, sizeof want, p, h, h + d, "at most", h + d - 1);
    expect(&e, STF_EFORMAT, "S19", h, want);

    b = rle_bomb(d, d, &h);
    p = save(&b, "same.safetensors.zst");
    assert_int_equal(open_z(&c, p, st_dir, 0, &e), 0);
    uint8_t x[4];
    assert_int_equal(stf_ckpt_read(x, c, 0, d - 4, 4, &e), 0);
    assert_memory_equal(x, "ZZZZ", 4);
    stf_ckpt_free(c);

    const uint64_t big = (uint64_t)16 << 30;
    b = rle_bomb(big, big, &h);
    p = save(&b, "claim.safetensors.zst");
    assert_int_equal(open_z(&c, p, st_dir, 0, &e), 0);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), h + big);
    assert_int_equal(stf_ckpt_read(x, c, 0, 0, 4, &e), 0);
    assert_memory_equal(x, "ZZZZ", 4);
    stf_ckpt_free(c);
}

/* Bounds that do not decide it (a compressed block may decode to up to
 * 128 KiB): the read that reaches the end does, and a stream that goes
 * on past the declared size is never decompressed further than a block. */
static void test_end_checked_by_the_read(void **state)
{
    (void)state;
    static uint8_t pat[1000];
    for (size_t i = 0; i < sizeof pat; i++) pat[i] = (uint8_t)"abc"[i % 3];
    char want[512];
    size_t h = (size_t)g_tbegin[0];
    uint8_t buf[TBYTES];
    for (int more = 0; more < 2; more++) {
        st_zbuf b = { 0 };
        size_t keep = more ? g_plain_len : g_plain_len - 1000;
        frame(&b, g_plain, keep, 1);
        frame(&b, pat, more ? 1000 : 500, 0);
        const char *p = save(&b, more ? "em.safetensors.zst" : "el.safetensors.zst");
        stf_ckpt *c = NULL;
        stf_err e;
        assert_int_equal(open_z(&c, p, NULL, 0, &e), 0);
        assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
        for (size_t i = 0; i + 1 < NT; i++)
            assert_int_equal(stf_ckpt_read(buf, c, i, 0, TBYTES, &e), 0);
        assert_int_equal(stf_ckpt_read(buf, c, NT - 1, 0, TBYTES, &e), STF_EFORMAT);
        int w = snprintf(want, sizeof want, "tensor 'f': ");
        if (more) s19(want + w, sizeof want - (size_t)w, p, h, g_plain_len, "more than",
                      g_plain_len);
        else s19(want + w, sizeof want - (size_t)w, p, h, g_plain_len, "only", g_plain_len - 500);
        expect(&e, STF_EFORMAT, "S19", h, want);
        stf_ckpt_free(c);
    }
    /* Exactly the declared size: the last read succeeds. */
    st_zbuf b = { 0 };
    frame(&b, g_plain, g_plain_len, 0);
    const char *p = save(&b, "ex.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(open_z(&c, p, NULL, 0, &e), 0);
    for (size_t i = 0; i < NT; i++) {
        assert_int_equal(stf_ckpt_read(buf, c, i, 0, TBYTES, &e), 0);
        assert_memory_equal(buf, g_plain + g_tbegin[i], TBYTES);
    }
    stf_ckpt_free(c);
}

/* max_spool: a read behind the position is served while the spool holds
 * it, and refused (L11, before anything is spooled for it) when the spool
 * would have to grow past the cap; nothing past the cap is spooled. */
static void test_spool_cap(void **state)
{
    (void)state;
    st_zbuf b = { 0 };
    frame(&b, g_plain, g_plain_len, 0);
    const char *p = save(&b, "cap.safetensors.zst");
    stf_ckpt *c = NULL;
    stf_err e;
    uint8_t buf[TBYTES];
    const uint64_t cap = g_tbegin[2] + 10;
    size_t entries = st_dir_entries(st_dir);
    assert_int_equal(open_z(&c, p, st_dir, cap, &e), 0);
    static const size_t order[] = { 4, 0, 2, 1, 5 };
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        size_t i = order[k];
        if (stf_ckpt_read(buf, c, i, 0, TBYTES, &e)) fail_msg("%zu: %s", i, e.msg);
        assert_memory_equal(buf, g_plain + g_tbegin[i], TBYTES);
    }
    assert_int_equal(stf_ckpt_shard_stream_mode(c, 0), STF_STREAM_SPOOLED);
    assert_int_equal(stf_ckpt_read(buf, c, 3, 0, TBYTES, &e), STF_ELIMIT);
    char want[512];
    snprintf(want, sizeof want,
             "tensor 'd': %s: L11 LimitExceeded: reading the stream out of order at "
             "decompressed byte %llu "
             "needs a spool of %llu bytes, more than the %llu allowed",
             p, (unsigned long long)g_tbegin[3], (unsigned long long)(g_tbegin[3] + TBYTES),
             (unsigned long long)cap);
    expect(&e, STF_ELIMIT, "L11", g_tbegin[3], want);
    /* A read behind that the spool holds still works. */
    assert_int_equal(stf_ckpt_read(buf, c, 1, 0, TBYTES, &e), 0);
    assert_memory_equal(buf, g_plain + g_tbegin[1], TBYTES);
    stf_ckpt_free(c);
    assert_int_equal(st_dir_entries(st_dir), entries); /* no spool left */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_reads_only_the_header),
        cmocka_unit_test(test_bounds_at_open),
        cmocka_unit_test(test_end_checked_by_the_read),
        cmocka_unit_test(test_spool_cap),
    };
    return cmocka_run_group_tests(tests, make_plain, free_plain);
}
