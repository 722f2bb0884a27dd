/*
 * The output guard's internal half (the public stf_output_check is in
 * container.h): checking one output name, and the per-output lock that a
 * writer holds for the whole write. Internal to the container layer.
 */
#ifndef STF_OUT_GUARD_H
#define STF_OUT_GUARD_H

#include "stfix.h"

/*
 * May a writer rename a finished file over `path`? 0 when nothing is there,
 * a dangling symlink is there, or a regular file (or a symlink to one) that
 * is not a file of o->input (the in-place exception aside: o->replace_input
 * with a single-file input named directly). STF_EINVAL naming the path and
 * what is there otherwise; STF_EIO when the path cannot be examined.
 */
int stf__out_check_name(const char *path, const stf_write_opts *o, stf_err *err);

/* An exclusive lock on one output path; fd -1 when not held. */
typedef struct stf__out_lock {
    int fd; /* the socket whose bound name is the lock */
} stf__out_lock;

/*
 * Take the lock of output `path` (named after its directory's device and
 * inode and its file name; nothing is created on disk). Waits, polling,
 * while another process holds it, or fails at once with STF_EBUSY when
 * no_wait. STF_EIO when the directory cannot be examined or no socket can
 * be made. On failure l->fd is -1.
 */
int stf__out_lock_take(stf__out_lock *l, const char *path, int no_wait, stf_err *err);

/* Drop the lock. Safe on a lock whose take failed, and more than once. */
void stf__out_lock_release(stf__out_lock *l);

#endif
