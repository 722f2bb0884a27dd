/*
 * Temp-file-and-rename output (spec §5.3). The temp file lives in the
 * destination directory because rename(2) is only atomic within one file
 * system; the directory is fsynced after the rename so the new name
 * survives a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/sink.h"
#include "util/util.h"

/* Bounce buffer for the pread/write fallback; big enough that syscall
 * overhead is negligible, small enough to never matter for memory. */
#define COPY_CHUNK ((size_t)4 << 20)

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return stf__strdup(".");
    if (slash == path) return stf__strdup("/");
    return stf__strndup(path, (size_t)(slash - path));
}

/* Create the temp file for final_path (contract in sink.h). */
int stf__sink_open(stf__sink *s, const char *final_path, const stf_write_opts *opts,
                   stf_err *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (opts) {
        s->no_fsync = opts->no_fsync;
        s->hook = opts->write_hook;
        s->hook_ud = opts->write_hook_ud;
    }
    int rc = 0;
    char *dir = dir_of(final_path);
    const char *base = strrchr(final_path, '/');
    base = base ? base + 1 : final_path;
    stf_buf tmp;
    stf__buf_init(&tmp);
    s->final_path = stf__strdup(final_path);
    if (!dir || !s->final_path ||
        stf__buf_printf(&tmp, "%s/.%s.stfix-XXXXXX", dir, base)) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
        goto done;
    }
    s->fd = mkostemp(tmp.data, O_CLOEXEC);
    if (s->fd < 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot create a temporary file in '%s': %s",
                      final_path, dir, strerror(errno));
        goto done;
    }
    s->tmp_path = tmp.data;
    tmp.data = NULL;
    /* mkstemp makes 0600; an output checkpoint is an ordinary file, and
     * when it replaces one it keeps that file's permissions. */
    struct stat st;
    mode_t mode = 0644;
    if (stat(final_path, &st) == 0 && S_ISREG(st.st_mode)) mode = st.st_mode & 07777;
    if (fchmod(s->fd, mode) != 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot set permissions of '%s': %s", final_path,
                      s->tmp_path, strerror(errno));
        goto done;
    }
done:
    stf__buf_free(&tmp);
    stf__free(dir);
    if (rc) stf__sink_abort(s);
    return rc;
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
        ssize_t r = pread(fd, buf, k, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            rc = stf__err_rule(err, STF_EIO, "", 1, off, "%s: read failed at byte %llu: %s",
                               src_name, (unsigned long long)off,
                               r < 0 ? strerror(errno) : "unexpected end of file");
            goto done;
        }
        if ((rc = stf__sink_write(s, buf, (size_t)r, err))) goto done;
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
done:
    stf__free(buf);
    return rc;
}

/* Append len bytes of fd at off, kernel-side when possible (contract in sink.h). */
int stf__sink_copy_fd(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                      stf_err *err)
{
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
    if (lseek(s->fd, (off_t)end, SEEK_SET) < 0) return fail_io(s, errno, "lseek", err);
    s->off = end;
    return 0;
}

/* Set the size to `off` (contract in sink.h). */
int stf__sink_extend(stf__sink *s, stf_err *err)
{
    if (ftruncate(s->fd, (off_t)s->off) != 0) return fail_io(s, errno, "ftruncate", err);
    return 0;
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

/* Positional write, safe for concurrent disjoint ranges (contract in sink.h). */
int stf__sink_pwrite(const stf__sink *s, uint64_t at, const void *p, size_t n,
                     const char *tensor, stf_err *err)
{
    const char *c = p;
    if (s->fd < 0) return stf__err(err, STF_EINVAL, "%s: sink is not open", s->final_path);
    if (at > (uint64_t)INT64_MAX || n > (uint64_t)INT64_MAX - at)
        return stf__err_rule(err, STF_EINVAL, "", 1, at,
                             "%s: write at byte %llu exceeds the largest file offset",
                             s->final_path, (unsigned long long)at);
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
    return 0;
}

/* fsync and close; the temp file stays until publish or abort. */
int stf__sink_finish(stf__sink *s, stf_err *err)
{
    if (s->fd < 0) return stf__err(err, STF_EINVAL, "%s: sink is not open", s->final_path);
    if (!s->no_fsync && fsync(s->fd) != 0) return fail_io(s, errno, "fsync", err);
    int fd = s->fd;
    s->fd = -1;
    if (close(fd) != 0) return fail_io(s, errno, "close", err);
    return 0;
}

/* Rename over the target, then fsync the directory (contract in sink.h). */
int stf__sink_publish(stf__sink *s, stf_err *err)
{
    if (!s->tmp_path || s->fd >= 0)
        return stf__err(err, STF_EINVAL, "%s: sink is not finished", s->final_path);
    if (rename(s->tmp_path, s->final_path) != 0)
        return stf__err(err, STF_EIO, "%s: cannot rename '%s' over it: %s", s->final_path,
                        s->tmp_path, strerror(errno));
    stf__free(s->tmp_path);
    s->tmp_path = NULL;
    if (!s->no_fsync) {
        char *dir = dir_of(s->final_path);
        if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int e = dfd < 0 ? errno : 0;
        if (dfd >= 0 && fsync(dfd) != 0) e = errno;
        if (dfd >= 0) close(dfd);
        /* The file is already complete at its name; only durability of the
         * rename is in doubt, which is still worth reporting. */
        if (e) {
            int rc = stf__err(err, STF_EIO, "%s: fsync of directory '%s' failed: %s",
                              s->final_path, dir, strerror(e));
            stf__free(dir);
            return rc;
        }
        stf__free(dir);
    }
    return 0;
}

/* Close, unlink an unpublished temp file, free; idempotent. */
void stf__sink_abort(stf__sink *s)
{
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    if (s->tmp_path) unlink(s->tmp_path);
    stf__free(s->tmp_path);
    stf__free(s->final_path);
    s->tmp_path = NULL;
    s->final_path = NULL;
}
