/*
 * A caller's buffer as a byte source (source.h): borrowed, never copied;
 * a read is a memcpy, and stf__source_data hands the buffer itself to a
 * reader that parses in place.
 */
#include <string.h>

#include "io/source.h"

static int mem_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    (void)err;
    memcpy(dst, (const uint8_t *)s->impl + off, len);
    return 0;
}

static void mem_close(stf__source *s) { (void)s; }

static const uint8_t *mem_data(const stf__source *s) { return s->impl; }

static const stf__source_ops mem_ops = {
    .kind = "memory",
    .read = mem_read,
    .close = mem_close,
    .data = mem_data,
};

/* Wrap a caller's buffer; see source.h. */
int stf__source_open_mem(stf__source **out, const void *buf, size_t len, const char *name,
                         stf_err *err)
{
    if (!out || (!buf && len))
        return stf__err(err, STF_EINVAL, "stf__source_open_mem: NULL argument");
    return stf__source_new(out, &mem_ops, (void *)(uintptr_t)buf, name ? name : "<memory>",
                           (uint64_t)len, err);
}
