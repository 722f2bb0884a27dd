/*
 * Compressing an uncompressed output into the zstd seekable format
 * (stfix(1), COMPRESSED FILES). The frames of the plan are compressed a
 * batch at a time on the worker pool, each independently with the same
 * parameters, and appended in order with their seek-table entries while
 * the next batch compresses; the table closes the file. The bytes are
 * those of a one-thread run.
 *
 * The input is the uncompressed temp file read back by frame (pread).
 * The writer compresses most frames while the jobs still fill the file
 * (zstd_live.c, with the same encoder, stf__zenc_frame) into a spool;
 * those frames are copied from there in order here, and only the rest
 * are compressed.
 */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "io/zstd_out.h"

/* Frames per batch per pool thread: enough to keep the threads busy; at
 * most BATCH_MAX, and no more than BATCH_BYTES of uncompressed frames in
 * the two batches in flight (each frame also needs an output buffer and,
 * grouped, a scratch one), but always one. */
#define PER_THREAD 2
#define BATCH_MAX 32
#define BATCH_BYTES ((uint64_t)256 << 20)

struct stf__zenc {
    ZSTD_CCtx *cctx;
    unsigned char *in, *out, *scratch;
    size_t out_len;
    uint32_t sum; /* the seek table's checksum of the frame's bytes */
    stf_err err;
};
typedef struct stf__zenc slot;

/* One round on the pool: compress this batch's frames while the previous
 * batch, already compressed, is written (item 0), so the threads do not
 * wait for the write. */
typedef struct batch {
    slot *s;              /* this batch's slots */
    const stf__zframe *f; /* the batch's first frame */
    const stf__zspooled *sp; /* its frames' spool entries (NULL: none spooled) */
    size_t k;             /* its frames */
    int fd;
    const char *src_name;
    const stf__zpack_opts *o;
    slot *ws;             /* the previous batch (NULL: none), to write */
    size_t wk;
    const stf__zframe *wf;
    const stf__zspooled *wsp;
    stf__seek_entry *we;  /* its seek-table entries */
    stf__sink *dst;
    int spool_fd;
    stf_err werr;
} batch;

/* Append the compressed frames of slots ws[0, wk) in order, with their
 * seek-table entries; a frame spooled already (sp[i].done) is copied from
 * the spool instead. */
static int write_frames(stf__sink *dst, slot *ws, size_t wk, const stf__zframe *wf,
                        const stf__zspooled *sp, int spool_fd, stf__seek_entry *we,
                        stf_err *err)
{
    for (size_t i = 0; i < wk; i++) {
        int spooled = sp && sp[i].done;
        size_t len = spooled ? sp[i].csize : ws[i].out_len;
        if (len > UINT32_MAX)
            return stf__err(err, STF_ELIMIT, "%s: a compressed frame exceeds 4 GiB",
                            dst->final_path);
        we[i].csize = (uint32_t)len;
        we[i].dsize = wf[i].len;
        we[i].checksum = spooled ? sp[i].sum : ws[i].sum;
        int rc = spooled ? stf__sink_copy_fd(dst, spool_fd, sp[i].off, len, dst->final_path, err)
                         : stf__sink_write(dst, ws[i].out, len, err);
        if (rc) return rc;
    }
    return 0;
}

/* Read and compress one frame (contract in zstd_out.h). */
int stf__zenc_frame(stf__zenc *s, const stf__zpack_opts *o, const stf__zframe *f, int fd,
                    const char *src_name, stf_err *err)
{
    if (stf__pread_exact(fd, s->in, f->len, f->off, src_name, err)) return 1;
    if (f->grouped) {
        if (stf__stz_group_encode(s->cctx, s->out, stf__stz_group_bound(o->frame), &s->out_len,
                                  s->in, f->len, s->scratch, err))
            return 1;
        /* A grouped frame has no checksum of the restored order of its
         * own: the table gives one, as for a zstd frame. */
        s->sum = (uint32_t)(XXH64(s->in, f->len, 0) & 0xFFFFFFFFu);
        return 0;
    }
    size_t r = ZSTD_compress2(s->cctx, s->out, ZSTD_compressBound((size_t)o->frame), s->in,
                              f->len);
    if (ZSTD_isError(r)) {
        stf__err(err, STF_EIO, "%s: zstd: %s", src_name, ZSTD_getErrorName(r));
        return 1;
    }
    s->out_len = r;
    /* The frame's checksum (its last four bytes) is the table's. */
    s->sum = r >= 4 ? stf__le32(s->out + r - 4) : 0;
    return 0;
}

/* The compressed bytes of the last frame stf__zenc_frame made. */
const unsigned char *stf__zenc_out(const stf__zenc *e, size_t *len, uint32_t *sum)
{
    *len = e->out_len;
    *sum = e->sum;
    return e->out;
}

/* Frame f into slot s, unless it is spooled already. */
static int pack_frame(const batch *b, slot *s, const stf__zframe *f, const stf__zspooled *sp)
{
    stf_err_clear(&s->err);
    if (sp && sp->done) return 0;
    return stf__zenc_frame(s, b->o, f, b->fd, b->src_name, &s->err);
}

/* Item 0 writes the previous batch (when there is one); item 1 + i
 * compresses frame i of this one. */
