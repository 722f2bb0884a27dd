/* Tests for lib/container/writer.c: the safetensors reference's writer fixtures
 * (test_serialization, test_empty, ...) byte for byte, writer order, metadata,
 * refusals, atomicity, sharding and allocation failure; atomicity and
 * allocation failure also with the named temp files forced (the fallback where
 * O_TMPFILE is unsupported). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "stfix.h"
#include "support/st_alloc.h"
#include "support/st_tmp.h"

static const unsigned char F32_0_5[24] = { 0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40,
                                           0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40 };

static int g_named; /* the *_named runs force the named temp files (no_tmpfile) */

static int setup_named(void **state)
{
    g_named = 1;
    return st_dir_setup(state);
}

static int teardown_named(void **state)
{
    g_named = 0;
    return st_dir_teardown(state);
}

/* Expected file: N (LE) + header text + pad + data. */
static void expect_file(const char *path, const char *hdr, size_t padded, const void *data,
                        size_t dlen)
{
    size_t len = 0;
    unsigned char *got = st_read_file(path, &len);
    assert_non_null(got);
    assert_int_equal(len, 8 + padded + dlen);
    for (int i = 0; i < 8; i++) assert_int_equal(got[i], (unsigned char)((uint64_t)padded >> (8 * i)));
    size_t hl = strlen(hdr);
    assert_memory_equal(got + 8, hdr, hl);
    for (size_t i = hl; i < padded; i++) assert_int_equal(got[8 + i], ' ');
    if (dlen) assert_memory_equal(got + 8 + padded, data, dlen);
    free(got);
}

static void add_mem(stf_writer *w, const char *name, stf_dtype dt, unsigned rank,
                    const uint64_t *shape, const void *mem)
{
    stf_tensor_src src = { STF_SRC_MEM, mem, NULL, 0, NULL, NULL };
    stf_err err;
    assert_int_equal(stf_writer_add(w, name, dt, rank, shape, &src, &err), 0);
}

static void commit_ok(stf_writer *w)
{
    stf_err err;
    int rc = stf_writer_commit(w, &err);
    if (rc) fail_msg("commit: %s", err.msg);
    stf_writer_free(w);
}

static void test_serialization(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t sh[] = { 1, 2, 3 };
    assert_int_equal(stf_writer_new(&w, st_in_dir("a.safetensors"), NULL, &err), 0);
    add_mem(w, "attn.0", STF_F32, 3, sh, F32_0_5);
    commit_ok(w);
    expect_file(st_in_dir("a.safetensors"),
                "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}", 64,
                F32_0_5, 24);
}

static void test_forced_alignment(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t sh[] = { 1, 1, 2, 3 };
    assert_int_equal(stf_writer_new(&w, st_in_dir("b.safetensors"), NULL, &err), 0);
    add_mem(w, "attn0", STF_F32, 4, sh, F32_0_5);
    commit_ok(w);
    expect_file(st_in_dir("b.safetensors"),
                "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}", 72,
                F32_0_5, 24);
}

static void test_fp4(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t sh[] = { 1, 2 };
    unsigned char z = 0;
    assert_int_equal(stf_writer_new(&w, st_in_dir("c.safetensors"), NULL, &err), 0);
    add_mem(w, "attn.0", STF_F4, 2, sh, &z);
    commit_ok(w);
    expect_file(st_in_dir("c.safetensors"),
                "{\"attn.0\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}", 64, &z, 1);
}

static void test_empty(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    static const unsigned char want[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' ' };
    assert_int_equal(stf_writer_new(&w, st_in_dir("e.safetensors"), NULL, &err), 0);
    commit_ok(w);
    size_t len;
    unsigned char *got = st_read_file(st_in_dir("e.safetensors"), &len);
    assert_int_equal(len, 16);
    assert_memory_equal(got, want, 16);
    free(got);

    assert_int_equal(stf_writer_new(&w, st_in_dir("f.safetensors"), NULL, &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "framework", "pt", &err), 0);
    commit_ok(w);
    expect_file(st_in_dir("f.safetensors"), "{\"__metadata__\":{\"framework\":\"pt\"}}", 40, NULL, 0);

    /* The source had an empty __metadata__: it survives as {} (lib/README.md,
     * Canonical form). */
    assert_int_equal(stf_writer_new(&w, st_in_dir("g.safetensors"), NULL, &err), 0);
    stf_writer_keep_empty_meta(w);
    commit_ok(w);
    expect_file(st_in_dir("g.safetensors"), "{\"__metadata__\":{}}", 24, NULL, 0);
}

