/*
 * Output sinks: a temp file in the destination directory that becomes the
 * target only by rename, so a failure never leaves a partial file at the
 * output path (DESIGN.md, spec §5.3). Internal to the container layer.
 */
#ifndef STF_SINK_H
#define STF_SINK_H

#include <stdint.h>

#include "stfix.h"

typedef struct stf__sink {
    int fd;                  /* -1 once closed */
    char *tmp_path;          /* owned; NULL once renamed or unlinked */
    char *final_path;        /* owned */
    uint64_t off;            /* bytes written so far */
    int no_fsync;
    int (*hook)(void *ud, uint64_t file_off, size_t len);
    void *hook_ud;
} stf__sink;

/*
 * Create a temp file next to `final_path` (mkstemp). `opts` may be NULL; its
 * no_fsync and write_hook are honoured. On failure the sink is left closed.
 */
int stf__sink_open(stf__sink *s, const char *final_path, const stf_write_opts *opts,
                   stf_err *err);

/* Append n bytes (looping on short writes and EINTR). STF_EIO names the
 * output path and byte offset. */
int stf__sink_write(stf__sink *s, const void *p, size_t n, stf_err *err);

/*
 * Append `len` bytes read from `fd` at `off`: copy_file_range where the
 * kernel can, else pread/write through a bounded buffer. `src_name` is for
 * messages.
 */
int stf__sink_copy_fd(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                      stf_err *err);

/*
 * Leave a hole of n bytes at the end: the file position and `off` move past
 * it without writing, so the bytes can be supplied later with
 * stf__sink_pwrite (deferred tensors). The file size catches up at the next
 * append or at stf__sink_extend.
 */
int stf__sink_reserve(stf__sink *s, uint64_t n, stf_err *err);

/* Make the file exactly `off` bytes long, so a trailing hole exists. */
int stf__sink_extend(stf__sink *s, stf_err *err);

/*
 * Write n bytes at absolute file offset `at` with pwrite; the hook applies
 * as for appends. Touches neither `off` nor the file position, so several
 * threads may call it at once for disjoint ranges (the hook then runs
 * concurrently too). `tensor` (may be NULL) names the tensor in messages.
 */
int stf__sink_pwrite(const stf__sink *s, uint64_t at, const void *p, size_t n,
                     const char *tensor, stf_err *err);

/* fsync and close the temp file; it stays in place until publish/abort. */
int stf__sink_finish(stf__sink *s, stf_err *err);

/* Rename the finished temp file over the target and fsync the directory. */
int stf__sink_publish(stf__sink *s, stf_err *err);

/* Close and unlink the temp file if any, free the sink's strings. Safe to
 * call on a zeroed, failed, or published sink and more than once. */
void stf__sink_abort(stf__sink *s);

#endif
