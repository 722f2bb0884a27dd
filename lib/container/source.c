/*
 * Read-only byte sources: a file read with pread, or a memory buffer.
 * Files are never memory-mapped: touching a mapped page of a file that
 * another process truncated raises SIGBUS, and a library must not raise a
 * signal in its host. pread reports the same event as a short read, which
 * becomes an error naming the file and the offset. A file's descriptor
 * comes from an fd cache (fdcache.h), so a checkpoint with many shards
 * holds only a few open.
 */
/* 64-bit off_t even on 32-bit hosts: shards are routinely over 4 GiB. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "container/file_stamp.h"
#include "container/source.h"
#include "container/zsrc.h"

/* One pread asks for at most this much, so a length never overflows ssize_t
 * and a huge read still makes progress in bounded steps. */
#define PREAD_CHUNK ((size_t)1 << 30)

_Static_assert(sizeof(off_t) >= 8, "off_t must be 64-bit to address files over 4 GiB");

struct stf__source {
    char *path;
    uint64_t size;
    const uint8_t *data;  /* the borrowed buffer of a memory source; NULL for files */
    stf__fdfile *file;    /* a file source's descriptor, through a cache */
    stf__fdcache *own;    /* the private cache of a file opened without one */
    stf__http *http;      /* a remote file, read with range requests (net.h) */
    stf_storage storage;  /* PLAIN, or one of the zstd readers below */
    stf__zseek *zs;       /* a seekable zstd file (owns the raw source) */
    stf__zstream *zt;     /* a zstd stream (owns the raw source) */
    const stf__source *raw; /* the compressed file's source, owned by zs or zt */
    uint64_t stored;      /* bytes on disk: size, or the compressed size */
    _Atomic uint64_t nread; /* bytes pread so far (stf__source_read_total) */
};

static stf__source *source_new(const char *name, stf_err *err)
{
    stf__source *s = stf__calloc(1, sizeof *s);
    if (!s) {
        stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    s->path = stf__strdup(name);
    if (!s->path) {
        stf__free(s);
        stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    return s;
}

/* Open a file source; see source.h. */
int stf__source_open(stf__source **out, const char *path, stf__fdcache *cache, int *sys_errno,
                     stf_err *err)
{
    int rc = 0;
    stf__source *s = NULL;

    if (sys_errno) *sys_errno = 0;
    if (!out || !path) return stf__err(err, STF_EINVAL, "stf__source_open: NULL argument");
    *out = NULL;
    s = source_new(path, err);
    if (!s) {
        if (sys_errno) *sys_errno = ENOMEM;
        return STF_ENOMEM;
    }
    if (stf__net_is_url(path)) {
        rc = stf__http_open(&s->http, path, err);
        if (rc) {
            if (sys_errno) *sys_errno = rc == STF_ENOTFOUND ? ENOENT : rc == STF_ENOMEM ? ENOMEM : EIO;
            goto done;
        }
        s->size = s->stored = stf__http_size(s->http);
        *out = s;
        return 0;
    }
    if (!cache) {
        rc = stf__fdcache_new(&s->own, 1, err);
        if (rc) {
            if (sys_errno) *sys_errno = ENOMEM;
            goto done;
        }
        cache = s->own;
    }
    rc = stf__fdfile_open(&s->file, cache, path, &s->size, sys_errno, err);
    if (rc) goto done;
    s->stored = s->size;
    *out = s;
    s = NULL;
done:
    stf__source_free(s);
    return rc;
}

/* Wrap a caller's buffer; see source.h. */
int stf__source_open_mem(stf__source **out, const void *buf, size_t len, const char *name,
                         stf_err *err)
{
    if (!out || (!buf && len)) return stf__err(err, STF_EINVAL, "stf__source_open_mem: NULL argument");
    *out = NULL;
    stf__source *s = source_new(name ? name : "<memory>", err);
    if (!s) return STF_ENOMEM;
    s->data = buf;
    s->size = s->stored = (uint64_t)len;
    *out = s;
    return 0;
}

/* Accessors; contracts in source.h. NULL sources give 0 or NULL. */
uint64_t stf__source_size(const stf__source *s) { return s ? s->size : 0; }

const char *stf__source_path(const stf__source *s) { return s ? s->path : NULL; }

int stf__source_remote(const stf__source *s) { return s && (s->http || (s->raw && stf__source_remote(s->raw))); }

const uint8_t *stf__source_data(const stf__source *s) { return s ? s->data : NULL; }

/* Borrow a file source's descriptor; see source.h. */
int stf__source_fd_acquire(const stf__source *s, int *fd, stf_err *err)
{
    if (!s || !fd) return stf__err(err, STF_EINVAL, "stf__source_fd_acquire: NULL argument");
    if (s->storage != STF_STORAGE_PLAIN)
        return stf__err(err, STF_EUNSUPPORTED,
                        "%s: a compressed source has no descriptor of its bytes", s->path);
    if (s->http)
        return stf__err(err, STF_EUNSUPPORTED, "%s: a remote source has no file descriptor",
                        s->path);
    if (!s->file)
        return stf__err(err, STF_EINVAL, "%s: a memory source has no file descriptor", s->path);
    return stf__fdfile_acquire(s->file, fd, err);
}

/* Give it back; see source.h. */
void stf__source_fd_release(const stf__source *s)
{
    if (s) stf__fdfile_release(s->file);
}

/* Contract in source.h. */
uint64_t stf__source_read_total(const stf__source *s) { return atomic_load(&s->nread); }

/* pread until len bytes are in, retrying short reads and EINTR. */
static int pread_all(const stf__source *s, int fd, uint64_t off, uint8_t *d, size_t len,
                     stf_err *err)
{
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
                                 s->path, (unsigned long long)at,
                                 stf__errno_text(errno, eb, sizeof eb));
        }
        if (got == 0)
            return stf__err_rule(err, STF_EIO, "", 1, at,
                                 "%s: unexpected end of file at offset %llu (expected %llu "
                                 "bytes; was the file truncated while open?)",
                                 s->path, (unsigned long long)at, (unsigned long long)s->size);
        done += (size_t)got;
        /* A counter, not the source's state: reads stay const. */
        atomic_fetch_add_explicit((_Atomic uint64_t *)&s->nread, (uint64_t)got,
                                  memory_order_relaxed);
    }
    return 0;
}

