/* Tests for lib/io/zstd_frames.c: the frame plan (cuts at tensor
 * boundaries, long tensors cut every frame, grouped frames never mixing
 * BF16/F16 with other bytes) and the grouped-frame codec with each of its
 * refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "container/zstd_pack.h"

typedef struct want {
    uint64_t off;
    uint32_t len;
    int grouped;
} want;

static void expect_plan(uint64_t total, const stf__zspan *s, size_t ns, uint64_t frame,
                        int grouped, const want *w, size_t nw)
{
    stf__zframe *f = NULL;
    size_t n = 0;
    stf_err err;
    if (stf__zframes_plan(&f, &n, total, s, ns, frame, grouped, &err)) fail_msg("%s", err.msg);
    assert_int_equal(n, nw);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(f[i].off, w[i].off);
        assert_int_equal(f[i].len, w[i].len);
        assert_int_equal(f[i].grouped, w[i].grouped);
    }
    stf__free(f);
}

/* Frames end at the furthest tensor boundary within reach; with none in
 * reach, at the frame size. */
static void test_plan_boundaries(void **state)
{
    (void)state;
    const stf__zspan s[] = { { 40, 60, 0 }, { 10, 30, 1 } };
    const want plain[] = { { 0, 40, 0 }, { 40, 50, 0 }, { 90, 10, 0 } };
    expect_plan(100, s, 2, 50, 0, plain, 3);
    /* Grouped: the header bytes, the BF16 tensor and the rest apart. */
    const want grp[] = { { 0, 10, 0 }, { 10, 30, 1 }, { 40, 50, 0 }, { 90, 10, 0 } };
    expect_plan(100, s, 2, 50, 1, grp, 4);
}

/* A long BF16 tensor is cut every (even) frame size, each piece grouped. */
static void test_plan_long_tensor(void **state)
{
    (void)state;
    const stf__zspan s[] = { { 8, 1000, 1 } };
    const want w[] = { { 0, 8, 0 }, { 8, 300, 1 }, { 308, 300, 1 }, { 608, 300, 1 },
                       { 908, 100, 1 } };
    expect_plan(1008, s, 1, 301, 1, w, 5);
    /* Two neighbouring BF16 tensors share frames. */
    const stf__zspan two[] = { { 8, 100, 1 }, { 108, 100, 1 } };
    const want w2[] = { { 0, 8, 0 }, { 8, 200, 1 } };
    expect_plan(208, two, 2, 1024, 1, w2, 2);
}

/* Overlapping spans (a hand-made file) are never grouped. */
static void test_plan_overlap(void **state)
{
    (void)state;
    const stf__zspan s[] = { { 0, 64, 1 }, { 32, 64, 1 } };
    const want w[] = { { 0, 32, 1 }, { 32, 32, 0 }, { 64, 32, 1 } };
    expect_plan(96, s, 2, 1024, 1, w, 3);
}

static void test_plan_refusals(void **state)
{
    (void)state;
    stf__zframe *f = NULL;
    size_t n = 0;
    stf_err err;
    assert_int_equal(stf__zframes_plan(&f, &n, 10, NULL, 0, 1, 0, &err), STF_EINVAL);
    assert_string_equal(err.msg, "compression: frame size 1 is out of range");
    assert_null(f);
}

static unsigned char *sample(size_t n)
{
    unsigned char *b = malloc(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        /* BF16-like: the high byte from a few values, the low byte noise. */
        b[i] = (unsigned char)(i % 2 ? 0x3C + (x >> 30) : x >> 16);
    }
    return b;
}

/* Encode; the frame's header is exact and decoding restores the bytes. */
static unsigned char *encode(const unsigned char *src, size_t n, size_t *len)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t cap = stf__stz_group_bound(n);
    unsigned char *dst = malloc(cap), *scratch = malloc(n);
    stf_err err;
    if (stf__stz_group_encode(c, dst, cap, len, src, n, scratch, &err)) fail_msg("%s", err.msg);
    ZSTD_freeCCtx(c);
    free(scratch);
    return dst;
}

