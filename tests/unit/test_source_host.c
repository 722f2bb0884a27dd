/*
 * Tests for lib/io/source_host.c and stf_ckpt_open_host: a checkpoint
 * whose bytes a host program supplies through callbacks is validated,
 * capped, decompressed and reported on as the same bytes in a file are;
 * a host's failures and short files are STF_EIO naming the name and the
 * offset; and each file's close callback runs exactly once on every path.
 */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <cmocka.h>

#include "container/container_internal.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"
#include "support/st_zseek.h"

/* ------------------------------------------------------------ a host file */

/* One file as the host holds it. */
typedef struct hfile {
    const uint8_t *p;
    size_t n;          /* bytes the host has (reads stop here) */
    int64_t size;      /* what size() says (may differ from n) */
    size_t chunk;      /* at most this many bytes per read (0: all asked) */
    uint64_t fail_at;  /* a read reaching this offset returns -5 (UINT64_MAX: never) */
    int size_fails;    /* size() returns -1 */
    int closes;        /* times close was called */
    int reads;         /* times read was called */
} hfile;

static int64_t h_read(void *ctx, uint64_t off, void *dst, size_t len)
{
    hfile *f = ctx;
    f->reads++;
    if (off + len > f->fail_at) return -5;
    if (off >= f->n) return 0;
    size_t k = f->n - (size_t)off < len ? f->n - (size_t)off : len;
    if (f->chunk && k > f->chunk) k = f->chunk;
    memcpy(dst, f->p + off, k);
    return (int64_t)k;
}

static int64_t h_size(void *ctx)
{
    hfile *f = ctx;
    return f->size_fails ? -1 : f->size;
}

static void h_close(void *ctx) { ((hfile *)ctx)->closes++; }

static hfile hf(const uint8_t *p, size_t n)
{
    hfile f = {p, n, (int64_t)n, 0, UINT64_MAX, 0, 0, 0};
    return f;
}

static stf_host_io io_of(hfile *f)
{
    stf_host_io io = {f, h_read, h_size, h_close};
    return io;
}

/* ------------------------------------------------------------ fixtures */

#define NB 300 /* bytes of each tensor */

static uint8_t g_a[NB], g_b[NB];
static uint8_t *g_plain; /* "a" and "b" in one file */
static size_t g_plain_len;
static uint64_t g_tbegin[2];
static uint8_t *g_sa, *g_sb; /* "a" alone, "b" alone: the shards of an index */
static size_t g_sa_len, g_sb_len;

static int setup(void **state)
{
    if (st_dir_setup(state)) return -1;
    for (size_t i = 0; i < NB; i++) {
        g_a[i] = (uint8_t)(i * 7 + 1);
        g_b[i] = (uint8_t)(i * 13 + 5);
    }
    st_tensor t[2] = {
        {"a", STF_U8, 1, {NB}, g_a, NB},
        {"b", STF_U8, 1, {NB}, g_b, NB},
    };
    uint64_t tb[1];
    g_plain = st_zplain(t, 2, NULL, &g_plain_len, g_tbegin);
    g_sa = st_zplain(&t[0], 1, NULL, &g_sa_len, tb);
    g_sb = st_zplain(&t[1], 1, NULL, &g_sb_len, tb);
    return g_plain && g_sa && g_sb ? 0 : -1;
}

static int teardown(void **state)
{
    free(g_plain);
    free(g_sa);
    free(g_sb);
    return st_dir_teardown(state);
}

/* Both tensors of c read back as written. */
static void assert_tensors(const stf_ckpt *c)
{
    uint8_t buf[NB];
    size_t i;
    stf_err e;
    assert_int_equal(stf_ckpt_tensor_count(c), 2);
    assert_int_equal(stf_ckpt_find(&i, c, "a"), 0);
    assert_int_equal(stf_ckpt_read(buf, c, i, 0, NB, &e), 0);
    assert_memory_equal(buf, g_a, NB);
    assert_int_equal(stf_ckpt_find(&i, c, "b"), 0);
    assert_int_equal(stf_ckpt_read(buf, c, i, 0, NB, &e), 0);
    assert_memory_equal(buf, g_b, NB);
}

/* ------------------------------------------------------------ tests */

/* Reads of a few bytes at a time are asked again until they are whole. */
static void test_short_reads(void **state)
{
    (void)state;
    hfile f = hf(g_plain, g_plain_len);
    f.chunk = 7;
    stf_host_io io = io_of(&f);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open_host(&c, "host.safetensors", &io, NULL, NULL, NULL, &e), 0);
    assert_tensors(c);
    assert_string_equal(stf_ckpt_shard_path(c, 0), "host.safetensors");
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
    assert_int_equal(stf_ckpt_shard_storage(c, 0), STF_STORAGE_PLAIN);
    assert_true(f.reads > (int)(g_plain_len / 7));
    assert_int_equal(stf__ckpt_unchanged(c, &e), 0);
    assert_int_equal(f.closes, 0);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 1);
}

