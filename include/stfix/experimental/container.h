/*
 * stfix EXPERIMENTAL API, container layer: dtype arithmetic, whole-file
 * compression.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_CONTAINER_H
#define STFIX_EXPERIMENTAL_CONTAINER_H

#include "../container.h"
#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits per element: 1..64 (F4 = 4, F6_* = 6, BOOL = 8). 0 if out of range. */
STF_EXPERIMENTAL_API
unsigned stf_dtype_bits(stf_dtype d);

/*
 * Byte size of `nelem` elements of `d`. Fails with STF_EFORMAT (rule "S16")
 * when the bit count overflows u64 and ("S17") when it is not a whole number
 * of bytes.
 */
STF_EXPERIMENTAL_API
int stf_dtype_nbytes(uint64_t *out, stf_dtype d, uint64_t nelem, stf_err *err);

/*
 * stfix compress: `in`, a .safetensors file or an index, to `out` in the
 * zstd seekable format (stfix(1), COMPRESSED FILES) with the level, frame
 * size, grouping and verification of o (o->zstd_level must be set; `out`
 * ends in ".zst", ".stz" when grouped). The bytes of each file are kept
 * exactly. For an index, `out` is the new index: each shard beside `in`
 * is compressed beside `out` under its name plus the suffix, and the new
 * index names those. Frames are compressed on o->pool. Atomic: temp files,
 * the output guard, shards published before the index; nothing is left at
 * the output paths on failure. Without `replace`, an existing file (or
 * link) at any name the output takes is refused with STF_EINVAL naming it,
 * whatever its bytes, before any work and again right before the renames;
 * with it, such a file is replaced. The guard's refusals (an input, a
 * directory or special file) hold either way.
 */
STF_EXPERIMENTAL_API
int stf_zstd_compress(const char *in, const char *out, const stf_write_opts *o, int replace,
                      stf_err *err);

/*
 * stfix decompress: `in` - a seekable or plain zstd file, a .stz file, or
 * an index of such shards - restored to `out` (for an index, the new index
 * naming the restored shards, written beside it without their suffix).
 * Streaming, in bounded memory; corrupt or truncated input is STF_EFORMAT
 * naming the file and the compressed byte offset. `o` may be NULL; only
 * no_wait is read. Atomic, and `replace` as in stf_zstd_compress.
 */
STF_EXPERIMENTAL_API
int stf_zstd_decompress(const char *in, const char *out, const stf_write_opts *o, int replace,
                        stf_err *err);

#ifdef __cplusplus
}
#endif
#endif
