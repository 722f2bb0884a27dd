/*
 * Read-only byte sources: everything the library reads comes through one.
 * A source is a name (for messages), a size and a small table of
 * operations (stf__source_ops); each kind of source is one file of this
 * folder that fills the table, and nothing outside that file knows which
 * kind it has:
 *
 *   source_file.c     a regular file, read with pread through an fd cache
 *   source_mem.c      a caller's buffer
 *   source_host.c     a host program's callbacks (stf__host_source)
 *   zsrc_seekable.c   the decompressed bytes of a zstd seekable or .stz
 *                     source, itself read from another source
 *   zsrc_stream.c     the decompressed bytes of any other zstd source
 *
 * source.c holds the dispatch every caller uses (bounds, optional
 * operations), source_open.c the one place a source is opened by name.
 * Files are never memory-mapped (a file truncated by another process is an
 * STF_EIO, not a SIGBUS). Reads are thread-safe. Offsets are absolute
 * offsets in uint64_t, so sources over 4 GiB work on every build. Internal
 * to the I/O layer and the layers above it.
 */
#ifndef STF_IO_SOURCE_H
#define STF_IO_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "io/fdcache.h"
#include "io/io_internal.h"
#include "io/net.h"

typedef struct stf__source stf__source;
struct stf__file_stamp;

/*
 * What a kind of source does. `read` and `close` are required; every other
 * entry may be NULL, which means what its comment says. A backend's
 * functions receive the source and find their own state in s->impl.
 */
typedef struct stf__source_ops {
    const char *kind; /* "file", "memory", ... for messages */
    /* Copy exactly len (> 0) bytes at off into dst; the range is within
     * the size (checked by the caller). A short file or a failed read is
     * STF_EIO naming s->name and the offset (err->offset set). */
    int (*read)(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err);
    /* Release s->impl (and the source it reads, for a decoder). */
    void (*close)(stf__source *s);
    /* The bytes in memory, when the source is a buffer (NULL: none). */
    const uint8_t *(*data)(const stf__source *s);
    /* A descriptor holding the bytes at their offsets, for copy_file_range,
     * until fd_release (NULL: the source has none; STF_EINVAL). */
    int (*fd_acquire)(const stf__source *s, int *fd, stf_err *err);
    void (*fd_release)(const stf__source *s);
    /* What the file was when opened (NULL: the inner source's stamp, if
     * any; no stamp at all means "cannot change under us"). */
    const struct stf__file_stamp *(*stamp)(const stf__source *s);
    /* Whether the bytes are still those opened: 0, or STF_EIO saying what
     * changed (NULL: compare the stamp, when there is one). */
    int (*unchanged)(const stf__source *s, stf_err *err);
    /* Keep the first n bytes in memory once read (NULL: no-op). */
    int (*hold_head)(stf__source *s, uint64_t n, stf_err *err);
    /* Take `size` as the size of an unsized source (NULL: no-op); see
     * stf__source_settle. */
    int (*settle)(stf__source *s, uint64_t size, uint64_t hdr_n, stf_err *err);
    /* zstd frames in the source and how many were decoded (NULL: 0). */
    uint64_t (*frames)(const stf__source *s);
    uint64_t (*frames_decoded)(const stf__source *s);
    /* An STF__STREAM_* value (NULL: STF__STREAM_NONE). */
    int (*stream_mode)(const stf__source *s);
    /* Bytes read from the medium so far (NULL: 0), for tests. */
    uint64_t (*read_total)(const stf__source *s);
    /* Fetch the ranges r[0..n) now and keep them for the reads that follow
     * (NULL: no-op; a remote source's, net.h). */
    int (*prefetch)(const stf__source *s, const stf__range *r, size_t n, stf_err *err);
    /* The requests made for the source since it was opened and their body
     * bytes, whichever thread made them (NULL: the inner source's, if any,
     * else none; a remote source's, net.h). */
    void (*network)(const stf__source *s, uint64_t *bytes, uint64_t *requests);
} stf__source_ops;

/* The common part of every source. Backends fill it through
 * stf__source_new and read it; callers use the functions below. */