static void test_header_too_large(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    char *v = malloc(100000001);
    memset(v, 'a', 100000000);
    v[100000000] = '\0';
    assert_int_equal(stf_writer_new(&w, st_in_dir("big.safetensors"), NULL, &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "k", v, &err), 0);
    free(v);
    assert_int_equal(stf_writer_commit(w, &err), STF_ELIMIT);
    assert_string_equal(err.rule, "S2");
    assert_non_null(strstr(err.msg, "HeaderTooLarge"));
    assert_non_null(strstr(err.msg, "big.safetensors"));
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

/* Writer order: dtype index descending, then name bytes; metadata sorted,
 * last of equal keys wins; escapes in names; zero-size tensor offsets. */
static void test_order_and_meta(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t s2[] = { 2 }, s0[] = { 0 }, s1[] = { 1 };
    unsigned char u8[2] = { 1, 2 };
    unsigned char f32[4] = { 0, 0, 0x80, 0x3f };
    unsigned char bf[4] = { 0x80, 0x3f, 0, 0 };
    assert_int_equal(stf_writer_new(&w, st_in_dir("o.safetensors"), NULL, &err), 0);
    add_mem(w, "b", STF_U8, 1, s2, u8);
    add_mem(w, "a\"\n", STF_BF16, 1, s2, bf);
    add_mem(w, "z", STF_F32, 1, s1, f32);
    add_mem(w, "e", STF_F32, 1, s0, NULL);
    add_mem(w, "ab", STF_U8, 1, s0, NULL);
    assert_int_equal(stf_writer_set_meta(w, "zeta", "1", &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "format", "tf", &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "Format", "x", &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "format", "pt", &err), 0);
    commit_ok(w);
    static const char hdr[] =
        "{\"__metadata__\":{\"Format\":\"x\",\"format\":\"pt\",\"zeta\":\"1\"},"
        "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
        "\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\\\"\\n\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]},"
        "\"ab\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,8]},"
        "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]}}";
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    unsigned char data[10];
    memcpy(data, f32, 4);
    memcpy(data + 4, bf, 4);
    memcpy(data + 8, u8, 2);
    expect_file(st_in_dir("o.safetensors"), hdr, padded, data, 10);
}

static void test_refusals(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t s1[] = { 1 }, s3[] = { 3 };
    unsigned char b[4] = { 0 };
    stf_tensor_src src = { STF_SRC_MEM, b, NULL, 0, NULL, NULL };
    assert_int_equal(stf_writer_new(&w, st_in_dir("r.safetensors"), NULL, &err), 0);
    assert_int_equal(stf_writer_add(w, "__metadata__", STF_U8, 1, s1, &src, &err), STF_EFORMAT);
    assert_string_equal(err.rule, "S14");
    assert_int_equal(stf_writer_add(w, "x", STF_U8, 1, s1, &src, &err), 0);
    assert_int_equal(stf_writer_add(w, "x", STF_F32, 1, s1, &src, &err), STF_EFORMAT);
    assert_string_equal(err.rule, "S13");
    assert_non_null(strstr(err.msg, "'x'"));
    assert_int_equal(stf_writer_add(w, "\xff", STF_U8, 1, s1, &src, &err), STF_EINVAL);
    assert_int_equal(stf_writer_add_n(w, "a\0\xed\xa0\x80", 5, STF_U8, 1, s1, &src, &err),
                     STF_EINVAL);
    assert_non_null(strstr(err.msg, "tensor name 'a\\u0000\\ud800' is not valid UTF-8"));
    /* A name with U+0000 is refused as a duplicate by all its bytes. */
    assert_int_equal(stf_writer_add_n(w, "x\0", 2, STF_U8, 1, s1, &src, &err), 0);
    assert_int_equal(stf_writer_add_n(w, "x\0", 2, STF_U8, 1, s1, &src, &err), STF_EFORMAT);
    assert_string_equal(err.rule, "S13");
    assert_non_null(strstr(err.msg, "duplicate tensor name 'x\\u0000'"));
    assert_int_equal(stf_writer_add_n(w, "__metadata__\0", 13, STF_U8, 1, s1, &src, &err), 0);
    assert_int_equal(stf_writer_add(w, "f4", STF_F4, 1, s3, &src, &err), STF_EINVAL);
    assert_int_equal(stf_writer_add(w, "d", (stf_dtype)STF_DTYPE_COUNT, 1, s1, &src, &err),
                     STF_EINVAL);
    assert_int_equal(stf_writer_set_index_meta(w, "total_size", "1", &err), STF_EINVAL);
    stf_writer_free(w);
    /* A sharded output must be a .safetensors path. */
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.max_shard_size = 10;
    assert_int_equal(stf_writer_new(&w, st_in_dir("x.bin"), &o, &err), STF_EINVAL);
    assert_null(w);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

/*
 * Names are written by their bytes, as the reference writer does: "" and
 * names holding U+0000 are distinct tensors, sorted bytewise ("" < "a" <
 * "a\0" < "a\0b"), escaped as \u0000 in the header, and read back unchanged.
 */
static void test_names_by_bytes(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t s1[] = { 1 };
    static const struct { const char *name; size_t len; const char *data; } t[] = {
        { "a\0b", 3, "D" }, { "a", 1, "B" }, { "", 0, "A" }, { "a\0", 2, "C" },
    };
    assert_int_equal(stf_writer_new(&w, st_in_dir("nul.safetensors"), NULL, &err), 0);
    for (size_t i = 0; i < 4; i++) {
        stf_tensor_src src = { STF_SRC_MEM, t[i].data, NULL, 0, NULL, NULL };
        assert_int_equal(stf_writer_add_n(w, t[i].name, t[i].len, STF_U8, 1, s1, &src, &err), 0);
    }
    size_t id = 99;
    assert_int_equal(stf_writer_tensor_id_n(&id, w, "a\0", 2), 0);
    assert_int_equal(id, 3);
    assert_int_equal(stf_writer_tensor_id(&id, w, "a"), 0);
    assert_int_equal(id, 1);
    assert_int_equal(stf_writer_tensor_id_n(&id, w, "a\0c", 3), STF_ENOTFOUND);
    assert_int_equal(stf_writer_set_group_n(w, "a\0b", 3, "g\0h", 3, &err), 0);
    assert_int_equal(stf_writer_set_group_n(w, "a\0x", 3, "g", 1, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "no tensor named 'a\\u0000x' was added"));
    commit_ok(w);
    expect_file(st_in_dir("nul.safetensors"),
                "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
                "\"a\\u0000\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]},"
                "\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]}}",
                224, "ABCD", 4);
    stf_ckpt *c = NULL;
    assert_int_equal(stf_ckpt_open(&c, st_in_dir("nul.safetensors"), NULL, &err), 0);
    for (size_t i = 0; i < 4; i++) {
        size_t idx;
        assert_int_equal(stf_ckpt_find_n(&idx, c, t[i].name, t[i].len), 0);
        unsigned char got = 0;
        assert_int_equal(stf_ckpt_read(&got, c, idx, 0, 1, &err), 0);
        assert_int_equal(got, (unsigned char)t[i].data[0]);
    }
    stf_ckpt_free(c);
}

/* Many names: the duplicate check must work across hash-table growth. */
static void test_many_names(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t s0[] = { 0 };
    char name[32];
    stf_tensor_src src = { STF_SRC_MEM, NULL, NULL, 0, NULL, NULL };
    assert_int_equal(stf_writer_new(&w, st_in_dir("m.safetensors"), NULL, &err), 0);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t.%d", i);
        assert_int_equal(stf_writer_add(w, name, STF_U8, 1, s0, &src, &err), 0);
    }
    for (int i = 0; i < 1000; i += 97) {
        snprintf(name, sizeof name, "t.%d", i);
        assert_int_equal(stf_writer_add(w, name, STF_I8, 1, s0, &src, &err), STF_EFORMAT);
    }
    stf_writer_free(w);
}

/* A producer fills consecutive chunks covering the tensor. */
typedef struct prod {
    uint64_t next;
    int calls;
} prod;

static int produce(void *ud, void *dst, uint64_t off, size_t len, stf_err *err)
{
    prod *p = ud;
    (void)err;
    if (off != p->next) return STF_EINVAL;
    for (size_t i = 0; i < len; i++) ((unsigned char *)dst)[i] = (unsigned char)((off + i) * 7);
    p->next += len;
    p->calls++;
    return 0;
}

static int produce_fail(void *ud, void *dst, uint64_t off, size_t len, stf_err *err)
{
    (void)ud;
    (void)dst;
    (void)len;
    if (off == 0) return 0;
    return stf_err_clear(err), err->code = STF_ENUMERIC, snprintf(err->msg, sizeof err->msg, "boom"), STF_ENUMERIC;
}

static void test_producer(void **state)
{
    (void)state;
    stf_writer *w;
    stf_err err;
    uint64_t sh[] = { 5 << 20 };
    prod p = { 0, 0 };
    stf_tensor_src src = { STF_SRC_FN, NULL, NULL, 0, produce, &p };
    assert_int_equal(stf_writer_new(&w, st_in_dir("p.safetensors"), NULL, &err), 0);
    assert_int_equal(stf_writer_add(w, "big", STF_U16, 1, sh, &src, &err), 0); /* 10 MiB */
    commit_ok(w);
    assert_int_equal(p.next, 10u << 20);
    assert_int_equal(p.calls, 2); /* 8 MiB chunks */
    size_t len;
    unsigned char *got = st_read_file(st_in_dir("p.safetensors"), &len);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)got[i] << (8 * i);
    assert_int_equal(len, 8 + n + (10u << 20));
    for (size_t i = 0; i < (10u << 20); i += 4099)
        assert_int_equal(got[8 + n + i], (unsigned char)(i * 7));
    free(got);

    /* A failing producer: its error, prefixed with the output and tensor. */
    assert_int_equal(stf_writer_new(&w, st_in_dir("q.safetensors"), NULL, &err), 0);
    stf_tensor_src bad = { STF_SRC_FN, NULL, NULL, 0, produce_fail, NULL };
    assert_int_equal(stf_writer_add(w, "big", STF_U16, 1, sh, &bad, &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), STF_ENUMERIC);
    assert_non_null(strstr(err.msg, "q.safetensors: tensor 'big' at byte 8388608: boom"));
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 1);
}