static void test_group_round_trip(void **state)
{
    (void)state;
    size_t n = 4096, len = 0, got = 0;
    unsigned char *src = sample(n), *z = encode(src, n, &len), *back = malloc(n), *tmp = malloc(n);
    assert_int_equal(stf__le32(z), 0x475A5453u);
    assert_int_equal(z[4], 2);
    assert_int_equal(stf__le32(z + 8), 4096);
    assert_int_equal(20 + stf__le32(z + 12) + stf__le32(z + 16), len);
    /* The high bytes take few values: their stream is the smaller one. */
    assert_true(stf__le32(z + 12) < stf__le32(z + 16));
    stf_err err;
    if (stf__stz_group_decode(NULL, z, len, back, n, tmp, &got, "x.stz", 0, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(got, n);
    assert_memory_equal(back, src, n);
    /* A reused decompression context gives the same bytes. */
    ZSTD_DCtx *d = ZSTD_createDCtx();
    memset(back, 0, n);
    if (stf__stz_group_decode(d, z, len, back, n, tmp, &got, "x.stz", 0, &err))
        fail_msg("%s", err.msg);
    assert_memory_equal(back, src, n);
    ZSTD_freeDCtx(d);
    free(tmp);
    free(src);
    free(z);
    free(back);
}

static void expect_refusal(const unsigned char *z, size_t len, size_t dcap, const char *msg)
{
    unsigned char *dst = malloc(dcap ? dcap : 1), *tmp = malloc(dcap ? dcap : 1);
    size_t got = 7;
    stf_err err;
    assert_int_equal(stf__stz_group_decode(NULL, z, len, dst, dcap, tmp, &got, "x.stz", 77, &err),
                     STF_EFORMAT);
    assert_string_equal(err.msg, msg);
    assert_string_equal(err.rule, "S26");
    assert_int_equal(err.has_offset, 1);
    assert_int_equal(err.offset, 77);
    assert_int_equal(got, 0);
    free(dst);
    free(tmp);
}

static void test_group_refusals(void **state)
{
    (void)state;
    size_t n = 1024, len = 0;
    unsigned char *src = sample(n), *z = encode(src, n, &len), *bad = malloc(len);
#define BAD(what) "x.stz: S26 ZstdCorrupt: grouped frame at compressed byte 77: " what
    expect_refusal(z, 19, n, BAD("truncated header"));
    memcpy(bad, z, len);
    bad[0] ^= 1;
    expect_refusal(bad, len, n, BAD("bad magic"));
    memcpy(bad, z, len);
    bad[4] = 4;
    expect_refusal(bad, len, n, BAD("unknown element width or flags"));
    memcpy(bad, z, len);
    bad[6] = 1;
    expect_refusal(bad, len, n, BAD("unknown element width or flags"));
    memcpy(bad, z, len);
    stf__put_le32(bad + 8, 1023);
    expect_refusal(bad, len, n, BAD("decompressed size is odd or too large"));
    /* A claimed size above what the caller allows is refused before any
     * allocation of it. */
    stf__put_le32(bad + 8, 0xFFFFFFF0u);
    expect_refusal(bad, len, n, BAD("decompressed size is odd or too large"));
    expect_refusal(z, len, n - 2, BAD("decompressed size is odd or too large"));
    expect_refusal(z, len - 1, n, BAD("inner frame sizes do not match the frame"));
    /* Sizes that add up but cut the inner frames in the wrong place. */
    memcpy(bad, z, len);
    stf__put_le32(bad + 12, stf__le32(z + 12) - 1);
    stf__put_le32(bad + 16, stf__le32(z + 16) + 1);
    expect_refusal(bad, len, n, BAD("an inner frame does not fill its space"));
    /* The right sizes with a claimed size of the wrong half. */
    memcpy(bad, z, len);
    stf__put_le32(bad + 8, 1022);
    expect_refusal(bad, len, n, BAD("an inner frame has the wrong size"));
    /* A flipped byte in the low stream's data fails its checksum. */
    memcpy(bad, z, len);
    bad[len - 6] ^= 0x55;
    unsigned char *dst = malloc(n), *tmp = malloc(n);
    size_t got = 0;
    stf_err err;
    assert_int_equal(stf__stz_group_decode(NULL, bad, len, dst, n, tmp, &got, "x.stz", 77, &err),
                     STF_EFORMAT);
    assert_non_null(strstr(err.msg, "x.stz: S26 ZstdCorrupt: grouped frame at compressed byte 77: "));
    free(dst);
    free(tmp);
#undef BAD
    free(src);
    free(z);
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_boundaries),  cmocka_unit_test(test_plan_long_tensor),
        cmocka_unit_test(test_plan_overlap),     cmocka_unit_test(test_plan_refusals),
        cmocka_unit_test(test_group_round_trip), cmocka_unit_test(test_group_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
