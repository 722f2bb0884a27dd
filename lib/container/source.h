/*
 * Read-only byte sources for the reader: a regular file (memory-mapped, or
 * read with pread when mapping is refused or unwanted) or a caller's memory
 * buffer. Offsets are absolute file offsets in uint64_t, so files over 4 GiB
 * work on every build. Internal to the container layer.
 */
#ifndef STF_CONTAINER_SOURCE_H
#define STF_CONTAINER_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "stfix.h"

typedef struct stf__source stf__source;

/*
 * Open `path` read-only (O_RDONLY, never written) and fstat it. Only regular
 * files are accepted (symlinks are followed); a directory, FIFO or device
 * fails with STF_EIO naming the path and the errno text. Nothing is mapped
 * or read yet. `no_mmap` makes stf__source_map a no-op, so every read goes
 * through pread. The path is copied. Free with stf__source_free.
 */
int stf__source_open(stf__source **out, const char *path, int no_mmap, stf_err *err);

/*
 * A source over `len` bytes at `buf` (borrowed; must outlive the source).
 * `name` (copied) is used in messages. It counts as mapped.
 */
int stf__source_open_mem(stf__source **out, const void *buf, size_t len, const char *name,
                         stf_err *err);

/*
 * Map the whole file read-only. Returns 0 also when the mapping is not made
 * (no_mmap, empty file, a size that does not fit size_t, or mmap refusing):
 * reads then go through pread. Idempotent. The map is private to us, but if
 * another process truncates the file while it is mapped, touching the lost
 * pages raises SIGBUS; callers that must survive that use no_mmap.
 */
int stf__source_map(stf__source *s, stf_err *err);

/* File size at open time (fstat), or the buffer length. */
uint64_t stf__source_size(const stf__source *s);
/* The path or name given at open. */
const char *stf__source_path(const stf__source *s);
/* Start of the mapped bytes (or the memory buffer), or NULL when unmapped. */
const uint8_t *stf__source_data(const stf__source *s);
/* The file descriptor (for copy_file_range), or -1 for a memory source. */
int stf__source_fd(const stf__source *s);

/*
 * Copy `len` bytes at absolute offset `off` into dst. A range past the size
 * seen at open is STF_EINVAL. Through the map when there is one, else pread
 * in chunks, retrying short reads and EINTR; hitting end-of-file early (the
 * file shrank after open) or a read error is STF_EIO naming path and offset.
 */
int stf__source_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err);

/* Unmap, close, free. No-op on NULL. */
void stf__source_free(stf__source *s);

/*
 * Where tensor i of checkpoint c lives: its shard's source and the absolute
 * file offset of the tensor's first byte. For the writer's verbatim copy
 * (copy_file_range from stf__source_fd). STF_EINVAL when i is out of range.
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