struct stf__source {
    const stf__source_ops *ops;
    void *impl;           /* the backend's state */
    char *name;           /* the path or name given at open, for messages */
    uint64_t size;        /* bytes the source holds (an upper bound while unsized) */
    uint64_t stored;      /* bytes on the medium: size, or the compressed size */
    int storage;          /* STF__STORE_* */
    int unsized;          /* a zstd stream whose size is not known yet */
    stf__source *inner;   /* the source a decoder reads (owned by it), or NULL */
};

/*
 * A source of kind `ops` over `impl`, named `name` (copied), holding
 * `size` bytes, stored as PLAIN with stored == size. On failure (STF_ENOMEM)
 * nothing is closed: the caller still owns impl.
 */
int stf__source_new(stf__source **out, const stf__source_ops *ops, void *impl, const char *name,
                    uint64_t size, stf_err *err);

/* ------------------------------------------------------------ opening */

/*
 * The one place a source is opened by name (source_open.c). Today a name
 * is a path: the file is opened read-only (O_RDONLY, never written) and
 * fstat'ed, through `cache` (NULL: a private cache holding just this
 * file's descriptor, which then stays open; the cache must outlive the
 * source). Only regular files are accepted (symlinks are followed); a
 * directory, FIFO or device fails with STF_EIO naming the path and the
 * errno text, a path that does not exist with STF_ENOTFOUND. *sys_errno
 * (may be NULL) tells failures apart as stf__fdfile_open does (ENOENT,
 * EACCES, EMFILE, ..., 0 for a file that is not regular). Nothing is read
 * yet. The name is copied. Free with stf__source_free.
 */
int stf__source_open_name(stf__source **out, const char *name, stf__fdcache *cache,
                          int *sys_errno, stf_err *err);

/*
 * The name of `member` (a shard file as an index lists it) relative to
 * `base` (the index's name): the directory of `base` (up to its last '/')
 * followed by `member`; a bare `base` means the current directory. NULL
 * when out of memory; free with stf__free.
 */
char *stf__source_name_near(const char *base, const char *member);

/*
 * A remote file, read with HTTP range requests (source_http.c): what
 * stf__source_open_name does for an http://, https:// or hf:// name. Its
 * first range is fetched now (net.h, stf__http_open); a file the server
 * does not have is STF_ENOTFOUND with *sys_errno ENOENT.
 */
int stf__source_open_http(stf__source **out, const char *url, int *sys_errno, stf_err *err);

/* A regular file: what stf__source_open_name does for a path
 * (source_file.c). */
int stf__source_open(stf__source **out, const char *path, stf__fdcache *cache, int *sys_errno,
                     stf_err *err);

/*
 * A source over `len` bytes at `buf` (borrowed; must outlive the source).
 * `name` (copied) is used in messages. stf__source_data gives `buf` back.
 */
int stf__source_open_mem(stf__source **out, const void *buf, size_t len, const char *name,
                         stf_err *err);

/*
 * A host program's callbacks for one file (source_host.c): the same
 * contract as the public stf_host_io, which the container layer copies
 * into this. read copies up to len bytes at off and returns the count
 * (0: end of file) or a negative value; size gives the size now or a
 * negative value; close (may be NULL) is called exactly once, when the
 * source is freed, or by stf__source_open_host itself when it fails.
 */
typedef struct stf__host_io {
    void *ctx;
    int64_t (*read)(void *ctx, uint64_t off, void *dst, size_t len);
    int64_t (*size)(void *ctx);
    void (*close)(void *ctx);
} stf__host_io;

/*
 * A source over `io`, named `name` (copied) in every message. Its size is
 * io->size() at open (a negative one: STF_EIO). A read asks again after a
 * short count; a negative count, or 0 before the range is in (the file
 * ended early: it shrank after open), is STF_EIO naming the name and the
 * offset. A size that differs from the one at open when a read ends early
 * is said in the message. io->close is called exactly once on every path,
 * also when this fails.
 */
int stf__source_open_host(stf__source **out, const stf__host_io *io, const char *name,
                          stf_err *err);

