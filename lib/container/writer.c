/*
 * The canonical writer (spec/safetensors.md §5, §6): collects tensors and
 * metadata, then on commit writes every output file through a temp file
 * and renames them only once all of them are complete. Tensor bytes are
 * streamed in bounded chunks, never the whole checkpoint in memory.
 */
#include <stdlib.h>
#include <string.h>

#include "container/sink.h"
#include "container/source.h"
#include "container/writer_internal.h"

/* Staging buffer for ckpt reads and producer callbacks. */
#define STAGE_MAX ((size_t)8 << 20)

typedef struct wtensor {
    stf_tensor_info info; /* name and shape owned by the writer */
    stf_tensor_src src;
} wtensor;

typedef struct meta_list {
    stf_meta_entry *v; /* key and value owned */
    size_t n, cap;
} meta_list;

struct stf_writer {
    char *path;
    stf_write_opts opts;
    wtensor *t;
    size_t n, cap;
    size_t *slots; /* name hash set: tensor index + 1, 0 = empty */
    size_t nslots;
    meta_list meta, imeta;
    int keep_meta;
    int done; /* commit ran (successfully or not): no more changes */
};

/* Defaults: one output file, fsync on, no hook. */
void stf_write_opts_init(stf_write_opts *o)
{
    memset(o, 0, sizeof *o);
}

/*
 * Create a writer for `path`. The path is only checked for shape here; all
 * file system work happens in stf_writer_commit.
 */
int stf_writer_new(stf_writer **out, const char *path, const stf_write_opts *opts,
                   stf_err *err)
{
    *out = NULL;
    if (!path || !*path) return stf__err(err, STF_EINVAL, "writer: empty output path");
    stf_write_opts o;
    stf_write_opts_init(&o);
    if (opts) o = *opts;
    size_t len = strlen(path);
    if (o.max_shard_size && (len < 12 || strcmp(path + len - 12, ".safetensors")))
        return stf__err(err, STF_EINVAL,
                        "%s: a sharded output path must end in \".safetensors\"", path);
    if (path[len - 1] == '/')
        return stf__err(err, STF_EINVAL, "%s: output path names a directory", path);
    stf_writer *w = stf__calloc(1, sizeof *w);
    if (!w) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    w->path = stf__strdup(path);
    if (!w->path) {
        stf__free(w);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    w->opts = o;
    *out = w;
    return 0;
}

/* Emit __metadata__ even when empty (the source had one). No-op on NULL. */
void stf_writer_keep_empty_meta(stf_writer *w)
{
    if (w) w->keep_meta = 1;
}

static int meta_push(meta_list *l, const char *k, size_t klen, const char *v, size_t vlen)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 8;
        stf_meta_entry *nv = stf__realloc(l->v, nc * sizeof *nv);
        if (!nv) return STF_ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    char *kk = stf__strndup(k, klen), *vv = stf__strndup(v, vlen);
    if (!kk || !vv) {
        stf__free(kk);
        stf__free(vv);
        return STF_ENOMEM;
    }
    l->v[l->n++] = (stf_meta_entry){ kk, klen, vv, vlen };
    return 0;
}

static void meta_free(meta_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        stf__free((void *)l->v[i].key);
        stf__free((void *)l->v[i].value);
    }
    stf__free(l->v);
    memset(l, 0, sizeof *l);
}

/*
 * Entries are appended; a later entry with the same key replaces an earlier
 * one when the header is built (the header text keeps the last of equal
 * keys), which keeps repeated sets O(1) each.
 */
int stf_writer_set_meta(stf_writer *w, const char *key, const char *value, stf_err *err)
{
    if (!w || !key || !value) return stf__err(err, STF_EINVAL, "writer: NULL metadata key/value");
    return stf__writer_set_meta_n(w, key, strlen(key), value, strlen(value), err);
}

/* As stf_writer_set_meta with explicit lengths, so values holding U+0000
 * (legal after unescaping) survive a rewrite. */
int stf__writer_set_meta_n(stf_writer *w, const char *key, size_t klen, const char *value,
                           size_t vlen, stf_err *err)
{
    if (!w || !key || !value) return stf__err(err, STF_EINVAL, "writer: NULL metadata key/value");
    if (w->done) return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
    if (!stf__utf8_valid(key, klen) || !stf__utf8_valid(value, vlen))
        return stf__err(err, STF_EINVAL, "%s: metadata key or value is not valid UTF-8", w->path);
    if (meta_push(&w->meta, key, klen, value, vlen))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    return 0;
}

