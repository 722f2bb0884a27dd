/*
 * Sharded checkpoints: the *.safetensors.index.json file (lib/README.md,
 * Sharded checkpoints; rules I1-I6). index.c parses the index (I1, I2, caps)
 * and cross-checks it against the tensors of the opened shards (I4-I6); ckpt.c
 * opens the shards (I3). Internal to the container layer.
 *
 * Cap rule ids used here (STF_ELIMIT), continuing the header's L1-L6:
 *   L7  distinct shard files per index  > opts.max_shards
 *   L8  index file size                 > opts.max_index_size
 */
#ifndef STF_CONTAINER_INDEX_H
#define STF_CONTAINER_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "container/container_internal.h"

/* One weight_map member. */
typedef struct stf__index_entry {
    char *name;       /* unescaped key, NUL-terminated (may hold NUL: use name_len) */
    size_t name_len;
    size_t file;      /* index into stf__index.files */
    uint64_t off;     /* byte offset of the key in the index file */
} stf__index_entry;

typedef struct stf__index {
    char **files;            /* distinct shard file names, sorted bytewise */
    size_t nfiles;
    stf__index_entry *map;   /* weight_map, sorted by name bytes (unique) */
    size_t nmap;
    stf_meta_entry *meta;    /* "metadata" minus total_size, file order; value is raw JSON */
    size_t nmeta;
    int has_total;           /* metadata.total_size present */
    int total_ok;            /* ... and an unsigned integer that fits u64 */
    uint64_t total_size;
    uint64_t total_off;      /* byte offset of the total_size value */
    stf__file_stamp stamp;   /* the index file as stf__index_load opened it */
    int has_stamp;           /* stamp holds it (a file; a host's index has none) */
} stf__index;

/*
 * Parse the `len` index bytes at `buf` (borrowed). `path` names the file in
 * messages. I1 (not valid JSON, not an object, weight_map missing or not an
 * object of strings, duplicate keys in the root, metadata or weight_map
 * objects, metadata not an object) and I2 (a shard name that is not a bare
 * file name) fail with STF_EFORMAT and err->rule/offset set; too many shard
 * files is STF_ELIMIT ("L7"). Free with stf__index_free.
 */
int stf__index_parse(stf__index **out, const uint8_t *buf, size_t len, const char *path,
                     const stf_open_opts *o, stf_err *err);

/*
 * Read and parse the index file at `path` (never written; opened through
 * stf__source_open_name), stamping it as opened (ix->stamp;
 * stf__index_parse leaves the stamp zero). A file larger than
 * o->max_index_size is STF_ELIMIT ("L8") before anything is allocated;
 * open/read errors are STF_EIO naming the path.
 */
int stf__index_load(stf__index **out, const char *path, const stf_open_opts *o, stf_err *err);

/*
 * stf__index_load of an index already open as `src` (not freed): its name
 * is the index's in messages, and it is stamped when the source has a
 * stamp (ix->has_stamp).
 */
int stf__index_read(stf__index **out, const stf__source *src, const stf_open_opts *o,
                    stf_err *err);

void stf__index_free(stf__index *ix);

/*
 * Cross-check the parsed index at `path` against the tensors of all shards.
 * `t[k].shard` must be the position of the shard's file in ix->files, and
 * `by_name` a permutation of 0..nt-1 ordering `t` by name bytes (memcmp,
 * shorter prefix first). I5 (a name in two shards) and I4 (names and
 * weight_map disagree) fail with STF_EFORMAT; an I6 total_size mismatch is
 * a warning added to `f`. Returns 0, STF_EFORMAT or STF_ENOMEM.
 */
int stf__index_check(const stf__index *ix, const char *path, const stf_tensor_info *t, size_t nt,
                     const size_t *by_name, stf__findings *f, stf_err *err);

/* Byte-wise name order used by both the weight_map and the tensor table. */
int stf__name_cmp(const char *a, size_t alen, const char *b, size_t blen);

#endif
