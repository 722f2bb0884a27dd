/*
 * A zstd stream without a seek table (zsrc.h): one decompressor moving
 * forward through the data, in bounded memory (libzstd's input and output
 * buffers, a window of at most 128 MiB, the held header). A read at or
 * past the position reached decompresses up to it, keeping only what the
 * read asked for. A read behind it opens an unnamed spool file in the
 * spool directory (O_TMPFILE, or a temporary unlinked at once, so it is
 * gone on every path out, a crash included), decompresses again from the
 * start into it, and from then on serves every byte already passed from
 * the spool: the stream is decompressed at most twice, and once when the
 * consumer reads in data order. The spool holds at most max_spool bytes
 * (L11). All of it under one mutex.
 *
 * Frames that do not record their content size are not decompressed to
 * learn it: the safetensors header declares the file's size, and the
 * reader takes that (stf__zstream_settle), after the walk's bounds agree.
 * Nothing past it is ever decompressed, so a stream that decodes to more
 * (a bomb) costs no more than the size it claims, and a command that reads
 * only the header and a few tensors decompresses only up to them. Whether
 * the stream really ends there is known when a read gets there.
 */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "io/zsrc.h"

typedef struct stf__zstream stf__zstream;

struct stf__zstream {
    stf__source *raw;
    const char *path;
    uint64_t d_size, frames;
    pthread_mutex_t mu;
    ZSTD_DStream *ds;
    uint8_t *in, *out;
    size_t in_cap, out_cap;
    ZSTD_inBuffer ib;
    uint64_t in_off;         /* raw offset of the next input read */
    uint64_t pos;            /* decompressed bytes produced since the (re)start */
    size_t last_k;           /* out[0, last_k) holds [pos - last_k, pos) */
    int pending;             /* the last call filled out: more may come without input */
    size_t last_zr;          /* its return: 0 at the end of a frame */
    uint8_t *head;           /* the held first head_n bytes, head_have of them read */
    uint64_t head_n, head_have;
    char *spool_dir;
    int spool_fd;            /* -1 until a read goes back */
    uint64_t spool_end;      /* bytes [0, spool_end) are in the spool */
    uint64_t max_spool;      /* spool cap; 0: d_size */
    int mode;
    int unsized;             /* some frame does not record its content size */
    int settled;             /* d_size is the header's (unsized only) */
    int end_checked;         /* the stream was seen to end at d_size */
    uint64_t d_min;          /* the least the walk allows (unsized only) */
    uint64_t hdr_n;          /* the header's N, for S19 (settled only) */
};

/* S19 for an unsized stream that decodes to more or less than the header
 * declares; `how` says what is known of it ("at least 5"). */
static int size_mismatch(const stf__zstream *z, uint64_t size, uint64_t hdr_n, const char *how,
                         uint64_t bytes, stf_err *err)
{
    return stf__err_rule(err, STF_EFORMAT, "S19", 1, 8 + hdr_n,
                         "%s: S19 MetadataIncompleteBuffer (byte %llu): the tensors cover %llu "
                         "data bytes, so the file should be %llu bytes, but its zstd stream, "
                         "whose frames do not record their size, decodes to %s %llu",
                         z->path, (unsigned long long)(8 + hdr_n),
                         (unsigned long long)(size - 8 - hdr_n), (unsigned long long)size, how,
                         (unsigned long long)bytes);
}

static void restart(stf__zstream *z)
{
    ZSTD_DCtx_reset(z->ds, ZSTD_reset_session_only);
    z->ib.pos = z->ib.size = 0;
    z->in_off = 0;
    z->pos = 0;
    z->last_k = 0;
    z->pending = 0;
    z->last_zr = 0;
}

/* Whether the whole stream has been decompressed. */
static int at_end(const stf__zstream *z)
{
    return z->ib.pos == z->ib.size && z->in_off == stf__source_size(z->raw) && !z->pending &&
           z->last_zr == 0;
}

