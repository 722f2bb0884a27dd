/*
 * SHA-256 from libcrypto. The one-shot SHA256() keeps its context on the
 * stack: nothing is allocated outside the library's allocation hook, and it
 * cannot fail.
 */
#include <openssl/evp.h>
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

/* The streaming digest (contract in sha256.h). EVP allocates the context
 * itself, outside the library's allocation hook. */
int stf__sha256_begin(stf__sha256_ctx *c)
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    c->md = m;
    c->ok = m && EVP_DigestInit_ex(m, EVP_sha256(), NULL) == 1;
    return c->ok ? 0 : -1;
}

void stf__sha256_update(stf__sha256_ctx *c, const void *data, size_t n)
{
    if (c->ok && n) c->ok = EVP_DigestUpdate(c->md, data, n) == 1;
}

int stf__sha256_end(stf__sha256_ctx *c, unsigned char out[32])
{
    unsigned len = 0;
    int ok = c->ok && EVP_DigestFinal_ex(c->md, out, &len) == 1 && len == 32;
    EVP_MD_CTX_free(c->md);
    c->md = NULL;
    c->ok = 0;
    return ok ? 0 : -1;
}
