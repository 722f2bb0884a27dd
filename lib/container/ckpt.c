/*
 * A logical checkpoint once open (ckpt_open.c opens it): the tensor table,
 * which spans all shards in (shard, begin, end) order, the shards'
 * headers and metadata, and reads, which go through each shard's source
 * (a file, memory, a host's bytes; compressed or not).
 */
#include <stdlib.h>
#include <string.h>

#include "container/ckpt_internal.h"

/* The I/O layer's storage and stream values are the public ones. */
_Static_assert(STF__STORE_PLAIN == (int)STF_STORAGE_PLAIN &&
                   STF__STORE_ZSTD_SEEKABLE == (int)STF_STORAGE_ZSTD_SEEKABLE &&
                   STF__STORE_ZSTD_STREAM == (int)STF_STORAGE_ZSTD_STREAM,
               "storage values");
_Static_assert(STF__STREAM_NONE == (int)STF_STREAM_NONE &&
                   STF__STREAM_IN_ORDER == (int)STF_STREAM_IN_ORDER &&
                   STF__STREAM_SPOOLED == (int)STF_STREAM_SPOOLED &&
                   STF__STREAM_RESTARTED == (int)STF_STREAM_RESTARTED,
               "stream values");

/* Free everything; no-op on NULL. */
void stf_ckpt_free(stf_ckpt *c)
{
    if (!c) return;
    for (size_t k = 0; k < c->nshards; k++) {
        stf__header_free(c->shards[k].hdr);
        stf__source_free(c->shards[k].src);
    }
    stf__fdcache_free(c->fds);
    stf__free(c->shards);
    stf__index_free(c->ix);
    stf__free(c->index_path);
    stf__free(c->tensors);
    stf__free(c->by_name);
    stf__findings_free(&c->findings);
    stf__free(c);
}

/* ------------------------------------------------------------ shards */

static const ckpt_shard *shard_at(const stf_ckpt *c, size_t k)
{
    return c && k < c->nshards ? &c->shards[k] : NULL;
}

/*
 * Shard accessors (contracts in container.h): out-of-range shard numbers
 * give 0 or NULL rather than failing, since callers loop over counts.
 */
size_t stf_ckpt_shard_count(const stf_ckpt *c) { return c ? c->nshards : 0; }

/* Path as opened: for an index, the index directory joined with the name. */
const char *stf_ckpt_shard_path(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? stf__source_path(s->src) : NULL;
}

/* N of shard `shard`; 0 when out of range. */
uint64_t stf_ckpt_shard_header_len(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? s->hdr->n : 0;
}

/* File size seen at open (fstat); 0 when out of range. */
uint64_t stf_ckpt_shard_file_size(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? stf__source_size(s->src) : 0;
}

/* Whether the shard had a __metadata__ object, even an empty one. */
int stf_ckpt_shard_has_meta(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? s->hdr->has_meta : 0;
}

/* Entries of the shard's __metadata__, in header order. */
size_t stf_ckpt_meta_count(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? s->hdr->nmeta : 0;
}

/* Entry i of the shard's __metadata__; owned by the checkpoint. */
const stf_meta_entry *stf_ckpt_meta(const stf_ckpt *c, size_t shard, size_t i)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s && i < s->hdr->nmeta ? &s->hdr->meta[i] : NULL;
}

/*
 * With a duplicated key (an S13 warning when not strict) the last entry
 * wins, as in Python and serde, so we report what consumers will see.
 */
const stf_meta_entry *stf_ckpt_meta_find_n(const stf_ckpt *c, size_t shard, const char *key,
                                           size_t n)
{
    const ckpt_shard *s = shard_at(c, shard);
    if (!s || !key) return NULL;
    for (size_t i = s->hdr->nmeta; i-- > 0;) {
        const stf_meta_entry *m = &s->hdr->meta[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0) return m;
    }
    return NULL;
}

/* The C-string form of stf_ckpt_meta_find_n. */
const stf_meta_entry *stf_ckpt_meta_find(const stf_ckpt *c, size_t shard, const char *key)
{
    return key ? stf_ckpt_meta_find_n(c, shard, key, strlen(key)) : NULL;
}

/* How shard k is stored, and what reading it has cost; see container.h. */
stf_storage stf_ckpt_shard_storage(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? (stf_storage)stf__source_storage(s->src) : STF_STORAGE_PLAIN;
}

uint64_t stf_ckpt_shard_stored_size(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? stf__source_stored_size(s->src) : 0;
}

uint64_t stf_ckpt_shard_frame_count(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? stf__source_frames(s->src) : 0;
}

