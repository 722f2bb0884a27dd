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
 * The lock: a writer holds an exclusive lock on its output from
 * stf_writer_new until commit or free, so two runs writing the same output
 * (a sharded set above all) cannot interleave their renames. It is an
 * abstract-namespace socket bound to a name made from the output directory
 * (device, inode) and the output's file name: the kernel lets one socket at
 * a time have a name, and drops it when its holder exits however it exits,
 * so no lock file can be left behind, not even by SIGKILL (which the temp
 * files already guarantee for the data). Its reach is the kernel's network
 * namespace: runs on one machine (or in one container) exclude each other.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "container/container_internal.h"
#include "container/out_guard.h"
#include "container/writer_internal.h"
#include "container/zstd_pack.h"

#define SUFFIX ".safetensors"
#define SUFFIX_LEN (sizeof SUFFIX - 1)

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static char *dir_of(const char *path)
{
    const char *b = base_of(path);
    if (b == path) return stf__strdup(".");
    if (b == path + 1) return stf__strdup("/");
    return stf__strndup(path, (size_t)(b - path - 1));
}

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
    const char *base = base_of(path), *zs = stf__zstd_suffix(o);
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
    char *dir = dir_of(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    int rc = name_fits(path, dir, base_of(path), "the file name", name_max(dir), err);
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
    if (!rc) rc = name_fits(path, dir, base_of(idx), "the index name", max, err);
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
    char *dir = dir_of(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    struct stat ds;
    /* The names first: they need no directory yet. */
    rc = name_fits(path, dir, base_of(path), "the file name", name_max(dir), err);
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
    const char *ob = base_of(out), *nb = base_of(name);
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

/* Waits between attempts on a held lock: short at first, then at most this. */
#define LOCK_WAIT_MAX_NS 200000000L

/* The lock-wait hook (stf_set_lock_wait_hook): set before writers start,
 * read by them. */
static stf_lock_wait_fn wait_hook;
static void *wait_hook_ud;

/* See experimental/container.h. */
void stf_set_lock_wait_hook(stf_lock_wait_fn fn, void *ud)
{
    wait_hook = fn;
    wait_hook_ud = fn ? ud : NULL;
}

/*
 * The lock's name: the output directory's device and inode and the
 * output's file name, hashed to a fixed length (a socket name holds at most
 * 107 bytes; a file name alone may be 255). Device and inode make every
 * spelling of the directory (symlinks, "..") name the same lock.
 */
static int lock_name(char out[80], const char *path, stf_err *err)
{
    char *dir = dir_of(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    struct stat ds;
    int r = stat(dir, &ds);
    int e = errno;
    stf__free(dir);
    if (r != 0)
        return stf__err(err, STF_EIO, "%s: cannot examine the output directory: %s", path,
                        strerror(e));
    uint64_t id[2] = { (uint64_t)ds.st_dev, (uint64_t)ds.st_ino };
    stf_buf key;
    stf__buf_init(&key);
    if (stf__buf_put(&key, id, sizeof id) || stf__buf_puts(&key, base_of(path))) {
        stf__buf_free(&key);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    char hex[65];
    stf__sha256_hex(hex, key.data, key.len);
    stf__buf_free(&key);
    snprintf(out, 80, "stfix-output-lock/%.32s", hex);
    return 0;
}

/* See out_guard.h. */
int stf__out_lock_take(stf__out_lock *l, const char *path, int no_wait, stf_err *err)
{
    l->fd = -1;
    char name[80];
    int rc = lock_name(name, path, err);
    if (rc) return rc;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(a.sun_path + 1, name, n); /* sun_path[0] == 0: the abstract namespace */
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return stf__err(err, STF_EIO, "%s: cannot create the output lock: %s", path,
                        strerror(errno));
    long wait_ns = 1000000L;
    int told = 0; /* the hook heard of this wait */
    while (bind(fd, (struct sockaddr *)&a, alen) != 0) {
        if (errno != EADDRINUSE) {
            rc = stf__err(err, STF_EIO, "%s: cannot take the output lock: %s", path,
                          strerror(errno));
            break;
        }
        if (no_wait) {
            rc = stf__err(err, STF_EBUSY,
                          "%s: another stfix run is writing this output; try again when it has "
                          "finished (or leave out --no-wait to wait for it)",
                          path);
            break;
        }
        if (!told && wait_hook) wait_hook(wait_hook_ud, path);
        told = 1;
        struct timespec ts = { 0, wait_ns };
        nanosleep(&ts, NULL);
        if (wait_ns < LOCK_WAIT_MAX_NS) wait_ns *= 2;
    }
    if (rc) close(fd);
    else l->fd = fd;
    return rc;
}

/* See out_guard.h. */
void stf__out_lock_release(stf__out_lock *l)
{
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
}
