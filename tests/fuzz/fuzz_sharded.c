/*
 * libFuzzer harness for sharded checkpoints on disk: an index JSON and up
 * to four shard images, separated by FUZZ_SEP, are written into a private
 * temp directory, the shards under the names the index gives (in its
 * sorted order), and the index is opened with stf_ckpt_open, so the shard
 * files are found, framed and cross-checked against the weight_map
 * (missing or invalid shards, names in two shards, names the map places
 * elsewhere or not at all, a wrong total_size).
 *
 * Properties: an opened checkpoint agrees with what was written (one shard
 * per index file, every tensor's bytes from its shard image, every tensor
 * in the weight_map under its own shard, no name in two shards); a refused
 * one says why. The checkpoint is then rewritten sharded: the output opens
 * through its own index with the same tensors, bytes and index metadata.
 */
#include <string.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "container/index.h"
#include "fuzz.h"
#include "stfix.h"
#include "support/st_tmp.h"

enum { MAX_INPUT = 1 << 18, MAX_SHARDS = 4, MAX_NAME = 200 };

#define INDEX_NAME "m.safetensors.index.json"

/* The weight_map entry for name, or NULL. */
static const stf__index_entry *map_find(const stf__index *ix, const char *name, size_t len)
{
    size_t lo = 0, hi = ix->nmap;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = stf__name_cmp(ix->map[mid].name, ix->map[mid].name_len, name, len);
        if (r == 0) return &ix->map[mid];
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The opened checkpoint against the index and the shard images. */
static void check_open(const stf_ckpt *c, const stf__index *ix, const fuzz_part *img)
{
    CHECK(stf_ckpt_shard_count(c) == ix->nfiles);
    CHECK(stf_ckpt_index_path(c) && !strcmp(stf_ckpt_index_path(c), st_in_dir(INDEX_NAME)));
    CHECK(stf_ckpt_index_meta_count(c) == ix->nmeta);
    for (size_t k = 0; k < ix->nfiles; k++) {
        CHECK(!strcmp(stf_ckpt_shard_path(c, k), st_in_dir(ix->files[k])));
        CHECK(stf_ckpt_shard_file_size(c, k) == img[k].n);
    }
    const stf_tensor_info *prev = NULL;
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        CHECK(t->shard < ix->nfiles);
        const fuzz_part *im = &img[t->shard];
        uint64_t at = 8 + stf_ckpt_shard_header_len(c, t->shard) + t->begin;
        CHECK(at + t->nbytes <= im->n);
        CHECK(!prev || prev->shard < t->shard || (prev->shard == t->shard && prev->begin <= t->begin));
        prev = t;
        const stf__index_entry *m = map_find(ix, t->name, t->name_len);
        CHECK(m && m->file == t->shard); /* I4 */
        size_t j;
        CHECK(stf_ckpt_find(&j, c, t->name) == 0 && j == i); /* I5: one shard only */
        unsigned char b = 0;
        stf_err e;
        if (t->nbytes) {
            CHECK(stf_ckpt_read(&b, c, i, t->nbytes - 1, 1, &e) == 0);
            CHECK(b == im->p[at + t->nbytes - 1]);
        }
    }
    CHECK(stf_ckpt_tensor_count(c) == ix->nmap); /* I4 the other way */
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++)
        CHECK(stf_ckpt_finding(c, i)->message != NULL);
}

/* Rewrite sharded, reopen through the new index, compare. */
static void check_rewrite(const stf_ckpt *c, uint64_t max_shard)
{
    stf_write_opts w;
    stf_err e;
    stf_ckpt *out = NULL;
    stf_write_opts_init(&w);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    w.max_shard_size = max_shard;
    memset(&e, 0, sizeof e);
    int rc = stf_ckpt_rewrite(c, st_in_dir("r.safetensors"), &w, &e);
    CHECK(rc == 0 || rc == STF_ENOMEM || ((rc == STF_EFORMAT || rc == STF_EINVAL) && e.msg[0]));
    if (rc) return;
    const char *path = st_in_dir("r.safetensors.index.json");
    if (stf_ckpt_open(&out, path, NULL, &e) != 0) {
        path = st_in_dir("r.safetensors"); /* everything fitted one file */
        CHECK(stf_ckpt_open(&out, path, NULL, &e) == 0);
    }
    CHECK(stf_ckpt_tensor_count(out) == stf_ckpt_tensor_count(c));
    CHECK(stf_ckpt_index_meta_count(out) ==
          (stf_ckpt_index_path(out) ? stf_ckpt_index_meta_count(c) : 0));
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        size_t j = fuzz_find_same(out, t->name, t->dtype, t->rank, t->shape, t->nbytes);
        if (t->nbytes) {
            unsigned char a = 0, b = 0;
            CHECK(stf_ckpt_read(&a, c, i, 0, 1, &e) == 0);
            CHECK(stf_ckpt_read(&b, out, j, 0, 1, &e) == 0);
            CHECK(a == b);
        }
    }
    stf_ckpt_free(out);
}

/* Caps that keep one input small; up to 8 files, the first 4 get images. */
static void small_caps(stf_open_opts *o)
{
    stf_open_opts_init(o);
    o->max_shards = 8;
    o->max_tensors = 256;
    o->max_meta_entries = 64;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) return 0;
    fuzz_part parts[1 + MAX_SHARDS], img[8];
    size_t np = fuzz_split(parts, 1 + MAX_SHARDS, data, size);
    stf_open_opts o;
    stf__index *ix = NULL;
    stf_err e;
    small_caps(&o);
    /* The harness reads the names the same way the library will. */
    if (stf__index_parse(&ix, parts[0].p, parts[0].n, INDEX_NAME, &o, &e)) return 0;
    memset(img, 0, sizeof img);
    fuzz_dir_begin();
    for (size_t k = 0; k < ix->nfiles && k + 1 < np; k++) {
        const char *f = ix->files[k];
        if (strlen(f) > MAX_NAME || !strcmp(f, INDEX_NAME) || !strcmp(f, ".")) continue;
        img[k] = parts[k + 1];
        CHECK(fuzz_put(f, img[k].p, img[k].n) == 0);
    }
    CHECK(fuzz_put(INDEX_NAME, parts[0].p, parts[0].n) == 0);

    for (int mode = 0; mode < 2; mode++) {
        stf_ckpt *c = NULL;
        o.strict = mode;
        memset(&e, 0, sizeof e);
        int rc = stf_ckpt_open(&c, st_in_dir(INDEX_NAME), &o, &e);
        if (rc) {
            CHECK(c == NULL && e.code == rc && e.msg[0] && memchr(e.msg, '\0', sizeof e.msg));
            CHECK(rc == STF_EFORMAT || rc == STF_ELIMIT || rc == STF_EUNSUPPORTED);
            continue;
        }
        /* Every listed file opened, so each was written from an image. */
        for (size_t k = 0; k < ix->nfiles; k++) CHECK(img[k].p != NULL);
        check_open(c, ix, img);
        if (mode == 0) check_rewrite(c, 1 + (parts[0].n % 64));
        stf_ckpt_free(c);
    }
    stf__index_free(ix);
    fuzz_dir_end();
    return 0;
}
