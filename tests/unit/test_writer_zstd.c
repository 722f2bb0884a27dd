/* Tests for lib/container/writer_zstd.c, zstd_pack.c, zstd_unpack.c and
 * zstd_file.c: a writer with zstd options publishes only the compressed
 * file, whose frames restore the uncompressed output byte for byte for
 * every dtype, plain and grouped; the seek table is exact; the bytes do
 * not depend on the pool; sharded outputs name .zst shards; restoring
 * refuses corrupt and truncated input naming the compressed offset. */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "container/zstd_pack.h"
#include "stfix.h"
#include "support/st_tmp.h"

enum { NELEM = 960 }; /* a multiple of 8: whole bytes for the 4- and 6-bit dtypes */

static unsigned char g_data[STF_DTYPE_COUNT][NELEM * 8];

/* One tensor of every dtype, "t00".."tNN", [NELEM] each. */
static int write_all(const char *path, const stf_write_opts *o, stf_err *err)
{
    stf_writer *w = NULL;
    uint32_t x = 7;
    for (size_t d = 0; d < STF_DTYPE_COUNT; d++)
        for (size_t i = 0; i < sizeof g_data[d]; i++) {
            x = x * 1103515245u + 12345u;
            g_data[d][i] = (unsigned char)(i % 2 ? 0x3C + (x >> 30) : x >> 16);
        }
    int rc = stf_writer_new(&w, path, o, err);
    for (size_t d = 0; !rc && d < STF_DTYPE_COUNT; d++) {
        char name[8];
        snprintf(name, sizeof name, "t%02zu", d);
        uint64_t shape[1] = { NELEM };
        stf_tensor_src src = { STF_SRC_MEM, g_data[d], NULL, 0, NULL, NULL };
        rc = stf_writer_add(w, name, (stf_dtype)d, 1, shape, &src, err);
    }
    if (!rc) rc = stf_writer_commit(w, err);
    stf_writer_free(w);
    return rc;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    unsigned char *b = st_read_file(path, len);
    assert_non_null(b);
    return b;
}

typedef struct mem {
    unsigned char *p;
    size_t n, cap;
} mem;

static int to_mem(void *ud, const void *p, size_t n, stf_err *err)
{
    (void)err;
    mem *m = ud;
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->p = realloc(m->p, m->cap);
    }
    memcpy(m->p + m->n, p, n);
    m->n += n;
    return 0;
}

/* Restore the compressed file at path: 0 and *out, or the error. */
static int restore(mem *out, const char *path, stf_err *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    fstat(fd, &st);
    int rc = stf__zstd_unpack(fd, path, (uint64_t)st.st_size, to_mem, out, err);
    close(fd);
    return rc;
}

static stf_write_opts zopts(int grouped, uint64_t frame)
{
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.zstd_level = 3;
    o.zstd_grouped = grouped;
    o.zstd_frame = frame;
    return o;
}

/* The seek table of the file b[0..n): entries and the frames they describe
 * cover the file; returns the frame count. The table has checksums, a .stz
 * file's too: a zstd frame's is its own (its last 4 bytes), a grouped
 * frame's the low 32 bits of the XXH64 of its restored bytes (of p). */
static size_t check_table(const unsigned char *b, size_t n, const unsigned char *p,
                          uint64_t plain, uint32_t frame)
{
    assert_true(n > 17);
    assert_int_equal(stf__le32(b + n - 4), 0x8F92EAB1u);
    assert_int_equal(b[n - 5], 0x80);
    uint32_t nf = stf__le32(b + n - 9);
    size_t per = 12, tab = 8 + nf * per + 9;
    const unsigned char *t = b + n - tab;
    assert_int_equal(stf__le32(t), 0x184D2A5Eu);
    assert_int_equal(stf__le32(t + 4), tab - 8);
    uint64_t c = 0, d = 0;
    for (uint32_t i = 0; i < nf; i++) {
        const unsigned char *e = t + 8 + i * per;
        uint32_t cs = stf__le32(e), ds = stf__le32(e + 4);
        assert_true(ds <= frame);
        if (stf__le32(b + c) == 0x475A5453u)
            assert_int_equal(stf__le32(e + 8), (uint32_t)(XXH64(p + d, ds, 0) & 0xFFFFFFFFu));
        else
            assert_int_equal(stf__le32(e + 8), stf__le32(b + c + cs - 4));
        c += cs;
        d += ds;
    }
    assert_int_equal(c, n - tab);
    assert_int_equal(d, plain);
    return nf;
}

