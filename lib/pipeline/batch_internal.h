/*
 * Internal: the batch side of the pipeline — discovery and manifests
 * (batch_discover.c, batch_manifest.c), one checkpoint's run and report
 * line (batch_item.c, batch_line.c) and in-memory verification
 * (verify_mem.c). Not part of the public API.
 */
#ifndef STF_PIPELINE_BATCH_INTERNAL_H
#define STF_PIPELINE_BATCH_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "container/index.h"
#include "container/out_guard.h"
#include "io/sink.h"
#include "stfix/experimental/pipeline.h"
#include "util/sha256.h"
#include "util/util.h"

/* A file read or written, with its digest ("" when it could not be read). */
typedef struct stf__batch_file {
    char *path;
    char sha256[65];
    uint64_t size;
} stf__batch_file;

/* Findings of one rule. */
typedef struct stf__rule_count {
    char rule[8];
    size_t n;
} stf__rule_count;

/* A layer the plan changes, and its actions' names. */
typedef struct stf__batch_layer {
    char *layer;              /* escaped (stf_name_escape) */
    const char **actions;     /* static names */
    size_t nactions;
} stf__batch_layer;

struct stf_batch_result {
    stf_batch_status status;
    char *input, *output, *recipe; /* output NULL when nothing was written */
    char recipe_sha256[65];
    stf__batch_file *in, *out;
    size_t nin, nout;
    stf__rule_count *before, *after;
    size_t nbefore, nafter;
    stf__batch_layer *layers;
    size_t nlayers;
    int failed;               /* err holds the failure */
    stf_err err;
    uint64_t bytes_read, bytes_written;
    int remote;               /* read over the network, with at least one request */
    uint64_t net_bytes, net_requests;
    double seconds;
    char *line;               /* the report line (batch_line.c) */
    int pending;              /* outputs not hashed, no line yet */
    int no_hash;              /* stf_batch_opts.no_hash: sizes only */
    pthread_t hin;            /* the thread hashing the inputs, while hin_live */
    int hin_live;
};

/* The files of checkpoint `it`, appended to (*v, *n), not hashed: the
 * file, or an index and the shards it names (in the index's order:
 * sorted; none when the index cannot be read). 0 or STF_ENOMEM (the entries
 * made so far stay in *v for the caller to free). */
int stf__batch_item_files(stf__batch_file **v, size_t *n, const stf_batch_item *it);

/* Make r->line from the other fields: 0 or STF_ENOMEM. */
int stf__batch_line_make(stf_batch_result *r);

/* Append a zeroed item to l: its address, or NULL when out of memory. */
stf_batch_item *stf__batch_push(stf_batch_list *l);

/* STF_EINVAL naming both inputs when two items of l have the same rel (or,
 * when given, output): their outputs would collide. */
int stf__batch_unique(const stf_batch_list *l, stf_err *err);

/* "a" + "/" + "b" (just b when a is NULL or b is absolute); NULL when out
 * of memory. stf__free it. */
char *stf__path_join(const char *a, const char *b);

/* 1 when s ends with suffix. */
int stf__ends_with(const char *s, const char *suffix);

#endif
