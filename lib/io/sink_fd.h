/*
 * The operations of a sink whose bytes are a descriptor (s->fd), shared by
 * the kinds that have one (sink_file.c, sink_mem.c), and the messages of
 * their failures. Each honours the tests' write hook (s->hook) as the
 * write it precedes. Internal to the sinks.
 */
#ifndef STF_IO_SINK_FD_H
#define STF_IO_SINK_FD_H

#include "io/sink.h"

/* Bounce buffer of a copy that reads and writes; big enough that syscall
 * overhead is negligible, small enough to never matter for memory. */
#define STF__SINK_COPY_CHUNK ((size_t)4 << 20)

/* STF_EIO "FINAL: WHAT failed at byte OFF: ERRNO" at s->off. */
int stf__sinkfd_fail(const stf__sink *s, int e, const char *what, stf_err *err);
/* STF_EIO "FINAL: [tensor 'T': ]write failed at byte AT: ERRNO" at `at`. */
int stf__sinkfd_fail_at(const stf__sink *s, const char *tensor, uint64_t at, int e,
                        stf_err *err);

/* Append n bytes with write(2), looping on short writes and EINTR. */
int stf__sinkfd_write(stf__sink *s, const void *p, size_t n, stf_err *err);
/* Append len bytes of fd at off with copy_file_range, falling back to
 * stf__sink_copy_read where the kernel refuses. */
int stf__sinkfd_copy(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                     stf_err *err);
/* Move the file position to `end` (a hole up to there). */
int stf__sinkfd_seek(stf__sink *s, uint64_t end, stf_err *err);
/* ftruncate to s->off. */
int stf__sinkfd_extend(stf__sink *s, stf_err *err);
/* pwrite all n bytes at `at` (through the page cache). */
int stf__sinkfd_pwrite(stf__sink *s, uint64_t at, const char *c, size_t n, const char *tensor,
                       stf_err *err);

/* The dispatch's copy through a buffer (sink.c), for the fallback. */
int stf__sink_copy_read(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                        stf_err *err);

#endif
