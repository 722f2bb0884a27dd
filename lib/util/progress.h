/*
 * Progress of work spread over a pool: items add their bytes from any
 * thread, and the caller's stf_progress_fn is called only on the thread
 * that started the work (which takes items too), with `done` never going
 * down, and a last time with done == total. The probes of check --numeric
 * and plan report through it. Not part of the public API.
 */
#ifndef STF_PROGRESS_H
#define STF_PROGRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "stfix/base.h"

typedef struct stf__progress {
    stf_progress_fn fn;        /* NULL: every call below is a no-op */
    void *ud;
    pthread_t owner;           /* the thread the callback is called on */
    _Atomic uint64_t done;
    uint64_t total, shown;     /* shown: the last `done` reported */
} stf__progress;

/* Begin on the calling thread: `total` bytes to do. */
void stf__progress_init(stf__progress *p, stf_progress_fn fn, void *ud, uint64_t total);
/* n more bytes done, `what` (len bytes) the tensor or layer just done;
 * reported when called on the owner thread. */
void stf__progress_add(stf__progress *p, uint64_t n, const char *what, size_t len);
/* The last call, done == total (on the owner thread, after success). */
void stf__progress_end(stf__progress *p);

#endif