uint64_t stf_ckpt_shard_frames_decoded(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? stf__source_frames_decoded(s->src) : 0;
}

stf_stream_mode stf_ckpt_shard_stream_mode(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? (stf_stream_mode)stf__source_stream_mode(s->src) : STF_STREAM_NONE;
}

/* Shard k's source for the writer and canon.c; see source.h. */
const stf__source *stf__ckpt_shard_source(const stf_ckpt *c, size_t shard)
{
    const ckpt_shard *s = shard_at(c, shard);
    return s ? s->src : NULL;
}

/* ------------------------------------------------------------ index */

const char *stf_ckpt_index_path(const stf_ckpt *c) { return c ? c->index_path : NULL; }

/* Index "metadata" entries other than total_size (0 for a single file). */
size_t stf_ckpt_index_meta_count(const stf_ckpt *c) { return c && c->ix ? c->ix->nmeta : 0; }

/* Index metadata entry i: unescaped key, value as raw JSON text. */
const stf_meta_entry *stf_ckpt_index_meta(const stf_ckpt *c, size_t i)
{
    return c && c->ix && i < c->ix->nmeta ? &c->ix->meta[i] : NULL;
}

/* ------------------------------------------------------------ tensors */

size_t stf_ckpt_tensor_count(const stf_ckpt *c) { return c ? c->ntensors : 0; }

/* Tensor i in (shard, begin, end) order; owned by the checkpoint. */
const stf_tensor_info *stf_ckpt_tensor(const stf_ckpt *c, size_t i)
{
    return c && i < c->ntensors ? &c->tensors[i] : NULL;
}

/* Binary search over the name order; the first of equal names wins. */
int stf_ckpt_find_n(size_t *idx, const stf_ckpt *c, const char *name, size_t n)
{
    if (!c || !name) return STF_ENOTFOUND;
    size_t lo = 0, hi = c->ntensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const stf_tensor_info *t = &c->tensors[c->by_name[mid]];
        if (stf__name_cmp(t->name, t->name_len, name, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == c->ntensors) return STF_ENOTFOUND;
    const stf_tensor_info *t = &c->tensors[c->by_name[lo]];
    if (stf__name_cmp(t->name, t->name_len, name, n) != 0) return STF_ENOTFOUND;
    if (idx) *idx = c->by_name[lo];
    return 0;
}

/* The C-string form of stf_ckpt_find_n. */
int stf_ckpt_find(size_t *idx, const stf_ckpt *c, const char *name)
{
    return name ? stf_ckpt_find_n(idx, c, name, strlen(name)) : STF_ENOTFOUND;
}

/* Absolute file offset of byte `off` of tensor t (validated geometry, so
 * only a corrupt table could overflow; checked anyway). */
static int tensor_file_off(const stf_ckpt *c, const stf_tensor_info *t, uint64_t off,
                           uint64_t *abs)
{
    uint64_t a;
    if (stf__add_u64(&a, 8, c->shards[t->shard].hdr->n) || stf__add_u64(&a, a, t->begin) ||
        stf__add_u64(&a, a, off))
        return -1;
    *abs = a;
    return 0;
}

/* Bounds-checked copy out of a tensor; see container.h. */
int stf_ckpt_read(void *dst, const stf_ckpt *c, size_t i, uint64_t off, size_t len,
                  stf_err *err)
{
    uint64_t abs;
    if (!c || (!dst && len)) return stf__err(err, STF_EINVAL, "stf_ckpt_read: NULL argument");
    if (i >= c->ntensors)
        return stf__err(err, STF_EINVAL, "stf_ckpt_read: tensor index %zu out of range (%zu tensors)",
                        i, c->ntensors);
    const stf_tensor_info *t = &c->tensors[i];
    const char *path = stf__source_path(c->shards[t->shard].src);
    char tn[STF__NAME_SHOWN];
    if (off > t->nbytes || (uint64_t)len > t->nbytes - off)
        return stf__err(err, STF_EINVAL,
                        "%s: tensor '%s': read of %zu bytes at %llu is outside its %llu bytes",
                        path, stf__name_render(tn, sizeof tn, t->name, t->name_len), len,
                        (unsigned long long)off, (unsigned long long)t->nbytes);
    if (tensor_file_off(c, t, off, &abs))
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': offset overflow", path,
                        stf__name_render(tn, sizeof tn, t->name, t->name_len));
    int rc = stf__source_read(c->shards[t->shard].src, abs, dst, len, err);
    if (rc)
        stf__err_prefix(err, "tensor '%s': ", stf__name_render(tn, sizeof tn, t->name, t->name_len));
    return rc;
}

