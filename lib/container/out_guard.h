/*
 * The output guard's internal half (the public stf_output_check is in
 * container.h): checking one output name. The per-output lock that a
 * writer holds for the whole write is the I/O layer's (out_lock.h).
 * Internal to the container layer.
 */
#ifndef STF_OUT_GUARD_H
#define STF_OUT_GUARD_H

#include "container/container_internal.h"
#include "io/out_lock.h"

/*
 * The input checkpoint's files (shards and index) by device and inode,
 * sorted: made once per check, so that each output name costs one binary
 * search rather than a stat of every input file. `in` may be NULL (no
 * inputs). Only STF_ENOMEM can fail. Free with stf__out_inputs_free.
 */
typedef struct stf__out_inputs {
    struct stf__out_in *v;
    size_t n;
    const stf_ckpt *ckpt;
} stf__out_inputs;

int stf__out_inputs_make(stf__out_inputs *ids, const stf_ckpt *in, stf_err *err);
/*
 * As stf__out_inputs_make, for input files given by path (n of them; one
 * that cannot be stat'ed is left out): a batch's inputs, every file of every
 * checkpoint in it. The paths are borrowed and must outlive ids. Only
 * STF_ENOMEM can fail.
 */
int stf__out_inputs_paths(stf__out_inputs *ids, const char *const *paths, size_t n,
                          stf_err *err);
void stf__out_inputs_free(stf__out_inputs *ids);

/*
 * May a writer rename a finished file over `path`? 0 when nothing is there,
 * a dangling symlink is there, or a regular file (or a symlink to one) that
 * is not one of `ids` (the in-place exception aside: o->replace_input with a
 * single-file input named directly). STF_EINVAL naming the path and what is
 * there otherwise; STF_EIO when the path cannot be examined.
 */
int stf__out_check_name(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                        stf_err *err);

/*
 * Whether a writer can make `path` by way of its temporary file: the
 * temporary's name (".NAME.stfix-XXXXXX") fits the directory's file name
 * limit and its path PATH_MAX. 0, or STF_EINVAL naming the path, the
 * length and the limit (stf_output_check does the same, for shards too).
 */
int stf__out_check_length(const char *path, stf_err *err);

/*
 * stf_output_check with the input files in `ids` instead of o->input's
 * (o->input and o->replace_input are not looked at), and a directory that
 * does not exist yet passes, since nothing is there to replace (the writer
 * makes it, and checks again). The same errors as stf_output_check.
 */
int stf__output_check_ids(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                          stf_err *err);

/*
 * 1 when a writer of `out` with options `o` (may be NULL) may put a file at
 * `name`: `out` itself and, with o->max_shard_size, its index and any
 * STEM-N-of-M.safetensors shard name beside it; else 0. Both paths are
 * compared as spelt, so pass them resolved alike.
 */
int stf__out_takes_name(const char *out, const stf_write_opts *o, const char *name);

#endif
