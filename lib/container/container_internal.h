/*
 * Internal interfaces of the container layer, shared between the header
 * parser (json_lex.c, header.c, validate.c), the checkpoint code (ckpt.c,
 * index.c) and the writer (header_text.c, writer.c, ...). Bytes come from
 * the I/O layer's sources (io/source.h), taken in here.
 * Not part of the public API.
 */
#ifndef STF_CONTAINER_INTERNAL_H
#define STF_CONTAINER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/container.h"
#include "stfix/experimental/container.h"
#include "io/fdcache.h"
#include "io/file_stamp.h"
#include "io/source.h"
#include "util/sha256.h"
#include "util/util.h"

/* ------------------------------------------------------------ findings */

/* A growable list of findings; every string in it is owned by the list. */
typedef struct stf__findings {
    stf_finding *v;
    size_t n, cap;
} stf__findings;

void stf__findings_init(stf__findings *l);
void stf__findings_free(stf__findings *l);
/*
 * Append a finding; path and the tensor name (tensor_len bytes, which may
 * hold U+0000) are copied (either may be NULL), the message is formatted.
 * Returns 0 or STF_ENOMEM.
 */
int stf__findings_add(stf__findings *l, const char *rule, stf_severity sev, const char *path,
                      const char *tensor, size_t tensor_len, int has_off, uint64_t off,
                      const char *fmt, ...) STF_PRINTF(9, 10);

/* ------------------------------------------------------------ options */

/*
 * *dst = the options *src (a version stf__opts_version accepted) in the
 * current layout: fields a version-1 caller could not set get their
 * defaults.
 */
void stf__open_opts_upgrade(stf_open_opts *dst, const stf_open_opts *src);

/* ------------------------------------------------------------ header */

/*
 * A parsed and validated header. Tensors are sorted by (begin, end), i.e.
 * file order; `shard` is 0. All strings and shapes live in memory owned by
 * the header.
 */
typedef struct stf__header {
    uint64_t n;              /* header length N */
    uint64_t data_size;      /* bytes of the data section (= cursor after S15-S18) */
    stf_tensor_info *tensors;
    size_t ntensors;
    int has_meta;            /* __metadata__ present (object, possibly empty) */
    stf_meta_entry *meta;    /* in header order */
    size_t nmeta;
    void *arena;             /* owned storage, implementation-defined */
} stf__header;

/*
 * S1-S3: check the framing of a file of `file_size` bytes whose first
 * min(8, file_size) bytes are `first`, and return N. `path` is for messages.
 */
int stf__frame_check(uint64_t *n_out, const uint8_t *first, uint64_t file_size,
                     const char *path, const stf_open_opts *o, stf_err *err);

/* A file_size for stf__header_parse: the file is as long as its header
 * declares (a zstd stream that does not record its size; S19 is then the
 * reader's, stf__source_settle). */
#define STF__SIZE_FROM_HEADER UINT64_MAX

/*
 * S4-S20: lex, parse and validate the N header bytes `hdr` of a file of
 * `file_size` bytes (or STF__SIZE_FROM_HEADER). REF violations (and STRICT
 * ones when o->strict) fail with STF_EFORMAT, err->rule set and err->offset
 * the absolute file offset (8 + position in the header). Warnings go to
 * `findings` (may be NULL). Caps from `o` fail with STF_ELIMIT.
 */
int stf__header_parse(stf__header **out, const uint8_t *hdr, uint64_t n, uint64_t file_size,
                      const char *path, const stf_open_opts *o, stf__findings *findings,
                      stf_err *err);

void stf__header_free(stf__header *h);

/* ------------------------------------------------------ canonical text */

/*
 * Append a JSON string literal (with quotes) using serde_json escaping
 * (lib/README.md, Canonical form) to b.
 */
int stf__json_put_string(stf_buf *b, const char *s, size_t n);

/* The caller's write options (NULL: the defaults) into *dst in the newest
 * layout: a version-1 caller's struct is read only as far as it goes.
 * The version must have been checked. writer.c */
void stf__write_opts_upgrade(stf_write_opts *dst, const stf_write_opts *src);

/* Bytes read from the checkpoint's files with pread so far, all shards
 * together (stf__source_read_total), for tests. */
uint64_t stf__ckpt_read_total(const stf_ckpt *c);

/*
 * Whether every file of c (each shard, compressed or not, and the index)
 * is still what it was when c opened it: same device, inode, size,
 * modification and status change times, looked up by name now. 0 when so
 * (and always for a checkpoint in memory, or NULL); otherwise STF_EIO
 * naming the first file that changed and how (file_stamp.h). A writer
 * calls it just before it publishes, so an output is never made of an
 * input that changed while it was read. ckpt.c
 */
int stf__ckpt_unchanged(const stf_ckpt *c, stf_err *err);

/*
 * Where tensor i of checkpoint c lives: its shard's source and the absolute
 * file offset of the tensor's first byte. For the writer's verbatim copy
 * (copy_file_range from stf__source_fd_acquire). STF_EINVAL when i is out
 * of range. ckpt.c
 */
int stf__ckpt_tensor_source(const stf_ckpt *c, size_t i, const stf__source **src,
                            uint64_t *file_off, stf_err *err);

/* Shard k's source (NULL when out of range). ckpt.c */
const stf__source *stf__ckpt_shard_source(const stf_ckpt *c, size_t shard);

/*
 * The checkpoint's findings list, for checks that add findings after open
 * (canonical form, S21-S25). ckpt.c
 */
struct stf__findings *stf__ckpt_findings(stf_ckpt *c);

/* The zstd readers' share of the open options. ckpt.c */
void stf__zread_opts_from(stf__zread_opts *dst, const stf_open_opts *o);

#endif