/* A negative read is STF_EIO naming the name and the offset, at open (the
 * header) or at a later read (the data); close still runs once. */
static void test_read_fails(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err e;
    char want[200];

    hfile f = hf(g_plain, g_plain_len);
    f.fail_at = 0;
    stf_host_io io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors", &io, NULL, NULL, NULL, &e), STF_EIO);
    assert_null(c);
    assert_int_equal(e.code, STF_EIO);
    assert_string_equal(e.msg,
                        "h.safetensors: read failed at offset 0: the host's read returned -5");
    assert_true(e.has_offset);
    assert_int_equal(e.offset, 0);
    assert_int_equal(f.closes, 1);

    f = hf(g_plain, g_plain_len);
    f.fail_at = g_tbegin[1] + 1; /* tensor "b" */
    io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors", &io, NULL, NULL, NULL, &e), 0);
    uint8_t buf[NB];
    assert_int_equal(stf_ckpt_read(buf, c, 0, 0, NB, &e), 0);
    assert_memory_equal(buf, g_a, NB);
    assert_int_equal(stf_ckpt_read(buf, c, 1, 0, NB, &e), STF_EIO);
    snprintf(want, sizeof want,
             "tensor 'b': h.safetensors: read failed at offset %llu: the host's read returned -5",
             (unsigned long long)g_tbegin[1]);
    assert_string_equal(e.msg, want);
    assert_int_equal(e.offset, g_tbegin[1]);
    assert_int_equal(f.closes, 0);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 1);
}

/* A size() that fails is STF_EIO at open, and close runs once. */
static void test_size_fails(void **state)
{
    (void)state;
    hfile f = hf(g_plain, g_plain_len);
    f.size_fails = 1;
    stf_host_io io = io_of(&f);
    stf_ckpt *c = (stf_ckpt *)1;
    stf_err e;
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors", &io, NULL, NULL, NULL, &e), STF_EIO);
    assert_null(c);
    assert_string_equal(e.msg,
                        "h.safetensors: cannot tell the size: the host's size returned -1");
    assert_int_equal(f.closes, 1);
}

/* A file that shrinks after open ends early at the read that finds it
 * (STF_EIO, the offset), and the size check before publishing sees it; a
 * file that grows keeps the size it had at open, and the check sees that
 * too. */
static void test_size_changes(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err e;
    char want[300];

    hfile f = hf(g_plain, g_plain_len);
    stf_host_io io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors", &io, NULL, NULL, NULL, &e), 0);
    f.n = (size_t)g_tbegin[1] + 10; /* shrinks inside "b" */
    f.size = (int64_t)f.n;
    uint8_t buf[NB];
    assert_int_equal(stf_ckpt_read(buf, c, 0, 0, NB, &e), 0);
    assert_int_equal(stf_ckpt_read(buf, c, 1, 0, NB, &e), STF_EIO);
    snprintf(want, sizeof want,
             "tensor 'b': h.safetensors: unexpected end of file at offset %llu (expected %llu "
             "bytes; was "
             "the file truncated while open?)",
             (unsigned long long)(g_tbegin[1] + 10), (unsigned long long)g_plain_len);
    assert_string_equal(e.msg, want);
    assert_int_equal(e.offset, g_tbegin[1] + 10);
    assert_int_equal(stf__ckpt_unchanged(c, &e), STF_EIO);
    snprintf(want, sizeof want,
             "h.safetensors: the input changed while stfix was reading it (size %llu bytes, "
             "now %llu); nothing was written: run again once nothing changes it",
             (unsigned long long)g_plain_len, (unsigned long long)(g_tbegin[1] + 10));
    assert_string_equal(e.msg, want);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 1);

    f = hf(g_plain, g_plain_len);
    io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors", &io, NULL, NULL, NULL, &e), 0);
    f.size = (int64_t)g_plain_len + 100; /* grows */
    assert_tensors(c);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
    assert_int_equal(stf__ckpt_unchanged(c, &e), STF_EIO);
    snprintf(want, sizeof want,
             "h.safetensors: the input changed while stfix was reading it (size %llu bytes, "
             "now %llu); nothing was written: run again once nothing changes it",
             (unsigned long long)g_plain_len, (unsigned long long)(g_plain_len + 100));
    assert_string_equal(e.msg, want);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 1);
}

/* A size() that says less than the host has: the file is what size()
 * said, so the header's S3/S19 checks see a short file, as for a file. */
