/*
 * SHA-256 through libcrypto, used to name the exact recipe bytes an output
 * was produced with (`stfix.recipe_sha256`) and to name an output's lock.
 * Not part of the public API.
 */
#ifndef STF_SHA256_H
#define STF_SHA256_H

#include <stddef.h>

/* The 32-byte digest of data[0..n). */
void stf__sha256(unsigned char out[32], const void *data, size_t n);
/* The digest as 64 lower-case hex characters plus NUL. */
void stf__sha256_hex(char out[65], const void *data, size_t n);

#endif
