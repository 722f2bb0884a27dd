/*
 * Compressing an uncompressed output into the zstd seekable format
 * (stfix(1), COMPRESSED FILES). The frames of the plan are compressed a
 * batch at a time on the worker pool, each independently with the same
 * parameters, and appended in order with their seek-table entries; the
 * table closes the file. The bytes are those of a one-thread run.
 */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "container/zstd_pack.h"

/* Frames in flight per pool thread: enough to keep the threads busy while
 * the previous batch is written; at most BATCH_MAX, and no more than
 * BATCH_BYTES of uncompressed frames (each also needs an output buffer
 * and, grouped, a scratch one), but always one. */
#define PER_THREAD 2
#define BATCH_MAX 32
#define BATCH_BYTES ((uint64_t)256 << 20)

typedef struct slot {
    ZSTD_CCtx *cctx;
    unsigned char *in, *out, *scratch;
    size_t out_len;
    stf_err err;
} slot;

typedef struct batch {
    slot *s;
    const stf__zframe *f; /* the batch's first frame */
    int fd;
    const char *src_name;
    const stf__zpack_opts *o;
} batch;

static int read_at(int fd, unsigned char *buf, size_t n, uint64_t off, const char *name,
                   stf_err *err)
{
    while (n) {
        ssize_t r = pread(fd, buf, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return stf__err_rule(err, STF_EIO, "", 1, off, "%s: read failed at byte %llu: %s",
                                 name, (unsigned long long)off,
                                 r < 0 ? strerror(errno) : "unexpected end of file");
        buf += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* Compress frame i of the batch in slot i. */
static int pack_one(void *ud, size_t begin, size_t end)
{
    batch *b = ud;
    for (size_t i = begin; i < end; i++) {
        slot *s = &b->s[i];
        const stf__zframe *f = &b->f[i];
        stf_err_clear(&s->err);
        if (read_at(b->fd, s->in, f->len, f->off, b->src_name, &s->err)) return 1;
        if (f->grouped) {
            if (stf__stz_group_encode(s->cctx, s->out, stf__stz_group_bound(b->o->frame),
                                      &s->out_len, s->in, f->len, s->scratch, &s->err))
                return 1;
            continue;
        }
        size_t r = ZSTD_compress2(s->cctx, s->out, ZSTD_compressBound((size_t)b->o->frame),
                                  s->in, f->len);
        if (ZSTD_isError(r)) {
            stf__err(&s->err, STF_EIO, "%s: zstd: %s", b->src_name, ZSTD_getErrorName(r));
            return 1;
        }
        s->out_len = r;
    }
    return 0;
}

static void slots_free(slot *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        ZSTD_freeCCtx(s[i].cctx);
        stf__free(s[i].in);
        stf__free(s[i].out);
        stf__free(s[i].scratch);
    }
    stf__free(s);
}

static slot *slots_new(size_t n, const stf__zpack_opts *o)
{
    slot *s = stf__calloc(n, sizeof *s);
    if (!s) return NULL;
    size_t fr = (size_t)o->frame;
    size_t out = ZSTD_compressBound(fr);
    if (o->grouped && stf__stz_group_bound(fr) > out) out = stf__stz_group_bound(fr);
    for (size_t i = 0; i < n; i++) {
        s[i].cctx = ZSTD_createCCtx();
        s[i].in = stf__malloc(fr);
        s[i].out = stf__malloc(out);
        s[i].scratch = o->grouped ? stf__malloc(fr) : NULL;
        if (!s[i].cctx || !s[i].in || !s[i].out || (o->grouped && !s[i].scratch) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s[i].cctx, ZSTD_c_compressionLevel, o->level)) ||
            /* The frame checksum is the seek table's: XXH64's low 32 bits. */
            ZSTD_isError(ZSTD_CCtx_setParameter(s[i].cctx, ZSTD_c_checksumFlag, 1)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s[i].cctx, ZSTD_c_contentSizeFlag, 1))) {
            slots_free(s, n);
            return NULL;
        }
    }
    return s;
}