/* An unnamed file in the spool directory. */
static int spool_open(stf__zstream *z, stf_err *err)
{
    char eb[128];
    int fd = open(z->spool_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        size_t n = strlen(z->spool_dir) + sizeof "/.stfix-spool-XXXXXX";
        char *t = stf__malloc(n);
        if (!t) return stf__err(err, STF_ENOMEM, "%s: out of memory", z->path);
        snprintf(t, n, "%s/.stfix-spool-XXXXXX", z->spool_dir);
        fd = mkostemp(t, O_CLOEXEC);
        if (fd >= 0) unlink(t);
        stf__free(t);
    }
    if (fd < 0)
        return stf__err(err, STF_EIO,
                        "%s: cannot create a spool file in %s for reading the stream out of "
                        "order: %s", z->path, z->spool_dir, stf__errno_text(errno, eb, sizeof eb));
    z->spool_fd = fd;
    z->spool_end = 0;
    z->mode = STF__STREAM_SPOOLED;
    restart(z);
    return 0;
}

/* L11: a read behind the position at `off` that needs the spool to hold
 * [0, need), more than the cap. */
static int spool_over(const stf__zstream *z, uint64_t off, uint64_t need, stf_err *err)
{
    return stf__err_rule(err, STF_ELIMIT, "L11", 1, off,
                         "%s: L11 LimitExceeded: reading the stream out of order at decompressed "
                         "byte %llu needs a spool of %llu bytes, more than the %llu allowed",
                         z->path, (unsigned long long)off, (unsigned long long)need,
                         (unsigned long long)z->max_spool);
}

/* Append to the spool, which stops growing at the cap. */
static int spool_write(stf__zstream *z, const uint8_t *b, size_t n, stf_err *err)
{
    char eb[128];
    if (z->max_spool && n > z->max_spool - z->spool_end)
        n = (size_t)(z->max_spool - z->spool_end);
    if (!n) return 0;
    int e = stf__pwrite_full(z->spool_fd, b, n, z->spool_end);
    if (e)
        return stf__err(err, STF_EIO, "%s: cannot write the spool file in %s: %s", z->path,
                        z->spool_dir, stf__errno_text(e, eb, sizeof eb));
    z->spool_end += n;
    return 0;
}

static int spool_read(stf__zstream *z, uint64_t off, uint8_t *d, size_t n, stf_err *err)
{
    char eb[128];
    size_t got;
    int e = stf__pread_full(z->spool_fd, d, n, off, &got);
    if (!e && got == n) return 0;
    return stf__err(err, STF_EIO, "%s: cannot read the spool file in %s: %s", z->path,
                    z->spool_dir, e ? stf__errno_text(e, eb, sizeof eb)
                                    : "it is shorter than written");
}

/*
 * Decompress one step forward: the bytes [pos, pos + k) it yields go to
 * the spool (when there is one), the held head, and dst for the part in
 * [*off, *off + *len), which advances *off, *len and *dst.
 */