/* Every dtype: the compressed file restores the uncompressed output. */
static void round_trip(int grouped)
{
    stf_err err;
    stf_write_opts plain;
    stf_write_opts_init(&plain);
    if (write_all(st_in_dir("p.safetensors"), &plain, &err)) fail_msg("%s", err.msg);
    stf_write_opts o = zopts(grouped, 1024);
    const char *zp = st_in_dir(grouped ? "z.safetensors.stz" : "z.safetensors.zst");
    if (write_all(zp, &o, &err)) fail_msg("%s", err.msg);
    size_t pn, zn;
    unsigned char *p = slurp(st_in_dir("p.safetensors"), &pn), *z = slurp(zp, &zn);
    size_t nf = check_table(z, zn, p, pn, 1024);
    /* Frames end at tensor boundaries: at least one per tensor. */
    assert_true(nf >= STF_DTYPE_COUNT);
    mem m;
    if (restore(&m, zp, &err)) fail_msg("%s", err.msg);
    assert_int_equal(m.n, pn);
    assert_memory_equal(m.p, p, pn);
    /* Only the output and nothing else (no temp, no uncompressed file). */
    assert_int_equal(st_dir_entries(st_dir), 2);
    free(p);
    free(z);
    free(m.p);
}

static void test_round_trip_plain(void **state)
{
    (void)state;
    round_trip(0);
}

static void test_round_trip_grouped(void **state)
{
    (void)state;
    round_trip(1);
    /* Grouped frames are there: the BF16 and F16 tensors' frames. */
    size_t zn;
    unsigned char *z = slurp(st_in_dir("z.safetensors.stz"), &zn);
    size_t groups = 0;
    for (size_t i = 0; i + 4 <= zn; i++) groups += stf__le32(z + i) == 0x475A5453u;
    assert_true(groups >= 4); /* [960] BF16 and F16: 1920 bytes, 2 frames each */
    free(z);
}

/* The same bytes with no pool, one thread and two. */
static void test_pool_identity(void **state)
{
    (void)state;
    stf_err err;
    stf_pool *p1 = NULL, *p2 = NULL;
    assert_int_equal(stf_pool_new(&p1, 1, &err), 0);
    assert_int_equal(stf_pool_new(&p2, 2, &err), 0);
    stf_write_opts o = zopts(0, 1024);
    if (write_all(st_in_dir("a.safetensors.zst"), &o, &err)) fail_msg("%s", err.msg);
    o.pool = p1;
    if (write_all(st_in_dir("b.safetensors.zst"), &o, &err)) fail_msg("%s", err.msg);
    o.pool = p2;
    if (write_all(st_in_dir("c.safetensors.zst"), &o, &err)) fail_msg("%s", err.msg);
    size_t an, bn, cn;
    unsigned char *a = slurp(st_in_dir("a.safetensors.zst"), &an),
                  *b = slurp(st_in_dir("b.safetensors.zst"), &bn),
                  *c = slurp(st_in_dir("c.safetensors.zst"), &cn);
    assert_int_equal(an, bn);
    assert_int_equal(an, cn);
    assert_memory_equal(a, b, an);
    assert_memory_equal(a, c, an);
    free(a);
    free(b);
    free(c);
    stf_pool_free(p1);
    stf_pool_free(p2);
}

/* Sharded: STEM-0000i-of-0000N.safetensors.zst and an index naming them. */
static void test_sharded_names(void **state)
{
    (void)state;
    stf_err err;
    stf_write_opts o = zopts(0, 0);
    o.zstd_verify = 1;
    o.max_shard_size = 4000;
    if (write_all(st_in_dir("m.safetensors.zst"), &o, &err)) fail_msg("%s", err.msg);
    size_t n;
    unsigned char *raw = slurp(st_in_dir("m.safetensors.index.json"), &n);
    char *ix = calloc(n + 1, 1); /* the text, NUL-terminated for strstr */
    memcpy(ix, raw, n);
    free(raw);
    assert_non_null(strstr(ix, "\"t00\": \"m-000"));
    assert_non_null(strstr(ix, ".safetensors.zst\""));
    assert_null(strstr(ix, ".safetensors\""));
    free(ix);
    struct stat st;
    char name[64];
    size_t shards = st_dir_entries(st_dir) - 1;
    assert_true(shards > 1);
    for (size_t i = 1; i <= shards; i++) {
        snprintf(name, sizeof name, "m-%05zu-of-%05zu.safetensors.zst", i, shards);
        assert_int_equal(stat(st_in_dir(name), &st), 0);
    }
    assert_int_not_equal(stat(st_in_dir("m.safetensors.zst"), &st), 0);
}

