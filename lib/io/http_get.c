/*
 * One range request through libcurl, checked. A server that ignores the
 * Range header (200 and the whole body) is stopped at its first byte, so
 * a 20 GB body is never read, let alone held; an answer for another range,
 * another size or another version of the file (ETag, Last-Modified), or a
 * body longer or shorter than the range, is an error naming the URL and
 * the range. Connection failures, 429 and 5xx are retried with a growing
 * pause (Retry-After when the server gives one, capped). Redirects are
 * followed here, not by libcurl, so that only http and https are followed
 * and the extra headers and the token go to the host they were given for
 * and to no other.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "io/http_get.h"

#define MAX_REDIRECTS 10

typedef struct xfer {
    const char *name;
    uint64_t off, len;
    int first;
    const stf__http_ident *want; /* NULL for the first request */
    uint8_t *dst;
    uint64_t got;      /* body bytes kept */
    uint64_t seen;     /* body bytes received */
    int checked;       /* the status and headers were checked at the first byte */
    long status;
    uint64_t total;    /* the file size the answer gives */
    char crange[128];
    char etag[256];
    char lastmod[64];
    char ctype[128];
    long retry_after;  /* Retry-After in seconds; -1 when none */
    int failed;        /* a check failed: rc and err hold why */
    int rc;
    stf_err *err;
    CURL *curl;
    stf__net_tally *tally; /* the file's counters */
} xfer;

/* "Name: value" → value (spaces and the line end trimmed) into buf. */
static int header_is(const char *line, size_t n, const char *key, char *buf, size_t cap)
{
    size_t k = strlen(key);
    if (n <= k || strncasecmp(line, key, k) || line[k] != ':') return 0;
    const char *v = line + k + 1;
    size_t m = n - k - 1;
    while (m && (*v == ' ' || *v == '\t')) v++, m--;
    while (m && (v[m - 1] == '\r' || v[m - 1] == '\n' || v[m - 1] == ' ')) m--;
    if (m >= cap) m = cap - 1;
    memcpy(buf, v, m);
    buf[m] = '\0';
    return 1;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud)
{
    xfer *x = ud;
    size_t n = size * nitems;
    if (n >= 5 && !strncmp(line, "HTTP/", 5)) { /* a new answer: forget the last one's */
        x->crange[0] = x->etag[0] = x->lastmod[0] = x->ctype[0] = '\0';
        x->retry_after = -1;
        return n;
    }
    char ra[32];
    if (header_is(line, n, "Retry-After", ra, sizeof ra)) {
        char *end;
        errno = 0;
        long v = strtol(ra, &end, 10);
        if (!errno && end != ra && !*end && v >= 0) x->retry_after = v;
        return n;
    }
    if (header_is(line, n, "Content-Range", x->crange, sizeof x->crange)) return n;
    if (header_is(line, n, "ETag", x->etag, sizeof x->etag)) return n;
    if (header_is(line, n, "Last-Modified", x->lastmod, sizeof x->lastmod)) return n;
    header_is(line, n, "Content-Type", x->ctype, sizeof x->ctype);
    return n;
}

static int fail(xfer *x, int code, const char *rule, const char *fmt, const char *detail)
{
    char rng[64];
    snprintf(rng, sizeof rng, "%" PRIu64 "-%" PRIu64, x->off, x->off + x->len - 1);
    x->failed = 1;
    x->rc = stf__err_rule(x->err, code, rule, 1, x->off, "%s: bytes %s: %s%s", x->name, rng, fmt,
                          detail ? detail : "");
    return x->rc;
}