static int step(stf__zstream *z, uint64_t *off, uint8_t **dst, size_t *len, stf_err *err)
{
    int rc;
    if (z->ib.pos == z->ib.size && !z->pending) {
        uint64_t left = stf__source_size(z->raw) - z->in_off;
        if (left == 0 && z->settled)
            return size_mismatch(z, z->d_size, z->hdr_n, "only", z->pos, err);
        if (left == 0 && z->unsized)
            return stf__err_rule(err, STF_EFORMAT, "S26", 1, z->in_off,
                                 "%s: S26 ZstdCorrupt: the stream ends at compressed byte %llu "
                                 "after %llu decompressed bytes, inside the safetensors header",
                                 z->path, (unsigned long long)z->in_off,
                                 (unsigned long long)z->pos);
        if (left == 0)
            return stf__err_rule(err, STF_EFORMAT, "S26", 1, z->in_off,
                                 "%s: S26 ZstdCorrupt: the stream ends at compressed byte %llu "
                                 "after %llu decompressed bytes, %llu expected",
                                 z->path, (unsigned long long)z->in_off,
                                 (unsigned long long)z->pos, (unsigned long long)z->d_size);
        size_t n = left < z->in_cap ? (size_t)left : z->in_cap;
        if ((rc = stf__source_read(z->raw, z->in_off, z->in, n, err))) return rc;
        z->ib.src = z->in;
        z->ib.size = n;
        z->ib.pos = 0;
        z->in_off += n;
    }
    ZSTD_outBuffer ob = { z->out, z->out_cap, 0 };
    size_t zr = ZSTD_decompressStream(z->ds, &ob, &z->ib);
    if (ZSTD_isError(zr)) {
        int code;
        const char *rule = stf__zstd_rule(zr, &code);
        uint64_t at = z->in_off - z->ib.size + z->ib.pos;
        restart(z);
        return stf__err_rule(err, code, rule, 1, at,
                             "%s: %s %s: decoding failed at compressed byte %llu: %s", z->path,
                             rule, code == STF_ELIMIT ? "LimitExceeded"
                                   : rule[2] == '8' ? "ZstdChecksum" : "ZstdCorrupt",
                             (unsigned long long)at, ZSTD_getErrorName(zr));
    }
    uint64_t k = ob.pos;
    z->pending = ob.pos == ob.size;
    z->last_zr = zr;
    z->last_k = 0;
    if (k > z->d_size - z->pos) {
        uint64_t at = z->in_off - z->ib.size + z->ib.pos;
        restart(z);
        if (z->settled)
            return size_mismatch(z, z->d_size, z->hdr_n, "more than", z->d_size, err);
        return stf__err_rule(err, STF_EFORMAT, "S26", 1, at,
                             "%s: S26 ZstdCorrupt: the stream decodes to more than the %llu "
                             "bytes its frame headers declare (at compressed byte %llu)",
                             z->path, (unsigned long long)z->d_size, (unsigned long long)at);
    }
    if (z->spool_fd >= 0 && z->pos == z->spool_end &&
        (rc = spool_write(z, z->out, (size_t)k, err)))
        return rc;
    if (z->head && z->pos < z->head_n && z->head_have == z->pos) {
        uint64_t h = z->head_n - z->pos < k ? z->head_n - z->pos : k;
        memcpy(z->head + z->pos, z->out, (size_t)h);
        z->head_have += h;
    }
    if (*len && *off < z->pos + k) {
        uint64_t in = *off - z->pos;
        size_t n = k - in < *len ? (size_t)(k - in) : *len;
        memcpy(*dst, z->out + in, n);
        *dst += n;
        *off += n;
        *len -= n;
    }
    z->pos += k;
    z->last_k = (size_t)k;
    return 0;
}

/* A read reached the end of a settled stream: decompress on until the
 * stream ends, which step refuses to do past d_size. */
static int check_end(stf__zstream *z, stf_err *err)
{
    uint8_t *none = NULL;
    size_t zero = 0;
    uint64_t off = z->pos;
    int rc = 0;
    while (!rc && !at_end(z)) rc = step(z, &off, &none, &zero, err);
    if (!rc) z->end_checked = 1;
    return rc;
}

