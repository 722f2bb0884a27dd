/*
 * stfix public API: the safetensors container (lib/README.md,
 * The container format).
 *
 * Included through <stfix.h>; do not include directly.
 *
 * Thread safety: an opened stf_ckpt is read-only. Every function taking a
 * const stf_ckpt *, stf_ckpt_read included (pread, and a mutex around the
 * shard descriptor cache and around a zstd shard's frame cache or stream),
 * may be called from several threads at once on
 * the same checkpoint; stf_ckpt_free must wait until all have returned. A
 * stf_writer belongs to one thread at a time, except stf_writer_fill,
 * which several threads may call at once for disjoint ranges between
 * prepare and commit. Distinct writers may run at once; two of the same
 * output serialise on its lock (stf_writer_new).
 */
#ifndef STFIX_CONTAINER_H
#define STFIX_CONTAINER_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- dtypes */

/* The 22 safetensors dtypes; the enum value is the reference's index
 * ("increasing alignment order"), which the canonical writer sorts by. */
typedef enum stf_dtype {
    STF_BOOL = 0, STF_F4, STF_F6_E2M3, STF_F6_E3M2, STF_U8, STF_I8,
    STF_F8_E5M2, STF_F8_E4M3, STF_F8_E8M0, STF_F8_E4M3FNUZ, STF_F8_E5M2FNUZ,
    STF_I16, STF_U16, STF_F16, STF_BF16, STF_I32, STF_U32, STF_F32,
    STF_C64, STF_F64, STF_I64, STF_U64,
    STF_DTYPE_COUNT
} stf_dtype;

/* Exact-case name ("F32"); NULL for an out-of-range value. */
STF_API const char *stf_dtype_name(stf_dtype d);

/* Parse an exact-case name of `len` bytes. Returns 0, or STF_ENOTFOUND. */
STF_API int stf_dtype_from_name(stf_dtype *out, const char *name, size_t len);

/* ------------------------------------------------------------- limits */

#define STF_MAX_RANK_HARD 64 /* compile-time bound for shape arrays */

/* The layout of stf_open_opts this header describes. */
#define STF_OPEN_OPTS_VERSION 3u

/*
 * Options for opening files. Make them with stf_open_opts_init(), which
 * sets the documented defaults (lib/README.md, Resource caps), then adjust.
 */
typedef struct stf_open_opts {
    unsigned version;           /* STF_OPEN_OPTS_VERSION, set by stf_open_opts_init */
    int strict;                 /* STRICT findings become errors (default 0) */
    int no_mmap;                /* ignored, kept for source compatibility: files are
                                 * always read with pread, never memory-mapped */
    uint64_t max_header;        /* header N cap (default 100,000,000; never above it) */
    uint64_t max_tensors;       /* per file (default 1,000,000) */
    unsigned max_rank;          /* default 8, at most STF_MAX_RANK_HARD */
    uint64_t max_dim;           /* dimension/offset value (default 2^48-1) */
    size_t max_name;            /* tensor name bytes (default 4096) */
    size_t max_meta_entries;    /* __metadata__ entries (default 65536) */
    size_t max_shards;          /* per index (default 10,000) */
    uint64_t max_index_size;    /* index JSON bytes (default 100,000,000) */
    int canon_findings;         /* add S21-S25 notes (INFO) for non-canonical files (default 0) */
    /* Version 2: zstd-compressed input (stfix(1), INPUT FORMATS). */
    const char *spool_dir;      /* directory for the spool of a plain zstd stream read out of
                                 * data order (an unnamed file, gone when the checkpoint is
                                 * freed); NULL: decompress again from the start instead */
    uint64_t max_zstd_frame;    /* decompressed bytes of one seekable frame (default 64 MiB) */
    uint64_t max_zstd_frames;   /* frames in one seek table (default 16,777,216) */
    unsigned zstd_cache_frames; /* decoded frames kept per seekable shard (default 4, >= 1) */
    /* Version 3. */
    uint64_t max_spool;         /* bytes the spool of one stream may hold (L11); 0, the
                                 * default: the stream's size, which for frames that do not
                                 * record theirs is the size the safetensors header declares */
} stf_open_opts;

