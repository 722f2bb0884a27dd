/* Tests for lib/container/ckpt.c: opening single files, accessors, reads. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "io/source.h"
#include "stfix.h"
#include "support/st_alloc.h"
#include "support/st_bytes.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"

/* N (u64 LE) + header text + `data` (data_len bytes; zeros when NULL). */
static uint8_t *image(const char *json, const void *data, size_t data_len, size_t *len)
{
    st_bytes b = st_bytes_padded(json, strlen(json), data, data_len);
    *len = b.len;
    return b.p;
}

static const uint8_t k_f32_0_5[24] = { 0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40,
                                       0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40 };

/* The reference's writer fixture test_serialization, plus metadata and a second tensor. */
#define TWO_TENSORS                                                                       \
    "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},"                                  \
    "\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]},"           \
    "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[24,28]}}"

static uint8_t *two_tensor_file(size_t *len)
{
    uint8_t data[28];
    memcpy(data, k_f32_0_5, 24);
    memcpy(data + 24, "WXYZ", 4);
    return image(TWO_TENSORS, data, sizeof data, len);
}

static void check_two_tensors(const stf_ckpt *c, const char *path, uint64_t size)
{
    stf_err e;
    const uint64_t n = strlen(TWO_TENSORS);
    assert_int_equal(stf_ckpt_shard_count(c), 1);
    assert_string_equal(stf_ckpt_shard_path(c, 0), path);
    assert_null(stf_ckpt_shard_path(c, 1));
    assert_int_equal(stf_ckpt_shard_header_len(c, 0), n);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), size);
    assert_int_equal(stf_ckpt_shard_has_meta(c, 0), 1);
    assert_null(stf_ckpt_index_path(c));
    assert_int_equal(stf_ckpt_index_meta_count(c), 0);
    assert_null(stf_ckpt_index_meta(c, 0));

    assert_int_equal(stf_ckpt_meta_count(c, 0), 2);
    assert_string_equal(stf_ckpt_meta(c, 0, 0)->key, "format");
    assert_string_equal(stf_ckpt_meta(c, 0, 0)->value, "pt");
    assert_string_equal(stf_ckpt_meta(c, 0, 1)->key, "k");
    assert_null(stf_ckpt_meta(c, 0, 2));
    assert_string_equal(stf_ckpt_meta_find(c, 0, "k")->value, "v");
    assert_null(stf_ckpt_meta_find(c, 0, "kk"));
    assert_null(stf_ckpt_meta_find(c, 1, "k"));

    assert_int_equal(stf_ckpt_tensor_count(c), 2);
    const stf_tensor_info *t = stf_ckpt_tensor(c, 0);
    assert_string_equal(t->name, "attn.0");
    assert_int_equal(t->dtype, STF_F32);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->shape[0], 1);
    assert_int_equal(t->shape[2], 3);
    assert_int_equal(t->nelem, 6);
    assert_int_equal(t->begin, 0);
    assert_int_equal(t->end, 24);
    assert_int_equal(t->nbytes, 24);
    assert_int_equal(t->shard, 0);
    /* the key "attn.0" starts right after {"__metadata__":{...}, */
    assert_int_equal(t->header_offset, 8 + strlen("{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},"));
    t = stf_ckpt_tensor(c, 1);
    assert_string_equal(t->name, "b");
    assert_int_equal(t->begin, 24);
    assert_null(stf_ckpt_tensor(c, 2));

    size_t idx = 99;
    assert_int_equal(stf_ckpt_find(&idx, c, "b"), 0);
    assert_int_equal(idx, 1);
    assert_int_equal(stf_ckpt_find(&idx, c, "attn.0"), 0);
    assert_int_equal(idx, 0);
    assert_int_equal(stf_ckpt_find(&idx, c, "attn"), STF_ENOTFOUND);
    assert_int_equal(stf_ckpt_find(&idx, c, "c"), STF_ENOTFOUND);
    assert_int_equal(stf_ckpt_find(&idx, c, ""), STF_ENOTFOUND);

    uint8_t buf[24];
    assert_int_equal(stf_ckpt_read(buf, c, 0, 0, 24, &e), 0);
    assert_memory_equal(buf, k_f32_0_5, 24);
    assert_int_equal(stf_ckpt_read(buf, c, 1, 1, 3, &e), 0);
    assert_memory_equal(buf, "XYZ", 3);
    assert_int_equal(stf_ckpt_read(buf, c, 1, 4, 0, &e), 0);
    /* bounds are the tensor's, not the file's: byte 4 of "b" would be past the end */
    assert_int_equal(stf_ckpt_read(buf, c, 1, 2, 3, &e), STF_EINVAL);
    assert_non_null(strstr(e.msg, "tensor 'b'"));
    assert_int_equal(stf_ckpt_read(buf, c, 0, 20, 5, &e), STF_EINVAL);
    assert_int_equal(stf_ckpt_read(buf, c, 0, 25, 0, &e), STF_EINVAL);
    assert_int_equal(stf_ckpt_read(buf, c, 2, 0, 1, &e), STF_EINVAL);

    const stf__source *src = NULL;
    uint64_t off = 0;
    assert_int_equal(stf__ckpt_tensor_source(c, 1, &src, &off, &e), 0);
    assert_int_equal(off, 8 + n + 24);
    assert_ptr_equal(src, stf__ckpt_shard_source(c, 0));
    assert_int_equal(stf__ckpt_tensor_source(c, 2, &src, &off, &e), STF_EINVAL);
    assert_int_equal(stf_ckpt_finding_count(c), 0);
}

