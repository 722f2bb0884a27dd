/*
 * Direct-I/O staging of deferred fills (contract in fill_stage.h). The lock
 * guards only the block states, slot counters and the writer's queue; the
 * copies into a slot, the read-back of a block's prepare bytes and the
 * direct writes run outside it, so threads filling different rows of a
 * layer copy at once while the writer writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fill_stage.h"

/* Record a hole (contract in fill_stage.h). */
int stf__fs_hole(stf__fs_holes *h, uint64_t at, uint64_t n)
{
    if (!n) return 0;
    if (h->n && h->r[h->n - 1][1] == at) {
        h->r[h->n - 1][1] = at + n;
        return 0;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        void *g = stf__realloc(h->r, cap * sizeof *h->r);
        if (!g) return STF_ENOMEM;
        h->r = g;
        h->cap = cap;
    }
    h->r[h->n][0] = at;
    h->r[h->n][1] = at + n;
    h->n++;
    return 0;
}

void stf__fs_holes_free(stf__fs_holes *h)
{
    stf__free(h->r);
    *h = (stf__fs_holes){ NULL, 0, 0 };
}

static void *writer_main(void *ud);

/* Set up (contract in fill_stage.h). */
int stf__fs_init(stf__fstage *st, int dfd, int tfd, uint64_t size, const stf__fs_holes *h,
                 int (*hook)(void *, uint64_t, size_t), void *hook_ud)
{
    memset(st, 0, sizeof *st);
    st->dfd = -1;
    st->nblocks = (size + STF__FS_BLOCK - 1) / STF__FS_BLOCK;
    st->state = stf__calloc(st->nblocks ? st->nblocks : 1, 1); /* all STF__FS_SPILL */
    st->hole = stf__malloc((h->n ? h->n : 1) * sizeof *st->hole);
    st->dfd = dfd;
    st->tfd = tfd;
    st->hook = hook;
    st->hook_ud = hook_ud;
    st->size = size;
    int mu = 0, cw = 0, cf = 0;
    if (!st->state || !st->hole || !(mu = pthread_mutex_init(&st->mu, NULL) == 0) ||
        !(cw = pthread_cond_init(&st->cv_work, NULL) == 0) ||
        !(cf = pthread_cond_init(&st->cv_free, NULL) == 0) ||
        pthread_create(&st->writer, NULL, writer_main, st) != 0) {
        if (cf) pthread_cond_destroy(&st->cv_free);
        if (cw) pthread_cond_destroy(&st->cv_work);
        if (mu) pthread_mutex_destroy(&st->mu);
        stf__free(st->state);
        stf__free(st->hole);
        st->state = NULL;
        st->hole = NULL;
        st->dfd = -1;
        close(dfd);
        return STF_ENOMEM;
    }
    st->live = 1;
    for (size_t i = 0; i < h->n; i++) {
        st->hole[i][0] = h->r[i][0];
        st->hole[i][1] = h->r[i][1];
        st->want += h->r[i][1] - h->r[i][0];
        if (h->r[i][1] <= h->r[i][0]) continue;
        uint64_t a = h->r[i][0] / STF__FS_BLOCK, e = (h->r[i][1] - 1) / STF__FS_BLOCK;
        for (uint64_t b = a; b <= e && b < st->nblocks; b++) st->state[b] = STF__FS_FREE;
    }
    st->nholes = h->n;
    return 0;
}

/* Release (contract in fill_stage.h). */
void stf__fs_fini(stf__fstage *st)
{
    if (!st->live) return;
    pthread_mutex_lock(&st->mu);
    st->stop = 1;
    pthread_cond_signal(&st->cv_work);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->writer, NULL);
    for (int i = 0; i < STF__FS_SLOTS; i++) free(st->slot[i].buf);
    stf__free(st->state);
    stf__free(st->hole);
    if (st->dfd >= 0) close(st->dfd);
    pthread_cond_destroy(&st->cv_free);
    pthread_cond_destroy(&st->cv_work);
    pthread_mutex_destroy(&st->mu);
    memset(st, 0, sizeof *st);
    st->dfd = -1;
}

static uint64_t block_len(const stf__fstage *st, uint64_t b)
{
    uint64_t a = b * STF__FS_BLOCK;
    return st->size - a < STF__FS_BLOCK ? st->size - a : STF__FS_BLOCK;
}

