/*
 * The canonical writer (lib/README.md, Canonical form and Sharded
 * checkpoints), first half: collecting
 * tensors, their I7 groups and metadata. writer_prepare.c lays the files
 * out, writes them through temp files and renames them on commit.
 */
#include <stdlib.h>
#include <string.h>

#include "container/writer_state.h"

typedef stf__wtensor wtensor;
typedef stf__meta_list meta_list;

/* Changes after prepare would move bytes already written to the temp files. */
static int refuse_changes(const stf_writer *w, stf_err *err)
{
    if (w->state == STF__W_PREPARED)
        return stf__err(err, STF_EINVAL, "%s: layout already fixed by prepare", w->path);
    return stf__err(err, STF_EINVAL, "%s: writer already committed", w->path);
}

/* Defaults: one output file, fsync on (contract in container.h). */
void stf_write_opts_init_version(stf_write_opts *o, unsigned version)
{
    if (o)
        stf__opts_reset_v(o, sizeof *o, offsetof(stf_write_opts, progress), version,
                          STF_WRITE_OPTS_VERSION);
}

/* The caller's write options in the newest layout (contract in
 * container_internal.h). */
void stf__write_opts_upgrade(stf_write_opts *dst, const stf_write_opts *src)
{
    stf_write_opts_init(dst);
    if (src)
        stf__opts_take(dst, src, sizeof *dst, offsetof(stf_write_opts, progress), src->version);
}

/*
 * Create a writer for `path`. The path is only checked for shape here; all
 * file system work happens in stf_writer_prepare/commit.
 */
