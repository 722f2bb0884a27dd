/*
 * The output guard: the one place that decides what a writer may replace.
 *
 * Every file a writer would create or replace (the output, each shard name
 * the output could take, the index) is checked against three things before
 * any work and again just before the renames:
 *   - an existing entry must be a regular file, or a symlink to one, or a
 *     dangling symlink (the rename replaces the link itself, never what it
 *     points at); a directory, device, FIFO or socket is refused, so that
 *     `-o /dev/null` can never destroy /dev/null;
 *   - it must not be any file of the input checkpoint (its single file, its
 *     shards or its index), compared by device and inode, so symlinks, hard
 *     links and ".." spellings are all caught; the one exception is an
 *     in-place fix, where replacing the input's single file is the point;
 *   - the directory must exist and be writable;
 *   - each name, with its temporary's ".NAME.stfix-XXXXXX" around it, must
 *     fit the directory's file name limit and PATH_MAX, or the run would
 *     fail only when it links its first finished file.
 * Temporary files are created with O_EXCL (or have no name at all), so they
 * can never replace anything.
 *
 * A writer also holds an exclusive lock on its output from stf_writer_new
 * until commit or free (the I/O layer's out_lock.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "container/container_internal.h"
#include "container/out_guard.h"
#include "container/writer_internal.h"
#include "container/zstd_pack.h"

#define SUFFIX ".safetensors"
#define SUFFIX_LEN (sizeof SUFFIX - 1)

/* One input file by device and inode; path borrowed from the checkpoint. */
struct stf__out_in {
    uint64_t dev, ino;
    const char *path;
};

static int in_cmp(const void *a, const void *b)
{
    const struct stf__out_in *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return (x->ino > y->ino) - (x->ino < y->ino);
}

/* See out_guard.h. Files that cannot be stat'ed any more cannot be
 * replaced by us through another name either, so they are left out. */
int stf__out_inputs_make(stf__out_inputs *ids, const stf_ckpt *in, stf_err *err)
{
    memset(ids, 0, sizeof *ids);
    ids->ckpt = in;
    if (!in) return 0;
    size_t ns = stf_ckpt_shard_count(in);
    ids->v = stf__calloc(ns + 1, sizeof *ids->v);
    if (!ids->v) return stf__err(err, STF_ENOMEM, "output check: out of memory");
    for (size_t k = 0; k <= ns; k++) {
        const char *p = k < ns ? stf_ckpt_shard_path(in, k) : stf_ckpt_index_path(in);
        struct stat si;
        if (!p || stat(p, &si) != 0) continue;
        ids->v[ids->n++] = (struct stf__out_in){ (uint64_t)si.st_dev, (uint64_t)si.st_ino, p };
    }
    qsort(ids->v, ids->n, sizeof *ids->v, in_cmp);
    return 0;
}

/* See out_guard.h. */
int stf__out_inputs_paths(stf__out_inputs *ids, const char *const *paths, size_t n,
                          stf_err *err)
{
    memset(ids, 0, sizeof *ids);
    ids->v = stf__calloc(n ? n : 1, sizeof *ids->v);
    if (!ids->v) return stf__err(err, STF_ENOMEM, "output check: out of memory");
    for (size_t k = 0; k < n; k++) {
        struct stat si;
        if (!paths[k] || stat(paths[k], &si) != 0) continue;
        ids->v[ids->n++] =
            (struct stf__out_in){ (uint64_t)si.st_dev, (uint64_t)si.st_ino, paths[k] };
    }
    qsort(ids->v, ids->n, sizeof *ids->v, in_cmp);
    return 0;
}

/* See out_guard.h. */
void stf__out_inputs_free(stf__out_inputs *ids)
{
    stf__free(ids->v);
    memset(ids, 0, sizeof *ids);
}

/* The input file that is (dev, ino), or NULL: a binary search. */
static const char *input_path(const stf__out_inputs *ids, const struct stat *st)
{
    if (!ids || !ids->n) return NULL;
    struct stf__out_in key = { (uint64_t)st->st_dev, (uint64_t)st->st_ino, NULL };
    const struct stf__out_in *hit = bsearch(&key, ids->v, ids->n, sizeof key, in_cmp);
    return hit ? hit->path : NULL;
}

