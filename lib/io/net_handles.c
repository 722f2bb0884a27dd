/*
 * The process's libcurl easy handles, reused from one request to the next
 * and bounded: at most stf_net_opts.max_parallel requests are in flight at
 * once, whichever threads and files they come from (the workers of a pass,
 * the inputs a program reads ahead). A thread that finds them all in use
 * waits for one to come back. Handles are reset before each use (http_get.c)
 * and share the process's connections, DNS answers and TLS sessions
 * through its share handle (net_opts.c), so reusing one saves only its
 * set-up; the bound is what matters. An idle handle is kept for the next
 * request, never more than the bound.
 */
#include <pthread.h>

#include <curl/curl.h>

#include "io/net.h"

/* Idle handles kept, at most; a larger max_parallel frees the surplus. */
#define IDLE_MAX 64

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static unsigned g_busy;   /* handles given out and not yet back */
static unsigned g_peak;   /* the most given out at once */
static CURL *g_idle[IDLE_MAX];
static unsigned g_nidle;

/* The bound in force: max_parallel, at least 1. */
static unsigned bound(void)
{
    unsigned m = stf__net_opts()->max_parallel;
    return m ? m : 1;
}

/* See net.h. */
int stf__net_handle_get(void **out, stf_err *err, const char *name)
{
    void *share;
    *out = NULL;
    int rc = stf__net_global(&share, err);
    if (rc) return rc;
    (void)share;
    pthread_mutex_lock(&g_mu);
    while (g_busy >= bound()) pthread_cond_wait(&g_cv, &g_mu);
    g_busy++;
    if (g_busy > g_peak) g_peak = g_busy;
    CURL *c = g_nidle ? g_idle[--g_nidle] : NULL;
    pthread_mutex_unlock(&g_mu);
    if (!c) c = curl_easy_init();
    if (!c) {
        stf__net_handle_put(NULL);
        return stf__err(err, STF_ENOMEM, "%s: out of memory starting a request", name);
    }
    *out = c;
    return 0;
}

/* See net.h. */
void stf__net_handle_put(void *h)
{
    CURL *c = h;
    pthread_mutex_lock(&g_mu);
    if (c && g_nidle < IDLE_MAX && g_nidle < bound()) {
        g_idle[g_nidle++] = c;
        c = NULL;
    }
    g_busy--;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mu);
    if (c) curl_easy_cleanup(c);
}

/* See net.h. */
unsigned stf__net_handle_peak(int reset)
{
    pthread_mutex_lock(&g_mu);
    unsigned p = g_peak;
    if (reset) g_peak = g_busy;
    pthread_mutex_unlock(&g_mu);
    return p;
}
