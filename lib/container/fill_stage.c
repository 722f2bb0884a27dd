/*
 * Direct-I/O staging of deferred fills (contract in fill_stage.h). The lock
 * guards only the block states and slot counters; the copies into a slot
 * and the direct writes run outside it, so threads filling different rows
 * of a layer copy and write at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "container/fill_stage.h"

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

/* Set up (contract in fill_stage.h). */
int stf__fs_init(stf__fstage *st, int dfd, uint64_t size, const stf__fs_holes *h)
{
    memset(st, 0, sizeof *st);
    st->dfd = -1;
    st->nblocks = (size + STF__FS_BLOCK - 1) / STF__FS_BLOCK;
    st->state = stf__calloc(st->nblocks ? st->nblocks : 1, 1); /* all STF__FS_SPILL */
    if (!st->state || pthread_mutex_init(&st->mu, NULL) != 0) {
        stf__free(st->state);
        st->state = NULL;
        close(dfd);
        return STF_ENOMEM;
    }
    st->live = 1;
    st->dfd = dfd;
    st->size = size;
    for (size_t i = 0; i < h->n; i++) {
        uint64_t a = (h->r[i][0] + STF__FS_BLOCK - 1) / STF__FS_BLOCK;
        uint64_t e = h->r[i][1] / STF__FS_BLOCK; /* first block not wholly inside */
        /* A hole to the end of the file also owns a partial last block. */
        if (h->r[i][1] == size && size % STF__FS_BLOCK && e * STF__FS_BLOCK >= h->r[i][0]) e++;
        for (uint64_t b = a; b < e && b < st->nblocks; b++) st->state[b] = STF__FS_FREE;
    }
    return 0;
}

/* Release (contract in fill_stage.h). */
void stf__fs_fini(stf__fstage *st)
{
    if (!st->live) return;
    for (int i = 0; i < STF__FS_SLOTS; i++) free(st->slot[i].buf);
    stf__free(st->state);
    if (st->dfd >= 0) close(st->dfd);
    pthread_mutex_destroy(&st->mu);
    memset(st, 0, sizeof *st);
    st->dfd = -1;
}

static uint64_t block_len(const stf__fstage *st, uint64_t b)
{
    uint64_t a = b * STF__FS_BLOCK;
    return st->size - a < STF__FS_BLOCK ? st->size - a : STF__FS_BLOCK;
}

/* The slot holding block b, or -1. Called with mu held. */
static int slot_of(const stf__fstage *st, uint64_t b)
{
    for (int i = 0; i < STF__FS_SLOTS; i++)
        if (st->slot[i].used && st->slot[i].block == b) return i;
    return -1;
}

/* A free slot for block b (its buffer made on first use), or -1. Called
 * with mu held. */
static int claim(stf__fstage *st, uint64_t b)
{
    for (int i = 0; i < STF__FS_SLOTS; i++) {
        stf__fs_slot *s = &st->slot[i];
        if (s->used) continue;
        if (!s->buf) {
            void *p = NULL;
            if (posix_memalign(&p, STF__FS_ALIGN, STF__FS_BLOCK) != 0) return -1;
            s->buf = p;
        }
        /* A last block's padding goes out as it is: the sink cuts the
         * file back to its size right after. */
        s->used = 1;
        s->block = b;
        s->filled = 0;
        return i;
    }
    return -1;
}

/* Split and claim (contract in fill_stage.h). */
size_t stf__fs_plan(stf__fstage *st, uint64_t at, uint64_t n, stf__fs_piece *pieces, size_t max)
{
    size_t k = 0;
    /* Small fills would pin a slot for long (a scale tensor filled a row
     * block at a time): they go through the cache. The size that counts is
     * the fill's, not the piece's: a large fill's few bytes past a block
     * boundary start that block like any other. */
    int big = n >= STF__FS_MIN;
    pthread_mutex_lock(&st->mu);
    while (n && k < max) {
        uint64_t b = at / STF__FS_BLOCK, room = (b + 1) * STF__FS_BLOCK - at;
        size_t len = (size_t)(n < room ? n : room);
        int slot = -1;
        if (b < st->nblocks) {
            if (st->state[b] == STF__FS_STAGED) slot = slot_of(st, b);
            else if (st->state[b] == STF__FS_FREE) {
                if (big || len == block_len(st, b)) slot = claim(st, b);
                st->state[b] = slot >= 0 ? STF__FS_STAGED : STF__FS_SPILL;
            }
        }
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
int stf__fs_landed(stf__fstage *st, const stf__fs_piece *p)
{
    pthread_mutex_lock(&st->mu);
    stf__fs_slot *s = &st->slot[p->slot];
    s->filled += p->len;
    int full = s->filled == block_len(st, s->block);
    pthread_mutex_unlock(&st->mu);
    return full;
}

/* Write a slot's block (contract in fill_stage.h). */
int stf__fs_emit(stf__fstage *st, int slot, int (*hook)(void *, uint64_t, size_t), void *ud,
                 uint64_t *at)
{
    stf__fs_slot *s = &st->slot[slot];
    uint64_t b = s->block, len = block_len(st, b);
    uint64_t off = b * STF__FS_BLOCK, out = (len + STF__FS_ALIGN - 1) / STF__FS_ALIGN * STF__FS_ALIGN;
    int e = 0;
    *at = off;
    if (hook && hook(ud, off, (size_t)len)) e = ENOSPC;
    for (uint64_t done = 0; !e && done < out;) {
        ssize_t w = pwrite(st->dfd, s->buf + done, (size_t)(out - done), (off_t)(off + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) e = w < 0 ? errno : ENOSPC;
        else done += (uint64_t)w;
    }
    pthread_mutex_lock(&st->mu);
    st->state[b] = STF__FS_DONE;
    s->used = 0;
    pthread_mutex_unlock(&st->mu);
    return e;
}

/* A block still staged (contract in fill_stage.h). */
int stf__fs_pending(stf__fstage *st, uint64_t *at)
{
    pthread_mutex_lock(&st->mu);
    int r = 0;
    for (int i = 0; i < STF__FS_SLOTS && !r; i++)
        if (st->slot[i].used) {
            r = 1;
            *at = st->slot[i].block * STF__FS_BLOCK;
        }
    pthread_mutex_unlock(&st->mu);
    return r;
}
