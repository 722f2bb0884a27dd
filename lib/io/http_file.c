/*
 * A remote file: its URL, what its first answer said (size, ETag,
 * Last-Modified), and the ranges already fetched and kept: the first
 * `first_range` bytes, which usually hold the whole header, and the ranges
 * a prefetch brought (the markers). What is kept is bounded: the first
 * range, plus at most PREFETCH_CAP bytes of prefetched ranges, so a server
 * cannot make the reader hold more than a local file's reads would.
 * Reads that follow each other through the file (hash's 1 MiB chunks, the
 * tensors of a pass in file order) are streamed: once a read starts where
 * the previous request ended, the next STREAM_BLOCK bytes come in one
 * request, so a 20 GB file is a thousand requests, not twenty thousand;
 * the block is the one more buffer a streaming read holds.
 * A read streams that block only when it is the one read of the file
 * under way. Reads of several threads at once (the workers of fix -j N,
 * each reading its rows, in file order between them) share a window
 * instead: up to WINDOW_SLOTS blocks of WINDOW_BLOCK bytes (STREAM_BLOCK
 * in all, the single reader's block freed), each one request, in flight
 * together (at most the process's bound, net_handles.c). A read that goes
 * on where the last request or the window ended takes a block from there;
 * a read whose first byte lies in a block being fetched fetches the block
 * after the window's end meanwhile, when a slot is free, then waits for
 * its own, so the workers keep that many requests in flight, none asking
 * for bytes another is fetching. The window drops its lowest block for a
 * new one; a read of bytes dropped asks for them again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/http_get.h"

/* Prefetched bytes kept per file, at most. */
#define PREFETCH_CAP ((uint64_t)64 << 20)
/* Ranges this close are fetched in one request, the gap with them. */
#define COALESCE_GAP ((uint64_t)4096)
/* What a streaming read asks for at once. */
#define STREAM_BLOCK ((uint64_t)16 << 20)
/* The window of concurrent readers: its blocks, each one request. */
#define WINDOW_SLOTS 8
#define WINDOW_BLOCK (STREAM_BLOCK / WINDOW_SLOTS)

enum { SLOT_FREE, SLOT_FETCHING, SLOT_READY };

typedef struct slot {
    int state;
    uint64_t off, end;
    uint8_t *buf;
} slot;

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
    uint8_t *blk;       /* the streamed block: [blk_off, blk_off + blk_len) */
    uint64_t blk_off, blk_len;
    uint64_t seq_end;   /* where the last request ended; UINT64_MAX before any */
    unsigned readers;   /* reads under way */
    int pending;        /* a streamed block is being fetched: [pend_off, pend_end) */
    uint64_t pend_off, pend_end;
    slot win[WINDOW_SLOTS];
    uint64_t win_end;   /* the end of the window's last block; 0 before any */
    uint64_t ask_end;   /* where the request started last ends; 0 before any */
    stf__net_tally tally; /* what this file's requests cost, any thread's */
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

/* The window's block holding byte `off` in `state`, or -1. Under h->mu. */
static int slot_at(const stf__http *h, uint64_t off, int state)
{
    for (int i = 0; i < WINDOW_SLOTS; i++)
        if (h->win[i].state == state && off >= h->win[i].off && off < h->win[i].end) return i;
    return -1;
}

/* Copy what the kept segments, the streamed block and the window hold of
 * the front of [*off, *off + *len), advancing. Under h->mu. */