int stf_writer_new(stf_writer **out, const char *path, const stf_write_opts *opts,
                   stf_err *err)
{
    *out = NULL;
    stf_write_opts o;
    stf_write_opts_init(&o);
    if (opts && stf__opts_version(err, opts->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    stf__write_opts_upgrade(&o, opts);
    int rc = stf_output_check(path, &o, err);
    if (rc) return rc;
    stf_writer *w = stf__calloc(1, sizeof *w);
    if (!w) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    w->lock.fd = -1;
    w->path = stf__strdup(path);
    if (!w->path) {
        stf__free(w);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    w->opts = o;
    if ((rc = stf__out_inputs_make(&w->inputs, o.input, err)) ||
        (rc = stf__out_lock_take(&w->lock, path, o.no_wait, err))) {
        stf_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* A writer into memory files (contract in writer_internal.h). */
int stf__writer_new_mem(stf_writer **out, const char *path, const stf_write_opts *opts,
                        int compare, stf_err *err)
{
    *out = NULL;
    stf_write_opts o;
    stf_write_opts_init(&o);
    if (opts && stf__opts_version(err, opts->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    if (opts) o = *opts;
    o.input = NULL;
    stf_writer *w = stf__calloc(1, sizeof *w);
    if (!w) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    w->lock.fd = -1;
    w->memory = 1;
    w->compare = compare;
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

/* Files read back after commit (contract in writer_internal.h). */
void stf__writer_keep_cache(stf_writer *w)
{
    if (w) w->keep_cache = 1;
}

/* Stop prepare when asked (contract in writer_internal.h). */
void stf__writer_set_cancel(stf_writer *w, const volatile int *cancel)
{
    if (w) w->cancel = cancel;
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
    return stf_writer_set_meta_n(w, key, strlen(key), value, strlen(value), err);
}

/* As stf_writer_set_meta with explicit lengths, so keys and values holding
 * U+0000 (legal after unescaping) survive a rewrite (contract in container.h). */
int stf_writer_set_meta_n(stf_writer *w, const char *key, size_t klen, const char *value,
                           size_t vlen, stf_err *err)
{
    if (!w || !key || !value) return stf__err(err, STF_EINVAL, "writer: NULL metadata key/value");
    if (w->state != STF__W_OPEN) return refuse_changes(w, err);
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
    if (w->state != STF__W_OPEN) return refuse_changes(w, err);
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

/* `name` is the tensor's rendered name (stf__name_render). */
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
        char from[STF__NAME_SHOWN];
        if (s->nbytes != nbytes)
            return stf__err(err, STF_EINVAL,
                            "%s: tensor '%s': source tensor '%s' has %llu bytes, the declared "
                            "dtype and shape need %llu",
                            w->path, name, stf__name_render(from, sizeof from, s->name, s->name_len),
                            (unsigned long long)s->nbytes, (unsigned long long)nbytes);
        return 0;
    }
    case STF_SRC_FN:
        if (!src->fn)
            return stf__err(err, STF_EINVAL, "%s: tensor '%s': NULL producer", w->path, name);
        return 0;
    case STF_SRC_DEFERRED:
        return 0;
    default:
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': unknown source kind", w->path, name);
    }
}

/* The C-string form of stf_writer_add_n (contract in container.h). */
int stf_writer_add(stf_writer *w, const char *name, stf_dtype dtype, unsigned rank,
                   const uint64_t *shape, const stf_tensor_src *src, stf_err *err)
{
    if (!w || !name) return stf__err(err, STF_EINVAL, "writer: NULL tensor name");
    return stf_writer_add_n(w, name, strlen(name), dtype, rank, shape, src, err);
}

/*
 * Add a tensor (contract in container.h): size from dtype and shape, name
 * unique by its bytes, UTF-8 and not "__metadata__", source checked against
 * the size. Any other name, "" and names holding U+0000 included, is
 * written as given, as the reference writer does.
 */
int stf_writer_add_n(stf_writer *w, const char *name, size_t len, stf_dtype dtype,
                     unsigned rank, const uint64_t *shape, const stf_tensor_src *src,
                     stf_err *err)
{
    char shown[STF__NAME_SHOWN];
    if (!w || !name) return stf__err(err, STF_EINVAL, "writer: NULL tensor name");
    if (w->state != STF__W_OPEN) return refuse_changes(w, err);
    /* A name the format forbids comes from the data being written (an
     * input's tensor, a recipe's rename), so it is a format error. */
    if (len == 12 && !memcmp(name, "__metadata__", 12))
        return stf__err_rule(err, STF_EFORMAT, "S14", 0, 0,
                             "%s: a tensor cannot be named '__metadata__' (upstream #849)",
                             w->path);
    stf__name_render(shown, sizeof shown, name, len);
    if (!stf__utf8_valid(name, len))
        return stf__err(err, STF_EINVAL, "%s: tensor name '%s' is not valid UTF-8", w->path,
                        shown);
    if ((unsigned)dtype >= STF_DTYPE_COUNT)
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': invalid dtype %d", w->path, shown,
                        (int)dtype);
    if (rank > STF_MAX_RANK_HARD || (rank && !shape))
        return stf__err(err, STF_EINVAL, "%s: tensor '%s': invalid rank %u", w->path, shown,
                        rank);
    uint64_t nelem = 1, nbytes = 0;
    for (unsigned d = 0; d < rank; d++)
        if (stf__mul_u64(&nelem, nelem, shape[d]))
            return stf__err_rule(err, STF_EINVAL, "S16", 0, 0,
                                 "%s: tensor '%s': element count overflows u64", w->path, shown);
    int rc = stf_dtype_nbytes(&nbytes, dtype, nelem, err);
    if (rc) {
        /* A size the dtype cannot express is the caller's mistake here. */
        stf__err_prefix(err, "%s: tensor '%s': ", w->path, shown);
        if (err) err->code = STF_EINVAL;
        return STF_EINVAL;
    }
    if ((rc = src_check(w, shown, nbytes, src, err))) return rc;
    if (w->nslots && w->slots[slot_find(w, name, len)])
        return stf__err_rule(err, STF_EFORMAT, "S13", 0, 0, "%s: duplicate tensor name '%s'",
                             w->path, shown);
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

/* The C-string form of stf_writer_set_group_n (contract in container.h). */
int stf_writer_set_group(stf_writer *w, const char *name, const char *group, stf_err *err)
{
    if (!w || !name) return stf__err(err, STF_EINVAL, "writer: NULL tensor name");
    return stf_writer_set_group_n(w, name, strlen(name), group, group ? strlen(group) : 0, err);
}

/* Record the I7 group of an added tensor (contract in container.h). */
int stf_writer_set_group_n(stf_writer *w, const char *name, size_t len, const char *group,
                           size_t glen, stf_err *err)
{
    if (!w || !name) return stf__err(err, STF_EINVAL, "writer: NULL tensor name");
    if (w->state != STF__W_OPEN) return refuse_changes(w, err);
    size_t id;
    if (stf_writer_tensor_id_n(&id, w, name, len)) {
        char shown[STF__NAME_SHOWN];
        return stf__err(err, STF_EINVAL, "%s: set_group: no tensor named '%s' was added",
                        w->path, stf__name_render(shown, sizeof shown, name, len));
    }
    char *g = NULL;
    if (!group) glen = 0;
    else if (!(g = stf__strndup(group, glen)))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    stf__free(w->t[id].group);
    w->t[id].group = g;
    w->t[id].group_len = glen;
    return 0;
}

/* The C-string form of stf_writer_tensor_id_n (contract in container.h). */
int stf_writer_tensor_id(size_t *id, const stf_writer *w, const char *name)
{
    return name ? stf_writer_tensor_id_n(id, w, name, strlen(name)) : STF_ENOTFOUND;
}

/* Position in add order, which prepare never changes (contract in container.h). */
int stf_writer_tensor_id_n(size_t *id, const stf_writer *w, const char *name, size_t len)
{
    if (!w || !name || !w->nslots) return STF_ENOTFOUND;
    size_t slot = slot_find(w, name, len);
    if (!w->slots[slot]) return STF_ENOTFOUND;
    *id = w->slots[slot] - 1;
    return 0;
}

/* Free the writer; an uncommitted writer's temp files are removed. */
void stf_writer_free(stf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->nfiles; i++) {
        stf__sink_abort(&w->sinks[i]);
        stf__free(w->finals[i]);
    }
    stf__free(w->sinks);
    stf__free(w->finals);
    /* After the temp files are gone, so a waiting writer finds none. */
    stf__out_lock_release(&w->lock);
    stf__out_inputs_free(&w->inputs);
    stf__free((void *)w->filled);
    for (size_t i = 0; i < w->n; i++) {
        stf__free((void *)w->t[i].info.name);
        stf__free((void *)w->t[i].info.shape);
        stf__free(w->t[i].group);
    }
    stf__free(w->t);
    stf__free(w->slots);
    stf__free(w->hash_at);
    stf__free(w->data_at);
    meta_free(&w->meta);
    meta_free(&w->imeta);
    stf__free(w->path);
    stf__free(w);
}