/* Extra index "metadata" entry with raw JSON text; validated at commit. */
int stf_writer_set_index_meta(stf_writer *w, const char *key, const char *json_value,
                              stf_err *err)
{
    if (!w || !key || !json_value)
        return stf__err(err, STF_EINVAL, "writer: NULL index metadata key/value");
    if (w->done) return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
    if (!strcmp(key, "total_size"))
        return stf__err(err, STF_EINVAL, "%s: index total_size is computed, not set", w->path);
    if (meta_push(&w->imeta, key, strlen(key), json_value, strlen(json_value)))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    return 0;
}

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* Slot for `name`: the matching entry's slot, or the empty one to fill. */
static size_t slot_find(const stf_writer *w, const char *name, size_t len)
{
    size_t mask = w->nslots - 1, i = (size_t)name_hash(name, len) & mask;
    while (w->slots[i]) {
        const stf_tensor_info *t = &w->t[w->slots[i] - 1].info;
        if (t->name_len == len && !memcmp(t->name, name, len)) return i;
        i = (i + 1) & mask;
    }
    return i;
}

static int slots_grow(stf_writer *w)
{
    size_t ns = w->nslots ? w->nslots * 2 : 64;
    size_t *old = w->slots, oldn = w->nslots;
    w->slots = stf__calloc(ns, sizeof *w->slots);
    if (!w->slots) {
        w->slots = old;
        return STF_ENOMEM;
    }
    w->nslots = ns;
    for (size_t i = 0; i < oldn; i++) {
        if (!old[i]) continue;
        const stf_tensor_info *t = &w->t[old[i] - 1].info;
        w->slots[slot_find(w, t->name, t->name_len)] = old[i];
    }
    stf__free(old);
    return 0;
}

static int src_check(const stf_writer *w, const char *name, uint64_t nbytes,
                     const stf_tensor_src *src, stf_err *err)
{
    if (!src) return stf__err(err, STF_EINVAL, "%s: tensor '%s': no data source", w->path, name);
    switch (src->kind) {
    case STF_SRC_MEM:
        if (!src->mem && nbytes)
            return stf__err(err, STF_EINVAL, "%s: tensor '%s': NULL memory source", w->path,
                            name);
        return 0;
    case STF_SRC_CKPT: {
        if (!src->ckpt || src->idx >= stf_ckpt_tensor_count(src->ckpt))
            return stf__err(err, STF_EINVAL, "%s: tensor '%s': bad checkpoint source", w->path,
                            name);
        const stf_tensor_info *s = stf_ckpt_tensor(src->ckpt, src->idx);
        if (s->nbytes != nbytes)
            return stf__err(err, STF_EINVAL,
                            "%s: tensor '%s': source tensor '%s' has %llu bytes, the declared "
                            "dtype and shape need %llu",
                            w->path, name, s->name, (unsigned long long)s->nbytes,
                            (unsigned long long)nbytes);
        return 0;
    }
    case STF_SRC_FN:
        if (!src->fn)
            return stf__err(err, STF_EINVAL, "%s: tensor '%s': NULL producer", w->path, name);
        return 0;
    default:
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': unknown source kind", w->path, name);
    }
}

/*
 * Add a tensor (contract in container.h): size from dtype and shape, name
 * unique, UTF-8 and not "__metadata__", source checked against the size.
 */
