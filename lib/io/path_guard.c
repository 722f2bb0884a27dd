/*
 * What an output name may be (path_guard.h), in terms of paths and files
 * alone. Before any work and again just before the renames, the container's
 * output guard asks here of every file a writer would create or replace:
 *   - an existing entry must be a regular file, or a symlink to one, or a
 *     dangling symlink (the rename replaces the link itself, never what it
 *     points at); a directory, device, FIFO or socket is refused, so that
 *     `-o /dev/null` can never destroy /dev/null;
 *   - it must not be any input file, compared by device and inode, so
 *     symlinks, hard links and ".." spellings are all caught; the one
 *     exception is an in-place writer replacing the input's single file;
 *   - the directory must exist and be writable;
 *   - each name, with its temporary's ".NAME.stfix-XXXXXX" around it, must
 *     fit the directory's file name limit and PATH_MAX, or the run would
 *     fail only when it links its first finished file.
 * Temporary files are created with O_EXCL (or have no name at all), so they
 * can never replace anything.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/path_guard.h"
#include "io/sink.h"

/* One input file by device and inode; path borrowed from the caller. */
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

/* See path_guard.h. */
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

/* See path_guard.h. */
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

/* See path_guard.h. */
int stf__out_check_name(const char *path, unsigned flags, const stf__out_inputs *ids,
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
    if ((flags & STF__OUT_REPLACE_INPUT) && ids->single_file && !S_ISLNK(ls.st_mode)) return 0;
    return stf__err(err, STF_EINVAL,
                    "%s: the output would overwrite the input file '%s'; choose another "
                    "output path",
                    path, which);
}

/* See path_guard.h. */
int stf__out_check_names_in(const char *dir, const char *path,
                            int (*match)(const char *name, void *ud), void *ud, unsigned flags,
                            const stf__out_inputs *ids, stf_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return stf__err(err, STF_EIO, "%s: cannot list the output directory '%s': %s", path,
                        dir, strerror(errno));
    int rc = 0;
    stf_buf full;
    stf__buf_init(&full);
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (!match(e->d_name, ud)) continue;
        full.len = 0;
        if (stf__buf_printf(&full, "%s/%s", dir, e->d_name)) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
            break;
        }
        rc = stf__out_check_name(full.data, flags, ids, err);
    }
    closedir(d);
    stf__buf_free(&full);
    return rc;
}

/* See path_guard.h. */
int stf__out_check_dir(const char *path, const char *dir, stf_err *err)
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

/* See path_guard.h. */
size_t stf__out_name_max(const char *dir)
{
    long n = pathconf(dir, _PC_NAME_MAX);
    return n > 0 ? (size_t)n : NAME_MAX;
}

/* See path_guard.h. */
int stf__out_name_fits(const char *path, const char *dir, const char *base, const char *what,
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

/* See path_guard.h. */
int stf__out_check_length(const char *path, stf_err *err)
{
    char *dir = stf__path_dir(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    int rc = stf__out_name_fits(path, dir, stf__path_base(path), "the file name",
                                stf__out_name_max(dir), err);
    stf__free(dir);
    return rc;
}
