/*
 * Shared internals of the strict header reader (header.c, validate.c,
 * findings.c): the parse context that decides what a rule violation becomes,
 * and the per-tensor record used before the table is final.
 */
#ifndef STF_HEADER_INTERNAL_H
#define STF_HEADER_INTERNAL_H

#include "container/container_internal.h"

/* What a violation becomes (severities: stfix-checks(7), CONTAINER RULES). */
enum stf__level {
    STF__LV_REF = 0, /* always an error, STF_EFORMAT */
    STF__LV_STRICT,  /* error under o->strict (deferred, see below), else a warning */
    STF__LV_WARN,    /* always a warning finding */
    STF__LV_LIMIT    /* a resource cap: STF_ELIMIT */
};

/*
 * Warnings listed per rule and file; the rest are only counted, so a
 * hostile header with a million extra fields cannot turn into a million
 * findings. stf__hreport_flush adds one summary finding per capped rule.
 */
#define STF__FINDINGS_PER_RULE 1000u
#define STF__TALLY_MAX 16

typedef struct stf__finding_tally {
    char rule[8];
    const char *variant; /* static text */
    uint64_t count;
} stf__finding_tally;

typedef struct stf__header_ctx {
    const char *path;
    const stf_open_opts *o;
    stf__findings *findings; /* may be NULL: warnings are dropped */
    stf_err *err;            /* may be NULL */
    /* Under o->strict the first STRICT violation is held here and only reported
     * once every REF check has passed, so strict and lenient runs agree on the
     * primary verdict (the reference's test_validation_overflow). */
    int has_pending;
    stf_err pending;
    stf__finding_tally counts[STF__TALLY_MAX];
    size_t ncounts;
} stf__header_ctx;

/*
 * Report a violation of `rule` (reference variant or stfix name `variant`)
 * about `tensor` (tensor_len bytes, may be NULL) at absolute file offset
 * `off` when has_off. The message reads
 *   "PATH: RULE Variant: tensor 'NAME' (byte OFF): <fmt...>".
 * Returns 0 when parsing goes on (warning recorded, or STRICT deferred) or
 * the negative code the caller must return (STF_EFORMAT, STF_ELIMIT,
 * STF_ENOMEM), with c->err filled.
 */
int stf__hreport(stf__header_ctx *c, int level, const char *rule, const char *variant,
                 const char *tensor, size_t tensor_len, int has_off, uint64_t off,
                 const char *fmt, ...) STF_PRINTF(9, 10);

/*
 * Add one summary warning for each rule that went over
 * STF__FINDINGS_PER_RULE ("N more findings like this were not listed").
 * Returns 0 or STF_ENOMEM (c->err filled).
 */
int stf__hreport_flush(stf__header_ctx *c);

/* A tensor while the table is being built; offsets are absolute. */
typedef struct stf__tensor_record {
    stf_tensor_info ti;
    uint64_t shape_off;   /* the shape array's '[' */
    uint64_t offs_off;    /* the data_offsets array's '[' */
} stf__tensor_record;

/*
 * S13 for top-level names: the reference keeps the last of duplicate names
 * (serde into a HashMap), so earlier ones are dropped and *n shrinks; each
 * duplicate is reported as STRICT. Record order is otherwise kept.
 * Returns 0 or a negative code (STF_ENOMEM, or S13 when that is fatal).
 */
int stf__validate_dup_tensors(stf__tensor_record *t, size_t *n, stf__header_ctx *c);

/*
 * S13 inside __metadata__: duplicates are STRICT; the entry keeps the
 * position of the first occurrence and the value of the last (what a
 * serde or Python map ends up holding). `key_off` holds the absolute
 * offset of each key and is compacted alongside.
 */
int stf__validate_dup_meta(stf_meta_entry *m, uint64_t *key_off, size_t *n, stf__header_ctx *c);

/*
 * S15-S20 (the reference's Metadata::validate): sort the records by
 * (begin, end, name), walk them, and check that the data section ends the
 * file exactly. On success *data_size is the data section length. `hdr_n`
 * is N. Returns 0 or a negative code with c->err filled.
 */
int stf__validate_geometry(stf__tensor_record *t, size_t n, uint64_t hdr_n, uint64_t file_size,
                           uint64_t *data_size, stf__header_ctx *c);

#endif
