/*
 * A fixed pthread pool that runs index ranges.
 *
 * Chunk boundaries are [c*grain, min((c+1)*grain, count)) whatever the
 * thread count, so any per-chunk result is independent of it. Threads take
 * chunks in increasing order from one shared counter; the caller's thread
 * works too, so a pool of N threads starts N-1 workers.
 *
 * Error rule: the value returned is the one of the failing chunk with the
 * lowest index. Since chunks are handed out in order, once chunk e failed
 * every chunk below e has already been taken and will finish, so handing out
 * no more chunks after a failure keeps that rule exact.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* The job being run; lives on the caller's stack for one stf_pool_run. */
typedef struct pool_job {
    stf_range_fn fn;
    void *ud;
    size_t count, grain, nchunks;
    size_t next;        /* next chunk to hand out (under the lock) */
    size_t err_chunk;   /* lowest failing chunk, nchunks if none */
    int err_rc;
    unsigned active;    /* workers still inside this job */
} pool_job;

struct stf_pool {
    unsigned nthreads;  /* including the caller */
    unsigned nworkers;  /* started threads (nthreads - 1) */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* workers wait for a new generation or stop */
    pthread_cond_t cv_done; /* the caller waits for active == 0 */
    unsigned long generation;
    int stop;
    pool_job *job;
};

/* Take the next chunk, or return 0 when none is left (or one failed). */
static int job_take(pool_job *j, size_t *chunk)
{
    if (j->next >= j->nchunks || j->next > j->err_chunk) return 0;
    *chunk = j->next++;
    return 1;
}

static int job_call(pool_job *j, size_t c)
{
    size_t b = c * j->grain;
    size_t e = (j->count - b < j->grain) ? j->count : b + j->grain;
    return j->fn(j->ud, b, e);
}

static void job_record(pool_job *j, size_t c, int rc)
{
    if (rc != 0 && c < j->err_chunk) {
        j->err_chunk = c;
        j->err_rc = rc;
    }
}

/* Runs chunks until none is left; called with p->mu held, returns with it held. */
static void pool_work(stf_pool *p, pool_job *j)
{
    size_t c;
    while (job_take(j, &c)) {
        pthread_mutex_unlock(&p->mu);
        int rc = job_call(j, c);
        pthread_mutex_lock(&p->mu);
        job_record(j, c, rc);
    }
}

static void *worker_main(void *arg)
{
    stf_pool *p = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->cv_work, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        pool_job *j = p->job;
        pool_work(p, j);
        if (--j->active == 0) pthread_cond_signal(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static unsigned online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    if (n > 1024) return 1024;
    return (unsigned)n;
}

/*
 * Create a pool of nthreads threads (0: one per online core; 1: no thread,
 * stf_pool_run runs inline). *out owns the threads until stf_pool_free.
 * STF_ENOMEM (memory or threads unavailable; nothing is leaked), or
 * STF_EINVAL for more than 1024 threads.
 */
int stf_pool_new(stf_pool **out, unsigned nthreads, stf_err *err)
{
    int rc = 0;
    stf_pool *p = NULL;
    int mu_ok = 0, cv1_ok = 0, cv2_ok = 0;
    *out = NULL;
    if (nthreads == 0) nthreads = online_cores();
    if (nthreads > 1024) {
        rc = stf__err(err, STF_EINVAL, "thread pool: %u threads is more than 1024", nthreads);
        goto done;
    }
    p = stf__calloc(1, sizeof *p);
    if (!p) {
        rc = stf__err(err, STF_ENOMEM, "thread pool: out of memory");
        goto done;
    }
    p->nthreads = nthreads;
    if (pthread_mutex_init(&p->mu, NULL) != 0) goto thread_fail;
    mu_ok = 1;
    if (pthread_cond_init(&p->cv_work, NULL) != 0) goto thread_fail;
    cv1_ok = 1;
    if (pthread_cond_init(&p->cv_done, NULL) != 0) goto thread_fail;
    cv2_ok = 1;
    if (nthreads > 1) {
        p->threads = stf__calloc(nthreads - 1, sizeof *p->threads);
        if (!p->threads) {
            rc = stf__err(err, STF_ENOMEM, "thread pool: out of memory");
            goto done;
        }
        for (unsigned i = 0; i + 1 < nthreads; i++) {
            if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) goto thread_fail;
            p->nworkers++;
        }
    }
    *out = p;
    p = NULL;
    goto done;

thread_fail:
    /* pthread_create fails for want of resources (EAGAIN), like malloc. */
    rc = stf__err(err, STF_ENOMEM, "thread pool: cannot start %u threads", nthreads);
done:
    if (p) {
        if (p->nworkers) {
            pthread_mutex_lock(&p->mu);
            p->stop = 1;
            pthread_cond_broadcast(&p->cv_work);
            pthread_mutex_unlock(&p->mu);
            for (unsigned i = 0; i < p->nworkers; i++) pthread_join(p->threads[i], NULL);
        }
        if (cv2_ok) pthread_cond_destroy(&p->cv_done);
        if (cv1_ok) pthread_cond_destroy(&p->cv_work);
        if (mu_ok) pthread_mutex_destroy(&p->mu);
        stf__free(p->threads);
        stf__free(p);
    }
    return rc;
}

/* Stop and join the workers, free the pool. NULL is a no-op. */
void stf_pool_free(stf_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nworkers; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_work);
    pthread_mutex_destroy(&p->mu);
    stf__free(p->threads);
    stf__free(p);
}

/* Threads that run work, the caller included (1 for NULL). */
unsigned stf_pool_threads(const stf_pool *p) { return p ? p->nthreads : 1; }

/*
 * Run fn over [0, count) in chunks of grain (0 is taken as 1). Not
 * reentrant: one run at a time per pool, and fn must not call stf_pool_run
 * on the same pool. Returns the lowest-indexed chunk's non-zero value, or 0.
 */
int stf_pool_run(stf_pool *p, size_t count, size_t grain, stf_range_fn fn, void *ud)
{
    if (count == 0) return 0;
    if (grain == 0) grain = 1;
    pool_job j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.ud = ud;
    j.count = count;
    j.grain = grain;
    j.nchunks = count / grain + (count % grain != 0);
    j.err_chunk = j.nchunks;

    if (!p || p->nworkers == 0 || j.nchunks == 1) {
        for (size_t c = 0; c < j.nchunks; c++) {
            int rc = job_call(&j, c);
            if (rc != 0) return rc;
        }
        return 0;
    }

    pthread_mutex_lock(&p->mu);
    p->job = &j;
    j.active = p->nworkers;
    p->generation++;
    pthread_cond_broadcast(&p->cv_work);
    pool_work(p, &j);
    while (j.active != 0) pthread_cond_wait(&p->cv_done, &p->mu);
    p->job = NULL;
    pthread_mutex_unlock(&p->mu);
    return j.err_chunk < j.nchunks ? j.err_rc : 0;
}
