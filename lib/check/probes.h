/*
 * What the numeric profile learns about one layer, as data: the N1/N2
 * counts of each scale tensor, N3, and the H1 and H2 results, each tensor
 * read once. Computing it touches no shared state, so layers run in
 * parallel (probe_report.c); the findings are then added in layer order.
 * Internal to the check layer.
 */
#ifndef STF_CHECK_PROBES_H
#define STF_CHECK_PROBES_H

#include <stdint.h>

#include "stfix/check.h"
#include "stfix/experimental/check.h"
#include "check/probe_scan.h"

#define STF__PROBE_SCALES 4 /* weight_scale, input_scale, weight_scale_2, s_channel */

/* N1 / N2 over one scale tensor (F32, F16 or BF16; others are not read). */
typedef struct stf__scale_probe {
    int probed;
    uint64_t nonfinite, nonpos, first_nf, first_np; /* counts, element index of the first */
    float nf_val, np_val;                           /* the first values */
} stf__scale_probe;

typedef struct stf__layer_probe {
    stf__scale_probe scale[STF__PROBE_SCALES];
    int empty;        /* N3: the weight has no elements (H1 and H2 not run) */
    int h1_run;       /* H1 ran (int8_tensorwise, convrot_w4a4, square FP8) */
    int w4;           /* ... on packed int4 codes */
    stf_h1_result h1;
    int h2_run;       /* H2 ran (int8_tensorwise) */
    stf_h2_result h2;
} stf__layer_probe;

/*
 * Whether H1 reports verdict v as an error: codes quantized per column
 * (stfix-defects(7), ROW AND COLUMN DETECTION), which every consumer reads
 * per row. The plan of a repair recipe counts such a layer as refused.
 */
int stf__h1_is_error(stf_probe_verdict v);

/* The suffix of scale slot j (STF_SFX_WEIGHT_SCALE, ...). */
stf_suffix stf__probe_scale_suffix(unsigned j);

/*
 * stf_probe_h1 (check.h) reading at most `block` bytes of the weight at a
 * time (0: 128 KiB; at least one group of a row): the same result for
 * any block. For callers that bound memory (plan under fix --max-mem).
 */
int stf__probe_h1_block(stf_h1_result *out, const stf_ckpt *c, const stf_model *m,
                        const stf_layer *l, int w4, double tau, size_t block, stf_err *err);

/*
 * The H1 result of an INT8 or FP8 weight wi (rank 2, at least one
 * element) with scale si, not packed int4: from the counts acc gathered over rows
 * another pass read (probe_scan.h), or, when acc is NULL or missed rows,
 * from a scan of the weight; either way what stf_probe_h1 gives for the
 * layer. Errors: the scan's.
 */
int stf__probe_h1_rows(stf_h1_result *out, const stf_ckpt *c, size_t wi, size_t si,
                       stf__h1_acc *acc, double tau, stf_err *err);

/*
 * Probe layer l of m (opened from c) with H1 threshold tau. Errors:
 * STF_ENOMEM, or a read or conversion error of a tensor.
 */
int stf__probe_layer(stf__layer_probe *out, const stf_ckpt *c, const stf_model *m,
                     const stf_layer *l, double tau, stf_err *err);

#endif
