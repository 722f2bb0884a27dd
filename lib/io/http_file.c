/*
 * A remote file: its URL, what its first answer said (size, ETag,
 * Last-Modified), and the ranges already fetched and kept: the first
 * `first_range` bytes, which usually hold the whole header, and the ranges
 * a prefetch brought (the markers). What is kept is bounded: the first
 * range, plus at most PREFETCH_CAP bytes of prefetched ranges, so a server
 * cannot make the reader hold more than a local file's reads would.
 * Reads that follow each other through the file (hash's 1 MiB chunks, the
 * tensors of a pass in file order) are streamed, as an operating system
 * reads ahead: the first read of a run asks for its own bytes; one that
 * goes on where that request ended starts reading ahead, RUN_FIRST bytes
 * (or its own length, when longer), and each block the run consumes to its
 * end doubles the next, up to STREAM_BLOCK, so a 20 GB file is about a
 * thousand requests, while a run that stops soon (two adjacent small
 * reads: a probe's scale, then its weight) costs at most a little more
 * than its bytes. A pass reads several runs at once, interleaved (a job
 * reads the scales near the front of the file, then its weight far
 * behind): RUNS of them are followed, the least recently used one given
 * up for a new run. The blocks they fetched stay, up to BLOCKS of them and
 * STREAM_BLOCK bytes in all, until a new block needs their room (the least
 * recently read first), so a reader a little behind another (the workers
 * of a pass) still finds the block before the last.
 * A read streams its run's block only when it is the one read of the file
 * under way. Reads of several threads at once (the workers of fix -j N,
 * each reading its rows, in file order between them) share a window
 * instead: up to WINDOW_SLOTS blocks of WINDOW_BLOCK bytes (STREAM_BLOCK
 * in all, beside the runs' blocks), each one request, in flight
 * together (at most the process's bound, net_handles.c). A read that goes
 * on where the last request or the window ended takes a block from there:
 * a whole one where the window's blocks end, else one as large as its
 * run's next block would be (a run of small reads, scales, starts small);
 * a read whose first byte lies in a block being fetched fetches the block
 * after the window's end meanwhile, when a slot is free, then waits for
 * its own, so the workers keep that many requests in flight, none asking
 * for bytes another is fetching. The window drops its lowest block for a
 * new one; a read of bytes dropped asks for them again. A block whose
 * request failed (after its retries) fails the reads of its bytes with
 * its error.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/http_get.h"

/* Prefetched bytes kept per file, at most. */
#define PREFETCH_CAP ((uint64_t)64 << 20)
/* Ranges this close are fetched in one request, the gap with them. */
#define COALESCE_GAP ((uint64_t)4096)
/* What a streaming read asks for at once, at most; the runs' blocks in all. */
#define STREAM_BLOCK ((uint64_t)16 << 20)
/* A run's first block, at least. */
#define RUN_FIRST ((uint64_t)64 << 10)
/* The last reads of their own bytes that a read ahead knows of. */
#define FLYING 16
/* Runs of reads followed at once; their blocks kept at once, at most. */
#define RUNS 4
#define BLOCKS 8
/* The window of concurrent readers: its blocks, each one request. */
#define WINDOW_SLOTS 8
#define WINDOW_BLOCK (STREAM_BLOCK / WINDOW_SLOTS)

enum { SLOT_FREE, SLOT_FETCHING, SLOT_READY, SLOT_FAILED };

typedef struct slot {
    int state;
    uint64_t off, end;
    uint8_t *buf;
    stf_err err; /* SLOT_FAILED: why */
} slot;

/* A run of reads, each going on where the last ended: the end of its last
 * request (0: not in use), the size of its last block (0: none yet). */
typedef struct run {
    uint64_t next, last;
    unsigned long used; /* when a read last went on with it */
} run;

/* A block a run fetched: [off, off + len), len 0 when the slot is free. */
typedef struct block {
    uint64_t off, len;
    uint8_t *buf;       /* NULL while it is being fetched */
    unsigned long used; /* when a read last copied from it */
} block;

typedef struct seg {
    uint64_t off, len;
    uint8_t *buf;
} seg;

