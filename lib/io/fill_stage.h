/*
 * Direct-I/O staging of deferred fills. The fills of one output file land
 * from several threads in pieces (row chunks of a layer), roughly in file
 * order. Written through the page cache, every byte costs a page-cache copy
 * plus the kernel's write-out, which on a virtual disk cost as much as the
 * conversion. Here the file is cut into aligned blocks of STF__FS_BLOCK
 * bytes; a block that holds deferred bytes is assembled in one of
 * STF__FS_SLOTS aligned staging buffers and, once its deferred bytes are
 * all in, written with one O_DIRECT pwrite by the file's writer thread, so
 * the threads that fill never wait for the disk. A block that also holds
 * bytes written in prepare (the header, copied tensors, markers) gets them
 * read back from the page cache by the writer thread just before its
 * write: the filling threads then make no page-cache write to the file at
 * all. That matters beyond the copy: a direct write that allocates holds
 * the file's inode lock until the disk has the block, and a page-cache
 * write to the same file waits for that lock, so every small fill (a
 * chunk's scale rows) sent through the cache stalled its thread for up to
 * a whole block's write.
 *
 * Memory is bounded by the slots: a piece that finds every slot in use
 * waits for the writer to free one when one is queued or being written
 * (the disk is behind), and otherwise goes through the page cache
 * ("spilled"), at its offset, and its block stays that way. Small fills (a scale tensor filled a row block at a time) may
 * keep a block's slot for as long as a layer takes, so blocks they start
 * hold at most STF__FS_SLOTS / 2 slots at once; past that they spill.
 * Blocks never share a page, so the two kinds of write never touch one
 * page. The last block of the file is written padded to the direct-I/O
 * alignment and the file cut back to its size. Internal to the I/O
 * layer.
 */
#ifndef STF_IO_FILL_STAGE_H
#define STF_IO_FILL_STAGE_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>

#include "io/io_internal.h"

/* Block size and alignment of the staged writes. */
#ifndef STF__FS_BLOCK
#define STF__FS_BLOCK ((uint64_t)4 << 20)
#endif
/* Staging buffers per file: STF__FS_SLOTS * STF__FS_BLOCK bytes at most. */
#ifndef STF__FS_SLOTS
#define STF__FS_SLOTS 8
#endif
/* A fill smaller than this is small: the blocks it starts are capped (a
 * scale row block). */
#define STF__FS_MIN ((uint64_t)64 << 10)
/* Alignment of O_DIRECT buffers, offsets and lengths. */
#define STF__FS_ALIGN ((uint64_t)4096)

/* Per-block states. */
enum { STF__FS_SPILL = 0, STF__FS_FREE = 1, STF__FS_STAGED = 2, STF__FS_DONE = 3 };

typedef struct stf__fs_slot {
    unsigned char *buf;  /* STF__FS_BLOCK bytes, STF__FS_ALIGN-aligned; NULL until first use */
    uint64_t block;      /* the block it holds */
    uint64_t filled;     /* bytes copied in so far */
    uint64_t need;       /* deferred bytes in the block: complete at filled == need */
    int used;
    int small;           /* a small fill started it */
} stf__fs_slot;

/* Where a piece of a fill goes: `slot` >= 0 staged, -1 spilled. */
typedef struct stf__fs_piece {
    uint64_t at;
    size_t len;
    int slot;
} stf__fs_piece;

typedef struct stf__fstage {
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* for the writer: a block queued, stop */
    pthread_cond_t cv_free; /* for fills: a block written (a slot freed) */
    pthread_t writer;
    int live;               /* mu, the conditions and the writer thread exist */
    int dfd;                /* O_DIRECT descriptor of the file; -1: never direct */
    int tfd;                /* the sink's descriptor, for the size (not owned) */
    int (*hook)(void *, uint64_t, size_t);
    void *hook_ud;
    uint64_t size;          /* the file's final size */
    uint64_t want, got;     /* bytes of the holes; bytes of finished fills */
    uint64_t nblocks;
    unsigned char *state;   /* per block */
    uint64_t (*hole)[2];    /* the holes, [begin, end) in increasing order (owned) */
    size_t nholes;
    int nsmall;             /* slots in use that a small fill claimed */
    stf__fs_slot slot[STF__FS_SLOTS];
    int q[STF__FS_SLOTS];   /* complete slots waiting for the writer, oldest first */
    unsigned qh, qn;
    int busy, stop;
    unsigned long waits;    /* times a fill waited for a slot (for tests) */
    int err;                /* the first write error (errno); 0: none */
    uint64_t err_off;       /* the offset of the block it hit */
} stf__fstage;

/*
 * Holes of the file (the deferred tensors' ranges), appended in increasing
 * order while prepare writes; adjacent ones merge.
 */
typedef struct stf__fs_holes {
    uint64_t (*r)[2];
    size_t n, cap;
} stf__fs_holes;

/* Record [at, at + n) as a hole; STF_ENOMEM. */
int stf__fs_hole(stf__fs_holes *h, uint64_t at, uint64_t n);
void stf__fs_holes_free(stf__fs_holes *h);

/*
 * Set up staging for a file of `size` bytes with the given holes, writing
 * through `dfd` (an O_DIRECT descriptor of it, which the stage then owns and
 * closes) on a writer thread of its own; `tfd` is the file's ordinary
 * descriptor, whose size the writer sets back after the padded last block.
 * `hook` (may be NULL) is called before each direct write, on the writer
 * thread. Blocks that hold hole bytes become stageable; the rest stay
 * spilled (nothing fills them). The stage keeps a copy of the holes.
 * Returns 0, or STF_ENOMEM (dfd is then closed and the stage stays off).
 */
int stf__fs_init(stf__fstage *st, int dfd, int tfd, uint64_t size, const stf__fs_holes *h,
                 int (*hook)(void *, uint64_t, size_t), void *hook_ud);

/* Stop the writer (blocks queued are still written), release the buffers
 * and close dfd; no-op on a zeroed or released one. */
void stf__fs_fini(stf__fstage *st);

/*
 * Split [at, at + n) into at most `max` pieces, one per block, and claim a
 * slot for each piece that can be staged, waiting for the writer to free
 * one where every slot is in use and one is queued or being written.
 * Returns the number of pieces; a return equal to `max` may leave bytes
 * for another call from pieces[max-1].at + len.
 */
size_t stf__fs_plan(stf__fstage *st, uint64_t at, uint64_t n, stf__fs_piece *pieces, size_t max);

/* The slot buffer address for a staged piece. */
unsigned char *stf__fs_dest(stf__fstage *st, const stf__fs_piece *p);

/* A staged piece's bytes are in place; a block whose deferred bytes this
 * completes is queued for the writer. */
void stf__fs_landed(stf__fstage *st, const stf__fs_piece *p);

/*
 * A fill of n bytes is wholly in place (staged or written). The fill that
 * brings the count to the holes' size waits until the writer has written
 * every queued block, so that once every deferred byte is filled the file
 * holds them all, and then frees the staging buffers. Returns the first write error the writer met (an errno,
 * *at its block's offset), else 0.
 */
int stf__fs_done(stf__fstage *st, uint64_t n, uint64_t *at);

/*
 * At finish: wait for the writer, then 1 and the offset of a block still
 * staged (fills missing), or 0; *e gets the first write error (an errno,
 * *err_at its offset) or 0.
 */
int stf__fs_drain(stf__fstage *st, uint64_t *at, int *e, uint64_t *err_at);

#endif
