/*
 * The zstd seekable format, read by seeking (zsrc.h): the seek table is
 * read once at open; a read finds its frames by binary search and copies
 * out of a cache of decoded frames. The cache has o->zstd_cache_frames
 * slots, each holding one frame of at most o->max_zstd_frame bytes, so the
 * memory is bounded by their product whatever the file says. Each frame is
 * decoded once while it stays cached:
 *
 *  - slots are decoded outside the lock: threads reading different frames
 *    decode in parallel, and a thread wanting a frame another is decoding
 *    waits for it instead of decoding it again;
 *  - a run of contiguous reads (from the fourth in a row on, by any
 *    thread: a pass over the data) starts one read-ahead thread that
 *    decodes the next frames ahead of the readers, a window past the last
 *    frame read of one frame more than there have been readers at once,
 *    within the cache less the two frames the readers are in, so the
 *    readers find them decoded instead of decoding inline. Random reads
 *    never trigger it: reading one tensor touches only its frames;
 *  - a reader that would wait for a frame being decoded decodes a frame of
 *    the window nobody has taken instead: when the readers outrun one
 *    decoder, decoding spreads over every thread that would wait, one
 *    frame each. A frame that fails to decode ahead ends the window until
 *    a read moves it; its reader's own decode reports the error;
 *  - a decode ahead takes the slot of a frame read through (every byte
 *    served since it was decoded), or of one far behind the readers (more
 *    than a cache behind the window) or past the window: never one a
 *    reader lagging behind the others, up to a cache behind, has still to
 *    read, so a pass decodes each frame once whatever the window.
 *
 * The compressed bytes, a grouped frame's scratch and the decompression
 * context are a decoder kit, taken per decode from a free list: as many
 * kits as threads decoding at once, not one per slot.
 */
#include <pthread.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "io/zsrc.h"
#include "io/zstd_frames.h"
#include "io/zstd_seek.h"

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY };

typedef struct slot {
    size_t frame;
    int state;
    unsigned refs;
    uint64_t used;           /* last use, for LRU eviction */
    uint64_t served;         /* bytes copied out since it was decoded */
    uint8_t *buf;            /* the decoded frame */
    size_t cap;
} slot;

/* What one decode needs besides its output. */
typedef struct kit {
    struct kit *next;        /* the free list */
    uint8_t *cbuf, *gbuf;    /* compressed bytes, a grouped frame's scratch */
    size_t ccap, gcap;
    ZSTD_DCtx *dctx;
} kit;

/* Contiguous reads: where a run of them ended, and how long it is. The
 * readers of a run are in its last frame or the one before; the window
 * takes the other slots. */
enum { RUNS = 4, RUN_AHEAD = 3, READER_FRAMES = 2, STALE_READS = 64 };

typedef struct stf__zseek stf__zseek;

