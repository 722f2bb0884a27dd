/*
 * The canonical writer, second half: the layout (writer order, I7 groups,
 * shards), the temp files, deferred fills and the commit. Every output file
 * is complete as a temp file before any is renamed, so a failure never
 * leaves a partial file at an output path (lib/README.md, Canonical form).
 * Tensor bytes are streamed in bounded chunks or written in place with
 * pwrite, never the whole checkpoint in memory.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/sink_cmp.h"
#include "container/writer_state.h"
#include "container/zstd_pack.h"

/* Staging buffer for ckpt reads and producer callbacks. */
#define STAGE_MAX ((size_t)8 << 20)

/* Canonical writer order (lib/README.md, Canonical form) over pointers into
 * w->t, so the tensors keep their add-order ids. Names are unique: no ties. */
static int wt_cmp(const void *pa, const void *pb)
{
    const stf__wtensor *a = *(stf__wtensor *const *)pa, *b = *(stf__wtensor *const *)pb;
    if (a->info.dtype != b->info.dtype) return a->info.dtype > b->info.dtype ? -1 : 1;
    return stf__bytes_cmp(a->info.name, a->info.name_len, b->info.name, b->info.name_len);
}

typedef struct stage {
    char *buf;
    size_t cap;
} stage;

static int stage_get(stage *s, uint64_t want, const char *path, stf_err *err)
{
    size_t need = want < STAGE_MAX ? (size_t)want : STAGE_MAX;
    if (need == 0) need = 1;
    if (s->cap >= need) return 0;
    char *nb = stf__realloc(s->buf, need);
    if (!nb) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    s->buf = nb;
    s->cap = need;
    return 0;
}

static int write_tensor(stf__sink *sk, const stf__wtensor *t, stage *st, stf_err *err)
{
    const stf_tensor_src *src = &t->src;
    uint64_t len = t->info.nbytes;
    int rc = 0;
    if (!len) return 0;
    if (src->kind == STF_SRC_DEFERRED) return stf__sink_reserve(sk, len, err);
    if (src->kind == STF_SRC_MEM) return stf__sink_write(sk, src->mem, (size_t)len, err);
    if (src->kind == STF_SRC_CKPT) {
        /* Verbatim copies go file to file: copy_file_range lets the kernel
         * (or a reflinking file system) move the bytes without our pages. */
        const stf__source *s = NULL;
        uint64_t foff = 0;
        int fd = -1;
        if (!stf__ckpt_tensor_source(src->ckpt, src->idx, &s, &foff, NULL) &&
            stf__source_has_fd(s)) {
            /* The descriptor may be a cached one reopened: hold it for the copy. */
            if ((rc = stf__source_fd_acquire(s, &fd, err)))
                return stf__err_prefix(err, "tensor '%s': ", t->info.name);
            rc = stf__sink_copy_fd(sk, fd, foff, len, stf__source_path(s), err);
            stf__source_fd_release(s);
            return rc;
        }
        const void *p = stf_ckpt_tensor_data(src->ckpt, src->idx);
        if (p) return stf__sink_write(sk, p, (size_t)len, err);
    }
    if ((rc = stage_get(st, len, sk->final_path, err))) return rc;
    for (uint64_t off = 0; off < len;) {
        size_t k = len - off < st->cap ? (size_t)(len - off) : st->cap;
        /* A failed read of the input already names its tensor, file and
         * byte: a second "tensor" in front would only repeat it. A
         * producer's error is the caller's own, and gets the output's. */
        if (src->kind == STF_SRC_CKPT) {
            if ((rc = stf_ckpt_read(st->buf, src->ckpt, src->idx, off, k, err))) return rc;
        } else if ((rc = src->fn(src->ud, st->buf, off, k, err))) {
            char shown[STF__NAME_SHOWN];
            return stf__err_prefix(err, "%s: tensor '%s' at byte %llu: ", sk->final_path,
                                   stf__name_render(shown, sizeof shown, t->info.name,
                                                    t->info.name_len),
                                   (unsigned long long)off);
        }
        if ((rc = stf__sink_write(sk, st->buf, k, err))) return rc;
        off += k;
    }
    return 0;
}

