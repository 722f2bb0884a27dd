/*
 * Where a batch may write, decided before any work: the output directory
 * against the input trees, each output against the output directory and
 * the output guard (with every file of every checkpoint of the batch as the
 * inputs), and the report against the inputs and the outputs.
 *
 * Paths are compared resolved. The part of a path that exists is resolved
 * through realpath, so symlinks and ".." are seen through; the part that
 * does not exist yet (the directories a batch makes) holds no symlink, so
 * it is taken as spelt, "." dropped and ".." taking off the name before
 * it; a ".." that climbs back into existing directories resolves again
 * from there, as the kernel will once the directories are made. An
 * output's own name is not followed: a symlink there is replaced itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/batch_internal.h"

/* A name an output may take, resolved. */
typedef struct out_name {
    char *path;
    int writer;         /* a writer's output: its index and shard names too */
    stf_write_opts wo;  /* writer: the options that name them */
    const char *input;  /* the checkpoint it is written for (borrowed) */
} out_name;

struct stf_batch_paths {
    char *outdir;             /* resolved */
    const char *outdir_given; /* borrowed */
    const char *manifest;     /* borrowed, may be NULL */
    int allow_outside;
    stf__batch_file *files;   /* every file of every checkpoint */
    size_t nfiles;
    const char **paths;       /* files[i].path, for ids */
    stf__out_inputs ids;
    out_name *names;
    size_t nnames;
};

/* The parent of a resolved absolute path, in place ("/" stays "/"). */
static void cut_last(char *p)
{
    char *s = strrchr(p, '/');
    if (s == p) p[1] = '\0';
    else if (s) *s = '\0';
}

/*
 * `path` resolved as the file header says, absolute; with `keep_last`
 * its last name is appended as spelt (not followed), unless it is "." or
 * "..". NULL when out of memory or the working directory cannot be had.
 */
static char *resolve(const char *path, int keep_last)
{
    stf_buf cur, lex;
    stf__buf_init(&cur);
    stf__buf_init(&lex);
    size_t lexdepth = 0;
    int bad = 0;
    if (path[0] == '/') {
        bad = stf__buf_puts(&cur, "/");
    } else {
        char *cwd = getcwd(NULL, 0);
        char *real = cwd ? realpath(cwd, NULL) : NULL;
        bad = !real || stf__buf_puts(&cur, real);
        free(real);
        free(cwd);
    }
    const char *p = path;
    while (!bad && *p) {
        while (*p == '/') p++;
        if (!*p) break;
        size_t n = strcspn(p, "/");
        int last = p[n] == '\0' || !p[n + strspn(p + n, "/")];
        int dot = n == 1 && p[0] == '.', dotdot = n == 2 && p[0] == '.' && p[1] == '.';
        if (dot) {
            /* nothing: the same directory */
        } else if (dotdot && lexdepth) {
            char *s = strrchr(lex.data, '/');
            *s = '\0';
            lex.len = (size_t)(s - lex.data);
            lexdepth--;
        } else if (dotdot) {
            cut_last(cur.data);
            cur.len = strlen(cur.data);
        } else if (lexdepth || (last && keep_last)) {
            bad = stf__buf_puts(&lex, "/") || stf__buf_put(&lex, p, n);
            lexdepth++;
        } else {
            stf_buf cand;
            stf__buf_init(&cand);
            bad = stf__buf_printf(&cand, "%s%s%.*s", cur.data,
                                  cur.len > 1 ? "/" : "", (int)n, p);
            char *real = bad ? NULL : realpath(cand.data, NULL);
            if (real) {
                cur.len = 0;
                bad = stf__buf_puts(&cur, real);
                free(real);
            } else if (!bad) {
                /* Not there (or not reachable): made later, as spelt. */
                bad = stf__buf_puts(&lex, "/") || stf__buf_put(&lex, p, n);
                lexdepth++;
            }
            stf__buf_free(&cand);
        }
        p += n;
    }
    if (!bad && lex.len)
        bad = cur.len == 1 ? stf__buf_put(&cur, lex.data + 1, lex.len - 1)
                           : stf__buf_put(&cur, lex.data, lex.len);
    stf__buf_free(&lex);
    if (bad) {
        stf__buf_free(&cur);
        return NULL;
    }
    return cur.data;
}