/* "bytes A-B/T" (T may be "*"). */
static int parse_crange(const char *s, uint64_t *a, uint64_t *b, uint64_t *t, int *t_known)
{
    char *end;
    if (strncasecmp(s, "bytes ", 6)) return -1;
    s += 6;
    if (!isdigit((unsigned char)*s)) return -1;
    errno = 0;
    *a = strtoull(s, &end, 10);
    if (errno || *end != '-' || !isdigit((unsigned char)end[1])) return -1;
    *b = strtoull(end + 1, &end, 10);
    if (errno || *end != '/' || *b < *a) return -1;
    *t_known = 0;
    if (end[1] == '*' && !end[2]) return 0;
    if (!isdigit((unsigned char)end[1])) return -1;
    *t = strtoull(end + 1, &end, 10);
    if (errno || *end) return -1;
    *t_known = 1;
    return 0;
}

/* The answer's status and headers, at its first body byte (or its end). */
static int check_answer(xfer *x, CURL *c, curl_off_t clen)
{
    char why[600];
    x->checked = 1;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->status != 200 && x->status != 206) return -1; /* the caller judges the status */
    if (x->status == 200) {
        /* The whole file: fine only for a first request that asked for more
         * than the file holds. */
        if (x->first && x->off == 0 && clen >= 0 && (uint64_t)clen <= x->len) {
            x->total = (uint64_t)clen;
            goto validators;
        }
        return fail(x, STF_EIO, "L13",
                    "L13 RangeIgnored: the server ignored the Range request and sent the whole "
                    "file (200); stopped at its first byte", NULL);
    }
    if (!strncasecmp(x->ctype, "multipart/", 10))
        return fail(x, STF_EIO, "L14", "L14 BadContentRange: a multipart answer to a one-range "
                                        "request: ", x->ctype);
    uint64_t a = 0, b = 0, t = 0;
    int tk = 0;
    if (!x->crange[0])
        return fail(x, STF_EIO, "L14", "L14 BadContentRange: a 206 answer with no Content-Range",
                    NULL);
    if (parse_crange(x->crange, &a, &b, &t, &tk))
        return fail(x, STF_EIO, "L14", "L14 BadContentRange: unreadable Content-Range: ",
                    x->crange);
    uint64_t want_b = x->off + x->len - 1;
    int ok = a == x->off && tk && b < t && (b == want_b || (x->first && b < want_b && b + 1 == t));
    if (ok && x->want && t != x->want->size) ok = 0;
    if (!ok) {
        snprintf(why, sizeof why, "Content-Range is '%s'%s", x->crange,
                 !tk ? " (no total size)" : x->want && t != x->want->size ? ", another size" : "");
        return fail(x, STF_EIO, "L14", "L14 BadContentRange: not the range asked for: ", why);
    }
    x->total = t;
validators:
    if (x->want && ((x->want->etag[0] && strcmp(x->want->etag, x->etag)) ||
                    (x->want->lastmod[0] && strcmp(x->want->lastmod, x->lastmod)))) {
        int et = x->want->etag[0] && strcmp(x->want->etag, x->etag);
        snprintf(why, sizeof why, "%s was '%s', now '%s'", et ? "ETag" : "Last-Modified",
                 et ? x->want->etag : x->want->lastmod, et ? x->etag : x->lastmod);
        return fail(x, STF_EIO, "L15",
                    "L15 RemoteChanged: the file changed while it was being read: ", why);
    }
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nitems, void *ud)
{
    xfer *x = ud;
    CURL *c = x->curl;
    size_t n = size * nitems;
    x->seen += n;
    if (!x->checked) {
        curl_off_t clen = -1;
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
        if (check_answer(x, c, clen)) return 0; /* stop: nothing of this body is read */
    }
    uint64_t room = (x->first ? (x->total < x->off + x->len ? x->total - x->off : x->len)
                              : x->len) - x->got;
    if ((uint64_t)n > room) {
        fail(x, STF_EIO, "L16", "L16 BodyLength: the body is longer than the range asked for",
             NULL);
        return 0;
    }
    memcpy(x->dst + x->got, data, n);
    x->got += n;
    return n;
}

static int same_host(const char *a, const char *b)
{
    char ha[512], hb[512];
    return !stf__net_url_host(ha, sizeof ha, a) && !stf__net_url_host(hb, sizeof hb, b) &&
           !strcasecmp(ha, hb);
}