static int pack_one(void *ud, size_t begin, size_t end)
{
    batch *b = ud;
    for (size_t i = begin; i < end; i++) {
        if (i == 0) {
            if (b->ws && write_frames(b->dst, b->ws, b->wk, b->wf, b->wsp, b->spool_fd, b->we,
                                      &b->werr))
                return 1;
            continue;
        }
        if (pack_frame(b, &b->s[i - 1], &b->f[i - 1], b->sp ? &b->sp[i - 1] : NULL)) return 1;
    }
    return 0;
}

static slot *slots_new(size_t n, const stf__zpack_opts *o);

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

/* Release encoders (contract in zstd_out.h). */
void stf__zenc_free(stf__zenc *e)
{
    slots_free(e, 1);
}

/* One encoder (contract in zstd_out.h). */
stf__zenc *stf__zenc_new(const stf__zpack_opts *o)
{
    return slots_new(1, o);
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

/* Append the seek table: one skippable frame, with checksums (a .stz
 * file's too). */
static int put_table(stf__sink *dst, const stf__seek_entry *e, size_t n, stf_err *err)
{
    size_t per = STF__SEEK_ENTRY_SIZE_CHECKSUM;
    size_t body = n * per + STF__SEEK_FOOTER_SIZE;
    unsigned char *t = stf__malloc(8 + body);
    if (!t) return stf__err(err, STF_ENOMEM, "%s: out of memory", dst->final_path);
    stf__put_le32(t, STF__SEEK_TABLE_MAGIC);
    stf__put_le32(t + 4, (uint32_t)body);
    unsigned char *p = t + 8;
    for (size_t i = 0; i < n; i++, p += per) {
        stf__put_le32(p, e[i].csize);
        stf__put_le32(p + 4, e[i].dsize);
        stf__put_le32(p + 8, e[i].checksum);
    }
    stf__put_le32(p, (uint32_t)n);
    p[4] = STF__SEEK_CHECKSUM_FLAG;
    stf__put_le32(p + 5, STF__SEEKABLE_MAGIC);
    int rc = stf__sink_write(dst, t, 8 + body, err);
    stf__free(t);
    return rc;
}

/* Compress src_fd into dst (contract in zstd_out.h). */
int stf__zstd_pack(stf__sink *dst, int src_fd, const char *src_name, uint64_t total,
                   const stf__zspan *spans, size_t nspans, const stf__zpack_opts *o,
                   stf_err *err)
{
    stf__zframe *f = NULL;
    size_t nf = 0;
    int rc = stf__zframes_plan(&f, &nf, total, spans, nspans, o->frame, o->grouped, err);
    if (!rc) rc = stf__zstd_pack_frames(dst, src_fd, src_name, f, nf, NULL, -1, o, err);
    stf__free(f);
    return rc;
}

/* Compress or copy the frames of a plan into dst (contract in zstd_out.h). */
int stf__zstd_pack_frames(stf__sink *dst, int src_fd, const char *src_name,
                          const stf__zframe *f, size_t nf, const stf__zspooled *sp,
                          int spool_fd, const stf__zpack_opts *o, stf_err *err)
{
    int rc = 0;
    size_t threads = o->pool ? stf_pool_threads(o->pool) : 1;
    size_t nb = threads * PER_THREAD;
    if (nb > BATCH_MAX) nb = BATCH_MAX;
    if (nb > BATCH_BYTES / (2 * o->frame)) nb = (size_t)(BATCH_BYTES / (2 * o->frame));
    if (nb < 1) nb = 1;
    if (nb > nf) nb = nf ? nf : 1;
    stf__seek_entry *e = stf__calloc(nf ? nf : 1, sizeof *e);
    /* Two sets of slots: one compressing, the other being written. */
    slot *s = slots_new(2 * nb, o);
    if (!e || !s) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory for compression", dst->final_path);
        goto done;
    }
    batch b = { 0 };
    b.fd = src_fd;
    b.src_name = src_name;
    b.o = o;
    b.dst = dst;
    b.spool_fd = spool_fd;
    for (size_t at = 0, round = 0; at < nf || b.ws; round++) {
        size_t k = at < nf ? (nf - at < nb ? nf - at : nb) : 0;
        b.s = s + (round % 2) * nb;
        b.f = f + at;
        b.sp = sp ? sp + at : NULL;
        b.k = k;
        stf_err_clear(&b.werr);
        if (stf_pool_run(o->pool, k + 1, 1, pack_one, &b)) {
            if (b.werr.code) {
                if (err) *err = b.werr;
                rc = b.werr.code;
                goto done;
            }
            for (size_t i = 0; i < k; i++)
                if (b.s[i].err.code) {
                    if (err) *err = b.s[i].err;
                    rc = b.s[i].err.code;
                    goto done;
                }
            rc = stf__err(err, STF_EIO, "%s: compression failed", dst->final_path);
            goto done;
        }
        /* What was compressed is written next round. */
        b.ws = k ? b.s : NULL;
        b.wk = k;
        b.wf = f + at;
        b.wsp = sp ? sp + at : NULL;
        b.we = e + at;
        at += k;
    }
    rc = put_table(dst, e, nf, err);
done:
    slots_free(s, 2 * nb);
    stf__free(e);
    return rc;
}
