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
#include <sys/stat.h>
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
    return stf__sha256_file_x(hex, size, path, 0, err);
}

/* ... and its pages dropped after (contract in sha256.h). */
int stf__sha256_file_x(char hex[65], uint64_t *size, const char *path, int uncache, stf_err *err)
{
    static const char digits[] = "0123456789abcdef";
    enum { CHUNK = 1 << 20 };
    int rc = 0;
    uint64_t total = 0;
    stf__sha256_ctx ctx;
    /* O_NONBLOCK: a FIFO would otherwise hold open() until a writer came;
     * only a regular file is read (O_NONBLOCK does nothing to one). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return stf__err(err, STF_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int serr = fstat(fd, &st) != 0 ? errno : 0;
    if (serr || !S_ISREG(st.st_mode)) {
        rc = serr ? stf__err(err, STF_EIO, "%s: cannot stat: %s", path, strerror(serr))
                  : stf__err(err, STF_EIO, "%s: cannot read: %s", path,
                             S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
        close(fd);
        return rc;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    unsigned char *buf = stf__malloc(CHUNK);
    int began = 1; /* end frees the context even when begin failed */
    if (stf__sha256_begin(&ctx) || !buf) {
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
        stf__sha256_update(&ctx, buf, (size_t)k);
        total += (uint64_t)k;
    }
    unsigned char d[32];
    began = 0;
    if (stf__sha256_end(&ctx, d)) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
    if (size) *size = total;
    if (uncache) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
done:
    if (began) {
        unsigned char sink[32];
        (void)stf__sha256_end(&ctx, sink);
    }
    stf__free(buf);
    close(fd);
    return rc;
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
