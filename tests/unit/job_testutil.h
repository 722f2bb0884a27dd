/*
 * Helpers shared by the job unit tests (test_job.c, test_job_wide.c): a
 * sink that collects the emitted bytes per output, a float job over
 * "l.weight", and running a job with a given cap and pool. Header-only
 * (static) so each test binary stays self-contained.
 */
#ifndef STF_JOB_TESTUTIL_H
#define STF_JOB_TESTUTIL_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/run_internal.h"

/* Collects emitted bytes per plan output (two outputs: 0 weight, 1 scale). */
/* Called from pool threads at once (disjoint ranges), hence the lock. Bad
 * ranges are counted, not asserted: cmocka cannot fail from another thread. */
typedef struct sink {
    unsigned char *buf[2];
    size_t cap[2];
    size_t calls, bad;
    int fail_at; /* fail the Nth call (1-based), 0 never */
    pthread_mutex_t mu;
} sink;

static inline int sink_emit(void *ud, size_t out, uint64_t off, const void *data, size_t len,
                     stf_err *err)
{
    sink *s = ud;
    pthread_mutex_lock(&s->mu);
    size_t call = ++s->calls;
    int ok = out < 2 && off + len <= s->cap[out < 2 ? out : 0];
    if (!ok) s->bad++;
    pthread_mutex_unlock(&s->mu);
    if (s->fail_at && call == (size_t)s->fail_at)
        return stf__err(err, STF_EIO, "test sink: write failed");
    if (ok) memcpy(s->buf[out] + off, data, len);
    return 0;
}

static inline void sink_init(sink *s, size_t wbytes, size_t sbytes)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->cap[0] = wbytes;
    s->cap[1] = sbytes;
    s->buf[0] = calloc(1, wbytes ? wbytes : 1);
    s->buf[1] = calloc(1, sbytes ? sbytes : 1);
    memset(s->buf[0], 0xAB, wbytes);
    memset(s->buf[1], 0xAB, sbytes);
}

static inline void sink_free(sink *s)
{
    assert_int_equal(s->bad, 0);
    pthread_mutex_destroy(&s->mu);
    free(s->buf[0]);
    free(s->buf[1]);
}

static inline stf__job float_job(const stf_ckpt *c, stf__job_kind kind, stf_dtype dt, uint64_t n,
                          uint64_t k, unsigned g, stf_quant_mode mode)
{
    stf__job j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.dec.kind = STF__DEC_FLOAT;
    assert_int_equal(stf_ckpt_find(&j.dec.w_idx, c, "l.weight"), 0);
    j.dec.w_dtype = dt;
    j.dec.s_idx = -1;
    j.dec.n = n;
    j.dec.k = k;
    j.group = g;
    j.mode = mode;
    j.t = dt;
    j.out_weight = 0;
    j.out_scale = 1;
    return j;
}

/* A job over "l.weight" (dtype wdt) decoded as dk with the F32 scale
 * "l.weight_scale" along axis; T and the dequantized dtype BF16. */
static inline stf__job scaled_job(const stf_ckpt *c, stf__job_kind kind, stf__dec_kind dk,
                                  stf_dtype wdt, stf_scale_axis axis, uint64_t n, uint64_t k,
                                  unsigned g)
{
    stf__job j = float_job(c, kind, wdt, n, k, g, STF_QMODE_CUDA);
    size_t si;
    assert_int_equal(stf_ckpt_find(&si, c, "l.weight_scale"), 0);
    j.dec.kind = dk;
    j.dec.s_idx = (int64_t)si;
    j.dec.s_dtype = STF_F32;
    j.dec.axis = axis;
    j.t = STF_BF16;
    j.out_dtype = STF_BF16;
    return j;
}

/* Run a job into a fresh sink with a given block cap and pool. */
static inline int run_job(sink *s, const stf_ckpt *c, const stf__job *j, uint64_t max_mem,
                   stf_pool *pool, stf_metrics_result *m, stf_err *err)
{
    stf__jobrun jr;
    stf__jobrun_init(&jr, c, pool, max_mem, sink_emit, s);
    int rc = stf__job_exec(&jr, j, m, err);
    stf__jobrun_fini(&jr);
    return rc;
}

#endif
