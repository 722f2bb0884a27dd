/*
 * A bounded cache of read-only file descriptors, shared by the files of one
 * checkpoint, so an index with thousands of shards never holds more than a
 * few dozen descriptors (RLIMIT_NOFILE is often 1024). Each file is opened
 * and identified once (device, inode, size); afterwards its descriptor is
 * kept while it is among the most recently used, closed when evicted, and
 * reopened on demand, when the file must still be the one identified.
 * Thread-safe: any number of threads may acquire and release at once, and a
 * descriptor is never closed while someone holds it. Internal to the
 * I/O layer.
 */
#ifndef STF_IO_FDCACHE_H
#define STF_IO_FDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "io/io_internal.h"

typedef struct stf__fdcache stf__fdcache;
typedef struct stf__fdfile stf__fdfile;

/*
 * A cache keeping at most `cap` (>= 1) descriptors open while none is
 * held. When every open descriptor is held, an acquire opens one more
 * rather than wait, and the surplus is closed as holders release, so the
 * count exceeds cap by at most the number of concurrent holders.
 * STF_ENOMEM when it cannot be made. Free with stf__fdcache_free.
 */
int stf__fdcache_new(stf__fdcache **out, size_t cap, stf_err *err);

/* Free the cache. Every file opened through it must be closed first.
 * No-op on NULL. */
void stf__fdcache_free(stf__fdcache *c);

/*
 * Open `path` read-only through cache `c` and record what it is: only a
 * regular file is accepted (symlinks are followed). *size is its size.
 * The descriptor stays in the cache (it may evict another file's idle one)
 * until evicted itself. Errors are STF_ENOTFOUND when `path` does not exist
 * and otherwise STF_EIO, naming the path and the errno text, with
 * *sys_errno (may be NULL) set to the failed call's errno, or 0 when the
 * file exists but is not a regular file; STF_ENOMEM. When the
 * process is out of descriptors (EMFILE, ENFILE) the cache first closes
 * its idle ones and retries once, and the message says which limit was
 * reached. The path is copied.
 */
int stf__fdfile_open(stf__fdfile **out, stf__fdcache *c, const char *path, uint64_t *size,
                     int *sys_errno, stf_err *err);

/*
 * A descriptor for f, open until the matching stf__fdfile_release: the
 * cached one, or the file reopened. A reopened file that is not the one
 * identified at open (another device or inode: the name now points at a
 * different file; or another size: it was truncated or grown) is STF_EIO
 * naming the path and what changed; a failed reopen is STF_EIO with the
 * errno text. Use the descriptor only with pread-style calls that take an
 * explicit offset: other holders share it.
 */
int stf__fdfile_acquire(stf__fdfile *f, int *fd, stf_err *err);

/* Give back a descriptor from stf__fdfile_acquire. */
void stf__fdfile_release(stf__fdfile *f);

/* Close f's descriptor (none may be held) and free f. No-op on NULL. */
void stf__fdfile_close(stf__fdfile *f);

/* What f was when stf__fdfile_open opened it (file_stamp.h); NULL for
 * NULL. */
const struct stf__file_stamp *stf__fdfile_stamp(const stf__fdfile *f);

/* Descriptors of `c` open now (tests: the bound holds). */
size_t stf__fdcache_open_count(stf__fdcache *c);

#endif
