/*
 * stfix EXPERIMENTAL API, pipeline layer: a plan's layer records read one
 * at a time, batches over many checkpoints (discovery, manifests, shard
 * selection, one report line per checkpoint) and verification of an output
 * by re-running its conversion in memory.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_PIPELINE_H
#define STFIX_EXPERIMENTAL_PIPELINE_H

#include "../pipeline.h"
#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- plans */

/*
 * Layer record i of a plan without keeping it: *out as stf_plan_layer
 * gives it, except that its output prefix and summary, where the plan does
 * not hold them as they are, are made in `buf`: the output prefix
 * (out->out_prefix_len bytes and a NUL), then the summary and a NUL.
 * stf_plan_layer keeps every record it is asked for until the plan is
 * freed; a program that lists a plan of very many layers reads them this
 * way, one at a time. Returns the bytes of buf the two need (0: none);
 * when that is more than cap, out->out_prefix and out->summary are NULL
 * and buf is not written: ask again with a buffer that large. SIZE_MAX
 * when i is out of range, p or out is NULL, or memory ran out.
 */
STF_EXPERIMENTAL_API
size_t stf_plan_layer_peek(const stf_plan *p, size_t i, stf_plan_layer_info *out, char *buf,
                           size_t cap);

/* ----------------------------------------------------------- discovery */

/* One checkpoint of a batch. Strings owned by the list. */
typedef struct stf_batch_item {
    char *input;      /* the path to open: a .safetensors file or an *.index.json */
    char *rel;        /* its path relative to its root: the --shard key, and
                       * where its output goes under the output directory */
    char *output;     /* a manifest's "output", else NULL (OUTDIR/rel) */
    char *recipe;     /* a manifest's "recipe", else NULL (the batch's) */
    int sharded;      /* input is an index: the index and its shards are one */
    size_t line;      /* its manifest line (from 1), 0 when discovered */
} stf_batch_item;

typedef struct stf_batch_list {
    stf_batch_item *v;
    size_t n;
} stf_batch_list;

/*
 * The checkpoints under `roots`, in order: a root that is a file is one
 * checkpoint (rel: its base name); a directory is walked recursively, the
 * entries of each directory in byte order of their names, taking every
 * *.safetensors (or zstd-compressed *.safetensors.zst) file and every
 * *.index.json as a checkpoint, except the
 * shards an index in the same directory names (they belong to it). Names
 * starting with '.' are passed over, symlinks to directories are not
 * followed, and `skip_dir` (may be NULL; e.g. the output directory) is not
 * entered. A *.safetensors entry that cannot be opened (a dangling link) is
 * still listed, so its failure is reported. STF_ENOTFOUND names a root
 * that does not exist, STF_EIO a root or directory that cannot be read;
 * STF_EINVAL a root file that is neither.
 */
STF_EXPERIMENTAL_API
int stf_batch_discover(stf_batch_list *out, const char *const *roots, size_t nroots,
                       const char *skip_dir, stf_err *err);

/*
 * Read a JSON Lines manifest: one object per non-blank line with "input"
 * (a string) and optionally "output" and "recipe" (strings), no other key.
 * Relative "input" and "recipe" paths are taken from the manifest's
 * directory (a "recipe" NAME, without '/' or a .yaml/.yml suffix, is kept
 * as it is, for the recipe search path); rel is "input" as written (less a leading "./" or "/");
 * a relative "output" is kept as written, to be taken from the output
 * directory (stf_batch_output_path), and each item records its line.
 * STF_EFORMAT names the file and line of the first bad one; STF_ENOTFOUND
 * when it does not exist; STF_EIO when it cannot be read or is not a
 * regular file (it is opened without blocking: a FIFO cannot hold it).
 */
STF_EXPERIMENTAL_API
int stf_batch_manifest_read(stf_batch_list *out, const char *path, stf_err *err);

STF_EXPERIMENTAL_API
void stf_batch_list_free(stf_batch_list *l);

/*
 * Which of n shards (1..n) the checkpoint with relative path `rel` belongs
 * to: the first 8 bytes of SHA-256(rel), big-endian, modulo n, plus 1. The
 * same on every machine, so n runs split a set exactly.
 */
STF_EXPERIMENTAL_API
unsigned stf_batch_shard_of(const char *rel, unsigned n);

/*
 * The output path of `it` under `outdir`: it->output (relative ones under
 * outdir) or outdir/rel; a sharded checkpoint's path loses ".index.json"
 * (it is the writer's STEM path, which adds the index and shards), and a
 * compressed one's ".zst" (outputs are written uncompressed).
 * Allocated (free with free()); NULL when out of memory.
 */