static int is_http(const char *url)
{
    return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

/* The request headers for `url`: the extra headers and the token only
 * when it is on the host they were given for. NULL when none. */
static struct curl_slist *headers_for(const char *url, const char *named, int *oom)
{
    const stf_net_opts *o = stf__net_opts();
    struct curl_slist *l = NULL, *t;
    *oom = 0;
    if (same_host(url, named))
        for (size_t i = 0; i < o->nheaders; i++) {
            if (!(t = curl_slist_append(l, o->headers[i]))) goto nomem;
            l = t;
        }
    const char *ep = o->hub_endpoint && *o->hub_endpoint ? o->hub_endpoint : "https://huggingface.co";
    if (o->hub_token && *o->hub_token && same_host(url, ep)) {
        size_t n = strlen(o->hub_token) + 32;
        char *h = stf__malloc(n);
        if (!h) goto nomem;
        snprintf(h, n, "Authorization: Bearer %s", o->hub_token);
        t = curl_slist_append(l, h);
        stf__free(h);
        if (!t) goto nomem;
        l = t;
    }
    return l;
nomem:
    curl_slist_free_all(l);
    *oom = 1;
    return NULL;
}

static int retryable_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

static void pause_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* One transfer of [off, off+len) from `url` (no retries, one hop). */
static CURLcode perform(CURL *c, void *share, const char *url, const char *named, xfer *x,
                        char *cerr, struct curl_slist **hdrs, int *oom)
{
    const stf_net_opts *o = stf__net_opts();
    char rng[64];
    snprintf(rng, sizeof rng, "%" PRIu64 "-%" PRIu64, x->off, x->off + x->len - 1);
    curl_easy_reset(c);
    *hdrs = headers_for(url, named, oom);
    if (*oom) return CURLE_OUT_OF_MEMORY;
    x->curl = c;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_SHARE, share);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_RANGE, rng);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "stfix/" STF_VERSION_STRING);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, o->insecure ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, o->insecure ? 0L : 2L);
    /* "" is no proxy at all: libcurl must not take one from the environment. */
    curl_easy_setopt(c, CURLOPT_PROXY, o->proxy ? o->proxy : "");
    if (o->no_proxy) curl_easy_setopt(c, CURLOPT_NOPROXY, o->no_proxy);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)o->connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)o->stall_timeout_s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    cerr[0] = '\0';
    x->checked = 0;
    x->failed = 0;
    x->got = 0;
    x->status = 0;
    x->retry_after = -1;
    CURLcode cc = curl_easy_perform(c);
    stf__net_count(x->tally, 1, x->seen);
    /* Stopped at the first byte of an error page: the status says why. */
    if (cc == CURLE_WRITE_ERROR && !x->failed && x->checked && x->status != 200 &&
        x->status != 206)
        cc = CURLE_OK;
    x->seen = 0;
    if (!x->checked && cc == CURLE_OK) { /* an empty body: judge the answer now */
        curl_off_t clen = -1;
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
        check_answer(x, c, clen);
    }
    if (!x->status) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
    return cc;
}

