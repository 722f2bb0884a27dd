/*
 * Finding the checkpoints of a batch: files and directory trees walked in
 * byte order of names, an index and the shards it names counted as one.
 * Also the shard key and an item's output path.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pipeline/batch_internal.h"

int stf__ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

char *stf__path_join(const char *a, const char *b)
{
    if (!a || !*a || b[0] == '/') return stf__strdup(b);
    stf_buf o;
    stf__buf_init(&o);
    size_t al = strlen(a);
    if (stf__buf_put(&o, a, al) || (a[al - 1] != '/' && stf__buf_puts(&o, "/")) ||
        stf__buf_puts(&o, b)) {
        stf__buf_free(&o);
        return NULL;
    }
    return o.data;
}

stf_batch_item *stf__batch_push(stf_batch_list *l)
{
    stf_batch_item *v = stf__realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v) return NULL;
    l->v = v;
    memset(&v[l->n], 0, sizeof v[l->n]);
    return &v[l->n++];
}

void stf_batch_list_free(stf_batch_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        stf__free(l->v[i].input);
        stf__free(l->v[i].rel);
        stf__free(l->v[i].output);
        stf__free(l->v[i].recipe);
    }
    stf__free(l->v);
    l->v = NULL;
    l->n = 0;
}

static int add_item(stf_batch_list *l, const char *input, const char *rel, int sharded,
                    stf_err *err)
{
    stf_batch_item *it = stf__batch_push(l);
    if (!it || !(it->input = stf__strdup(input)) || !(it->rel = stf__strdup(rel)))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", input);
    it->sharded = sharded;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry names of dir, sorted bytewise, dot names left out. */
static int list_dir(char ***out, size_t *n, const char *dir, stf_err *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return stf__err(err, STF_EIO, "%s: cannot read the directory: %s", dir, strerror(errno));
    struct dirent *e;
    size_t cap = 0;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            char **v = stf__realloc(*out, cap * sizeof *v);
            if (!v) {
                rc = stf__err(err, STF_ENOMEM, "%s: out of memory", dir);
                break;
            }
            *out = v;
        }
        if (!((*out)[*n] = stf__strdup(e->d_name))) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", dir);
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (!rc && *n) qsort(*out, *n, sizeof **out, cmp_str);
    return rc;
}

/* Whether `name` is a shard that an index in the directory claims. */
static int claimed(char *const *claims, size_t nclaims, const char *name)
{
    for (size_t i = 0; i < nclaims; i++)
        if (fnmatch(claims[i], name, 0) == 0) return 1;
    return 0;
}

/* Patterns for the shards of index `path` (file name `name`): the names it
 * lists, or STEM-*-of-*.safetensors when it cannot be read (its failure is
 * then the index's own, and its shards are still not single checkpoints). */
static int claim_shards(char ***claims, size_t *n, const char *path, const char *name)
{
    stf__index *ix = NULL;
    stf_err e;
    stf_err_clear(&e);
    size_t add;
    if (stf__index_load(&ix, path, NULL, &e) == 0) add = ix->nfiles;
    else add = 1;
    char **v = stf__realloc(*claims, (*n + add) * sizeof *v);
    if (!v) {
        stf__index_free(ix);
        return STF_ENOMEM;
    }
    *claims = v;
    int rc = 0;
    if (ix) {
        for (size_t i = 0; i < ix->nfiles && !rc; i++) {
            /* A literal pattern: escape fnmatch's specials. */
            stf_buf b;
            stf__buf_init(&b);
            for (const char *p = ix->files[i]; *p && !rc; p++) {
                if (strchr("*?[\\", *p)) rc = stf__buf_puts(&b, "\\");
                if (!rc) rc = stf__buf_put(&b, p, 1);
            }
            if (!rc && !b.data) rc = stf__buf_puts(&b, "");
            if (rc) stf__buf_free(&b);
            else v[(*n)++] = b.data;
        }
    } else {
        size_t nl = strlen(name);
        size_t cut = stf__ends_with(name, ".safetensors.index.json") ? 23 : 11;
        stf_buf b;
        stf__buf_init(&b);
        rc = stf__buf_put(&b, name, nl - cut) || stf__buf_puts(&b, "-*-of-*.safetensors");
        if (rc) stf__buf_free(&b);
        else v[(*n)++] = b.data;
    }
    stf__index_free(ix);
    return rc ? STF_ENOMEM : 0;
}

static int walk(stf_batch_list *l, const char *dir, const char *rel, const struct stat *skip,
                unsigned depth, stf_err *err)
{
    char **names = NULL, **claims = NULL;
    size_t n = 0, nclaims = 0;
    int rc = list_dir(&names, &n, dir, err);
    if (depth > 64) rc = stf__err(err, STF_ELIMIT, "%s: directories nested too deep", dir);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!stf__ends_with(names[i], ".index.json")) continue;
        char *p = stf__path_join(dir, names[i]);
        struct stat st;
        if (!p) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", dir);
        else if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
                 claim_shards(&claims, &nclaims, p, names[i]))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", dir);
        stf__free(p);
    }
    for (size_t i = 0; i < n && !rc; i++) {
        char *p = stf__path_join(dir, names[i]);
        char *r = stf__path_join(rel, names[i]);
        struct stat lst, st;
        if (!p || !r) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", dir);
        } else if (lstat(p, &lst) == 0 && S_ISDIR(lst.st_mode)) {
            if (!(skip && lst.st_dev == skip->st_dev && lst.st_ino == skip->st_ino))
                rc = walk(l, p, r, skip, depth + 1, err);
        } else if (stf__ends_with(names[i], ".index.json")) {
            if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) rc = add_item(l, p, r, 1, err);
        } else if ((stf__ends_with(names[i], ".safetensors") ||
                    stf__ends_with(names[i], ".safetensors.zst")) &&
                   !claimed(claims, nclaims, names[i])) {
            if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) rc = add_item(l, p, r, 0, err);
        }
        stf__free(p);
        stf__free(r);
    }
    for (size_t i = 0; i < n; i++) stf__free(names[i]);
    for (size_t i = 0; i < nclaims; i++) stf__free(claims[i]);
    stf__free(names);
    stf__free(claims);
    return rc;
}