struct stf__http {
    char *name;
    char *url;
    stf__http_ident id;
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* the streamed block landed (or failed) */
    seg *segs;
    size_t nsegs, cap;
    uint64_t held;
    run runs[RUNS];
    block blks[BLOCKS];
    unsigned long tick; /* counts the reads, for the use of runs and blocks */
    uint64_t seq_end;   /* where the last request ended; UINT64_MAX before any */
    unsigned readers;   /* reads under way */
    slot win[WINDOW_SLOTS];
    uint64_t win_end;   /* the end of the window's last block; 0 before any */
    uint64_t ask_end;   /* where the request started last ends; 0 before any */
    stf__net_tally tally;   /* what this file's requests cost, any thread's */
    stf__range fly[FLYING]; /* the last reads of their own bytes, in flight or done */
    unsigned fly_next;      /* the oldest of them */
};

/* See net.h. */
int stf__http_open(stf__http **out, const char *name, stf_err *err)
{
    *out = NULL;
    stf__http *h = stf__calloc(1, sizeof *h);
    if (!h) return stf__err(err, STF_ENOMEM, "%s: out of memory", name);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    int rc = 0;
    h->name = stf__strdup(name);
    if (!h->name) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    rc = stf__net_resolve(&h->url, name, err);
    if (rc) goto done;
    uint64_t want = stf__net_opts()->first_range, got = 0;
    uint8_t *buf = stf__malloc((size_t)want);
    if (!buf) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    rc = stf__http_get(h->name, h->url, 0, want, buf, 1, &h->id, &got, &h->tally, err);
    if (rc) {
        stf__free(buf);
        goto done;
    }
    if (got < want) { /* a file shorter than the first range keeps only itself */
        uint8_t *fit = stf__realloc(buf, got ? (size_t)got : 1);
        if (fit) buf = fit;
    }
    h->segs = stf__calloc(1, sizeof *h->segs);
    if (!h->segs) {
        stf__free(buf);
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    h->cap = h->nsegs = 1;
    h->segs[0] = (seg){ 0, got, buf };
    h->seq_end = UINT64_MAX;
    *out = h;
    h = NULL;
done:
    stf__http_free(h);
    return rc;
}

uint64_t stf__http_size(const stf__http *h) { return h ? h->id.size : 0; }

/* The kept segment holding byte `off`, or NULL. Under h->mu. */
static const seg *seg_at(const stf__http *h, uint64_t off)
{
    for (size_t i = 0; i < h->nsegs; i++)
        if (off >= h->segs[i].off && off - h->segs[i].off < h->segs[i].len) return &h->segs[i];
    return NULL;
}

/* The block holding byte `off`, fetched (`ready`) or being fetched, or
 * NULL; any block being fetched when `off` is UINT64_MAX. Under h->mu. */
static block *blk_at(stf__http *h, uint64_t off, int ready)
{
    for (int i = 0; i < BLOCKS; i++) {
        block *b = &h->blks[i];
        if (b->len && !b->buf == !ready &&
            (off == UINT64_MAX || (off >= b->off && off - b->off < b->len)))
            return b;
    }
    return NULL;
}

/* `n`, cut so that [off, off + n) stops where the next bytes held or on
 * their way start (a kept segment, a block, the window's) or where one of
 * the last reads of their own bytes started (another worker's rows, in
 * flight or read): a read ahead does not ask for bytes twice. Under h->mu. */
static uint64_t cut_at_held(const stf__http *h, uint64_t off, uint64_t n)
{
    for (size_t i = 0; i < h->nsegs; i++)
        if (h->segs[i].len && h->segs[i].off > off && h->segs[i].off - off < n)
            n = h->segs[i].off - off;
    for (int i = 0; i < BLOCKS; i++)
        if (h->blks[i].len && h->blks[i].off > off && h->blks[i].off - off < n)
            n = h->blks[i].off - off;
    for (int i = 0; i < WINDOW_SLOTS; i++)
        if (h->win[i].state != SLOT_FREE && h->win[i].off > off && h->win[i].off - off < n)
            n = h->win[i].off - off;
    for (int i = 0; i < FLYING; i++)
        if (h->fly[i].len && h->fly[i].off > off && h->fly[i].off - off < n) n = h->fly[i].off - off;
    return n;
}

/* The run a read at `off` goes on with, or NULL. Under h->mu. */
static run *run_going_on(stf__http *h, uint64_t off)
{
    for (int i = 0; i < RUNS; i++)
        if (h->runs[i].next == off) return &h->runs[i];
    return NULL;
}

/* The run whose next block would reach byte `off` past its end (a reader
 * ahead of another in the same run), or NULL. Under h->mu. */
static run *run_reaching(stf__http *h, uint64_t off)
{
    for (int i = 0; i < RUNS; i++) {
        run *r = &h->runs[i];
        uint64_t reach = r->last ? 2 * r->last : RUN_FIRST;
        if (r->next && r->next < off && off - r->next < reach) return r;
    }
    return NULL;
}

/* A run for a read that goes on with none: an unused one, else the least
 * recently used one. Under h->mu. */
static run *run_start(stf__http *h)
{
    run *v = &h->runs[0];
    for (int i = 0; i < RUNS; i++) {
        run *r = &h->runs[i];
        if (!r->next) {
            v = r;
            break;
        }
        if (r->used < v->used) v = r;
    }
    *v = (run){ 0 };
    return v;
}

/*
 * A slot for the block run r fetches next from `off` for a read of `len`
 * bytes, marked fetching: twice its last (RUN_FIRST for its first), at
 * least `len`, at most STREAM_BLOCK and the rest of the file. The blocks
 * hold at most STREAM_BLOCK in all: the least recently read ones are given
 * up for its room; NULL when blocks being fetched leave too little (the
 * read then asks for its own bytes). Under h->mu.
 */
static block *blk_claim(stf__http *h, const run *r, uint64_t off, size_t len)
{
    uint64_t n = r->last ? 2 * r->last : RUN_FIRST, held = 0;
    if (n < len) n = len;
    if (n > STREAM_BLOCK) n = STREAM_BLOCK;
    if (n > h->id.size - off) n = h->id.size - off;
    n = cut_at_held(h, off, n);
    if (n < len) return NULL;
    for (int i = 0; i < BLOCKS; i++) held += h->blks[i].len;
    block *f = NULL;
    for (;;) {
        block *v = NULL;
        f = NULL;
        for (int i = 0; i < BLOCKS; i++) {
            block *b = &h->blks[i];
            if (!b->len) f = b;
            else if (b->buf && (!v || b->used < v->used)) v = b;
        }
        if (f && held + n <= STREAM_BLOCK) break;
        if (!v) return NULL;
        held -= v->len;
        stf__free(v->buf);
        *v = (block){ 0 };
    }
    *f = (block){ off, n, NULL, h->tick };
    return f;
}

/* The window's block holding byte `off` in `state`, or -1. Under h->mu. */
static int slot_at(const stf__http *h, uint64_t off, int state)
{
    for (int i = 0; i < WINDOW_SLOTS; i++)
        if (h->win[i].state == state && off >= h->win[i].off && off < h->win[i].end) return i;
    return -1;
}

/* Copy what the kept segments, the blocks and the window hold of
 * the front of [*off, *off + *len), advancing. Under h->mu. */
static void copy_kept(stf__http *h, uint64_t *off, uint8_t **d, size_t *len)
{
    while (*len) {
        const seg *s = seg_at(h, *off);
        seg b;
        block *r = s ? NULL : blk_at(h, *off, 1);
        if (r) {
            b = (seg){ r->off, r->len, r->buf };
            s = &b;
            r->used = h->tick;
        }
        int k = s ? -1 : slot_at(h, *off, SLOT_READY);
        if (k >= 0) {
            b = (seg){ h->win[k].off, h->win[k].end - h->win[k].off, h->win[k].buf };
            s = &b;
        }
        if (!s) break;
        uint64_t n = s->off + s->len - *off;
        if (n > *len) n = *len;
        memcpy(*d, s->buf + (*off - s->off), (size_t)n);
        *d += n;
        *off += n;
        *len -= (size_t)n;
    }
}

/* Whether a block of the window ends at `off` (or the window does). Under
 * h->mu. */
static int slot_ending(const stf__http *h, uint64_t off)
{
    if (off == h->win_end) return 1;
    for (int i = 0; i < WINDOW_SLOTS; i++)
        if (h->win[i].state != SLOT_FREE && h->win[i].end == off) return 1;
    return 0;
}

/*
 * A slot of the window for [off, off + want) (want at most WINDOW_BLOCK;
 * within the size, cut where bytes held or on their way start), marked
 * fetching: a free one,
 * else the ready one lowest in the file among those ending at or before
 * `behind`; -1 when there is none or byte `off` is held or on its way.
 * Under h->mu.
 */
static int slot_claim(stf__http *h, uint64_t off, uint64_t behind, uint64_t want)
{
    int k = -1;
    if (seg_at(h, off) || blk_at(h, off, 1) || blk_at(h, off, 0) ||
        slot_at(h, off, SLOT_READY) >= 0 || slot_at(h, off, SLOT_FETCHING) >= 0 ||
        slot_at(h, off, SLOT_FAILED) >= 0)
        return -1;
    for (int i = 0; i < WINDOW_SLOTS; i++) {
        if (h->win[i].state == SLOT_FREE) {
            k = i;
            break;
        }
        if (h->win[i].state == SLOT_READY && h->win[i].end <= behind &&
            (k < 0 || h->win[i].off < h->win[k].off))
            k = i;
    }
    if (k < 0) return -1;
    stf__free(h->win[k].buf);
    uint64_t n = cut_at_held(h, off, h->id.size - off < want ? h->id.size - off : want);
    h->win[k].state = SLOT_FETCHING;
    h->win[k].off = off;
    h->win[k].end = off + n;
    h->win[k].buf = NULL;
    if (off + n > h->win_end) h->win_end = off + n;
    h->ask_end = off + n;
    return k;
}

/* Fetch the window's slot k, claimed by this thread: ready, or failed,
 * keeping the error for the readers of its bytes (the request has had its
 * retries, and a file that changed stays changed: the answer that showed
 * it first is the one named). Called and returns under h->mu, which it
 * lets go while the request runs. */
static void slot_fetch(stf__http *h, int k)
{
    uint64_t off = h->win[k].off, n = h->win[k].end - off;
    pthread_mutex_unlock(&h->mu);
    uint8_t *buf = stf__malloc((size_t)n);
    stf_err e;
    stf_err_clear(&e);
    int rc = buf ? stf__http_get(h->name, h->url, off, n, buf, 0, &h->id, NULL, &h->tally,
                                 &e)
                 : stf__err(&e, STF_ENOMEM, "%s: out of memory", h->name);
    pthread_mutex_lock(&h->mu);
    if (rc) {
        stf__free(buf);
        h->win[k].state = SLOT_FAILED;
        h->win[k].err = e;
    } else {
        h->win[k].buf = buf;
        h->win[k].state = SLOT_READY;
        h->seq_end = off + n;
    }
    pthread_cond_broadcast(&h->cv);
}

/* See net.h. */
int stf__http_read(stf__http *h, uint64_t off, void *dst, size_t len, stf_err *err)
{
    uint8_t *d = dst;
    /* Each read fetches at most one block of the window ahead for others
     * and one for itself. */
    int ahead = 1, own = 1;
    /* Kept bytes first; the request asks for the rest. */
    pthread_mutex_lock(&h->mu);
    h->readers++;
    h->tick++;
    for (;;) {
        copy_kept(h, &off, &d, &len);
        if (!len) break;
        if (blk_at(h, off, 0)) {
            pthread_cond_wait(&h->cv, &h->mu);
            continue;
        }
        int f = slot_at(h, off, SLOT_FAILED);
        if (f >= 0) { /* its block's request failed: this read fails with it */
            if (err) *err = h->win[f].err;
            h->readers--;
            pthread_mutex_unlock(&h->mu);
            return h->win[f].err.code ? h->win[f].err.code : STF_EIO;
        }
        if (slot_at(h, off, SLOT_FETCHING) >= 0) {
            /* Its block is on its way: fetch the one after the window
             * meanwhile, in a slot free or read past, then wait. */
            int k = ahead && h->win_end < h->id.size ? slot_claim(h, h->win_end, off, WINDOW_BLOCK) : -1;
            if (k >= 0) {
                ahead = 0;
                slot_fetch(h, k);
            } else {
                pthread_cond_wait(&h->cv, &h->mu);
            }
            continue;
        }
        /* Others read too, and this read goes on from a request, a run
         * or the window: a block of the window from here, a whole one where the
         * window's blocks end, else as large as a run's next block. */
        if (own && h->readers > 1 && len < WINDOW_BLOCK && !blk_at(h, UINT64_MAX, 0) &&
            (off == h->seq_end || off == h->ask_end || off == h->win_end ||
             run_going_on(h, off))) {
            run *r = run_going_on(h, off);
            uint64_t want = r && r->last ? 2 * r->last : RUN_FIRST;
            if (want < len) want = len;
            if (want > WINDOW_BLOCK || slot_ending(h, off)) want = WINDOW_BLOCK;
            int k = slot_claim(h, off, UINT64_MAX, want);
            if (k >= 0) {
                if (!r) r = run_start(h);
                r->next = h->win[k].end;
                r->last = h->win[k].end - off;
                r->used = h->tick;
                own = 0;
                slot_fetch(h, k);
                continue;
            }
        }
        break;
    }
    /* The rest: a run's next block when the read goes on with a run and
     * is the one under way, else its own bytes. */
    run *r = len ? run_going_on(h, off) : NULL;
    block *b = r && len < STREAM_BLOCK && h->readers == 1 ? blk_claim(h, r, off, len) : NULL;
    int stream = b != NULL;
    uint64_t n = stream ? b->len : len;
    if (len) {
        /* A read a little ahead of a run goes on with it, from its end:
         * the bytes between are another reader's, on their own way. */
        if (!r) r = run_reaching(h, off);
        if (!r) r = run_start(h);
        r->next = off + n;
        if (stream) r->last = n;
        r->used = h->tick;
    }
    if (len) h->ask_end = off + n;
    if (len && !stream) {
        h->fly[h->fly_next] = (stf__range){ off, len };
        h->fly_next = (h->fly_next + 1) % FLYING;
    }
    pthread_mutex_unlock(&h->mu);
    int rc = 0;
    uint8_t *blk = NULL;
    if (!len) goto done;
    if (!stream) {
        rc = stf__http_get(h->name, h->url, off, len, d, 0, &h->id, NULL, &h->tally, err);
        goto done;
    }
    blk = stf__malloc((size_t)n);
    if (!blk) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", h->name);
        goto done;
    }
    rc = stf__http_get(h->name, h->url, off, n, blk, 0, &h->id, NULL, &h->tally, err);
    if (!rc) memcpy(d, blk, len);
done:
    pthread_mutex_lock(&h->mu);
    if (len) h->seq_end = off + n;
    if (stream) {
        if (!rc) {
            b->buf = blk;
            blk = NULL;
        } else {
            *b = (block){ 0 };
        }
        pthread_cond_broadcast(&h->cv);
    }
    h->readers--;
    pthread_mutex_unlock(&h->mu);
    stf__free(blk);
    return rc;
}