/* The sink of a file whose first `head` bytes are the header and then
 * the n tensors t (canonical order, data offsets set; a comparing writer
 * compares them tensor by tensor when `safetensors`). */
static int open_sink(const stf_writer *w, stf__sink *sk, const char *path, uint64_t head,
                     const stf_tensor_info *t, size_t n, int safetensors, stf_err *err)
{
    if (!w->compare && w->memory) return stf__sink_open_mem(sk, path, err);
    if (!w->compare) {
        int rc = stf__sink_open(sk, path, err);
        if (!rc && w->keep_cache) stf__sink_keep_cache(sk);
        return rc;
    }
    stf__cmp *c = NULL;
    int rc = stf__cmp_new(&c, path, head, t, n, safetensors, err);
    return rc ? rc : stf__sink_open_cmp(sk, path, c, err);
}

/*
 * Write shard `shard` holding tensors tt[0..n) (canonical order) into the
 * temp file of `sk`: header, non-deferred bytes, holes for deferred ones.
 * The sink stays open for fills. Sets each tensor's shard and file offset.
 */
static int write_shard(stf_writer *w, stf__sink *sk, const char *path, size_t shard,
                       stf__wtensor **tt, size_t n, stage *st, stf_err *err)
{
    int rc = 0, holes = 0;
    stf_meta_entry *hmeta = NULL;
    stf_buf hdr;
    stf__buf_init(&hdr);
    stf_tensor_info *info = stf__calloc(n ? n : 1, sizeof *info);
    if (!info) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < n; i++) info[i] = tt[i]->info;
    if ((rc = stf__canon_order(info, n, err))) goto done;
    if ((rc = stf__whash_meta(w, shard, &hmeta, err))) goto done;
    if ((rc = stf__canon_header(&hdr, info, n, hmeta ? hmeta : w->meta.v, w->meta.n,
                                w->keep_meta, err))) {
        stf__err_prefix(err, "%s: ", path);
        goto done;
    }
    if (hmeta) stf__whash_locate(w, shard, hdr.data, hdr.len);
    unsigned char le[8];
    uint64_t hn = hdr.len;
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hn >> (8 * i));
    /* A compressed output's shard goes into a compressing sink; a memory
     * writer's stays uncompressed. */
    int zlive = w->opts.zstd_level && !w->memory;
    if ((rc = zlive ? stf__writer_zopen(w, sk, path, err)
                    : open_sink(w, sk, path, 8 + hn, info, n, 1, err)))
        goto done;
    if ((rc = stf__sink_write(sk, le, 8, err))) goto done;
    if ((rc = stf__sink_write(sk, hdr.data, hdr.len, err))) goto done;
    for (size_t i = 0; i < n; i++) {
        /* tt is already canonical and names are unique, so the sort kept it. */
        assert(info[i].name == tt[i]->info.name);
        tt[i]->info.shard = (unsigned)shard;
        tt[i]->file_off = 8 + hn + info[i].begin;
        if (tt[i]->src.kind == STF_SRC_DEFERRED && tt[i]->info.nbytes) holes = 1;
        else if (w->cancel && *w->cancel) {
            rc = stf__err(err, STF_ECANCELED, "%s: canceled; nothing written", w->path);
            goto done;
        }
        if ((rc = write_tensor(sk, tt[i], st, err))) goto done;
        if (tt[i]->src.kind != STF_SRC_DEFERRED && w->opts.progress) {
            w->written += tt[i]->info.nbytes;
            w->opts.progress(w->opts.progress_ud, w->written, w->to_write, tt[i]->info.name,
                             tt[i]->info.name_len);
        }
    }
    /* A trailing deferred tensor is a hole past the last write: the size
     * must cover it so fills land inside the file and readers see it. */
    if (holes) rc = stf__sink_extend(sk, err);
    /* From here on fills may be staged and written with O_DIRECT. */
    if (!rc) rc = stf__sink_seal(sk, err);
    /* The frame plan is fixed now: fills compress frames as they complete. */
    if (!rc && zlive) rc = stf__writer_zlayout(w, sk, shard, tt, n, err);