/* Read under the lock; see zsrc.h. */
static int read_locked(stf__zstream *z, uint64_t off, uint8_t *d, size_t len, stf_err *err)
{
    int rc = 0;
    uint64_t end = off + len;
    if (z->head_n && off + len > z->head_n && z->mode == STF__STREAM_NONE)
        z->mode = STF__STREAM_IN_ORDER;
    while (len) {
        if (off < z->head_have) {
            size_t n = z->head_have - off < len ? (size_t)(z->head_have - off) : len;
            memcpy(d, z->head + off, n);
            d += n, off += n, len -= n;
        } else if (z->spool_fd >= 0 && off < z->spool_end) {
            size_t n = z->spool_end - off < len ? (size_t)(z->spool_end - off) : len;
            if ((rc = spool_read(z, off, d, n, err))) return rc;
            d += n, off += n, len -= n;
        } else if (off < z->pos && off >= z->pos - z->last_k) {
            uint64_t in = off - (z->pos - z->last_k);
            size_t n = z->last_k - in < len ? (size_t)(z->last_k - in) : len;
            memcpy(d, z->out + in, n);
            d += n, off += n, len -= n;
        } else if (off < z->pos) {
            /* The spool would have to hold [0, end): refuse before filling it. */
            if (z->spool_dir && z->max_spool && end > z->max_spool)
                return spool_over(z, off, end, err);
            if (z->spool_dir && z->spool_fd < 0) {
                if ((rc = spool_open(z, err))) return rc;
            } else {
                z->mode = STF__STREAM_RESTARTED;
                restart(z);
            }
        } else if ((rc = step(z, &off, &d, &len, err))) {
            return rc;
        }
    }
    if (z->settled && end == z->d_size && !z->end_checked && z->pos == end)
        return check_end(z, err);
    return 0;
}

static int stf__zstream_read(stf__zstream *z, uint64_t off, void *dst, size_t len, stf_err *err)
{
    pthread_mutex_lock(&z->mu);
    int rc = read_locked(z, off, dst, len, err);
    pthread_mutex_unlock(&z->mu);
    return rc;
}

static int stf__zstream_hold_head(stf__zstream *z, uint64_t n, stf_err *err)
{
    pthread_mutex_lock(&z->mu);
    int rc = 0;
    if (n > z->d_size) n = z->d_size;
    if (!z->head && n) {
        z->head = stf__malloc((size_t)n);
        if (!z->head) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", z->path);
        else {
            z->head_n = n;
            z->head_have = 0;
            /* What was read so far is still in the output buffer when it
             * is the first one; otherwise fetch it again. */
            if (z->pos > 0 && z->pos == z->last_k) {
                z->head_have = z->pos < n ? z->pos : n;
                memcpy(z->head, z->out, (size_t)z->head_have);
            } else if (z->pos > 0) {
                rc = read_locked(z, 0, z->head, (size_t)n, err);
                if (!rc) z->head_have = n;
            }
        }
    }
    pthread_mutex_unlock(&z->mu);
    return rc;
}

static uint64_t stf__zstream_size(const stf__zstream *z) { return z->d_size; }

static int stf__zstream_unsized(const stf__zstream *z) { return z->unsized && !z->settled; }

/* Take the header's size; see zsrc.h. */
static int stf__zstream_settle(stf__zstream *z, uint64_t size, uint64_t hdr_n, stf_err *err)
{
    if (!z->unsized || z->settled) return 0;
    pthread_mutex_lock(&z->mu);
    int rc = 0;
    if (size < z->d_min) rc = size_mismatch(z, size, hdr_n, "at least", z->d_min, err);
    else if (size > z->d_size) rc = size_mismatch(z, size, hdr_n, "at most", z->d_size, err);
    else if (z->pos > size) rc = size_mismatch(z, size, hdr_n, "more than", size, err);
    else {
        z->d_size = size;
        z->hdr_n = hdr_n;
        z->settled = 1;
    }
    pthread_mutex_unlock(&z->mu);
    return rc;
}

static uint64_t stf__zstream_frames(const stf__zstream *z) { return z->frames; }

static int stf__zstream_mode(const stf__zstream *z)
{
    stf__zstream *m = (stf__zstream *)z;
    pthread_mutex_lock(&m->mu);
    int r = m->mode;
    pthread_mutex_unlock(&m->mu);
    return r;
}