/* Append the seek table: one skippable frame. */
static int put_table(stf__sink *dst, const stf__seek_entry *e, size_t n, int checksums,
                     stf_err *err)
{
    size_t per = checksums ? 12 : 8;
    size_t body = n * per + STF__SEEK_FOOTER_SIZE;
    unsigned char *t = stf__malloc(8 + body);
    if (!t) return stf__err(err, STF_ENOMEM, "%s: out of memory", dst->final_path);
    stf__put_le32(t, STF__SEEK_TABLE_MAGIC);
    stf__put_le32(t + 4, (uint32_t)body);
    unsigned char *p = t + 8;
    for (size_t i = 0; i < n; i++, p += per) {
        stf__put_le32(p, e[i].csize);
        stf__put_le32(p + 4, e[i].dsize);
        if (checksums) stf__put_le32(p + 8, e[i].checksum);
    }
    stf__put_le32(p, (uint32_t)n);
    p[4] = checksums ? STF__SEEK_CHECKSUM_FLAG : 0;
    stf__put_le32(p + 5, STF__SEEKABLE_MAGIC);
    int rc = stf__sink_write(dst, t, 8 + body, err);
    stf__free(t);
    return rc;
}

/* Compress src_fd into dst (contract in zstd_pack.h). */
int stf__zstd_pack(stf__sink *dst, int src_fd, const char *src_name, uint64_t total,
                   const stf__zspan *spans, size_t nspans, const stf__zpack_opts *o,
                   stf_err *err)
{
    stf__zframe *f = NULL;
    size_t nf = 0;
    int rc = stf__zframes_plan(&f, &nf, total, spans, nspans, o->frame, o->grouped, err);
    if (rc) return rc;
    size_t threads = o->pool ? stf_pool_threads(o->pool) : 1;
    size_t nb = threads * PER_THREAD;
    if (nb > BATCH_MAX) nb = BATCH_MAX;
    if (nb > BATCH_BYTES / o->frame) nb = (size_t)(BATCH_BYTES / o->frame);
    if (nb < 1) nb = 1;
    if (nb > nf) nb = nf ? nf : 1;
    stf__seek_entry *e = stf__calloc(nf ? nf : 1, sizeof *e);
    slot *s = slots_new(nb, o);
    if (!e || !s) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory for compression", dst->final_path);
        goto done;
    }
    for (size_t at = 0; at < nf; at += nb) {
        size_t k = nf - at < nb ? nf - at : nb;
        batch b = { s, f + at, src_fd, src_name, o };
        if (stf_pool_run(o->pool, k, 1, pack_one, &b)) {
            for (size_t i = 0; i < k; i++)
                if (s[i].err.code) {
                    if (err) *err = s[i].err;
                    rc = s[i].err.code;
                    goto done;
                }
            rc = stf__err(err, STF_EIO, "%s: compression failed", dst->final_path);
            goto done;
        }
        for (size_t i = 0; i < k; i++) {
            if (s[i].out_len > UINT32_MAX) {
                rc = stf__err(err, STF_ELIMIT, "%s: a compressed frame exceeds 4 GiB",
                              dst->final_path);
                goto done;
            }
            stf__seek_entry *x = &e[at + i];
            x->csize = (uint32_t)s[i].out_len;
            x->dsize = f[at + i].len;
            x->checksum = o->grouped || s[i].out_len < 4
                              ? 0
                              : stf__le32(s[i].out + s[i].out_len - 4);
            if ((rc = stf__sink_write(dst, s[i].out, s[i].out_len, err))) goto done;
        }
    }
    rc = put_table(dst, e, nf, !o->grouped, err);
done:
    slots_free(s, nb);
    stf__free(e);
    stf__free(f);
    return rc;
}