done:
    stf__free(hmeta);
    stf__free(info);
    stf__buf_free(&hdr);
    return rc;
}

static char *join_dir(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    stf_buf b;
    stf__buf_init(&b);
    if ((slash && stf__buf_put(&b, path, (size_t)(slash - path + 1))) || stf__buf_puts(&b, name)) {
        stf__buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* The index is complete at prepare time (names, shards, total_size), so it
 * is written and fsynced then; commit only publishes it. */
static int write_index(stf_writer *w, stf__sink *sk, const char *ipath,
                       stf__wtensor *const *out, const stf__shard_plan *plan, char **files,
                       stf_err *err)
{
    int rc = 0;
    stf_buf txt;
    stf__buf_init(&txt);
    stf_tensor_info *info = stf__calloc(w->n ? w->n : 1, sizeof *info);
    if (!info) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
        goto done;
    }
    for (size_t i = 0; i < w->n; i++) info[i] = out[i]->info;
    if ((rc = stf__index_text(&txt, info, w->n, plan, files, w->imeta.v, w->imeta.n, err))) {
        stf__err_prefix(err, "%s: ", ipath);
        goto done;
    }
    if ((rc = open_sink(w, sk, ipath, txt.len, NULL, 0, 0, err))) goto done;
    if ((rc = stf__sink_write(sk, txt.data, txt.len, err))) goto done;
    rc = stf__sink_finish(sk, err);
done:
    stf__free(info);
    stf__buf_free(&txt);
    return rc;
}

/* Shard file name of a compressed output: that of the uncompressed path
 * (its first `stem` bytes) with the suffix `zs` appended. */
static char *zshard_name(const char *path, size_t stem, size_t idx, size_t count,
                         const char *zs)
{
    char *plain = stf__strndup(path, stem), *name = plain ? stf__shard_name(plain, idx, count) : NULL;
    stf_buf b;
    stf__buf_init(&b);
    if (!name || stf__buf_puts(&b, name) || stf__buf_puts(&b, zs)) {
        stf__buf_free(&b);
        b.data = NULL;
    }
    stf__free(plain);
    stf__free(name);
    return b.data;
}

typedef struct gref {
    const char *g;
    size_t len, pos;
} gref;

static int gref_cmp(const void *pa, const void *pb)
{
    const gref *a = pa, *b = pb;
    int c = stf__bytes_cmp(a->g, a->len, b->g, b->len);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* unit[i] for stf__shard_plan_units: the writer position of the first
 * tensor of i's group. Sorting by (group, position) puts that one first. */
static int group_units(size_t *unit, stf__wtensor *const *wo, size_t n, stf_err *err)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unit[i] = i;
        if (wo[i]->group) m++;
    }
    if (!m) return 0;
    gref *r = stf__calloc(m, sizeof *r);
    if (!r) return stf__err(err, STF_ENOMEM, "out of memory grouping tensors");
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (wo[i]->group) r[m++] = (gref){ wo[i]->group, wo[i]->group_len, i };
    qsort(r, m, sizeof *r, gref_cmp);
    for (size_t j = 0, head = 0; j < m; j++) {
        if (j == 0 || stf__bytes_cmp(r[j].g, r[j].len, r[head].g, r[head].len)) head = j;
        unit[r[j].pos] = r[head].pos;
    }
    stf__free(r);
    return 0;
}

/* Abandon the files of a failed prepare or commit: temp files removed. */
static void drop_files(stf_writer *w)
{
    for (size_t i = 0; i < w->nfiles; i++) {
        stf__sink_abort(&w->sinks[i]);
        stf__free(w->finals[i]);
    }
    stf__free(w->sinks);
    stf__free(w->finals);
    w->sinks = NULL;
    w->finals = NULL;
    w->nfiles = w->nshards = 0;
}

