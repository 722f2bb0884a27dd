/*
 * SHA-256 from libcrypto. The one-shot SHA256() keeps its context on the
 * stack: nothing is allocated outside the library's allocation hook, and it
 * cannot fail.
 */
#include <openssl/sha.h>

#include "util/sha256.h"

void stf__sha256(unsigned char out[32], const void *data, size_t n)
{
    SHA256(n ? data : (const void *)"", n, out);
}

void stf__sha256_hex(char out[65], const void *data, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char d[32];
    stf__sha256(d, data, n);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = '\0';
}
