/*
 * stfix EXPERIMENTAL API, check layer: the per-layer numeric probes, a
 * report read a finding at a time, and a report as JSON.
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

/* ------------------------------------------------------------ JSON */

/*
 * The order a report is listed in: order[0..stf_check_count(r)) gets the
 * findings' indices by their layer's rank (stf_check_diag_layer_rank:
 * file-level findings first, then each layer where it first appears),
 * report order kept within a layer. Linear in the findings. Errors:
 * STF_ENOMEM, STF_EINVAL (order NULL for a report with findings).
 */
STF_EXPERIMENTAL_API
int stf_check_diag_order(size_t *order, const stf_check_report *r, stf_err *err);

/*
 * One finding as the JSON object of stfix(1), JSON OUTPUT: {"rule",
 * "severity", "layer", "message", ("fix" when with_fix,) "effect"} on one
 * line, written through fn. Returns 0, STF_EIO when fn stopped it,
 * STF_ENOMEM, or STF_EINVAL for a NULL fn or d.
 */
STF_EXPERIMENTAL_API
int stf_check_diag_json(stf_text_fn fn, void *ud, const stf_diag *d, int with_fix);

/* "clean", "unchecked layers", "replicated" or "cannot load": what a
 * degree's summary says about the file at that degree (the worst that
 * applies); NULL for NULL. */
STF_EXPERIMENTAL_API
const char *stf_tp_verdict_name(const stf_tp_summary *s);

/* The parallel-style profile a report's "tp" member names (the program's
 * --tp-profile, given or detected). */
typedef struct stf_check_json_tp {
    const char *profile;   /* its name; NULL: none (null) */
    int detected;          /* detected from the layer names rather than given */
    size_t classified;     /* Linear layers it gives a style */
    size_t linear;         /* Linear layers (a 2-D weight) */
} stf_check_json_tp;

/* stf_check_report_json flag: JSON Lines, the document on one line. */
#define STF_CHECK_JSON_ONELINE 1u

/*
 * The document `stfix check --json` prints for one input, byte for byte,
 * its closing newline included: {"file", "target", "diagnostics" (in
 * stf_check_diag_order, one a line), "tp" (only when tp is not NULL: the
 * profile and each degree of stf_check_tp_summary), "summary"}. `file` and
 * `target` ("all", "sglang" or "comfyui") are written as given. With
 * STF_CHECK_JSON_ONELINE the layout's line breaks are left out (several
 * inputs, one document a line). The text goes to fn in pieces, in order;
 * each message is read when written (stf_check_diag_peek), so memory does
 * not grow with the findings' texts. Errors: STF_EIO when fn stopped it,
 * STF_ENOMEM, STF_EINVAL for a NULL argument.
 */
STF_EXPERIMENTAL_API
int stf_check_report_json(stf_text_fn fn, void *ud, const stf_check_report *r, const char *file,
                          const char *target, const stf_check_json_tp *tp, unsigned flags,
                          stf_err *err);

/* What crossed the network for a remote input: its document's "network"
 * member. */
typedef struct stf_check_json_net {
    uint64_t bytes;     /* response bytes received, retries and redirects included */
    uint64_t requests;  /* requests made */
} stf_check_json_net;

/*
 * stf_check_report_json with, when net is not NULL, the member
 * "network": {"bytes": N, "requests": M} after "summary" (stfix(1), JSON
 * OUTPUT: a remote input's document). net NULL: the same bytes as
 * stf_check_report_json.
 */
STF_EXPERIMENTAL_API
int stf_check_report_json_net(stf_text_fn fn, void *ud, const stf_check_report *r,
                              const char *file, const char *target, const stf_check_json_tp *tp,
                              const stf_check_json_net *net, unsigned flags, stf_err *err);

#ifdef __cplusplus
}
#endif
#endif
