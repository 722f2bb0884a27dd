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
 * One node, 16 bytes. STR and INT keep their text at u.s (NUL-terminated;
 * INT text is canonical: no '+', no leading zeros, "-0" folded to "0") and
 * its length in n. LIST and DICT keep their n entries in one block at
 * u.kids, sized once when the container closes: a LIST's items, a DICT's
 * key (a STR node) and value pairs in insertion order, then, for a DICT of
 * STF__PV_HASH_MIN entries or more, an open-addressing index of
 * stf__pyval_hcap(n) slots (uint32 entry+1, 0 = empty), then the bytes of
 * the strings and ints among the entries. A small block of scalars only
 * (STF__PV_SHARED on its container) is counted: a parse gives a container
 * equal to the one it closed before that one's block, so the metadata of a
 * million layers that each say {"format": "int8_tensorwise"} hold one. A
 * root is its own allocation (STF__PV_ROOT) with a scalar's bytes after it;
 * only roots are freed.
 */
struct stf_pyval {
    uint8_t type;  /* stf_pytype */
    uint8_t flags; /* STF__PV_* */
    uint32_t n;    /* STR/INT bytes, LIST items, DICT entries */
    union {
        double f;          /* FLOAT */
        const char *s;     /* STR bytes / INT text */
        stf_pyval *kids;   /* LIST items / DICT key, value pairs */
        size_t off;        /* while parsing: where s lies in the parser's bytes */
    } u;
};

#define STF__PV_TRUE 1u  /* BOOL True */
#define STF__PV_NAN 2u   /* FLOAT parsed from the NaN literal (one shared object in Python) */
#define STF__PV_ROOT 4u  /* allocated on its own; stf_pyval_free takes it */
#define STF__PV_SHARED 8u /* LIST/DICT: u.kids is a counted block, its count before it */

/* Below this many entries a dict is searched by a linear scan. */
#define STF__PV_HASH_MIN 16u

/*
 * Close a LIST (n items) or DICT (n key, value pairs) whose entries lie in
 * kids[] with their strings' bytes in bytes[base..base+nbytes) (u.off
 * counts from bytes[0]): a later duplicate key replaces the earlier one's
 * value in its place, as Python's dict does; the entries are moved into one
 * exact block at out->u.kids. `last` is the parse's last counted block
 * (a container node holding a count of it, type NONE before the first):
 * a small container of scalars equal to it takes its block, and one that
 * is not becomes `last`; stf__pyval_drop(last) when the parse ends. On
 * failure (STF_ENOMEM) the entries still in kids[0..*left) are the
 * caller's to drop.
 */
int stf__pyval_seal(stf_pyval *out, stf_pytype t, stf_pyval *kids, size_t n, size_t *left,
                    const char *bytes, size_t base, size_t nbytes, stf_pyval *last);

/* A root copy of node v (its bytes, for STR/INT, at bytes + v->u.off). */
stf_pyval *stf__pyval_root(const stf_pyval *v, const char *bytes);

/* Free what node v owns below it (not v itself). */
void stf__pyval_drop(stf_pyval *v);

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

/*
 * Room for a layer's public struct and its one marker, on the caller's
 * side (stf__model_layer_at).
 */
typedef struct stf__layer_tmp {
    stf_layer l;
    stf_marker mk;
} stf__layer_tmp;

/*
 * Layer i as stf_model_layer gives it, except that a layer the model keeps
 * compact (one only a metadata entry names) is made in *tmp rather than
 * in the model: then the struct and its marker last as long as *tmp, and
 * a pointer to them must not be kept past it or compared with another
 * layer's; the strings and values they point to last as long as the model.
 * For a loop over many layers that needs one at a time, so a model of
 * millions of such layers never holds a struct for each. NULL when i is
 * out of range.
 */
const stf_layer *stf__model_layer_at(const stf_model *m, size_t i, stf__layer_tmp *tmp);

/* Free what a marker owns (the tensor channel's value root, the error text). */
void stf__marker_clear(stf_marker *m);

/* Hand a buffer's bytes to the caller as a NUL-terminated string. */
int stf__buf_take(char **out, size_t *len, stf_buf *b);

#endif