/*
 * Fill *o with the defaults of layout `version`. Call it through the
 * stf_open_opts_init macro, which passes STF_OPEN_OPTS_VERSION. For a version
 * the library does not know only o->version is set, and stf_ckpt_open then
 * refuses the options.
 */
STF_API void stf_open_opts_init_version(stf_open_opts *o, unsigned version);
#define stf_open_opts_init(o) stf_open_opts_init_version((o), STF_OPEN_OPTS_VERSION)

/* ------------------------------------------------------------ findings */

/*
 * A finding the reader reports without failing (STRICT rules when not
 * strict, S20, S21-S25 canonical-form notes). Strings are owned by the file
 * or checkpoint they came from.
 */
typedef struct stf_finding {
    char rule[8];           /* "S7", "S21", "I6", ... */
    stf_severity severity;
    const char *tensor;     /* NULL when no tensor applies; NUL-terminated, but the
                             * name is tensor_len bytes and may hold U+0000 */
    size_t tensor_len;
    const char *path;       /* file the finding is about */
    int has_offset;
    uint64_t offset;        /* absolute byte offset in `path` */
    const char *message;    /* full message, already naming path/tensor/offset */
} stf_finding;

/* -------------------------------------------------------- one file */

/* One tensor as the header declares it (after validation). */
typedef struct stf_tensor_info {
    const char *name;       /* unescaped UTF-8, name_len bytes; may hold U+0000 (an S14
                             * warning), so use the length: a NUL follows the name */
    size_t name_len;
    stf_dtype dtype;
    unsigned rank;
    const uint64_t *shape;  /* rank entries; NULL when rank == 0 */
    uint64_t nelem;         /* product of shape (1 for rank 0) */
    uint64_t begin, end;    /* data_offsets, relative to the data section */
    uint64_t nbytes;        /* end - begin */
    uint64_t header_offset; /* absolute byte offset of the tensor's key in the file */
    unsigned shard;         /* shard index within a checkpoint (0 for a single file) */
} stf_tensor_info;

/* A __metadata__ entry (unescaped UTF-8, NUL-terminated; lengths exclude NUL). */
typedef struct stf_meta_entry {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} stf_meta_entry;

/* ------------------------------------------------- logical checkpoint */

/*
 * A checkpoint: one .safetensors file, or a *.safetensors.index.json with its
 * shards. Opening validates every S-rule for each file and the I-rules for an
 * index (a tensor in two shards is an error). Input files are never written.
 */
typedef struct stf_ckpt stf_ckpt;

/*
 * Open `path` (a .safetensors file, or a name ending in ".index.json").
 * `opts` may be NULL for defaults. On failure *out is NULL and err says why,
 * with the rule id and byte offset. Free with stf_ckpt_free. A `path` that
 * does not exist is STF_ENOTFOUND; one that exists but cannot be read (a
 * directory, a FIFO, no permission) is STF_EIO.
 *
 * An index's shards are opened and checked one at a time; afterwards their
 * descriptors live in a small cache (a few dozen at most while none is
 * being read) and are reopened on demand, so the shard count is not bounded
 * by the open-file limit. A shard that is missing or unreadable as named is
 * I3 (STF_EFORMAT); failing to open one for lack of descriptors or memory is
 * STF_EIO. A reopened shard must still be the file checked at open (same
 * device, inode and size), else the read fails with STF_EIO naming it.
 */
STF_API int stf_ckpt_open(stf_ckpt **out, const char *path, const stf_open_opts *opts,
                          stf_err *err);

/*
 * Open a single safetensors file held in memory (tests, fuzzing). `buf` is
 * borrowed and must outlive the checkpoint; `name` is used in messages.
 */
STF_API int stf_ckpt_open_mem(stf_ckpt **out, const void *buf, size_t len, const char *name,
                              const stf_open_opts *opts, stf_err *err);

/* No-op on NULL. */
STF_API void stf_ckpt_free(stf_ckpt *c);

