/*
 * stfix EXPERIMENTAL API, util layer: JSON and text escapes, file hashing,
 * the thread pool.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_BASE_H
#define STFIX_EXPERIMENTAL_BASE_H

#include "../base.h"

/* Marks an experimental function: exported, but outside the stable API. */
#define STF_EXPERIMENTAL_API STF_API

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- text */

/* Both write, cut and escape bad UTF-8 as base.h says above stf_name_escape. */

/*
 * A JSON string literal of s[0..n), quotes included, with serde_json's
 * escaping (the canonical header's): \" \\ \b \f \n \r \t, other bytes
 * below 0x20 as \u00xx in lowercase hex, all other UTF-8 raw.
 */
STF_EXPERIMENTAL_API
size_t stf_json_quote(char *dst, size_t cap, const char *s, size_t n);

/*
 * As stf_name_escape, for free text such as a message that already holds
 * escaped names: backslashes and quotes pass raw.
 */
STF_EXPERIMENTAL_API
size_t stf_text_escape(char *dst, size_t cap, const char *s, size_t n);

/*
 * Where a function that renders text (stf_check_report_json) writes it:
 * len bytes at `text`, not NUL-terminated, in order. Return 0 to go on, or
 * a negative value to stop: the renderer then returns STF_EIO.
 */
typedef int (*stf_text_fn)(void *ud, const char *text, size_t len);

/* ------------------------------------------------------------- errors */

/*
 * The exit status stfix(1) ends with for an error code (stfix(1), EXIT
 * STATUS): 0 for STF_OK; 2, invalid input, for STF_EFORMAT, STF_ELIMIT,
 * STF_ENOTFOUND, STF_EUNSUPPORTED and STF_ENUMERIC; 3, usage, for
 * STF_EINVAL; 4, the operation failed, for STF_EIO, STF_ENOMEM, STF_EBUSY,
 * STF_ECANCELED and any other code. Bindings map errors to their classes
 * with it, so a host program and the command line agree.
 */
STF_EXPERIMENTAL_API
int stf_err_exit_status(int code);

/* "STF_EFORMAT" and so on: the name of a code of base.h; NULL for STF_OK
 * and for a code base.h does not define. */
STF_EXPERIMENTAL_API
const char *stf_err_code_name(int code);

/* ------------------------------------------------------------- hashing */

/*
 * The SHA-256 of the file at `path` as 64 lower-case hex digits and a NUL,
 * read once from start to end; *size (may be NULL) gets its length.
 * STF_EIO names the path when it cannot be opened or read, or is not a
 * regular file (a directory, a FIFO: never waited on).
 */
STF_EXPERIMENTAL_API
int stf_sha256_file(char hex[65], uint64_t *size, const char *path, stf_err *err);

/* ------------------------------------------------------------- threads */

/*
 * stf_pool (declared in base.h) is a fixed pool of worker threads. Work is
 * split into contiguous index ranges whose boundaries do not depend on the
 * thread count, so results never do either. One stf_pool_run at a time per
 * pool: a pool may not be shared by calls running at once.
 */
/* nthreads == 0: one per online core. nthreads == 1: no threads, run inline. */
STF_EXPERIMENTAL_API
int stf_pool_new(stf_pool **out, unsigned nthreads, stf_err *err);
STF_EXPERIMENTAL_API
void stf_pool_free(stf_pool *p);
STF_EXPERIMENTAL_API
unsigned stf_pool_threads(const stf_pool *p);

/*
 * Call fn(ud, begin, end) over [0, count) in chunks of `grain` indices,
 * spread over the pool (p may be NULL: run inline). Returns the first
 * non-zero value any call returned (by lowest chunk index), else 0.
 */
typedef int (*stf_range_fn)(void *ud, size_t begin, size_t end);
STF_EXPERIMENTAL_API
int stf_pool_run(stf_pool *p, size_t count, size_t grain, stf_range_fn fn, void *ud);

/* ---------------------------------------------------------- network */

/*
 * Where the library reads a checkpoint named by URL: an http:// or
 * https:// URL is read with HTTP range requests, and hf://ORG/REPO[@REV]/PATH
 * is the hub's {hub_endpoint}/ORG/REPO/resolve/{REV or main}/PATH. The
 * library reads no environment: the program passes in what it found there
 * (the token, the proxy). Make the struct with stf_net_opts_init.
 */
#define STF_NET_OPTS_VERSION 1u
typedef struct stf_net_opts {
    unsigned version;             /* STF_NET_OPTS_VERSION, set by stf_net_opts_init */
    const char *hub_endpoint;     /* base of hf:// names (default https://huggingface.co) */
    const char *hub_token;        /* sent as "Authorization: Bearer TOKEN" to the hub
                                   * endpoint's host only; NULL: none */
    const char *const *headers;   /* extra request headers ("Name: value"), sent to the host
                                   * of the URL as named, never to a host a redirect leads to */
    size_t nheaders;
    const char *proxy;            /* proxy URL for every request; NULL or "": none */
    const char *no_proxy;         /* hosts reached without the proxy (curl's NOPROXY list) */
    int insecure;                 /* 1: do not verify TLS certificates (default 0: verify) */
    unsigned connect_timeout_s;   /* connection set-up limit (default 30) */
    unsigned stall_timeout_s;     /* a transfer receiving nothing this long fails (default 60) */
    unsigned retries;             /* retries of a failed connection, 429 or 5xx (default 4) */
    unsigned max_retry_wait_s;    /* longest pause before a retry, Retry-After included
                                   * (default 30) */
    uint64_t first_range;         /* bytes asked for by the first request of a file, to hold
                                   * its header in one go (default 65536) */
    unsigned max_parallel;        /* range requests in flight at once (default 8) */
} stf_net_opts;

STF_EXPERIMENTAL_API
void stf_net_opts_init_version(stf_net_opts *o, unsigned version);
#define stf_net_opts_init(o) stf_net_opts_init_version((o), STF_NET_OPTS_VERSION)

/*
 * Use o for every remote input opened from now on (copied: the strings
 * may go after the call). Process-wide, like stf_set_allocator: call it
 * before opening anything remote, never while a remote checkpoint is open.
 * STF_EINVAL for options the library does not know, STF_ENOMEM.
 */
STF_EXPERIMENTAL_API
int stf_net_configure(const stf_net_opts *o, stf_err *err);

/* 1 when `name` is read over the network (http://, https://, hf://). */
STF_EXPERIMENTAL_API
int stf_net_is_remote(const char *name);

/*
 * Bytes of response bodies received and HTTP requests made by this
 * process so far (retries included). Either pointer may be NULL.
 */
STF_EXPERIMENTAL_API
void stf_net_stats(uint64_t *bytes, uint64_t *requests);

#ifdef __cplusplus
}
#endif
#endif
