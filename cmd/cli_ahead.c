/*
 * Several inputs read ahead: each input is opened (and for check, checked)
 * on a thread of its own, up to `width` inputs at once, so that the
 * requests of remote inputs overlap instead of waiting for each other; the
 * reports are still printed one after the other, in the order given, by
 * the caller, which takes each input's result when it gets to it. For
 * batch, an input is only opened and its markers fetched (they stay with
 * the open checkpoint), and the caller hands the checkpoint to
 * stf_batch_run_item. Only library calls run on the threads: nothing is
 * printed there. At most `width` inputs are open and not yet taken at any
 * time.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct slot {
    int done;
    int rc;
    stf_ckpt *c;
    stf_check_report *r;
    stf_err err;
} slot;

struct cli_ahead {
    char **files;
    int n, width;
    stf_check_opts o;
    int check;      /* check each input (o), else open it and fetch its markers */
    char spool[4096];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next, taken, stop;
    slot *slots;
    pthread_t *threads;
    int nthreads;
};

static void run_one(cli_ahead *a, int k)
{
    slot *s = &a->slots[k];
    stf_open_opts oo;
    stf_open_opts_init(&oo);
    oo.spool_dir = a->spool;
    stf_err_clear(&s->err);
    if (!a->files[k]) return;
    s->rc = stf_ckpt_open(&s->c, a->files[k], a->check ? &oo : NULL, &s->err);
    if (!s->rc && a->check) s->rc = stf_check_run(&s->r, s->c, &a->o, &s->err);
    if (!s->rc && !a->check) {
        /* The model fetches the markers (together, where they lie
         * together) and the source keeps them for the batch's own model;
         * a failure here is met again, and reported, by the batch. */
        stf_model *m = NULL;
        stf_err ignored;
        stf_err_clear(&ignored);
        if (!stf_model_build(&m, s->c, &ignored)) stf_model_free(m);
    }
}

static void *worker(void *ud)
{
    cli_ahead *a = ud;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && a->next < a->n && a->next - a->taken >= a->width)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->stop || a->next >= a->n) break;
        int k = a->next++;
        pthread_mutex_unlock(&a->mu);
        run_one(a, k);
        pthread_mutex_lock(&a->mu);
        a->slots[k].done = 1;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Start; see cli.h. */
int cli_ahead_start(cli_ahead **out, char **files, int n, int width, const stf_check_opts *o)
{
    *out = NULL;
    cli_ahead *a = calloc(1, sizeof *a);
    if (!a) return -1;
    a->files = files;
    a->n = n;
    a->width = width < 1 ? 1 : width;
    a->check = o != NULL;
    if (o) a->o = *o;
    /* A pool serves one call at a time: each input's numeric probes run
     * on the thread that checks it, the inputs side by side. */
    a->o.pool = NULL;
    cli_spool_dir(a->spool, sizeof a->spool, NULL);
    a->slots = calloc((size_t)n, sizeof *a->slots);
    int nt = a->width < n ? a->width : n;
    a->threads = calloc((size_t)nt, sizeof *a->threads);
    if (!a->slots || !a->threads) {
        free(a->slots);
        free(a->threads);
        free(a);
        return -1;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&a->threads[i], NULL, worker, a)) break;
        a->nthreads++;
    }
    if (!a->nthreads) {
        cli_ahead_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

/* Take input k's result; see cli.h. */
int cli_ahead_take(cli_ahead *a, int k, stf_ckpt **c, stf_check_report **r, stf_err *err)
{
    pthread_mutex_lock(&a->mu);
    while (!a->slots[k].done) pthread_cond_wait(&a->cv, &a->mu);
    a->taken = k + 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    slot *s = &a->slots[k];
    *c = s->c;
    *r = s->r;
    *err = s->err;
    s->c = NULL;
    s->r = NULL;
    return s->rc;
}

/* Stop the threads, free what no one took; see cli.h. */
void cli_ahead_free(cli_ahead *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->nthreads; i++) pthread_join(a->threads[i], NULL);
    for (int k = 0; k < a->n; k++) {
        stf_check_report_free(a->slots[k].r);
        stf_ckpt_free(a->slots[k].c);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a->slots);
    free(a->threads);
    free(a);
}