/* A file is read with pread whatever no_mmap says: there is no pointer to
 * its bytes, only stf_ckpt_read. */
static void test_open_file_reads_with_pread(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = two_tensor_file(&len);
    char p[300];
    snprintf(p, sizeof p, "%s/two.safetensors", st_dir);
    assert_int_equal(st_write_file(p, b, len), 0);
    stf_open_opts o;
    stf_open_opts_init(&o);
    for (int no_mmap = 0; no_mmap <= 1; no_mmap++) {
        stf_ckpt *c = NULL;
        stf_err e;
        o.no_mmap = no_mmap;
        assert_int_equal(stf_ckpt_open(&c, p, &o, &e), 0);
        check_two_tensors(c, p, len);
        assert_null(stf_ckpt_tensor_data(c, 0));
        assert_null(stf_ckpt_tensor_data(c, 1));
        assert_null(stf_ckpt_tensor_data(c, 2));
        stf_ckpt_free(c);
    }
    unlink(p);
    free(b);
}

static void test_open_mem(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = two_tensor_file(&len);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open_mem(&c, b, len, "mem.safetensors", NULL, &e), 0);
    check_two_tensors(c, "mem.safetensors", len);
    assert_ptr_equal(stf_ckpt_tensor_data(c, 0), b + 8 + strlen(TWO_TENSORS));
    stf_ckpt_free(c);
    stf_ckpt_free(NULL);
    free(b);
}

/* Nothing crossed the network for a file or a buffer: 0, and both figures
 * set to 0 (the URL case is the Python suite's, against a server). */
static void test_network_of_local_inputs(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = two_tensor_file(&len);
    char p[300];
    snprintf(p, sizeof p, "%s/net.safetensors", st_dir);
    assert_int_equal(st_write_file(p, b, len), 0);
    stf_ckpt *f = NULL, *m = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&f, p, NULL, &e), 0);
    assert_int_equal(stf_ckpt_open_mem(&m, b, len, "http://mem/x.safetensors", NULL, &e), 0);
    stf_ckpt *cs[3] = { f, m, NULL };
    for (int i = 0; i < 3; i++) {
        uint64_t nb = 7, nr = 7;
        assert_int_equal(stf_ckpt_network(cs[i], &nb, &nr), 0);
        assert_int_equal(nb, 0);
        assert_int_equal(nr, 0);
        assert_int_equal(stf_ckpt_network(cs[i], NULL, NULL), 0);
    }
    stf_ckpt_free(f);
    stf_ckpt_free(m);
    unlink(p);
    free(b);
}

static void test_empty_checkpoint(void **state)
{
    (void)state;
    /* The reference's writer fixture test_empty (a): 16 bytes, no tensors, no metadata */
    static const uint8_t bytes[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' ' };
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open_mem(&c, bytes, sizeof bytes, "empty", NULL, &e), 0);
    assert_int_equal(stf_ckpt_tensor_count(c), 0);
    assert_int_equal(stf_ckpt_shard_has_meta(c, 0), 0);
    assert_int_equal(stf_ckpt_meta_count(c, 0), 0);
    assert_int_equal(stf_ckpt_find(NULL, c, "x"), STF_ENOTFOUND);
    uint8_t x;
    assert_int_equal(stf_ckpt_read(&x, c, 0, 0, 1, &e), STF_EINVAL);
    stf_ckpt_free(c);
}