static int range_cmp(const void *a, const void *b)
{
    const stf__range *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* See net.h. */
int stf__http_prefetch(stf__http *h, const stf__range *r, size_t n, stf_err *err)
{
    int rc = 0;
    if (!n) return 0;
    stf__range *v = stf__calloc(n, sizeof *v);
    if (!v) return stf__err(err, STF_ENOMEM, "%s: out of memory", h->name);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) /* empty ranges and those already held need nothing */
        if (r[i].len) {
            pthread_mutex_lock(&h->mu);
            const seg *s = seg_at(h, r[i].off);
            int held = s && r[i].off + r[i].len <= s->off + s->len;
            pthread_mutex_unlock(&h->mu);
            if (!held) v[m++] = r[i];
        }
    qsort(v, m, sizeof *v, range_cmp);
    size_t i = 0;
    while (i < m) {
        uint64_t a = v[i].off, b = v[i].off + v[i].len;
        size_t j = i + 1;
        while (j < m && v[j].off <= b + COALESCE_GAP) {
            if (v[j].off + v[j].len > b) b = v[j].off + v[j].len;
            j++;
        }
        i = j;
        if (b - a > PREFETCH_CAP - h->held) continue; /* left for its reads */
        uint8_t *buf = stf__malloc((size_t)(b - a));
        if (!buf) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", h->name);
            break;
        }
        rc = stf__http_get(h->name, h->url, a, b - a, buf, 0, &h->id, NULL, &h->tally, err);
        pthread_mutex_lock(&h->mu);
        if (!rc && h->nsegs == h->cap) {
            size_t nc = h->cap * 2;
            seg *ns = stf__realloc(h->segs, nc * sizeof *ns);
            if (ns) {
                h->segs = ns;
                h->cap = nc;
            } else {
                rc = stf__err(err, STF_ENOMEM, "%s: out of memory", h->name);
            }
        }
        if (!rc) {
            h->segs[h->nsegs++] = (seg){ a, b - a, buf };
            h->held += b - a;
            buf = NULL;
        }
        pthread_mutex_unlock(&h->mu);
        stf__free(buf);
        if (rc) break;
    }
    stf__free(v);
    return rc;
}

/* See net.h. */
void stf__http_network(const stf__http *h, uint64_t *bytes, uint64_t *requests)
{
    if (bytes) *bytes = h ? atomic_load(&h->tally.bytes) : 0;
    if (requests) *requests = h ? atomic_load(&h->tally.requests) : 0;
}

/* See net.h. */
void stf__http_free(stf__http *h)
{
    if (!h) return;
    for (size_t i = 0; i < h->nsegs; i++) stf__free(h->segs[i].buf);
    stf__free(h->segs);
    for (int i = 0; i < BLOCKS; i++) stf__free(h->blks[i].buf);
    for (int i = 0; i < WINDOW_SLOTS; i++) stf__free(h->win[i].buf);
    stf__free(h->url);
    stf__free(h->name);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    stf__free(h);
}