/* Atomicity: a write that fails part-way leaves no output and no temp file. */
typedef struct hook_state {
    int calls, fail_at;
    uint64_t last_off;
} hook_state;

static int hook(void *ud, uint64_t off, size_t len)
{
    hook_state *h = ud;
    (void)len;
    h->last_off = off;
    return ++h->calls == h->fail_at;
}

static void test_atomic(void **state)
{
    (void)state;
    uint64_t sh[] = { 1, 2, 3 };
    for (int fail_at = 1; fail_at <= 3; fail_at++) {
        hook_state h = { 0, fail_at, 0 };
        stf__write_test_hooks_set(&(stf__write_test_hooks){
            .no_tmpfile = g_named, .no_fsync = 1, .write_hook = hook, .write_hook_ud = &h });
        stf_writer *w;
        stf_err err;
        assert_int_equal(stf_writer_new(&w, st_in_dir("at.safetensors"), NULL, &err), 0);
        add_mem(w, "attn.0", STF_F32, 3, sh, F32_0_5);
        assert_int_equal(stf_writer_commit(w, &err), STF_EIO);
        stf_writer_free(w);
        char want[700];
        /* writes: 8 bytes of N, then the 64-byte header, then the data. */
        uint64_t off = fail_at == 1 ? 0 : fail_at == 2 ? 8 : 72;
        snprintf(want, sizeof want, "%s: write failed at byte %llu: No space left on device",
                 st_in_dir("at.safetensors"), (unsigned long long)off);
        assert_string_equal(err.msg, want);
        assert_int_equal(err.has_offset, 1);
        assert_int_equal(err.offset, off);
        assert_int_equal(st_dir_entries(st_dir), 0);
    }
}

