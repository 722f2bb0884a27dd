/*
 * A host program's bytes as a source (source.h): the host's read and size
 * callbacks stand where a file's pread and fstat would. The size is taken
 * once, at open, as a file's is; a read that ends early, a failed one and
 * a size that differs at the end from the one at open are the same errors
 * a file gives, naming the source and the offset.
 */
#include <stdatomic.h>

#include "io/source.h"

/* One callback asks for at most this much, as one pread does. */
#define HOST_CHUNK ((size_t)1 << 30)

typedef struct host_src {
    stf__host_io io;
    _Atomic uint64_t nread; /* bytes the host copied so far */
} host_src;

static int host_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    host_src *h = s->impl;
    uint8_t *d = dst;
    size_t done = 0;
    while (done < len) {
        size_t want = len - done;
        if (want > HOST_CHUNK) want = HOST_CHUNK;
        uint64_t at = off + done;
        int64_t got = h->io.read(h->io.ctx, at, d + done, want);
        if (got < 0)
            return stf__err_rule(err, STF_EIO, "", 1, at,
                                 "%s: read failed at offset %llu: the host's read returned %lld",
                                 s->name, (unsigned long long)at, (long long)got);
        if ((uint64_t)got > want)
            return stf__err_rule(err, STF_EIO, "", 1, at,
                                 "%s: read failed at offset %llu: the host's read returned %lld "
                                 "bytes for %zu asked",
                                 s->name, (unsigned long long)at, (long long)got, want);
        if (got == 0)
            return stf__err_rule(err, STF_EIO, "", 1, at,
                                 "%s: unexpected end of file at offset %llu (expected %llu "
                                 "bytes; was the file truncated while open?)",
                                 s->name, (unsigned long long)at, (unsigned long long)s->stored);
        done += (size_t)got;
        atomic_fetch_add_explicit(&h->nread, (uint64_t)got, memory_order_relaxed);
    }
    return 0;
}

static void host_close(stf__source *s)
{
    host_src *h = s->impl;
    if (h->io.close) h->io.close(h->io.ctx);
    stf__free(h);
}

/* The host's size now against the size at open: a file's stamp check,
 * reduced to what a host can tell. */
static int host_unchanged(const stf__source *s, stf_err *err)
{
    host_src *h = s->impl;
    int64_t now = h->io.size(h->io.ctx);
    if (now >= 0 && (uint64_t)now == s->stored) return 0;
    if (now < 0)
        return stf__err(err, STF_EIO,
                        "%s: the input changed while stfix was reading it (it cannot be "
                        "examined: the host's size returned %lld); nothing was written: run "
                        "again once nothing changes it",
                        s->name, (long long)now);
    return stf__err(err, STF_EIO,
                    "%s: the input changed while stfix was reading it (size %llu bytes, now "
                    "%llu); nothing was written: run again once nothing changes it",
                    s->name, (unsigned long long)s->stored, (unsigned long long)now);
}

static uint64_t host_read_total(const stf__source *s)
{
    host_src *h = s->impl;
    return atomic_load(&h->nread);
}

static const stf__source_ops host_ops = {
    .kind = "host",
    .read = host_read,
    .close = host_close,
    .unchanged = host_unchanged,
    .read_total = host_read_total,
};

/* Open over a host's callbacks; see source.h. */
int stf__source_open_host(stf__source **out, const stf__host_io *io, const char *name,
                          stf_err *err)
{
    int rc;
    if (out) *out = NULL;
    if (!out || !io || !name || !io->read || !io->size) {
        rc = stf__err(err, STF_EINVAL, "%s: a host source needs its read and size callbacks",
                      name ? name : "stf__source_open_host");
        goto fail;
    }
    int64_t size = io->size(io->ctx);
    if (size < 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot tell the size: the host's size returned %lld",
                      name, (long long)size);
        goto fail;
    }
    host_src *h = stf__calloc(1, sizeof *h);
    if (!h) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        goto fail;
    }
    h->io = *io;
    rc = stf__source_new(out, &host_ops, h, name, (uint64_t)size, err);
    if (!rc) return 0;
    stf__free(h);
fail:
    if (io && io->close) io->close(io->ctx);
    return rc;
}
