/*
 * Internal interfaces of the canonical writer (header_text.c, writer.c,
 * shard_write.c, canon.c, rewrite.c). Not part of the public API.
 */
#ifndef STF_WRITER_INTERNAL_H
#define STF_WRITER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "container/container_internal.h"

/*
 * A writer whose files are anonymous memory files (stf__sink_open_mem):
 * the same bytes stf_writer_new's would write to `path`, for a conversion
 * that is checked and never published. No output guard, no lock; `path`
 * only names the files (stf_writer_final_path). stf_writer_temp_path is
 * each file's /proc/self/fd/N link after prepare; commit refuses.
 * With `compare`, no file at all: each file's sink compares what it is
 * given with the existing file at its final path (stf__sink_open_cmp;
 * stf__writer_file_cmp has the outcome) and stf_writer_temp_path is NULL.
 */
int stf__writer_new_mem(stf_writer **out, const char *path, const stf_write_opts *opts,
                        int compare, stf_err *err);

/*
 * The files of `w`, a stf_writer_new writer not prepared yet, are read
 * back whole once committed (a batch hashes its outputs): each is written
 * through the page cache and left there (stf__sink_keep_cache), not with
 * O_DIRECT. The same bytes either way.
 */
void stf__writer_keep_cache(stf_writer *w);

/*
 * Prepare reads *cancel (when not NULL) before each tensor it writes, and
 * once it is non-zero fails with STF_ECANCELED naming the output; the
 * caller frees the writer, which removes its temps (stf_run_opts.cancel).
 */
void stf__writer_set_cancel(stf_writer *w, const volatile int *cancel);

/*
 * modelspec.hash_sha256 made true (writer_hash.c): when the metadata holds
 * it, hash each shard's tensor data, now that every byte is in, and write
 * "0x" and the digits in its place. Commit calls it; a memory writer's
 * files hold the value only after it, so call it before reading them. A
 * comparing writer's header holds the existing file's value already, and
 * nothing is done. STF_ENOMEM, STF_EIO naming the file and byte.
 */
int stf__whash_finish(stf_writer *w, stf_err *err);

/*
 * A prepared comparing writer's file i (shards, then the index): its
 * target, and in *size the bytes the file has; NULL for other writers.
 */
const struct stf__cmp *stf__writer_file_cmp(const stf_writer *w, size_t i, uint64_t *size);

/* The reference writer's header limit (rule S2). */
#define STF__MAX_HEADER 100000000ULL

/* 1 when the n bytes at s are valid UTF-8 in the Rust from_utf8 sense. */
int stf__utf8_valid(const char *s, size_t n);

/*
 * Sort `t` into canonical writer order (dtype index descending, then name bytes
 * ascending; lib/README.md, Canonical form) and assign contiguous offsets from
 * 0 in that order from each entry's nbytes. Fails with STF_EINVAL when the
 * total overflows u64.
 */
int stf__canon_order(stf_tensor_info *t, size_t n, stf_err *err);

/*
 * Append the canonical header text for tensors `t` (used in the given order
 * with their begin/end) and metadata `meta` to `out`, padded with spaces to a
 * multiple of 8 (lib/README.md, Canonical form). Metadata keys are sorted
 * bytewise; of equal keys the last one wins. The object is emitted when
 * emit_meta is set. Fails with STF_ELIMIT (rule "S2") when the padded length
 * would exceed 100,000,000, or STF_ENOMEM.
 */
int stf__canon_header(stf_buf *out, const stf_tensor_info *t, size_t n,
                      const stf_meta_entry *meta, size_t nmeta, int emit_meta, stf_err *err);

/*
 * S21-S25 for one file: compare the N header bytes `hdr` of the file at
 * `path` with the canonical header of its tensors `t` (file order, as the
 * reader returns them, header_offset set) and metadata `meta` (file order).
 * Sets *is_canonical and, when it is 0 and `f` is not NULL, appends one INFO
 * finding per failed rule with the absolute byte offset of the first
 * offending byte. Only STF_ENOMEM can fail.
 */
int stf__canon_check(int *is_canonical, const uint8_t *hdr, uint64_t n,
                     const stf_tensor_info *t, size_t nt, const stf_meta_entry *meta,
                     size_t nmeta, int has_meta, const char *path, stf__findings *f,
                     stf_err *err);

/*
 * Run stf__canon_check on every shard of `c` and add the S21-S25 findings to
 * its findings list. Meant to be called once, at the end of a successful
 * stf_ckpt_open. Only STF_ENOMEM / STF_EIO (re-reading a header) can fail.
 */
int stf__ckpt_canon_findings(stf_ckpt *c, stf_err *err);

/* ------------------------------------------------------------ sharding */

/* Shard plan: shard_of[i] for each tensor in writer order, and the count. */
typedef struct stf__shard_plan {
    size_t *first; /* index (in writer order) of the first tensor of each shard */
    size_t nshards;
} stf__shard_plan;

/*
 * Split tensors `t` (writer order, nbytes set) greedily into shards of at
 * most max_size data bytes; a tensor larger than the limit gets a shard of
 * its own. max_size 0 means one shard. Free with stf__shard_plan_free.
 */
int stf__shard_plan_make(stf__shard_plan *p, const stf_tensor_info *t, size_t n,
                         uint64_t max_size, stf_err *err);
void stf__shard_plan_free(stf__shard_plan *p);

/*
 * I7 sharding over groups. `t` is in writer order; unit[i] is the position
 * (in writer order) of the first tensor of i's group, so unit[i] <= i, and
 * unit[i] == i for an ungrouped tensor; unit NULL means every tensor is its
 * own unit. A group is placed, whole, when its first tensor in writer order
 * is reached; units are packed greedily exactly as stf__shard_plan_make
 * packs tensors, and a unit above max_size gets a shard of its own. Shard
 * membership is then no longer contiguous in writer order, so `order` (n
 * entries, may be NULL) receives the output order: positions in writer
 * order, sorted by (shard, writer position). Each shard thus keeps
 * canonical order inside, and p->first indexes into `order`.
 */
int stf__shard_plan_units(stf__shard_plan *p, size_t *order, const stf_tensor_info *t,
                          const size_t *unit, size_t n, uint64_t max_size, stf_err *err);

/*
 * File name (no directory) of shard `idx` (0-based) of `count` for the
 * output `path`, which ends in ".safetensors": "STEM-00001-of-00003.safetensors".
 * Caller frees with stf__free. NULL on allocation failure.
 */
char *stf__shard_name(const char *path, size_t idx, size_t count);

/*
 * Append the index text (Python json.dumps(indent=2, sort_keys=True) + "\n")
 * for tensors `t` whose shard file names are `files[shard_of(i)]`.
 * `imeta` are extra "metadata" keys with raw JSON value text; total_size
 * is recomputed. Fails with STF_EINVAL when a raw value is not JSON.
 */
int stf__index_text(stf_buf *out, const stf_tensor_info *t, size_t n,
                    const stf__shard_plan *plan, char *const *files,
                    const stf_meta_entry *imeta, size_t nimeta, stf_err *err);

#endif
