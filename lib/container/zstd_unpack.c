/*
 * Restoring the uncompressed bytes of a compressed output, streaming and
 * in bounded memory (stfix(1), COMPRESSED FILES): zstd frames of any size
 * through a decompression stream, skippable frames (the seek table)
 * skipped, grouped frames of a .stz file decoded whole (each is at most
 * one frame of the plan). Used by stfix decompress and --zstd-verify.
 *
 * When the file ends in a seek table, its frames are checked against it as
 * the seekable reader checks them (zsrc_seekable.c), with the same
 * messages: each frame starts where its entry says, ends after its
 * compressed size (S27), restores its decompressed size (S27) and, when
 * the table carries checksums, bytes whose XXH64 low 32 bits are the
 * entry's (S28). A malformed table is refused as the reader refuses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "container/container_internal.h"
#include "container/zstd_pack.h"

#define IN_BUF ((size_t)1 << 20)
#define OUT_BUF ((size_t)4 << 20)

typedef struct unpack {
    int fd;
    const char *name;
    uint64_t size;
    stf__zout_fn out;
    void *ud;
    ZSTD_DCtx *dctx;
    unsigned char *in, *outb;
    size_t in_cap, out_cap;
    /* The seek table, when the file ends in one (has_table). */
    int has_table;
    stf__seek_table t;
    size_t fi;               /* the entry of the frame being restored */
    uint64_t fout;           /* bytes that frame restored so far */
    XXH64_state_t *xs;       /* their hash, when the table has checksums */
} unpack;

static int rd(const unpack *u, void *buf, size_t n, uint64_t off, stf_err *err)
{
    return stf__pread_exact(u->fd, buf, n, off, u->name, err);
}

static int bad(const unpack *u, uint64_t at, const char *what, stf_err *err)
{
    return stf__err_rule(err, STF_EFORMAT, "", 1, at, "%s: %s at compressed byte %llu",
                         u->name, what, (unsigned long long)at);
}

/* Restored bytes to the caller, counted and hashed for the table. */
static int emit(unpack *u, const void *p, size_t n, stf_err *err)
{
    u->fout += n;
    if (u->xs) XXH64_update(u->xs, p, n);
    return u->out(u->ud, p, n, err);
}

/* The seek table, when the last bytes of the file are a seekable footer:
 * parsed with the reader's default caps (a malformed one is an error). */
static int load_table(unpack *u, stf_err *err)
{
    uint8_t foot[STF__SEEK_FOOTER_SIZE];
    stf__seek_footer f;
    if (u->size < STF__SEEK_FOOTER_SIZE) return 0;
    int rc = rd(u, foot, sizeof foot, u->size - sizeof foot, err);
    if (rc || !stf__seek_footer_present(foot)) return rc;
    stf_open_opts oo;
    stf__zread_opts o;
    stf_open_opts_init(&oo);
    stf__zread_opts_from(&o, &oo);
    if ((rc = stf__seek_footer_parse(&f, foot, u->size, u->name, &o, err))) return rc;
    uint8_t *tbl = stf__malloc((size_t)f.table_size);
    if (!tbl) return stf__err(err, STF_ENOMEM, "%s: out of memory for the seek table", u->name);
    rc = rd(u, tbl, (size_t)f.table_size, u->size - f.table_size, err);
    if (!rc) rc = stf__seek_table_parse(&u->t, &f, tbl, u->size, u->name, &o, err);
    stf__free(tbl);
    if (!rc && u->t.checksum && !(u->xs = XXH64_createState()))
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", u->name);
    if (!rc) u->has_table = 1;
    return rc;
}

/* Before a frame at `at`: it must be the next entry's. */
static int table_begin(unpack *u, uint64_t at, stf_err *err)
{
    if (!u->has_table) return 0;
    if (u->fi >= u->t.nframes || u->t.frames[u->fi].c_off != at)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, at,
                             "%s: S27 ZstdSeekTable: a frame starts at compressed byte %llu, "
                             "where the seek table has none",
                             u->name, (unsigned long long)at);
    u->fout = 0;
    if (u->xs) XXH64_reset(u->xs, 0);
    return 0;
}

/* After the frame that began at entry u->fi and ends at `end`: its sizes
 * and checksum against the entry (the reader's messages). */