/* An existing output is replaced only on success. */
static void test_replace(void **state)
{
    (void)state;
    uint64_t sh[] = { 1, 2, 3 };
    FILE *f = fopen(st_in_dir("old.safetensors"), "wb");
    fputs("old", f);
    fclose(f);
    hook_state h = { 0, 3, 0 };
    stf__write_test_hooks_set(&(stf__write_test_hooks){
        .no_tmpfile = g_named, .write_hook = hook, .write_hook_ud = &h });
    stf_writer *w;
    stf_err err;
    assert_int_equal(stf_writer_new(&w, st_in_dir("old.safetensors"), NULL, &err), 0);
    add_mem(w, "attn.0", STF_F32, 3, sh, F32_0_5);
    assert_int_equal(stf_writer_commit(w, &err), STF_EIO);
    stf_writer_free(w);
    size_t len;
    unsigned char *got = st_read_file(st_in_dir("old.safetensors"), &len);
    assert_int_equal(len, 3);
    free(got);
    assert_int_equal(st_dir_entries(st_dir), 1);
    stf__write_test_hooks_set(NULL);
    assert_int_equal(stf_writer_new(&w, st_in_dir("old.safetensors"), NULL, &err), 0);
    add_mem(w, "attn.0", STF_F32, 3, sh, F32_0_5);
    commit_ok(w);
    got = st_read_file(st_in_dir("old.safetensors"), &len);
    assert_int_equal(len, 96);
    free(got);
}

