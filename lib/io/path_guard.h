/*
 * The part of the output guard that is about paths and files (path_guard.c):
 * what is at an output name and whether a writer may rename a finished
 * file over it, whether that name is one of the input files (by device and
 * inode), whether the directory can be written, and whether the name, with
 * its temporary's around it, fits the file system's limits. It knows no
 * checkpoint and no write options: the container's output guard turns
 * those into the plain parameters here. Internal to the I/O layer and the
 * layers above it.
 */
#ifndef STF_IO_PATH_GUARD_H
#define STF_IO_PATH_GUARD_H

#include <stddef.h>

#include "io/io_internal.h"

/*
 * The input files by device and inode, sorted: made once per check, so
 * that each output name costs one binary search rather than a stat of
 * every input file. `single_file`: the inputs are one file and no index,
 * which an in-place writer may replace (stf__out_check_name). Free with
 * stf__out_inputs_free; a zeroed one holds no inputs.
 */
typedef struct stf__out_inputs {
    struct stf__out_in *v;
    size_t n;
    int single_file;
} stf__out_inputs;

/*
 * The inputs for files given by path (n of them; a NULL one, or one that
 * cannot be stat'ed, is left out: a file that cannot be stat'ed cannot be
 * replaced by us through another name either). The paths are borrowed and
 * must outlive ids. single_file is 0. Only STF_ENOMEM can fail.
 */
int stf__out_inputs_paths(stf__out_inputs *ids, const char *const *paths, size_t n,
                          stf_err *err);
void stf__out_inputs_free(stf__out_inputs *ids);

/* Flags of stf__out_check_name. */
enum {
    /* An in-place writer: the input's single file (ids->single_file), named
     * directly and not through a symlink, may be replaced. */
    STF__OUT_REPLACE_INPUT = 1
};

/*
 * May a writer rename a finished file over `path`? 0 when nothing is there,
 * a dangling symlink is there, or a regular file (or a symlink to one) that
 * is not one of `ids` (may be NULL: no inputs), the in-place exception of
 * `flags` aside. STF_EINVAL naming the path and what is there otherwise;
 * STF_EIO when the path cannot be examined.
 */
int stf__out_check_name(const char *path, unsigned flags, const stf__out_inputs *ids,
                        stf_err *err);

/*
 * Check with stf__out_check_name every entry of the directory `dir` whose
 * name `match` accepts (the names a writer of `path` could take there):
 * one pass over the directory. STF_EIO naming `path` when the directory
 * cannot be listed.
 */
int stf__out_check_names_in(const char *dir, const char *path,
                            int (*match)(const char *name, void *ud), void *ud, unsigned flags,
                            const stf__out_inputs *ids, stf_err *err);

/* The output directory `dir` of `path` exists, is a directory, and may be
 * written; else STF_EIO naming both. */
int stf__out_check_dir(const char *path, const char *dir, stf_err *err);

/* The longest file name `dir` takes: pathconf's, else NAME_MAX. */
size_t stf__out_name_max(const char *dir);

/*
 * The file `base` in `dir`, one of output `path`'s files (`what` says
 * which, for the message: "the file name", "the index name", ...), can be
 * written by way of its temporary (".NAME.stfix-XXXXXX"): that name fits
 * `max` bytes and its path PATH_MAX. 0, or STF_EINVAL naming the path, the
 * length, the limit and by how much to shorten it.
 */
int stf__out_name_fits(const char *path, const char *dir, const char *base, const char *what,
                       size_t max, stf_err *err);

/*
 * Whether a writer can make `path` by way of its temporary file:
 * stf__out_name_fits for its own name in its directory.
 */
int stf__out_check_length(const char *path, stf_err *err);

#endif