STF_EXPERIMENTAL_API
char *stf_batch_output_path(const stf_batch_item *it, const char *outdir);

/*
 * The shard size an output of `c` is split at: 0 (one file) for a single
 * file, else the size of its largest shard file, so a sharded set is
 * written sharded alike.
 */
STF_EXPERIMENTAL_API
uint64_t stf_batch_shard_size(const stf_ckpt *c);

/*
 * The bytes of the files of `it` (the file, or an index and the shards it
 * names), as its result's bytes_read will count them; a file that cannot
 * be read counts 0. For a progress total before the batch runs.
 */
STF_EXPERIMENTAL_API
uint64_t stf_batch_item_size(const stf_batch_item *it);

/* -------------------------------------------------------- one checkpoint */

typedef enum stf_batch_status {
    STF_BATCH_FIXED = 0,  /* repaired and verified, output written */
    STF_BATCH_COMPLIANT,  /* nothing to repair */
    STF_BATCH_FAILED,     /* unreadable, refused, or still non-compliant */
    STF_BATCH_SKIPPED     /* needs repair, but this is a dry run */
} stf_batch_status;

/* "fixed", "compliant", "failed", "skipped"; NULL out of range. */
STF_EXPERIMENTAL_API
const char *stf_batch_status_name(stf_batch_status s);

/* The layout of stf_batch_opts this header describes. */
#define STF_BATCH_OPTS_VERSION 4u

typedef struct stf_batch_opts {
    unsigned version;      /* STF_BATCH_OPTS_VERSION, set by stf_batch_opts_init */
    stf_pool *pool;        /* check, plan and run share it; NULL = inline */
    uint64_t max_mem;      /* requantization working set (0: the run's default) */
    int dry_run;           /* check and plan only: nothing is written */
    int link_compliant;    /* a compliant checkpoint is hard-linked (else copied)
                            * to its output path; without it, nothing is */
    const char *recipe_path; /* the recipe's path as the report names it */
    /* Leave the result incomplete until stf_batch_result_complete: its
     * inputs may still be being hashed, its outputs are not hashed yet,
     * and it has no line (stf_batch_result_line NULL) nor byte counts. */
    int defer_output_hash;
    /* A result to complete on a helper thread while this checkpoint runs
     * (NULL: none), so hashing one checkpoint's files overlaps converting
     * the next. */
    struct stf_batch_result *complete;
    /* Version 2: a fixed checkpoint is written zstd-compressed, as the
     * stf_write_opts fields of the same names say (stfix(1), COMPRESSED
     * FILES); out_path then ends in ".zst" (".stz" with zstd_grouped), and
     * a --link-compliant link keeps the name without it. 0: uncompressed. */
    int zstd_level;
    uint64_t zstd_frame;
    int zstd_grouped;
    int zstd_verify;
    /* Version 3: non-NULL when the batch refused out_path
     * (stf_batch_paths_output): the checkpoint's files are hashed, and its
     * result is failed with this error; nothing is opened or written. */
    const stf_err *refused;
    /* Version 3 too: a compliant checkpoint (one the recipe leaves unchanged,
     * stf_plan_changed 0, with no error-severity finding) is copied to its
     * output path, never hard-linked; without it or link_compliant,
     * nothing is written for it. */
    int copy_compliant;
    /* Version 3 too: no file is read to be hashed: the report line's "sha256"
     * and "autov2" are null and its sizes come from stat (stfix batch
     * --hash none). */
    int no_hash;
    /* Version 4: the input opened already by the caller (stf_ckpt_open of
     * the item's input with the default open options), for a caller that
     * reads several inputs' headers ahead at once (stfix batch
     * --net-jobs): stf_batch_run_item takes it, whatever it returns, and
     * frees it. open_error instead: the error that opening it gave, the
     * checkpoint's failure as its own open's would be. Both NULL: the call
     * opens the input itself. */
    stf_ckpt *opened;
    const stf_err *open_error;
} stf_batch_opts;

STF_EXPERIMENTAL_API
void stf_batch_opts_init_version(stf_batch_opts *o, unsigned version);
#define stf_batch_opts_init(o) stf_batch_opts_init_version((o), STF_BATCH_OPTS_VERSION)

typedef struct stf_batch_result stf_batch_result;

