/*
 * The frame plan of a compressed file and the grouped-frame codec of .stz
 * files (stfix(1), COMPRESSED FILES), shared by the seekable reader and
 * the writers of compressed outputs (zstd_frames.c). Internal to the I/O
 * layer.
 */
#ifndef STF_IO_ZSTD_FRAMES_H
#define STF_IO_ZSTD_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "io/io_internal.h"

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

static inline uint32_t stf__le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void stf__put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
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

#endif