static void test_same_errors_as_a_file(void **state)
{
    (void)state;
    /* Cut inside the data: the bytes as a file and as the host's. */
    size_t cut = (size_t)g_tbegin[1] + 3;
    const char *p = st_in_dir("short.safetensors");
    assert_int_equal(st_write_file(p, g_plain, cut), 0);
    stf_ckpt *c = NULL;
    stf_err fe, he;
    int frc = stf_ckpt_open(&c, p, NULL, &fe);
    assert_null(c);
    hfile f = hf(g_plain, g_plain_len);
    f.size = (int64_t)cut;
    stf_host_io io = io_of(&f);
    int hrc = stf_ckpt_open_host(&c, p, &io, NULL, NULL, NULL, &he);
    assert_null(c);
    assert_int_equal(frc, STF_EFORMAT);
    assert_int_equal(hrc, frc);
    assert_string_equal(he.rule, fe.rule);
    assert_string_equal(he.msg, fe.msg);
    assert_int_equal(he.has_offset, fe.has_offset);
    assert_int_equal(he.offset, fe.offset);
    assert_int_equal(f.closes, 1);

    /* A cap: the same STF_ELIMIT. */
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.max_header = 16;
    assert_int_equal(st_write_file(p, g_plain, g_plain_len), 0);
    frc = stf_ckpt_open(&c, p, &o, &fe);
    assert_null(c);
    f = hf(g_plain, g_plain_len);
    io = io_of(&f);
    hrc = stf_ckpt_open_host(&c, p, &io, NULL, NULL, &o, &he);
    assert_int_equal(frc, STF_ELIMIT);
    assert_int_equal(hrc, frc);
    assert_string_equal(he.rule, fe.rule);
    assert_string_equal(he.msg, fe.msg);
    assert_int_equal(f.closes, 1);
}

/* zstd bytes are decompressed whatever their name: seekable and plain. */
static void test_zstd(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err e;
    st_zbuf z = st_zseekable(g_plain, g_plain_len, 128, g_tbegin, 2, 1);
    hfile f = hf(z.p, z.n);
    f.chunk = 50;
    stf_host_io io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors.zst", &io, NULL, NULL, NULL, &e), 0);
    assert_int_equal(stf_ckpt_shard_storage(c, 0), STF_STORAGE_ZSTD_SEEKABLE);
    assert_int_equal(stf_ckpt_shard_stored_size(c, 0), z.n);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), g_plain_len);
    assert_tensors(c);
    assert_int_equal(stf__ckpt_unchanged(c, &e), 0);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 1);
    free(z.p);

    size_t cap = ZSTD_compressBound(g_plain_len);
    uint8_t *zp = malloc(cap);
    assert_non_null(zp);
    size_t zn = ZSTD_compress(zp, cap, g_plain, g_plain_len, 3);
    assert_false(ZSTD_isError(zn));
    f = hf(zp, zn);
    f.chunk = 33;
    io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.bin", &io, NULL, NULL, NULL, &e), 0);
    assert_int_equal(stf_ckpt_shard_storage(c, 0), STF_STORAGE_ZSTD_STREAM);
    assert_tensors(c);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 1);

    /* Cut short: the stream reader's S26, and close once. */
    f = hf(zp, zn - 5);
    io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, "h.bin", &io, NULL, NULL, NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S26");
    assert_int_equal(f.closes, 1);
    free(zp);
}

/* ------------------------------------------------------------ shard sets */

static const char g_index[] =
    "{\"weight_map\":{\"a\":\"a.safetensors\",\"b\":\"b.safetensors\"}}";

typedef struct hset {
    hfile index, sa, sb;
    int missing_b; /* open_shard has no b.safetensors */
    int opens;
    char asked[2][32];
} hset;

static int h_open(void *ctx, const char *name, stf_host_io *out)
{
    hset *s = ctx;
    if (s->opens < 2) snprintf(s->asked[s->opens], sizeof s->asked[0], "%s", name);
    s->opens++;
    if (!strcmp(name, "a.safetensors")) *out = io_of(&s->sa);
    else if (!strcmp(name, "b.safetensors") && !s->missing_b) *out = io_of(&s->sb);
    else return -1;
    return 0;
}

static void hset_init(hset *s)
{
    memset(s, 0, sizeof *s);
    s->index = hf((const uint8_t *)g_index, sizeof g_index - 1);
    s->sa = hf(g_sa, g_sa_len);
    s->sb = hf(g_sb, g_sb_len);
}

/* An index's shards come from open_shard, by the names the index lists,
 * and are named beside the index in messages. */