/* 1 for a single file. */
STF_API size_t stf_ckpt_shard_count(const stf_ckpt *c);
/* Path of shard i as opened (for a single file: the path given). */
STF_API const char *stf_ckpt_shard_path(const stf_ckpt *c, size_t shard);
/* Header length N of shard i, and total file size. */
STF_API uint64_t stf_ckpt_shard_header_len(const stf_ckpt *c, size_t shard);
STF_API uint64_t stf_ckpt_shard_file_size(const stf_ckpt *c, size_t shard);
/* Whether shard i had a __metadata__ object (even an empty one). */
STF_API int stf_ckpt_shard_has_meta(const stf_ckpt *c, size_t shard);
/* __metadata__ of shard i, entries in file order. */
STF_API size_t stf_ckpt_meta_count(const stf_ckpt *c, size_t shard);
STF_API const stf_meta_entry *stf_ckpt_meta(const stf_ckpt *c, size_t shard, size_t i);
/* Look up a metadata value by key (len bytes) in shard i; NULL when absent. */
STF_API const stf_meta_entry *stf_ckpt_meta_find_n(const stf_ckpt *c, size_t shard, const char *key,
                                                   size_t len);
/* stf_ckpt_meta_find_n of the NUL-terminated `key`. */
STF_API const stf_meta_entry *stf_ckpt_meta_find(const stf_ckpt *c, size_t shard, const char *key);

/* Path of the index file, or NULL for a single file. */
STF_API const char *stf_ckpt_index_path(const stf_ckpt *c);
/*
 * The index's "metadata" object other than total_size, as raw JSON text of
 * each value (so it can be re-emitted). Empty for a single file.
 */
STF_API size_t stf_ckpt_index_meta_count(const stf_ckpt *c);
STF_API const stf_meta_entry *stf_ckpt_index_meta(const stf_ckpt *c, size_t i);

/*
 * All tensors of all shards, ordered by (shard, begin, end): i.e. file order.
 * Pointers stay valid until stf_ckpt_free.
 */
STF_API size_t stf_ckpt_tensor_count(const stf_ckpt *c);
STF_API const stf_tensor_info *stf_ckpt_tensor(const stf_ckpt *c, size_t i);
/*
 * Find by exact name, the len bytes at `name` (which may hold U+0000); 0 and
 * *idx set, or STF_ENOTFOUND.
 */
STF_API int stf_ckpt_find_n(size_t *idx, const stf_ckpt *c, const char *name, size_t len);
/* stf_ckpt_find_n of the NUL-terminated `name`. */
STF_API int stf_ckpt_find(size_t *idx, const stf_ckpt *c, const char *name);

/*
 * Copy `len` bytes of tensor i starting at byte `off` within the tensor into
 * dst. Bounds are checked (STF_EINVAL). Files are read with pread (never
 * memory-mapped), so a file that shrank after open is STF_EIO naming the
 * file and the byte offset where it ended, never a signal. Safe to call
 * from several threads at once.
 */
STF_API int stf_ckpt_read(void *dst, const stf_ckpt *c, size_t i, uint64_t off, size_t len,
                          stf_err *err);

/*
 * Pointer to tensor i's bytes for a checkpoint opened with
 * stf_ckpt_open_mem (into the caller's buffer); NULL for a checkpoint
 * opened from a file, whose bytes are read with stf_ckpt_read.
 */
STF_API const void *stf_ckpt_tensor_data(const stf_ckpt *c, size_t i);

/* Findings recorded while opening (warnings and canonical-form notes). */
STF_API size_t stf_ckpt_finding_count(const stf_ckpt *c);
STF_API const stf_finding *stf_ckpt_finding(const stf_ckpt *c, size_t i);

/*
 * How shard i is stored. A file that starts with a zstd frame (or a
 * skippable frame) is read through zstd, whatever its name: with a seek
 * table in the zstd seekable format, frames are decoded on demand into a
 * small cache; without one, the stream is decompressed in data order, and
 * a read behind the position reached comes from a spool file in
 * stf_open_opts.spool_dir (or, without one, decompresses again from the
 * start). stf_ckpt_shard_file_size is then the decompressed size.
 */
typedef enum stf_storage {
    STF_STORAGE_PLAIN = 0,          /* an uncompressed file, or memory */
    STF_STORAGE_ZSTD_SEEKABLE = 1,  /* zstd seekable format */
    STF_STORAGE_ZSTD_STREAM = 2     /* zstd frames without a seek table */
} stf_storage;

