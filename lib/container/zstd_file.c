/*
 * stf_zstd_compress and stf_zstd_decompress: whole files and sharded
 * checkpoints between their uncompressed and compressed forms (stfix(1),
 * COMPRESSED FILES). The bytes of each file are kept exactly; an index is
 * rewritten to name the new shard files. Every output goes through a temp
 * file and the output guard's checks, shards are published before the
 * index, and a failure leaves nothing at the output paths.
 */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/index.h"
#include "container/out_guard.h"
#include "container/writer_internal.h"
#include "container/zstd_pack.h"

typedef struct job {
    char *in, *out; /* paths, owned */
    stf__file_stamp stamp; /* the input as opened */
} job;

typedef struct files {
    job *v;
    size_t n;
    stf__sink *sinks; /* n + 1: the last one for the index */
    struct stat *ins; /* the inputs, for the guard */
    size_t nins;
} files;

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !memcmp(s + a - b, suf, b);
}

static char *cat3(const char *a, size_t alen, const char *b, const char *c)
{
    stf_buf x;
    stf__buf_init(&x);
    if (stf__buf_put(&x, a, alen) || stf__buf_puts(&x, b) || stf__buf_puts(&x, c)) {
        stf__buf_free(&x);
        return NULL;
    }
    return x.data;
}

static size_t dir_len(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? (size_t)(s - p + 1) : 0;
}

/* An output may not be any input, and must be a name the guard allows,
 * short enough for its temporary file. */
static int guard(const files *f, const char *out, stf_err *err)
{
    int rc = stf__out_check_length(out, err);
    if (rc) return rc;
    struct stat st;
    if (stat(out, &st) == 0)
        for (size_t i = 0; i < f->nins; i++)
            if (st.st_dev == f->ins[i].st_dev && st.st_ino == f->ins[i].st_ino)
                return stf__err(err, STF_EINVAL,
                                "%s: the output would overwrite an input file; choose another "
                                "output path",
                                out);
    return stf__out_check_name(out, 0, NULL, err);
}

/* The guard of every output name, then, without `replace`, that nothing is
 * at any of them (a file, a link, even one with the very bytes the output
 * would have): the refusals --force cannot lift come first. */
static int guard_all(const files *f, size_t nsinks, const char *out, int replace, stf_err *err)
{
    int rc = 0;
    struct stat st;
    for (size_t i = 0; !rc && i < nsinks; i++) rc = guard(f, i < f->n ? f->v[i].out : out, err);
    for (size_t i = 0; !rc && !replace && i < nsinks; i++) {
        const char *p = i < f->n ? f->v[i].out : out;
        if (lstat(p, &st) == 0)
            rc = stf__err(err, STF_EINVAL, "%s: the output exists; give --force to replace it",
                          p);
    }
    return rc;
}

static int sink_out(void *ud, const void *p, size_t n, stf_err *err)
{
    return stf__sink_write(ud, p, n, err);
}

/* The tensors of the safetensors file `path` as spans, for the frame plan. */
static int spans_of(stf__zspan **out, size_t *n, const char *path, stf_err *err)
{
    stf_ckpt *c = NULL;
    *out = NULL;
    *n = 0;
    int rc = stf_ckpt_open(&c, path, NULL, err);
    if (rc) return rc;
    size_t nt = stf_ckpt_tensor_count(c);
    stf__zspan *s = stf__calloc(nt ? nt : 1, sizeof *s);
    if (!s) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    for (size_t i = 0; s && i < nt; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        s[i] = (stf__zspan){ 8 + stf_ckpt_shard_header_len(c, 0) + t->begin, t->nbytes,
                             t->dtype == STF_BF16 || t->dtype == STF_F16 };
    }
    stf_ckpt_free(c);
    *out = s;
    *n = s ? nt : 0;
    return rc;
}

