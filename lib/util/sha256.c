/*
 * SHA-256 from libcrypto. The one-shot SHA256() keeps its context on the
 * stack: nothing is allocated outside the library's allocation hook, and it
 * cannot fail. A file is hashed through an EVP context (libcrypto's
 * allocation), chunk by chunk as it is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>
#include <unistd.h>

#include "stfix/experimental/base.h"
#include "util/util.h"

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

/* The sha256 of a whole file, read once (contract in stfix/experimental/base.h). */
int stf_sha256_file(char hex[65], uint64_t *size, const char *path, stf_err *err)
{
    static const char digits[] = "0123456789abcdef";
    enum { CHUNK = 1 << 20 };
    int rc = 0;
    uint64_t total = 0;
    unsigned char *buf = NULL;
    EVP_MD_CTX *ctx = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return stf__err(err, STF_EIO, "%s: cannot open: %s", path, strerror(errno));
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    buf = stf__malloc(CHUNK);
    ctx = EVP_MD_CTX_new();
    if (!buf || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (;;) {
        ssize_t k = read(fd, buf, CHUNK);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = stf__err_rule(err, STF_EIO, "", 1, total, "%s: read failed at byte %llu: %s",
                               path, (unsigned long long)total, strerror(errno));
            goto done;
        }
        if (k == 0) break;
        EVP_DigestUpdate(ctx, buf, (size_t)k);
        total += (uint64_t)k;
    }
    unsigned char d[32];
    unsigned dl = 0;
    EVP_DigestFinal_ex(ctx, d, &dl);
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
    if (size) *size = total;
done:
    EVP_MD_CTX_free(ctx);
    stf__free(buf);
    close(fd);
    return rc;
}
