/*
 * The one pass over an INT8 (or packed W4A4) weight that the numeric
 * probes share: the H1 saturation counts and the H2 group energies come
 * from a single read of the tensor. Internal to the check layer and its
 * tests; the public face is stf_probe_h1 / stf_probe_h2 (check.h).
 */
#ifndef STF_CHECK_PROBE_SCAN_H
#define STF_CHECK_PROBE_SCAN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "stfix/container.h"

/* H1 counts: rows, columns and aligned b x b blocks (b = 32 << j) that
 * hold any non-zero code (_ne) and that reach |q| >= sat (_sat). */
typedef struct stf__h1_stat {
    uint64_t rows_ne, rows_sat, cols_ne, cols_sat;
    uint64_t blk_ne[4], blk_sat[4];
    int any_sat;
} stf__h1_stat;

typedef struct stf__scan_req {
    int h1;          /* fill *h1 */
    int w4;          /* codes are signed nibble pairs, low nibble first (H1 only) */
    int fp8;         /* codes are FP8 bytes (STF_F8_E4M3 or STF_F8_E5M2; 0: INT8),
                      * read as their magnitude bits c & 0x7F, a NaN or Inf
                      * code as 0 (H1 only) */
    unsigned sat;    /* H1 saturation threshold */
    size_t h2_group; /* 0: no H2; else G, dividing K (int8 only) */
    size_t block;    /* bytes per read (0: 128 KiB); a wider row is read in
                      * pieces of whole groups (at least one) */
} stf__scan_req;

/*
 * Read weight tensor wi (info w: I8, or FP8 for H1 alone, rank 2, at
 * least one element) once,
 * in blocks of whole rows (pieces of a row wider than req->block), and
 * compute what req asks for: the H1 counts in
 * *h1, and in h2e[0..G) the energy of each group position, each row
 * divided by its own peak max(1, max|q|), summed in row then column order.
 * Memory: the read block (req->block, or 128 KiB), three bytes per
 * column, one per 32 x 32 block of codes, and a few words per group
 * position; the results do not depend on req->block.
 * Errors: STF_ENOMEM, or the read error (STF_EIO).
 */
int stf__probe_scan(const stf_ckpt *c, size_t wi, const stf_tensor_info *w,
                    const stf__scan_req *req, stf__h1_stat *h1, double *h2e, stf_err *err);

/* The H1 saturation threshold of weight dtype dt: the largest code 0x7E
 * (F8_E4M3) or 0x7B (F8_E5M2), 7 for packed int4 (w4), else 126. */
unsigned stf__h1_sat(stf_dtype dt, int w4);

/*
 * H1 counts of an INT8 or FP8 weight (rank 2, at least one element) built
 * from rows that another pass over the tensor reads anyway (fix's jobs):
 * stf__h1_acc_rows takes any set of disjoint row ranges, from any threads
 * and in any order; once every row has been handed in exactly once,
 * stf__h1_acc_finish gives the counts stf__probe_scan gives (returns 1),
 * else it returns 0 (some rows never came: probe the tensor instead).
 * Memory: three bytes per column and one per 32 x 32 block, a few more
 * per call. Errors: STF_ENOMEM.
 */
typedef struct stf__h1_acc {
    uint64_t n, rows_seen, rows_ne, rows_sat;
    size_t kk, nb32, nbr;
    int fp8;              /* the weight's FP8 dtype (stf__scan_req.fp8), or 0 */
    unsigned sat;         /* the saturation threshold for that dtype */
    uint8_t *mc, *blkall; /* column maxima, 32-block maxima */
    pthread_mutex_t mu;
    int live;
} stf__h1_acc;

int stf__h1_acc_init(stf__h1_acc *acc, const stf_tensor_info *w, stf_err *err);
int stf__h1_acc_rows(stf__h1_acc *acc, const void *rows, size_t nrows, uint64_t r0,
                     stf_err *err);
int stf__h1_acc_finish(stf__h1_acc *acc, stf__h1_stat *st);
void stf__h1_acc_free(stf__h1_acc *acc);

#endif