static void test_sharded(void **state)
{
    (void)state;
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.max_shard_size = 8;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_tmpfile = g_named, .no_fsync = 1 });
    stf_writer *w;
    stf_err err;
    uint64_t s1[] = { 1 }, s4[] = { 4 };
    unsigned char a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 }, c[16] = { 9 };
    unsigned char ab[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    assert_int_equal(stf_writer_new(&w, st_in_dir("model.safetensors"), &o, &err), 0);
    add_mem(w, "x.a", STF_F32, 1, s1, a);
    add_mem(w, "x.b", STF_F32, 1, s1, b);
    add_mem(w, "y", STF_F32, 1, s4, c);
    assert_int_equal(stf_writer_set_meta(w, "format", "pt", &err), 0);
    assert_int_equal(stf_writer_set_index_meta(w, "note", "\"h\\u00e9\"", &err), 0);
    commit_ok(w);
    assert_int_equal(st_dir_entries(st_dir), 3);
    expect_file(st_in_dir("model-00001-of-00002.safetensors"),
                "{\"__metadata__\":{\"format\":\"pt\"},"
                "\"x.a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"x.b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                144, ab, 8);
    expect_file(st_in_dir("model-00002-of-00002.safetensors"),
                "{\"__metadata__\":{\"format\":\"pt\"},"
                "\"y\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                88, c, 16);
    size_t len;
    unsigned char *idx = st_read_file(st_in_dir("model.safetensors.index.json"), &len);
    static const char want[] = "{\n"
                               "  \"metadata\": {\n"
                               "    \"note\": \"h\\u00e9\",\n"
                               "    \"total_size\": 24\n"
                               "  },\n"
                               "  \"weight_map\": {\n"
                               "    \"x.a\": \"model-00001-of-00002.safetensors\",\n"
                               "    \"x.b\": \"model-00001-of-00002.safetensors\",\n"
                               "    \"y\": \"model-00002-of-00002.safetensors\"\n"
                               "  }\n"
                               "}\n";
    assert_int_equal(len, strlen(want));
    assert_memory_equal(idx, want, len);
    free(idx);

    /* Everything fits one shard: the path itself, no index. */
    o.max_shard_size = 1000;
    assert_int_equal(stf_writer_new(&w, st_in_dir("one.safetensors"), &o, &err), 0);
    add_mem(w, "y", STF_F32, 1, s4, c);
    commit_ok(w);
    assert_int_equal(st_dir_entries(st_dir), 4);
    expect_file(st_in_dir("one.safetensors"),
                "{\"y\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 56, c, 16);
}

/* A failing shard write leaves none of the shards nor the index behind. */
static void test_sharded_atomic(void **state)
{
    (void)state;
    uint64_t s1[] = { 1 };
    unsigned char a[4] = { 0 };
    for (int fail_at = 1; fail_at <= 7; fail_at++) {
        hook_state h = { 0, fail_at, 0 };
        stf_write_opts o;
        stf_write_opts_init(&o);
        o.max_shard_size = 4;
        stf__write_test_hooks_set(&(stf__write_test_hooks){
            .no_tmpfile = g_named, .no_fsync = 1, .write_hook = hook, .write_hook_ud = &h });
        stf_writer *w;
        stf_err err;
        assert_int_equal(stf_writer_new(&w, st_in_dir("s.safetensors"), &o, &err), 0);
        add_mem(w, "a", STF_F32, 1, s1, a);
        add_mem(w, "b", STF_F32, 1, s1, a);
        assert_int_equal(stf_writer_commit(w, &err), STF_EIO);
        stf_writer_free(w);
        assert_int_equal(st_dir_entries(st_dir), 0);
    }
}

/* Allocation failure: fail the Nth allocation for every N until success. */
static int write_small(stf_err *err, const char *path, uint64_t max_shard)
{
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.max_shard_size = max_shard;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_tmpfile = g_named, .no_fsync = 1 });
    stf_writer *w;
    uint64_t s1[] = { 1 }, s3[] = { 1, 2, 3 };
    unsigned char a[4] = { 1, 2, 3, 4 };
    stf_tensor_src m = { STF_SRC_MEM, a, NULL, 0, NULL, NULL };
    stf_tensor_src m6 = { STF_SRC_MEM, F32_0_5, NULL, 0, NULL, NULL };
    prod p = { 0, 0 };
    stf_tensor_src fn = { STF_SRC_FN, NULL, NULL, 0, produce, &p };
    int rc = stf_writer_new(&w, path, &o, err);
    if (rc) return rc;
    if (!(rc = stf_writer_set_meta(w, "format", "pt", err)) &&
        !(rc = stf_writer_set_index_meta(w, "k", "{\"b\": [1, 2.5], \"a\": null}", err)))
        for (int i = 0; i < 20 && !rc; i++) {
            char name[16];
            snprintf(name, sizeof name, "w.%d", i);
            rc = stf_writer_add(w, name, STF_F32, 1, s1, &m, err);
        }
    if (!rc) rc = stf_writer_add(w, "six", STF_F32, 3, s3, &m6, err);
    if (!rc) rc = stf_writer_add(w, "gen", STF_U8, 1, s1, &fn, err);
    if (!rc) rc = stf_writer_commit(w, err);
    stf_writer_free(w);
    return rc;
}