/*
 * Fix the layout and write the temp files (contract in container.h).
 * Writer order is canonical order; shards are packed greedily over I7
 * groups in that order (stf__shard_plan_units), and each shard is again in
 * canonical order. A failure removes every temp file and ends the writer.
 */
int stf_writer_prepare(stf_writer *w, stf_err *err)
{
    if (!w) return stf__err(err, STF_EINVAL, "writer: NULL");
    if (w->state == STF__W_PREPARED)
        return stf__err(err, STF_EINVAL, "%s: writer already prepared", w->path);
    if (w->state != STF__W_OPEN)
        return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
    w->state = STF__W_DONE; /* until everything below succeeded */
    int rc = 0;
    size_t n = w->n, m = n ? n : 1;
    stage st = { NULL, 0 };
    stf__shard_plan plan = { NULL, 0 };
    char **files = NULL;
    stf__wtensor **wo = stf__calloc(m, sizeof *wo), **out = stf__calloc(m, sizeof *out);
    stf_tensor_info *info = stf__calloc(m, sizeof *info);
    size_t *unit = stf__calloc(m, sizeof *unit), *order = stf__calloc(m, sizeof *order);
    w->filled = stf__calloc(m, sizeof *w->filled);
    if (!wo || !out || !info || !unit || !order || !w->filled) goto oom;
    w->written = w->to_write = 0;
    for (size_t i = 0; i < n; i++) {
        wo[i] = &w->t[i];
        atomic_init(&w->filled[i], 0);
        if (w->t[i].src.kind != STF_SRC_DEFERRED) w->to_write += w->t[i].info.nbytes;
    }
    atomic_init(&w->fill_failed, 0);
    if (n > 1) qsort(wo, n, sizeof *wo, wt_cmp);
    for (size_t i = 0; i < n; i++) info[i] = wo[i]->info;
    if (w->opts.max_shard_size && (rc = group_units(unit, wo, n, err))) goto done;
    if ((rc = stf__shard_plan_units(&plan, order, info, w->opts.max_shard_size ? unit : NULL, n,
                                    w->opts.max_shard_size, err)))
        goto done;
    for (size_t k = 0; k < n; k++) out[k] = wo[order[k]];

    size_t ns = plan.nshards, nf = ns > 1 ? ns + 1 : ns;
    w->sinks = stf__calloc(nf, sizeof *w->sinks);
    w->finals = stf__calloc(nf, sizeof *w->finals);
    files = stf__calloc(ns, sizeof *files);
    if (!w->sinks || !w->finals || !files) goto oom;
    for (size_t i = 0; i < nf; i++) w->sinks[i].fd = -1;
    w->nfiles = nf;
    w->nshards = ns;
    /* A compressed output's names carry its suffix after ".safetensors";
     * the index does not (stfix(1), COMPRESSED FILES). */
    const char *zs = stf__zstd_suffix(&w->opts);
    size_t zl = zs ? strlen(zs) : 0, stem = strlen(w->path) - zl;
    for (size_t s = 0; s < ns; s++) {
        if (ns > 1) {
            files[s] = zs ? zshard_name(w->path, stem, s, ns, zs)
                          : stf__shard_name(w->path, s, ns);
            w->finals[s] = files[s] ? join_dir(w->path, files[s]) : NULL;
        } else w->finals[s] = stf__strdup(w->path);
        if (!w->finals[s]) goto oom;
    }
    if (ns > 1) {
        stf_buf ip;
        stf__buf_init(&ip);
        if (stf__buf_put(&ip, w->path, stem) || stf__buf_puts(&ip, ".index.json")) {
            stf__buf_free(&ip);
            goto oom;
        }
        w->finals[ns] = ip.data;
    }
    for (size_t s = 0; s < ns; s++) {
        size_t a = plan.first[s], b = s + 1 < ns ? plan.first[s + 1] : n;
        if ((rc = write_shard(w, &w->sinks[s], w->finals[s], s, out + a, b - a, &st, err)))
            goto done;
    }
    if (ns > 1 && (rc = write_index(w, &w->sinks[ns], w->finals[ns], out, &plan, files, err)))
        goto done;
    w->state = STF__W_PREPARED;
    if (w->opts.progress) w->opts.progress(w->opts.progress_ud, w->to_write, w->to_write, NULL, 0);
    goto done;
oom:
    rc = stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
done:
    if (rc) drop_files(w);
    if (files)
        for (size_t s = 0; s < plan.nshards; s++) stf__free(files[s]);
    stf__free(files);
    stf__shard_plan_free(&plan);
    stf__free(st.buf);
    stf__free(wo);
    stf__free(out);
    stf__free(info);
    stf__free(unit);
    stf__free(order);
    return rc;
}

