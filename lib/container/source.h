/*
 * Read-only byte sources for the reader: a regular file, always read with
 * pread into the caller's buffer (never memory-mapped, so a file truncated
 * by another process is an STF_EIO, not a SIGBUS), or a caller's memory
 * buffer. A file's descriptor is held through an fd cache (fdcache.h):
 * closed when the cache evicts it, reopened on the next read, which then
 * checks the file is still the one opened. Reads are thread-safe.
 * Offsets are absolute file offsets in uint64_t, so files over 4 GiB work
 * on every build. Internal to the container layer.
 */
#ifndef STF_CONTAINER_SOURCE_H
#define STF_CONTAINER_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "container/fdcache.h"
#include "io/net.h"
#include "stfix/container.h"

typedef struct stf__source stf__source;

/*
 * Open `path` read-only (O_RDONLY, never written) and fstat it, through
 * `cache` (NULL: a private cache holding just this file's descriptor,
 * which then stays open). The cache must outlive the source. Only regular
 * files are accepted (symlinks are followed); a directory, FIFO or device
 * fails with STF_EIO naming the path and the errno text, a path that does
 * not exist with STF_ENOTFOUND. *sys_errno (may be
 * NULL) tells failures apart as stf__fdfile_open does (ENOENT, EACCES,
 * EMFILE, ..., 0 for a file that is not regular). Nothing is read yet. The
 * path is copied. Free with stf__source_free.
 * A remote name (http://, https://, hf://: stf__net_is_url) is opened as a
 * remote source instead (net.h): its first range is fetched now, `cache`
 * is not used, and a file the server does not have is STF_ENOTFOUND with
 * *sys_errno ENOENT.
 */
int stf__source_open(stf__source **out, const char *path, stf__fdcache *cache, int *sys_errno,
                     stf_err *err);

/*
 * A source over `len` bytes at `buf` (borrowed; must outlive the source).
 * `name` (copied) is used in messages. stf__source_data gives `buf` back.
 */
int stf__source_open_mem(stf__source **out, const void *buf, size_t len, const char *name,
                         stf_err *err);

/* File size at open time (fstat), or the buffer length. */
uint64_t stf__source_size(const stf__source *s);
/* 1 for a remote source (read over HTTP), else 0. */
int stf__source_remote(const stf__source *s);
/* The path or name given at open. */
const char *stf__source_path(const stf__source *s);
/* The buffer of a memory source; NULL for a file source (read it with
 * stf__source_read). */
const uint8_t *stf__source_data(const stf__source *s);
/*
 * A file source's descriptor, for a kernel-side copy (copy_file_range),
 * open until the matching stf__source_fd_release; use it only with calls
 * that take an explicit offset. Errors as for stf__fdfile_acquire (the file
 * was replaced, shrank, or cannot be reopened: STF_EIO); STF_EINVAL for a
 * memory source.
 */
int stf__source_fd_acquire(const stf__source *s, int *fd, stf_err *err);
/* Give back the descriptor of stf__source_fd_acquire. No-op on NULL. */
void stf__source_fd_release(const stf__source *s);

/*
 * Copy `len` bytes at absolute offset `off` into dst. A range past the size
 * seen at open is STF_EINVAL. A memory source copies from its buffer; a file
 * is read with pread in chunks, retrying short reads and EINTR. Hitting
 * end-of-file early (the file shrank after open) or a read error is STF_EIO
 * naming path and offset (err->offset is set).
 */
int stf__source_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err);

/* Bytes read from the file with pread so far (a memory or zstd source:
 * 0), for tests that check how often a run reads its input. */
uint64_t stf__source_read_total(const stf__source *s);

/*
 * When the source *s starts like zstd (a zstd or a skippable frame,
 * whatever its name), replace it by a source of its decompressed bytes:
 * seekable when it ends in a seek table, a stream otherwise (zsrc.h).
 * The new source owns the old one; on failure *s is unchanged and still
 * the caller's. A source that is not zstd is left as it is.
 */
int stf__source_decompress(stf__source **s, const stf_open_opts *o, stf_err *err);
/* How the source is stored; the compressed size (or the size); the frames
 * of a zstd file and how many have been decoded; how a stream is read. */
stf_storage stf__source_storage(const stf__source *s);
uint64_t stf__source_stored_size(const stf__source *s);
uint64_t stf__source_frames(const stf__source *s);
uint64_t stf__source_frames_decoded(const stf__source *s);
stf_stream_mode stf__source_stream_mode(const stf__source *s);
/*
 * The first n bytes (a header about to be read) will be read again: a
 * stream keeps them in memory, so rereading never rewinds it. No-op for
 * other sources.
 */
int stf__source_hold_head(stf__source *s, uint64_t n, stf_err *err);
/*
 * Whether the size is not known yet: a zstd stream whose frames do not all
 * record their content size. Its size is then only an upper bound, until
 * stf__source_settle gives it the size the safetensors header declares
 * (8 + hdr_n + the data bytes): S19 when the stream is seen to decode to
 * more or less (zsrc.h, stf__zstream_settle). No-op for other sources.
 */
int stf__source_unsized(const stf__source *s);
int stf__source_settle(stf__source *s, uint64_t size, uint64_t hdr_n, stf_err *err);

/*
 * What the file behind s was when it was opened (file_stamp.h): the file
 * itself, or for a compressed source the compressed file; NULL for a
 * memory source.
 */
const struct stf__file_stamp *stf__source_stamp(const stf__source *s);

/*
 * Whether the file behind s is still as it was opened: 0, or the STF_EIO
 * of stf__file_stamp_check naming the path and what changed. Always 0 for
 * a memory source.
 */
int stf__source_unchanged(const stf__source *s, stf_err *err);

/*
 * Fetch the ranges r[0..n) of a remote source now, adjacent ones in one
 * request, and keep them for the reads that follow (net.h,
 * stf__http_prefetch). No-op for any other source.
 */
int stf__source_prefetch(const stf__source *s, const stf__range *r, size_t n, stf_err *err);

/* Close, free (the cache it was opened through stays). No-op on NULL. */
void stf__source_free(stf__source *s);

/*
 * Where tensor i of checkpoint c lives: its shard's source and the absolute
 * file offset of the tensor's first byte. For the writer's verbatim copy
 * (copy_file_range from stf__source_fd_acquire). STF_EINVAL when i is out
 * of range.
 * Implemented in ckpt.c.
 */
int stf__ckpt_tensor_source(const stf_ckpt *c, size_t i, const stf__source **src,
                            uint64_t *file_off, stf_err *err);

/* Shard k's source (NULL when out of range). Implemented in ckpt.c. */
const stf__source *stf__ckpt_shard_source(const stf_ckpt *c, size_t shard);

/*
 * The checkpoint's findings list, for checks that add findings after open
 * (canonical form, S21-S25). Implemented in ckpt.c.
 */
struct stf__findings *stf__ckpt_findings(stf_ckpt *c);

#endif
