/*
 * stfix EXPERIMENTAL API, container layer: dtype arithmetic, whole-file
 * compression, the hashes that name a checkpoint file.
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

/* ------------------------------------------------------------ hashing */

/* The metadata key of ModelSpec's hash of the tensor data. */
#define STF_MODELSPEC_HASH_KEY "modelspec.hash_sha256"

/* The hashes of one checkpoint file, as lower-case hex and a NUL. */
typedef struct stf_file_hash {
    char sha256[65];      /* SHA-256 of the whole file */
    char autov2[11];      /* its first 10 hex digits: the AutoV2 hash of model sites */
    char data_sha256[65]; /* SHA-256 of the tensor data, bytes data_start to size: the
                           * addnet hash (sshs_model_hash); ModelSpec's hash_sha256 is
                           * "0x" and these digits */
    uint64_t size;        /* bytes hashed */
    uint64_t data_start;  /* 8 + N */
} stf_file_hash;

/*
 * Hash shard `shard` of c (0 for a single file) in one pass from its first
 * byte to its last, in bounded memory (a 1 MiB buffer). A compressed shard
 * is hashed as the bytes it restores to, the .safetensors file the hashes
 * of model sites are about. fn (may be NULL) gets the bytes hashed of the
 * shard's size after each chunk, with the shard's path. Errors: STF_EINVAL
 * (NULL, no such shard), STF_ENOMEM, and the read errors of stf_ckpt_read
 * (STF_EIO, a zstd shard's S26-S28) naming the file and offset.
 */
STF_EXPERIMENTAL_API
int stf_ckpt_shard_hash(stf_file_hash *out, const stf_ckpt *c, size_t shard, stf_progress_fn fn,
                        void *ud, stf_err *err);

/*
 * S29: hash the tensor data of every shard of c whose __metadata__ holds
 * modelspec.hash_sha256, and add an info finding to c's findings
 * (stf_ckpt_finding) for each whose value is not "0x" and the data's
 * SHA-256 (hex digits in either case). Reads those shards whole; shards
 * without the key are not read. fn (may be NULL) gets the bytes hashed of
 * those shards' total. Modifies c's findings list: no other thread may
 * read c meanwhile. Errors as stf_ckpt_shard_hash.
 */
STF_EXPERIMENTAL_API
int stf_ckpt_check_hashes(stf_ckpt *c, stf_progress_fn fn, void *ud, stf_err *err);

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

/* ------------------------------------------------------------ host bytes */

/* Bytes a host program supplies for one file. */
typedef struct stf_host_io {
    void *ctx;
    /* Copy up to len bytes at absolute offset off into dst. Return the count copied (0..len;
     * fewer than len is allowed and the library asks again for the rest; 0 means end of file),
     * or a negative value on failure. May be called from several threads at once. */
    int64_t (*read)(void *ctx, uint64_t off, void *dst, size_t len);
    /* The file's size in bytes now, or a negative value on failure. */
    int64_t (*size)(void *ctx);
    /* Called exactly once when the library no longer needs the file (also on a failed open,
     * once the struct was accepted); may be NULL. */
    void (*close)(void *ctx);
} stf_host_io;

/* For a shard set: give the stf_host_io of the shard file `name` (as the index lists it).
 * Return 0, or a negative value when there is no such file. */
typedef int (*stf_host_open_fn)(void *ctx, const char *name, stf_host_io *out);

/*
 * Open a checkpoint over host-supplied bytes. `name` is used in every message and decides the
 * kind as for a path: a name ending in ".index.json" is an index whose shards come from
 * open_shard(shard_ctx, ...) (NULL open_shard: STF_EINVAL for an index). Same validation, limits,
 * decompression of zstd input and errors as stf_ckpt_open on a file; a host read failure or a
 * short file is STF_EIO naming `name` and the byte offset.
 *
 * The struct is accepted whenever io is not NULL: from then on io->close is called exactly
 * once, whatever this returns (on success when the checkpoint is freed; at once on any
 * failure, a bad argument included). A shard's close is called exactly once once open_shard
 * returned 0 for it. A shard is named in messages as a file beside the index would be (the
 * index name's directory, up to its last '/', then the name the index lists); a shard the host
 * has none of is the index's I3, as a missing file is. The size is the one size() gives at
 * open; before a writer publishes an output made from the checkpoint, size() is asked again,
 * and a size that changed fails the write (STF_EIO), as a file that changed does.
 */
STF_EXPERIMENTAL_API
int stf_ckpt_open_host(stf_ckpt **out, const char *name, const stf_host_io *io,
                       stf_host_open_fn open_shard, void *shard_ctx,
                       const stf_open_opts *opts, stf_err *err);

/* ------------------------------------------------------- remote inputs */

/*
 * Say that the tensors idx[0..n) of c will be read whole soon: a remote
 * shard fetches them now, adjacent ones in one range request, and serves
 * the reads from memory (at most 64 MiB of them per shard; the rest are
 * read when asked for). A local file ignores it. Errors as stf_ckpt_read.
 */
STF_EXPERIMENTAL_API
int stf_ckpt_prefetch(const stf_ckpt *c, const size_t *idx, size_t n, stf_err *err);

/*
 * What crossed the network for c, opened by stf_ckpt_open from a remote
 * name: the response bytes received (*bytes) and the requests made
 * (*requests; either pointer may be NULL) for c's own files since the open
 * began (an index's file and its shards; retries included), by every read
 * of c on any thread (a check's, its probes', a run's, the window its
 * workers share): the figures of the "network" member of `stfix check
 * --json` (stf_check_report_json_net). Each file counts its own requests,
 * so the figures are c's alone and the same whatever else reads over the
 * network meanwhile (other checkpoints opened at once, on other threads).
 * Returns 1 when any request was made; 0, both figures 0, for a local or
 * in-memory checkpoint.
 */
STF_EXPERIMENTAL_API
int stf_ckpt_network(const stf_ckpt *c, uint64_t *bytes, uint64_t *requests);

#ifdef __cplusplus
}
#endif
#endif
