/*
 * Internal to diff.c and diff_numeric.c: the comparison being built. Not
 * part of the public API.
 */
#ifndef STF_PIPELINE_DIFF_INTERNAL_H
#define STF_PIPELINE_DIFF_INTERNAL_H

#include "pipeline/run_internal.h"

struct stf_diff {
    stf_diff_tensor_info *tensors;
    size_t ntensors, tcap;
    stf_diff_text *markers;     /* strings owned */
    size_t nmarkers, mcap;
    stf_diff_text *meta;        /* strings borrowed from the checkpoints */
    size_t nmeta, metacap;
    stf_diff_numeric_info *numeric;  /* why owned, prefix borrowed from the model of A */
    size_t nnumeric, ncap;
    stf_model *ma, *mb;         /* owned: layer prefixes point into them */
};

/* Progress of one stf_diff_run: bytes read of `total`. */
typedef struct stf__diff_progress {
    const stf_diff_opts *o;
    uint64_t done, total;
} stf__diff_progress;

/* Report `add` more bytes done while at `what` (what_len bytes). */
void stf__diff_tick(stf__diff_progress *pg, uint64_t add, const char *what, size_t what_len);

/* The layers diff_numeric compares: layer ia of A (and its match in B,
 * *ib) with a weight on both sides and a marker or a quantized weight on
 * either. */
int stf__diff_numeric_wanted(size_t *ib, const stf_model *ma, size_t ia, const stf_model *mb);

/* Weight bytes of layer li (0 when it has none). */
uint64_t stf__diff_weight_bytes(const stf_model *m, size_t li);

/* The numeric comparison of every wanted layer into d->numeric (diff_numeric.c).
 * 0, or STF_EIO / STF_ENOMEM (a layer that cannot be decoded is a result). */
int stf__diff_numeric(stf_diff *d, const stf_model *ma, const stf_model *mb,
                      const stf_diff_opts *o, stf__diff_progress *pg, stf_err *err);

#endif
