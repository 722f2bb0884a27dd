/*
 * What the profiles ask of a layer: the marker SGLang acts on, its
 * format, and whether a tensor has a given shape.
 */
#include "check/check_internal.h"

/*
 * The last marker of l with status OK whose value is a dict, or NULL.
 * Borrowed from the model.
 */
const stf_pyval *stf__chk_marker(const stf_layer *l)
{
    const stf_pyval *v = NULL;
    for (size_t i = 0; i < l->nmarkers; i++) {
        const stf_marker *mk = &l->markers[i];
        if (mk->status == STF_MARKER_OK && mk->value && stf_pyval_type(mk->value) == STF_PY_DICT)
            v = mk->value;
    }
    return v;
}

/* The marker's "format" when it is a str (borrowed), else NULL. */
const char *stf__chk_format(const stf_pyval *marker)
{
    const stf_pyval *f = marker ? stf_pyval_find(marker, "format") : NULL;
    return (f && stf_pyval_type(f) == STF_PY_STR) ? stf_pyval_str(f, NULL) : NULL;
}

/* 1 when t (non-NULL) has exactly the given shape, else 0. */
int stf__chk_shape_is(const stf_tensor_info *t, unsigned rank, const uint64_t *dims)
{
    if (!t || t->rank != rank) return 0;
    for (unsigned i = 0; i < rank; i++)
        if (t->shape[i] != dims[i]) return 0;
    return 1;
}
