/*
 * The process's network settings and counters, and its one libcurl share
 * handle: every request of the run shares connections (a file's ranges and
 * the shards of an index reuse one connection per host), DNS answers and
 * TLS sessions through it. The settings are copied in by
 * stf_net_configure; the library never reads the environment, so a proxy
 * or token is used only when the program passes it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <curl/curl.h>

#include "io/net.h"

static stf_net_opts g_opts;
static int g_opts_set;
static char *g_strs;    /* one block holding the copied strings */
static const char **g_headers;
static _Atomic uint64_t g_bytes, g_requests;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_curl_rc = -1;
static CURLSH *g_share;
static pthread_mutex_t g_locks[CURL_LOCK_DATA_LAST];

/* Defaults of a layout; see base.h. */
void stf_net_opts_init_version(stf_net_opts *o, unsigned version)
{
    if (!o || !stf__opts_reset(o, sizeof *o, version, STF_NET_OPTS_VERSION)) return;
    o->connect_timeout_s = 30;
    o->stall_timeout_s = 60;
    o->retries = 4;
    o->max_retry_wait_s = 30;
    o->first_range = 65536;
    o->max_parallel = 8;
}

const stf_net_opts *stf__net_opts(void)
{
    if (!g_opts_set) {
        stf_net_opts_init(&g_opts);
        g_opts_set = 1;
    }
    return &g_opts;
}

static size_t str_room(const char *s) { return s ? strlen(s) + 1 : 0; }

static const char *str_put(char **at, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*at, s, n);
    const char *r = *at;
    *at += n;
    return r;
}

/* Copy o in; see base.h. */
int stf_net_configure(const stf_net_opts *o, stf_err *err)
{
    if (!o) return stf__err(err, STF_EINVAL, "stf_net_configure: NULL argument");
    if (stf__opts_version(err, o->version, STF_NET_OPTS_VERSION, "stf_net_opts"))
        return STF_EINVAL;
    if (o->nheaders && !o->headers)
        return stf__err(err, STF_EINVAL, "stf_net_configure: headers is NULL");
    size_t room = str_room(o->hub_endpoint) + str_room(o->hub_token) + str_room(o->proxy) +
                  str_room(o->no_proxy) + 1;
    for (size_t i = 0; i < o->nheaders; i++) room += str_room(o->headers[i]);
    char *strs = stf__malloc(room);
    const char **hdrs = o->nheaders ? stf__calloc(o->nheaders, sizeof *hdrs) : NULL;
    if (!strs || (o->nheaders && !hdrs)) {
        stf__free(strs);
        stf__free(hdrs);
        return stf__err(err, STF_ENOMEM, "out of memory copying the network options");
    }
    stf_net_opts n = *o;
    char *at = strs;
    n.hub_endpoint = str_put(&at, o->hub_endpoint);
    n.hub_token = str_put(&at, o->hub_token);
    n.proxy = str_put(&at, o->proxy);
    n.no_proxy = str_put(&at, o->no_proxy);
    for (size_t i = 0; i < o->nheaders; i++) hdrs[i] = str_put(&at, o->headers[i]);
    n.headers = hdrs;
    if (!n.first_range) n.first_range = 65536;
    if (!n.max_parallel) n.max_parallel = 1;
    stf__free(g_strs);
    stf__free(g_headers);
    g_strs = strs;
    g_headers = hdrs;
    g_opts = n;
    g_opts_set = 1;
    return 0;
}

/* Counters; see base.h. */
void stf_net_stats(uint64_t *bytes, uint64_t *requests)
{
    if (bytes) *bytes = atomic_load(&g_bytes);
    if (requests) *requests = atomic_load(&g_requests);
}

void stf__net_count(stf__net_tally *file, uint64_t requests, uint64_t bytes)
{
    if (file) {
        atomic_fetch_add(&file->requests, requests);
        atomic_fetch_add(&file->bytes, bytes);
    }
    atomic_fetch_add(&g_requests, requests);
    atomic_fetch_add(&g_bytes, bytes);
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *ud)
{
    (void)h;
    (void)a;
    (void)ud;
    pthread_mutex_lock(&g_locks[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *ud)
{
    (void)h;
    (void)ud;
    pthread_mutex_unlock(&g_locks[d]);
}

/* curl_global_init is not thread-safe before 7.84: once per process. The
 * share lives until the process ends (a host may open remote files from
 * several threads; nothing tells us the last has gone). */
static void global_start(void)
{
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&g_locks[i], NULL);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return;
    g_share = curl_share_init();
    if (!g_share) return;
    curl_share_setopt(g_share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(g_share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(g_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(g_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(g_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    g_curl_rc = 0;
}

int stf__net_global(void **share, stf_err *err)
{
    pthread_once(&g_once, global_start);
    if (g_curl_rc)
        return stf__err_rule(err, STF_EIO, "L17", 0, 0, "libcurl could not be initialised");
    *share = g_share;
    return 0;
}
