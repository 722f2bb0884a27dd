/*
 * The zstd seekable format, read by seeking (zsrc.h): the seek table is
 * read once at open; a read finds its frames by binary search and copies
 * out of a cache of decoded frames. The cache has o->zstd_cache_frames
 * slots, each holding one frame of at most o->max_zstd_frame bytes, so the
 * memory is bounded by their product whatever the file says. Slots are
 * decoded outside the lock: threads reading different frames decode in
 * parallel, and a thread wanting a frame another is decoding waits for it.
 */
#include <pthread.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "container/container_internal.h"
#include "container/zsrc.h"
#include "container/zstd_pack.h"
#include "container/zstd_seek.h"

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY };

typedef struct slot {
    size_t frame;
    int state;
    unsigned refs;
    uint64_t used;           /* last use, for LRU eviction */
    uint8_t *buf, *cbuf;     /* decoded and compressed bytes */
    uint8_t *gbuf;           /* a grouped frame's scratch (.stz) */
    size_t cap, ccap, gcap;
    ZSTD_DCtx *dctx;
} slot;

struct stf__zseek {
    stf__source *raw;
    const char *path;
    stf__seek_table t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;
    size_t nslots;
    uint64_t tick;
    uint64_t decoded;        /* frames decoded (under mu) */
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Open; see zsrc.h. */
int stf__zseek_open(stf__zseek **out, stf__source *raw, const stf_open_opts *o, stf_err *err)
{
    *out = NULL;
    const char *path = stf__source_path(raw);
    uint64_t size = stf__source_size(raw);
    uint8_t foot[STF__SEEK_FOOTER_SIZE];
    uint8_t *tbl = NULL;
    stf__seek_footer f;
    if (size < STF__SEEK_FOOTER_SIZE) return 0;
    int rc = stf__source_read(raw, size - STF__SEEK_FOOTER_SIZE, foot, sizeof foot, err);
    if (rc) return rc;
    if (!stf__seek_footer_present(foot)) return 0;
    if ((rc = stf__seek_footer_parse(&f, foot, size, path, o, err))) return rc;
    stf__zseek *z = stf__calloc(1, sizeof *z);
    tbl = stf__malloc((size_t)f.table_size);
    if (!z || !tbl) {
        stf__free(z);
        stf__free(tbl);
        return stf__err(err, STF_ENOMEM, "%s: out of memory for the seek table", path);
    }
    z->path = path;
    rc = stf__source_read(raw, size - f.table_size, tbl, (size_t)f.table_size, err);
    if (!rc) rc = stf__seek_table_parse(&z->t, &f, tbl, size, path, o, err);
    stf__free(tbl);
    if (!rc) {
        z->nslots = o->zstd_cache_frames ? o->zstd_cache_frames : 1;
        z->slots = stf__calloc(z->nslots, sizeof *z->slots);
        if (!z->slots) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    if (!rc && pthread_mutex_init(&z->mu, NULL) != 0)
        rc = stf__err(err, STF_ENOMEM, "%s: cannot create a mutex", path);
    if (!rc && pthread_cond_init(&z->cv, NULL) != 0) {
        pthread_mutex_destroy(&z->mu);
        rc = stf__err(err, STF_ENOMEM, "%s: cannot create a condition variable", path);
    }
    if (rc) {
        stf__seek_table_free(&z->t);
        stf__free(z->slots);
        stf__free(z);
        return rc;
    }
    z->raw = raw;
    *out = z;
    return 0;
}

uint64_t stf__zseek_size(const stf__zseek *z) { return z->t.d_size; }

uint64_t stf__zseek_frames(const stf__zseek *z) { return z->t.nframes; }

uint64_t stf__zseek_decoded(const stf__zseek *z)
{
    stf__zseek *m = (stf__zseek *)z;
    pthread_mutex_lock(&m->mu);
    uint64_t n = m->decoded;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static int grow(uint8_t **b, size_t *cap, size_t want, const char *path, stf_err *err)
{
    if (*cap >= want && *b) return 0;
    uint8_t *nb = stf__realloc(*b, want ? want : 1);
    if (!nb) return stf__err(err, STF_ENOMEM, "%s: out of memory for a zstd frame", path);
    *b = nb;
    *cap = want;
    return 0;
}

/* A .stz grouped frame k into slot s: the decoder stfix decompress uses,
 * bounded by the table's decompressed size (at most the frame cap). */
static int decode_grouped(stf__zseek *z, slot *s, size_t k, stf_err *err)
{
    const stf__seek_frame *fr = &z->t.frames[k];
    size_t got = 0;
    int rc = grow(&s->buf, &s->cap, fr->d_size, z->path, err);
    if (!rc) rc = grow(&s->gbuf, &s->gcap, fr->d_size, z->path, err);
    if (!rc)
        rc = stf__stz_group_decode(s->dctx, s->cbuf, fr->c_size, s->buf, fr->d_size, s->gbuf,
                                   &got, z->path, fr->c_off, err);
    if (!rc && got != fr->d_size)
        rc = stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off,
                           "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu decodes "
                           "to %zu bytes, the seek table says %lu",
                           z->path, k, (unsigned long long)fr->c_off, got,
                           (unsigned long)fr->d_size);
    return rc;
}

/* Whether frame k's table checksum agrees with the restored bytes. A zstd
 * frame with its own checksum (stfix writes the same value into the table)
 * was checked against the bytes by libzstd: comparing the two values is
 * enough. Otherwise the bytes are hashed. */
static int check_sum(stf__zseek *z, slot *s, size_t k, int plain, stf_err *err)
{
    const stf__seek_frame *fr = &z->t.frames[k];
    uint32_t h;
    /* Bit 2 of the frame header descriptor (byte 4): Content_Checksum_flag;
     * the checksum is then the frame's last four bytes. */
    if (plain && fr->c_size >= 9 && (s->cbuf[4] & 0x04))
        h = le32(s->cbuf + fr->c_size - 4);
    else
        h = (uint32_t)(XXH64(s->buf, fr->d_size, 0) & 0xFFFFFFFFu);
    if (h == fr->checksum) return 0;
    return stf__err_rule(err, STF_EFORMAT, "S28", 1, fr->c_off,
                         "%s: S28 ZstdChecksum: frame %zu at compressed byte %llu "
                         "decodes to bytes whose checksum is 0x%08lx, the seek table "
                         "says 0x%08lx",
                         z->path, k, (unsigned long long)fr->c_off, (unsigned long)h,
                         (unsigned long)fr->checksum);
}

/* Frame k into slot s (held by this thread alone): read, check, decode. */
static int decode(stf__zseek *z, slot *s, size_t k, stf_err *err)
{
    const stf__seek_frame *fr = &z->t.frames[k];
    unsigned long long at = (unsigned long long)fr->c_off;
    int rc;
    /* The compressed size is bounded by the decompressed one (the table
     * parser checked both); the output buffer is taken only once the frame
     * header agrees with the table. */
    if ((rc = grow(&s->cbuf, &s->ccap, fr->c_size, z->path, err))) return rc;
    if (!s->dctx && !(s->dctx = ZSTD_createDCtx()))
        return stf__err(err, STF_ENOMEM, "%s: out of memory for a zstd context", z->path);
    if ((rc = stf__source_read(z->raw, fr->c_off, s->cbuf, fr->c_size, err))) return rc;
    if (fr->c_size >= 4 && le32(s->cbuf) == STF__STZ_GROUP_MAGIC) {
        rc = decode_grouped(z, s, k, err);
        return rc || !z->t.checksum ? rc : check_sum(z, s, k, 0, err);
    }
    if (fr->c_size < 4 || le32(s->cbuf) != STF__ZSTD_MAGIC)
        return stf__err_rule(err, STF_EFORMAT, "S26", 1, fr->c_off,
                             "%s: S26 ZstdCorrupt: frame %zu at compressed byte %llu does not "
                             "start with the zstd or grouped-frame magic number", z->path, k, at);
    unsigned long long fcs = ZSTD_getFrameContentSize(s->cbuf, fr->c_size);
    if (fcs == ZSTD_CONTENTSIZE_ERROR)
        return stf__err_rule(err, STF_EFORMAT, "S26", 1, fr->c_off,
                             "%s: S26 ZstdCorrupt: frame %zu at compressed byte %llu has a "
                             "malformed frame header", z->path, k, at);
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != fr->d_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off,
                             "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu holds "
                             "%llu bytes by its header, %lu by the seek table",
                             z->path, k, at, fcs, (unsigned long)fr->d_size);
    size_t fsz = ZSTD_findFrameCompressedSize(s->cbuf, fr->c_size);
    if (ZSTD_isError(fsz))
        return stf__err_rule(err, STF_EFORMAT, "S26", 1, fr->c_off,
                             "%s: S26 ZstdCorrupt: frame %zu at compressed byte %llu is "
                             "truncated or corrupt within its %lu bytes: %s",
                             z->path, k, at, (unsigned long)fr->c_size, ZSTD_getErrorName(fsz));
    if (fsz != fr->c_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off + fsz,
                             "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu ends "
                             "after %zu bytes, the seek table says %lu",
                             z->path, k, at, fsz, (unsigned long)fr->c_size);
    if ((rc = grow(&s->buf, &s->cap, fr->d_size, z->path, err))) return rc;
    size_t got = ZSTD_decompressDCtx(s->dctx, s->buf, fr->d_size, s->cbuf, fr->c_size);
    if (ZSTD_isError(got)) {
        int code;
        const char *rule = stf__zstd_rule(got, &code);
        if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
            return stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off,
                                 "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu "
                                 "decodes to more than the %lu bytes the seek table says",
                                 z->path, k, at, (unsigned long)fr->d_size);
        return stf__err_rule(err, code, rule, 1, fr->c_off,
                             "%s: %s %s: frame %zu at compressed byte %llu: %s", z->path, rule,
                             code == STF_ELIMIT ? "LimitExceeded"
                             : rule[2] == '8' ? "ZstdChecksum" : "ZstdCorrupt",
                             k, at, ZSTD_getErrorName(got));
    }
    if (got != fr->d_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off,
                             "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu decodes "
                             "to %zu bytes, the seek table says %lu",
                             z->path, k, at, got, (unsigned long)fr->d_size);
    return z->t.checksum ? check_sum(z, s, k, 1, err) : 0;
}

