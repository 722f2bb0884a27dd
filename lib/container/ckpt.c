/*
 * A logical checkpoint: one safetensors file, or an index with its shards,
 * opened read-only and validated (S1-S20 per file, I1-I6 for an index).
 * The tensor table spans all shards in (shard, begin, end) order, and reads
 * go through each shard's source (pread, or the caller's buffer). An
 * index's shards share one small fd cache, so the number of shards is not
 * bounded by the open-file limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/index.h"
#include "container/writer_internal.h"
#include "container/container_internal.h"

/*
 * Descriptors an index keeps open at most while none is being read: enough
 * for a reader per core to find its shard open, far below the usual
 * open-file limit of 1024 even with other files open.
 */
#define SHARD_FDS 32

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

typedef struct ckpt_shard {
    stf__source *src;
    stf__header *hdr;
} ckpt_shard;

struct stf_ckpt {
    ckpt_shard *shards;
    size_t nshards;
    stf__fdcache *fds;      /* the shards' descriptors (an index only) */
    char *index_path;       /* NULL for a single file */
    stf__index *ix;         /* NULL for a single file */
    stf_tensor_info *tensors;
    size_t ntensors;
    size_t *by_name;        /* permutation of tensors, sorted by name bytes */
    stf__findings findings;
};

static int oom(stf_err *err, const char *path)
{
    return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
}

/*
 * Framing and header for one shard whose source is open. The order
 * matters: nothing is allocated from N until stf__frame_check has tied it
 * to the real file size (S3). A file's header is read into a copy (at most
 * max_header bytes); a memory source is parsed in place.
 */
static int shard_load(ckpt_shard *sh, const stf_open_opts *o, stf__findings *f, stf_err *err)
{
    int rc = 0;
    uint8_t first[8];
    uint8_t *copy = NULL;
    const uint8_t *hdr;
    stf__zread_opts zo;

    /* A zstd file is read through its decompressed bytes from here on. */
    stf__zread_opts_from(&zo, o);
    rc = stf__source_decompress(&sh->src, &zo, err);
    if (rc) return rc;
    const char *path = stf__source_path(sh->src);
    uint64_t size = stf__source_size(sh->src), n = 0;
    rc = stf__source_read(sh->src, 0, first, size < 8 ? (size_t)size : 8, err);
    if (rc) goto done;
    rc = stf__frame_check(&n, first, size, path, o, err);
    if (rc) goto done;
    if ((rc = stf__source_hold_head(sh->src, 8 + n, err))) goto done;
    if (stf__source_data(sh->src)) {
        hdr = stf__source_data(sh->src) + 8;
    } else {
        copy = stf__malloc(n ? (size_t)n : 1);
        if (!copy) {
            rc = oom(err, path);
            goto done;
        }
        rc = stf__source_read(sh->src, 8, copy, (size_t)n, err);
        if (rc) goto done;
        hdr = copy;
    }
    /* A stream that does not record its size takes the header's. */
    int unsized = stf__source_unsized(sh->src);
    rc = stf__header_parse(&sh->hdr, hdr, n, unsized ? STF__SIZE_FROM_HEADER : size, path, o, f,
                           err);
    if (!rc && unsized)
        rc = stf__source_settle(sh->src, 8 + n + sh->hdr->data_size, n, err);
done:
    stf__free(copy);
    return rc;
}

