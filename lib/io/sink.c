/*
 * The dispatch of output sinks (sink.h): what every writer uses, whatever
 * the kind. It checks the state and the ranges once and turns an
 * operation a kind leaves out into its documented default; it never asks
 * which kind it has. The kinds are sink_file.c (the temp file renamed into
 * place), sink_mem.c (a memory file), sink_check.c (a comparison) and
 * sink_zstd.c (compressed output).
 */
#include <string.h>

#include "io/sink.h"
#include "io/sink_fd.h"

static stf__write_test_hooks test_hooks;

/* Set the tests' switches (contract in sink.h). */
void stf__write_test_hooks_set(const stf__write_test_hooks *h)
{
    if (h) test_hooks = *h;
    else memset(&test_hooks, 0, sizeof test_hooks);
}

const stf__write_test_hooks *stf__write_test_hooks_get(void) { return &test_hooks; }

/* Make the common part (contract in sink.h). */
int stf__sink_init(stf__sink *s, const stf__sink_ops *ops, void *impl, const char *final_path,
                   stf_err *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->hook = test_hooks.write_hook;
    s->hook_ud = test_hooks.write_hook_ud;
    s->final_path = stf__strdup(final_path);
    if (!s->final_path) return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    s->ops = ops;
    s->impl = impl;
    return 0;
}

static int not_open(const stf__sink *s, stf_err *err)
{
    return stf__err(err, STF_EINVAL, "%s: sink is not open", s->final_path);
}

void stf__sink_keep_cache(stf__sink *s)
{
    if (s->ops && s->ops->keep_cache) s->ops->keep_cache(s);
}

void stf__sink_scratch(stf__sink *s)
{
    if (s->ops && s->ops->scratch) s->ops->scratch(s);
}

/* Append n bytes (contract in sink.h). */
int stf__sink_write(stf__sink *s, const void *p, size_t n, stf_err *err)
{
    if (!s->ops) return not_open(s, err);
    return s->ops->write(s, p, n, err);
}

/* Append through a bounded buffer: pread the source, write the sink. */
int stf__sink_copy_read(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                        stf_err *err)
{
    size_t cap = len < STF__SINK_COPY_CHUNK ? (size_t)len : STF__SINK_COPY_CHUNK;
    char *buf = stf__malloc(cap ? cap : 1);
    int rc = 0;
    if (!buf) return stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    while (len) {
        size_t k = len < cap ? (size_t)len : cap;
        if ((rc = stf__pread_exact(fd, buf, k, off, src_name, err)) ||
            (rc = stf__sink_write(s, buf, k, err)))
            break;
        off += k;
        len -= k;
    }
    stf__free(buf);
    return rc;
}

/* Append len bytes of fd at off (contract in sink.h). */
int stf__sink_copy_fd(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                      stf_err *err)
{
    if (!s->ops) return not_open(s, err);
    if (!s->ops->copy_fd) return stf__sink_copy_read(s, fd, off, len, src_name, err);
    return s->ops->copy_fd(s, fd, off, len, src_name, err);
}

/* Skip n bytes, leaving a hole (contract in sink.h). */
int stf__sink_reserve(stf__sink *s, uint64_t n, stf_err *err)
{
    uint64_t end;
    if (!s->ops) return not_open(s, err);
    if (stf__add_u64(&end, s->off, n) || end > (uint64_t)INT64_MAX)
        return stf__err_rule(err, STF_EINVAL, "", 1, s->off,
                             "%s: file would exceed the largest file offset", s->final_path);
    int rc = s->ops->reserve ? s->ops->reserve(s, n, end, err) : 0;
    if (!rc) s->off = end;
    return rc;
}

/* Set the size to `off` (contract in sink.h). */
int stf__sink_extend(stf__sink *s, stf_err *err)
{
    if (!s->ops) return not_open(s, err);
    return s->ops->extend ? s->ops->extend(s, err) : 0;
}