/* A slot holding frame k, decoded, with a reference taken for the caller. */
static int acquire(stf__zseek *z, size_t k, slot **out, stf_err *err)
{
    pthread_mutex_lock(&z->mu);
    for (;;) {
        slot *hit = NULL, *victim = NULL;
        for (size_t i = 0; i < z->nslots; i++) {
            slot *s = &z->slots[i];
            if (s->state != SLOT_EMPTY && s->frame == k) hit = s;
            else if (s->refs == 0 && (!victim || s->state == SLOT_EMPTY ||
                                      (victim->state != SLOT_EMPTY && s->used < victim->used)))
                victim = s;
        }
        if (hit && hit->state == SLOT_READY) {
            hit->refs++;
            hit->used = ++z->tick;
            pthread_mutex_unlock(&z->mu);
            *out = hit;
            return 0;
        }
        if (hit || !victim) { /* being decoded by another thread, or every slot busy */
            pthread_cond_wait(&z->cv, &z->mu);
            continue;
        }
        victim->frame = k;
        victim->state = SLOT_LOADING;
        victim->refs = 1;
        victim->used = ++z->tick;
        z->decoded++;
        pthread_mutex_unlock(&z->mu);
        int rc = decode(z, victim, k, err);
        pthread_mutex_lock(&z->mu);
        if (rc) {
            victim->state = SLOT_EMPTY;
            victim->refs = 0;
        } else {
            victim->state = SLOT_READY;
        }
        pthread_cond_broadcast(&z->cv);
        pthread_mutex_unlock(&z->mu);
        *out = rc ? NULL : victim;
        return rc;
    }
}