static int tensor_ptr_cmp(const void *a, const void *b)
{
    const stf_tensor_info *x = *(const stf_tensor_info *const *)a;
    const stf_tensor_info *y = *(const stf_tensor_info *const *)b;
    int r = stf__name_cmp(x->name, x->name_len, y->name, y->name_len);
    if (r) return r;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Concatenate the shards' tables (already in file order) and sort by name. */
static int build_table(stf_ckpt *c, const char *path, stf_err *err)
{
    size_t total = 0;
    const stf_tensor_info **ptrs = NULL;
    for (size_t k = 0; k < c->nshards; k++) {
        if (c->shards[k].hdr->ntensors > SIZE_MAX - total) return oom(err, path);
        total += c->shards[k].hdr->ntensors;
    }
    if (total == 0) return 0;
    c->tensors = stf__calloc(total, sizeof *c->tensors);
    c->by_name = stf__calloc(total, sizeof *c->by_name);
    ptrs = stf__calloc(total, sizeof *ptrs);
    if (!c->tensors || !c->by_name || !ptrs) {
        stf__free(ptrs);
        return oom(err, path);
    }
    size_t at = 0;
    for (size_t k = 0; k < c->nshards; k++) {
        const stf__header *h = c->shards[k].hdr;
        for (size_t i = 0; i < h->ntensors; i++) {
            c->tensors[at] = h->tensors[i];
            c->tensors[at].shard = (unsigned)k;
            ptrs[at] = &c->tensors[at];
            at++;
        }
    }
    c->ntensors = total;
    qsort(ptrs, total, sizeof *ptrs, tensor_ptr_cmp);
    for (size_t i = 0; i < total; i++) c->by_name[i] = (size_t)(ptrs[i] - c->tensors);
    stf__free(ptrs);
    return 0;
}

static stf_ckpt *ckpt_new(void)
{
    stf_ckpt *c = stf__calloc(1, sizeof *c);
    if (c) stf__findings_init(&c->findings);
    return c;
}

/* Name of the first weight_map entry stored in file k, escaped for messages. */
static const char *example_entry(char shown[STF__NAME_SHOWN], const stf__index *ix, size_t k)
{
    shown[0] = '\0';
    for (size_t i = 0; i < ix->nmap; i++)
        if (ix->map[i].file == k)
            return stf__name_render(shown, STF__NAME_SHOWN, ix->map[i].name, ix->map[i].name_len);
    return shown;
}

/*
 * Where a checkpoint's shards come from: files by name (open_shard NULL),
 * or a host's callbacks.
 */
typedef struct ckpt_files {
    stf_host_open_fn open_shard;
    void *shard_ctx;
} ckpt_files;

/*
 * Open shard `file` of the index `path` as *out, named beside the index
 * (stf__source_name_near). *e as for stf__source_open_name; a host that
 * has no such file is ENOENT and STF_ENOTFOUND, as a path would be.
 */
static int open_member(stf_ckpt *c, const ckpt_files *fs, const char *path, const char *file,
                       stf__source **out, int *e, stf_err *err)
{
    char *sp = stf__source_name_near(path, file);
    if (!sp) {
        *e = ENOMEM;
        return oom(err, path);
    }
    int rc;
    if (!fs->open_shard) {
        rc = stf__source_open_name(out, sp, c->fds, e, err);
    } else {
        stf_host_io hio = {0};
        *e = 0;
        if (fs->open_shard(fs->shard_ctx, file, &hio) < 0) {
            *e = ENOENT;
            rc = stf__err(err, STF_ENOTFOUND, "%s: No such file or directory", sp);
        } else {
            stf__host_io h = {hio.ctx, hio.read, hio.size, hio.close};
            rc = stf__source_open_host(out, &h, sp, err);
            if (rc == STF_ENOMEM) *e = ENOMEM;
        }
    }
    stf__free(sp);
    return rc;
}

/*
 * Whether a shard's failed open (errno e; 0: not a regular file) means the
 * shard is missing or unreadable as named, which is the index's fault (I3).
 * Anything else, running out of descriptors or memory above all, is the
 * environment's, and is no finding about the checkpoint. Either way the
 * error keeps the code the same path would get as the checkpoint itself:
 * a shard that does not exist is a malformed index (STF_EFORMAT, as a
 * missing file is STF_ENOTFOUND: both the input's to correct), one that
 * exists but cannot be read as a file (a directory, a FIFO, no read
 * permission) is STF_EIO, as that file given directly is.
 */
static int shard_is_missing(int e)
{
    switch (e) {
    case 0:
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EISDIR:
    case ELOOP:
    case ENAMETOOLONG:
    case ENXIO:
    case ENODEV:
        return 1;
    default:
        return 0;
    }
}

/*
 * Every shard is opened, identified and its header checked in turn; the
 * fd cache closes the least recently used descriptors as it goes, and
 * reads reopen them on demand.
 */
static int open_index(stf_ckpt *c, stf__source *isrc, const ckpt_files *fs,
                      const stf_open_opts *o, stf_err *err)
{
    /* The index is read whole and its source closed before any shard is
     * opened; its name lives on as c->index_path. */
    int rc = stf__index_read(&c->ix, isrc, o, err);
    c->index_path = stf__strdup(stf__source_path(isrc));
    if (!rc && !c->index_path) rc = oom(err, stf__source_path(isrc));
    stf__source_free(isrc);
    if (rc) return rc;
    const char *path = c->index_path;
    rc = stf__fdcache_new(&c->fds, SHARD_FDS, err);
    if (rc) return rc;
    c->shards = stf__calloc(c->ix->nfiles, sizeof *c->shards);
    if (!c->shards) return oom(err, path);
    for (size_t k = 0; k < c->ix->nfiles; k++) {
        const char *file = c->ix->files[k];
        int e = 0;
        rc = open_member(c, fs, path, file, &c->shards[k].src, &e, err);
        c->nshards = k + 1; /* shard k is ours to free from here on */
        if (rc == STF_ENOMEM) return rc;
        if (rc && !shard_is_missing(e))
            return stf__err_prefix(err, "%s: shard '%s': ", path, file);
        if (rc) {
            char why[sizeof err->msg], held[STF__NAME_SHOWN];
            snprintf(why, sizeof why, "%s", err ? err->msg : "");
            return stf__err_rule(err, rc == STF_ENOTFOUND ? STF_EFORMAT : rc, "I3", 0, 0,
                                 "%s: I3 MissingShard: shard '%s' (holding '%s' per "
                                 "weight_map) cannot be read: %s",
                                 path, file, example_entry(held, c->ix, k), why);
        }
        rc = shard_load(&c->shards[k], o, &c->findings, err);
        if (rc == STF_ENOMEM) return rc;
        if (rc) {
            stf__err_prefix(err, "%s: I3 shard '%s' is invalid: ", path, file);
            return rc;
        }
    }
    rc = build_table(c, path, err);
    if (rc) return rc;
    return stf__index_check(c->ix, path, c->tensors, c->ntensors, c->by_name, &c->findings, err);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/*
 * Shard 0 of a single-file checkpoint: the slot, its source (*src, which
 * it takes, whatever it returns), the header and the tensor table. The
 * openers differ only in the source.
 */
static int open_single(stf_ckpt *c, stf__source *src, const stf_open_opts *opts, stf_err *err)
{
    const char *name = stf__source_path(src);
    c->shards = stf__calloc(1, sizeof *c->shards);
    if (!c->shards) {
        int rc = oom(err, name);
        stf__source_free(src);
        return rc;
    }
    c->shards[0].src = src;
    c->nshards = 1;
    int rc = shard_load(&c->shards[0], opts, &c->findings, err);
    if (rc) return rc;
    return build_table(c, name, err);
}

/*
 * The end both openers share: on success (rc 0) add the canonical-form
 * notes and hand c to *out; otherwise, or if that fails, free c.
 */
static int open_finish(stf_ckpt **out, stf_ckpt *c, int rc, const stf_open_opts *opts,
                       stf_err *err)
{
    /* S21-S25 are notes, never load errors; they tell --check users and
     * `inspect` whether the file is what the canonical writer would emit. */
    if (!rc && opts->canon_findings) rc = stf__ckpt_canon_findings(c, err);
    if (rc) stf_ckpt_free(c);
    else *out = c;
    return rc;
}

/* Open a file or an index; see container.h. */
int stf_ckpt_open(stf_ckpt **out, const char *path, const stf_open_opts *opts, stf_err *err)
{
    stf_ckpt *c = NULL;
    stf_open_opts dflt;

    if (!out || !path) return stf__err(err, STF_EINVAL, "stf_ckpt_open: NULL argument");
    *out = NULL;
    if (!opts) {
        stf_open_opts_init(&dflt);
        opts = &dflt;
    }
    if (stf__opts_version(err, opts->version, STF_OPEN_OPTS_VERSION, "stf_open_opts"))
        return STF_EINVAL;
    stf_open_opts cur;
    stf__open_opts_upgrade(&cur, opts);
    opts = &cur;
    c = ckpt_new();
    if (!c) return oom(err, path);
    static const ckpt_files by_name = {NULL, NULL};
    stf__source *src = NULL;
    int rc = stf__source_open_name(&src, path, NULL, NULL, err);
    if (!rc && ends_with(path, ".index.json")) {
        rc = open_index(c, src, &by_name, opts, err);
    } else if (!rc) {
        rc = open_single(c, src, opts, err);
    }
    return open_finish(out, c, rc, opts, err);
}

/* Open a file held in memory; see container.h. */
int stf_ckpt_open_mem(stf_ckpt **out, const void *buf, size_t len, const char *name,
                      const stf_open_opts *opts, stf_err *err)
{
    stf_ckpt *c = NULL;
    stf_open_opts dflt;

    if (!out || (!buf && len)) return stf__err(err, STF_EINVAL, "stf_ckpt_open_mem: NULL argument");
    *out = NULL;
    if (!name) name = "<memory>";
    if (!opts) {
        stf_open_opts_init(&dflt);
        opts = &dflt;
    }
    if (stf__opts_version(err, opts->version, STF_OPEN_OPTS_VERSION, "stf_open_opts"))
        return STF_EINVAL;
    stf_open_opts cur;
    stf__open_opts_upgrade(&cur, opts);
    opts = &cur;
    c = ckpt_new();
    if (!c) return oom(err, name);
    stf__source *src = NULL;
    int rc = stf__source_open_mem(&src, buf, len, name, err);
    if (!rc) rc = open_single(c, src, opts, err);
    return open_finish(out, c, rc, opts, err);
}

/* Open a checkpoint over a host's bytes; see experimental/container.h. */
int stf_ckpt_open_host(stf_ckpt **out, const char *name, const stf_host_io *io,
                       stf_host_open_fn open_shard, void *shard_ctx, const stf_open_opts *opts,
                       stf_err *err)
{
    stf_open_opts dflt, cur;
    stf__source *src = NULL;
    stf_ckpt *c = NULL;
    int rc = 0;

    if (out) *out = NULL;
    if (!out || !name || !io) {
        rc = stf__err(err, STF_EINVAL, "stf_ckpt_open_host: NULL argument");
        goto fail;
    }
    if (!opts) {
        stf_open_opts_init(&dflt);
        opts = &dflt;
    }
    if (stf__opts_version(err, opts->version, STF_OPEN_OPTS_VERSION, "stf_open_opts")) {
        rc = STF_EINVAL;
        goto fail;
    }
    stf__open_opts_upgrade(&cur, opts);
    opts = &cur;
    int index = ends_with(name, ".index.json");
    if (index && !open_shard) {
        rc = stf__err(err, STF_EINVAL,
                      "%s: an index needs the host's open_shard to reach its shards", name);
        goto fail;
    }
    /* From here the source owns io and closes it, also when it fails. */
    stf__host_io h = {io->ctx, io->read, io->size, io->close};
    rc = stf__source_open_host(&src, &h, name, err);
    if (rc) return rc;
    c = ckpt_new();
    if (!c) {
        stf__source_free(src);
        return oom(err, name);
    }
    if (index) {
        ckpt_files fs = {open_shard, shard_ctx};
        rc = open_index(c, src, &fs, opts, err);
    } else {
        rc = open_single(c, src, opts, err);
    }
    return open_finish(out, c, rc, opts, err);
fail:
    if (io && io->close) io->close(io->ctx);
    return rc;
}

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
    if (!r) return oom(err, "prefetch");
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
