/*
 * Write-behind for fills (contract in write_behind.h). Fills of one output
 * land from several threads, roughly in file order but not exactly, so the
 * window is kept in landing order, not by offset: whatever landed more than
 * STF__WB_WINDOW bytes ago has had that long to reach the disk, and waiting
 * for it rarely waits at all unless the disk is slower than the quantizers,
 * when it holds them back as the kernel's dirty-page throttle would.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "container/write_behind.h"
#include "container/container_internal.h"

#define PAGE ((uint64_t)4096)

static stf__wb_ops ops;

/* Set the tests' calls (contract in write_behind.h). */
void stf__wb_ops_set(const stf__wb_ops *o)
{
    if (o) ops = *o;
    else ops = (stf__wb_ops){ NULL, NULL, NULL };
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

static int sys_drop(int fd, uint64_t off, uint64_t len)
{
    int e = 0;
#ifdef SYNC_FILE_RANGE_WRITE
    /* Pages under write-out cannot be dropped: wait for them (and write
     * the edge pages a neighbouring fill dirtied after they started). */
    if (sync_file_range(fd, (off_t)off, (off_t)len,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER) != 0)
        e = errno;
#endif
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

/* The oldest fill, out of the window. Called with mu held. */
static stf__wb_range pop(stf__wbehind *wb)
{
    stf__wb_range r = wb->q[wb->head];
    wb->head = (wb->head + 1) % STF__WB_SLOTS;
    wb->n--;
    wb->bytes -= r.len;
    return r;
}

/* A fill landed (contract in write_behind.h). */
void stf__wb_wrote(stf__wbehind *wb, int fd, uint64_t at, uint64_t n)
{
    if (!wb->live || n < STF__WB_MIN) return;
    /* Start only the whole pages: a page shared with a neighbouring fill
     * would be written twice if it went out before the neighbour landed. */
    uint64_t a = (at + PAGE - 1) / PAGE * PAGE, e = (at + n) / PAGE * PAGE;
    if (e > a) (void)(ops.start ? ops.start(ops.ud, fd, a, e - a) : sys_start(fd, a, e - a));
    stf__wb_range out[4];
    unsigned nout = 0;
    pthread_mutex_lock(&wb->mu);
    if (wb->n == STF__WB_SLOTS) out[nout++] = pop(wb);
    wb->q[(wb->head + wb->n) % STF__WB_SLOTS] =
        (stf__wb_range){ at / PAGE * PAGE, (at + n + PAGE - 1) / PAGE * PAGE - at / PAGE * PAGE };
    wb->n++;
    wb->bytes += wb->q[(wb->head + wb->n - 1) % STF__WB_SLOTS].len;
    /* Keep the newest STF__WB_WINDOW bytes; a few at a time, the rest next call. */
    while (nout < 4 && wb->n > 1 && wb->bytes - wb->q[wb->head].len >= STF__WB_WINDOW)
        out[nout++] = pop(wb);
    pthread_mutex_unlock(&wb->mu);
    for (unsigned i = 0; i < nout; i++) {
        int rc = ops.drop ? ops.drop(ops.ud, fd, out[i].off, out[i].len)
                          : sys_drop(fd, out[i].off, out[i].len);
        if (rc == 0 || unsupported(rc)) continue;
        pthread_mutex_lock(&wb->mu);
        if (!wb->err) {
            wb->err = rc;
            wb->err_off = out[i].off;
        }
        pthread_mutex_unlock(&wb->mu);
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