static void expect_err(int rc, int code, const stf_err *err, const char *msg)
{
    assert_int_equal(rc, code);
    assert_string_equal(err->msg, msg);
}

/* The name must carry the suffix; options out of range are refused. */
static void test_option_refusals(void **state)
{
    (void)state;
    stf_err err;
    char want[512];
    stf_write_opts o = zopts(0, 0);
#define WANT(name, text) (snprintf(want, sizeof want, "%s: " text, st_in_dir(name)), want)
    expect_err(write_all(st_in_dir("x.safetensors"), &o, &err), STF_EINVAL, &err,
               WANT("x.safetensors", "a compressed output's name must end in \".zst\""));
    o.zstd_grouped = 1;
    expect_err(write_all(st_in_dir("x.zst"), &o, &err), STF_EINVAL, &err,
               WANT("x.zst", "a compressed output's name must end in \".stz\""));
    o = zopts(0, 100);
    expect_err(write_all(st_in_dir("x.zst"), &o, &err), STF_EINVAL, &err,
               WANT("x.zst", "a zstd frame size must be between 1 KiB and 1 GiB (got 100)"));
    o = zopts(0, 0);
    o.zstd_level = 23;
    expect_err(write_all(st_in_dir("x.zst"), &o, &err), STF_EINVAL, &err,
               WANT("x.zst", "zstd level 23 is not between 1 and 22"));
    o = zopts(0, 0);
    o.max_shard_size = 100;
    expect_err(write_all(st_in_dir("x.zst"), &o, &err), STF_EINVAL, &err,
               WANT("x.zst", "a sharded output path must end in \".safetensors.zst\""));
#undef WANT
    assert_int_equal(st_dir_entries(st_dir), 0);
}

/* Corrupt and truncated input: STF_EFORMAT at the frame's compressed offset. */
static void test_restore_refusals(void **state)
{
    (void)state;
    stf_err err;
    stf_write_opts o = zopts(0, 1024);
    const char *zp = st_in_dir("z.safetensors.zst");
    if (write_all(zp, &o, &err)) fail_msg("%s", err.msg);
    size_t n;
    unsigned char *z = slurp(zp, &n);
    const unsigned char *t = z + n - 9 - 12 * (size_t)stf__le32(z + n - 9);
    uint32_t c0 = stf__le32(t), c1 = stf__le32(t + 12);
    char want[256];
    mem m;
    /* The last frame cut short (the seek table dropped with it). */
    size_t cut = c0 + c1 - 3;
    assert_int_equal(st_write_file(st_in_dir("cut.zst"), z, cut), 0);
    snprintf(want, sizeof want, "%s: truncated zstd frame at compressed byte %u",
             st_in_dir("cut.zst"), c0);
    expect_err(restore(&m, st_in_dir("cut.zst"), &err), STF_EFORMAT, &err, want);
    assert_int_equal(err.offset, c0);
    free(m.p);
    /* A flipped data byte in frame 1: its checksum (or its structure) fails. */
    unsigned char *bad = malloc(n);
    memcpy(bad, z, n);
    bad[c0 + c1 / 2] ^= 0xFF;
    assert_int_equal(st_write_file(st_in_dir("bad.zst"), bad, n), 0);
    assert_int_equal(restore(&m, st_in_dir("bad.zst"), &err), STF_EFORMAT);
    snprintf(want, sizeof want, "%s: corrupt zstd frame (", st_in_dir("bad.zst"));
    assert_memory_equal(err.msg, want, strlen(want));
    snprintf(want, sizeof want, ") starting at compressed byte %u", c0);
    assert_string_equal(err.msg + strlen(err.msg) - strlen(want), want);
    free(m.p);
    /* Not a frame at all. */
    memcpy(bad, z, n);
    memcpy(bad + c0, "JUNK", 4);
    assert_int_equal(st_write_file(st_in_dir("junk.zst"), bad, n), 0);
    snprintf(want, sizeof want, "%s: not a zstd frame at compressed byte %u",
             st_in_dir("junk.zst"), c0);
    expect_err(restore(&m, st_in_dir("junk.zst"), &err), STF_EFORMAT, &err, want);
    free(m.p);
    /* The seek table's skippable frame claiming more than the file holds:
     * the table is checked before any frame, as the readers check it. */
    memcpy(bad, z, n);
    size_t tab = (size_t)(t - z) - 8;
    stf__put_le32(bad + tab + 4, 0x7FFFFFFFu);
    assert_int_equal(st_write_file(st_in_dir("skip.zst"), bad, n), 0);
    snprintf(want, sizeof want,
             "%s: S27 ZstdSeekTable: the seek table frame at compressed byte %zu says it "
             "holds 2147483647 bytes, the footer implies %zu",
             st_in_dir("skip.zst"), tab, n - tab - 8);
    expect_err(restore(&m, st_in_dir("skip.zst"), &err), STF_EFORMAT, &err, want);
    free(m.p);
    free(bad);
    free(z);
}