/*
 * Deferred bytes in place (contract in container.h). Reads only state that
 * prepare fixed, writes with pwrite and counts with an atomic add, so
 * concurrent calls for disjoint ranges need no lock. Overlapping fills are
 * the caller's error: the count then exceeds the tensor's size and commit
 * refuses. Fills must all return before commit or free is called.
 */
int stf_writer_fill(stf_writer *w, size_t id, uint64_t off, const void *data, size_t len,
                    stf_err *err)
{
    if (!w) return stf__err(err, STF_EINVAL, "writer: NULL");
    if (w->state != STF__W_PREPARED)
        return stf__err(err, STF_EINVAL, "%s: fill is only possible between prepare and commit",
                        w->path);
    if (id >= w->n) return stf__err(err, STF_EINVAL, "%s: no tensor with id %zu", w->path, id);
    const stf__wtensor *t = &w->t[id];
    char shown[STF__NAME_SHOWN];
    stf__name_render(shown, sizeof shown, t->info.name, t->info.name_len);
    if (t->src.kind != STF_SRC_DEFERRED)
        return stf__err(err, STF_EINVAL, "%s: tensor '%s' is not deferred", w->path, shown);
    if (len && !data)
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': NULL fill data", w->path, shown);
    if (off > t->info.nbytes || len > t->info.nbytes - off)
        return stf__err(err, STF_EINVAL,
                        "%s: tensor '%s': fill of %zu bytes at byte %llu is outside its %llu "
                        "bytes",
                        w->path, shown, len, (unsigned long long)off,
                        (unsigned long long)t->info.nbytes);
    int rc = stf__sink_pwrite(&w->sinks[t->info.shard], t->file_off + off, data, len, shown,
                              err);
    if (rc) {
        atomic_store(&w->fill_failed, 1);
        return rc;
    }
    atomic_fetch_add(&w->filled[id], (uint64_t)len);
    return 0;
}

/*
 * A sharded output replaces its shards one rename at a time, so an old
 * index at the index path would, for a moment (or for good, after a
 * crash), describe a mix of old and new shards. When any shard name is
 * taken, the old index goes first: a reader then sees the old set whole,
 * no index, or the new set whole.
 */
static int retire_old_index(const stf_writer *w, stf_err *err)
{
    if (w->nfiles == w->nshards) return 0; /* one file, no index */
    const char *ipath = w->finals[w->nshards];
    struct stat st;
    int taken = 0;
    for (size_t s = 0; s < w->nshards && !taken; s++) taken = lstat(w->finals[s], &st) == 0;
    if (!taken || unlink(ipath) == 0 || errno == ENOENT) return 0;
    return stf__err(err, STF_EIO, "%s: cannot remove the old index before replacing its shards: %s",
                    ipath, strerror(errno));
}

/*
 * Every checkpoint the output was read from (the input, and any other a
 * tensor was copied from) is still as it was opened: bytes read before
 * another process rewrote it and bytes read after would make an output
 * that is neither version. Checked last, after the slow work.
 */
static int inputs_unchanged(const stf_writer *w, stf_err *err)
{
    int rc = stf__ckpt_unchanged(w->opts.input, err);
    const stf_ckpt *last = w->opts.input;
    for (size_t i = 0; !rc && i < w->n; i++) {
        const stf_ckpt *c = w->t[i].src.kind == STF_SRC_CKPT ? w->t[i].src.ckpt : NULL;
        if (!c || c == w->opts.input || c == last) continue;
        last = c;
        rc = stf__ckpt_unchanged(c, err);
    }
    return rc;
}

