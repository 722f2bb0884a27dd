/*
 * The file sink (stf__sink_open): temp-file-and-rename output (lib/README.md,
 * Canonical form). The temp file lives in the destination directory
 * because rename(2) is only atomic within one file system; the directory
 * is fsynced after the rename so the new name survives a crash. The temp
 * file is an unnamed O_TMPFILE inode where possible, so a process killed
 * part-way leaves nothing in the directory. Fills are staged for O_DIRECT
 * once the layout is sealed (fill_stage.h) and written out behind the
 * writer (write_behind.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/sink_fd.h"
#include "io/sink_file.h"

/* Names tried before giving up on EEXIST, as mkstemp does. */
#define NAME_TRIES 100

static const stf__sink_ops file_ops;

stf__sink_file *stf__sink_file_of(const stf__sink *s)
{
    return s->ops == &file_ops ? s->impl : NULL;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/*
 * Overwrite the last 6 bytes of `name` (the XXXXXX) with random letters and
 * digits. getrandom is the source; where it fails, pid, time and a counter
 * still make names distinct enough for an O_EXCL / linkat retry loop.
 */
static void randomize_name(char *name)
{
    static const char az[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static _Atomic uint64_t seq;
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = mix64((uint64_t)getpid() ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
                  mix64(atomic_fetch_add(&seq, 1)));
    }
    char *x = name + strlen(name) - 6;
    for (int i = 0; i < 6; i++, r /= 62) x[i] = az[r % 62];
}

static int cannot_create(const stf__sink *s, const char *dir, int e, stf_err *err)
{
    return stf__err(err, STF_EIO, "%s: cannot create a temporary file in '%s': %s",
                    s->final_path, dir, strerror(e));
}

/* The named scheme: ".NAME.stfix-XXXXXX" created O_EXCL, so the kernel
 * applies the umask as for any new file (mkstemp would force 0600). */
static int open_named(stf__sink *s, stf_buf *name, const char *dir, stf_err *err)
{
    for (int i = 0; i < NAME_TRIES; i++) {
        randomize_name(name->data);
        s->fd = open(name->data, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (s->fd >= 0) {
            s->tmp_path = name->data;
            name->data = NULL;
            return 0;
        }
        if (errno != EEXIST) break;
    }
    return cannot_create(s, dir, errno, err);
}

/*
 * The unnamed scheme; `name` (the temp name pattern) moves into link_path
 * on success. Returns 1 when the sink got an O_TMPFILE fd with a
 * usable /proc path, 0 when the caller should use the named scheme: the
 * kernel or file system lacks O_TMPFILE (EOPNOTSUPP; EISDIR or EINVAL from
 * old kernels), /proc is not mounted, or the directory refuses it for a
 * reason the named scheme will then report with its own errno. -1 only
 * when out of memory.
 */
static int open_unnamed(stf__sink *s, stf_buf *name, const char *dir)
{
#ifdef O_TMPFILE
    stf__sink_file *f = s->impl;
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    char proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    /* Without /proc there is neither a path for stf_writer_temp_path nor,
     * for unprivileged processes, a way to link the file at publish. */
    if (access(proc, F_OK) != 0) {
        close(fd);
        return 0;
    }
    s->tmp_path = stf__strdup(proc);
    if (!s->tmp_path) {
        close(fd);
        return -1;
    }
    f->link_path = name->data;
    name->data = NULL;
    s->fd = fd;
    f->unnamed = 1;
    return 1;
#else
    (void)s;
    (void)name;
    (void)dir;
    return 0;
#endif
}

/*
 * A regular file being replaced hands its owner, group and permission bits
 * to the new file, as `sed -i` and editors do, so an in-place fix run as
 * root does not take the checkpoint away from its owner. The owner and
 * group are kept where this process may set them (else the group alone,
 * else neither: not an error). Set-uid, set-gid and sticky bits are never
 * carried. A symlink at the path is replaced itself, so what it points at
 * lends nothing: the new file gets the default mode.
 */
static int keep_owner_and_mode(stf__sink *s, stf_err *err)
{
    struct stat st;
    if (lstat(s->final_path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if ((st.st_uid != geteuid() || st.st_gid != getegid()) &&
        fchown(s->fd, st.st_uid, st.st_gid) != 0)
        (void)!fchown(s->fd, (uid_t)-1, st.st_gid);
    if (fchmod(s->fd, st.st_mode & 0777) != 0)
        return stf__err(err, STF_EIO, "%s: cannot set permissions of '%s': %s", s->final_path,
                        s->tmp_path, strerror(errno));
    return 0;
}

/* Create the temp file for final_path (contract in sink.h). */
int stf__sink_open(stf__sink *s, const char *final_path, stf_err *err)
{
    const stf__write_test_hooks *th = stf__write_test_hooks_get();
    stf__sink_file *f = stf__calloc(1, sizeof *f);
    if (!f) {
        memset(s, 0, sizeof *s);
        s->fd = -1;
        return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    }
    f->no_fsync = th->no_fsync;
    f->no_direct = th->no_direct;
    f->stage.dfd = -1;
    if (stf__wb_init(&f->wb)) {
        memset(s, 0, sizeof *s);
        s->fd = -1;
        stf__free(f);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    }
    int rc = stf__sink_init(s, &file_ops, f, final_path, err);
    if (rc) {
        stf__wb_fini(&f->wb);
        stf__free(f);
        return rc;
    }
    char *dir = stf__path_dir(final_path);
    const char *base = strrchr(final_path, '/');
    base = base ? base + 1 : final_path;
    stf_buf tmp;
    stf__buf_init(&tmp);
    if (!dir || stf__buf_printf(&tmp, "%s/.%s" STF__SINK_TEMP_SUFFIX, dir, base)) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
        goto done;
    }
    int got = th->no_tmpfile ? 0 : open_unnamed(s, &tmp, dir);
    if (got < 0) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
        goto done;
    }
    if (!got && (rc = open_named(s, &tmp, dir, err))) goto done;
    if ((rc = keep_owner_and_mode(s, err))) goto done;
done:
    stf__buf_free(&tmp);
    stf__free(dir);
    if (rc) stf__sink_abort(s);
    return rc;
}

/* Fills through the page cache, kept there (contract in sink.h). */
static void file_keep_cache(stf__sink *s)
{
    stf__sink_file *f = s->impl;
    f->no_direct = 1;
    stf__wb_keep(&f->wb);
}

/* Scratch: no staging, no write-behind, no fsync (contract in sink.h). */
static void file_scratch(stf__sink *s)
{
    stf__sink_file *f = s->impl;
    f->no_direct = 1;
    f->no_fsync = 1;
    stf__wb_fini(&f->wb);
}

/* Skip to `end`, remembering the hole for staging (contract in sink.h). */
static int file_reserve(stf__sink *s, uint64_t n, uint64_t end, stf_err *err)
{
    stf__sink_file *f = s->impl;
    int rc = stf__sinkfd_seek(s, end, err);
    if (rc) return rc;
    if (!f->no_direct && stf__fs_hole(&f->holes, s->off, n))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    return 0;
}

/* Stage fills where O_DIRECT works (contract in sink.h). */
static int file_seal(stf__sink *s, stf_err *err)
{
    stf__sink_file *f = s->impl;
    int rc = 0;
    if (!f->no_direct && f->holes.n && s->tmp_path && !f->stage.live) {
        /* A second open file description: the sink's own stays buffered for
         * spilled pieces. File systems without direct I/O refuse (EINVAL). */
        int dfd = open(s->tmp_path, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (dfd >= 0 &&
            stf__fs_init(&f->stage, dfd, s->fd, s->off, &f->holes, s->hook, s->hook_ud))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    }
    stf__fs_holes_free(&f->holes);
    return rc;
}

/* Through the page cache, then on to write-behind. */
static int pwrite_behind(stf__sink *s, uint64_t at, const char *c, size_t n,
                         const char *tensor, stf_err *err)
{
    stf__sink_file *f = s->impl;
    int rc = stf__sinkfd_pwrite(s, at, c, n, tensor, err);
    if (!rc) stf__wb_wrote(&f->wb, s->fd, at, n);
    return rc;
}

/* Through the stage: runs of spilled pieces with one pwrite each, staged
 * pieces copied (the writer thread writes the blocks they complete). */
static int staged_pwrite(stf__sink *s, uint64_t at, const char *c, size_t n, const char *tensor,
                         stf_err *err)
{
    enum { MAXP = 16 };
    stf__sink_file *f = s->impl;
    stf__fs_piece p[MAXP];
    uint64_t total = n;
    while (n) {
        size_t k = stf__fs_plan(&f->stage, at, n, p, MAXP);
        for (size_t i = 0, j; i < k; i = j) {
            size_t len = 0;
            for (j = i; j < k && p[j].slot < 0; j++) len += p[j].len;
            if (len) {
                int rc = pwrite_behind(s, p[i].at, c + (p[i].at - at), len, tensor, err);
                if (rc) return rc;
                continue;
            }
            memcpy(stf__fs_dest(&f->stage, &p[i]), c + (p[i].at - at), p[i].len);
            stf__fs_landed(&f->stage, &p[i]);
            j = i + 1;
        }
        uint64_t done = p[k - 1].at + p[k - 1].len - at;
        c += done;
        at += done;
        n -= (size_t)done;
    }
    /* A write error of any block (this fill's or another's) fails the
     * fill: the output is lost either way. */
    uint64_t bad;
    int e = stf__fs_done(&f->stage, total, &bad);
    return e ? stf__sinkfd_fail_at(s, tensor, bad, e, err) : 0;
}

/* Positional write, staged after seal (contract in sink.h). */
static int file_fill(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                     stf_err *err)
{
    stf__sink_file *f = s->impl;
    if (f->stage.live) return staged_pwrite(s, at, p, n, tensor, err);
    return pwrite_behind(s, at, p, n, tensor, err);
}

/* fsync and end writing; a named file is closed (contract in sink.h). */
static int file_finish(stf__sink *s, stf_err *err)
{
    stf__sink_file *f = s->impl;
    if (f->stage.live) {
        /* A staged block with fills missing: which of its bytes are holes
         * is not kept (commit refuses such an output before finishing it). */
        uint64_t blk = 0, bad = 0;
        int we = 0;
        int left = stf__fs_drain(&f->stage, &blk, &we, &bad);
        if (we) return stf__sinkfd_fail_at(s, NULL, bad, we, err);
        if (left)
            return stf__err_rule(err, STF_EINVAL, "", 1, blk,
                                 "%s: deferred bytes never filled in the block at byte %llu",
                                 s->final_path, (unsigned long long)blk);
    }
    uint64_t at;
    int e = stf__wb_error(&f->wb, &at);
    if (e) return stf__sinkfd_fail_at(s, NULL, at, e, err);
    if (!f->no_fsync && fsync(s->fd) != 0) return stf__sinkfd_fail(s, errno, "fsync", err);
    s->finished = 1;
    if (f->unnamed) return 0; /* closing would free it */
    int fd = s->fd;
    s->fd = -1;
    if (close(fd) != 0) return stf__sinkfd_fail(s, errno, "close", err);
    return 0;
}

static int fsync_dir(const stf__sink *s, stf_err *err)
{
    char *dir = stf__path_dir(s->final_path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = dfd < 0 ? errno : 0;
    if (dfd >= 0 && fsync(dfd) != 0) e = errno;
    if (dfd >= 0) close(dfd);
    /* The file is already complete at its name; only durability of the
     * rename is in doubt, which is still worth reporting. */
    int rc = 0;
    if (e)
        rc = stf__err(err, STF_EIO, "%s: fsync of directory '%s' failed: %s", s->final_path,
                      dir, strerror(e));
    stf__free(dir);
    return rc;
}

/*
 * Give the unnamed inode the name `name` (its XXXXXX randomized, retried on
 * EEXIST). The /proc link with AT_SYMLINK_FOLLOW works for any process;
 * AT_EMPTY_PATH is the way when /proc went away since open, where the
 * process has the privilege for it.
 */
static int link_unnamed(const stf__sink *s, char *name)
{
    for (int i = 0; i < NAME_TRIES; i++) {
        randomize_name(name);
        if (linkat(AT_FDCWD, s->tmp_path, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0) return 0;
        if (errno == ENOENT && linkat(s->fd, "", AT_FDCWD, name, AT_EMPTY_PATH) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    return -1;
}

/* Link (if unnamed) and rename over the target, then fsync the directory
 * (contract in sink.h). */
static int file_publish(stf__sink *s, stf_err *err)
{
    stf__sink_file *f = s->impl;
    if (f->unnamed) {
        int rc = 0;
        /* The only moment a named temp file exists: a kill between these
         * two calls leaves it, any failure here removes it. */
        if (link_unnamed(s, f->link_path) != 0)
            rc = stf__err(err, STF_EIO, "%s: cannot link the temporary file as '%s': %s",
                          s->final_path, f->link_path, strerror(errno));
        else if (rename(f->link_path, s->final_path) != 0) {
            rc = stf__err(err, STF_EIO, "%s: cannot rename '%s' over it: %s", s->final_path,
                          f->link_path, strerror(errno));
            unlink(f->link_path);
        }
        if (rc) return rc;
        /* fsync already ran; the inode now lives on through its name. */
        close(s->fd);
        s->fd = -1;
        stf__free(f->link_path);
        f->link_path = NULL;
    } else if (rename(s->tmp_path, s->final_path) != 0)
        return stf__err(err, STF_EIO, "%s: cannot rename '%s' over it: %s", s->final_path,
                        s->tmp_path, strerror(errno));
    stf__free(s->tmp_path);
    s->tmp_path = NULL;
    return f->no_fsync ? 0 : fsync_dir(s, err);
}

/* Close, unlink an unpublished named temp file, free the file state. */
static void file_abort(stf__sink *s)
{
    stf__sink_file *f = s->impl;
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    /* An unnamed file's tmp_path is its /proc link: the close freed it. */
    if (s->tmp_path && !f->unnamed) unlink(s->tmp_path);
    stf__free(f->link_path);
    stf__wb_fini(&f->wb);
    stf__fs_fini(&f->stage);
    stf__fs_holes_free(&f->holes);
    stf__free(f);
}

static const stf__sink_ops file_ops = {
    .kind = "file",
    .write = stf__sinkfd_write,
    .copy_fd = stf__sinkfd_copy,
    .reserve = file_reserve,
    .extend = stf__sinkfd_extend,
    .seal = file_seal,
    .fill = file_fill,
    .finish = file_finish,
    .publish = file_publish,
    .keep_cache = file_keep_cache,
    .scratch = file_scratch,
    .abort = file_abort,
};