/* See http_get.h. */
int stf__http_get(const char *name, const char *url, uint64_t off, uint64_t len, void *dst,
                  int first, stf__http_ident *ident, uint64_t *got, stf__net_tally *tally,
                  stf_err *err)
{
    const stf_net_opts *o = stf__net_opts();
    void *share;
    int rc = stf__net_global(&share, err);
    if (rc) return rc;
    void *hc;
    if ((rc = stf__net_handle_get(&hc, err, name))) return rc;
    CURL *c = hc;
    xfer x = { .name = name, .off = off, .len = len, .first = first, .want = first ? NULL : ident,
               .dst = dst, .err = err, .tally = tally };
    char cerr[CURL_ERROR_SIZE], hop[4096];
    char rng[64];
    snprintf(rng, sizeof rng, "%" PRIu64 "-%" PRIu64, off, off + len - 1);
    for (unsigned attempt = 0;; attempt++) {
        const char *at = url;
        CURLcode cc = CURLE_OK;
        int hops = 0;
        for (;;) {
            struct curl_slist *hdrs = NULL;
            int oom = 0;
            cc = perform(c, share, at, url, &x, cerr, &hdrs, &oom);
            curl_slist_free_all(hdrs);
            if (oom) {
                rc = stf__err(err, STF_ENOMEM, "%s: out of memory", name);
                goto done;
            }
            if (x.failed) {
                rc = x.rc;
                goto done;
            }
            if (cc != CURLE_OK || x.status < 300 || x.status > 399) break;
            char *loc = NULL;
            curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc);
            if (!loc || !is_http(loc)) {
                rc = stf__err_rule(err, STF_EIO, "L17", 1, off,
                                   "%s: bytes %s: L17 HttpFailed: redirect (%ld) %s%s%s", name,
                                   rng, x.status, loc ? "to '" : "with no location",
                                   loc ? loc : "", loc ? "', not an http or https URL" : "");
                goto done;
            }
            if (++hops > MAX_REDIRECTS || strlen(loc) >= sizeof hop) {
                rc = stf__err_rule(err, STF_EIO, "L17", 1, off,
                                   "%s: bytes %s: L17 HttpFailed: more than %d redirects", name,
                                   rng, MAX_REDIRECTS);
                goto done;
            }
            memcpy(hop, loc, strlen(loc) + 1);
            at = hop;
        }
        if (cc == CURLE_OK && (x.status == 200 || x.status == 206)) {
            uint64_t want = first ? (x.total < off + len ? x.total - off : len) : len;
            if (x.got == want) break;
            cc = CURLE_PARTIAL_FILE; /* a body cut short without libcurl noticing */
        }
        if (cc == CURLE_OK && x.status == 416 && first && off == 0 &&
            !strcmp(x.crange, "bytes */0")) { /* an empty file */
            x.total = 0;
            x.got = 0;
            break;
        }
        int again = cc != CURLE_OK ? retryable_curl(cc)
                                   : x.status == 429 || (x.status >= 500 && x.status <= 599);
        if (!again || attempt >= o->retries) {
            if (cc == CURLE_PARTIAL_FILE)
                rc = stf__err_rule(err, STF_EIO, "L16", 1, off + x.got,
                                   "%s: bytes %s: L16 BodyLength: the body ended after %" PRIu64
                                   " bytes%s",
                                   name, rng, x.got, attempt ? " (retried)" : "");
            else if (cc != CURLE_OK)
                rc = stf__err_rule(err, STF_EIO, "L17", 1, off,
                                   "%s: bytes %s: L17 HttpFailed: %s%s", name, rng,
                                   cerr[0] ? cerr : curl_easy_strerror(cc),
                                   attempt ? " (retried)" : "");
            else if (x.status == 404 || x.status == 410)
                rc = stf__err(err, STF_ENOTFOUND, "%s: HTTP %ld: no such file", name, x.status);
            else
                rc = stf__err_rule(err, STF_EIO, "L17", 1, off,
                                   "%s: bytes %s: L17 HttpFailed: HTTP %ld%s%s", name, rng,
                                   x.status,
                                   x.status == 401 || x.status == 403
                                       ? " (a token may be needed: HF_TOKEN or --header)"
                                       : "",
                                   attempt ? " (retried)" : "");
            goto done;
        }
        double wait = 0.25 * (double)(1u << (attempt < 8 ? attempt : 8));
        if (cc == CURLE_OK && x.retry_after >= 0) wait = (double)x.retry_after;
        if (wait > (double)o->max_retry_wait_s) wait = (double)o->max_retry_wait_s;
        pause_s(wait);
    }
    if (first) {
        ident->size = x.total;
        snprintf(ident->etag, sizeof ident->etag, "%s", x.etag);
        snprintf(ident->lastmod, sizeof ident->lastmod, "%s", x.lastmod);
    }
    if (got) *got = x.got;
    rc = 0;
done:
    stf__net_handle_put(c);
    return rc;
}