static void test_shards(void **state)
{
    (void)state;
    hset s;
    hset_init(&s);
    s.sb.chunk = 11;
    stf_host_io io = io_of(&s.index);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open_host(&c, "m/x.safetensors.index.json", &io, h_open, &s, NULL,
                                        &e),
                     0);
    assert_int_equal(s.opens, 2);
    assert_string_equal(s.asked[0], "a.safetensors");
    assert_string_equal(s.asked[1], "b.safetensors");
    assert_int_equal(stf_ckpt_shard_count(c), 2);
    assert_string_equal(stf_ckpt_index_path(c), "m/x.safetensors.index.json");
    assert_string_equal(stf_ckpt_shard_path(c, 0), "m/a.safetensors");
    assert_string_equal(stf_ckpt_shard_path(c, 1), "m/b.safetensors");
    assert_tensors(c);
    /* The index was read whole at open and closed then. */
    assert_int_equal(s.index.closes, 1);
    assert_int_equal(s.sa.closes + s.sb.closes, 0);
    assert_int_equal(stf__ckpt_unchanged(c, &e), 0);
    stf_ckpt_free(c);
    assert_int_equal(s.index.closes, 1);
    assert_int_equal(s.sa.closes, 1);
    assert_int_equal(s.sb.closes, 1);
}

/* A shard the host does not have is the index's I3, as a missing file is. */
static void test_missing_shard(void **state)
{
    (void)state;
    hset s;
    hset_init(&s);
    s.missing_b = 1;
    stf_host_io io = io_of(&s.index);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open_host(&c, "m/x.safetensors.index.json", &io, h_open, &s, NULL,
                                        &e),
                     STF_EFORMAT);
    assert_null(c);
    assert_string_equal(e.rule, "I3");
    assert_string_equal(e.msg,
                        "m/x.safetensors.index.json: I3 MissingShard: shard 'b.safetensors' "
                        "(holding 'b' per weight_map) cannot be read: m/b.safetensors: No "
                        "such file or directory");
    assert_int_equal(s.index.closes, 1);
    assert_int_equal(s.sa.closes, 1);
    assert_int_equal(s.sb.closes, 0); /* never handed over */

    /* A shard whose read fails: the shard's STF_EIO under the index's I3. */
    hset_init(&s);
    s.sb.fail_at = 0;
    io = io_of(&s.index);
    assert_int_equal(stf_ckpt_open_host(&c, "m/x.safetensors.index.json", &io, h_open, &s, NULL,
                                        &e),
                     STF_EIO);
    assert_string_equal(e.msg,
                        "m/x.safetensors.index.json: I3 shard 'b.safetensors' is invalid: "
                        "m/b.safetensors: read failed at offset 0: the host's read returned -5");
    assert_int_equal(s.index.closes, 1);
    assert_int_equal(s.sa.closes, 1);
    assert_int_equal(s.sb.closes, 1);
}

/* Bad arguments are STF_EINVAL; a struct handed over is closed once all
 * the same. */
static void test_bad_arguments(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_err e;
    hset s;
    hset_init(&s);
    stf_host_io io = io_of(&s.index);
    assert_int_equal(stf_ckpt_open_host(&c, "x.safetensors.index.json", &io, NULL, NULL, NULL,
                                        &e),
                     STF_EINVAL);
    assert_string_equal(e.msg, "x.safetensors.index.json: an index needs the host's open_shard "
                               "to reach its shards");
    assert_int_equal(s.index.closes, 1);

    hfile f = hf(g_plain, g_plain_len);
    io = io_of(&f);
    assert_int_equal(stf_ckpt_open_host(&c, NULL, &io, NULL, NULL, NULL, &e), STF_EINVAL);
    assert_int_equal(f.closes, 1);
    assert_int_equal(stf_ckpt_open_host(NULL, "h", &io, NULL, NULL, NULL, &e), STF_EINVAL);
    assert_int_equal(f.closes, 2);
    io.read = NULL;
    assert_int_equal(stf_ckpt_open_host(&c, "h", &io, NULL, NULL, NULL, &e), STF_EINVAL);
    assert_string_equal(e.msg, "h: a host source needs its read and size callbacks");
    assert_int_equal(f.closes, 3);
    assert_int_equal(stf_ckpt_open_host(&c, "h", NULL, NULL, NULL, NULL, &e), STF_EINVAL);
    assert_null(c);

    /* No close callback at all is allowed. */
    io = io_of(&f);
    io.close = NULL;
    assert_int_equal(stf_ckpt_open_host(&c, "h.safetensors", &io, NULL, NULL, NULL, &e), 0);
    stf_ckpt_free(c);
    assert_int_equal(f.closes, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_reads),
        cmocka_unit_test(test_read_fails),
        cmocka_unit_test(test_size_fails),
        cmocka_unit_test(test_size_changes),
        cmocka_unit_test(test_same_errors_as_a_file),
        cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_shards),
        cmocka_unit_test(test_missing_shard),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
