/*
 * Compression while the output is being filled (stfix(1), COMPRESSED
 * FILES). The frame plan is fixed at prepare, from the layout; each frame
 * counts the bytes of deferred tensors it still misses. The fill that
 * brings a frame's count to zero reads the frame back from the
 * uncompressed temp file (the page cache: the compressing sink,
 * sink_zstd.c, turns direct I/O off for it) and compresses it on its own
 * thread, a worker of the pool, with the encoder stf__zstd_pack uses.
 * Frames complete out of file order (the small scale tensors at the front
 * are filled a few rows at a time until the very end), so each compressed
 * frame is appended to a spool, a temp file beside the output, and its
 * place recorded; at commit the frames
 * are copied from the spool in frame order, the frames nobody filled
 * (prepare's bytes) are compressed then, and the seek table closes the
 * file. Each frame is compressed independently with the same parameters,
 * so the bytes do not depend on which thread made which frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "io/zstd_out.h"

struct stf__zlive {
    char *name;             /* the output, for messages */
    int src_fd;             /* the uncompressed temp file, read-only */
    stf__zpack_opts o;
    stf__zframe *f;
    size_t nf;
    _Atomic uint64_t *left; /* per frame: deferred bytes not yet filled */
    stf__zspooled *sp;      /* per frame: written by the fill completing it */
    stf__sink spool;        /* open when any frame has a hole */
    int spooling;
    _Atomic uint64_t spool_end;
    pthread_mutex_t mu;     /* guards the idle encoders */
    int mu_live;
    stf__zenc **idle;
    size_t nidle, cap;      /* cap: encoders made, the most ever idle */
};

/* The first frame that ends after byte `at` (frames are in file order). */
static size_t frame_at(const stf__zlive *z, uint64_t at)
{
    size_t lo = 0, hi = z->nf;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->f[mid].off + z->f[mid].len <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static uint64_t overlap(const stf__zframe *f, uint64_t at, uint64_t len)
{
    uint64_t a = f->off > at ? f->off : at;
    uint64_t e = f->off + f->len < at + len ? f->off + f->len : at + len;
    return e > a ? e - a : 0;
}

/* Plan, count the holes, open the spool (contract in zstd_out.h). */
int stf__zlive_new(stf__zlive **out, const char *final, const char *src_path, uint64_t total,
                   const stf__zspan *spans, size_t nspans, const stf__zspan *holes,
                   size_t nholes, const stf__zpack_opts *o, stf_err *err)
{
    *out = NULL;
    stf__zlive *z = stf__calloc(1, sizeof *z);
    if (!z || !(z->name = stf__strdup(final))) {
        stf__free(z);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", final);
    }
    z->src_fd = -1;
    z->spool.fd = -1;
    z->o = *o;
    int rc = stf__zframes_plan(&z->f, &z->nf, total, spans, nspans, o->frame, o->grouped, err);
    if (rc) goto fail;
    size_t m = z->nf ? z->nf : 1;
    z->left = stf__calloc(m, sizeof *z->left);
    z->sp = stf__calloc(m, sizeof *z->sp);
    if (!z->left || !z->sp || pthread_mutex_init(&z->mu, NULL) != 0) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final);
        goto fail;
    }
    z->mu_live = 1;
    for (size_t i = 0; i < z->nf; i++) atomic_init(&z->left[i], 0);
    uint64_t missing = 0;
    for (size_t h = 0; h < nholes; h++)
        for (size_t i = frame_at(z, holes[h].off);
             i < z->nf && z->f[i].off < holes[h].off + holes[h].len; i++) {
            uint64_t k = overlap(&z->f[i], holes[h].off, holes[h].len);
            atomic_fetch_add(&z->left[i], k);
            missing += k;
        }
    z->src_fd = open(src_path, O_RDONLY | O_CLOEXEC);
    if (z->src_fd < 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot re-open the temporary file: %s", final,
                      strerror(errno));
        goto fail;
    }
    atomic_init(&z->spool_end, 0);
    if (missing) {
        if ((rc = stf__sink_open(&z->spool, final, err))) goto fail;
        z->spooling = 1;
    }
    *out = z;
    return 0;
fail:
    stf__zlive_free(z);
    return rc;
}

