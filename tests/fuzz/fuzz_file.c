/*
 * libFuzzer harness for reading a checkpoint from a real file: the input is
 * written to a private temp file and opened by path with stf_ckpt_open,
 * leniently and strictly, with the canonical-form notes on.
 *
 * Properties: every byte of every tensor read with stf_ckpt_read (and the
 * map, when there is one) is the file's byte; reads past a tensor fail;
 * metadata lookups find their entries; a failed open leaves nothing behind
 * and says why. The canonical writer is held to its word: a rewrite of the
 * file opens cleanly, is canonical, and rewrites to the same bytes; a file
 * the reader calls canonical rewrites to itself.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "fuzz.h"
#include "stfix.h"
#include "support/st_tmp.h"

enum { MAX_INPUT = 1 << 20, CHUNK = 4096 };

/* Every byte of every tensor, through stf_ckpt_read in chunks (and the
 * map, where the library gives one). */
static void read_all(const stf_ckpt *c, const uint8_t *file, size_t size)
{
    uint64_t n = stf_ckpt_shard_header_len(c, 0), prev = 0;
    static uint8_t buf[CHUNK];
    stf_err e;
    CHECK(stf_ckpt_shard_count(c) == 1 && stf_ckpt_index_path(c) == NULL);
    CHECK(stf_ckpt_shard_file_size(c, 0) == size && n <= size - 8);
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        CHECK(t && t->name && t->end >= t->begin && t->nbytes == t->end - t->begin);
        CHECK(8 + n + t->end <= size && t->begin >= prev && t->shard == 0);
        prev = t->begin;
        const uint8_t *want = file + 8 + n + t->begin;
        for (uint64_t off = 0; off < t->nbytes; off += CHUNK) {
            size_t len = t->nbytes - off < CHUNK ? (size_t)(t->nbytes - off) : CHUNK;
            CHECK(stf_ckpt_read(buf, c, i, off, len, &e) == 0);
            CHECK(memcmp(buf, want + off, len) == 0);
        }
        CHECK(stf_ckpt_read(buf, c, i, t->nbytes, 1, &e) == STF_EINVAL);
        CHECK(stf_ckpt_read(buf, c, i, UINT64_MAX, 2, &e) == STF_EINVAL);
        const uint8_t *p = stf_ckpt_tensor_data(c, i);
        if (p && t->nbytes) CHECK(memcmp(p, want, (size_t)t->nbytes) == 0);
        size_t idx;
        if (strlen(t->name) == t->name_len) {
            CHECK(stf_ckpt_find(&idx, c, t->name) == 0);
            CHECK(!strcmp(stf_ckpt_tensor(c, idx)->name, t->name));
        }
    }
    CHECK(stf_ckpt_tensor(c, stf_ckpt_tensor_count(c)) == NULL);
}

static void check_meta(const stf_ckpt *c)
{
    size_t n = stf_ckpt_meta_count(c, 0);
    CHECK(!n || stf_ckpt_shard_has_meta(c, 0));
    for (size_t i = 0; i < n; i++) {
        const stf_meta_entry *m = stf_ckpt_meta(c, 0, i);
        CHECK(m && m->key && m->value && m->value[m->value_len] == '\0');
        if (strlen(m->key) == m->key_len) {
            const stf_meta_entry *f = stf_ckpt_meta_find(c, 0, m->key);
            CHECK(f && !strcmp(f->key, m->key));
        }
    }
    CHECK(stf_ckpt_meta(c, 0, n) == NULL);
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        CHECK(f && f->rule[0] && f->message && f->path);
    }
}

/* Rewrite `c` to st_dir/name: 0, or the writer's error. What the strict
 * reader accepts the writer must write; a file only the lenient reader
 * takes (an empty name, say) may be refused, with a reason. */
static int rewrite(const stf_ckpt *c, const char *name, int strict)
{
    stf_write_opts w;
    stf_err e;
    stf_write_opts_init(&w);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    memset(&e, 0, sizeof e);
    int rc = stf_ckpt_rewrite(c, st_in_dir(name), &w, &e);
    CHECK(rc == 0 || rc == STF_ENOMEM ||
          (!strict && (rc == STF_EFORMAT || rc == STF_EINVAL) && e.msg[0]));
    return rc;
}

/* The canonical writer: rewrite, reopen, rewrite again, same bytes. */
static void check_rewrite(const stf_ckpt *c, const uint8_t *data, size_t size, int strict)
{
    stf_open_opts o;
    stf_ckpt *out = NULL;
    stf_err e;
    if (rewrite(c, "a.safetensors", strict)) {
        CHECK(st_dir_entries(st_dir) == 1); /* nothing left but the input */
        return;
    }
    size_t alen = 0;
    unsigned char *a = st_read_file(st_in_dir("a.safetensors"), &alen);
    CHECK(a != NULL);
    if (stf_ckpt_shard_is_canonical(c, 0)) CHECK(alen == size && !memcmp(a, data, size));
    stf_open_opts_init(&o);
    o.strict = strict; /* the writer passes STRICT-only findings (S12, say) through */
    o.canon_findings = 1;
    CHECK(stf_ckpt_open(&out, st_in_dir("a.safetensors"), &o, &e) == 0);
    CHECK(stf_ckpt_shard_is_canonical(out, 0));
    CHECK(stf_ckpt_tensor_count(out) == stf_ckpt_tensor_count(c));
    CHECK(stf_ckpt_meta_count(out, 0) == stf_ckpt_meta_count(c, 0));
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        if (strlen(t->name) == t->name_len)
            fuzz_find_same(out, t->name, t->dtype, t->rank, t->shape, t->nbytes);
    }
    if (rewrite(out, "b.safetensors", strict) == 0)
        CHECK(fuzz_same_bytes(st_in_dir("b.safetensors"), a, alen));
    stf_ckpt_free(out);
    free(a);
    unlink(st_in_dir("a.safetensors"));
    unlink(st_in_dir("b.safetensors"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) return 0;
    fuzz_dir_begin();
    CHECK(fuzz_put("in.safetensors", data, size) == 0);
    for (int mode = 0; mode < 2; mode++) {
        stf_open_opts o;
        stf_ckpt *c = NULL;
        stf_err e;
        stf_open_opts_init(&o);
        o.strict = mode;
        o.canon_findings = 1;
        o.max_tensors = 1024;
        memset(&e, 0, sizeof e);
        int rc = stf_ckpt_open(&c, st_in_dir("in.safetensors"), &o, &e);
        if (rc) {
            CHECK(c == NULL && e.code == rc && memchr(e.msg, '\0', sizeof e.msg) && e.msg[0]);
            CHECK(rc == STF_EFORMAT || rc == STF_ELIMIT || rc == STF_EUNSUPPORTED);
            continue;
        }
        CHECK(c != NULL);
        CHECK(!strcmp(stf_ckpt_shard_path(c, 0), st_in_dir("in.safetensors")));
        read_all(c, data, size);
        check_meta(c);
        check_rewrite(c, data, size, mode);
        stf_ckpt_free(c);
    }
    CHECK(fuzz_same_bytes(st_in_dir("in.safetensors"), data, size));
    fuzz_dir_end();
    return 0;
}
