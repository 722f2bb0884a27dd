/*
 * Reading back compressed outputs (stfix(1), COMPRESSED FILES): the
 * streaming decompressor that restores the uncompressed bytes of a
 * seekable, plain or .stz file, and the suffix of a compressed output.
 * Internal to the container layer; compressing into a sink is the I/O
 * layer's (zstd_out.h), the frame plan and the grouped-frame codec are in
 * zstd_frames.h, the seekable format's constants in zstd_seek.h.
 */
#ifndef STF_ZSTD_PACK_H
#define STF_ZSTD_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "container/container_internal.h"
#include "io/zstd_out.h"
#include "io/zstd_seek.h"

/* ".zst", ".stz" or NULL (uncompressed) for writer options `o`. */
static inline const char *stf__zstd_suffix(const stf_write_opts *o)
{
    if (!o || !o->zstd_level) return NULL;
    return o->zstd_grouped ? ".stz" : ".zst";
}

/* The compression options of writer options `o` (zstd_level set), for
 * the writer's compressing sinks and stfix compress alike. */
static inline stf__zpack_opts stf__zpack_opts_of(const stf_write_opts *o)
{
    return (stf__zpack_opts){ o->zstd_level, o->zstd_grouped,
                              o->zstd_frame ? o->zstd_frame : STF__ZSTD_FRAME_DEFAULT, o->pool };
}

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