/* Bounds-checked copy; see source.h. */
int stf__source_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    uint64_t end;
    if (!s || (!dst && len)) return stf__err(err, STF_EINVAL, "stf__source_read: NULL argument");
    if (stf__add_u64(&end, off, (uint64_t)len) || end > s->size)
        return stf__err(err, STF_EINVAL,
                        "%s: read of %zu bytes at offset %llu is past the end (%llu bytes)",
                        s->path, len, (unsigned long long)off, (unsigned long long)s->size);
    if (len == 0) return 0;
    if (s->zs) return stf__zseek_read(s->zs, off, dst, len, err);
    if (s->zt) return stf__zstream_read(s->zt, off, dst, len, err);
    if (s->http) return stf__http_read(s->http, off, dst, len, err);
    if (s->data) { /* a memory source: the caller's buffer, never a file */
        memcpy(dst, s->data + off, len);
        return 0;
    }
    int fd;
    int rc = stf__fdfile_acquire(s->file, &fd, err);
    if (rc) return rc;
    rc = pread_all(s, fd, off, dst, len, err);
    stf__fdfile_release(s->file);
    return rc;
}

/* The stamp of the file behind s; see source.h. */
const stf__file_stamp *stf__source_stamp(const stf__source *s)
{
    if (s && s->raw) return stf__source_stamp(s->raw);
    return s ? stf__fdfile_stamp(s->file) : NULL;
}

/* See source.h. */
int stf__source_unchanged(const stf__source *s, stf_err *err)
{
    const stf__file_stamp *st = stf__source_stamp(s);
    return st ? stf__file_stamp_check(st, s->path, err) : 0;
}

/* Close, free; see source.h. */
void stf__source_free(stf__source *s)
{
    if (!s) return;
    stf__zseek_free(s->zs);
    stf__zstream_free(s->zt);
    stf__fdfile_close(s->file);
    stf__fdcache_free(s->own);
    stf__http_free(s->http);
    stf__free(s->path);
    stf__free(s);
}

/* Remote ranges ahead of their reads; see source.h. */
int stf__source_prefetch(const stf__source *s, const stf__range *r, size_t n, stf_err *err)
{
    return s && s->http ? stf__http_prefetch(s->http, r, n, err) : 0;
}

/* Wrap a zstd source; see source.h. */
int stf__source_decompress(stf__source **s, const stf_open_opts *o, stf_err *err)
{
    int is_zstd = 0;
    int rc = stf__zsrc_detect(*s, &is_zstd, err);
    if (rc || !is_zstd) return rc;
    stf__source *w = source_new((*s)->path, err);
    if (!w) return STF_ENOMEM;
    w->stored = (*s)->size;
    rc = stf__zseek_open(&w->zs, *s, o, err);
    if (!rc && w->zs) {
        w->storage = STF_STORAGE_ZSTD_SEEKABLE;
        w->size = stf__zseek_size(w->zs);
    } else if (!rc) {
        rc = stf__zstream_open(&w->zt, *s, o, err);
        w->storage = STF_STORAGE_ZSTD_STREAM;
        if (!rc) w->size = stf__zstream_size(w->zt);
    }
    if (rc) {
        stf__source_free(w);
        return rc;
    }
    w->raw = *s;
    *s = w;
    return 0;
}

stf_storage stf__source_storage(const stf__source *s)
{
    return s ? s->storage : STF_STORAGE_PLAIN;
}

uint64_t stf__source_stored_size(const stf__source *s) { return s ? s->stored : 0; }

uint64_t stf__source_frames(const stf__source *s)
{
    if (!s) return 0;
    return s->zs ? stf__zseek_frames(s->zs) : s->zt ? stf__zstream_frames(s->zt) : 0;
}

uint64_t stf__source_frames_decoded(const stf__source *s)
{
    return s && s->zs ? stf__zseek_decoded(s->zs) : 0;
}

stf_stream_mode stf__source_stream_mode(const stf__source *s)
{
    return s && s->zt ? stf__zstream_mode(s->zt) : STF_STREAM_NONE;
}

int stf__source_hold_head(stf__source *s, uint64_t n, stf_err *err)
{
    return s && s->zt ? stf__zstream_hold_head(s->zt, n, err) : 0;
}

int stf__source_unsized(const stf__source *s)
{
    return s && s->zt && stf__zstream_unsized(s->zt);
}

int stf__source_settle(stf__source *s, uint64_t size, uint64_t hdr_n, stf_err *err)
{
    if (!stf__source_unsized(s)) return 0;
    int rc = stf__zstream_settle(s->zt, size, hdr_n, err);
    if (!rc) s->size = size;
    return rc;
}
