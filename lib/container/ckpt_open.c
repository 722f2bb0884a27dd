/*
 * Opening a logical checkpoint: one safetensors file, or an index with its
 * shards, read-only and validated (S1-S20 per file, I1-I6 for an index),
 * from a path, a caller's buffer or a host's callbacks. Every file comes
 * from the I/O layer's sources, opened by name in one place
 * (stf__source_open_name) or made from the caller's bytes. An index's
 * shards share one small fd cache, so the number of shards is not bounded
 * by the open-file limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/ckpt_internal.h"
#include "container/writer_internal.h"

/*
 * Descriptors an index keeps open at most while none is being read: enough
 * for a reader per core to find its shard open, far below the usual
 * open-file limit of 1024 even with other files open.
 */
#define SHARD_FDS 32

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
    stf__source_network(isrc, &c->ix_bytes, &c->ix_requests);
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

/*
 * The caller's options (NULL: the defaults) into *cur in the newest
 * layout, once their version is known: what every opener starts with.
 * STF_EINVAL for a version this library does not know.
 */
static int opts_take(stf_open_opts *cur, const stf_open_opts *opts, stf_err *err)
{
    stf_open_opts dflt;
    if (!opts) {
        stf_open_opts_init(&dflt);
        opts = &dflt;
    }
    if (stf__opts_version(err, opts->version, STF_OPEN_OPTS_VERSION, "stf_open_opts"))
        return STF_EINVAL;
    stf__open_opts_upgrade(cur, opts);
    return 0;
}

/* Open a file or an index; see container.h. */
int stf_ckpt_open(stf_ckpt **out, const char *path, const stf_open_opts *opts, stf_err *err)
{
    stf_ckpt *c = NULL;
    stf_open_opts cur;

    if (!out || !path) return stf__err(err, STF_EINVAL, "stf_ckpt_open: NULL argument");
    *out = NULL;
    if (opts_take(&cur, opts, err)) return STF_EINVAL;
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
    stf_open_opts cur;

    if (!out || (!buf && len)) return stf__err(err, STF_EINVAL, "stf_ckpt_open_mem: NULL argument");
    *out = NULL;
    if (!name) name = "<memory>";
    if (opts_take(&cur, opts, err)) return STF_EINVAL;
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
    stf_open_opts cur;
    stf__source *src = NULL;
    stf_ckpt *c = NULL;
    int rc = 0;

    if (out) *out = NULL;
    if (!out || !name || !io) {
        rc = stf__err(err, STF_EINVAL, "stf_ckpt_open_host: NULL argument");
        goto fail;
    }
    if (opts_take(&cur, opts, err)) {
        rc = STF_EINVAL;
        goto fail;
    }
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
