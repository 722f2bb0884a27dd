/*
 * SHA-256 (FIPS 180-4), used to name the exact recipe bytes an output was
 * produced with (`stfix.recipe_sha256`). Not part of the public API.
 */
#ifndef STF_SHA256_H
#define STF_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct stf__sha256 {
    uint32_t h[8];
    uint64_t len;          /* bytes hashed so far */
    unsigned char buf[64]; /* pending partial block */
    size_t fill;
} stf__sha256;

void stf__sha256_init(stf__sha256 *c);
void stf__sha256_update(stf__sha256 *c, const void *data, size_t n);
/* Writes the 32-byte digest; the context must be re-initialised to reuse it. */
void stf__sha256_final(stf__sha256 *c, unsigned char out[32]);
/* One-shot digest of `n` bytes as 64 lower-case hex characters plus NUL. */
void stf__sha256_hex(char out[65], const void *data, size_t n);

#endif