int stf_writer_add(stf_writer *w, const char *name, stf_dtype dtype, unsigned rank,
                   const uint64_t *shape, const stf_tensor_src *src, stf_err *err)
{
    if (!w || !name) return stf__err(err, STF_EINVAL, "writer: NULL tensor name");
    if (w->done) return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
    size_t len = strlen(name);
    if (!len) return stf__err(err, STF_EINVAL, "%s: empty tensor name", w->path);
    if (!strcmp(name, "__metadata__"))
        return stf__err_rule(err, STF_EINVAL, "S14", 0, 0,
                             "%s: a tensor cannot be named '__metadata__' (upstream #849)",
                             w->path);
    if (!stf__utf8_valid(name, len))
        return stf__err(err, STF_EINVAL, "%s: tensor name is not valid UTF-8", w->path);
    if ((unsigned)dtype >= STF_DTYPE_COUNT)
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': invalid dtype %d", w->path, name,
                        (int)dtype);
    if (rank > STF_MAX_RANK_HARD || (rank && !shape))
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': invalid rank %u", w->path, name,
                        rank);
    uint64_t nelem = 1, nbytes = 0;
    for (unsigned d = 0; d < rank; d++)
        if (stf__mul_u64(&nelem, nelem, shape[d]))
            return stf__err_rule(err, STF_EINVAL, "S16", 0, 0,
                                 "%s: tensor '%s': element count overflows u64", w->path, name);
    int rc = stf_dtype_nbytes(&nbytes, dtype, nelem, err);
    if (rc) {
        /* A size the dtype cannot express is the caller's mistake here. */
        stf__err_prefix(err, "%s: tensor '%s': ", w->path, name);
        if (err) err->code = STF_EINVAL;
        return STF_EINVAL;
    }
    if ((rc = src_check(w, name, nbytes, src, err))) return rc;
    if (w->nslots && w->slots[slot_find(w, name, len)])
        return stf__err_rule(err, STF_EINVAL, "S13", 0, 0, "%s: duplicate tensor name '%s'",
                             w->path, name);
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 16;
        wtensor *nt = stf__realloc(w->t, nc * sizeof *nt);
        if (!nt) return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
        w->t = nt;
        w->cap = nc;
    }
    if ((w->n + 1) * 2 > w->nslots && slots_grow(w))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    char *nm = stf__strndup(name, len);
    uint64_t *sh = rank ? stf__calloc(rank, sizeof *sh) : NULL;
    if (!nm || (rank && !sh)) {
        stf__free(nm);
        stf__free(sh);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    }
    if (rank) memcpy(sh, shape, rank * sizeof *sh);
    wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->info.name = nm;
    t->info.name_len = len;
    t->info.dtype = dtype;
    t->info.rank = rank;
    t->info.shape = sh;
    t->info.nelem = nelem;
    t->info.nbytes = nbytes;
    t->src = *src;
    w->n++;
    w->slots[slot_find(w, nm, len)] = w->n;
    return 0;
}

/* ------------------------------------------------------------- commit */

static int wt_cmp(const void *pa, const void *pb)
{
    const wtensor *a = pa, *b = pb;
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

static int write_tensor(stf__sink *sk, const wtensor *t, stage *st, stf_err *err)
{
    const stf_tensor_src *src = &t->src;
    uint64_t len = t->info.nbytes;
    int rc = 0;
    if (!len) return 0;
    if (src->kind == STF_SRC_MEM) return stf__sink_write(sk, src->mem, (size_t)len, err);
    if (src->kind == STF_SRC_CKPT) {
        /* Verbatim copies go file to file: copy_file_range lets the kernel
         * (or a reflinking file system) move the bytes without our pages. */
        const stf__source *s = NULL;
        uint64_t foff = 0;
        if (!stf__ckpt_tensor_source(src->ckpt, src->idx, &s, &foff, NULL) && s &&
            stf__source_fd(s) >= 0)
            return stf__sink_copy_fd(sk, stf__source_fd(s), foff, len, stf__source_path(s), err);
        const void *p = stf_ckpt_tensor_data(src->ckpt, src->idx);
        if (p) return stf__sink_write(sk, p, (size_t)len, err);
    }
    if ((rc = stage_get(st, len, sk->final_path, err))) return rc;
    for (uint64_t off = 0; off < len;) {
        size_t k = len - off < st->cap ? (size_t)(len - off) : st->cap;
        if (src->kind == STF_SRC_CKPT) rc = stf_ckpt_read(src->ckpt, src->idx, off, st->buf, k, err);
        else rc = src->fn(src->ud, st->buf, off, k, err);
        if (rc) return stf__err_prefix(err, "%s: tensor '%s' at byte %llu: ", sk->final_path,
                                       t->info.name, (unsigned long long)off);
        if ((rc = stf__sink_write(sk, st->buf, k, err))) return rc;
        off += k;
    }
    return 0;
}

/* Write one complete file for tensors t[0..n) (already in writer order) to
 * the finished-but-unpublished sink `sk`. */
static int write_file(stf_writer *w, stf__sink *sk, const char *path, wtensor *t, size_t n,
                      stage *st, stf_err *err)
{
    int rc = 0;
    stf_buf hdr;
    stf__buf_init(&hdr);
    stf_tensor_info *info = stf__calloc(n ? n : 1, sizeof *info);
    if (!info) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < n; i++) info[i] = t[i].info;
    if ((rc = stf__canon_order(info, n, err))) goto done;
    if ((rc = stf__canon_header(&hdr, info, n, w->meta.v, w->meta.n, w->keep_meta, err))) {
        stf__err_prefix(err, "%s: ", path);
        goto done;
    }
    unsigned char le[8];
    uint64_t hn = hdr.len;
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hn >> (8 * i));
    if ((rc = stf__sink_open(sk, path, &w->opts, err))) goto done;
    if ((rc = stf__sink_write(sk, le, 8, err))) goto done;
    if ((rc = stf__sink_write(sk, hdr.data, hdr.len, err))) goto done;
    for (size_t i = 0; i < n; i++)
        if ((rc = write_tensor(sk, &t[i], st, err))) goto done;
    rc = stf__sink_finish(sk, err);