/* stf_zstd_compress keeps a file's bytes; stf_zstd_decompress restores them,
 * and a corrupt input leaves nothing behind. */
static void test_file_api(void **state)
{
    (void)state;
    stf_err err;
    stf_write_opts plain;
    stf_write_opts_init(&plain);
    const char *in = st_in_dir("in.safetensors");
    if (write_all(in, &plain, &err)) fail_msg("%s", err.msg);
    stf_write_opts o = zopts(1, 0);
    o.zstd_verify = 1;
    if (stf_zstd_compress(in, st_in_dir("in.safetensors.stz"), &o, 0, &err))
        fail_msg("%s", err.msg);
    if (stf_zstd_decompress(st_in_dir("in.safetensors.stz"), st_in_dir("back.safetensors"), NULL,
                            0, &err))
        fail_msg("%s", err.msg);
    size_t a, b;
    unsigned char *x = slurp(in, &a), *y = slurp(st_in_dir("back.safetensors"), &b);
    assert_int_equal(a, b);
    assert_memory_equal(x, y, a);
    free(y);
    /* An existing output, even with the same bytes, only when replacing. */
    char want[512];
    snprintf(want, sizeof want, "%s: the output exists; give --force to replace it",
             st_in_dir("back.safetensors"));
    expect_err(stf_zstd_decompress(st_in_dir("in.safetensors.stz"), st_in_dir("back.safetensors"),
                                   NULL, 0, &err),
               STF_EINVAL, &err, want);
    snprintf(want, sizeof want, "%s: the output exists; give --force to replace it",
             st_in_dir("in.safetensors.stz"));
    char src[512];
    snprintf(src, sizeof src, "%s", st_in_dir("in.safetensors"));
    expect_err(stf_zstd_compress(src, st_in_dir("in.safetensors.stz"), &o, 0, &err), STF_EINVAL,
               &err, want);
    assert_int_equal(st_write_file(st_in_dir("back.safetensors"), "old", 3), 0);
    if (stf_zstd_decompress(st_in_dir("in.safetensors.stz"), st_in_dir("back.safetensors"), NULL,
                            1, &err))
        fail_msg("%s", err.msg);
    y = slurp(st_in_dir("back.safetensors"), &b);
    assert_int_equal(a, b);
    assert_memory_equal(x, y, a);
    free(y);
    /* Never onto the input, even when replacing; never twice. */
    const char *zin = st_in_dir("in.safetensors.stz");
    snprintf(want, sizeof want, "%s: the output would overwrite an input file; choose another "
                                "output path", zin);
    expect_err(stf_zstd_decompress(zin, zin, NULL, 1, &err), STF_EINVAL, &err, want);
    snprintf(want, sizeof want, "%s: already compressed", st_in_dir("in.safetensors.stz"));
    o = zopts(0, 0);
    expect_err(stf_zstd_compress(st_in_dir("in.safetensors.stz"), st_in_dir("again.zst"), &o,
                                 0, &err),
               STF_EINVAL, &err, want);
    /* Garbage in: exit with the offset, no output, no temp file. */
    assert_int_equal(st_write_file(st_in_dir("g.zst"), x, 64), 0);
    snprintf(want, sizeof want, "%s: not a zstd frame at compressed byte 0", st_in_dir("g.zst"));
    expect_err(stf_zstd_decompress(st_in_dir("g.zst"), st_in_dir("g.safetensors"), NULL, 0, &err),
               STF_EFORMAT, &err, want);
    assert_int_equal(st_dir_entries(st_dir), 4);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_plain, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_grouped, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_pool_identity, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_sharded_names, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_option_refusals, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_restore_refusals, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_file_api, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
