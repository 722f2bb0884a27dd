/*
 * stfix EXPERIMENTAL API, check layer: the per-layer numeric probes, and
 * a report read a finding at a time.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_CHECK_H
#define STFIX_EXPERIMENTAL_CHECK_H

#include "../check.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ probes */

typedef struct stf_h1_result {
    int probed;          /* 0: the layer is not I8 or FP8 rank 2 with a scale (UNKNOWN) */
    stf_probe_verdict verdict;
    double fr, fc;       /* saturated fraction of non-empty rows / columns */
    uint64_t rows_ne, rows_sat, cols_ne, cols_sat;
    unsigned sat;        /* saturation threshold used: 126 (INT8), 7 (W4A4), or the
                          * largest code 0x7E (F8_E4M3) or 0x7B (F8_E5M2) */
} stf_h1_result;

/*
 * The H1 row/column detector on layer `l` of model `m` (built from `c`):
 * reads P.weight row by row (O(K) memory). `w4` != 0 reads the weight as
 * packed int4 pairs (convrot_w4a4); an FP8 weight is read as FP8 codes
 * whatever w4 says (stfix-defects(7), ROW AND COLUMN DETECTION). tau <= 0
 * means 0.99. A layer without an I8 or FP8 rank-2 weight and a scale
 * (weight_scale, or scale_weight for FP8) gives probed = 0, verdict
 * UNKNOWN, return 0.
 * Errors: STF_ENOMEM, STF_EIO (tensor bytes unreadable).
 */
STF_EXPERIMENTAL_API
int stf_probe_h1(stf_h1_result *out, const stf_ckpt *c, const stf_model *m,
                 const stf_layer *l, int w4, double tau, stf_err *err);

typedef struct stf_h2_result {
    int64_t group;          /* declared convrot_groupsize (0: no convrot or unreadable) */
    int declared_sylvester; /* G a power of 2 but not of 4: Sylvester by declaration */
    int probed;             /* the codes were scanned (I8 rank 2, G | K, G <= 4096) */
    double ratio;           /* energy at group position 0 / mean energy elsewhere */
    int evidence;           /* ratio >= 8 over >= 4 rows: data looks Sylvester-rotated */
} stf_h2_result;

/*
 * H2 on an INT8 ConvRot layer: the declaration (stfix-convrot(7),
 * SYLVESTER ORDER) and, for a power-of-4 G, the data evidence. The
 * evidence is a report only: the rotation is decided by the declared G
 * alone ("do not guess").
 * Errors: STF_ENOMEM, STF_EIO.
 */
STF_EXPERIMENTAL_API
int stf_probe_h2(stf_h2_result *out, const stf_ckpt *c, const stf_model *m,
                 const stf_layer *l, stf_err *err);

/* ------------------------------------------------------------ reports */

/*
 * Diagnostic i of a report without keeping its message: *out as
 * stf_check_diag gives it (its other strings the report's), except that
 * out->message is `buf` (NULL when cap is 0), holding the message cut to
 * cap - 1 bytes and a NUL. stf_check_diag keeps every message it is asked
 * for until the report is freed; a program that lists a report of very
 * many findings reads them this way, a message at a time. Returns the
 * message's whole length (a longer buffer is needed when it is cap or
 * more), or SIZE_MAX when i is out of range or r or out is NULL.
 */
STF_EXPERIMENTAL_API
size_t stf_check_diag_peek(const stf_check_report *r, size_t i, stf_diag *out, char *buf,
                           size_t cap);

/*
 * Where diagnostic i's layer first appears among the report's layers: 0
 * for a file-level finding, else 1 for the layer of the earliest finding
 * that names a layer, 2 for the next layer, and so on (layers compared by
 * all their bytes). SIZE_MAX when i is out of range. Grouping a report by
 * layer sorts on this number rather than on names.
 */
STF_EXPERIMENTAL_API
size_t stf_check_diag_layer_rank(const stf_check_report *r, size_t i);

#ifdef __cplusplus
}
#endif
#endif
