/*
 * zstd-compressed sources (source.h wraps them): the decompressed bytes of
 * a compressed file, read at any offset. Two readers:
 *
 *  - seekable (zsrc_seekable.c): the zstd seekable format (zstd_seek.h),
 *    .stz grouped frames included (zstd_pack.h's decoder); a read decodes
 *    just the frames that hold it, into a small cache;
 *  - stream (zsrc_stream.c): any other sequence of zstd frames, walked at
 *    open (zstd_walk.c) and decompressed in data order; a read behind the
 *    position reached comes from a spool file, or decompresses again.
 *
 * Both own the raw source they read compressed bytes from, are
 * thread-safe, and fail with STF_EFORMAT (S26, S27, S28) or STF_ELIMIT
 * (L9, L10) naming the file and the compressed byte offset. Internal to
 * the container layer.
 */
#ifndef STF_CONTAINER_ZSRC_H
#define STF_CONTAINER_ZSRC_H

#include <stddef.h>
#include <stdint.h>

#include "container/source.h"

/* Whether the raw source starts like zstd (a zstd or skippable frame). */
int stf__zsrc_detect(const stf__source *raw, int *is_zstd, stf_err *err);

/* ------------------------------------------------------------ seekable */

typedef struct stf__zseek stf__zseek;

/*
 * Open a seekable reader over `raw` when its last bytes are a seekable
 * footer: *out set and 0. When they are not, 0 and *out NULL (read it as a
 * stream). A footer with a malformed table is an error. On success the
 * reader owns raw.
 */
int stf__zseek_open(stf__zseek **out, stf__source *raw, const stf_open_opts *o, stf_err *err);
uint64_t stf__zseek_size(const stf__zseek *z);
uint64_t stf__zseek_frames(const stf__zseek *z);
uint64_t stf__zseek_decoded(const stf__zseek *z);
int stf__zseek_read(stf__zseek *z, uint64_t off, void *dst, size_t len, stf_err *err);
void stf__zseek_free(stf__zseek *z);

/* ------------------------------------------------------------ stream */

typedef struct stf__zstream stf__zstream;

/*
 * Open a stream reader over `raw`: walk its frames (S26 for a truncated or
 * malformed one, L9 for a window above 128 MiB), without decompressing.
 * When every frame header gives its content size, that is the size.
 * When one does not, the size is unsized until stf__zstream_settle: until
 * then it is the most the walk allows, and reads are for the header. On
 * success the reader owns raw.
 */
int stf__zstream_open(stf__zstream **out, stf__source *raw, const stf_open_opts *o,
                      stf_err *err);
uint64_t stf__zstream_size(const stf__zstream *z);
/* Whether the frames did not all give their content size. */
int stf__zstream_unsized(const stf__zstream *z);
/*
 * An unsized stream takes `size`, the file size the safetensors header
 * declares (8 + hdr_n + its data bytes), as its own: S19 when the walk
 * shows it decodes to more or less. From then on nothing past `size` is
 * decompressed: a read that reaches it checks the stream ends there (S19
 * otherwise), and a stream that ends before it is S19 at the read that
 * finds it. A no-op for a sized stream.
 */
int stf__zstream_settle(stf__zstream *z, uint64_t size, uint64_t hdr_n, stf_err *err);
uint64_t stf__zstream_frames(const stf__zstream *z);
stf_stream_mode stf__zstream_mode(const stf__zstream *z);
/* Keep the first n decompressed bytes (the header) in memory once read,
 * so rereading them never rewinds the stream. */
int stf__zstream_hold_head(stf__zstream *z, uint64_t n, stf_err *err);
int stf__zstream_read(stf__zstream *z, uint64_t off, void *dst, size_t len, stf_err *err);
void stf__zstream_free(stf__zstream *z);

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