struct stf__zseek {
    stf__source *raw;
    const char *path;
    stf__seek_table t;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* a slot was decoded or released */
    slot *slots;
    size_t nslots;
    uint64_t tick;
    uint64_t decoded;        /* frames decoded (under mu) */
    kit *kits;               /* idle kits (under mu) */
    struct {
        uint64_t end;
        unsigned len;
        uint64_t seen;       /* `reads` at its last read */
    } run[RUNS];             /* recent contiguous runs of reads (under mu) */
    unsigned run_next;
    uint64_t reads;          /* reads so far (under mu) */
    unsigned ra_run;         /* the run that last moved the window */
    unsigned inside;         /* threads in stf__zseek_read (under mu) */
    unsigned readers;        /* the most there have been at once (under mu) */
    /* Read-ahead (under mu): frames [ra_lo, ra_end) wanted decoded. */
    size_t wmax;             /* frames ahead at most; 0 when the cache is too small */
    size_t ra_lo, ra_end;
    int ra_state;            /* 0 not started, 1 running, 2 stopping */
    pthread_t ra;
    pthread_cond_t ra_cv;    /* read-ahead wanted, a slot freed, or stop */
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Open; see zsrc.h. */
static int stf__zseek_open(stf__zseek **out, stf__source *raw, const stf__zread_opts *o,
                           stf_err *err)
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
        /* The readers' two frames, then the window. */
        z->wmax = z->nslots > READER_FRAMES ? z->nslots - READER_FRAMES : 0;
    }
    if (!rc && pthread_mutex_init(&z->mu, NULL) != 0)
        rc = stf__err(err, STF_ENOMEM, "%s: cannot create a mutex", path);
    if (!rc && pthread_cond_init(&z->cv, NULL) != 0) {
        pthread_mutex_destroy(&z->mu);
        rc = stf__err(err, STF_ENOMEM, "%s: cannot create a condition variable", path);
    }
    if (!rc && pthread_cond_init(&z->ra_cv, NULL) != 0) {
        pthread_cond_destroy(&z->cv);
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

static uint64_t stf__zseek_size(const stf__zseek *z) { return z->t.d_size; }

static uint64_t stf__zseek_frames(const stf__zseek *z) { return z->t.nframes; }

static uint64_t stf__zseek_decoded(const stf__zseek *z)
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

/* A .stz grouped frame k into dst: the decoder stfix decompress uses,
 * bounded by the table's decompressed size (at most the frame cap). */
static int decode_grouped(stf__zseek *z, kit *kt, size_t k, uint8_t *dst, stf_err *err)
{
    const stf__seek_frame *fr = &z->t.frames[k];
    size_t got = 0;
    int rc = grow(&kt->gbuf, &kt->gcap, fr->d_size, z->path, err);
    if (!rc)
        rc = stf__stz_group_decode(kt->dctx, kt->cbuf, fr->c_size, dst, fr->d_size, kt->gbuf,
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
static int check_sum(stf__zseek *z, const kit *kt, size_t k, const uint8_t *dst, int plain,
                     stf_err *err)
{
    const stf__seek_frame *fr = &z->t.frames[k];
    uint32_t h;
    /* Bit 2 of the frame header descriptor (byte 4): Content_Checksum_flag;
     * the checksum is then the frame's last four bytes. */
    if (plain && fr->c_size >= 9 && (kt->cbuf[4] & 0x04))
        h = le32(kt->cbuf + fr->c_size - 4);
    else
        h = (uint32_t)(XXH64(dst, fr->d_size, 0) & 0xFFFFFFFFu);
    if (h == fr->checksum) return 0;
    return stf__err_rule(err, STF_EFORMAT, "S28", 1, fr->c_off,
                         "%s: S28 ZstdChecksum: frame %zu at compressed byte %llu "
                         "decodes to bytes whose checksum is 0x%08lx, the seek table "
                         "says 0x%08lx",
                         z->path, k, (unsigned long long)fr->c_off, (unsigned long)h,
                         (unsigned long)fr->checksum);
}

/* Frame k into dst (fr->d_size bytes, this thread's alone) with the kit:
 * read, check, decode. */
static int decode(stf__zseek *z, kit *kt, size_t k, uint8_t *dst, stf_err *err)
{
    const stf__seek_frame *fr = &z->t.frames[k];
    unsigned long long at = (unsigned long long)fr->c_off;
    int rc;
    /* The compressed size is bounded by the decompressed one (the table
     * parser checked both). */
    if ((rc = grow(&kt->cbuf, &kt->ccap, fr->c_size, z->path, err))) return rc;
    if (!kt->dctx && !(kt->dctx = ZSTD_createDCtx()))
        return stf__err(err, STF_ENOMEM, "%s: out of memory for a zstd context", z->path);
    if ((rc = stf__source_read(z->raw, fr->c_off, kt->cbuf, fr->c_size, err))) return rc;
    if (fr->c_size >= 4 && le32(kt->cbuf) == STF__STZ_GROUP_MAGIC) {
        rc = decode_grouped(z, kt, k, dst, err);
        return rc || !z->t.checksum ? rc : check_sum(z, kt, k, dst, 0, err);
    }
    if (fr->c_size < 4 || le32(kt->cbuf) != STF__ZSTD_MAGIC)
        return stf__err_rule(err, STF_EFORMAT, "S26", 1, fr->c_off,
                             "%s: S26 ZstdCorrupt: frame %zu at compressed byte %llu does not "
                             "start with the zstd or grouped-frame magic number", z->path, k, at);
    unsigned long long fcs = ZSTD_getFrameContentSize(kt->cbuf, fr->c_size);
    if (fcs == ZSTD_CONTENTSIZE_ERROR)
        return stf__err_rule(err, STF_EFORMAT, "S26", 1, fr->c_off,
                             "%s: S26 ZstdCorrupt: frame %zu at compressed byte %llu has a "
                             "malformed frame header", z->path, k, at);
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != fr->d_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, fr->c_off,
                             "%s: S27 ZstdSeekTable: frame %zu at compressed byte %llu holds "
                             "%llu bytes by its header, %lu by the seek table",
                             z->path, k, at, fcs, (unsigned long)fr->d_size);
    size_t fsz = ZSTD_findFrameCompressedSize(kt->cbuf, fr->c_size);
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
    size_t got = ZSTD_decompressDCtx(kt->dctx, dst, fr->d_size, kt->cbuf, fr->c_size);
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
    return z->t.checksum ? check_sum(z, kt, k, dst, 1, err) : 0;
}

/* ------------------------------------------------------------ kits */

/* An idle kit, or a new empty one (its buffers grow on first use). */
static kit *kit_take(stf__zseek *z, stf_err *err)
{
    pthread_mutex_lock(&z->mu);
    kit *kt = z->kits;
    if (kt) z->kits = kt->next;
    pthread_mutex_unlock(&z->mu);
    if (!kt && !(kt = stf__calloc(1, sizeof *kt)))
        stf__err(err, STF_ENOMEM, "%s: out of memory for a zstd frame", z->path);
    return kt;
}

static void kit_put(stf__zseek *z, kit *kt)
{
    pthread_mutex_lock(&z->mu);
    kt->next = z->kits;
    z->kits = kt;
    pthread_mutex_unlock(&z->mu);
}

static void kit_free(kit *kt)
{
    stf__free(kt->cbuf);
    stf__free(kt->gbuf);
    ZSTD_freeDCtx(kt->dctx);
    stf__free(kt);
}

/* Frame k into dst with a kit of the free list. */
static int decode_with_kit(stf__zseek *z, size_t k, uint8_t *dst, stf_err *err)
{
    kit *kt = kit_take(z, err);
    if (!kt) return STF_ENOMEM;
    int rc = decode(z, kt, k, dst, err);
    kit_put(z, kt);
    return rc;
}

/* ------------------------------------------------------------ cache */

/* The slot holding or decoding frame k (under mu), or NULL. */
static slot *find_slot(stf__zseek *z, size_t k)
{
    for (size_t i = 0; i < z->nslots; i++)
        if (z->slots[i].state != SLOT_EMPTY && z->slots[i].frame == k) return &z->slots[i];
    return NULL;
}

/* Who wants a slot: a decode ahead of the reads, a reader's decode
 * sparing the window and its readers, or one that takes any idle slot. */
enum { FOR_AHEAD, FOR_READ, FOR_ANY };

/*
 * A slot to decode into (under mu), NULL when none suits `who`: an empty
 * one, else the least recently used idle one of the best kind there is:
 *
 *  1. a frame every byte of which has been read since it was decoded (a
 *     pass is done with it), outside the window;
 *  2. another frame outside the window and the two frames before it (the
 *     run's readers are there, or about to be); for a decode ahead, only
 *     one more than a cache behind the window or past it;
 *  3. any other (FOR_ANY only).
 *
 * A reader that lags behind the others keeps its frame, not yet read
 * through, from the decodes ahead while it is up to a cache behind the
 * window; further behind (a pass that stopped, a random read) the frame
 * is only protected while a read holds it.
 */
static slot *victim(stf__zseek *z, int who)
{
    slot *v = NULL;
    int vk = 4;
    for (size_t i = 0; i < z->nslots; i++) {
        slot *s = &z->slots[i];
        if (s->refs || s->state == SLOT_LOADING) continue;
        if (s->state == SLOT_EMPTY) return s;
        size_t f = s->frame;
        int window = f >= z->ra_lo && f < z->ra_end;
        int kind = !window && s->served >= z->t.frames[f].d_size ? 1
                   : !window && f + READER_FRAMES < z->ra_lo    ? 2
                   : f >= z->ra_end                             ? 2
                                                                : 3;
        if (who == FOR_AHEAD && kind == 2 && f + z->nslots >= z->ra_lo && f < z->ra_end) continue;
        if (kind == 3 && who != FOR_ANY) continue;
        if (kind < vk || (kind == vk && s->used < v->used)) {
            v = s;
            vk = kind;
        }
    }
    return v;
}

/* Slot s, claimed for frame k, decoded outside the lock (held on entry
 * and on return); READY on success, EMPTY on failure. */
static int fill(stf__zseek *z, slot *s, size_t k, stf_err *err)
{
    s->frame = k;
    s->state = SLOT_LOADING;
    s->served = 0;
    s->used = ++z->tick;
    z->decoded++;
    pthread_mutex_unlock(&z->mu);
    int rc = grow(&s->buf, &s->cap, z->t.frames[k].d_size, z->path, err);
    if (!rc) rc = decode_with_kit(z, k, s->buf, err);
    pthread_mutex_lock(&z->mu);
    s->state = rc ? SLOT_EMPTY : SLOT_READY;
    pthread_cond_broadcast(&z->cv);
    pthread_cond_signal(&z->ra_cv);
    return rc;
}

/* Frame k of the window failed to decode ahead (under mu): the window
 * stops short of it until a read moves it, so that neither the read-ahead
 * thread nor a waiting reader tries it again meanwhile; its reader's own
 * decode reports the error. */
static void stop_short(stf__zseek *z, size_t k)
{
    if (k >= z->ra_lo && k < z->ra_end) z->ra_end = k;
}

/* The lowest frame of the read-ahead window nobody holds or decodes, and an
 * idle slot for it (under mu): 0 when there is none. */
static int ahead_pick(stf__zseek *z, size_t *k, slot **v)
{
    size_t f = z->ra_lo;
    while (f < z->ra_end && find_slot(z, f)) f++;
    if (f >= z->ra_end || !(*v = victim(z, FOR_AHEAD))) return 0;
    *k = f;
    return 1;
}

/* A slot holding frame k, decoded, with a reference taken for the caller. */
static int acquire(stf__zseek *z, size_t k, slot **out, stf_err *err)
{
    pthread_mutex_lock(&z->mu);
    for (;;) {
        slot *hit = find_slot(z, k), *v;
        size_t f;
        if (hit && hit->state == SLOT_READY) {
            hit->refs++;
            hit->used = ++z->tick;
            pthread_mutex_unlock(&z->mu);
            *out = hit;
            return 0;
        }
        /* Being decoded by another thread: rather than wait idle, decode a
         * frame of the read-ahead window nobody has taken yet, so that
         * decoding runs on as many threads as wait for it. A failure there
         * is left to the reader of that frame, whose decode reports it. */
        if (hit && ahead_pick(z, &f, &v)) {
            stf_err e;
            stf_err_clear(&e);
            if (fill(z, v, f, &e)) stop_short(z, f);
            continue;
        }
        /* Being decoded by another thread, or every slot busy: wait. */
        if (hit || !((v = victim(z, FOR_READ)) || (v = victim(z, FOR_ANY)))) {
            pthread_cond_wait(&z->cv, &z->mu);
            continue;
        }
        v->refs = 1;
        int rc = fill(z, v, k, err);
        if (rc) v->refs = 0;
        pthread_mutex_unlock(&z->mu);
        *out = rc ? NULL : v;
        return rc;
    }
}

/* Give back the caller's reference to s, which served it n bytes. */
static void release(stf__zseek *z, slot *s, size_t n)
{
    pthread_mutex_lock(&z->mu);
    s->refs--;
    s->served += n;
    pthread_cond_broadcast(&z->cv);
    pthread_cond_signal(&z->ra_cv);
    pthread_mutex_unlock(&z->mu);
}

/* ------------------------------------------------------------ read-ahead */

/* The read-ahead thread: decodes frames [ra_lo, ra_end) not cached yet into
 * idle slots, the lowest first, until told to stop. A frame it fails to
 * decode is left to the reader, whose decode reports the error. */
static void *ahead_main(void *arg)
{
    stf__zseek *z = arg;
    pthread_mutex_lock(&z->mu);
    while (z->ra_state == 1) {
        size_t k;
        slot *v;
        if (!ahead_pick(z, &k, &v)) {
            pthread_cond_wait(&z->ra_cv, &z->mu);
            continue;
        }
        stf_err e;
        stf_err_clear(&e);
        if (fill(z, v, k, &e)) stop_short(z, k);
    }
    pthread_mutex_unlock(&z->mu);
    return NULL;
}

/*
 * Note a read of [off, off + len) ending in frame `last` (under mu). The
 * read continues a run when it starts where an earlier read ended; from
 * the fourth read of a run on, the window is the frames past `last`, one
 * more than the most readers seen at once (so that the read-ahead thread
 * and every reader can each decode one) within the cache's wmax, and the
 * thread is started the first time. The window moves
 * forward for any run; back only for a run behind the one that moved it
 * last once that one has stopped (no read of it among the last
 * STALE_READS): a reader lagging behind another does not drag the window
 * to and fro, and a new pass from the start takes it over.
 */
static void note_read(stf__zseek *z, uint64_t off, uint64_t len, size_t last)
{
    unsigned i = RUNS, n;
    /* The longest run this read continues: a random read that ended where
     * a run will pass does not split it. */
    for (unsigned r = 0; r < RUNS; r++)
        if (z->run[r].len && z->run[r].end == off && (i == RUNS || z->run[r].len > z->run[i].len))
            i = r;
    if (i == RUNS) {
        i = z->run_next++ % RUNS;
        n = 1;
    } else {
        n = z->run[i].len + 1;
    }
    z->run[i].end = off + len;
    z->run[i].len = n;
    z->run[i].seen = ++z->reads;
    if (n <= RUN_AHEAD || !z->wmax) return;
    size_t w = (size_t)z->readers + 1 < z->wmax ? (size_t)z->readers + 1 : z->wmax;
    size_t end = last + 1 + w;
    if (end > z->t.nframes) end = z->t.nframes;
    if (end <= z->ra_end && i != z->ra_run && z->reads - z->run[z->ra_run].seen <= STALE_READS)
        return;
    z->ra_run = i;
    z->ra_lo = last + 1;
    z->ra_end = end;
    if (z->ra_state == 0) {
        z->ra_state = 1;
        if (pthread_create(&z->ra, NULL, ahead_main, z) != 0) {
            z->ra_state = 0;
            z->wmax = 0; /* read without it */
        }
    }
    pthread_cond_signal(&z->ra_cv);
}

/* ------------------------------------------------------------ reads */

/* Copy decompressed bytes [off, off+len); see zsrc.h. */
static int stf__zseek_read(stf__zseek *z, uint64_t off, void *dst, size_t len, stf_err *err)
{
    uint8_t *d = dst;
    int rc = 0;
    if (!len) return 0;
    pthread_mutex_lock(&z->mu);
    if (++z->inside > z->readers) z->readers = z->inside;
    note_read(z, off, len, stf__seek_table_find(&z->t, off + len - 1));
    /* The first frame, when cached, is held from here: the window may have
     * moved past it, and a decode ahead must not take it first. */
    slot *pin = find_slot(z, stf__seek_table_find(&z->t, off));
    if (pin && pin->state == SLOT_READY) {
        pin->refs++;
        pin->used = ++z->tick;
    } else {
        pin = NULL;
    }
    pthread_mutex_unlock(&z->mu);
    while (len && !rc) {
        size_t k = stf__seek_table_find(&z->t, off);
        const stf__seek_frame *fr = &z->t.frames[k];
        uint64_t in = off - fr->d_off;
        size_t n = fr->d_size - in < len ? (size_t)(fr->d_size - in) : len;
        slot *s = pin && pin->frame == k ? pin : NULL;
        if (n == 0) /* only past the end, which the caller has excluded */
            rc = stf__err(err, STF_EINVAL, "%s: no frame holds byte %llu", z->path,
                          (unsigned long long)off);
        else if (s || !(rc = acquire(z, k, &s, err))) {
            memcpy(d, s->buf + in, n);
            release(z, s, n);
            if (s == pin) pin = NULL;
        }
        d += n;
        off += n;
        len -= n;
    }
    if (pin) release(z, pin, 0);
    pthread_mutex_lock(&z->mu);
    z->inside--;
    pthread_mutex_unlock(&z->mu);
    return rc;
}

static void stf__zseek_free(stf__zseek *z)
{
    if (!z) return;
    pthread_mutex_lock(&z->mu);
    int started = z->ra_state != 0;
    z->ra_state = 2;
    pthread_cond_signal(&z->ra_cv);
    pthread_mutex_unlock(&z->mu);
    if (started) pthread_join(z->ra, NULL);
    for (size_t i = 0; i < z->nslots; i++) stf__free(z->slots[i].buf);
    while (z->kits) {
        kit *kt = z->kits;
        z->kits = kt->next;
        kit_free(kt);
    }
    stf__free(z->slots);
    stf__seek_table_free(&z->t);
    pthread_cond_destroy(&z->ra_cv);
    pthread_cond_destroy(&z->cv);
    pthread_mutex_destroy(&z->mu);
    stf__source_free(z->raw);
    stf__free(z);
}

/* ------------------------------------------------------------ as a source */

static int zseek_src_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err)
{
    return stf__zseek_read(s->impl, off, dst, len, err);
}

static void zseek_src_close(stf__source *s) { stf__zseek_free(s->impl); }

static uint64_t zseek_src_frames(const stf__source *s) { return stf__zseek_frames(s->impl); }

static uint64_t zseek_src_decoded(const stf__source *s) { return stf__zseek_decoded(s->impl); }

static const stf__source_ops zseek_ops = {
    .kind = "zstd seekable",
    .read = zseek_src_read,
    .close = zseek_src_close,
    .frames = zseek_src_frames,
    .frames_decoded = zseek_src_decoded,
};

/* Open; see zsrc.h. */
int stf__zsrc_seekable_open(stf__source **out, stf__source *raw, const stf__zread_opts *o,
                            stf_err *err)
{
    stf__zseek *z = NULL;
    *out = NULL;
    int rc = stf__zseek_open(&z, raw, o, err);
    if (rc || !z) return rc;
    rc = stf__source_new(out, &zseek_ops, z, stf__source_path(raw), stf__zseek_size(z), err);
    if (rc) {
        z->raw = NULL; /* still the caller's */
        stf__zseek_free(z);
        return rc;
    }
    (*out)->storage = STF__STORE_ZSTD_SEEKABLE;
    (*out)->stored = stf__source_size(raw);
    (*out)->inner = raw;
    return 0;
}