/* See out_guard.h. */
int stf__out_check_name(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                        stf_err *err)
{
    struct stat ls, st;
    if (lstat(path, &ls) != 0) {
        if (errno == ENOENT) return 0;
        return stf__err(err, STF_EIO, "%s: cannot examine the output path: %s", path,
                        strerror(errno));
    }
    if (stat(path, &st) != 0) {
        /* A dangling symlink: the rename replaces the link, nothing else. */
        if (S_ISLNK(ls.st_mode) && errno == ENOENT) return 0;
        return stf__err(err, STF_EIO, "%s: cannot examine the output path: %s", path,
                        strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return stf__err(err, STF_EINVAL,
                        "%s: the output path exists and is %s%s; stfix only replaces regular "
                        "files: choose another output path",
                        path, stf__file_kind(st.st_mode), S_ISLNK(ls.st_mode) ? " (through a symlink)" : "");
    const char *which = input_path(ids, &st);
    if (!which) return 0;
    /* In place: the output is the input's single file itself, named
     * directly (not through a link, which the rename would replace). */
    if (o && o->replace_input && ids->ckpt && stf_ckpt_shard_count(ids->ckpt) == 1 &&
        !stf_ckpt_index_path(ids->ckpt) && !S_ISLNK(ls.st_mode))
        return 0;
    return stf__err(err, STF_EINVAL,
                    "%s: the output would overwrite the input file '%s'; choose another "
                    "output path",
                    path, which);
}

/* STEM-<digits>-of-<digits>.safetensors (then `zs`, the compressed
 * suffix, when there is one): a name a sharded output of STEM may take,
 * whatever its shard count. */
static int is_shard_name(const char *name, const char *stem, size_t stem_len, const char *zs)
{
    if (strncmp(name, stem, stem_len) || name[stem_len] != '-') return 0;
    const char *p = name + stem_len + 1;
    size_t d = strspn(p, "0123456789");
    if (!d || strncmp(p + d, "-of-", 4)) return 0;
    p += d + 4;
    d = strspn(p, "0123456789");
    if (!d || strncmp(p + d, SUFFIX, SUFFIX_LEN)) return 0;
    return !strcmp(p + d + SUFFIX_LEN, zs ? zs : "");
}

/* Check every existing entry of `dir` that a sharded output of `path` could
 * be renamed over. One pass over the directory. */
static int check_shard_names(const char *dir, const char *path, const stf_write_opts *o,
                             const stf__out_inputs *ids, stf_err *err)
{
    const char *base = stf__path_base(path), *zs = stf__zstd_suffix(o);
    size_t stem_len = strlen(base) - SUFFIX_LEN - (zs ? strlen(zs) : 0);
    DIR *d = opendir(dir);
    if (!d)
        return stf__err(err, STF_EIO, "%s: cannot list the output directory '%s': %s", path,
                        dir, strerror(errno));
    int rc = 0;
    stf_buf full;
    stf__buf_init(&full);
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (!is_shard_name(e->d_name, base, stem_len, zs)) continue;
        full.len = 0;
        if (stf__buf_printf(&full, "%s/%s", dir, e->d_name)) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
            break;
        }
        rc = stf__out_check_name(full.data, o, ids, err);
    }
    closedir(d);
    stf__buf_free(&full);
    return rc;
}

/* The compression options make sense, and a compressed output's name
 * ends in its suffix (stfix(1), COMPRESSED FILES). */
static int zstd_opts_check(const char *path, const stf_write_opts *o, stf_err *err)
{
    if (!o || !o->zstd_level) return 0;
    if (o->zstd_level < 1 || o->zstd_level > ZSTD_maxCLevel())
        return stf__err(err, STF_EINVAL, "%s: zstd level %d is not between 1 and %d", path,
                        o->zstd_level, ZSTD_maxCLevel());
    if (o->zstd_frame &&
        (o->zstd_frame < STF__ZSTD_FRAME_MIN || o->zstd_frame > STF__ZSTD_FRAME_MAX))
        return stf__err(err, STF_EINVAL,
                        "%s: a zstd frame size must be between 1 KiB and 1 GiB (got %llu)",
                        path, (unsigned long long)o->zstd_frame);
    const char *zs = stf__zstd_suffix(o);
    size_t len = strlen(path), zl = strlen(zs);
    if (len <= zl || strcmp(path + len - zl, zs))
        return stf__err(err, STF_EINVAL, "%s: a compressed output's name must end in \"%s\"",
                        path, zs);
    return 0;
}

