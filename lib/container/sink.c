/*
 * Temp-file-and-rename output (lib/README.md, Canonical form). The temp file
 * lives in the destination directory because rename(2) is only atomic within
 * one file system; the directory is fsynced after the rename so the new name
 * survives a crash. The temp file is an unnamed O_TMPFILE inode where possible,
 * so a process killed part-way leaves nothing in the directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "container/sink.h"

/* Bounce buffer for the pread/write fallback; big enough that syscall
 * overhead is negligible, small enough to never matter for memory. */
#define COPY_CHUNK ((size_t)4 << 20)

/* Names tried before giving up on EEXIST, as mkstemp does. */
#define NAME_TRIES 100

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return stf__strdup(".");
    if (slash == path) return stf__strdup("/");
    return stf__strndup(path, (size_t)(slash - path));
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
    s->link_path = name->data;
    name->data = NULL;
    s->fd = fd;
    s->unnamed = 1;
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

static stf__write_test_hooks test_hooks;

/* Set the tests' switches (contract in sink.h). */
void stf__write_test_hooks_set(const stf__write_test_hooks *h)
{
    if (h) test_hooks = *h;
    else memset(&test_hooks, 0, sizeof test_hooks);
}

/* Create the temp file for final_path (contract in sink.h). */
int stf__sink_open(stf__sink *s, const char *final_path, stf_err *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->no_fsync = test_hooks.no_fsync;
    s->hook = test_hooks.write_hook;
    s->hook_ud = test_hooks.write_hook_ud;
    s->no_direct = test_hooks.no_direct;
    s->stage.dfd = -1;
    if (stf__wb_init(&s->wb)) return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    int no_tmpfile = test_hooks.no_tmpfile;
    int rc = 0;
    char *dir = dir_of(final_path);
    const char *base = strrchr(final_path, '/');
    base = base ? base + 1 : final_path;
    stf_buf tmp;
    stf__buf_init(&tmp);
    s->final_path = stf__strdup(final_path);
    if (!dir || !s->final_path ||
        stf__buf_printf(&tmp, "%s/.%s" STF__SINK_TEMP_SUFFIX, dir, base)) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
        goto done;
    }
    int got = no_tmpfile ? 0 : open_unnamed(s, &tmp, dir);
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
void stf__sink_keep_cache(stf__sink *s)
{
    s->no_direct = 1;
    stf__wb_keep(&s->wb);
}

/* A zeroed sink that never reaches a disk (a memory file, a comparison):
 * no descriptor yet, no write-behind, no direct-I/O stage, no fsync, never
 * published. */
static void sink_init_off_disk(stf__sink *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->memory = 1;
    s->unnamed = 1;
    s->no_direct = 1;
    s->stage.dfd = -1;
    s->no_fsync = 1;
}

/* A memory file for a dry run (contract in sink.h). */
int stf__sink_open_mem(stf__sink *s, const char *final_path, stf_err *err)
{
    /* The write-behind is off: there is no disk to hand bytes to. */
    sink_init_off_disk(s);
    s->hook = test_hooks.write_hook;
    s->hook_ud = test_hooks.write_hook_ud;
    s->final_path = stf__strdup(final_path);
    if (!s->final_path) return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    int fd = memfd_create("stfix-verify", MFD_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        stf__sink_abort(s);
        return stf__err(err, STF_EIO, "%s: cannot create a memory file: %s", final_path,
                        strerror(e));
    }
    char proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    s->fd = fd;
    s->tmp_path = stf__strdup(proc);
    if (!s->tmp_path) {
        stf__sink_abort(s);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    }
    return 0;
}

/* A sink that only compares (contract in sink.h). */
int stf__sink_open_cmp(stf__sink *s, const char *final_path, stf__cmp *cmp, stf_err *err)
{
    /* No hook either: nothing is written. */
    sink_init_off_disk(s);
    s->cmp = cmp;
    s->final_path = stf__strdup(final_path);
    if (!s->final_path) {
        stf__sink_abort(s);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    }
    return 0;
}

static int fail_io(stf__sink *s, int e, const char *what, stf_err *err)
{
    return stf__err_rule(err, STF_EIO, "", 1, s->off, "%s: %s failed at byte %llu: %s",
                         s->final_path, what, (unsigned long long)s->off, strerror(e));
}

/* Append n bytes; the hook may fail it as ENOSPC (contract in sink.h). */
int stf__sink_write(stf__sink *s, const void *p, size_t n, stf_err *err)
{
    const char *c = p;
    if (s->cmp) {
        int rc = stf__cmp_bytes(s->cmp, s->final_path, s->off, p, n, err);
        if (!rc) s->off += n;
        return rc;
    }
    while (n) {
        size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        if (s->hook && s->hook(s->hook_ud, s->off, k)) return fail_io(s, ENOSPC, "write", err);
        ssize_t w = write(s->fd, c, k);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fail_io(s, errno, "write", err);
        }
        if (w == 0) return fail_io(s, ENOSPC, "write", err);
        c += w;
        n -= (size_t)w;
        s->off += (uint64_t)w;
    }
    return 0;
}

