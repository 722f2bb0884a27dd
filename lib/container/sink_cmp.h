/*
 * The target of a comparing sink (stf__sink_open_cmp, over the I/O
 * layer's stf__sink_open_check): the existing file a re-run is checked
 * against, read as a checkpoint to find where each tensor's bytes lie. Every byte the writer would write is compared
 * on the spot with the file's byte that must equal it, and nothing is kept
 * but one flag per range, so checking an output of any size costs bounded
 * buffers plus the layout. Internal to the container layer.
 */
#ifndef STF_SINK_CMP_H
#define STF_SINK_CMP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "container/container_internal.h"

/* One range of the file being made: the header, or one tensor's bytes. */
typedef struct stf__cmp_seg {
    uint64_t at, len;      /* where the writer puts it */
    uint64_t to;           /* where the existing file holds the bytes to compare with */
    const char *name;      /* the tensor (not owned; the writer's); "" for the header */
    size_t name_len;
    /* NULL: compared at `to`. Else why there is nothing to compare with
     * ("missing", "dtype", "shape", or "unmapped" when the file is no
     * checkpoint): its bytes count as different. */
    const char *what;
    atomic_int differs;    /* some byte was not the file's */
} stf__cmp_seg;

typedef struct stf__cmp {
    int fd;                /* the existing file, -1 when it cannot be opened */
    int open_errno;        /* why not */
    uint64_t size;         /* its size at open */
    stf_ckpt *ckpt;        /* it opened as a checkpoint (safetensors targets); else NULL */
    stf_err ckpt_err;      /* why it did not */
    unsigned char *used;   /* per tensor of ckpt: some seg maps to it */
    stf__cmp_seg *seg;     /* sorted by `at`, contiguous from 0 */
    size_t nseg;
    _Atomic uint64_t compared; /* bytes compared (equal or not) */
} stf__cmp;

/*
 * The target for the file being made at `path`: `data_start` header bytes
 * (compared at the same offsets), then, when `safetensors`, the n tensors
 * `t` (canonical order, begin/end relative to the data section at
 * data_start), each compared with the tensor of the same name, dtype and
 * shape in the existing file opened as a checkpoint, wherever it lies
 * there. A file that is missing or does not open is not an error: the
 * target records it. Errors: STF_ENOMEM.
 */
int stf__cmp_new(stf__cmp **out, const char *path, uint64_t data_start,
                 const stf_tensor_info *t, size_t n, int safetensors, stf_err *err);
void stf__cmp_free(stf__cmp *c);

/*
 * Compare the n bytes `p` the writer puts at `at` with the file's; safe
 * from several threads at once. A short file counts as different. STF_EIO
 * (naming `path` and the byte) when the file cannot be read; STF_ENOMEM.
 */
int stf__cmp_bytes(stf__cmp *c, const char *path, uint64_t at, const void *p, size_t n,
                   stf_err *err);

/*
 * Open `s` as a sink that compares every byte it is given with the file
 * `cmp` describes (stf__sink_open_check with this target's operations);
 * the sink owns cmp from here on, also on failure. STF_ENOMEM only.
 */
int stf__sink_open_cmp(stf__sink *s, const char *final_path, stf__cmp *cmp, stf_err *err);

/*
 * Whether the made file of `size` bytes equals the existing one: every
 * range compared at its own offset and equal, every byte compared, the
 * same size.
 */
int stf__cmp_identical(const stf__cmp *c, uint64_t size);

#endif