static stf__zenc *enc_take(stf__zlive *z)
{
    stf__zenc *e = NULL;
    pthread_mutex_lock(&z->mu);
    if (z->nidle) e = z->idle[--z->nidle];
    else {
        /* Room to give it back later, made now so giving back never fails. */
        stf__zenc **g = stf__realloc(z->idle, (z->cap + 1) * sizeof *g);
        if (g) {
            z->idle = g;
            if ((e = stf__zenc_new(&z->o))) z->cap++;
        }
    }
    pthread_mutex_unlock(&z->mu);
    return e;
}

static void enc_give(stf__zlive *z, stf__zenc *e)
{
    pthread_mutex_lock(&z->mu);
    z->idle[z->nidle++] = e;
    pthread_mutex_unlock(&z->mu);
}

/* Append n bytes to the spool at a place of their own. */
static int spool_put(stf__zlive *z, const stf__zframe *f, const unsigned char *p, size_t n,
                     uint64_t *at, stf_err *err)
{
    uint64_t off = atomic_fetch_add(&z->spool_end, (uint64_t)n);
    *at = off;
    int e = z->spool.hook && z->spool.hook(z->spool.hook_ud, off, n)
                ? ENOSPC
                : stf__pwrite_full(z->spool.fd, p, n, off);
    if (!e) return 0;
    return stf__err_rule(err, STF_EIO, "", 1, f->off,
                         "%s: spooling the compressed frame at byte %llu failed: %s", z->name,
                         (unsigned long long)f->off, strerror(e));
}

/* Frame i is complete: compress it into the spool. */
static int compress_frame(stf__zlive *z, size_t i, stf_err *err)
{
    stf__zenc *e = enc_take(z);
    if (!e) return stf__err(err, STF_ENOMEM, "%s: out of memory for compression", z->name);
    int rc = stf__zenc_frame(e, &z->o, &z->f[i], z->src_fd, z->name, err) ? STF_EIO : 0;
    if (rc) rc = err && err->code ? err->code : rc;
    size_t len = 0;
    uint32_t sum = 0;
    const unsigned char *p = rc ? NULL : stf__zenc_out(e, &len, &sum);
    if (!rc && len > UINT32_MAX)
        rc = stf__err(err, STF_ELIMIT, "%s: a compressed frame exceeds 4 GiB", z->name);
    uint64_t at = 0;
    if (!rc) rc = spool_put(z, &z->f[i], p, len, &at, err);
    enc_give(z, e);
    if (!rc) z->sp[i] = (stf__zspooled){ at, (uint32_t)len, sum, 1 };
    return rc;
}

/* Count filled bytes; compress the frames they complete (contract in
 * zstd_out.h). */
int stf__zlive_filled(stf__zlive *z, uint64_t at, uint64_t len, stf_err *err)
{
    for (size_t i = frame_at(z, at); len && i < z->nf && z->f[i].off < at + len; i++) {
        uint64_t k = overlap(&z->f[i], at, len);
        /* Only the fill that takes the count to zero sees it drop by
         * exactly its share; every other fill of the frame has returned
         * (its bytes are in the file) before. */
        if (k && atomic_fetch_sub(&z->left[i], k) == k) {
            int rc = compress_frame(z, i, err);
            if (rc) return rc;
        }
    }
    return 0;
}

/* Assemble the compressed file (contract in zstd_out.h). */
int stf__zlive_finish(stf__zlive *z, stf__sink *dst, stf_err *err)
{
    /* The encoders of the fills are done with: the packer makes its own. */
    for (size_t i = 0; i < z->nidle; i++) stf__zenc_free(z->idle[i]);
    z->nidle = 0;
    /* A frame still missing bytes (fills that overlapped: commit refuses
     * those before this) is compressed from the file like prepare's. */
    for (size_t i = 0; i < z->nf; i++)
        if (atomic_load(&z->left[i])) z->sp[i].done = 0;
    return stf__zstd_pack_frames(dst, z->src_fd, z->name, z->f, z->nf, z->sp, z->spool.fd,
                                 &z->o, err);
}

int stf__zlive_src_fd(const stf__zlive *z)
{
    return z->src_fd;
}

/* Free (contract in zstd_out.h). */
void stf__zlive_free(stf__zlive *z)
{
    if (!z) return;
    if (z->spooling) stf__sink_abort(&z->spool);
    if (z->src_fd >= 0) close(z->src_fd);
    for (size_t i = 0; i < z->nidle; i++) stf__zenc_free(z->idle[i]);
    if (z->mu_live) pthread_mutex_destroy(&z->mu);
    stf__free(z->idle);
    stf__free(z->left);
    stf__free(z->sp);
    stf__free(z->f);
    stf__free(z->name);
    stf__free(z);
}
