/*
 * modelspec.hash_sha256 kept true (stfix(1), hash). ModelSpec's value is
 * "0x" and the SHA-256 of a file's tensor data, the bytes after its
 * header, so it can only be known once every byte is in, while the header
 * that holds it comes first. Its length never changes, though: prepare
 * writes "0x" and 64 zeros in its place, and commit reads each file's data
 * back, hashes it and writes the 64 digits over the zeros, before the
 * fsync and the rename. Fills land out of file order (the scales, filled
 * last, sit before the weights), so hashing as they arrive is not an
 * option. A compressed output counts the digits as bytes still to be
 * filled (writer_zstd.c), and its sink compresses the frame that holds
 * them when the patch puts them in. A comparing writer (stfix verify)
 * makes the header with the value the existing file holds: its tensors
 * are compared byte for byte anyway.
 */
#include <stdio.h>
#include <string.h>

#include "container/writer_state.h"

enum { CHUNK = 1 << 20 };

static const char KEY[] = STF_MODELSPEC_HASH_KEY;

static int is_key(const stf_meta_entry *e)
{
    return e->key_len == sizeof KEY - 1 && !memcmp(e->key, KEY, sizeof KEY - 1);
}

/* The value a comparing writer expects: the existing file's, when it is
 * "0x" and 64 lower-case hex digits; else the zeros. */
static void value_of_existing(char v[67], const char *final)
{
    stf_ckpt *c = NULL;
    if (stf_ckpt_open(&c, final, NULL, NULL)) return;
    const stf_meta_entry *e = stf_ckpt_meta_find(c, 0, KEY);
    int ok = e && e->value_len == 66 && e->value[0] == '0' && e->value[1] == 'x';
    for (size_t i = 2; ok && i < 66; i++)
        ok = (e->value[i] >= '0' && e->value[i] <= '9') || (e->value[i] >= 'a' && e->value[i] <= 'f');
    if (ok) memcpy(v, e->value, 66);
    stf_ckpt_free(c);
}

/* Contract in writer_state.h. */
int stf__whash_meta(stf_writer *w, size_t shard, stf_meta_entry **meta, stf_err *err)
{
    *meta = NULL;
    size_t k = 0;
    while (k < w->meta.n && !is_key(&w->meta.v[k])) k++;
    if (k == w->meta.n) return 0;
    size_t ns = w->nshards ? w->nshards : 1;
    if (!w->hash_at && (!(w->hash_at = stf__calloc(ns, sizeof *w->hash_at)) ||
                        !(w->data_at = stf__calloc(ns, sizeof *w->data_at))))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    memcpy(w->hash_value, "0x", 2);
    memset(w->hash_value + 2, '0', 64);
    w->hash_value[66] = '\0';
    if (w->compare) value_of_existing(w->hash_value, w->finals[shard]);
    stf_meta_entry *m = stf__calloc(w->meta.n, sizeof *m);
    if (!m) return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    for (size_t i = 0; i < w->meta.n; i++) {
        m[i] = w->meta.v[i];
        if (is_key(&m[i])) {
            m[i].value = w->hash_value;
            m[i].value_len = 66;
        }
    }
    *meta = m;
    return 0;
}

/* Contract in writer_state.h. */
void stf__whash_locate(stf_writer *w, size_t shard, const char *hdr, size_t n)
{
    if (!w->hash_at) return;
    w->data_at[shard] = 8 + n;
    /* "KEY":"0x and the digits: the quotes around the colon are raw, which
     * a quote escaped inside a name or a value is not, and __metadata__
     * comes first in a canonical header. */
    char pat[sizeof KEY + 72];
    size_t pl = (size_t)snprintf(pat, sizeof pat, "\"%s\":\"%s\"", KEY, w->hash_value);
    for (size_t i = 0; pl <= n && i <= n - pl; i++)
        if (!memcmp(hdr + i, pat, pl)) {
            w->hash_at[shard] = 8 + i + pl - 65; /* the first digit, after "0x */
            return;
        }
}

/* Hash the data of shard s, read back through its sink, and write the
 * digits into its header. */
static int patch(stf_writer *w, size_t s, unsigned char *buf, stf_err *err)
{
    stf__sink *sk = &w->sinks[s];
    const char *path = w->finals[s];
    uint64_t start = w->data_at[s], end = sk->off;
    stf__sha256_ctx h;
    unsigned char d[32];
    int rc = 0;
    if (stf__sha256_begin(&h)) rc = stf__err(err, STF_ENOMEM, "%s: cannot start SHA-256", path);
    for (uint64_t off = start; !rc && off < end;) {
        size_t want = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
        if ((rc = stf__sink_read(sk, off, buf, want, err))) break;
        stf__sha256_update(&h, buf, want);
        off += want;
    }
    if (stf__sha256_end(&h, d) && !rc) rc = stf__err(err, STF_ENOMEM, "%s: SHA-256 failed", path);
    if (rc) return rc;
    static const char digits[] = "0123456789abcdef";
    char hex[64];
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    uint64_t at = w->hash_at[s];
    return stf__sink_patch(sk, at, hex, 64, err);
}

/* Contract in writer_state.h. */
int stf__whash_finish(stf_writer *w, stf_err *err)
{
    if (!w->hash_at || w->compare) return 0;
    unsigned char *buf = stf__malloc(CHUNK);
    if (!buf) return stf__err(err, STF_ENOMEM, "%s: out of memory", w->path);
    int rc = 0;
    for (size_t s = 0; s < w->nshards && !rc; s++)
        if (w->hash_at[s]) rc = patch(w, s, buf, err);
    stf__free(buf);
    return rc;
}