/* Pointer into the memory buffer for tensor i; NULL for a file checkpoint. */
const void *stf_ckpt_tensor_data(const stf_ckpt *c, size_t i)
{
    uint64_t abs;
    if (!c || i >= c->ntensors) return NULL;
    const stf_tensor_info *t = &c->tensors[i];
    const uint8_t *base = stf__source_data(c->shards[t->shard].src);
    if (!base || tensor_file_off(c, t, 0, &abs)) return NULL;
    return base + abs;
}

/* For the writer's verbatim copies; see source.h. */
int stf__ckpt_tensor_source(const stf_ckpt *c, size_t i, const stf__source **src,
                            uint64_t *file_off, stf_err *err)
{
    if (!c || !src || !file_off || i >= c->ntensors)
        return stf__err(err, STF_EINVAL, "stf__ckpt_tensor_source: bad argument");
    const stf_tensor_info *t = &c->tensors[i];
    if (tensor_file_off(c, t, 0, file_off))
        return stf__err(err, STF_EINVAL, "stf__ckpt_tensor_source: offset overflow");
    *src = c->shards[t->shard].src;
    return 0;
}

/* ------------------------------------------------------------ findings */

size_t stf_ckpt_finding_count(const stf_ckpt *c) { return c ? c->findings.n : 0; }

/* Finding i; owned by the checkpoint. */
const stf_finding *stf_ckpt_finding(const stf_ckpt *c, size_t i)
{
    return c && i < c->findings.n ? &c->findings.v[i] : NULL;
}

/*
 * The checkpoint's findings list, for code that adds findings after open
 * (canonical-form checks). Declared in source.h.
 */
stf__findings *stf__ckpt_findings(stf_ckpt *c) { return c ? &c->findings : NULL; }

/* Contract in container_internal.h. */
uint64_t stf__ckpt_read_total(const stf_ckpt *c)
{
    uint64_t n = 0;
    for (size_t k = 0; c && k < c->nshards; k++) n += stf__source_read_total(c->shards[k].src);
    return n;
}

/* Contract in container_internal.h. Shards first: they hold the bytes. */
int stf__ckpt_unchanged(const stf_ckpt *c, stf_err *err)
{
    for (size_t k = 0; c && k < c->nshards; k++) {
        int rc = stf__source_unchanged(c->shards[k].src, err);
        if (rc) return rc;
    }
    if (c && c->ix && c->ix->has_stamp)
        return stf__file_stamp_check(&c->ix->stamp, c->index_path, err);
    return 0;
}

/* Contract in container_internal.h. */
void stf__zread_opts_from(stf__zread_opts *dst, const stf_open_opts *o)
{
    dst->max_zstd_frame = o->max_zstd_frame;
    dst->max_zstd_frames = o->max_zstd_frames;
    dst->zstd_cache_frames = o->zstd_cache_frames;
    dst->spool_dir = o->spool_dir;
    dst->max_spool = o->max_spool;
}

/* Remote tensors fetched ahead of their reads; see experimental/container.h.
 * Each shard's ranges go to its source together, so that adjacent tensors
 * cost one request. */
int stf_ckpt_prefetch(const stf_ckpt *c, const size_t *idx, size_t n, stf_err *err)
{
    int rc = 0;
    if (!c || (n && !idx)) return stf__err(err, STF_EINVAL, "stf_ckpt_prefetch: NULL argument");
    if (!n) return 0;
    stf__range *r = stf__calloc(n, sizeof *r);
    if (!r) return stf__err(err, STF_ENOMEM, "prefetch: out of memory");
    for (size_t k = 0; k < c->nshards && !rc; k++) {
        if (!stf__source_remote(c->shards[k].src)) continue;
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (idx[i] >= c->ntensors) continue;
            const stf_tensor_info *t = &c->tensors[idx[i]];
            uint64_t abs;
            if (t->shard != k || tensor_file_off(c, t, 0, &abs)) continue;
            r[m++] = (stf__range){ abs, t->nbytes };
        }
        rc = stf__source_prefetch(c->shards[k].src, r, m, err);
    }
    stf__free(r);
    return rc;
}

/* What crossed the network for c; see container.h. */
int stf_ckpt_network(const stf_ckpt *c, uint64_t *bytes, uint64_t *requests)
{
    uint64_t b = 0, r = 0;
    if (c) {
        b = c->ix_bytes;
        r = c->ix_requests;
        for (size_t k = 0; k < c->nshards; k++) stf__source_network(c->shards[k].src, &b, &r);
    }
    if (bytes) *bytes = b;
    if (requests) *requests = r;
    return r != 0;
}
