/*
 * Remote byte sources: a file behind an http://, https:// or hf:// name,
 * read with HTTP range requests through libcurl. Only the bytes asked for
 * cross the network: the first request asks for the file's first
 * `first_range` bytes (the header, usually, in one go), later reads ask for
 * exactly their range, and a prefetch of many small ranges (the markers)
 * coalesces adjacent ones into one request. The file must stay what it was
 * at open: every answer is checked against the first one's ETag and
 * Last-Modified, and against the range asked for. Internal to the library;
 * the options come in through stf_net_configure (net_opts.c).
 */
#ifndef STF_IO_NET_H
#define STF_IO_NET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* One remote file. Reads are thread-safe. */
typedef struct stf__http stf__http;

/*
 * What one remote file cost: the requests made for it and their body
 * bytes, counted as stf_net_stats counts them (every request, retries,
 * redirect hops and failed answers included), from whatever thread made
 * them. Zeroed when the file is opened.
 */
typedef struct stf__net_tally {
    _Atomic uint64_t bytes, requests;
} stf__net_tally;

/* A byte range [off, off + len) of a remote file. */
typedef struct stf__range {
    uint64_t off, len;
} stf__range;

/*
 * Whether `name` is a remote name: 1 for http://, https:// and hf://
 * (the scheme in any case), else 0.
 */
int stf__net_is_url(const char *name);

/*
 * The URL `name` is fetched from, in *out (freed with stf__free): an
 * http(s) URL as it is, hf://ORG/REPO[@REV]/PATH as
 * ENDPOINT/ORG/REPO/resolve/REV/PATH (REV main when left out). STF_EINVAL
 * naming `name` for a URL without a host or an hf:// name without ORG,
 * REPO or PATH; STF_ENOMEM.
 */
int stf__net_resolve(char **out, const char *name, stf_err *err);

/*
 * The host part of an http(s) URL ("host" or "host:port", lowercase
 * compared by the caller), in buf (cap bytes); 0, or -1 when the URL has
 * none or it does not fit.
 */
int stf__net_url_host(char *buf, size_t cap, const char *url);

/*
 * Open the remote file `name` (a name stf__net_is_url accepts): one range
 * request for its first opts.first_range bytes, which tells its size and
 * validators and is kept for the reads that follow. Errors name `name`:
 * STF_ENOTFOUND for 404 and 410, STF_EIO with a rule id (L13-L17) for an
 * answer that is not the range asked for or a transfer that failed after
 * its retries. Free with stf__http_free.
 */
int stf__http_open(stf__http **out, const char *name, stf_err *err);

/* The size of the file as its first answer gave it. */
uint64_t stf__http_size(const stf__http *h);

/*
 * Copy [off, off + len) into dst: from the bytes kept (the first range,
 * prefetched ranges, blocks read ahead) where they hold it, the rest with
 * one range request, of its own bytes or of a block read ahead (a read
 * that goes on where an earlier one ended).
 * The caller has checked the range lies inside the size. Errors as
 * stf__http_open, with err->offset the first byte of the range.
 */
int stf__http_read(stf__http *h, uint64_t off, void *dst, size_t len, stf_err *err);

/*
 * Fetch the ranges r[0..n) (sorted or not) now and keep them for reads:
 * ranges at most a few KiB apart are fetched in one request. Ranges over
 * 64 MiB in all are left for their reads. Errors as stf__http_read.
 */
int stf__http_prefetch(stf__http *h, const stf__range *r, size_t n, stf_err *err);

/* The requests made for h since it was opened and their body bytes, the
 * first range's included (either pointer may be NULL). */
void stf__http_network(const stf__http *h, uint64_t *bytes, uint64_t *requests);

/* Close, free. No-op on NULL. */
void stf__http_free(stf__http *h);

/* ------------------------------------------------- net_opts.c internals */

/* The options in force (defaults until stf_net_configure). */
const stf_net_opts *stf__net_opts(void);
/* Count a request and its body bytes: in the process's counters
 * (stf_net_stats) and in *file's, the file it was made for (may be NULL). */
void stf__net_count(stf__net_tally *file, uint64_t requests, uint64_t bytes);
/*
 * The process's libcurl state, made on first use: 0, or STF_EIO when
 * libcurl cannot start. The share handle (connections, DNS, TLS sessions)
 * for every request, as a void * to keep curl.h out of this header.
 */
int stf__net_global(void **share, stf_err *err);

/* ---------------------------------------------- net_handles.c internals */

/*
 * A libcurl easy handle (a CURL * as a void *) for one request, waiting
 * while max_parallel are in use: the bound on requests in flight in the
 * process. Give it back with stf__net_handle_put once the request and its
 * retries are done. 0; STF_ENOMEM naming `name`, STF_EIO when libcurl
 * cannot start.
 */
int stf__net_handle_get(void **out, stf_err *err, const char *name);
/* Give back a handle of stf__net_handle_get (NULL: one that could not be
 * made), waking a thread that waits for one. */
void stf__net_handle_put(void *h);
/* The most handles in use at once since the last reset; with reset set,
 * starts counting again from those in use now. For the tests. */
unsigned stf__net_handle_peak(int reset);

#endif
