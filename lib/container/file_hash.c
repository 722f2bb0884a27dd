/*
 * The hashes model sites and UIs name a checkpoint file by, from one pass
 * over its bytes (stfix(1), hash): the SHA-256 of the whole file, its
 * first ten hex digits (AutoV2), and the SHA-256 of the tensor data alone,
 * the bytes after the 8-byte length and the N header bytes (the hash
 * kohya-ss's trainers store as sshs_model_hash, and ModelSpec's
 * modelspec.hash_sha256 with "0x" before it). A compressed shard is hashed
 * as the .safetensors bytes it restores to. S29 compares a stored
 * modelspec.hash_sha256 with the data.
 */
#include <string.h>

#include "container/container_internal.h"

enum { CHUNK = 1 << 20 };

static void hex_of(char out[65], const unsigned char d[32])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[64] = '\0';
}

/* Hash shard `shard` of c; `done` and `total` carry the progress of a pass
 * over several shards. */
static int shard_hash(stf_file_hash *out, const stf_ckpt *c, size_t shard, uint64_t *done,
                      uint64_t total, stf_progress_fn fn, void *ud, stf_err *err)
{
    const stf__source *src = stf__ckpt_shard_source(c, shard);
    if (!out || !src) return stf__err(err, STF_EINVAL, "hash: NULL argument or no shard %zu", shard);
    memset(out, 0, sizeof *out);
    const char *path = stf__source_path(src);
    uint64_t size = stf__source_size(src), start = 8 + stf_ckpt_shard_header_len(c, shard);
    stf__sha256_ctx whole, data;
    int bw = stf__sha256_begin(&whole), bd = stf__sha256_begin(&data), rc = 0;
    unsigned char *buf = stf__malloc(CHUNK);
    if (bw || bd || !buf) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (uint64_t off = 0; off < size;) {
        size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
        if ((rc = stf__source_read(src, off, buf, n, err))) goto done;
        stf__sha256_update(&whole, buf, n);
        if (off + n > start) {
            size_t skip = off < start ? (size_t)(start - off) : 0;
            stf__sha256_update(&data, buf + skip, n - skip);
        }
        off += n;
        *done += n;
        if (fn) fn(ud, *done, total, path, strlen(path));
    }
    unsigned char dw[32], dd[32];
    int ew = stf__sha256_end(&whole, dw), ed = stf__sha256_end(&data, dd);
    bw = bd = 1; /* ended */
    if (ew || ed) {
        rc = stf__err(err, STF_ENOMEM, "%s: SHA-256 failed", path);
        goto done;
    }
    hex_of(out->sha256, dw);
    memcpy(out->autov2, out->sha256, 10);
    out->autov2[10] = '\0';
    hex_of(out->data_sha256, dd);
    out->size = size;
    out->data_start = start;
done:
    if (!bw || !bd) {
        unsigned char sink[32];
        if (!bw) (void)stf__sha256_end(&whole, sink);
        if (!bd) (void)stf__sha256_end(&data, sink);
    }
    stf__free(buf);
    return rc;
}

/* Contract in stfix/experimental/container.h. */
int stf_ckpt_shard_hash(stf_file_hash *out, const stf_ckpt *c, size_t shard, stf_progress_fn fn,
                        void *ud, stf_err *err)
{
    uint64_t done = 0;
    if (!c) return stf__err(err, STF_EINVAL, "hash: NULL checkpoint");
    return shard_hash(out, c, shard, &done, stf_ckpt_shard_file_size(c, shard), fn, ud, err);
}

/* Whether the stored value v[0..n) names the digest `hex`: "0x" (or "0X")
 * and the 64 hex digits, in either case. */
static int names_digest(const char *v, size_t n, const char hex[65])
{
    if (n != 66 || v[0] != '0' || (v[1] != 'x' && v[1] != 'X')) return 0;
    for (size_t i = 0; i < 64; i++) {
        char ch = v[2 + i];
        if (ch >= 'A' && ch <= 'F') ch = (char)(ch - 'A' + 'a');
        if (ch != hex[i]) return 0;
    }
    return 1;
}

/* Contract in stfix/experimental/container.h. */
int stf_ckpt_check_hashes(stf_ckpt *c, stf_progress_fn fn, void *ud, stf_err *err)
{
    if (!c) return stf__err(err, STF_EINVAL, "hash: NULL checkpoint");
    size_t ns = stf_ckpt_shard_count(c);
    uint64_t total = 0, done = 0;
    for (size_t s = 0; s < ns; s++)
        if (stf_ckpt_meta_find(c, s, STF_MODELSPEC_HASH_KEY)) total += stf_ckpt_shard_file_size(c, s);
    for (size_t s = 0; s < ns; s++) {
        const stf_meta_entry *m = stf_ckpt_meta_find(c, s, STF_MODELSPEC_HASH_KEY);
        if (!m) continue;
        stf_file_hash h;
        int rc = shard_hash(&h, c, s, &done, total, fn, ud, err);
        if (rc) return rc;
        if (names_digest(m->value, m->value_len, h.data_sha256)) continue;
        char shown[STF__NAME_SHOWN];
        stf__name_render(shown, 80, m->value, m->value_len);
        const char *path = stf_ckpt_shard_path(c, s);
        if (stf__findings_add(stf__ckpt_findings(c), "S29", STF_SEV_INFO, path, NULL, 0, 1,
                              h.data_start,
                              "%s: S29 stale %s: the metadata says \"%s\", the tensor data "
                              "(bytes %llu to %llu) hash to 0x%s",
                              path, STF_MODELSPEC_HASH_KEY, shown,
                              (unsigned long long)h.data_start, (unsigned long long)h.size,
                              h.data_sha256))
            return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    return 0;
}
