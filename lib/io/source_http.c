/*
 * A remote file as a byte source: the stf__source_ops of a file behind an
 * http://, https:// or hf:// name, over the range-request client of
 * http_file.c. It has no descriptor (the writer reads its bytes instead of
 * copying them file to file) and no stamp: that it does not change while
 * read is checked on every answer (ETag, Last-Modified, size).
 */
#include <errno.h>

#include "io/source.h"

static int http_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    return stf__http_read(s->impl, off, dst, len, err);
}

static void http_close(stf__source *s) { stf__http_free(s->impl); }

static int http_prefetch(const stf__source *s, const stf__range *r, size_t n, stf_err *err)
{
    return stf__http_prefetch(s->impl, r, n, err);
}

static void http_network(const stf__source *s, uint64_t *bytes, uint64_t *requests)
{
    stf__http_network(s->impl, bytes, requests);
}

static const stf__source_ops http_ops = {
    .kind = "http",
    .read = http_read,
    .close = http_close,
    .prefetch = http_prefetch,
    .network = http_network,
};

/* Open a remote file; see source.h. */
int stf__source_open_http(stf__source **out, const char *url, int *sys_errno, stf_err *err)
{
    stf__http *h = NULL;
    if (sys_errno) *sys_errno = 0;
    *out = NULL;
    int rc = stf__http_open(&h, url, err);
    if (!rc) rc = stf__source_new(out, &http_ops, h, url, stf__http_size(h), err);
    if (rc) {
        stf__http_free(h);
        if (sys_errno) *sys_errno = rc == STF_ENOTFOUND ? ENOENT : rc == STF_ENOMEM ? ENOMEM : EIO;
    }
    return rc;
}