done:
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

static int write_index(stf_writer *w, stf__sink *sk, const stf__shard_plan *plan,
                       char **files, stf_err *err)
{
    int rc = 0;
    stf_buf txt, ipath;
    stf__buf_init(&txt);
    stf__buf_init(&ipath);
    stf_tensor_info *info = stf__calloc(w->n ? w->n : 1, sizeof *info);
    if (!info || stf__buf_put(&ipath, w->path, strlen(w->path)) ||
        stf__buf_puts(&ipath, ".index.json")) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
        goto done;
    }
    for (size_t i = 0; i < w->n; i++) info[i] = w->t[i].info;
    if ((rc = stf__index_text(&txt, info, w->n, plan, files, w->imeta.v, w->imeta.n, err))) {
        stf__err_prefix(err, "%s: ", ipath.data);
        goto done;
    }
    if ((rc = stf__sink_open(sk, ipath.data, &w->opts, err))) goto done;
    if ((rc = stf__sink_write(sk, txt.data, txt.len, err))) goto done;
    rc = stf__sink_finish(sk, err);
done:
    stf__free(info);
    stf__buf_free(&txt);
    stf__buf_free(&ipath);
    return rc;
}

/*
 * Every file is completed as a temp file first; only then are they renamed,
 * shards before the index, so a reader never sees an index naming missing
 * shards and a failure before the renames leaves nothing behind.
 */
int stf_writer_commit(stf_writer *w, stf_err *err)
{
    if (!w) return stf__err(err, STF_EINVAL, "writer: NULL");
    if (w->done) return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
    w->done = 1;
    int rc = 0;
    stage st = { NULL, 0 };
    stf__shard_plan plan = { NULL, 0 };
    stf__sink *sinks = NULL;
    char **files = NULL;
    size_t nsinks = 0;

    if (w->n > 1) qsort(w->t, w->n, sizeof *w->t, wt_cmp);
    stf_tensor_info *info = stf__calloc(w->n ? w->n : 1, sizeof *info);
    if (!info) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
        goto done;
    }
    for (size_t i = 0; i < w->n; i++) info[i] = w->t[i].info;
    rc = stf__shard_plan_make(&plan, info, w->n, w->opts.max_shard_size, err);
    stf__free(info);
    if (rc) goto done;

    size_t ns = plan.nshards;
    sinks = stf__calloc(ns + 1, sizeof *sinks);
    files = stf__calloc(ns, sizeof *files);
    if (!sinks || !files) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
        goto done;
    }
    for (size_t i = 0; i <= ns; i++) sinks[i].fd = -1;
    for (size_t s = 0; s < ns; s++) {
        size_t a = plan.first[s], b = s + 1 < ns ? plan.first[s + 1] : w->n;
        char *full = NULL;
        if (ns > 1) {
            files[s] = stf__shard_name(w->path, s, ns);
            full = files[s] ? join_dir(w->path, files[s]) : NULL;
        } else full = stf__strdup(w->path);
        if (!full) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
            goto done;
        }
        nsinks = s + 1;
        rc = write_file(w, &sinks[s], full, w->t + a, b - a, &st, err);
        stf__free(full);
        if (rc) goto done;
    }
    if (ns > 1) {
        nsinks = ns + 1;
        if ((rc = write_index(w, &sinks[ns], &plan, files, err))) goto done;
    }
    for (size_t s = 0; s < nsinks; s++)
        if ((rc = stf__sink_publish(&sinks[s], err))) goto done;
done:
    for (size_t s = 0; s < nsinks; s++) stf__sink_abort(&sinks[s]);
    if (files)
        for (size_t s = 0; s < plan.nshards; s++) stf__free(files[s]);
    stf__free(files);
    stf__free(sinks);
    stf__shard_plan_free(&plan);
    stf__free(st.buf);
    return rc;
}

/* Free the writer; temp files never outlive commit, so none remain. */
void stf_writer_free(stf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) {
        stf__free((void *)w->t[i].info.name);
        stf__free((void *)w->t[i].info.shape);
    }
    stf__free(w->t);
    stf__free(w->slots);
    meta_free(&w->meta);
    meta_free(&w->imeta);
    stf__free(w->path);
    stf__free(w);
}
