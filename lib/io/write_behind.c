/*
 * Write-behind for fills (contract in write_behind.h). Fills of one output
 * land from several threads, roughly in file order but not exactly, so the
 * window is kept in landing order, not by offset: whatever went out more
 * than STF__WB_WINDOW bytes ago has had that long to reach the disk, and waiting
 * for it rarely waits at all unless the disk is slower than the quantizers,
 * when it holds them back as the kernel's dirty-page throttle would.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/write_behind.h"

#define PAGE ((uint64_t)4096)

static stf__wb_ops ops;

/* Set the tests' calls (contract in write_behind.h). */
void stf__wb_ops_set(const stf__wb_ops *o)
{
    if (o) ops = *o;
    else ops = (stf__wb_ops){ NULL, NULL, NULL, NULL };
}

/* An errno that means the call is not available here, not that data failed. */
static int unsupported(int e) { return e == ENOSYS || e == EINVAL || e == ESPIPE || e == EOPNOTSUPP; }

static int sys_start(int fd, uint64_t off, uint64_t len)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0) return errno;
#else
    (void)fd, (void)off, (void)len;
#endif
    return 0;
}

/* Wait for the write-out of a range (and write the edge pages a
 * neighbouring fill dirtied after it started). */
static int sys_wait(int fd, uint64_t off, uint64_t len)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (sync_file_range(fd, (off_t)off, (off_t)len,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER) != 0)
        return errno;
#else
    (void)fd, (void)off, (void)len;
#endif
    return 0;
}

static int sys_drop(int fd, uint64_t off, uint64_t len)
{
    /* Pages under write-out cannot be dropped: wait for them first. */
    int e = sys_wait(fd, off, len);
    if (e == 0) (void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
    return e;
}

/* Initialize (contract in write_behind.h). */
int stf__wb_init(stf__wbehind *wb)
{
    *wb = (stf__wbehind){ .live = 0 };
    if (pthread_mutex_init(&wb->mu, NULL) != 0) return STF_ENOMEM;
    wb->live = 1;
    return 0;
}

/* Release (contract in write_behind.h). */
void stf__wb_fini(stf__wbehind *wb)
{
    if (!wb->live) return;
    pthread_mutex_destroy(&wb->mu);
    wb->live = 0;
}

/* Keep the pages (contract in write_behind.h). */
void stf__wb_keep(stf__wbehind *wb) { wb->keep = 1; }

/* The oldest run, out of the window. Called with mu held. */
static stf__wb_range pop(stf__wbehind *wb)
{
    stf__wb_range r = wb->q[wb->head];
    wb->head = (wb->head + 1) % STF__WB_SLOTS;
    wb->n--;
    wb->bytes -= r.len;
    return r;
}

static int by_off(const void *a, const void *b)
{
    uint64_t x = ((const stf__wb_range *)a)->off, y = ((const stf__wb_range *)b)->off;
    return x < y ? -1 : x > y;
}

/*
 * Sort the batch's fills and merge those that touch (or share a page) into
 * runs, in place: returns the number of runs. Fills never overlap.
 */
static unsigned merge_runs(stf__wb_range *r, unsigned n)
{
    qsort(r, n, sizeof *r, by_off);
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t end = m ? r[m - 1].off + r[m - 1].len : 0;
        if (m && r[i].off <= (end + PAGE - 1) / PAGE * PAGE)
            r[m - 1].len = r[i].off + r[i].len - r[m - 1].off;
        else r[m++] = r[i];
    }
    return m;
}

static void note_error(stf__wbehind *wb, int rc, uint64_t off)
{
    if (rc == 0 || unsupported(rc)) return;
    pthread_mutex_lock(&wb->mu);
    if (!wb->err) {
        wb->err = rc;
        wb->err_off = off;
    }
    pthread_mutex_unlock(&wb->mu);
}

/* A fill landed (contract in write_behind.h). */
void stf__wb_wrote(stf__wbehind *wb, int fd, uint64_t at, uint64_t n)
{
    if (!wb->live || n < STF__WB_MIN) return;
    stf__wb_range batch[STF__WB_SLOTS], out[2 * STF__WB_SLOTS];
    unsigned nb = 0, nout = 0;
    pthread_mutex_lock(&wb->mu);
    wb->pend[wb->npend++] = (stf__wb_range){ at, n };
    wb->pend_bytes += n;
    if (wb->pend_bytes >= STF__WB_BATCH || wb->npend == STF__WB_SLOTS) {
        nb = wb->npend;
        for (unsigned i = 0; i < nb; i++) batch[i] = wb->pend[i];
        wb->npend = 0;
        wb->pend_bytes = 0;
    }
    pthread_mutex_unlock(&wb->mu);
    if (nb == 0) return;
    nb = merge_runs(batch, nb);
    for (unsigned i = 0; i < nb; i++) {
        /* Only whole pages start: a page shared with a fill still to land
         * would be written twice if it went out now. The window keeps the
         * run with every page it touched. */
        uint64_t a = (batch[i].off + PAGE - 1) / PAGE * PAGE;
        uint64_t e = (batch[i].off + batch[i].len) / PAGE * PAGE;
        if (e > a) (void)(ops.start ? ops.start(ops.ud, fd, a, e - a) : sys_start(fd, a, e - a));
        batch[i].len = (batch[i].off + batch[i].len + PAGE - 1) / PAGE * PAGE -
                       batch[i].off / PAGE * PAGE;
        batch[i].off = batch[i].off / PAGE * PAGE;
    }
    pthread_mutex_lock(&wb->mu);
    for (unsigned i = 0; i < nb; i++) {
        if (wb->n == STF__WB_SLOTS) out[nout++] = pop(wb);
        wb->q[(wb->head + wb->n) % STF__WB_SLOTS] = batch[i];
        wb->n++;
        wb->bytes += batch[i].len;
    }
    /* Keep the newest STF__WB_WINDOW bytes. */
    while (wb->n > 1 && wb->bytes - wb->q[wb->head].len >= STF__WB_WINDOW)
        out[nout++] = pop(wb);
    pthread_mutex_unlock(&wb->mu);
    for (unsigned i = 0; i < nout; i++) {
        int rc = wb->keep ? (ops.wait ? ops.wait(ops.ud, fd, out[i].off, out[i].len)
                                      : sys_wait(fd, out[i].off, out[i].len))
                 : ops.drop ? ops.drop(ops.ud, fd, out[i].off, out[i].len)
                            : sys_drop(fd, out[i].off, out[i].len);
        note_error(wb, rc, out[i].off);
    }
}

/* The first error a wait saw (contract in write_behind.h). */
int stf__wb_error(stf__wbehind *wb, uint64_t *off)
{
    if (!wb->live) return 0;
    pthread_mutex_lock(&wb->mu);
    int e = wb->err;
    if (off) *off = wb->err_off;
    pthread_mutex_unlock(&wb->mu);
    return e;
}
