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
 * the output paths on failure.
 */
STF_EXPERIMENTAL_API
int stf_zstd_compress(const char *in, const char *out, const stf_write_opts *o, stf_err *err);

/*
 * stfix decompress: `in` - a seekable or plain zstd file, a .stz file, or
 * an index of such shards - restored to `out` (for an index, the new index
 * naming the restored shards, written beside it without their suffix).
 * Streaming, in bounded memory; corrupt or truncated input is STF_EFORMAT
 * naming the file and the compressed byte offset. `o` may be NULL; only
 * no_wait is read. Atomic as stf_zstd_compress.
 */
STF_EXPERIMENTAL_API
int stf_zstd_decompress(const char *in, const char *out, const stf_write_opts *o, stf_err *err);

/*
 * Told when a writer finds its output locked by another run (stfix(1),
 * Output safety) and starts waiting for it: `path` is the output, borrowed
 * for the call. Called once per wait, before the first pause, from the
 * thread that creates the writer (stf_writer_new, stf_ckpt_rewrite,
 * stf_plan_run, stf_zstd_compress, stf_zstd_decompress); never under
 * no_wait, which fails with STF_EBUSY instead. It must not call back into
 * the library's writers.
 */
typedef void (*stf_lock_wait_fn)(void *ud, const char *path);

/*
 * Install fn (with ud) as the process's lock-wait hook; NULL removes it
 * (the default: waits are silent). Process-wide, like stf_set_allocator:
 * set it before any writer starts, not while one may be waiting.
 */
STF_EXPERIMENTAL_API
void stf_set_lock_wait_hook(stf_lock_wait_fn fn, void *ud);

#ifdef __cplusplus
}
#endif
#endif