static int copy_fallback(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                         stf_err *err)
{
    size_t cap = len < COPY_CHUNK ? (size_t)len : COPY_CHUNK;
    char *buf = stf__malloc(cap ? cap : 1);
    int rc = 0;
    if (!buf) return stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    while (len) {
        size_t k = len < cap ? (size_t)len : cap;
        if ((rc = stf__pread_exact(fd, buf, k, off, src_name, err)) ||
            (rc = stf__sink_write(s, buf, k, err)))
            break;
        off += k;
        len -= k;
    }
    stf__free(buf);
    return rc;
}

/* Append len bytes of fd at off, kernel-side when possible (contract in sink.h). */
int stf__sink_copy_fd(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                      stf_err *err)
{
    if (s->cmp) return copy_fallback(s, fd, off, len, src_name, err);
    while (len) {
        size_t k = len < COPY_CHUNK * 64 ? (size_t)len : COPY_CHUNK * 64;
        if (s->hook && s->hook(s->hook_ud, s->off, k)) return fail_io(s, ENOSPC, "write", err);
        off_t in = (off_t)off;
        ssize_t w = copy_file_range(fd, &in, s->fd, NULL, k, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* Cross-device copies, old kernels and special files all refuse
             * copy_file_range; plain reads always work. A 0 return means the
             * source ended early and the fallback reports it. */
            if (w < 0 && errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
                errno != EOPNOTSUPP && errno != EBADF && errno != EPERM)
                return fail_io(s, errno, "copy_file_range", err);
            return copy_fallback(s, fd, off, len, src_name, err);
        }
        off += (uint64_t)w;
        len -= (uint64_t)w;
        s->off += (uint64_t)w;
    }
    return 0;
}

/* Skip n bytes, leaving a hole (contract in sink.h). */
int stf__sink_reserve(stf__sink *s, uint64_t n, stf_err *err)
{
    uint64_t end;
    if (stf__add_u64(&end, s->off, n) || end > (uint64_t)INT64_MAX)
        return stf__err_rule(err, STF_EINVAL, "", 1, s->off,
                             "%s: file would exceed the largest file offset", s->final_path);
    if (!s->cmp && lseek(s->fd, (off_t)end, SEEK_SET) < 0) return fail_io(s, errno, "lseek", err);
    if (!s->no_direct && stf__fs_hole(&s->holes, s->off, n))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    s->off = end;
    return 0;
}

/* Set the size to `off` (contract in sink.h). */
int stf__sink_extend(stf__sink *s, stf_err *err)
{
    if (s->cmp) return 0;
    if (ftruncate(s->fd, (off_t)s->off) != 0) return fail_io(s, errno, "ftruncate", err);
    return 0;
}