/*
 * One checkpoint of a batch: hash its files (on a helper thread, while the
 * rest goes on), open, check against the
 * recipe's targets, plan; when the plan changes the checkpoint
 * (stf_plan_changed) or an error-severity finding is present, run the plan into `out_path` (stf_batch_output_path; its
 * directories are made), which verifies before publishing; hash the files
 * written. Any failure of the checkpoint is its result (status failed, the
 * error kept) and leaves nothing at out_path; the return value is non-zero
 * only when no result could be made (STF_ENOMEM, STF_EINVAL for NULLs).
 */
STF_EXPERIMENTAL_API
int stf_batch_run_item(stf_batch_result **out, const stf_batch_item *it, const char *out_path,
                       const stf_recipe *r, const stf_batch_opts *o, stf_err *err);

/*
 * Complete a result made with defer_output_hash: wait for its inputs'
 * hashes, hash its outputs and make its line; no-op for a complete one.
 * STF_ENOMEM.
 */
STF_EXPERIMENTAL_API
int stf_batch_result_complete(stf_batch_result *r, stf_err *err);

STF_EXPERIMENTAL_API
void stf_batch_result_free(stf_batch_result *r);
STF_EXPERIMENTAL_API
stf_batch_status stf_batch_result_status(const stf_batch_result *r);
/*
 * The report line, one JSON object without the newline: "input",
 * "input_files" ([{"path", "sha256", "autov2"}]: autov2 is the first 10
 * digits of sha256, both null when not hashed), "output" (null when nothing was
 * written), "output_files", "recipe", "recipe_sha256", "stfix_version",
 * "status", "error" ({"rule", "message"} or null), "findings_before" and
 * "findings_after" ({RULE: count}, ids sorted), "actions" ([{"layer",
 * "actions": [NAME...]}] for the layers the plan changes), "bytes_read",
 * "bytes_written" (sizes of the files read and written) and "seconds";
 * for an input read over the network, "network" ({"bytes", "requests"}:
 * stf_ckpt_network's figures from the checkpoint's open to the end of its
 * run, its pool's threads included, as stf_batch_result_network gives
 * them) last, when it made any request: the checkpoint's alone, whatever
 * thread opened it and whatever other inputs are read meanwhile. A URL
 * input is never hashed: its sha256
 * and autov2 are null.
 */
STF_EXPERIMENTAL_API
const char *stf_batch_result_line(const stf_batch_result *r);
/* 1 when the checkpoint's input was read over the network with at least
 * one request, *bytes and *requests (either may be NULL) then the bytes
 * received and requests made for it; 0, both 0, otherwise. */
STF_EXPERIMENTAL_API
int stf_batch_result_network(const stf_batch_result *r, uint64_t *bytes, uint64_t *requests);
/* The failure of a failed checkpoint (rule may be empty), else NULL. */
STF_EXPERIMENTAL_API
const stf_err *stf_batch_result_error(const stf_batch_result *r);
STF_EXPERIMENTAL_API
uint64_t stf_batch_result_bytes_read(const stf_batch_result *r);
STF_EXPERIMENTAL_API
uint64_t stf_batch_result_bytes_written(const stf_batch_result *r);
STF_EXPERIMENTAL_API
double stf_batch_result_seconds(const stf_batch_result *r);

/* ------------------------------------------------ where a batch writes */

/*
 * What a batch may write, decided before any work: its outputs stay under
 * the output directory and out of the input trees, no output or report
 * replaces a file of any checkpoint of the batch, and the report replaces
 * none of the outputs. Paths are compared resolved: the part that exists
 * through its symlinks and "..", the part still to be made as spelt, so
 * "a/../../x" and a symlinked directory inside the output directory that
 * points outside are seen for what they are. Files are compared by device
 * and inode, as the output guard does (stf_output_check).
 */
typedef struct stf_batch_paths stf_batch_paths;

/*
 * Start the decisions for the batch `all` (every checkpoint, whichever
 * --shard share runs) writing under `outdir`, its checkpoints found under
 * `roots` (nroots; NULL and 0 for a manifest, whose path `manifest` then
 * names refused lines in messages). STF_EINVAL, before anything is
 * written, when outdir is one of the roots that are directories or lies
 * inside one, or when a root lies inside outdir and an output would land
 * inside that root (a later batch over it would take the output for an
 * input). `allow_outside`: outputs may lie outside outdir (the output
 * guard still applies to each). The list must outlive the result.
 * STF_ENOMEM, STF_EIO when the working directory cannot be had.
 */
STF_EXPERIMENTAL_API
int stf_batch_paths_new(stf_batch_paths **out, const stf_batch_list *all, const char *outdir,
                        const char *const *roots, size_t nroots, const char *manifest,
                        int allow_outside, stf_err *err);