/* Open; see zsrc.h. */
static int stf__zstream_open(stf__zstream **out, stf__source *raw, const stf__zread_opts *o,
                             stf_err *err)
{
    *out = NULL;
    stf__zwalk w;
    int rc = stf__zwalk_run(&w, raw, err);
    if (rc) return rc;
    const char *path = stf__source_path(raw);
    stf__zstream *z = stf__calloc(1, sizeof *z);
    if (!z) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    z->path = path;
    z->spool_fd = -1;
    z->frames = w.frames;
    z->in_cap = ZSTD_DStreamInSize();
    z->out_cap = ZSTD_DStreamOutSize();
    z->in = stf__malloc(z->in_cap);
    z->out = stf__malloc(z->out_cap);
    z->ds = ZSTD_createDStream();
    if (o->spool_dir) z->spool_dir = stf__strdup(o->spool_dir);
    if (!z->in || !z->out || !z->ds || (o->spool_dir && !z->spool_dir)) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory for the zstd stream", path);
        goto fail;
    }
    ZSTD_DCtx_setParameter(z->ds, ZSTD_d_windowLogMax, 27);
    if (pthread_mutex_init(&z->mu, NULL) != 0) {
        rc = stf__err(err, STF_ENOMEM, "%s: cannot create a mutex", path);
        goto fail;
    }
    z->raw = raw;
    z->max_spool = o->max_spool;
    if (w.size_known) {
        z->d_size = w.d_size;
    } else {
        /* No size in some frame header: the most the walk allows until the
         * header settles it. */
        z->unsized = 1;
        z->d_min = w.d_min;
        z->d_size = w.d_max;
    }
    *out = z;
    return 0;
fail:
    if (z->spool_fd >= 0) close(z->spool_fd);
    ZSTD_freeDStream(z->ds);
    stf__free(z->in);
    stf__free(z->out);
    stf__free(z->spool_dir);
    stf__free(z);
    return rc;
}

static void stf__zstream_free(stf__zstream *z)
{
    if (!z) return;
    if (z->spool_fd >= 0) close(z->spool_fd);
    ZSTD_freeDStream(z->ds);
    pthread_mutex_destroy(&z->mu);
    stf__free(z->in);
    stf__free(z->out);
    stf__free(z->head);
    stf__free(z->spool_dir);
    stf__source_free(z->raw);
    stf__free(z);
}

/* ------------------------------------------------------------ as a source */

static int zstream_src_read(const stf__source *s, uint64_t off, void *dst, size_t len,
                            stf_err *err)
{
    return stf__zstream_read(s->impl, off, dst, len, err);
}

static void zstream_src_close(stf__source *s) { stf__zstream_free(s->impl); }

static uint64_t zstream_src_frames(const stf__source *s) { return stf__zstream_frames(s->impl); }

static int zstream_src_mode(const stf__source *s) { return stf__zstream_mode(s->impl); }

static int zstream_src_hold_head(stf__source *s, uint64_t n, stf_err *err)
{
    return stf__zstream_hold_head(s->impl, n, err);
}

static int zstream_src_settle(stf__source *s, uint64_t size, uint64_t hdr_n, stf_err *err)
{
    return stf__zstream_settle(s->impl, size, hdr_n, err);
}

static const stf__source_ops zstream_ops = {
    .kind = "zstd stream",
    .read = zstream_src_read,
    .close = zstream_src_close,
    .frames = zstream_src_frames,
    .stream_mode = zstream_src_mode,
    .hold_head = zstream_src_hold_head,
    .settle = zstream_src_settle,
};

/* Open; see zsrc.h. */
int stf__zsrc_stream_open(stf__source **out, stf__source *raw, const stf__zread_opts *o,
                          stf_err *err)
{
    stf__zstream *z = NULL;
    *out = NULL;
    int rc = stf__zstream_open(&z, raw, o, err);
    if (rc) return rc;
    rc = stf__source_new(out, &zstream_ops, z, stf__source_path(raw), stf__zstream_size(z), err);
    if (rc) {
        z->raw = NULL; /* still the caller's */
        stf__zstream_free(z);
        return rc;
    }
    (*out)->storage = STF__STORE_ZSTD_STREAM;
    (*out)->stored = stf__source_size(raw);
    (*out)->unsized = stf__zstream_unsized(z);
    (*out)->inner = raw;
    return 0;
}
