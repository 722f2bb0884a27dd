/*
 * Internal interfaces of the model layer, shared between the JSON parser
 * (pyjson.c), the value tree (pyval.c), Python formatting (pyrepr.c), the
 * markers (marker.c) and the layer grouping (layers.c). Not public.
 */
#ifndef STF_MODEL_INTERNAL_H
#define STF_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/model.h"
#include "stfix/experimental/model.h"
#include "util/util.h"

/*
 * One node. STR and INT keep their text in `s` (NUL-terminated; INT text is
 * canonical: no '+', no leading zeros, "-0" folded to "0"). LIST keeps
 * items[0..n); DICT keeps keys/klens/items[0..n) in insertion order and,
 * once it grows past a few entries, an open-addressing index `hidx` of
 * hcap slots holding entry+1 (0 = empty) so duplicate detection and
 * lookup stay linear for large `layers` objects.
 */
struct stf_pyval {
    stf_pytype type;
    int b;              /* BOOL */
    int nan_const;      /* FLOAT parsed from the NaN literal (one shared object in Python) */
    double f;           /* FLOAT */
    char *s;            /* STR bytes / INT text */
    size_t slen;
    stf_pyval **items;  /* LIST items / DICT values */
    char **keys;        /* DICT keys (NUL-terminated) */
    size_t *klens;
    size_t n, cap;
    size_t *hidx;
    size_t hcap;
};

/* A fresh node of type t (zeroed), or NULL on allocation failure. */
stf_pyval *stf__pyval_new(stf_pytype t);

/* Append v to a LIST node (takes ownership of v on success only). */
int stf__pyval_list_push(stf_pyval *list, stf_pyval *v);

/*
 * dict[key] = v with Python semantics: a new key is appended, an existing
 * key keeps its position and gets the new value (the old one is freed).
 * Takes ownership of `key` (malloc'd, NUL-terminated, klen bytes) and `v`
 * on success only.
 */
int stf__pyval_dict_set(stf_pyval *dict, char *key, size_t klen, stf_pyval *v);

/* Index of key in a DICT node, or -1. */
long stf__pyval_dict_find(const stf_pyval *dict, const char *key, size_t klen);

/*
 * Parse UTF-8 text as Python json.loads(str) does (the metadata channel:
 * the container has already decoded the header string): no encoding
 * detection, a leading U+FEFF is an error. Same contract otherwise as
 * stf_pyjson_parse, offsets are within `text`.
 */
int stf__pyjson_parse_text(stf_pyval **out, const char *text, size_t len, stf_err *err);

/* Append Python repr(d) of a double to b. */
int stf__pyrepr_double_put(stf_buf *b, double d);

/* Append Python repr() of the UTF-8 (WTF-8) string s[0..n) to b. */
int stf__pyrepr_str_put(stf_buf *b, const char *s, size_t n);

/* Append json.dumps-style (ensure_ascii) string literal of s[0..n) to b. */
int stf__pyjson_str_put(stf_buf *b, const char *s, size_t n);

/* ------------------------------------------------------------ markers */

/* Largest marker tensor parsed; bigger ones are recorded as NOT_JSON. */
#define STF_MARKER_MAX_BYTES ((uint64_t)16 << 20)

/*
 * Fill *m from tensor `idx` of c (a P.comfy_quant tensor): dtype check
 * (R8), read, json.loads (R6; TOO_DEEP past Python's nesting depth), object
 * check (R7). m->value is an owned root for this channel. Fails only with
 * STF_ENOMEM / STF_EIO.
 */
int stf__marker_from_tensor(stf_marker *m, const stf_ckpt *c, size_t idx, stf_err *err);

/*
 * Parse shard `shard`'s _quantization_metadata value text: *status (R1-R3),
 * *root (owned; NULL for ABSENT/NOT_JSON/TOO_DEEP), *error (owned message
 * for NOT_JSON/TOO_DEEP) and *error_off. Fails only with STF_ENOMEM.
 */
int stf__qmeta_parse(stf_qmeta_status *status, stf_pyval **root, char **error,
                     uint64_t *error_off, const stf_ckpt *c, size_t shard, stf_err *err);

/* Free what a marker owns (the tensor channel's value root, the error text). */
void stf__marker_clear(stf_marker *m);

/* Hand a buffer's bytes to the caller as a NUL-terminated string. */
int stf__buf_take(char **out, size_t *len, stf_buf *b);

#endif