static void test_open_errors_name_the_path(void **state)
{
    (void)state;
    char p[300];
    stf_ckpt *c = (stf_ckpt *)1;
    stf_err e;
    snprintf(p, sizeof p, "%s/absent.safetensors", st_dir);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_ENOTFOUND);
    assert_null(c);
    assert_non_null(strstr(e.msg, p));
    assert_non_null(strstr(e.msg, strerror(ENOENT)));

    assert_int_equal(stf_ckpt_open(&c, st_dir, NULL, &e), STF_EIO);
    assert_non_null(strstr(e.msg, strerror(EISDIR)));

    /* S1 on an empty file, S3 on a bare length prefix (reader fixtures
     * test_header_too_small, test_invalid_header_length) */
    snprintf(p, sizeof p, "%s/zero.safetensors", st_dir);
    assert_int_equal(st_write_file(p, "", 0), 0);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S1");
    assert_non_null(strstr(e.msg, p));
    unlink(p);
    snprintf(p, sizeof p, "%s/short.safetensors", st_dir);
    assert_int_equal(st_write_file(p, "<\0\0\0\0\0\0\0", 8), 0);
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), STF_EFORMAT);
    assert_string_equal(e.rule, "S3");
    unlink(p);
    assert_int_equal(stf_ckpt_open(&c, NULL, NULL, &e), STF_EINVAL);
    assert_int_equal(stf_ckpt_open_mem(&c, NULL, 5, "x", NULL, &e), STF_EINVAL);
}

/* Open must never allocate N bytes for an N the file cannot hold. */
static size_t g_max_alloc;

static void *track_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n > g_max_alloc) g_max_alloc = n;
    return realloc(p, n ? n : 1);
}

static void track_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

static void test_huge_n_small_file(void **state)
{
    (void)state;
    uint8_t b[16] = { 0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}' }; /* N = 10^8 */
    stf_ckpt *c = NULL;
    stf_err e;
    stf_open_opts o;
    stf_open_opts_init(&o);
    char p[300];
    snprintf(p, sizeof p, "%s/bign.safetensors", st_dir);
    assert_int_equal(st_write_file(p, b, sizeof b), 0);
    stf_allocator a = { track_realloc, track_free, NULL };
    g_max_alloc = 0;
    stf_set_allocator(&a);
    int rc = stf_ckpt_open(&c, p, &o, &e);
    stf_set_allocator(NULL);
    assert_int_equal(rc, STF_EFORMAT);
    assert_string_equal(e.rule, "S3");
    assert_true(e.has_offset);
    assert_int_equal(e.offset, 0);
    assert_true(g_max_alloc > 0);
    assert_true(g_max_alloc < 4096);
    unlink(p);
}

/* STRICT rules: a finding normally, the error under opts.strict. */
static void test_strict_turns_warnings_into_errors(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = image("\t{}", NULL, 0, &len); /* leading whitespace: S7 */
    stf_ckpt *c = NULL;
    stf_err e;
    stf_open_opts o;
    stf_open_opts_init(&o);
    assert_int_equal(stf_ckpt_open_mem(&c, b, len, "ws.safetensors", &o, &e), 0);
    int seen = 0;
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        if (strcmp(f->rule, "S7") == 0) {
            seen++;
            assert_int_equal(f->severity, STF_SEV_WARNING);
            assert_string_equal(f->path, "ws.safetensors");
        }
    }
    assert_int_equal(seen, 1);
    assert_null(stf_ckpt_finding(c, stf_ckpt_finding_count(c)));
    stf_ckpt_free(c);
    o.strict = 1;
    c = NULL;
    assert_int_equal(stf_ckpt_open_mem(&c, b, len, "ws.safetensors", &o, &e), STF_EFORMAT);
    assert_null(c);
    assert_string_equal(e.rule, "S7");
    free(b);
}

/* A file that shrank after open is an error naming the tensor, not a signal
 * (default options: this raised SIGBUS while files were memory-mapped). */
static void test_truncated_while_open(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = two_tensor_file(&len);
    char p[300];
    snprintf(p, sizeof p, "%s/shrink.safetensors", st_dir);
    assert_int_equal(st_write_file(p, b, len), 0);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), 0);
    assert_int_equal(truncate(p, (off_t)(len - 2)), 0);
    uint8_t buf[4];
    assert_int_equal(stf_ckpt_read(buf, c, 1, 0, 4, &e), STF_EIO);
    assert_non_null(strstr(e.msg, "tensor 'b'"));
    assert_non_null(strstr(e.msg, "unexpected end of file"));
    assert_true(e.has_offset);
    assert_int_equal(e.offset, len - 2);
    stf_ckpt_free(c);
    unlink(p);
    free(b);
}

