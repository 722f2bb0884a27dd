/*
 * The dispatch of byte sources (source.h): what every caller uses,
 * whatever the kind. It checks ranges and arguments once, and turns an
 * operation a kind leaves out into its documented default; it never asks
 * which kind it has.
 */
#include <string.h>

#include "io/file_stamp.h"
#include "io/source.h"

/* Make the common part; see source.h. */
int stf__source_new(stf__source **out, const stf__source_ops *ops, void *impl, const char *name,
                    uint64_t size, stf_err *err)
{
    *out = NULL;
    stf__source *s = stf__calloc(1, sizeof *s);
    char *copy = stf__strdup(name);
    if (!s || !copy) {
        stf__free(s);
        stf__free(copy);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", name);
    }
    s->ops = ops;
    s->impl = impl;
    s->name = copy;
    s->size = s->stored = size;
    s->storage = STF__STORE_PLAIN;
    *out = s;
    return 0;
}

/* Accessors; contracts in source.h. NULL sources give 0 or NULL. */
uint64_t stf__source_size(const stf__source *s) { return s ? s->size : 0; }

const char *stf__source_path(const stf__source *s) { return s ? s->name : NULL; }

const uint8_t *stf__source_data(const stf__source *s)
{
    return s && s->ops->data ? s->ops->data(s) : NULL;
}

/* Ranges ahead of their reads; see source.h. */
int stf__source_prefetch(const stf__source *s, const stf__range *r, size_t n, stf_err *err)
{
    return s && s->ops->prefetch ? s->ops->prefetch(s, r, n, err) : 0;
}

/* See source.h. */
int stf__source_remote(const stf__source *s)
{
    for (; s; s = s->inner)
        if (!strcmp(s->ops->kind, "http")) return 1;
    return 0;
}

/* What s cost over the network; see source.h. */
void stf__source_network(const stf__source *s, uint64_t *bytes, uint64_t *requests)
{
    for (; s; s = s->inner) {
        if (!s->ops->network) continue;
        uint64_t b = 0, r = 0;
        s->ops->network(s, &b, &r);
        *bytes += b;
        *requests += r;
        return;
    }
}

/* Borrow the source's descriptor; see source.h. */
int stf__source_fd_acquire(const stf__source *s, int *fd, stf_err *err)
{
    if (!s || !fd) return stf__err(err, STF_EINVAL, "stf__source_fd_acquire: NULL argument");
    if (s->storage != STF__STORE_PLAIN)
        return stf__err(err, STF_EUNSUPPORTED,
                        "%s: a compressed source has no descriptor of its bytes", s->name);
    if (!s->ops->fd_acquire)
        return stf__err(err, STF_EINVAL, "%s: a %s source has no file descriptor", s->name,
                        s->ops->kind);
    return s->ops->fd_acquire(s, fd, err);
}

/* See source.h. */
int stf__source_has_fd(const stf__source *s)
{
    return s && s->storage == STF__STORE_PLAIN && s->ops->fd_acquire;
}

/* Give it back; see source.h. */
void stf__source_fd_release(const stf__source *s)
{
    if (s && s->ops->fd_release) s->ops->fd_release(s);
}

/* Bounds-checked read; see source.h. */
int stf__source_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    uint64_t end;
    if (!s || (!dst && len)) return stf__err(err, STF_EINVAL, "stf__source_read: NULL argument");
    if (stf__add_u64(&end, off, (uint64_t)len) || end > s->size)
        return stf__err(err, STF_EINVAL,
                        "%s: read of %zu bytes at offset %llu is past the end (%llu bytes)",
                        s->name, len, (unsigned long long)off, (unsigned long long)s->size);
    if (len == 0) return 0;
    return s->ops->read(s, off, dst, len, err);
}

uint64_t stf__source_read_total(const stf__source *s)
{
    return s && s->ops->read_total ? s->ops->read_total(s) : 0;
}

/* The stamp of the file behind s; see source.h. */
const stf__file_stamp *stf__source_stamp(const stf__source *s)
{
    if (!s) return NULL;
    if (s->ops->stamp) return s->ops->stamp(s);
    return s->inner ? stf__source_stamp(s->inner) : NULL;
}

/* See source.h. */
int stf__source_unchanged(const stf__source *s, stf_err *err)
{
    if (!s) return 0;
    if (s->ops->unchanged) return s->ops->unchanged(s, err);
    if (s->inner && !s->ops->stamp) return stf__source_unchanged(s->inner, err);
    const stf__file_stamp *st = stf__source_stamp(s);
    return st ? stf__file_stamp_check(st, s->name, err) : 0;
}

/* Close, free; see source.h. */
void stf__source_free(stf__source *s)
{
    if (!s) return;
    s->ops->close(s);
    stf__free(s->name);
    stf__free(s);
}

int stf__source_storage(const stf__source *s) { return s ? s->storage : STF__STORE_PLAIN; }

uint64_t stf__source_stored_size(const stf__source *s) { return s ? s->stored : 0; }

uint64_t stf__source_frames(const stf__source *s)
{
    return s && s->ops->frames ? s->ops->frames(s) : 0;
}

uint64_t stf__source_frames_decoded(const stf__source *s)
{
    return s && s->ops->frames_decoded ? s->ops->frames_decoded(s) : 0;
}

int stf__source_stream_mode(const stf__source *s)
{
    return s && s->ops->stream_mode ? s->ops->stream_mode(s) : STF__STREAM_NONE;
}

int stf__source_hold_head(stf__source *s, uint64_t n, stf_err *err)
{
    return s && s->ops->hold_head ? s->ops->hold_head(s, n, err) : 0;
}

int stf__source_unsized(const stf__source *s) { return s && s->unsized; }

int stf__source_settle(stf__source *s, uint64_t size, uint64_t hdr_n, stf_err *err)
{
    if (!stf__source_unsized(s) || !s->ops->settle) return 0;
    int rc = s->ops->settle(s, size, hdr_n, err);
    if (!rc) {
        s->size = size;
        s->unsized = 0;
    }
    return rc;
}
