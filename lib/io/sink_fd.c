/*
 * What the sinks with a descriptor share (sink_fd.h): appends, kernel-side
 * copies, holes and positional writes on s->fd.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "io/sink_fd.h"

int stf__sinkfd_fail(const stf__sink *s, int e, const char *what, stf_err *err)
{
    return stf__err_rule(err, STF_EIO, "", 1, s->off, "%s: %s failed at byte %llu: %s",
                         s->final_path, what, (unsigned long long)s->off, strerror(e));
}

int stf__sinkfd_fail_at(const stf__sink *s, const char *tensor, uint64_t at, int e,
                        stf_err *err)
{
    if (tensor)
        return stf__err_rule(err, STF_EIO, "", 1, at,
                             "%s: tensor '%s': write failed at byte %llu: %s", s->final_path,
                             tensor, (unsigned long long)at, strerror(e));
    return stf__err_rule(err, STF_EIO, "", 1, at, "%s: write failed at byte %llu: %s",
                         s->final_path, (unsigned long long)at, strerror(e));
}

/* Append n bytes; the hook may fail it as ENOSPC (contract in sink_fd.h). */
int stf__sinkfd_write(stf__sink *s, const void *p, size_t n, stf_err *err)
{
    const char *c = p;
    while (n) {
        size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        if (s->hook && s->hook(s->hook_ud, s->off, k))
            return stf__sinkfd_fail(s, ENOSPC, "write", err);
        ssize_t w = write(s->fd, c, k);
        if (w < 0) {
            if (errno == EINTR) continue;
            return stf__sinkfd_fail(s, errno, "write", err);
        }
        if (w == 0) return stf__sinkfd_fail(s, ENOSPC, "write", err);
        c += w;
        n -= (size_t)w;
        s->off += (uint64_t)w;
    }
    return 0;
}

/* Append len bytes of fd at off, kernel-side when possible (contract in sink_fd.h). */
int stf__sinkfd_copy(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                     stf_err *err)
{
    while (len) {
        size_t k = len < STF__SINK_COPY_CHUNK * 64 ? (size_t)len : STF__SINK_COPY_CHUNK * 64;
        if (s->hook && s->hook(s->hook_ud, s->off, k))
            return stf__sinkfd_fail(s, ENOSPC, "write", err);
        off_t in = (off_t)off;
        ssize_t w = copy_file_range(fd, &in, s->fd, NULL, k, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* Cross-device copies, old kernels and special files all refuse
             * copy_file_range; plain reads always work. A 0 return means the
             * source ended early and the fallback reports it. */
            if (w < 0 && errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
                errno != EOPNOTSUPP && errno != EBADF && errno != EPERM)
                return stf__sinkfd_fail(s, errno, "copy_file_range", err);
            return stf__sink_copy_read(s, fd, off, len, src_name, err);
        }
        off += (uint64_t)w;
        len -= (uint64_t)w;
        s->off += (uint64_t)w;
    }
    return 0;
}

int stf__sinkfd_seek(stf__sink *s, uint64_t end, stf_err *err)
{
    if (lseek(s->fd, (off_t)end, SEEK_SET) < 0) return stf__sinkfd_fail(s, errno, "lseek", err);
    return 0;
}

int stf__sinkfd_extend(stf__sink *s, stf_err *err)
{
    if (ftruncate(s->fd, (off_t)s->off) != 0)
        return stf__sinkfd_fail(s, errno, "ftruncate", err);
    return 0;
}

/* pwrite all n bytes at `at` (contract in sink_fd.h). */
int stf__sinkfd_pwrite(stf__sink *s, uint64_t at, const char *c, size_t n, const char *tensor,
                       stf_err *err)
{
    while (n) {
        size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        if (s->hook && s->hook(s->hook_ud, at, k))
            return stf__sinkfd_fail_at(s, tensor, at, ENOSPC, err);
        ssize_t w = pwrite(s->fd, c, k, (off_t)at);
        if (w < 0) {
            if (errno == EINTR) continue;
            return stf__sinkfd_fail_at(s, tensor, at, errno, err);
        }
        if (w == 0) return stf__sinkfd_fail_at(s, tensor, at, ENOSPC, err);
        c += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return 0;
}
