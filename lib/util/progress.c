/* Progress of pooled work, reported on one thread (contract in progress.h). */
#include "util/progress.h"

void stf__progress_init(stf__progress *p, stf_progress_fn fn, void *ud, uint64_t total)
{
    p->fn = fn;
    p->ud = ud;
    p->owner = pthread_self();
    atomic_init(&p->done, 0);
    p->total = total;
    p->shown = 0;
}

void stf__progress_add(stf__progress *p, uint64_t n, const char *what, size_t len)
{
    if (!p || !p->fn) return;
    uint64_t done = atomic_fetch_add(&p->done, n) + n;
    if (!pthread_equal(pthread_self(), p->owner)) return;
    if (done > p->total) done = p->total;
    if (done < p->shown) done = p->shown;
    p->shown = done;
    p->fn(p->ud, done, p->total, what, len);
}

void stf__progress_end(stf__progress *p)
{
    if (!p || !p->fn) return;
    p->shown = p->total;
    p->fn(p->ud, p->total, p->total, NULL, 0);
}