/* How a zstd stream has been read so far (STF_STORAGE_ZSTD_STREAM). */
typedef enum stf_stream_mode {
    STF_STREAM_NONE = 0,            /* not a stream, or nothing read past the header */
    STF_STREAM_IN_ORDER = 1,        /* every read in data order: no spool */
    STF_STREAM_SPOOLED = 2,         /* a read out of order: served from a spool file */
    STF_STREAM_RESTARTED = 3        /* out of order without a spool directory: decompressed
                                     * again from the start */
} stf_stream_mode;

STF_API stf_storage stf_ckpt_shard_storage(const stf_ckpt *c, size_t shard);
/* Bytes of shard i on disk (the compressed size; the file size when plain). */
STF_API uint64_t stf_ckpt_shard_stored_size(const stf_ckpt *c, size_t shard);
/* Frames of the seek table (seekable), or zstd frames in the file (stream). */
STF_API uint64_t stf_ckpt_shard_frame_count(const stf_ckpt *c, size_t shard);
/*
 * Frames decoded so far (a seekable shard: each decode counts, a cache hit
 * does not; a stream: 0). Reading one tensor of a seekable file touches
 * only the frames that hold it.
 */
STF_API uint64_t stf_ckpt_shard_frames_decoded(const stf_ckpt *c, size_t shard);
STF_API stf_stream_mode stf_ckpt_shard_stream_mode(const stf_ckpt *c, size_t shard);

/*
 * Whether shard i is byte-identical to what the canonical writer would emit
 * (S21-S25 all hold). Findings for each failed rule are in the list above.
 */
STF_API int stf_ckpt_shard_is_canonical(const stf_ckpt *c, size_t shard);

/* ------------------------------------------------------------- writer */

/*
 * Where a tensor's bytes come from when writing.
 *  STF_SRC_MEM:  `mem`, nbytes long, borrowed until commit.
 *  STF_SRC_CKPT: tensor `idx` of `ckpt` copied verbatim (copy_file_range
 *                where possible); sizes must match.
 *  STF_SRC_FN:   `fn` is called with consecutive (off, len) chunks covering
 *                the tensor in order and must fill dst; it may fail with an
 *                error code and err filled.
 */
typedef int (*stf_produce_fn)(void *ud, void *dst, uint64_t off, size_t len, stf_err *err);

/*
 *  STF_SRC_DEFERRED: no source now; the bytes are supplied after
 *                stf_writer_prepare with stf_writer_fill, in any order
 *                (e.g. a requantized weight and its scale from one pass).
 */
typedef enum stf_src_kind {
    STF_SRC_MEM = 0, STF_SRC_CKPT = 1, STF_SRC_FN = 2, STF_SRC_DEFERRED = 3
} stf_src_kind;

typedef struct stf_tensor_src {
    stf_src_kind kind;
    const void *mem;
    const stf_ckpt *ckpt;
    size_t idx;
    stf_produce_fn fn;
    void *ud;
} stf_tensor_src;

/* The layout of stf_write_opts this header describes. */
#define STF_WRITE_OPTS_VERSION 2u

/* Options of a writer. Make them with stf_write_opts_init(), then adjust. */
typedef struct stf_write_opts {
    unsigned version;         /* STF_WRITE_OPTS_VERSION, set by stf_write_opts_init */
    uint64_t max_shard_size;  /* 0: one file; else split greedily in writer order */
    /* The output guard (stf_output_check). stf_ckpt_rewrite and
     * stf_plan_run fill `input` themselves when it is NULL. */
    const stf_ckpt *input;    /* none of its files may be replaced (may be NULL) */
    int replace_input;        /* in place: the output may be input's single file itself */
    int no_wait;              /* fail with STF_EBUSY instead of waiting for the lock */
    /* Version 2 adds everything from here on. progress: the bytes
     * stf_writer_prepare writes (every tensor but the deferred ones), after
     * each tensor; NULL: none. */
    stf_progress_fn progress;
    void *progress_ud;
    /* Compressed output (stfix(1), COMPRESSED FILES). zstd_level 1..22
     * writes each file in the zstd seekable format: `path` then ends in
     * ".zst" (".stz" with zstd_grouped), shards are named
     * STEM-0000i-of-0000N.safetensors.zst and the index, STEM.safetensors
     * .index.json, names them. The uncompressed file is made first (and is
     * what stf_writer_temp_path shows until commit); each frame of it is
     * compressed by the stf_writer_fill that completes it, on the caller's
     * thread, into a spool beside the output; commit compresses the rest
     * on `pool`, assembles the frames in order and publishes only the
     * compressed file. Same bytes for any pool size and fill order. 0:
     * uncompressed, and the fields below are ignored. */
    int zstd_level;
    uint64_t zstd_frame;      /* decompressed bytes per frame at most; 0: 4 MiB */
    int zstd_grouped;         /* BF16/F16 frames byte-grouped: a .stz file */
    int zstd_verify;          /* decompress after writing, compare SHA-256 */
    stf_pool *pool;           /* compression runs on it; NULL = inline */
} stf_write_opts;

