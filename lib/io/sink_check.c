/*
 * The comparing sink (stf__sink_open_check): nothing is written anywhere;
 * every byte written, copied or filled is handed to the target's
 * operations, which compare it with what is already there. `off` counts
 * the bytes as for any sink; there is no descriptor and no temp path, and
 * it is never published.
 */
#include "io/sink.h"

typedef struct check_impl {
    void *target;
    const stf__sink_check_ops *ops;
} check_impl;

static int check_write(stf__sink *s, const void *p, size_t n, stf_err *err)
{
    const check_impl *c = s->impl;
    int rc = c->ops->bytes(c->target, s->final_path, s->off, p, n, err);
    if (!rc) s->off += n;
    return rc;
}

static int check_fill(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                      stf_err *err)
{
    (void)tensor;
    const check_impl *c = s->impl;
    return c->ops->bytes(c->target, s->final_path, at, p, n, err);
}

static void check_abort(stf__sink *s)
{
    check_impl *c = s->impl;
    c->ops->free(c->target);
    stf__free(c);
}

/* Copies read the source through a buffer (no copy_fd): the bytes have
 * to be seen. */
static const stf__sink_ops check_ops = {
    .kind = "check",
    .write = check_write,
    .fill = check_fill,
    .abort = check_abort,
};

/* A sink that only compares (contract in sink.h). */
int stf__sink_open_check(stf__sink *s, const char *final_path, const stf__sink_check_ops *ops,
                         void *target, stf_err *err)
{
    check_impl *c = stf__malloc(sizeof *c);
    int rc = stf__sink_init(s, &check_ops, c, final_path, err);
    if (!rc && !c) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    if (rc) {
        s->ops = NULL; /* the target is released here, not by the backend */
        stf__sink_abort(s);
        stf__free(c);
        ops->free(target);
        return rc;
    }
    c->target = target;
    c->ops = ops;
    return 0;
}

/* The comparing sink's target (contract in sink.h). */
void *stf__sink_check_target(const stf__sink *s)
{
    if (s->ops != &check_ops) return NULL;
    const check_impl *c = s->impl;
    return c->target;
}