/* A sparse file whose one tensor ends past 4 GiB; reads above 2^32. */
static void test_over_4gib_sparse(void **state)
{
    (void)state;
    const uint64_t nb = ((uint64_t)1 << 32) + 16;
    char json[160];
    snprintf(json, sizeof json,
             "{\"big\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[0,%llu]}}",
             (unsigned long long)nb, (unsigned long long)nb);
    size_t hl;
    uint8_t *h = image(json, NULL, 0, &hl);
    char p[300];
    snprintf(p, sizeof p, "%s/big.safetensors", st_dir);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, h, hl), (ssize_t)hl);
    if (ftruncate(fd, (off_t)(hl + nb)) != 0) {
        close(fd);
        unlink(p);
        free(h);
        skip();
    }
    const uint64_t toff = ((uint64_t)1 << 32) + 3; /* offset within the tensor */
    assert_int_equal(pwrite(fd, "FAR!", 4, (off_t)(hl + toff)), 4);
    assert_int_equal(pwrite(fd, "near", 4, (off_t)(hl + 3)), 4);
    close(fd);

    stf_ckpt *c = NULL;
    stf_err e;
    uint8_t buf[6];
    assert_int_equal(stf_ckpt_open(&c, p, NULL, &e), 0);
    assert_int_equal(stf_ckpt_shard_file_size(c, 0), hl + nb);
    const stf_tensor_info *t = stf_ckpt_tensor(c, 0);
    assert_int_equal(t->nbytes, nb);
    assert_int_equal(t->shape[0], nb);
    assert_int_equal(stf_ckpt_read(buf, c, 0, toff - 1, 6, &e), 0);
    assert_memory_equal(buf, "\0FAR!\0", 6);
    assert_int_equal(stf_ckpt_read(buf, c, 0, 3, 4, &e), 0);
    assert_memory_equal(buf, "near", 4);
    assert_int_equal(stf_ckpt_read(buf, c, 0, nb - 6, 6, &e), 0);
    assert_int_equal(stf_ckpt_read(buf, c, 0, nb - 5, 6, &e), STF_EINVAL);
    stf_ckpt_free(c);
    unlink(p);
    free(h);
}

/* ---- an index with more shards than open descriptors ---- */

/* n shards s-NNNN.safetensors in dir, shard k holding tensor tNNNN, 8 bytes
 * of value k; the index is written to `ipath`. */
static void write_sharded(const char *dir, size_t n, char *ipath, size_t cap)
{
    size_t jcap = 64 + n * 48, jl = 0;
    char *j = malloc(jcap);
    assert_non_null(j);
    jl += (size_t)snprintf(j + jl, jcap - jl, "{\"weight_map\":{");
    for (size_t k = 0; k < n; k++) {
        char name[32], file[48], path[320];
        uint8_t v[8];
        memset(v, (int)(k & 0xff), sizeof v);
        snprintf(name, sizeof name, "t%04zu", k);
        snprintf(file, sizeof file, "s-%04zu.safetensors", k);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        st_tensor t = { name, STF_U8, 1, { 8 }, v, sizeof v };
        assert_int_equal(st_write_ckpt(path, &t, 1, NULL), 0);
        jl += (size_t)snprintf(j + jl, jcap - jl, "%s\"%s\":\"%s\"", k ? "," : "", name, file);
    }
    jl += (size_t)snprintf(j + jl, jcap - jl, "}}");
    snprintf(ipath, cap, "%s/m.safetensors.index.json", dir);
    assert_int_equal(st_write_file(ipath, j, jl), 0);
    free(j);
}

/* Tensor k of write_sharded's index reads back as eight bytes of k. */
static void expect_shard_tensor(const stf_ckpt *c, size_t k)
{
    char name[32];
    size_t i;
    uint8_t got[8], want[8];
    stf_err e;
    snprintf(name, sizeof name, "t%04zu", k);
    assert_int_equal(stf_ckpt_find(&i, c, name), 0);
    if (stf_ckpt_read(got, c, i, 0, sizeof got, &e)) fail_msg("%s: %s", name, e.msg);
    memset(want, (int)(k & 0xff), sizeof want);
    assert_memory_equal(got, want, sizeof want);
}

