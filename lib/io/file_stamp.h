/*
 * What a file was when it was opened: device, inode, size, modification
 * and status change times (to the nanosecond where the file system keeps
 * them). A writer compares every input's stamp with the file as named just
 * before it publishes, so an input rewritten while it was read never
 * yields an output. Internal to the I/O layer.
 */
#ifndef STF_IO_FILE_STAMP_H
#define STF_IO_FILE_STAMP_H

#include <stdint.h>
#include <sys/stat.h>

#include "io/io_internal.h"

typedef struct stf__file_stamp {
    uint64_t dev, ino, size;
    int64_t mtime_s, ctime_s;
    long mtime_ns, ctime_ns;
} stf__file_stamp;

/* The stamp of a file from its (f)stat. */
void stf__file_stamp_take(stf__file_stamp *s, const struct stat *st);

/*
 * Whether `path` is still the file stamped `s`: 0 when stat(path) gives
 * the same device, inode, size, modification and status change times.
 * Otherwise STF_EIO "PATH: the input changed while stfix was reading it
 * (WHAT CHANGED); nothing was written: run again once nothing changes it",
 * where WHAT CHANGED names each difference with both values (the file
 * replaced by another, its size, its times), or says it is gone or cannot
 * be examined.
 */
int stf__file_stamp_check(const stf__file_stamp *s, const char *path, stf_err *err);

#endif
