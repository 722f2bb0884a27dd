/*
 * Writing and reading back compressed outputs (stfix(1), COMPRESSED
 * FILES): the frame plan, the grouped-frame codec, compression on the
 * worker pool into a sink, and the streaming decompressor that restores
 * the uncompressed bytes of a seekable, plain or .stz file. Internal to
 * the container layer; the seekable format's constants are in zstd_seek.h.
 */
#ifndef STF_ZSTD_PACK_H
#define STF_ZSTD_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "container/container_internal.h"
#include "container/sink.h"
#include "container/zstd_seek.h"

/* Frames are at most this many decompressed bytes (a u32 in the table). */
#define STF__ZSTD_FRAME_DEFAULT ((uint64_t)4 << 20)
#define STF__ZSTD_FRAME_MIN ((uint64_t)1 << 10)
#define STF__ZSTD_FRAME_MAX ((uint64_t)1 << 30)

/*
 * A grouped frame of a .stz file (stfix(1), COMPRESSED FILES): a 20-byte
 * header - the magic "STZG" (u32 LE 0x475A5453), element width u8 (2),
 * flags u8 (0), reserved u16 (0), decompressed size u32, size of the
 * high-byte zstd frame u32, size of the low-byte zstd frame u32 - then the
 * two zstd frames: bytes 1, 3, 5, ... (the high bytes of little-endian
 * BF16/F16 values) and bytes 0, 2, 4, ... Not a zstd or skippable magic,
 * so plain zstd refuses a .stz file instead of skipping part of it.
 */
#define STF__STZ_GROUP_MAGIC 0x475A5453u
#define STF__STZ_GROUP_HEADER 20u

/* One entry of a seek table as the writer makes it. */
typedef struct stf__seek_entry {
    uint32_t csize;    /* compressed bytes of the frame */
    uint32_t dsize;    /* decompressed bytes */
    uint32_t checksum; /* low 32 bits of XXH64(decompressed), when the table has them */
} stf__seek_entry;

static inline uint32_t stf__le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void stf__put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* ".zst", ".stz" or NULL (uncompressed) for writer options `o`. */
static inline const char *stf__zstd_suffix(const stf_write_opts *o)
{
    if (!o || !o->zstd_level) return NULL;
    return o->zstd_grouped ? ".stz" : ".zst";
}

/* A tensor's bytes in the uncompressed file; `half` for BF16 and F16. */
typedef struct stf__zspan {
    uint64_t off, len;
    int half;
} stf__zspan;

/* One frame of the plan: decompressed bytes [off, off + len). */
typedef struct stf__zframe {
    uint64_t off;
    uint32_t len;
    int grouped; /* compressed as a grouped frame (.stz only) */
} stf__zframe;

/*
 * Cut [0, total) into frames of at most `frame` bytes, each ending at a
 * tensor boundary (a span's start or end) where one lies within reach;
 * a span longer than `frame` is cut every `frame` bytes (rounded down to
 * even). With `grouped`, a frame never mixes half spans with other bytes,
 * and a frame of half bytes only is marked grouped. `spans` may be in any
 * order; overlapping spans (a hand-made file) count as other bytes.
 * *out is freed with stf__free.
 */
int stf__zframes_plan(stf__zframe **out, size_t *n, uint64_t total, const stf__zspan *spans,
                      size_t nspans, uint64_t frame, int grouped, stf_err *err);

/* How a file is compressed. */
typedef struct stf__zpack_opts {
    int level;       /* zstd level, 1..22 */
    int grouped;     /* .stz: BF16/F16 frames grouped */
    uint64_t frame;  /* at most this many decompressed bytes per frame */
    stf_pool *pool;  /* frames are compressed on it; NULL: inline */
} stf__zpack_opts;

/*
 * Compress the `total` bytes of `src_fd` (read with pread; `src_name` for
 * messages) into `dst`, frame by frame along the plan, then append the seek
 * table. Frames are compressed a batch at a time on the pool, each with its
 * own context and the same parameters, and written in order while the
 * next batch compresses: the bytes do not depend on the thread count.
 * Memory is bounded by the two batches in flight (two frames per thread
 * each, at most 256 MiB of frames in all, at least one frame each).
 */
int stf__zstd_pack(stf__sink *dst, int src_fd, const char *src_name, uint64_t total,
                   const stf__zspan *spans, size_t nspans, const stf__zpack_opts *o,
                   stf_err *err);

/* A frame compressed ahead of time into a spool file (zstd_live.c). */
typedef struct stf__zspooled {
    uint64_t off;  /* where its compressed bytes start in the spool */
    uint32_t csize; /* compressed bytes */
    uint32_t sum;  /* its seek-table checksum */
    int done;      /* 0: not spooled; compressed when the file is packed */
} stf__zspooled;

/*
 * As stf__zstd_pack, along a plan made by stf__zframes_plan: frame i with
 * sp[i].done is copied from `spool_fd` (its bytes as stf__zenc_frame made
 * them) instead of being read and compressed. `sp` may be NULL.
 */
int stf__zstd_pack_frames(stf__sink *dst, int src_fd, const char *src_name,
                          const stf__zframe *f, size_t nf, const stf__zspooled *sp,
                          int spool_fd, const stf__zpack_opts *o, stf_err *err);

