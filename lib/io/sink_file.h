/*
 * The state of the file sink (sink_file.c, stf__sink_open): what the
 * temp file and rename need beyond the common part. Internal to the sinks
 * and their tests.
 */
#ifndef STF_IO_SINK_FILE_H
#define STF_IO_SINK_FILE_H

#include "io/fill_stage.h"
#include "io/sink.h"
#include "io/write_behind.h"

typedef struct stf__sink_file {
    int unnamed;             /* fd is an O_TMPFILE inode without a directory entry */
    /* Owned, unnamed only: ".NAME.stfix-XXXXXX" in the directory, the name
     * publish links the file to; made at open so publish needs no memory. */
    char *link_path;
    int no_fsync;
    stf__wbehind wb;         /* write-behind of what stf__sink_pwrite fills */
    stf__fs_holes holes;     /* stf__sink_reserve's holes, until stf__sink_seal */
    stf__fstage stage;       /* direct-I/O staging of fills (fill_stage.h); live after seal */
    int no_direct;           /* never stage */
} stf__sink_file;

/* The file state of a sink opened with stf__sink_open; NULL for any
 * other, and once aborted. */
stf__sink_file *stf__sink_file_of(const stf__sink *s);

#endif