/* The first hole that ends after `at` (nholes if none). */
static size_t first_hole(const stf__fstage *st, uint64_t at)
{
    size_t lo = 0, hi = st->nholes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->hole[mid][1] <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Bytes of block b inside holes: the deferred bytes its fills bring. */
static uint64_t need_of(const stf__fstage *st, uint64_t b)
{
    uint64_t a = b * STF__FS_BLOCK, e = a + block_len(st, b), n = 0;
    for (size_t i = first_hole(st, a); i < st->nholes && st->hole[i][0] < e; i++) {
        uint64_t lo = st->hole[i][0] > a ? st->hole[i][0] : a;
        uint64_t hi = st->hole[i][1] < e ? st->hole[i][1] : e;
        n += hi - lo;
    }
    return n;
}

/* The slot holding block b, or -1. Called with mu held. */
static int slot_of(const stf__fstage *st, uint64_t b)
{
    for (int i = 0; i < STF__FS_SLOTS; i++)
        if (st->slot[i].used && st->slot[i].block == b) return i;
    return -1;
}

/* claim()'s answers besides a slot. */
enum { NO_FREE_SLOT = -1, REFUSED = -2 };

/* A free slot for block b (its buffer made on first use), NO_FREE_SLOT, or
 * REFUSED (no memory for a buffer, or a small fill, `small`, while small
 * fills hold half the slots). Called with mu held. */
static int claim(stf__fstage *st, uint64_t b, int small)
{
    if (small && st->nsmall >= STF__FS_SLOTS / 2) return REFUSED;
    for (int i = 0; i < STF__FS_SLOTS; i++) {
        stf__fs_slot *s = &st->slot[i];
        if (s->used) continue;
        if (!s->buf) {
            void *p = NULL;
            if (posix_memalign(&p, STF__FS_ALIGN, STF__FS_BLOCK) != 0) return REFUSED;
            s->buf = p;
        }
        s->used = 1;
        s->small = small;
        st->nsmall += small;
        s->block = b;
        s->filled = 0;
        s->need = need_of(st, b);
        return i;
    }
    return NO_FREE_SLOT;
}

/*
 * The slot for block b, claimed if it is free, or -1 (the block is or
 * becomes spilled). With every slot in use and one of them queued or being
 * written, the caller waits for the writer to free it: the disk is then
 * the bottleneck, and a piece sent through the page cache instead would
 * only wait for the inode lock the direct write holds. With none queued,
 * the slots wait for fills (perhaps this thread's own), so it spills.
 * Called with mu held.
 */
static int slot_for(stf__fstage *st, uint64_t b, int small)
{
    for (;;) {
        if (st->state[b] == STF__FS_STAGED) return slot_of(st, b);
        if (st->state[b] != STF__FS_FREE) return -1;
        int slot = claim(st, b, small);
        if (slot >= 0) {
            st->state[b] = STF__FS_STAGED;
            return slot;
        }
        if (slot == REFUSED || !(st->qn || st->busy)) {
            st->state[b] = STF__FS_SPILL;
            return -1;
        }
        /* Another thread may settle block b meanwhile: look again. */
        st->waits++;
        pthread_cond_wait(&st->cv_free, &st->mu);
    }
}

/* Split and claim (contract in fill_stage.h). */
size_t stf__fs_plan(stf__fstage *st, uint64_t at, uint64_t n, stf__fs_piece *pieces, size_t max)
{
    size_t k = 0;
    /* Small fills may pin a slot for long (a scale tensor filled a row
     * block at a time): claim() caps them. The size that counts is the
     * fill's, not the piece's: a large fill's few bytes past a block
     * boundary start that block like any other. */
    int small = n < STF__FS_MIN;
    pthread_mutex_lock(&st->mu);
    while (n && k < max) {
        uint64_t b = at / STF__FS_BLOCK, room = (b + 1) * STF__FS_BLOCK - at;
        size_t len = (size_t)(n < room ? n : room);
        int slot = b < st->nblocks ? slot_for(st, b, small) : -1;
        pieces[k++] = (stf__fs_piece){ at, len, slot };
        at += len;
        n -= len;
    }
    pthread_mutex_unlock(&st->mu);
    return k;
}

unsigned char *stf__fs_dest(stf__fstage *st, const stf__fs_piece *p)
{
    return st->slot[p->slot].buf + p->at % STF__FS_BLOCK;
}

/* A staged piece landed (contract in fill_stage.h). */
void stf__fs_landed(stf__fstage *st, const stf__fs_piece *p)
{
    pthread_mutex_lock(&st->mu);
    stf__fs_slot *s = &st->slot[p->slot];
    s->filled += p->len;
    if (s->filled == s->need) {
        st->q[(st->qh + st->qn++) % STF__FS_SLOTS] = p->slot;
        pthread_cond_signal(&st->cv_work);
    }
    pthread_mutex_unlock(&st->mu);
}

/* Read [a, e) of the file into the slot's place for it: prepare's bytes,
 * from the page cache. An errno, EIO for a file that ends early, or 0. */
static int read_back(const stf__fstage *st, const stf__fs_slot *s, uint64_t a, uint64_t e)
{
    size_t got = 0;
    int rc = stf__pread_full(st->tfd, s->buf + a % STF__FS_BLOCK, (size_t)(e - a), a, &got);
    return rc ? rc : got == e - a ? 0 : EIO;
}

/* Bring in the bytes of the slot's block that lie outside every hole. */
static int read_gaps(const stf__fstage *st, const stf__fs_slot *s, uint64_t len)
{
    uint64_t a = s->block * STF__FS_BLOCK, e = a + len, at = a;
    for (size_t i = first_hole(st, a); at < e && i < st->nholes; i++) {
        uint64_t h0 = st->hole[i][0], h1 = st->hole[i][1];
        if (h0 >= e) break;
        int rc = h0 > at ? read_back(st, s, at, h0) : 0;
        if (rc) return rc;
        if (h1 > at) at = h1;
    }
    return at < e ? read_back(st, s, at, e) : 0;
}

/* Write a slot's block with pwrite on dfd, padded to STF__FS_ALIGN, and set
 * the size back after the last block: an errno or 0. */
static int write_block(stf__fstage *st, const stf__fs_slot *s)
{
    uint64_t len = block_len(st, s->block), off = s->block * STF__FS_BLOCK;
    uint64_t out = (len + STF__FS_ALIGN - 1) / STF__FS_ALIGN * STF__FS_ALIGN;
    int rc = s->need == len ? 0 : read_gaps(st, s, len);
    if (rc) return rc;
    if (st->hook && st->hook(st->hook_ud, off, (size_t)len)) return ENOSPC;
    /* A last block goes out padded to the alignment, and the file is cut
     * back to its size right after: the padding is zeros, never whatever
     * the buffer held before (another block's bytes, or the heap's). */
    if (out != len) memset(s->buf + len, 0, (size_t)(out - len));
    int e = stf__pwrite_full(st->dfd, s->buf, (size_t)out, off);
    if (e) return e;
    if (out != len && ftruncate(st->tfd, (off_t)st->size) != 0) return errno;
    return 0;
}

/* The writer thread: queued blocks in turn, until stopped with none left. */
static void *writer_main(void *ud)
{
    stf__fstage *st = ud;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (!st->qn && !st->stop) pthread_cond_wait(&st->cv_work, &st->mu);
        if (!st->qn) break;
        int i = st->q[st->qh];
        st->qh = (st->qh + 1) % STF__FS_SLOTS;
        st->qn--;
        st->busy = 1;
        int failed = st->err != 0; /* after a failure the output is lost: skip */
        pthread_mutex_unlock(&st->mu);
        int e = failed ? 0 : write_block(st, &st->slot[i]);
        pthread_mutex_lock(&st->mu);
        if (e && !st->err) {
            st->err = e;
            st->err_off = st->slot[i].block * STF__FS_BLOCK;
        }
        st->state[st->slot[i].block] = STF__FS_DONE;
        st->slot[i].used = 0;
        st->nsmall -= st->slot[i].small;
        st->busy = 0;
        pthread_cond_broadcast(&st->cv_free);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Wait until the writer is idle with nothing queued. Called with mu held. */
static void wait_idle(stf__fstage *st)
{
    while (st->qn || st->busy) pthread_cond_wait(&st->cv_free, &st->mu);
}

/* A fill is in place (contract in fill_stage.h). */
int stf__fs_done(stf__fstage *st, uint64_t n, uint64_t *at)
{
    pthread_mutex_lock(&st->mu);
    st->got += n;
    if (st->got == st->want) {
        wait_idle(st);
        /* The file is filled: its buffers go now, not at finish, so the
         * shards of a sharded output, filled one after another, do not
         * each keep theirs until commit. */
        for (int i = 0; i < STF__FS_SLOTS; i++)
            if (!st->slot[i].used) {
                free(st->slot[i].buf);
                st->slot[i].buf = NULL;
            }
    }
    int e = st->err;
    *at = st->err_off;
    pthread_mutex_unlock(&st->mu);
    return e;
}

/* The writer done, what is left (contract in fill_stage.h). */
int stf__fs_drain(stf__fstage *st, uint64_t *at, int *e, uint64_t *err_at)
{
    pthread_mutex_lock(&st->mu);
    wait_idle(st);
    int r = 0;
    for (int i = 0; i < STF__FS_SLOTS && !r; i++)
        if (st->slot[i].used) {
            r = 1;
            *at = st->slot[i].block * STF__FS_BLOCK;
        }
    *e = st->err;
    *err_at = st->err_off;
    pthread_mutex_unlock(&st->mu);
    return r;
}