/*
 * One frame's encoder: a ZSTD_CCtx with the parameters of `o` and buffers
 * for a frame of o->frame bytes. stf__zenc_frame reads frame f of `fd`
 * (pread; `src_name` for messages) and compresses it exactly as
 * stf__zstd_pack does; stf__zenc_out gives the result, valid until the
 * next call. Non-zero with `err` set on failure. stf__zenc_new returns
 * NULL when out of memory.
 */
typedef struct stf__zenc stf__zenc;
stf__zenc *stf__zenc_new(const stf__zpack_opts *o);
void stf__zenc_free(stf__zenc *e);
int stf__zenc_frame(stf__zenc *e, const stf__zpack_opts *o, const stf__zframe *f, int fd,
                    const char *src_name, stf_err *err);
const unsigned char *stf__zenc_out(const stf__zenc *e, size_t *len, uint32_t *sum);

/*
 * Compression while a file is being filled (zstd_live.c). Made at
 * prepare, once the layout of the uncompressed temp file `src_path` of
 * `total` bytes is fixed: `spans` its tensors (as for stf__zframes_plan),
 * `holes` the deferred ones, whose bytes come later through fills. A frame
 * none of whose bytes is in a hole is complete from the start and left for
 * stf__zlive_finish. `final` names the output in messages; the spool is a
 * temp file beside it. STF_ENOMEM, STF_EIO (the temp file cannot be
 * re-opened or the spool created).
 */
typedef struct stf__zlive stf__zlive;
int stf__zlive_new(stf__zlive **out, const char *final, const char *src_path, uint64_t total,
                   const stf__zspan *spans, size_t nspans, const stf__zspan *holes,
                   size_t nholes, const stf__zpack_opts *o, stf_err *err);

/*
 * Bytes [at, at + len) of the file have been written (a fill returned).
 * A frame whose last missing bytes these are is read back and compressed
 * on the calling thread and appended to the spool, in whatever order
 * frames complete. Safe from several threads at once for disjoint ranges.
 * STF_EIO naming the output and the frame's offset when the spool cannot
 * be written.
 */
int stf__zlive_filled(stf__zlive *z, uint64_t at, uint64_t len, stf_err *err);

/*
 * Every fill has returned: write the compressed file into `dst`, the
 * spooled frames copied in frame order and the others compressed on
 * o->pool (stf__zstd_pack_frames), then the seek table. The bytes are those
 * of stf__zstd_pack on the finished file.
 */
int stf__zlive_finish(stf__zlive *z, stf__sink *dst, stf_err *err);

/* The uncompressed temp file's descriptor (read-only), for --zstd-verify. */
int stf__zlive_src_fd(const stf__zlive *z);

/* Close the spool (removing it) and free; NULL is a no-op. */
void stf__zlive_free(stf__zlive *z);

/*
 * Encode the n (even) bytes at src as a grouped frame into dst (capacity
 * dcap, at least stf__stz_group_bound(n)); `scratch` holds n bytes. *dlen
 * receives its size. `cctx` is a ZSTD_CCtx set up by the caller.
 */
size_t stf__stz_group_bound(size_t n);
int stf__stz_group_encode(void *cctx, unsigned char *dst, size_t dcap, size_t *dlen,
                          const unsigned char *src, size_t n, unsigned char *scratch,
                          stf_err *err);

/*
 * Decode the grouped frame of n bytes at src into dst (capacity dcap):
 * the header must be exact (magic, width 2, zero flags and reserved bytes,
 * an even size of at most dcap and STF__ZSTD_FRAME_MAX, the two frame
 * sizes adding up to n), and each inner frame must decompress to exactly
 * half the size, its own checksum checked. *dlen receives the decompressed
 * size. `scratch` holds dcap bytes; `dctx` is a ZSTD_DCtx to reuse, or
 * NULL. Nothing is allocated from what the frame claims. S26 (STF_EFORMAT)
 * names `name` and the offset `at` of the frame in its file. The one
 * decoder of grouped frames: stfix decompress and the seekable reader of
 * every other command both call it.
 */
int stf__stz_group_decode(void *dctx, const unsigned char *src, size_t n, unsigned char *dst,
                          size_t dcap, unsigned char *scratch, size_t *dlen, const char *name,
                          uint64_t at, stf_err *err);

/* Receives restored bytes in order; non-zero stops the restore. */
typedef int (*stf__zout_fn)(void *ud, const void *p, size_t n, stf_err *err);

/*
 * Restore the uncompressed bytes of the compressed file `fd` (`name` for
 * messages), streaming: zstd frames (any number, any size, as the zstd CLI
 * writes them), skippable frames (the seek table) skipped, grouped frames
 * decoded. `size` is the file's size. Corrupt or truncated input is
 * STF_EFORMAT naming the file and the compressed byte offset.
 */
int stf__zstd_unpack(int fd, const char *name, uint64_t size, stf__zout_fn out, void *ud,
                     stf_err *err);

/*
 * --zstd-verify: restore the compressed file `zpath` and compare the
 * SHA-256 of the result with that of the `total` bytes of `src_fd`.
 * STF_EIO on a mismatch, naming `final` (the name the file will have).
 */
int stf__zstd_verify(const char *zpath, const char *final, int src_fd, uint64_t total,
                     stf_err *err);

/*
 * The SHA-256 (hex) of the restored bytes of the compressed file `path`:
 * what `zstd -d` (stfix decompress, for .stz) would give. STF_EIO when it
 * cannot be read, STF_EFORMAT when it is corrupt.
 */
int stf__zstd_sha256(char hex[65], const char *path, stf_err *err);

#endif
