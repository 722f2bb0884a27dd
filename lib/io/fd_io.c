/*
 * The descriptor helpers every reader and writer of the layer shares:
 * whole reads and writes at an offset, retrying short transfers and EINTR.
 */
/* 64-bit off_t even on 32-bit hosts: files are routinely over 4 GiB. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "io/io_internal.h"

/* See io_internal.h. */
int stf__pwrite_full(int fd, const void *p, size_t n, uint64_t at)
{
    const unsigned char *c = p;
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(fd, c + done, n - done, (off_t)(at + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : ENOSPC;
        done += (size_t)w;
    }
    return 0;
}

/* See io_internal.h. */
int stf__pread_full(int fd, void *p, size_t n, uint64_t at, size_t *got)
{
    unsigned char *c = p;
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, c + done, n - done, (off_t)(at + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            *got = done;
            return errno;
        }
        if (r == 0) break;
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

/* See io_internal.h. */
int stf__pread_exact(int fd, void *p, size_t n, uint64_t at, const char *name, stf_err *err)
{
    size_t got;
    int e = stf__pread_full(fd, p, n, at, &got);
    if (!e && got == n) return 0;
    return stf__err_rule(err, STF_EIO, "", 1, at + got, "%s: read failed at byte %llu: %s", name,
                         (unsigned long long)(at + got),
                         e ? strerror(e) : "unexpected end of file");
}
