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

#ifdef __cplusplus
}
#endif
#endif
