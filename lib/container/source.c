/*
 * Read-only byte sources: a file read with pread, or a memory buffer.
 * Files are never memory-mapped: touching a mapped page of a file that
 * another process truncated raises SIGBUS, and a library must not raise a
 * signal in its host. pread reports the same event as a short read, which
 * becomes an error naming the file and the offset.
 */
/* 64-bit off_t even on 32-bit hosts: shards are routinely over 4 GiB. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/source.h"
#include "util/util.h"

/* One pread asks for at most this much, so a length never overflows ssize_t
 * and a huge read still makes progress in bounded steps. */
#define PREAD_CHUNK ((size_t)1 << 30)

_Static_assert(sizeof(off_t) >= 8, "off_t must be 64-bit to address files over 4 GiB");

struct stf__source {
    char *path;
    int fd;              /* -1 for memory sources */
    uint64_t size;
    const uint8_t *data; /* the borrowed buffer of a memory source; NULL for files */
};

/* strerror_r has two incompatible prototypes; _GNU_SOURCE selects the one
 * returning a pointer that may or may not be `buf`. */
static const char *errno_text(int e, char *buf, size_t n)
{
    return strerror_r(e, buf, n);
}

static int io_err(stf_err *err, const char *path, const char *what, int e)
{
    char eb[128];
    return stf__err(err, STF_EIO, "%s: %s: %s", path, what, errno_text(e, eb, sizeof eb));
}

static stf__source *source_new(const char *name, stf_err *err)
{
    stf__source *s = stf__calloc(1, sizeof *s);
    if (!s) {
        stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    s->fd = -1;
    s->path = stf__strdup(name);
    if (!s->path) {
        stf__free(s);
        stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    return s;
}

/*
 * Open a file source; see source.h. O_NONBLOCK keeps open() from waiting
 * forever for a writer when the path is a FIFO; it has no effect on the
 * regular files we go on to accept.
 */
int stf__source_open(stf__source **out, const char *path, stf_err *err)
{
    int rc = 0;
    stf__source *s = NULL;
    struct stat st;

    if (!out || !path) return stf__err(err, STF_EINVAL, "stf__source_open: NULL argument");
    *out = NULL;
    s = source_new(path, err);
    if (!s) return STF_ENOMEM;
    do {
        s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    } while (s->fd < 0 && errno == EINTR);
    if (s->fd < 0) {
        rc = io_err(err, path, "cannot open", errno);
        goto done;
    }
    if (fstat(s->fd, &st) != 0) {
        rc = io_err(err, path, "cannot stat", errno);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = io_err(err, path, "cannot read", EISDIR);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = stf__err(err, STF_EIO, "%s: cannot read: not a regular file", path);
        goto done;
    }
    if (st.st_size < 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot read: negative file size", path);
        goto done;
    }
    s->size = (uint64_t)st.st_size;
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
    s->size = (uint64_t)len;
    *out = s;
    return 0;
}

/* Accessors; contracts in source.h. NULL sources give 0, NULL or -1. */
uint64_t stf__source_size(const stf__source *s) { return s ? s->size : 0; }

const char *stf__source_path(const stf__source *s) { return s ? s->path : NULL; }

const uint8_t *stf__source_data(const stf__source *s) { return s ? s->data : NULL; }

int stf__source_fd(const stf__source *s) { return s ? s->fd : -1; }

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
    if (s->data) { /* a memory source: the caller's buffer, never a file */
        memcpy(dst, s->data + off, len);
        return 0;
    }
    uint8_t *d = dst;
    size_t done = 0;
    while (done < len) {
        size_t want = len - done;
        if (want > PREAD_CHUNK) want = PREAD_CHUNK;
        uint64_t at = off + done;
        ssize_t got = pread(s->fd, d + done, want, (off_t)at);
        if (got < 0) {
            if (errno == EINTR) continue;
            char eb[128];
            return stf__err_rule(err, STF_EIO, "", 1, at, "%s: read failed at offset %llu: %s",
                                 s->path, (unsigned long long)at,
                                 errno_text(errno, eb, sizeof eb));
        }
        if (got == 0)
            return stf__err_rule(err, STF_EIO, "", 1, at,
                                 "%s: unexpected end of file at offset %llu (expected %llu "
                                 "bytes; was the file truncated while open?)",
                                 s->path, (unsigned long long)at, (unsigned long long)s->size);
        done += (size_t)got;
    }
    return 0;
}

/* Close, free; see source.h. */
void stf__source_free(stf__source *s)
{
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    stf__free(s->path);
    stf__free(s);
}