/* st_alloc_sweep bodies: ud points at the `sharded` flag. */
static int sweep_write_small(void *ud, stf_err *err)
{
    return write_small(err, st_in_dir("al.safetensors"), *(int *)ud ? 16 : 0);
}

static void nothing_on_disk(void *ud)
{
    (void)ud;
    assert_int_equal(st_dir_entries(st_dir), 0);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    for (int sharded = 0; sharded < 2; sharded++) {
        st_alloc_sweep(sweep_write_small, &sharded, nothing_on_disk);
        /* six (24 B) alone, w.* four per 16-byte shard, gen alone, + index */
        assert_int_equal(st_dir_entries(st_dir), sharded ? 8 : 1);
        st_dir_teardown(NULL);
        st_dir_setup(NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serialization, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_forced_alignment, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_fp4, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_empty, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_header_too_large, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_order_and_meta, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_refusals, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_names_by_bytes, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_many_names, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_producer, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_atomic, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_replace, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_sharded, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_sharded_atomic, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failure, st_dir_setup, st_dir_teardown),
        { "test_atomic_named", test_atomic, setup_named, teardown_named, NULL },
        { "test_replace_named", test_replace, setup_named, teardown_named, NULL },
        { "test_sharded_named", test_sharded, setup_named, teardown_named, NULL },
        { "test_sharded_atomic_named", test_sharded_atomic, setup_named, teardown_named, NULL },
        { "test_alloc_failure_named", test_alloc_failure, setup_named, teardown_named, NULL },
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