/* Defaults of layout `version` (one output file, fsync on); as
 * stf_open_opts_init_version. Call it through the stf_write_opts_init macro. */
STF_API void stf_write_opts_init_version(stf_write_opts *o, unsigned version);
#define stf_write_opts_init(o) stf_write_opts_init_version((o), STF_WRITE_OPTS_VERSION)

/*
 * The output guard, which every writer goes through: may a writer with
 * options `o` write `path`? Checks, without creating anything, the names
 * the output may take (path; with o->max_shard_size also path.index.json
 * and every existing STEM-N-of-M.safetensors beside it):
 *  - the directory exists and is writable (else STF_EIO);
 *  - nothing there is a directory, device, FIFO or socket, directly or
 *    through a symlink (STF_EINVAL): only regular files are replaced, and a
 *    symlink at the output path is replaced itself, never its target;
 *  - nothing there is a file of o->input (its file, shards or index), by
 *    device and inode, so links and ".." are seen through (STF_EINVAL);
 *    with o->replace_input the input's single file, named directly, may be.
 * stf_writer_new runs it again, and commit re-checks the exact names right
 * before renaming; callers run it first to fail before any work.
 */
STF_API int stf_output_check(const char *path, const stf_write_opts *o, stf_err *err);

typedef struct stf_writer stf_writer;

/*
 * Start writing a checkpoint at `path`. With max_shard_size == 0 `path` is
 * the output file. Otherwise `path` must end in ".safetensors": shards are
 * named STEM-00001-of-0000N.safetensors next to it, and the index
 * STEM.safetensors.index.json — unless everything fits in one shard, in
 * which case `path` itself is written and no index. Nothing appears at the
 * final paths before stf_writer_commit succeeds.
 *
 * Runs stf_output_check (its errors come back unchanged) and then takes an
 * exclusive advisory lock on the output (flock on ".NAME.stfix-lock" in its
 * directory), held until commit or free: a second writer of the same output
 * waits, or fails with STF_EBUSY under opts->no_wait. Commit renames the
 * shards before the index, so an index is only ever seen with its shards.
 */
STF_API int stf_writer_new(stf_writer **out, const char *path, const stf_write_opts *opts,
                           stf_err *err);

/* Emit a __metadata__ object even when no key is set (source had one). */
STF_API void stf_writer_keep_empty_meta(stf_writer *w);

/* Set (or replace) a __metadata__ entry; strings are copied. */
STF_API int stf_writer_set_meta(stf_writer *w, const char *key, const char *value, stf_err *err);
/* The same with the key of klen and the value of vlen bytes (either may hold
 * U+0000). STF_EINVAL when one is not valid UTF-8. */
STF_API int stf_writer_set_meta_n(stf_writer *w, const char *key, size_t klen, const char *value,
                                  size_t vlen, stf_err *err);

/* Set an index "metadata" entry other than total_size (raw JSON value text). */
STF_API int stf_writer_set_index_meta(stf_writer *w, const char *key, const char *json_value,
                                      stf_err *err);

/*
 * Add a tensor named by the len bytes at `name`. A name is any UTF-8 byte
 * string, "" and U+0000 included (the header escapes it as \u0000), except
 * "__metadata__"; names are compared, sorted and written by their bytes.
 * `name` and `shape` are copied; `src` is copied but what it points to is
 * borrowed until commit. A name the format forbids is refused with
 * STF_EFORMAT and its rule: a duplicate (S13) or "__metadata__" (S14). A
 * name that is not valid UTF-8, and other bad arguments, are STF_EINVAL.
 */
