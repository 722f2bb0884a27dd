/*
 * The exclusive lock a writer holds on one output path for the whole write
 * (out_lock.c). Internal to the I/O layer and the layers above it.
 */
#ifndef STF_IO_OUT_LOCK_H
#define STF_IO_OUT_LOCK_H

#include "io/io_internal.h"

/* Told once per wait, before the first pause, with the output path (the
 * public stf_lock_wait_fn). */
typedef void (*stf__lock_wait_fn)(void *ud, const char *path);

/* Install the lock-wait hook (NULL: none); see stf_set_lock_wait_hook. */
void stf__out_lock_hook_set(stf__lock_wait_fn fn, void *ud);

/* An exclusive lock on one output path; fd -1 when not held. */
typedef struct stf__out_lock {
    int fd; /* the socket whose bound name is the lock */
} stf__out_lock;

/*
 * Take the lock of output `path` (named after its directory's device and
 * inode and its file name; nothing is created on disk). Waits, polling,
 * while another process holds it (telling the lock-wait hook, when one is
 * set, before the first pause), or fails at once with STF_EBUSY when
 * no_wait. STF_EIO when the directory cannot be examined or no socket can
 * be made. On failure l->fd is -1.
 */
int stf__out_lock_take(stf__out_lock *l, const char *path, int no_wait, stf_err *err);

/* Drop the lock. Safe on a lock whose take failed, and more than once. */
void stf__out_lock_release(stf__out_lock *l);

#endif
