/*
 * The checkpoint object's insides, shared by the file that opens it
 * (ckpt_open.c) and the one that answers questions about it (ckpt.c), so
 * neither needs the other's functions beyond what container_internal.h
 * and container.h declare. Internal to the container layer.
 */
#ifndef STF_CONTAINER_CKPT_INTERNAL_H
#define STF_CONTAINER_CKPT_INTERNAL_H

#include "container/container_internal.h"
#include "container/index.h"

typedef struct ckpt_shard {
    stf__source *src;
    stf__header *hdr;
} ckpt_shard;

struct stf_ckpt {
    ckpt_shard *shards;
    size_t nshards;
    stf__fdcache *fds;      /* the shards' descriptors (an index only) */
    char *index_path;       /* NULL for a single file */
    stf__index *ix;         /* NULL for a single file */
    stf_tensor_info *tensors;
    size_t ntensors;
    size_t *by_name;        /* permutation of tensors, sorted by name bytes */
    stf__findings findings;
    /* What reading the index file cost over the network (its source is
     * closed once read; the shards' sources count their own). */
    uint64_t ix_bytes, ix_requests;
};

#endif
