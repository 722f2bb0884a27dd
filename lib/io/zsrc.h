/*
 * zstd-compressed sources, each a source over another source (source.h):
 * the decompressed bytes of a compressed file, read at any offset. Two
 * readers:
 *
 *  - seekable (zsrc_seekable.c): the zstd seekable format (zstd_seek.h),
 *    .stz grouped frames included (zstd_frames.h's decoder); a read decodes
 *    just the frames that hold it, into a small cache;
 *  - stream (zsrc_stream.c): any other sequence of zstd frames, walked at
 *    open (zstd_walk.c) and decompressed in data order; a read behind the
 *    position reached comes from a spool file, or decompresses again.
 *
 * Both own the raw source they read compressed bytes from, are
 * thread-safe, and fail with STF_EFORMAT (S26, S27, S28) or STF_ELIMIT
 * (L9, L10) naming the file and the compressed byte offset. Internal to
 * the I/O layer.
 */
#ifndef STF_IO_ZSRC_H
#define STF_IO_ZSRC_H

#include <stddef.h>
#include <stdint.h>

#include "io/source.h"

/* Whether the raw source starts like zstd (a zstd or skippable frame). */
int stf__zsrc_detect(const stf__source *raw, int *is_zstd, stf_err *err);

/*
 * A source of the decompressed bytes of `raw`, when its last bytes are a
 * seekable footer (zsrc_seekable.c): *out set and 0. When they are not, 0
 * and *out NULL (read it as a stream). A footer with a malformed table is
 * an error. On success the new source owns raw (its inner source).
 */
int stf__zsrc_seekable_open(stf__source **out, stf__source *raw, const stf__zread_opts *o,
                            stf_err *err);

/*
 * A source of the decompressed bytes of `raw` read as a stream
 * (zsrc_stream.c): its frames are walked at open (S26 for a truncated or
 * malformed one, L9 for a window above 128 MiB), without decompressing.
 * When every frame header gives its content size, that is the size. When
 * one does not, the source is unsized until stf__source_settle: until
 * then its size is the most the walk allows, and reads are for the header.
 * The settled size is checked against the stream: S19 when the walk shows
 * it decodes to more or less; from then on nothing past it is
 * decompressed, a read that reaches it checks the stream ends there (S19
 * otherwise), and a stream that ends before it is S19 at the read that
 * finds it. hold_head keeps the first n decompressed bytes (the header)
 * in memory once read, so rereading them never rewinds the stream. On
 * success the new source owns raw (its inner source).
 */
int stf__zsrc_stream_open(stf__source **out, stf__source *raw, const stf__zread_opts *o,
                          stf_err *err);

/* ------------------------------------------------------------ walk */

/* What the walk found in a sequence of frames (zstd_walk.c). */
typedef struct stf__zwalk {
    uint64_t frames;         /* zstd frames (skippable ones not counted) */
    int size_known;          /* every frame header gave its content size */
    uint64_t d_size;         /* their sum, when size_known */
    uint64_t d_min, d_max;   /* bounds on the decompressed size (d_size when known) */
} stf__zwalk;

/*
 * Walk every frame of `raw` by its headers and block headers, without
 * decompressing: reserved bits, a reserved block type, a block or frame
 * running past the end of the file are S26; a window over 2^27 bytes L9.
 */
int stf__zwalk_run(stf__zwalk *out, const stf__source *raw, stf_err *err);

/* The largest window a stream frame may ask for (libzstd's default limit). */
#define STF__ZSTD_WINDOW_MAX ((uint64_t)1 << 27)

/* Message text of a libzstd error code, with its rule: S28 for a checksum
 * mismatch, L9 for a window too large, S26 for anything else. */
const char *stf__zstd_rule(size_t zrc, int *code);

#endif
