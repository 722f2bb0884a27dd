/*
 * The canonical writer's state, shared by writer.c (collecting tensors and
 * metadata) and writer_prepare.c (layout, temp files, deferred fills,
 * commit). Private to those two files.
 */
#ifndef STF_WRITER_STATE_H
#define STF_WRITER_STATE_H

#include <stdatomic.h>

#include "container/out_guard.h"
#include "io/sink.h"
#include "container/writer_internal.h"

typedef struct stf__wtensor {
    stf_tensor_info info; /* name and shape owned; info.shard set by prepare */
    stf_tensor_src src;
    char *group;          /* I7 shard group, owned; NULL: none */
    size_t group_len;
    uint64_t file_off;    /* absolute offset of the bytes in their shard (prepare) */
} stf__wtensor;

typedef struct stf__meta_list {
    stf_meta_entry *v; /* key and value owned */
    size_t n, cap;
} stf__meta_list;

/* Lifecycle: tensors and metadata can change only while OPEN; fills are
 * accepted only while PREPARED; DONE after commit or a failed prepare. */
enum { STF__W_OPEN = 0, STF__W_PREPARED, STF__W_DONE };

struct stf_writer {
    char *path;
    stf_write_opts opts;
    stf__wtensor *t; /* add order: the index is the id of stf_writer_tensor_id */
    size_t n, cap;
    size_t *slots; /* name hash set: tensor index + 1, 0 = empty */
    size_t nslots;
    stf__meta_list meta, imeta;
    int keep_meta;
    int state;
    /* Set by prepare: shards, then the index when sharded. */
    size_t nshards, nfiles;
    stf__sink *sinks;
    char **finals;                 /* final paths, kept after commit */
    _Atomic uint64_t *filled;      /* bytes filled per deferred tensor (add order) */
    atomic_int fill_failed;        /* a fill failed: commit must refuse */
    stf__out_lock lock;            /* held from new until commit or free */
    stf__out_inputs inputs;        /* opts.input's files, for commit's re-check */
    uint64_t written, to_write;    /* prepare's bytes, for opts.progress */
    int memory;                    /* stf__writer_new_mem: memory files, no commit */
    int compare;                   /* ... with compare set: comparing sinks, no files */
    int keep_cache;                /* stf__writer_keep_cache: files read back after commit */
    const volatile int *cancel;    /* stf__writer_set_cancel: prepare stops when it is set */
    /* modelspec.hash_sha256 (writer_hash.c), when the metadata has it: per
     * shard, where its 64 digits go and where the data starts; the value
     * the header is made with. */
    uint64_t *hash_at, *data_at;
    char hash_value[67];
};

/*
 * Compressed output (writer_zstd.c). stf__writer_zopen opens the
 * compressing sink `sk` of shard file `path` with the writer's options
 * (and, with opts.zstd_verify, the restore-and-compare step at its
 * finish); errors as stf__sink_open_zstd. stf__writer_zlayout, from
 * prepare once shard `s` (tensors tt[0, n), their offsets set) is laid
 * out and sealed in `sk`: gives the sink the tensors and the bytes still
 * to come (deferred tensors, modelspec.hash_sha256's digits), so fills
 * compress frames as they complete them. STF_ENOMEM, or as
 * stf__sink_zstd_layout.
 */
int stf__writer_zopen(const stf_writer *w, stf__sink *sk, const char *path, stf_err *err);
int stf__writer_zlayout(const stf_writer *w, stf__sink *sk, size_t s, stf__wtensor *const *tt,
                        size_t n, stf_err *err);

/*
 * modelspec.hash_sha256 (writer_hash.c). stf__whash_meta, from prepare
 * before shard `shard`'s header is made: when the metadata holds the key,
 * *meta gets a copy of it (free with stf__free; the strings are borrowed)
 * with the key's value replaced by one of its final length; else NULL.
 * stf__whash_locate, with the header text made from it (n bytes): notes
 * where the digits and the data are. stf__whash_finish, at commit once
 * every byte is in (and before a memory writer's files are read): hashes
 * each shard's data and writes the digits; a comparing writer's header
 * already holds the existing file's value. STF_ENOMEM, STF_EIO.
 */
int stf__whash_meta(stf_writer *w, size_t shard, stf_meta_entry **meta, stf_err *err);
void stf__whash_locate(stf_writer *w, size_t shard, const char *hdr, size_t n);

#endif