static int compress_one(stf__sink *sk, job *j, const stf_write_opts *o, stf_err *err)
{
    stf__zspan *sp = NULL;
    size_t ns = 0;
    int rc = spans_of(&sp, &ns, j->in, err);
    int fd = rc ? -1 : open(j->in, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (!rc && (fd < 0 || fstat(fd, &st) != 0))
        rc = stf__err(err, STF_EIO, "%s: cannot open: %s", j->in, strerror(errno));
    if (!rc) stf__file_stamp_take(&j->stamp, &st);
    stf__zpack_opts po = stf__zpack_opts_of(o);
    if (!rc) rc = stf__sink_open(sk, j->out, err);
    if (!rc) rc = stf__zstd_pack(sk, fd, j->in, (uint64_t)st.st_size, sp, ns, &po, err);
    if (!rc) rc = stf__sink_finish(sk, err);
    if (!rc && o->zstd_verify)
        rc = stf__zstd_verify(sk->tmp_path, j->out, fd, (uint64_t)st.st_size, err);
    if (fd >= 0) close(fd);
    stf__free(sp);
    return rc;
}

static int decompress_one(stf__sink *sk, job *j, stf_err *err)
{
    /* Without blocking: a FIFO would hold open() until a writer came. A
     * missing file is the user's to correct, as for a checkpoint; anything
     * but a regular file cannot be read as one. */
    int fd = open(j->in, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc = 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        rc = stf__err(err, errno == ENOENT ? STF_ENOTFOUND : STF_EIO, "%s: cannot open: %s",
                      j->in, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = stf__err(err, STF_EIO, "%s: cannot read: %s", j->in,
                      S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    if (!rc) stf__file_stamp_take(&j->stamp, &st);
    if (!rc) rc = stf__sink_open(sk, j->out, err);
    if (!rc) rc = stf__zstd_unpack(fd, j->in, (uint64_t)st.st_size, sink_out, sk, err);
    if (!rc) rc = stf__sink_finish(sk, err);
    if (fd >= 0) close(fd);
    return rc;
}

static const char *zsuffix_of(const char *name)
{
    if (ends_with(name, ".zst")) return ".zst";
    if (ends_with(name, ".stz")) return ".stz";
    return NULL;
}

/* The new index for the jobs' shard names: weight_map from `ix` with each
 * file renamed to its job's output name; metadata kept (total_size too). */
static int index_text(stf_buf *txt, const stf__index *ix, const files *f, stf_err *err)
{
    stf_tensor_info *t = stf__calloc(ix->nmap ? ix->nmap : 1, sizeof *t);
    size_t *first = stf__calloc(ix->nfiles ? ix->nfiles : 1, sizeof *first);
    char **names = stf__calloc(ix->nfiles ? ix->nfiles : 1, sizeof *names);
    int rc = 0;
    if (!t || !first || !names) {
        rc = stf__err(err, STF_ENOMEM, "index: out of memory");
        goto done;
    }
    size_t k = 0;
    for (size_t s = 0; s < ix->nfiles; s++) {
        first[s] = k;
        const char *o = f->v[s].out;
        names[s] = (char *)o + dir_len(o);
        for (size_t i = 0; i < ix->nmap; i++)
            if (ix->map[i].file == s) {
                t[k].name = ix->map[i].name;
                t[k++].name_len = ix->map[i].name_len;
            }
    }
    /* The writer recomputes total_size from the tensors' sizes: the
     * shards are not opened here, so the old total stands in for them. */
    if (k && ix->has_total && ix->total_ok) t[0].nbytes = ix->total_size;
    stf__shard_plan plan = { first, ix->nfiles };
    rc = stf__index_text(txt, t, k, &plan, names, ix->meta, ix->nmeta, err);
done:
    stf__free(t);
    stf__free(first);
    stf__free(names);
    return rc;
}

/* The jobs of an index: each shard beside it to its renamed form. */
static int index_jobs(files *f, const stf__index *ix, const char *in, const char *out,
                      int compress, const char *zs, stf_err *err)
{
    f->v = stf__calloc(ix->nfiles ? ix->nfiles : 1, sizeof *f->v);
    if (!f->v) return stf__err(err, STF_ENOMEM, "%s: out of memory", in);
    for (size_t s = 0; s < ix->nfiles; s++) {
        const char *name = ix->files[s], *fz = zsuffix_of(name);
        if (compress && fz)
            return stf__err(err, STF_EINVAL, "%s: shard '%s' is already compressed", in, name);
        if (!compress && !fz)
            return stf__err(err, STF_EINVAL, "%s: shard '%s' is not a .zst or .stz file", in,
                            name);
        size_t nl = compress ? strlen(name) : strlen(name) - 4;
        char *shard = stf__strndup(name, nl);
        f->v[s].in = cat3(in, dir_len(in), name, "");
        f->v[s].out = shard ? cat3(out, dir_len(out), shard, compress ? zs : "") : NULL;
        stf__free(shard);
        f->n = s + 1;
        if (!f->v[s].in || !f->v[s].out) return stf__err(err, STF_ENOMEM, "%s: out of memory", in);
    }
    return 0;
}

static void files_free(files *f, size_t nsinks)
{
    for (size_t i = 0; f->sinks && i < nsinks; i++) stf__sink_abort(&f->sinks[i]);
    for (size_t i = 0; f->v && i < f->n; i++) {
        stf__free(f->v[i].in);
        stf__free(f->v[i].out);
    }
    stf__free(f->v);
    stf__free(f->sinks);
    stf__free(f->ins);
}

static int run(const char *in, const char *out, const stf_write_opts *o, int compress,
               int replace, stf_err *err)
{
    files f;
    memset(&f, 0, sizeof f);
    stf__index *ix = NULL;
    stf__out_lock lock = { -1 };
    const char *zs = compress ? (o->zstd_grouped ? ".stz" : ".zst") : NULL;
    int is_index = ends_with(in, ".index.json"), rc = 0;
    stf_buf itxt;
    stf__buf_init(&itxt);
    if (is_index) {
        if (!ends_with(out, ".index.json"))
            return stf__err(err, STF_EINVAL, "%s: the output of an index must be an index "
                            "(a name ending in .index.json)", out);
        if ((rc = stf__index_load(&ix, in, NULL, err))) return rc;
        rc = index_jobs(&f, ix, in, out, compress, zs, err);
    } else if (compress && zsuffix_of(in)) {
        return stf__err(err, STF_EINVAL, "%s: already compressed", in);
    } else {
        f.v = stf__calloc(1, sizeof *f.v);
        if (f.v) {
            f.n = 1;
            f.v[0].in = stf__strdup(in);
            f.v[0].out = stf__strdup(out);
        }
        if (!f.v || !f.v[0].in || !f.v[0].out) rc = stf__err(err, STF_ENOMEM, "out of memory");
    }
    size_t nsinks = f.n + (is_index ? 1 : 0);
    f.sinks = rc ? NULL : stf__calloc(nsinks, sizeof *f.sinks);
    f.ins = rc ? NULL : stf__calloc(nsinks, sizeof *f.ins);
    if (!rc && (!f.sinks || !f.ins)) rc = stf__err(err, STF_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < nsinks; i++) {
        f.sinks[i].fd = -1;
        const char *p = i < f.n ? f.v[i].in : in;
        if (stat(p, &f.ins[f.nins]) == 0) f.nins++;
    }
    if (!rc) rc = guard_all(&f, nsinks, out, replace, err);
    if (!rc) rc = stf__out_lock_take(&lock, out, o->no_wait, err);
    for (size_t i = 0; !rc && i < f.n; i++)
        rc = compress ? compress_one(&f.sinks[i], &f.v[i], o, err)
                      : decompress_one(&f.sinks[i], &f.v[i], err);
    if (!rc && is_index) {
        rc = index_text(&itxt, ix, &f, err);
        if (!rc) rc = stf__sink_open(&f.sinks[f.n], out, err);
        if (!rc) rc = stf__sink_write(&f.sinks[f.n], itxt.data, itxt.len, err);
        if (!rc) rc = stf__sink_finish(&f.sinks[f.n], err);
    }
    /* Every input still as it was opened, and the guard again, right
     * before the renames; shards before the index. */
    for (size_t i = 0; !rc && i < f.n; i++)
        rc = stf__file_stamp_check(&f.v[i].stamp, f.v[i].in, err);
    if (!rc && ix && ix->has_stamp) rc = stf__file_stamp_check(&ix->stamp, in, err);
    if (!rc) rc = guard_all(&f, nsinks, out, replace, err);
    for (size_t i = 0; !rc && i < nsinks; i++) rc = stf__sink_publish(&f.sinks[i], err);
    files_free(&f, f.sinks ? nsinks : 0);
    stf__out_lock_release(&lock);
    stf__buf_free(&itxt);
    if (ix) stf__index_free(ix);
    return rc;
}

/* Compress a file or an index's shards (contract in experimental/container.h). */
int stf_zstd_compress(const char *in, const char *out, const stf_write_opts *o, int replace,
                      stf_err *err)
{
    if (!in || !out || !o) return stf__err(err, STF_EINVAL, "compress: NULL argument");
    if (stf__opts_version(err, o->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    if (!o->zstd_level) return stf__err(err, STF_EINVAL, "compress: no zstd level given");
    stf_write_opts g = *o;
    g.max_shard_size = 0;
    /* The index keeps its name; the guard's suffix rule is for the shards. */
    int rc = ends_with(in, ".index.json") ? 0 : stf_output_check(out, &g, err);
    return rc ? rc : run(in, out, o, 1, replace, err);
}

/* Restore a file or an index's shards (contract in experimental/container.h). */
int stf_zstd_decompress(const char *in, const char *out, const stf_write_opts *o, int replace,
                        stf_err *err)
{
    if (!in || !out) return stf__err(err, STF_EINVAL, "decompress: NULL argument");
    stf_write_opts d;
    stf_write_opts_init(&d);
    if (o && stf__opts_version(err, o->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    if (o) d.no_wait = o->no_wait;
    return run(in, out, &d, 0, replace, err);
}
