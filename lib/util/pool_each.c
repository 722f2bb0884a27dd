/*
 * Independent items on the pool, each with its own error record, so that
 * the error a caller sees is the one of the lowest failing item whatever
 * the thread count (the probes of `check --numeric` and `plan`).
 *
 * Items run in windows of EACH_WINDOW: a window's error records are the
 * only memory this adds, and a failure stops the items after it.
 */
#include <string.h>

#include "util.h"

#define EACH_WINDOW 128

typedef struct each_job {
    stf_each_fn fn;
    void *ud;
    size_t base;
    int *rc;
    stf_err *errs;
} each_job;

static int each_chunk(void *ud, size_t b, size_t e)
{
    each_job *j = ud;
    for (size_t i = b; i < e; i++) {
        stf_err_clear(&j->errs[i]);
        j->rc[i] = j->fn(j->ud, j->base + i, &j->errs[i]);
        if (j->rc[i]) return j->rc[i];
    }
    return 0;
}

/* Contract in util.h. */
int stf__pool_each(stf_pool *p, size_t count, stf_each_fn fn, void *ud, size_t *failed,
                   stf_err *err)
{
    size_t win = count < EACH_WINDOW ? count : EACH_WINDOW;
    *failed = SIZE_MAX;
    if (!count) return 0;
    int *rc = stf__calloc(win, sizeof *rc);
    stf_err *errs = stf__calloc(win, sizeof *errs);
    if (!rc || !errs) {
        stf__free(rc);
        stf__free(errs);
        return stf__err(err, STF_ENOMEM, "out of memory");
    }
    int out = 0;
    for (size_t base = 0; base < count && !out; base += win) {
        size_t n = count - base < win ? count - base : win;
        each_job j = { fn, ud, base, rc, errs };
        memset(rc, 0, n * sizeof *rc);
        if (!stf_pool_run(p, n, 1, each_chunk, &j)) continue;
        for (size_t i = 0; i < n; i++) {
            if (!rc[i]) continue;
            out = rc[i];
            *failed = base + i;
            if (err) *err = errs[i];
            break;
        }
    }
    stf__free(rc);
    stf__free(errs);
    return out;
}