/*
 * May the batch write item `it` to `out_path` (stf_batch_output_path, with
 * the compressed suffix when o asks for zstd)? Checks, without creating
 * anything: out_path lies inside the output directory (unless allowed
 * otherwise); the output guard's rules for every name the output may take
 * (and, with o->link_compliant, the names of its links), with every file
 * of every checkpoint of the batch as the inputs. 0 records the output for
 * stf_batch_paths_report. STF_EINVAL naming the path (and, for a manifest
 * item, the manifest and line) when refused; STF_EIO when a path cannot be
 * examined; STF_ENOMEM.
 */
STF_EXPERIMENTAL_API
int stf_batch_paths_output(stf_batch_paths *bp, const stf_batch_item *it, const char *out_path,
                           const stf_batch_opts *o, stf_err *err);

/*
 * May the batch write its report at `path`? The output guard's rules (never
 * a file of a checkpoint of the batch however spelt, never a directory,
 * device, FIFO or socket; the directory, when it exists, writable), and it
 * is none of the names the outputs recorded so far may take. With
 * `resume` (the report is read first), a symlink there must point to a file
 * of this process's own user. STF_EINVAL when refused, STF_EIO when the
 * path cannot be examined.
 */
STF_EXPERIMENTAL_API
int stf_batch_paths_report(const stf_batch_paths *bp, const char *path, int resume,
                           stf_err *err);

STF_EXPERIMENTAL_API
void stf_batch_paths_free(stf_batch_paths *bp);

/* ------------------------------------------------------ the report file */

/*
 * The report file of a batch, written as every output is: never opened
 * where it stands. stf_batch_report_start puts a new file holding `lines`
 * (n lines, each without its newline: the lines a --resume keeps) at
 * `path` by a temporary file and a rename, replacing what is there (a
 * symlink is replaced itself); each stf_batch_report_append then adds a
 * line to that file and fsyncs it, so a batch killed at any moment leaves
 * every finished line; stf_batch_report_end replaces it, again by rename,
 * with its final lines. Check the path first (stf_batch_paths_report).
 * STF_EIO naming the path; STF_ENOMEM.
 */
typedef struct stf_batch_report stf_batch_report;

STF_EXPERIMENTAL_API
int stf_batch_report_start(stf_batch_report **out, const char *path, const char *const *lines,
                           size_t n, stf_err *err);
STF_EXPERIMENTAL_API
int stf_batch_report_append(stf_batch_report *r, const char *line, stf_err *err);
STF_EXPERIMENTAL_API
int stf_batch_report_end(stf_batch_report *r, const char *const *lines, size_t n, stf_err *err);
STF_EXPERIMENTAL_API
void stf_batch_report_free(stf_batch_report *r);

/*
 * Read a report's complete lines (a last line without its newline, which a
 * kill cut short, is left out) into *lines: n of them, each without its
 * newline, then a NULL (free with stf_batch_report_lines_free). The file is
 * opened without blocking and must be a regular file: STF_ENOTFOUND when it
 * does not exist, STF_EIO when it cannot be read or is not a regular file (a
 * FIFO, a device, a directory), STF_ENOMEM.
 */
STF_EXPERIMENTAL_API
int stf_batch_report_read(char ***lines, size_t *n, const char *path, stf_err *err);
STF_EXPERIMENTAL_API
void stf_batch_report_lines_free(char **lines);

/* ------------------------------------------------------ report lines */

/* A report line read back. Strings owned by it. */
typedef struct stf_batch_line {
    char *input, *output, *recipe, *recipe_sha256; /* output NULL when none */
    stf_batch_status status;
    size_t ninputs;
    char **input_paths;
    char (*input_sha256)[65];
    double seconds;
} stf_batch_line;

/*
 * Parse one report line (len bytes). STF_EFORMAT when it is not an object
 * with the fields stf_batch_result_line writes (a line cut short by a kill
 * is one).
 */
STF_EXPERIMENTAL_API
int stf_batch_line_parse(stf_batch_line *out, const char *text, size_t len, stf_err *err);
STF_EXPERIMENTAL_API
void stf_batch_line_free(stf_batch_line *l);

/*
 * Whether the line's work still stands: its status is fixed or compliant,
 * recipe_sha256 is the line's, and every input file still has the sha256
 * it records. *same gets 1 or 0; an input that cannot be read counts as
 * changed.
 */