/* Whether resolved `child` lies strictly inside resolved directory `dir`. */
static int inside(const char *child, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1) return child[0] == '/' && child[1] != '\0';
    return !strncmp(child, dir, n) && child[n] == '/';
}

void stf_batch_paths_free(stf_batch_paths *bp)
{
    if (!bp) return;
    stf__out_inputs_free(&bp->ids);
    for (size_t i = 0; i < bp->nfiles; i++) stf__free(bp->files[i].path);
    for (size_t i = 0; i < bp->nnames; i++) stf__free(bp->names[i].path);
    stf__free(bp->files);
    stf__free(bp->paths);
    stf__free(bp->names);
    stf__free(bp->outdir);
    stf__free(bp);
}

static int oom(stf_err *err)
{
    return stf__err(err, STF_ENOMEM, "batch: out of memory");
}

/* A root directory inside the output directory: no output may land in it. */
static int root_in_outdir(const stf_batch_paths *bp, const stf_batch_list *all,
                          const char *root, const char *rroot, stf_err *err)
{
    for (size_t i = 0; i < all->n; i++) {
        char *o = stf_batch_output_path(&all->v[i], bp->outdir_given);
        char *ro = o ? resolve(o, 1) : NULL;
        int in = ro && inside(ro, rroot);
        int rc = 0;
        if (!ro) rc = oom(err);
        else if (in)
            rc = stf__err(err, STF_EINVAL,
                          "%s: the output directory holds the input directory '%s', and the "
                          "output '%s' of '%s' would be written inside it, where a later batch "
                          "would take it for an input; choose an output directory outside the "
                          "input tree",
                          bp->outdir_given, root, o, all->v[i].input);
        free(o);
        stf__free(ro);
        if (rc) return rc;
    }
    return 0;
}