static void copy_kept(stf__http *h, uint64_t *off, uint8_t **d, size_t *len)
{
    while (*len) {
        const seg *s = seg_at(h, *off);
        seg b = { h->blk_off, h->blk_len, h->blk };
        if (!s && h->blk && *off >= b.off && *off - b.off < b.len) s = &b;
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

/*
 * A slot of the window for [off, off + WINDOW_BLOCK) (within the size),
 * marked fetching: a free one, else the ready one lowest in the file among
 * those ending at or before `behind`; -1 when there is none. The single
 * reader's block goes: the window holds the streamed bytes now. Under
 * h->mu.
 */
static int slot_claim(stf__http *h, uint64_t off, uint64_t behind)
{
    int k = -1;
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
    stf__free(h->blk);
    h->blk = NULL;
    h->blk_len = 0;
    uint64_t n = h->id.size - off < WINDOW_BLOCK ? h->id.size - off : WINDOW_BLOCK;
    h->win[k] = (slot){ SLOT_FETCHING, off, off + n, NULL };
    if (off + n > h->win_end) h->win_end = off + n;
    h->ask_end = off + n;
    return k;
}

/* Fetch the window's slot k, claimed by this thread: ready, or free again
 * when it failed (the readers of its bytes then ask for them themselves,
 * and meet the error). Called and returns under h->mu, which it lets go
 * while the request runs. */
static void slot_fetch(stf__http *h, int k)
{
    uint64_t off = h->win[k].off, n = h->win[k].end - off;
    pthread_mutex_unlock(&h->mu);
    uint8_t *buf = stf__malloc((size_t)n);
    stf_err e;
    stf_err_clear(&e);
    int rc = buf ? stf__http_get(h->name, h->url, off, n, buf, 0, &h->id, NULL, &h->tally, &e) : STF_ENOMEM;
    pthread_mutex_lock(&h->mu);
    if (rc) {
        stf__free(buf);
        h->win[k] = (slot){ SLOT_FREE, 0, 0, NULL };
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
    /* Each read fetches at most one block ahead for others and one for
     * itself: a block that failed is asked for by its readers, once. */
    int ahead = 1, own = 1;
    /* Kept bytes first; the request asks for the rest. */
    pthread_mutex_lock(&h->mu);
    h->readers++;
    for (;;) {
        copy_kept(h, &off, &d, &len);
        if (!len) break;
        if (h->pending && off >= h->pend_off && off < h->pend_end) {
            pthread_cond_wait(&h->cv, &h->mu);
            continue;
        }
        if (slot_at(h, off, SLOT_FETCHING) >= 0) {
            /* Its block is on its way: fetch the one after the window
             * meanwhile, in a slot free or read past, then wait. */
            int k = ahead && h->win_end < h->id.size ? slot_claim(h, h->win_end, off) : -1;
            if (k >= 0) {
                ahead = 0;
                slot_fetch(h, k);
            } else {
                pthread_cond_wait(&h->cv, &h->mu);
            }
            continue;
        }
        /* Others read too, and this read goes on from a request or the
         * window: a block of the window from here. */
        if (own && h->readers > 1 && len < WINDOW_BLOCK && !h->pending &&
            (off == h->seq_end || off == h->ask_end || off == h->win_end)) {
            int k = slot_claim(h, off, UINT64_MAX);
            if (k >= 0) {
                own = 0;
                slot_fetch(h, k);
                continue;
            }
        }
        break;
    }
    int stream = len && off == h->seq_end && len < STREAM_BLOCK && h->readers == 1;
    uint64_t n = stream && h->id.size - off < STREAM_BLOCK ? h->id.size - off : STREAM_BLOCK;
    if (stream) {
        h->pending = 1;
        h->pend_off = off;
        h->pend_end = off + n;
    }
    if (len) h->ask_end = off + (stream ? n : len);
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
    if (len) h->seq_end = off + (stream ? n : len);
    if (stream) {
        if (!rc) {
            stf__free(h->blk);
            h->blk = blk;
            h->blk_off = off;
            h->blk_len = n;
            blk = NULL;
        }
        h->pending = 0;
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
    stf__free(h->blk);
    for (int i = 0; i < WINDOW_SLOTS; i++) stf__free(h->win[i].buf);
    stf__free(h->url);
    stf__free(h->name);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    stf__free(h);
}