STF_EXPERIMENTAL_API
int stf_batch_line_current(int *same, const stf_batch_line *l, const char *recipe_sha256,
                           stf_err *err);

/* --------------------------------------------------------------- verify */

/* One file the conversion makes. */
typedef struct stf_verify_file {
    const char *path;      /* its path in the output */
    /* sha256 of the bytes the conversion makes; "" when unknown: a
     * safetensors file's is known only when it is identical (its bytes
     * are compared, not kept) */
    char expected[65];
    char actual[65];       /* sha256 of the file there; "" when it is missing */
} stf_verify_file;

/* One difference, in the output file `file`. */
typedef struct stf_verify_diff {
    const char *file;
    const char *tensor;    /* tensor_len bytes (may hold U+0000); "" for the header */
    size_t tensor_len;
    const char *what;      /* "missing" (not in the output), "extra" (only in
                            * the output), "dtype", "shape", "data", "header"
                            * (metadata or layout), "unreadable" */
    /* Appended. "unreadable": why, as the reader said it without the path
     * (NULL otherwise), and where: has_offset, then offset is the byte of
     * the file (of a compressed file, the compressed byte) it failed at. */
    const char *detail;
    int has_offset;
    uint64_t offset;
} stf_verify_diff;

typedef struct stf_verify_report stf_verify_report;

/*
 * Re-run the conversion of plan `p`, writing nothing, and compare each
 * file it makes with the file of the same name at `out_path` (as
 * stf_plan_run names them; o->max_shard_size as when it was written).
 * Each byte made is compared as it is made with the output's (a tensor's
 * with the same tensor's, wherever the output holds it), in bounded
 * buffers: memory does not grow with the output's size. A compressed
 * output (".zst", ".stz") is instead made into anonymous memory files as
 * large as its uncompressed form and compared by the sha256 of what it
 * restores to, then tensor by tensor. It also reads the output's stamped
 * stfix.recipe_sha256. Errors are those of the conversion; differences
 * are in the report.
 */
STF_EXPERIMENTAL_API
int stf_plan_verify(stf_verify_report **out, const stf_plan *p, const char *out_path,
                    const stf_run_opts *o, stf_err *err);
STF_EXPERIMENTAL_API
void stf_verify_report_free(stf_verify_report *r);
/* 1 when every file is identical and the stamp matches the plan's recipe. */
STF_EXPERIMENTAL_API
int stf_verify_ok(const stf_verify_report *r);
STF_EXPERIMENTAL_API
size_t stf_verify_file_count(const stf_verify_report *r);
STF_EXPERIMENTAL_API
const stf_verify_file *stf_verify_file_at(const stf_verify_report *r, size_t i);
STF_EXPERIMENTAL_API
size_t stf_verify_diff_count(const stf_verify_report *r);
STF_EXPERIMENTAL_API
const stf_verify_diff *stf_verify_diff_at(const stf_verify_report *r, size_t i);
/* The output's stfix.recipe_sha256 (first file), NULL when it has none. */
STF_EXPERIMENTAL_API
const char *stf_verify_stamp(const stf_verify_report *r);
/* 1 when the stamp equals the recipe's sha256. */
STF_EXPERIMENTAL_API
int stf_verify_stamp_ok(const stf_verify_report *r);

/* -------------------------------------------------------- dequantize */

/*
 * The weight of layer li of `m` (stf_model_layer) read as f32, as stored:
 * *n rows of *k values, decoded the way `exclude` and `stfix diff
 * --numeric` decode it (stfix-convrot(7), DEQUANTIZATION: INT8 codes times
 * their scales with the rotation undone, FP8 times its scale, W4A4
 * unpacked, float weights widened exactly). stf_layer_dequant_shape gives
 * the shape; stf_layer_dequantize fills dst, which holds count == n * k
 * floats, reading the weight in blocks of rows (on `pool`, which may be
 * NULL; the values do not depend on it). Errors: STF_EFORMAT naming the
 * layer when it has no weight or one stfix does not decode,
 * STF_EUNSUPPORTED, STF_EINVAL (a count that is not n * k, li out of
 * range), STF_EIO from a read, STF_ENOMEM.
 */
STF_EXPERIMENTAL_API
int stf_layer_dequant_shape(uint64_t *n, uint64_t *k, const stf_model *m, size_t li,
                            stf_err *err);
STF_EXPERIMENTAL_API
int stf_layer_dequantize(float *dst, size_t count, const stf_model *m, size_t li, stf_pool *pool,
                         stf_err *err);

#ifdef __cplusplus
}
#endif
#endif