static void release(stf__zseek *z, slot *s)
{
    pthread_mutex_lock(&z->mu);
    s->refs--;
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
}

/* Copy decompressed bytes [off, off+len); see zsrc.h. */
int stf__zseek_read(stf__zseek *z, uint64_t off, void *dst, size_t len, stf_err *err)
{
    uint8_t *d = dst;
    while (len) {
        size_t k = stf__seek_table_find(&z->t, off);
        const stf__seek_frame *fr = &z->t.frames[k];
        uint64_t in = off - fr->d_off;
        size_t n = fr->d_size - in < len ? (size_t)(fr->d_size - in) : len;
        if (n == 0) /* only past the end, which the caller has excluded */
            return stf__err(err, STF_EINVAL, "%s: no frame holds byte %llu", z->path,
                            (unsigned long long)off);
        slot *s;
        int rc = acquire(z, k, &s, err);
        if (rc) return rc;
        memcpy(d, s->buf + in, n);
        release(z, s);
        d += n;
        off += n;
        len -= n;
    }
    return 0;
}

void stf__zseek_free(stf__zseek *z)
{
    if (!z) return;
    for (size_t i = 0; i < z->nslots; i++) {
        stf__free(z->slots[i].buf);
        stf__free(z->slots[i].cbuf);
        stf__free(z->slots[i].gbuf);
        ZSTD_freeDCtx(z->slots[i].dctx);
    }
    stf__free(z->slots);
    stf__seek_table_free(&z->t);
    pthread_cond_destroy(&z->cv);
    pthread_mutex_destroy(&z->mu);
    stf__source_free(z->raw);
    stf__free(z);
}
