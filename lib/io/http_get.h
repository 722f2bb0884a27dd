/*
 * One range request of a remote file, with its retries and redirects, and
 * the checks of its answer (http_get.c). Internal to lib/io.
 */
#ifndef STF_IO_HTTP_GET_H
#define STF_IO_HTTP_GET_H

#include "io/net.h"

/* What a remote file's first answer said, which every later one must
 * repeat (the file did not change between requests). */
typedef struct stf__http_ident {
    uint64_t size;
    char etag[256];
    char lastmod[64];
} stf__http_ident;

/*
 * GET [off, off + len) of `url` (`name` in messages) into dst. With first
 * set, this is the file's first request: the answer may be shorter than len
 * when the file is (a 206 ending at the file's end, or a 200 holding the
 * whole file when it fits in len), *got says how many bytes came, and
 * *ident is filled in. Otherwise the answer must be exactly the range, with
 * ident's size and validators. Every request made (each retry and
 * redirect hop) is counted in the process's counters and in *tally, the
 * file's (may be NULL). Errors: see net.h (L13-L17).
 */
int stf__http_get(const char *name, const char *url, uint64_t off, uint64_t len, void *dst,
                  int first, stf__http_ident *ident, uint64_t *got, stf__net_tally *tally,
                  stf_err *err);

#endif
