/*
 * The output guard's internal half (the public stf_output_check is in
 * container.h): what the write options and the input checkpoint make of
 * the I/O layer's checks of paths and files (io/path_guard.h). The
 * per-output lock that a writer holds for the whole write is the I/O
 * layer's too (out_lock.h). Internal to the container layer.
 */
#ifndef STF_OUT_GUARD_H
#define STF_OUT_GUARD_H

#include "container/container_internal.h"
#include "io/path_guard.h"
#include "io/out_lock.h"

/*
 * The input checkpoint's files (shards and index) for the I/O layer's
 * checks (io/path_guard.h), single_file when it is one file and no index.
 * `in` may be NULL (no inputs). Only STF_ENOMEM can fail. Free with
 * stf__out_inputs_free.
 */
int stf__out_inputs_make(stf__out_inputs *ids, const stf_ckpt *in, stf_err *err);

/* The flags of stf__out_check_name that write options `o` (may be NULL)
 * ask for. */
unsigned stf__out_flags(const stf_write_opts *o);

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
