/*
 * Write-behind for an output file filled in place (stf__sink_pwrite): large
 * fills are handed to the disk as soon as a batch of them has landed, and
 * once a window of later batches has gone out too, their pages are waited
 * for and dropped from the page cache. The final fsync then has little left to write, the disk
 * works while the quantizers do, and the pages the fills copy into are the
 * few the window keeps recycling instead of a fresh page for every byte of
 * the output, which is what page-cache writes cost most on a virtual
 * machine. Advisory only: the bytes, the file and the fsync at the end are
 * the same without it. Internal to the I/O layer.
 */
#ifndef STF_IO_WRITE_BEHIND_H
#define STF_IO_WRITE_BEHIND_H

#include <pthread.h>
#include <stdint.h>

#include "io/io_internal.h"

/* Fills smaller than this are left to the final fsync (a scale row block). */
#define STF__WB_MIN ((uint64_t)64 << 10)
/*
 * Landed bytes handed to the disk at once, merged into runs of adjacent
 * fills: each hand-over is a request to the (virtual) disk, and a request
 * per fill cost more in notifications than it saved.
 */
#define STF__WB_BATCH ((uint64_t)2 << 20)
/* Bytes of the newest runs kept in the page cache, written or in flight. */
#define STF__WB_WINDOW ((uint64_t)16 << 20)
/* Fills per batch and runs in the window at most; a full window drops its
 * oldest run early, a full batch goes out early. */
#define STF__WB_SLOTS 64

typedef struct stf__wb_range {
    uint64_t off, len;
} stf__wb_range;

typedef struct stf__wbehind {
    pthread_mutex_t mu;
    int live;                       /* mu initialized */
    stf__wb_range pend[STF__WB_SLOTS]; /* landed fills not yet handed over */
    unsigned npend;
    uint64_t pend_bytes;
    stf__wb_range q[STF__WB_SLOTS]; /* runs handed over, oldest first (a ring) */
    unsigned head, n;
    uint64_t bytes;                 /* sum of their lengths */
    int err;                        /* the first errno a wait returned; 0: none */
    uint64_t err_off;               /* where that wait started */
    /* Runs out of the window are waited for but kept in the page cache
     * (stf__wb_keep): the file is read back soon after. */
    int keep;
} stf__wbehind;

/*
 * The calls write-behind makes, for tests: `start` hands [off, off + len)
 * to the disk, `drop` waits for it and drops it from the page cache, `wait`
 * (a keeping write-behind's) only waits for it. Each returns 0 or an errno.
 * NULL members (and a NULL argument) restore the system calls.
 */
typedef struct stf__wb_ops {
    int (*start)(void *ud, int fd, uint64_t off, uint64_t len);
    int (*drop)(void *ud, int fd, uint64_t off, uint64_t len);
    void *ud;
    int (*wait)(void *ud, int fd, uint64_t off, uint64_t len);
} stf__wb_ops;
void stf__wb_ops_set(const stf__wb_ops *ops);

/* Initialize; STF_ENOMEM when no mutex can be made. */
int stf__wb_init(stf__wbehind *wb);
/* Release; no-op on a zeroed or released one. */
void stf__wb_fini(stf__wbehind *wb);

/*
 * From now on, runs that leave the window are waited for (the write-out
 * still keeps pace with the fills) but their pages stay in the page cache,
 * for a caller that reads the whole file back right after writing it
 * (stf__sink_keep_cache). Call before the first stf__wb_wrote.
 */
void stf__wb_keep(stf__wbehind *wb);

/*
 * [at, at + n) of fd has just been written. A fill of at least STF__WB_MIN
 * bytes joins the batch; when the batch holds STF__WB_BATCH bytes, this
 * caller merges it into runs of adjacent fills, starts the write-out of
 * each run's whole pages, adds the runs to the window and waits for and
 * drops (with stf__wb_keep: only waits for) the oldest runs beyond
 * STF__WB_WINDOW bytes. Safe from several
 * threads at once for disjoint ranges.
 */
void stf__wb_wrote(stf__wbehind *wb, int fd, uint64_t at, uint64_t n);

/*
 * The first write-out error a wait saw (its errno, 0 when none) and where:
 * a wait consumes the error the file's fsync would otherwise report, so the
 * sink reports it from here.
 */
int stf__wb_error(stf__wbehind *wb, uint64_t *off);

#endif