/* The output directory exists, is a directory, and may be written. */
static int check_dir(const char *path, const char *dir, stf_err *err)
{
    struct stat ds;
    if (stat(dir, &ds) != 0)
        return stf__err(err, STF_EIO, "%s: the output directory '%s' cannot be used: %s", path,
                        dir, strerror(errno));
    if (!S_ISDIR(ds.st_mode)) return stf__err(err, STF_EIO, "%s: '%s' is not a directory", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return stf__err(err, STF_EIO, "%s: the output directory '%s' is not writable: %s", path,
                        dir, strerror(errno));
    return 0;
}

/* The longest file name `dir` takes: pathconf's, else NAME_MAX. */
static size_t name_max(const char *dir)
{
    long n = pathconf(dir, _PC_NAME_MAX);
    return n > 0 ? (size_t)n : NAME_MAX;
}

/*
 * The file `base` in `dir`, one of output `path`'s files (`what` says
 * which, for the message), can be written by way of its temporary.
 */
static int name_fits(const char *path, const char *dir, const char *base, const char *what,
                     size_t max, stf_err *err)
{
    size_t tl = strlen(base) + STF__SINK_TEMP_EXTRA, pl = strlen(dir) + 1 + tl;
    if (tl > max)
        return stf__err(err, STF_EINVAL,
                        "%s: %s is too long: its temporary file (.NAME" STF__SINK_TEMP_SUFFIX
                        ") would have a %zu-byte name, over the limit of %zu bytes for a file "
                        "name in '%s'; shorten the output's name by %zu byte%s",
                        path, what, tl, max, dir, tl - max, tl - max == 1 ? "" : "s");
    /* The path last: at this length it would crowd out the rest. */
    if (pl >= PATH_MAX)
        return stf__err(err, STF_EINVAL,
                        "%s is too long: its temporary file's path would be %zu bytes, over the "
                        "limit of %d bytes (PATH_MAX); shorten the output path by %zu byte%s: %s",
                        what, pl, PATH_MAX - 1, pl - (PATH_MAX - 1),
                        pl - (PATH_MAX - 1) == 1 ? "" : "s", path);
    return 0;
}

/* See out_guard.h. */
int stf__out_check_length(const char *path, stf_err *err)
{
    char *dir = stf__path_dir(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    int rc = name_fits(path, dir, stf__path_base(path), "the file name", name_max(dir), err);
    stf__free(dir);
    return rc;
}

/*
 * The names a sharded output of `path` makes beside it: its shards (with
 * the fewest digits a shard number has) and its index, `idx`.
 */
static int shard_names_fit(const char *path, const char *dir, const char *idx, size_t zl,
                           stf_err *err)
{
    size_t max = name_max(dir), len = strlen(path);
    char *plain = stf__strndup(path, len - zl);
    char *shard = plain ? stf__shard_name(plain, 0, 1) : NULL;
    stf_buf name, what;
    stf__buf_init(&name);
    stf__buf_init(&what);
    int rc = 0;
    if (!shard || stf__buf_printf(&name, "%s%s", shard, path + len - zl) ||
        stf__buf_printf(&what, "the shard name '%s'", name.data))
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    if (!rc) rc = name_fits(path, dir, name.data, what.data, max, err);
    if (!rc) rc = name_fits(path, dir, stf__path_base(idx), "the index name", max, err);
    stf__buf_free(&what);
    stf__buf_free(&name);
    stf__free(shard);
    stf__free(plain);
    return rc;
}

/* stf_output_check against `ids`; with dir_may_be_missing, a directory
 * that does not exist yet passes (nothing is there to replace). */
static int check_path(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                      int dir_may_be_missing, stf_err *err)
{
    if (!path || !*path) return stf__err(err, STF_EINVAL, "empty output path");
    size_t len = strlen(path);
    int sharded = o && o->max_shard_size;
    if (path[len - 1] == '/')
        return stf__err(err, STF_EINVAL, "%s: the output path names a directory", path);
    /* An index is JSON naming shards; a safetensors body under that name
     * would be taken for an index by every reader, stfix's own included. */
    static const char idx_sfx[] = ".index.json";
    size_t il = sizeof idx_sfx - 1;
    if (len >= il && !strcmp(path + len - il, idx_sfx))
        return stf__err(err, STF_EINVAL,
                        "%s: an output file cannot take an index's name (*.index.json): name it "
                        "*.safetensors; a sharded output's index is then named after it",
                        path);
    int rc = zstd_opts_check(path, o, err);
    if (rc) return rc;
    const char *zs = stf__zstd_suffix(o);
    size_t zl = zs ? strlen(zs) : 0;
    if (sharded && (len < SUFFIX_LEN + zl || strncmp(path + len - SUFFIX_LEN - zl, SUFFIX,
                                                     SUFFIX_LEN)))
        return stf__err(err, STF_EINVAL,
                        "%s: a sharded output path must end in \".safetensors%s\"", path,
                        zs ? zs : "");
    char *dir = stf__path_dir(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    struct stat ds;
    /* The names first: they need no directory yet. */
    rc = name_fits(path, dir, stf__path_base(path), "the file name", name_max(dir), err);
    if (!rc && dir_may_be_missing && stat(dir, &ds) != 0 && errno == ENOENT) {
        stf__free(dir);
        return 0;
    }
    if (!rc) rc = check_dir(path, dir, err);
    if (!rc) rc = stf__out_check_name(path, o, ids, err);
    if (!rc && sharded) {
        stf_buf idx;
        stf__buf_init(&idx);
        if (stf__buf_printf(&idx, "%.*s.index.json", (int)(len - zl), path))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        else if (!(rc = shard_names_fit(path, dir, idx.data, zl, err)))
            rc = stf__out_check_name(idx.data, o, ids, err);
        stf__buf_free(&idx);
        if (!rc) rc = check_shard_names(dir, path, o, ids, err);
    }
    stf__free(dir);
    return rc;
}

/* See container.h. */
int stf_output_check(const char *path, const stf_write_opts *o, stf_err *err)
{
    if (o && stf__opts_version(err, o->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    if (!path || !*path) return stf__err(err, STF_EINVAL, "empty output path");
    stf__out_inputs ids;
    int rc = stf__out_inputs_make(&ids, o ? o->input : NULL, err);
    if (!rc) rc = check_path(path, o, &ids, 0, err);
    stf__out_inputs_free(&ids);
    return rc;
}

/* See out_guard.h. */
int stf__output_check_ids(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                          stf_err *err)
{
    if (o && stf__opts_version(err, o->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    return check_path(path, o, ids, 1, err);
}

/* See out_guard.h. */
int stf__out_takes_name(const char *out, const stf_write_opts *o, const char *name)
{
    if (!strcmp(out, name)) return 1;
    if (!o || !o->max_shard_size) return 0;
    const char *ob = stf__path_base(out), *nb = stf__path_base(name);
    /* Same directory, as spelt. */
    if (ob - out != nb - name || strncmp(out, name, (size_t)(ob - out))) return 0;
    const char *zs = stf__zstd_suffix(o);
    size_t len = strlen(ob), zl = zs ? strlen(zs) : 0;
    if (len < SUFFIX_LEN + zl) return 0;
    size_t stem_len = len - SUFFIX_LEN - zl;
    /* The index: OUT less the compressed suffix, then ".index.json". */
    if (!strncmp(nb, ob, len - zl) && !strcmp(nb + len - zl, ".index.json")) return 1;
    return is_shard_name(nb, ob, stem_len, zs);
}

/* ------------------------------------------------------------------ lock */

/* See experimental/container.h: the lock's own hook, in the I/O layer. */
void stf_set_lock_wait_hook(stf_lock_wait_fn fn, void *ud) { stf__out_lock_hook_set(fn, ud); }
