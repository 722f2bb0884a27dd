/*
 * A regular file as a byte source (source.h), read with pread into the
 * caller's buffer. Files are never memory-mapped: touching a mapped page
 * of a file that another process truncated raises SIGBUS, and a library
 * must not raise a signal in its host. pread reports the same event as a
 * short read, which becomes an error naming the file and the offset. The
 * descriptor comes from an fd cache (fdcache.h), so a checkpoint with many
 * shards holds only a few open.
 */
/* 64-bit off_t even on 32-bit hosts: shards are routinely over 4 GiB. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "io/file_stamp.h"
#include "io/source.h"

/* One pread asks for at most this much, so a length never overflows ssize_t
 * and a huge read still makes progress in bounded steps. */
#define PREAD_CHUNK ((size_t)1 << 30)

_Static_assert(sizeof(off_t) >= 8, "off_t must be 64-bit to address files over 4 GiB");

typedef struct file_src {
    stf__fdfile *file;      /* the descriptor, through a cache */
    stf__fdcache *own;      /* the private cache of a file opened without one */
    _Atomic uint64_t nread; /* bytes pread so far (stf__source_read_total) */
} file_src;

/* pread until len bytes are in, retrying short reads and EINTR. */
static int pread_all(const stf__source *s, int fd, uint64_t off, uint8_t *d, size_t len,
                     stf_err *err)
{
    file_src *f = s->impl;
    size_t done = 0;
    while (done < len) {
        size_t want = len - done;
        if (want > PREAD_CHUNK) want = PREAD_CHUNK;
        uint64_t at = off + done;
        ssize_t got = pread(fd, d + done, want, (off_t)at);
        if (got < 0) {
            if (errno == EINTR) continue;
            char eb[128];
            return stf__err_rule(err, STF_EIO, "", 1, at, "%s: read failed at offset %llu: %s",
                                 s->name, (unsigned long long)at,
                                 stf__errno_text(errno, eb, sizeof eb));
        }
        if (got == 0)
            return stf__err_rule(err, STF_EIO, "", 1, at,
                                 "%s: unexpected end of file at offset %llu (expected %llu "
                                 "bytes; was the file truncated while open?)",
                                 s->name, (unsigned long long)at, (unsigned long long)s->size);
        done += (size_t)got;
        atomic_fetch_add_explicit(&f->nread, (uint64_t)got, memory_order_relaxed);
    }
    return 0;
}

static int file_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    file_src *f = s->impl;
    int fd;
    int rc = stf__fdfile_acquire(f->file, &fd, err);
    if (rc) return rc;
    rc = pread_all(s, fd, off, dst, len, err);
    stf__fdfile_release(f->file);
    return rc;
}

static void file_free(file_src *f)
{
    if (!f) return;
    stf__fdfile_close(f->file);
    stf__fdcache_free(f->own);
    stf__free(f);
}

static void file_close(stf__source *s) { file_free(s->impl); }

static int file_fd_acquire(const stf__source *s, int *fd, stf_err *err)
{
    file_src *f = s->impl;
    return stf__fdfile_acquire(f->file, fd, err);
}

static void file_fd_release(const stf__source *s)
{
    file_src *f = s->impl;
    stf__fdfile_release(f->file);
}

static const stf__file_stamp *file_stamp(const stf__source *s)
{
    file_src *f = s->impl;
    return stf__fdfile_stamp(f->file);
}

static uint64_t file_read_total(const stf__source *s)
{
    file_src *f = s->impl;
    return atomic_load(&f->nread);
}

static const stf__source_ops file_ops = {
    .kind = "file",
    .read = file_read,
    .close = file_close,
    .fd_acquire = file_fd_acquire,
    .fd_release = file_fd_release,
    .stamp = file_stamp,
    .read_total = file_read_total,
};

/* Open a file source; see source.h. */
int stf__source_open(stf__source **out, const char *path, stf__fdcache *cache, int *sys_errno,
                     stf_err *err)
{
    int rc = 0;
    uint64_t size = 0;

    if (sys_errno) *sys_errno = 0;
    if (!out || !path) return stf__err(err, STF_EINVAL, "stf__source_open: NULL argument");
    *out = NULL;
    file_src *f = stf__calloc(1, sizeof *f);
    if (!f) {
        if (sys_errno) *sys_errno = ENOMEM;
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    if (!cache) {
        rc = stf__fdcache_new(&f->own, 1, err);
        if (rc) {
            if (sys_errno) *sys_errno = ENOMEM;
            goto done;
        }
        cache = f->own;
    }
    rc = stf__fdfile_open(&f->file, cache, path, &size, sys_errno, err);
    if (rc) goto done;
    rc = stf__source_new(out, &file_ops, f, path, size, err);
    if (rc && sys_errno) *sys_errno = ENOMEM;
    if (!rc) f = NULL;
done:
    file_free(f);
    return rc;
}