STF_API int stf_writer_add_n(stf_writer *w, const char *name, size_t len, stf_dtype dtype,
                             unsigned rank, const uint64_t *shape, const stf_tensor_src *src,
                             stf_err *err);

/* stf_writer_add_n of the NUL-terminated `name`. */
STF_API int stf_writer_add(stf_writer *w, const char *name, stf_dtype dtype, unsigned rank,
                           const uint64_t *shape, const stf_tensor_src *src, stf_err *err);

/*
 * Write everything: temp file(s) in the destination directory, fsync, rename
 * over the target(s). On failure every temp file is removed and nothing is
 * left at the output paths.
 */
STF_API int stf_writer_commit(stf_writer *w, stf_err *err);

/*
 * I7: tensors added with the same non-NULL group (e.g. a layer prefix) are
 * kept in one shard when the output is sharded. The group of `name` (already
 * added) is copied. A group larger than max_shard_size gets a shard of its own.
 * A group is placed whole when its first tensor in canonical writer order is
 * reached; shards are filled greedily over such units, and each shard's
 * tensors stay in canonical order. Only before prepare; NULL clears.
 */
STF_API int stf_writer_set_group(stf_writer *w, const char *name, const char *group, stf_err *err);
/* stf_writer_set_group with explicit lengths: the tensor named by the len
 * bytes at `name`, the group by glen bytes (ignored when group is NULL). */
STF_API int stf_writer_set_group_n(stf_writer *w, const char *name, size_t len, const char *group,
                                   size_t glen, stf_err *err);

/*
 * Two-phase writing. stf_writer_prepare fixes the layout, creates the temp
 * file(s) in the destination directory and writes every header and every
 * non-deferred tensor; deferred tensors' regions are reserved. Then
 * stf_writer_fill supplies deferred bytes (any order; safe to call from
 * several threads for disjoint ranges). stf_writer_commit (which calls
 * prepare itself when needed) fails with STF_EINVAL naming the tensor when a
 * deferred byte was never filled, else fsyncs and renames. Between prepare
 * and commit the temp files can be opened (stf_writer_temp_path) to verify
 * the output before it becomes visible.
 */
STF_API int stf_writer_prepare(stf_writer *w, stf_err *err);
/* Index of `name` among the added tensors (for stf_writer_fill), or STF_ENOTFOUND. */
STF_API int stf_writer_tensor_id(size_t *id, const stf_writer *w, const char *name);
/* stf_writer_tensor_id of the tensor named by the len bytes at `name`. */
STF_API int stf_writer_tensor_id_n(size_t *id, const stf_writer *w, const char *name, size_t len);
/* Write len bytes at byte `off` of deferred tensor `id` (bounds checked:
 * STF_EINVAL). Overlapping fills are the caller's error (commit then
 * refuses the tensor); a failed fill makes commit fail with STF_EIO.
 * Every fill must have returned before commit or free. */
STF_API int stf_writer_fill(stf_writer *w, size_t id, uint64_t off, const void *data, size_t len,
                            stf_err *err);
/*
 * Files the writer produces, after prepare: shards in order, then the index
 * (when sharded). temp_path is where the bytes are now, final_path where
 * commit puts them. NULL when i is out of range or before prepare. Where the
 * file system supports O_TMPFILE the temp file has no name in the directory
 * (nothing survives a kill) and temp_path is "/proc/self/fd/N": openable by
 * this process only, e.g. with stf_ckpt_open, until commit or free.
 */
STF_API size_t stf_writer_file_count(const stf_writer *w);
STF_API const char *stf_writer_temp_path(const stf_writer *w, size_t i);
STF_API const char *stf_writer_final_path(const stf_writer *w, size_t i);


/* Frees; removes any temp file of an uncommitted writer. No-op on NULL. */
STF_API void stf_writer_free(stf_writer *w);

/*
 * Rewrite a whole checkpoint canonically into `out_path` (tensors, metadata
 * and index metadata unchanged). The implementation of `stfix rewrite`.
 */
STF_API int stf_ckpt_rewrite(const stf_ckpt *c, const char *out_path, const stf_write_opts *opts,
                             stf_err *err);

#ifdef __cplusplus
}
#endif
#endif