/*
 * Prepare if needed, refuse unfilled deferred tensors, then fsync every
 * shard, check the inputs are as they were opened, and rename: shards
 * before the index, so a reader never sees an index naming missing shards.
 * Any failure before the renames removes every temp file and leaves
 * nothing at the final paths.
 */
int stf_writer_commit(stf_writer *w, stf_err *err)
{
    if (!w) return stf__err(err, STF_EINVAL, "writer: NULL");
    if (w->memory) return stf__err(err, STF_EINVAL, "%s: a memory writer is never committed", w->path);
    if (w->state == STF__W_DONE)
        return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
    int rc = 0;
    if (w->state == STF__W_OPEN && (rc = stf_writer_prepare(w, err))) return rc;
    w->state = STF__W_DONE;
    if (atomic_load(&w->fill_failed)) {
        rc = stf__err(err, STF_EIO, "%s: a fill of a deferred tensor failed earlier", w->path);
        goto done;
    }
    for (size_t i = 0; i < w->n; i++) {
        const stf__wtensor *t = &w->t[i];
        uint64_t got = atomic_load(&w->filled[i]);
        if (t->src.kind != STF_SRC_DEFERRED || got == t->info.nbytes) continue;
        char shown[STF__NAME_SHOWN];
        stf__name_render(shown, sizeof shown, t->info.name, t->info.name_len);
        rc = stf__err(err, STF_EINVAL,
                      got < t->info.nbytes
                          ? "%s: tensor '%s': deferred bytes never filled (%llu of %llu filled)"
                          : "%s: tensor '%s': overlapping fills (%llu bytes filled for %llu)",
                      w->finals[t->info.shard], shown, (unsigned long long)got,
                      (unsigned long long)t->info.nbytes);
        goto done;
    }
    if ((rc = stf__whash_finish(w, err))) goto done;
    /* A compressed output's shards are compressed by their finish. */
    for (size_t s = 0; s < w->nshards; s++)
        if ((rc = stf__sink_finish(&w->sinks[s], err))) goto done;
    if ((rc = inputs_unchanged(w, err))) goto done;
    /* The guard again, on the exact names and as late as possible: what is
     * at a final path may have changed since stf_writer_new. */
    unsigned guard = stf__out_flags(&w->opts);
    for (size_t s = 0; s < w->nfiles; s++)
        if ((rc = stf__out_check_name(w->finals[s], guard, &w->inputs, err))) goto done;
    if ((rc = retire_old_index(w, err))) goto done;
    for (size_t s = 0; s < w->nfiles; s++)
        if ((rc = stf__sink_publish(&w->sinks[s], err))) goto done;
done:
    /* Published sinks have no temp file left; the rest are unlinked, and
     * the spools of a compressed output with them. */
    for (size_t s = 0; s < w->nfiles; s++) stf__sink_abort(&w->sinks[s]);
    stf__out_lock_release(&w->lock);
    return rc;
}

/* Files of a prepared writer, shards then index (contract in container.h). */
size_t stf_writer_file_count(const stf_writer *w)
{
    return w ? w->nfiles : 0;
}

/* Where file i is now: NULL before prepare, after commit or a failure. */
const char *stf_writer_temp_path(const stf_writer *w, size_t i)
{
    return w && i < w->nfiles ? w->sinks[i].tmp_path : NULL;
}

/* Where commit puts file i; stays valid after commit until free. */
const char *stf_writer_final_path(const stf_writer *w, size_t i)
{
    return w && i < w->nfiles ? w->finals[i] : NULL;
}

/* A comparing writer's target of file i (contract in writer_internal.h). */
const stf__cmp *stf__writer_file_cmp(const stf_writer *w, size_t i, uint64_t *size)
{
    const stf__cmp *c = w && i < w->nfiles ? stf__sink_check_target(&w->sinks[i]) : NULL;
    if (c) *size = w->sinks[i].off;
    return c;
}