/* The layout is complete (contract in sink.h). */
int stf__sink_seal(stf__sink *s, stf_err *err)
{
    if (!s->ops) return not_open(s, err);
    return s->ops->seal ? s->ops->seal(s, err) : 0;
}

/* Positional write, safe for concurrent disjoint ranges (contract in sink.h). */
int stf__sink_pwrite(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                     stf_err *err)
{
    if (!s->ops || s->finished) return not_open(s, err);
    if (at > (uint64_t)INT64_MAX || n > (uint64_t)INT64_MAX - at)
        return stf__err_rule(err, STF_EINVAL, "", 1, at,
                             "%s: write at byte %llu exceeds the largest file offset",
                             s->final_path, (unsigned long long)at);
    return s->ops->fill(s, at, p, n, tensor, err);
}

/* The range [at, at + n) lies within what was written, and the sink is
 * open; `what` names the operation in the message. */
static int check_range(const stf__sink *s, uint64_t at, size_t n, const char *what,
                       stf_err *err)
{
    if (!s->ops) return not_open(s, err);
    if (at > s->off || n > s->off - at)
        return stf__err_rule(err, STF_EINVAL, "", 1, at,
                             "%s: %s of %zu bytes at byte %llu is outside its %llu bytes",
                             s->final_path, what, n, (unsigned long long)at,
                             (unsigned long long)s->off);
    return 0;
}

static int no_descriptor(const stf__sink *s, const char *what, stf_err *err)
{
    return stf__err(err, STF_EINVAL, "%s: a %s sink cannot %s", s->final_path, s->ops->kind,
                    what);
}

/* Read back what was written (contract in sink.h). */
int stf__sink_read(stf__sink *s, uint64_t at, void *p, size_t n, stf_err *err)
{
    int rc = check_range(s, at, n, "read", err);
    if (rc) return rc;
    if (s->ops->read) return s->ops->read(s, at, p, n, err);
    if (s->fd < 0) return no_descriptor(s, "read back its bytes", err);
    size_t got;
    int e = stf__pread_full(s->fd, p, n, at, &got);
    if (!e && got == n) return 0;
    return stf__err_rule(err, STF_EIO, "", 1, at + got,
                         "%s: cannot read back the output at byte %llu: %s", s->final_path,
                         (unsigned long long)(at + got), e ? strerror(e) : "end of file");
}

/* Overwrite bytes already written (contract in sink.h). */
int stf__sink_patch(stf__sink *s, uint64_t at, const void *p, size_t n, stf_err *err)
{
    int rc = check_range(s, at, n, "patch", err);
    if (rc) return rc;
    if (s->finished) return not_open(s, err);
    if (s->ops->patch) return s->ops->patch(s, at, p, n, err);
    if (s->fd < 0) return no_descriptor(s, "overwrite its bytes", err);
    int e = stf__pwrite_full(s->fd, p, n, at);
    if (!e) return 0;
    return stf__err_rule(err, STF_EIO, "", 1, at, "%s: cannot write %zu bytes at byte %llu: %s",
                         s->final_path, n, (unsigned long long)at, strerror(e));
}

/* End writing (contract in sink.h). */
int stf__sink_finish(stf__sink *s, stf_err *err)
{
    if (!s->ops || s->finished) return not_open(s, err);
    if (s->ops->finish) return s->ops->finish(s, err);
    s->finished = 1;
    return 0;
}

/* Put the finished bytes at the target (contract in sink.h). */
int stf__sink_publish(stf__sink *s, stf_err *err)
{
    if (!s->ops || !s->ops->publish || !s->tmp_path || !s->finished)
        return stf__err(err, STF_EINVAL, "%s: sink is not finished", s->final_path);
    return s->ops->publish(s, err);
}

/* Release the backend, then the common strings; idempotent. */
void stf__sink_abort(stf__sink *s)
{
    if (s->ops) s->ops->abort(s);
    s->ops = NULL;
    s->impl = NULL;
    s->fd = -1;
    stf__free(s->tmp_path);
    stf__free(s->final_path);
    s->tmp_path = NULL;
    s->final_path = NULL;
}