static int cmp_rel(const void *a, const void *b, void *ud)
{
    const stf_batch_list *l = ud;
    const stf_batch_item *x = &l->v[*(const size_t *)a], *y = &l->v[*(const size_t *)b];
    return strcmp(x->output ? x->output : x->rel, y->output ? y->output : y->rel);
}

/* Items whose outputs would be one path (contract in batch_internal.h). */
int stf__batch_unique(const stf_batch_list *l, stf_err *err)
{
    if (l->n < 2) return 0;
    size_t *ix = stf__malloc(l->n * sizeof *ix);
    if (!ix) return stf__err(err, STF_ENOMEM, "batch: out of memory");
    for (size_t i = 0; i < l->n; i++) ix[i] = i;
    qsort_r(ix, l->n, sizeof *ix, cmp_rel, (void *)l);
    int rc = 0;
    for (size_t i = 1; i < l->n && !rc; i++)
        if (cmp_rel(&ix[i - 1], &ix[i], (void *)l) == 0)
            rc = stf__err(err, STF_EINVAL, "'%s' and '%s' would both be written to '%s'",
                          l->v[ix[i - 1]].input, l->v[ix[i]].input,
                          l->v[ix[i]].output ? l->v[ix[i]].output : l->v[ix[i]].rel);
    stf__free(ix);
    return rc;
}

/* Files and trees into a list (contract in stfix/experimental/pipeline.h). */
int stf_batch_discover(stf_batch_list *out, const char *const *roots, size_t nroots,
                       const char *skip_dir, stf_err *err)
{
    memset(out, 0, sizeof *out);
    struct stat skip;
    int have_skip = skip_dir && stat(skip_dir, &skip) == 0;
    int rc = 0;
    for (size_t i = 0; i < nroots && !rc; i++) {
        struct stat st;
        int remote = stf_net_is_remote(roots[i]); /* one file, read where it is */
        if (!remote && stat(roots[i], &st) != 0) {
            /* As for a checkpoint named to any command: missing is the
             * user's to correct (2), anything else a failure (4). */
            int e = errno;
            rc = stf__err(err, e == ENOENT ? STF_ENOTFOUND : STF_EIO, "%s: %s", roots[i],
                          strerror(e));
        } else if (!remote && S_ISDIR(st.st_mode)) {
            rc = walk(out, roots[i], NULL, have_skip ? &skip : NULL, 0, err);
        } else {
            const char *base = strrchr(roots[i], '/');
            base = base ? base + 1 : roots[i];
            int sharded = stf__ends_with(roots[i], ".index.json");
            if (!sharded && !stf__ends_with(roots[i], ".safetensors") &&
                !stf__ends_with(roots[i], ".safetensors.zst"))
                rc = stf__err(err, STF_EINVAL,
                              "%s: neither a directory, a .safetensors file nor an *.index.json",
                              roots[i]);
            else rc = add_item(out, roots[i], base, sharded, err);
        }
    }
    if (!rc) rc = stf__batch_unique(out, err);
    if (rc) stf_batch_list_free(out);
    return rc;
}

/* First 8 bytes of SHA-256(rel), mod n, plus 1 (contract in the header). */
unsigned stf_batch_shard_of(const char *rel, unsigned n)
{
    unsigned char d[32];
    uint64_t v = 0;
    if (n <= 1) return 1;
    stf__sha256(d, rel, strlen(rel));
    for (int i = 0; i < 8; i++) v = v << 8 | d[i];
    return (unsigned)(v % n) + 1;
}

/* OUTDIR/rel or the manifest's output (contract in the header). */
char *stf_batch_output_path(const stf_batch_item *it, const char *outdir)
{
    char *p = stf__path_join(outdir, it->output ? it->output : it->rel);
    if (!p) return NULL;
    if (it->sharded && stf__ends_with(p, ".index.json")) p[strlen(p) - 11] = '\0';
    /* A compressed input is written uncompressed. */
    if (!it->output && stf__ends_with(p, ".safetensors.zst")) p[strlen(p) - 4] = '\0';
    /* Made with the library's allocator; handed out for free(). */
    char *o = strdup(p);
    stf__free(p);
    return o;
}

/* The largest shard file, or 0 for a single file (contract in the header). */
uint64_t stf_batch_shard_size(const stf_ckpt *c)
{
    if (!c || !stf_ckpt_index_path(c)) return 0;
    uint64_t m = 0;
    for (size_t i = 0; i < stf_ckpt_shard_count(c); i++)
        if (stf_ckpt_shard_file_size(c, i) > m) m = stf_ckpt_shard_file_size(c, i);
    return m;
}