/* 200 shards under an open-file limit of 48 free descriptors: the index
 * opens and every tensor reads, in any order (once I3 MissingShard, from
 * EMFILE, when every shard kept its descriptor). */
static void test_index_more_shards_than_descriptors(void **state)
{
    (void)state;
    enum { N = 200 };
    char ip[300];
    write_sharded(st_dir, N, ip, sizeof ip);
    int t = dup(0);
    assert_true(t >= 0);
    close(t);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)t + 48;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
    stf_ckpt *c = NULL;
    stf_err e;
    int rc = stf_ckpt_open(&c, ip, NULL, &e);
    if (rc) {
        setrlimit(RLIMIT_NOFILE, &old);
        fail_msg("open: %s", e.msg);
    }
    for (size_t k = 0; k < N; k++) expect_shard_tensor(c, (k * 7) % N);
    for (size_t k = N; k-- > 0;) expect_shard_tensor(c, k);
    setrlimit(RLIMIT_NOFILE, &old);
    assert_int_equal(stf_ckpt_shard_count(c), N);
    assert_int_equal(stf_ckpt_tensor_count(c), N);
    stf_ckpt_free(c);
}

/* A shard whose descriptor was evicted and whose name now points at another
 * file: reading it, or copying it verbatim, is STF_EIO naming the shard. */
static void test_shard_replaced_while_closed(void **state)
{
    (void)state;
    enum { N = 40 }; /* more than the checkpoint keeps open */
    char ip[300], sp[300], tmp[320], out[300];
    write_sharded(st_dir, N, ip, sizeof ip);
    stf_ckpt *c = NULL;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&c, ip, NULL, &e), 0);
    snprintf(sp, sizeof sp, "%s/s-0000.safetensors", st_dir);
    snprintf(tmp, sizeof tmp, "%s.new", sp);
    uint8_t v[8] = { 0 };
    st_tensor t = { "t0000", STF_U8, 1, { 8 }, v, sizeof v };
    assert_int_equal(st_write_ckpt(tmp, &t, 1, NULL), 0);
    assert_int_equal(rename(tmp, sp), 0);
    size_t i;
    uint8_t got[8];
    assert_int_equal(stf_ckpt_find(&i, c, "t0000"), 0);
    char want[600];
    snprintf(want, sizeof want,
             "tensor 't0000': %s: the file was replaced by another since it was opened (device "
             "or inode changed); open the checkpoint again", sp);
    assert_int_equal(stf_ckpt_read(got, c, i, 0, sizeof got, &e), STF_EIO);
    assert_string_equal(e.msg, want);
    expect_shard_tensor(c, 1); /* the others still read */
    snprintf(out, sizeof out, "%s/joined.safetensors", st_dir);
    stf_write_opts wo;
    stf_write_opts_init(&wo);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    assert_int_equal(stf_ckpt_rewrite(c, out, &wo, &e), STF_EIO);
    assert_non_null(strstr(e.msg, want));
    assert_int_equal(access(out, F_OK), -1);
    stf_ckpt_free(c);
}

/* max_shards caps the shard files an index names: L7, before any is opened. */
static void test_index_shard_cap(void **state)
{
    (void)state;
    char ip[300], want[400];
    write_sharded(st_dir, 5, ip, sizeof ip);
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.max_shards = 4;
    stf_ckpt *c = (stf_ckpt *)1;
    stf_err e;
    assert_int_equal(stf_ckpt_open(&c, ip, &o, &e), STF_ELIMIT);
    assert_null(c);
    assert_int_equal(e.code, STF_ELIMIT);
    assert_string_equal(e.rule, "L7");
    snprintf(want, sizeof want,
             "%s: L7 LimitExceeded: the index names 5 shard files, more than the cap of 4", ip);
    assert_string_equal(e.msg, want);
    o.max_shards = 5;
    assert_int_equal(stf_ckpt_open(&c, ip, &o, &e), 0);
    assert_int_equal(stf_ckpt_shard_count(c), 5);
    stf_ckpt_free(c);
}

/* ---- allocation failure: fail the Nth allocation ---- */