static int table_end(unpack *u, uint64_t end, stf_err *err)
{
    if (!u->has_table) return 0;
    size_t k = u->fi++;
    const stf__seek_frame *fr = &u->t.frames[k];
    unsigned long long at = (unsigned long long)fr->c_off;
    if (end - fr->c_off != fr->c_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, end,
                             "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu ends "
                             "after %llu bytes, the seek table says %lu",
                             u->name, k, at, (unsigned long long)(end - fr->c_off),
                             (unsigned long)fr->c_size);
    if (u->fout != fr->d_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off,
                             "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu decodes "
                             "to %llu bytes, the seek table says %lu",
                             u->name, k, at, (unsigned long long)u->fout,
                             (unsigned long)fr->d_size);
    if (!u->xs) return 0;
    uint32_t h = (uint32_t)(XXH64_digest(u->xs) & 0xFFFFFFFFu);
    if (h == fr->checksum) return 0;
    return stf__err_rule(err, STF_EFORMAT, "S28", 1, fr->c_off,
                         "%s: S28 ZstdChecksum: frame %zu at compressed byte %llu "
                         "decodes to bytes whose checksum is 0x%08lx, the seek table "
                         "says 0x%08lx",
                         u->name, k, at, (unsigned long)h, (unsigned long)fr->checksum);
}

/* One zstd frame from *pos, streamed; *pos moves past it. */
static int zframe(unpack *u, uint64_t *pos, stf_err *err)
{
    uint64_t start = *pos, at = start;
    ZSTD_DCtx_reset(u->dctx, ZSTD_reset_session_only);
    for (;;) {
        if (at >= u->size) return bad(u, start, "truncated zstd frame", err);
        size_t k = u->size - at < u->in_cap ? (size_t)(u->size - at) : u->in_cap;
        int rc = rd(u, u->in, k, at, err);
        if (rc) return rc;
        ZSTD_inBuffer in = { u->in, k, 0 };
        size_t left = 1;
        while (in.pos < in.size && left) {
            ZSTD_outBuffer out = { u->outb, u->out_cap, 0 };
            left = ZSTD_decompressStream(u->dctx, &out, &in);
            if (ZSTD_isError(left)) {
                char what[160];
                snprintf(what, sizeof what, "corrupt zstd frame (%s) starting",
                         ZSTD_getErrorName(left));
                return bad(u, start, what, err);
            }
            if (out.pos && (rc = emit(u, u->outb, out.pos, err))) return rc;
        }
        /* Flush what the stream still holds once the frame's input ended. */
        while (left) {
            ZSTD_outBuffer out = { u->outb, u->out_cap, 0 };
            ZSTD_inBuffer none = { NULL, 0, 0 };
            left = ZSTD_decompressStream(u->dctx, &out, &none);
            if (ZSTD_isError(left)) return bad(u, start, "corrupt zstd frame starting", err);
            if (!out.pos) break;
            if ((rc = emit(u, u->outb, out.pos, err))) return rc;
        }
        at += in.pos;
        if (!left) {
            *pos = at;
            return 0;
        }
    }
}

static int group(unpack *u, uint64_t *pos, stf_err *err)
{
    unsigned char h[STF__STZ_GROUP_HEADER];
    uint64_t at = *pos;
    if (u->size - at < sizeof h) return bad(u, at, "truncated grouped frame", err);
    int rc = rd(u, h, sizeof h, at, err);
    if (rc) return rc;
    uint64_t d = stf__le32(h + 8), n = sizeof h + (uint64_t)stf__le32(h + 12) + stf__le32(h + 16);
    if (d > STF__ZSTD_FRAME_MAX || n > stf__stz_group_bound(STF__ZSTD_FRAME_MAX))
        return bad(u, at, "grouped frame claims too large a size", err);
    if (n > u->size - at) return bad(u, at, "truncated grouped frame", err);
    unsigned char *src = stf__malloc((size_t)n), *dst = stf__malloc(d ? (size_t)d : 1),
                  *tmp = stf__malloc(d ? (size_t)d : 1);
    size_t got = 0;
    if (!src || !dst || !tmp) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", u->name);
    if (!rc) rc = rd(u, src, (size_t)n, at, err);
    if (!rc)
        rc = stf__stz_group_decode(u->dctx, src, (size_t)n, dst, (size_t)d, tmp, &got, u->name,
                                   at, err);
    if (!rc) rc = emit(u, dst, got, err);
    stf__free(src);
    stf__free(dst);
    stf__free(tmp);
    if (!rc) *pos = at + n;
    return rc;
}

