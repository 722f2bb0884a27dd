/*
 * SHA-256 through libcrypto, used to name the exact recipe bytes an output
 * was produced with (`stfix.recipe_sha256`) and to name an output's lock.
 * Not part of the public API.
 */
#ifndef STF_SHA256_H
#define STF_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/base.h"

/* The 32-byte digest of data[0..n). */
void stf__sha256(unsigned char out[32], const void *data, size_t n);
/* The digest as 64 lower-case hex characters plus NUL. */
void stf__sha256_hex(char out[65], const void *data, size_t n);

/*
 * stf_sha256_file; with `uncache`, the file's pages then leave the page
 * cache (a file written to be hashed once, as stf__sink_keep_cache keeps
 * it, goes as if it had been written with O_DIRECT).
 */
int stf__sha256_file_x(char hex[65], uint64_t *size, const char *path, int uncache,
                       stf_err *err);

/* The digest of a stream fed in pieces (a compressed output's restored
 * bytes): begin (-1 when libcrypto cannot make a context), update any
 * number of times, end (which frees the context; call it also to give up). */
typedef struct stf__sha256_ctx {
    void *md; /* EVP_MD_CTX */
    int ok;   /* every call so far succeeded */
} stf__sha256_ctx;
int stf__sha256_begin(stf__sha256_ctx *c);
void stf__sha256_update(stf__sha256_ctx *c, const void *data, size_t n);
/* 0 with the digest in out, -1 when a step failed. */
int stf__sha256_end(stf__sha256_ctx *c, unsigned char out[32]);

#endif
