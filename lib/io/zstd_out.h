/*
 * Compressed output (stfix(1), COMPRESSED FILES): compression on the
 * worker pool into a sink (zstd_pack.c), the live compression of a file's
 * frames as its fills complete them, into a spool beside the output
 * (zstd_live.c), and the sink kind that puts the two together, so that a
 * writer fills a compressed output as any other (sink_zstd.c). Internal
 * to the I/O layer and the layers above it.
 */
#ifndef STF_IO_ZSTD_OUT_H
#define STF_IO_ZSTD_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "io/io_internal.h"
#include "io/sink.h"
#include "io/zstd_frames.h"
#include "io/zstd_seek.h"

/* One entry of a seek table as the writer makes it. */
typedef struct stf__seek_entry {
    uint32_t csize;    /* compressed bytes of the frame */
    uint32_t dsize;    /* decompressed bytes */
    uint32_t checksum; /* low 32 bits of XXH64(decompressed), when the table has them */
} stf__seek_entry;

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
 * --zstd-verify: restore the compressed temporary `zpath` and compare it
 * with the `total` bytes of `src_fd`, failing (non-zero, `err` set) when
 * they differ; `final` names the output. The restoring lives above this
 * layer (the container's stf__zstd_verify), which hands it in.
 */
typedef int (*stf__zverify_fn)(const char *zpath, const char *final, int src_fd, uint64_t total,
                               stf_err *err);

/*
 * A compressing sink for `final_path` (sink_zstd.c): its bytes are
 * written, copied, reserved and filled as for a file sink into a scratch
 * temporary beside the output (stf__sink_scratch: page cache, no fsync),
 * and `off` and tmp_path are those of the uncompressed bytes until
 * finish. stf__sink_zstd_layout, once the layout is sealed, gives it the
 * file's tensors (`spans`, as for stf__zframes_plan) and the ranges still
 * to come through fills or patches (`holes`): from then on the fill or
 * patch that completes a frame compresses it (stf__zlive_filled), and
 * fails with that frame's error. Finish writes the compressed file (the
 * bytes of stf__zstd_pack on the uncompressed ones, with options `o`,
 * whose pool must outlive the sink) into a second temporary, runs
 * `verify` on it when not NULL, and removes the scratch file; tmp_path
 * is then the compressed one's, which publish renames into place. Abort
 * removes every temporary. Reading back and patching reach the
 * uncompressed bytes. STF_ENOMEM, STF_EIO as stf__sink_open; the layout
 * fails with STF_EINVAL for any other sink, or a second time, and as
 * stf__zlive_new.
 */
int stf__sink_open_zstd(stf__sink *s, const char *final_path, const stf__zpack_opts *o,
                        stf__zverify_fn verify, stf_err *err);
int stf__sink_zstd_layout(stf__sink *s, const stf__zspan *spans, size_t nspans,
                          const stf__zspan *holes, size_t nholes, stf_err *err);

#endif