/* The output directory against each root that is a directory. */
static int roots_check(const stf_batch_paths *bp, const stf_batch_list *all,
                       const char *const *roots, size_t nroots, stf_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < nroots && !rc; i++) {
        struct stat st;
        if (stat(roots[i], &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        char *r = resolve(roots[i], 0);
        if (!r) return oom(err);
        if (!strcmp(r, bp->outdir) || inside(bp->outdir, r))
            rc = stf__err(err, STF_EINVAL,
                          "%s: the output directory is %sthe input directory '%s'; choose an "
                          "output directory outside the input tree",
                          bp->outdir_given, strcmp(r, bp->outdir) ? "inside " : "", roots[i]);
        else if (inside(r, bp->outdir))
            rc = root_in_outdir(bp, all, roots[i], r, err);
        stf__free(r);
    }
    return rc;
}

/* Start the decisions (contract in stfix/experimental/pipeline.h). */
int stf_batch_paths_new(stf_batch_paths **out, const stf_batch_list *all, const char *outdir,
                        const char *const *roots, size_t nroots, const char *manifest,
                        int allow_outside, stf_err *err)
{
    *out = NULL;
    if (!all || !outdir || !*outdir)
        return stf__err(err, STF_EINVAL, "batch: no output directory");
    stf_batch_paths *bp = stf__calloc(1, sizeof *bp);
    if (!bp) return oom(err);
    bp->outdir_given = outdir;
    bp->manifest = manifest;
    bp->allow_outside = allow_outside;
    int rc = 0;
    if (!(bp->outdir = resolve(outdir, 0))) {
        rc = stf__err(err, STF_EIO, "%s: cannot resolve the output directory: %s", outdir,
                      strerror(errno ? errno : ENOMEM));
        goto done;
    }
    for (size_t i = 0; i < all->n && !rc; i++)
        if (stf__batch_item_files(&bp->files, &bp->nfiles, &all->v[i])) rc = oom(err);
    if (!rc && !(bp->paths = stf__calloc(bp->nfiles ? bp->nfiles : 1, sizeof *bp->paths)))
        rc = oom(err);
    for (size_t i = 0; !rc && i < bp->nfiles; i++) bp->paths[i] = bp->files[i].path;
    if (!rc) rc = stf__out_inputs_paths(&bp->ids, bp->paths, bp->nfiles, err);
    if (!rc) rc = roots_check(bp, all, roots, nroots, err);
done:
    if (rc) stf_batch_paths_free(bp);
    else *out = bp;
    return rc;
}

/* Record a name an output may take (resolved here). */
static int record(stf_batch_paths *bp, const char *path, const stf_write_opts *wo,
                  const char *input, stf_err *err)
{
    out_name *g = stf__realloc(bp->names, (bp->nnames + 1) * sizeof *g);
    if (!g) return oom(err);
    bp->names = g;
    out_name *n = &g[bp->nnames];
    memset(n, 0, sizeof *n);
    if (!(n->path = resolve(path, 1))) return oom(err);
    n->writer = wo != NULL;
    if (wo) n->wo = *wo;
    n->input = input;
    bp->nnames++;
    return 0;
}

/*
 * The output guard on `path` as spelt (for its message), then on its
 * resolved form `rp` (NULL: resolved here): a directory the batch has yet
 * to make hides what "missing/.." will name once it is made. With `wo` the
 * whole output check (stf__output_check_ids), else the check of one name.
 */
static int guard(const char *path, const char *rp, const stf_write_opts *wo,
                 const stf__out_inputs *ids, stf_err *err)
{
    int rc = wo ? stf__output_check_ids(path, wo, ids, err)
                : stf__out_check_name(path, 0, ids, err);
    char *own = rc || rp ? NULL : resolve(path, 1);
    if (!rc && !rp && !own) return oom(err);
    const char *r = rp ? rp : own;
    if (!rc && strcmp(r, path))
        rc = wo ? stf__output_check_ids(r, wo, ids, err) : stf__out_check_name(r, 0, ids, err);
    stf__free(own);
    return rc;
}

/* A manifest item's refusal names the manifest and line. */
static int refused(const stf_batch_paths *bp, const stf_batch_item *it, int rc, stf_err *err)
{
    if (rc && rc != STF_ENOMEM && it->line && bp->manifest)
        stf__err_prefix(err, "%s:%zu: ", bp->manifest, it->line);
    return rc;
}

/* The names --link-compliant puts links at, as stf_batch_run_item does:
 * out_path less the compressed suffix (and ".zst" again for a compressed
 * input); a sharded set's files by their names beside it. */
static int link_names(stf_batch_paths *bp, const stf_batch_item *it, const char *out_path,
                      const char *zs, stf_err *err)
{
    stf_buf l;
    stf__buf_init(&l);
    size_t n = strlen(out_path);
    if (zs && stf__ends_with(out_path, zs)) n -= strlen(zs);
    if (stf__buf_put(&l, out_path, n)) return oom(err);
    const char *slash = strrchr(l.data, '/');
    size_t dirlen = slash ? (size_t)(slash - l.data + 1) : 0;
    stf__batch_file *f = NULL;
    size_t nf = 0;
    int rc = stf__batch_item_files(&f, &nf, it) ? oom(err) : 0;
    for (size_t i = 0; !rc && i < (it->sharded ? nf : 1); i++) {
        stf_buf name;
        stf__buf_init(&name);
        const char *base = strrchr(f[i].path, '/');
        base = base ? base + 1 : f[i].path;
        int zst = !it->sharded && stf__ends_with(it->input, ".zst") &&
                  !stf__ends_with(l.data, ".zst");
        if (it->sharded ? stf__buf_printf(&name, "%.*s%s", (int)dirlen, l.data, base)
                        : stf__buf_printf(&name, "%s%s", l.data, zst ? ".zst" : ""))
            rc = oom(err);
        if (!rc) rc = guard(name.data, NULL, NULL, &bp->ids, err);
        if (!rc) rc = record(bp, name.data, NULL, it->input, err);
        stf__buf_free(&name);
    }
    for (size_t i = 0; i < nf; i++) stf__free(f[i].path);
    stf__free(f);
    stf__buf_free(&l);
    return rc;
}

/* May `it` be written to out_path (contract in stfix/experimental/pipeline.h). */
int stf_batch_paths_output(stf_batch_paths *bp, const stf_batch_item *it, const char *out_path,
                           const stf_batch_opts *o, stf_err *err)
{
    if (!bp || !it || !out_path || !*out_path || !o)
        return stf__err(err, STF_EINVAL, "batch: NULL argument");
    char *ro = resolve(out_path, 1);
    if (!ro) return oom(err);
    int rc = 0;
    if (!bp->allow_outside && !inside(ro, bp->outdir))
        rc = stf__err(err, STF_EINVAL,
                      "the output '%s' is outside the output directory '%s'%s%s%s; name one "
                      "inside it, or give --allow-outside-outdir",
                      out_path, bp->outdir_given, strcmp(ro, out_path) ? " (it resolves to '" : "",
                      strcmp(ro, out_path) ? ro : "", strcmp(ro, out_path) ? "')" : "");
    stf_write_opts wo;
    stf_write_opts_init(&wo);
    if (o->version >= 2 && o->zstd_level) {
        wo.zstd_level = o->zstd_level;
        wo.zstd_frame = o->zstd_frame;
        wo.zstd_grouped = o->zstd_grouped;
    }
    const char *zs = wo.zstd_level ? (wo.zstd_grouped ? ".stz" : ".zst") : "";
    stf_buf sfx;
    stf__buf_init(&sfx);
    if (!rc && stf__buf_printf(&sfx, ".safetensors%s", zs)) rc = oom(err);
    /* A sharded set may be written as shards: their names, and the index's. */
    if (!rc && it->sharded && stf__ends_with(out_path, sfx.data)) wo.max_shard_size = 1;
    stf__buf_free(&sfx);
    if (!rc) rc = guard(out_path, ro, &wo, &bp->ids, err);
    stf__free(ro);
    if (!rc) rc = record(bp, out_path, &wo, it->input, err);
    if (!rc && (o->link_compliant || (o->version >= 3 && o->copy_compliant)))
        rc = link_names(bp, it, out_path, *zs ? zs : NULL, err);
    return refused(bp, it, rc, err);
}

/* May the report be written at `path` (contract in stfix/experimental/pipeline.h). */
int stf_batch_paths_report(const stf_batch_paths *bp, const char *path, int resume,
                           stf_err *err)
{
    if (!bp || !path || !*path) return stf__err(err, STF_EINVAL, "batch: NULL argument");
    int rc = guard(path, NULL, NULL, &bp->ids, err);
    if (rc) {
        if (rc != STF_ENOMEM) stf__err_prefix(err, "the report: ");
        return rc;
    }
    char *rp = resolve(path, 1);
    if (!rp) return oom(err);
    for (size_t i = 0; !rc && i < bp->nnames; i++) {
        const out_name *n = &bp->names[i];
        if (n->writer ? stf__out_takes_name(n->path, &n->wo, rp) : !strcmp(n->path, rp))
            rc = stf__err(err, STF_EINVAL,
                          "%s: the report would replace '%s', an output of '%s'; choose "
                          "another report path",
                          path, rp, n->input);
    }
    stf__free(rp);
    struct stat ls, st;
    if (!rc && resume && lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) && stat(path, &st) == 0 &&
        st.st_uid != geteuid())
        rc = stf__err(err, STF_EINVAL,
                      "%s: a symbolic link to a file of another user (uid %lu), which --resume "
                      "would read; choose another report path",
                      path, (unsigned long)st.st_uid);
    return rc;
}