/*
 * When the source *s starts like zstd (a zstd or a skippable frame,
 * whatever its name), replace it by a source of its decompressed bytes:
 * seekable when it ends in a seek table, a stream otherwise (zsrc.h).
 * The new source owns the old one; on failure *s is unchanged and still
 * the caller's. A source that is not zstd is left as it is.
 * (source_zstd.c)
 */
int stf__source_decompress(stf__source **s, const stf__zread_opts *o, stf_err *err);

/* ------------------------------------------------------------ using */

/* The size (for an unsized source: an upper bound until settled). */
uint64_t stf__source_size(const stf__source *s);
/* The path or name given at open. */
const char *stf__source_path(const stf__source *s);
/* The buffer of a memory source; NULL for any other (read it with
 * stf__source_read). */
const uint8_t *stf__source_data(const stf__source *s);
/*
 * The source's descriptor, for a kernel-side copy (copy_file_range), open
 * until the matching stf__source_fd_release; use it only with calls that
 * take an explicit offset. Errors as for stf__fdfile_acquire (the file
 * was replaced, shrank, or cannot be reopened: STF_EIO); STF_EUNSUPPORTED
 * for a compressed source, STF_EINVAL for one that has no descriptor.
 */
int stf__source_fd_acquire(const stf__source *s, int *fd, stf_err *err);
/* Whether the source's bytes are a descriptor's at their own offsets, so
 * stf__source_fd_acquire may give it: an uncompressed kind that has one
 * (a file); 0 for memory, a host's bytes and any decompressed source. */
int stf__source_has_fd(const stf__source *s);
/* Give back the descriptor of stf__source_fd_acquire. No-op on NULL. */
void stf__source_fd_release(const stf__source *s);

/*
 * Copy `len` bytes at absolute offset `off` into dst. A range past the
 * size is STF_EINVAL. Hitting end-of-file early (the file shrank after
 * open) or a read error is STF_EIO naming path and offset (err->offset is
 * set).
 */
int stf__source_read(const stf__source *s, uint64_t off, void *dst, size_t len, stf_err *err);

/* Bytes read from the file with pread so far (a memory or zstd source:
 * 0), for tests that check how often a run reads its input. */
uint64_t stf__source_read_total(const stf__source *s);

/* How the source is stored (STF__STORE_*); the compressed size (or the
 * size); the frames of a zstd source and how many have been decoded; how a
 * stream is read (STF__STREAM_*). */
int stf__source_storage(const stf__source *s);
uint64_t stf__source_stored_size(const stf__source *s);
uint64_t stf__source_frames(const stf__source *s);
uint64_t stf__source_frames_decoded(const stf__source *s);
int stf__source_stream_mode(const stf__source *s);
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
 * more or less (zsrc.h). No-op for other sources.
 */
int stf__source_unsized(const stf__source *s);
int stf__source_settle(stf__source *s, uint64_t size, uint64_t hdr_n, stf_err *err);

/*
 * What the file behind s was when it was opened (file_stamp.h): the file
 * itself, or for a compressed source the compressed file; NULL for a
 * source that is no file (memory, a host's).
 */
const struct stf__file_stamp *stf__source_stamp(const stf__source *s);

/*
 * Whether the file behind s is still as it was opened: 0, or the STF_EIO
 * of stf__file_stamp_check naming the path and what changed (a host's
 * source: its size now against the size at open). Always 0 for a memory
 * source.
 */
int stf__source_unchanged(const stf__source *s, stf_err *err);

/*
 * Ranges of s that will be read soon: a remote source fetches them now,
 * adjacent ones in one request, and serves their reads from memory. No-op
 * for every other source.
 */
int stf__source_prefetch(const stf__source *s, const stf__range *r, size_t n, stf_err *err);
/* 1 when s, or the source it decodes, is read over the network. */
int stf__source_remote(const stf__source *s);
/*
 * What reading s has cost over the network since it was opened: the
 * requests made for it (or for the source it decodes) and their body bytes,
 * added to *bytes and *requests, whichever threads made them, so that
 * the figure is s's alone whatever else reads at the same time. Adds 0 for
 * a source that is not remote.
 */
void stf__source_network(const stf__source *s, uint64_t *bytes, uint64_t *requests);

/* Close, free (the cache it was opened through stays). No-op on NULL. */
void stf__source_free(stf__source *s);

#endif