/* Frame by frame to the end (contract in zstd_pack.h). */
int stf__zstd_unpack(int fd, const char *name, uint64_t size, stf__zout_fn out, void *ud,
                     stf_err *err)
{
    /* Buffers larger than the stream's suggested ones: fewer reads and
     * writes for the same bounded memory. */
    unpack u = { fd, name, size, out, ud, ZSTD_createDCtx(), NULL, NULL, IN_BUF, OUT_BUF, 0,
                 { 0 }, 0, 0, NULL };
    u.in = stf__malloc(u.in_cap);
    u.outb = stf__malloc(u.out_cap);
    int rc = 0;
    if (!u.dctx || !u.in || !u.outb) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    if (!size) {
        rc = bad(&u, 0, "empty file: no zstd frame", err);
        goto done;
    }
    if ((rc = load_table(&u, err))) goto done;
    for (uint64_t pos = 0; pos < size && !rc;) {
        unsigned char m[8];
        if (size - pos < 4) {
            rc = bad(&u, pos, "truncated frame header", err);
            break;
        }
        if ((rc = rd(&u, m, 4, pos, err))) break;
        uint32_t magic = stf__le32(m);
        if (magic == STF__ZSTD_MAGIC || magic == STF__STZ_GROUP_MAGIC) {
            if ((rc = table_begin(&u, pos, err))) break;
            rc = magic == STF__ZSTD_MAGIC ? zframe(&u, &pos, err) : group(&u, &pos, err);
            if (!rc) rc = table_end(&u, pos, err);
        }
        else if ((magic & STF__ZSTD_SKIPPABLE_MASK) == STF__ZSTD_SKIPPABLE_MAGIC) {
            if (size - pos < 8) {
                rc = bad(&u, pos, "truncated skippable frame", err);
                break;
            }
            if ((rc = rd(&u, m, 8, pos, err))) break;
            uint64_t len = stf__le32(m + 4);
            if (len > size - pos - 8) rc = bad(&u, pos, "truncated skippable frame", err);
            else pos += 8 + len;
        } else rc = bad(&u, pos, "not a zstd frame", err);
    }
done:
    stf__seek_table_free(&u.t);
    if (u.xs) XXH64_freeState(u.xs);
    ZSTD_freeDCtx(u.dctx);
    stf__free(u.in);
    stf__free(u.outb);
    return rc;
}

static int hash_out(void *ud, const void *p, size_t n, stf_err *err)
{
    (void)err;
    stf__sha256_update(ud, p, n);
    return 0;
}

/* SHA-256 of the `total` bytes of fd. */
static int hash_fd(stf__sha256_ctx *h, int fd, uint64_t total, const char *name, stf_err *err)
{
    size_t cap = (size_t)1 << 20;
    unsigned char *b = stf__malloc(cap);
    if (!b) return stf__err(err, STF_ENOMEM, "%s: out of memory", name);
    int rc = 0;
    for (uint64_t off = 0; off < total && !rc; off += cap) {
        size_t k = total - off < cap ? (size_t)(total - off) : cap;
        unpack u = { fd, name, total, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, { 0 }, 0, 0, NULL };
        if (!(rc = rd(&u, b, k, off, err))) stf__sha256_update(h, b, k);
    }
    stf__free(b);
    return rc;
}

/* Restore zpath and compare digests (contract in zstd_pack.h). */
int stf__zstd_verify(const char *zpath, const char *final, int src_fd, uint64_t total,
                     stf_err *err)
{
    stf__sha256_ctx a, b;
    unsigned char da[32], db[32];
    int rc = 0;
    int zfd = open(zpath, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (zfd < 0 || fstat(zfd, &st) != 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot re-open the compressed output: %s", final,
                      strerror(errno));
        if (zfd >= 0) close(zfd);
        return rc;
    }
    int ha = stf__sha256_begin(&a), hb = stf__sha256_begin(&b);
    if (ha || hb) rc = stf__err(err, STF_ENOMEM, "%s: cannot start SHA-256", final);
    if (!rc) rc = stf__zstd_unpack(zfd, final, (uint64_t)st.st_size, hash_out, &a, err);
    if (!rc) rc = hash_fd(&b, src_fd, total, final, err);
    int ea = stf__sha256_end(&a, da), eb = stf__sha256_end(&b, db);
    if (!rc && (ea || eb)) rc = stf__err(err, STF_EIO, "%s: SHA-256 failed", final);
    if (!rc && memcmp(da, db, 32))
        rc = stf__err(err, STF_EIO,
                      "%s: --zstd-verify: the decompressed output differs from the "
                      "uncompressed stream (SHA-256 mismatch)",
                      final);
    else if (rc)
        stf__err_prefix(err, "--zstd-verify: ");
    close(zfd);
    return rc;
}

/* SHA-256 of the restored bytes (contract in zstd_pack.h). */
int stf__zstd_sha256(char hex[65], const char *path, stf_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int rc = stf__err(err, STF_EIO, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return rc;
    }
    stf__sha256_ctx h;
    unsigned char d[32];
    int rc = stf__sha256_begin(&h) ? stf__err(err, STF_ENOMEM, "%s: cannot start SHA-256", path)
                                   : stf__zstd_unpack(fd, path, (uint64_t)st.st_size, hash_out,
                                                      &h, err);
    if (stf__sha256_end(&h, d) && !rc) rc = stf__err(err, STF_EIO, "%s: SHA-256 failed", path);
    close(fd);
    if (rc) return rc;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}