static void alloc_loop(const char *path)
{
    int ok = 0;
    long failures = 0;
    st_alloc_install();
    for (long n = 1; n < 10000 && !ok; n++) {
        st_alloc_arm(n);
        stf_ckpt *c = NULL;
        stf_err e;
        int rc = stf_ckpt_open(&c, path, NULL, &e);
        if (rc == 0) {
            ok = 1;
            assert_int_equal(stf_ckpt_tensor_count(c), 2);
            stf_ckpt_free(c);
        } else {
            failures++;
            if (rc != STF_ENOMEM) {
                st_alloc_uninstall();
                fail_msg("allocation %ld: rc %d (%s)", n, rc, e.msg);
            }
            assert_null(c);
        }
        if (st_alloc_live() != 0) {
            st_alloc_uninstall();
            fail_msg("allocation %ld: %ld blocks leaked", n, st_alloc_live());
        }
    }
    st_alloc_uninstall();
    assert_true(ok);
    assert_true(failures >= 5);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = two_tensor_file(&len);
    char p[300];
    snprintf(p, sizeof p, "%s/alloc.safetensors", st_dir);
    assert_int_equal(st_write_file(p, b, len), 0);
    alloc_loop(p);
    unlink(p);
    free(b);
}

/* Names are byte strings with a length: "a", "a\0", "a\0b" and "" are four
 * tensors, and a metadata key with U+0000 is its own key too. */
#define NUL_NAMES                                                                         \
    "{\"__metadata__\":{\"k\":\"1\",\"k\\u0000x\":\"2\"},"                                \
    "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"                      \
    "\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"              \
    "\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]},"                       \
    "\"a\\u0000\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]}}"

static void test_names_are_bytes(void **state)
{
    (void)state;
    size_t len, idx = 99;
    stf_err e;
    stf_ckpt *c = NULL;
    uint8_t *b = image(NUL_NAMES, "ABCD", 4, &len);
    assert_int_equal(stf_ckpt_open_mem(&c, b, len, "nul.safetensors", NULL, &e), 0);
    assert_int_equal(stf_ckpt_tensor_count(c), 4);
    static const struct { const char *name; size_t len; size_t at; } want[] = {
        { "a", 1, 0 }, { "a\0b", 3, 1 }, { "", 0, 2 }, { "a\0", 2, 3 },
    };
    for (size_t i = 0; i < 4; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, want[i].at);
        assert_int_equal(t->name_len, want[i].len);
        assert_memory_equal(t->name, want[i].name, want[i].len + 1);
        assert_int_equal(stf_ckpt_find_n(&idx, c, want[i].name, want[i].len), 0);
        assert_int_equal(idx, want[i].at);
    }
    assert_int_equal(stf_ckpt_find_n(&idx, c, "a\0bc", 4), STF_ENOTFOUND);
    assert_int_equal(stf_ckpt_find_n(&idx, c, "a\0c", 3), STF_ENOTFOUND);
    /* The C-string form reaches exactly the names without U+0000. */
    assert_int_equal(stf_ckpt_find(&idx, c, "a"), 0);
    assert_int_equal(idx, 0);
    assert_int_equal(stf_ckpt_find(&idx, c, ""), 0);
    assert_int_equal(idx, 2);
    assert_string_equal(stf_ckpt_meta_find_n(c, 0, "k\0x", 3)->value, "2");
    assert_string_equal(stf_ckpt_meta_find(c, 0, "k")->value, "1");
    assert_null(stf_ckpt_meta_find_n(c, 0, "k\0", 2));
    /* S14 warnings name the tensor with all its bytes. */
    size_t s14 = 0;
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        if (strcmp(f->rule, "S14")) continue;
        assert_non_null(f->tensor);
        if (s14 == 0) {
            assert_int_equal(f->tensor_len, 3);
            assert_memory_equal(f->tensor, "a\0b", 4);
        }
        if (s14 == 1) assert_int_equal(f->tensor_len, 0);
        if (s14 == 2) assert_int_equal(f->tensor_len, 2);
        s14++;
    }
    assert_int_equal(s14, 3);
    stf_ckpt_free(c);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_file_reads_with_pread),
        cmocka_unit_test(test_open_mem),
        cmocka_unit_test(test_network_of_local_inputs),
        cmocka_unit_test(test_empty_checkpoint),
        cmocka_unit_test(test_open_errors_name_the_path),
        cmocka_unit_test(test_huge_n_small_file),
        cmocka_unit_test(test_strict_turns_warnings_into_errors),
        cmocka_unit_test(test_truncated_while_open),
        cmocka_unit_test(test_over_4gib_sparse),
        cmocka_unit_test(test_index_more_shards_than_descriptors),
        cmocka_unit_test(test_shard_replaced_while_closed),
        cmocka_unit_test(test_index_shard_cap),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_names_are_bytes),
    };
    return cmocka_run_group_tests(tests, st_dir_setup, st_dir_teardown);
}