/* Stage fills where O_DIRECT works (contract in sink.h). */
int stf__sink_seal(stf__sink *s, stf_err *err)
{
    int rc = 0;
    if (!s->no_direct && s->holes.n && s->tmp_path && !s->stage.live) {
        /* A second open file description: the sink's own stays buffered for
         * spilled pieces. File systems without direct I/O refuse (EINVAL). */
        int dfd = open(s->tmp_path, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (dfd >= 0 &&
            stf__fs_init(&s->stage, dfd, s->fd, s->off, &s->holes, s->hook, s->hook_ud))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    }
    stf__fs_holes_free(&s->holes);
    return rc;
}

static int fail_at(const stf__sink *s, const char *tensor, uint64_t at, int e, stf_err *err)
{
    if (tensor)
        return stf__err_rule(err, STF_EIO, "", 1, at,
                             "%s: tensor '%s': write failed at byte %llu: %s", s->final_path,
                             tensor, (unsigned long long)at, strerror(e));
    return stf__err_rule(err, STF_EIO, "", 1, at, "%s: write failed at byte %llu: %s",
                         s->final_path, (unsigned long long)at, strerror(e));
}

/* pwrite all n bytes at `at` through the page cache. */
static int pwrite_all(stf__sink *s, uint64_t at, const char *c, size_t n, const char *tensor,
                      stf_err *err)
{
    uint64_t len = n;
    while (n) {
        size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        if (s->hook && s->hook(s->hook_ud, at, k)) return fail_at(s, tensor, at, ENOSPC, err);
        ssize_t w = pwrite(s->fd, c, k, (off_t)at);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fail_at(s, tensor, at, errno, err);
        }
        if (w == 0) return fail_at(s, tensor, at, ENOSPC, err);
        c += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    stf__wb_wrote(&s->wb, s->fd, at - len, len);
    return 0;
}

/* Through the stage: runs of spilled pieces with one pwrite each, staged
 * pieces copied (the writer thread writes the blocks they complete). */
static int staged_pwrite(stf__sink *s, uint64_t at, const char *c, size_t n, const char *tensor,
                         stf_err *err)
{
    enum { MAXP = 16 };
    stf__fs_piece p[MAXP];
    uint64_t total = n;
    while (n) {
        size_t k = stf__fs_plan(&s->stage, at, n, p, MAXP);
        for (size_t i = 0, j; i < k; i = j) {
            size_t len = 0;
            for (j = i; j < k && p[j].slot < 0; j++) len += p[j].len;
            if (len) {
                int rc = pwrite_all(s, p[i].at, c + (p[i].at - at), len, tensor, err);
                if (rc) return rc;
                continue;
            }
            memcpy(stf__fs_dest(&s->stage, &p[i]), c + (p[i].at - at), p[i].len);
            stf__fs_landed(&s->stage, &p[i]);
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
    int e = stf__fs_done(&s->stage, total, &bad);
    return e ? fail_at(s, tensor, bad, e, err) : 0;
}

/* Positional write, safe for concurrent disjoint ranges (contract in sink.h). */
int stf__sink_pwrite(stf__sink *s, uint64_t at, const void *p, size_t n,
                     const char *tensor, stf_err *err)
{
    if ((s->fd < 0 && !s->cmp) || s->finished)
        return stf__err(err, STF_EINVAL, "%s: sink is not open", s->final_path);
    if (at > (uint64_t)INT64_MAX || n > (uint64_t)INT64_MAX - at)
        return stf__err_rule(err, STF_EINVAL, "", 1, at,
                             "%s: write at byte %llu exceeds the largest file offset",
                             s->final_path, (unsigned long long)at);
    if (s->cmp) return stf__cmp_bytes(s->cmp, s->final_path, at, p, n, err);
    if (s->stage.live) return staged_pwrite(s, at, p, n, tensor, err);
    return pwrite_all(s, at, p, n, tensor, err);
}

/* fsync and end writing; a named file is closed (contract in sink.h). */
int stf__sink_finish(stf__sink *s, stf_err *err)
{
    if ((s->fd < 0 && !s->cmp) || s->finished)
        return stf__err(err, STF_EINVAL, "%s: sink is not open", s->final_path);
    if (s->stage.live) {
        /* A staged block with fills missing: which of its bytes are holes
         * is not kept (commit refuses such an output before finishing it). */
        uint64_t blk = 0, bad = 0;
        int we = 0;
        int left = stf__fs_drain(&s->stage, &blk, &we, &bad);
        if (we) return fail_at(s, NULL, bad, we, err);
        if (left)
            return stf__err_rule(err, STF_EINVAL, "", 1, blk,
                                 "%s: deferred bytes never filled in the block at byte %llu",
                                 s->final_path, (unsigned long long)blk);
    }
    uint64_t at;
    int e = stf__wb_error(&s->wb, &at);
    if (e) return fail_at(s, NULL, at, e, err);
    if (!s->no_fsync && fsync(s->fd) != 0) return fail_io(s, errno, "fsync", err);
    s->finished = 1;
    if (s->unnamed) return 0; /* closing would free it (and a memory file) */
    int fd = s->fd;
    s->fd = -1;
    if (close(fd) != 0) return fail_io(s, errno, "close", err);
    return 0;
}

static int fsync_dir(const stf__sink *s, stf_err *err)
{
    char *dir = dir_of(s->final_path);
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
int stf__sink_publish(stf__sink *s, stf_err *err)
{
    if (!s->tmp_path || !s->finished || s->memory)
        return stf__err(err, STF_EINVAL, "%s: sink is not finished", s->final_path);
    if (s->unnamed) {
        int rc = 0;
        /* The only moment a named temp file exists: a kill between these
         * two calls leaves it, any failure here removes it. */
        if (link_unnamed(s, s->link_path) != 0)
            rc = stf__err(err, STF_EIO, "%s: cannot link the temporary file as '%s': %s",
                          s->final_path, s->link_path, strerror(errno));
        else if (rename(s->link_path, s->final_path) != 0) {
            rc = stf__err(err, STF_EIO, "%s: cannot rename '%s' over it: %s", s->final_path,
                          s->link_path, strerror(errno));
            unlink(s->link_path);
        }
        if (rc) return rc;
        /* fsync already ran; the inode now lives on through its name. */
        close(s->fd);
        s->fd = -1;
        stf__free(s->link_path);
        s->link_path = NULL;
    } else if (rename(s->tmp_path, s->final_path) != 0)
        return stf__err(err, STF_EIO, "%s: cannot rename '%s' over it: %s", s->final_path,
                        s->tmp_path, strerror(errno));
    stf__free(s->tmp_path);
    s->tmp_path = NULL;
    return s->no_fsync ? 0 : fsync_dir(s, err);
}

/* Close, unlink an unpublished named temp file, free; idempotent. */
void stf__sink_abort(stf__sink *s)
{
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    /* An unnamed file's tmp_path is its /proc link: the close freed it. */
    if (s->tmp_path && !s->unnamed) unlink(s->tmp_path);
    stf__free(s->tmp_path);
    stf__free(s->link_path);
    stf__free(s->final_path);
    s->tmp_path = NULL;
    s->link_path = NULL;
    s->final_path = NULL;
    stf__wb_fini(&s->wb);
    stf__fs_fini(&s->stage);
    stf__fs_holes_free(&s->holes);
    stf__cmp_free(s->cmp);
    s->cmp = NULL;
}
