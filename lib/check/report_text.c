/*
 * The strings profiles build their messages from (Python reprs, escaped
 * names, shapes, dtype names), pooled in the run until it ends or a
 * profile's loop releases one layer's.
 */
#include <stdint.h>

#include "check/check_internal.h"

/*
 * Take ownership of a model-allocated string until the run ends; "" (and
 * sticky STF_ENOMEM) when s is NULL or the pool cannot grow.
 */
const char *stf__chk_keep(stf__chk *k, char *s)
{
    if (!s) {
        stf__chk_fail(k, STF_ENOMEM);
        return "";
    }
    if (k->npool == k->cappool) {
        size_t cap = k->cappool ? k->cappool * 2 : 64;
        char **p = stf__realloc(k->pool, cap * sizeof *p);
        if (!p) {
            stf_model_str_free(s);
            stf__chk_fail(k, STF_ENOMEM);
            return "";
        }
        k->pool = p;
        k->cappool = cap;
    }
    k->pool[k->npool++] = s;
    return s;
}

/* The pool's size (contract in check_internal.h). */
size_t stf__chk_mark(const stf__chk *k) { return k->npool; }

/* Free what was pooled since mark (contract in check_internal.h). */
void stf__chk_release(stf__chk *k, size_t mark)
{
    while (k->npool > mark) stf_model_str_free(k->pool[--k->npool]);
}

/* Wrap a model formatting call: rc/out pair into a pooled string. */
static const char *kept(stf__chk *k, int rc, char *s)
{
    if (rc) {
        stf_model_str_free(s);
        stf__chk_fail(k, rc);
        return "";
    }
    return stf__chk_keep(k, s);
}

/* Python repr of s[0..n), pooled; "" after a failure. */
const char *stf__chk_repr(stf__chk *k, const char *s, size_t n)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_str(&o, s, n, k->err);
    return kept(k, rc, o);
}

/* The escaped form of the name s[0..n), pooled; "" after a failure. */
const char *stf__chk_name(stf__chk *k, const char *s, size_t n)
{
    if (k->rc) return "";
    size_t len = stf_name_escape(NULL, 0, s, n);
    char *o = len < SIZE_MAX ? stf__malloc(len + 1) : NULL;
    if (o) stf_name_escape(o, len + 1, s, n);
    return stf__chk_keep(k, o);
}

/* The escaped form of l's prefix, pooled; "" after a failure. */
const char *stf__chk_layer(stf__chk *k, const stf_layer *l)
{
    return stf__chk_name(k, l->prefix, l->prefix_len);
}

/* Python tuple of dims, pooled; "" after a failure. */
const char *stf__chk_dims(stf__chk *k, unsigned rank, const uint64_t *dims)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_shape(&o, rank, dims, k->err);
    return kept(k, rc, o);
}

/* Python tuple of t's shape, "None" for NULL; pooled. */
const char *stf__chk_shape(stf__chk *k, const stf_tensor_info *t)
{
    if (!t) return "None";
    return stf__chk_dims(k, t->rank, t->shape);
}

/* torch.Size repr of t's shape, as SGLang's loader messages print it:
 * torch.Size([256, 1]); pooled, "" after a failure. */
const char *stf__chk_torch_size(stf__chk *k, const stf_tensor_info *t)
{
    if (k->rc) return "";
    stf_buf b;
    stf__buf_init(&b);
    stf__buf_puts(&b, "torch.Size([");
    for (unsigned i = 0; i < t->rank; i++)
        stf__buf_printf(&b, "%s%llu", i ? ", " : "", (unsigned long long)t->shape[i]);
    stf__buf_puts(&b, "])");
    if (b.oom) {
        stf__buf_free(&b);
        stf__chk_fail(k, STF_ENOMEM);
        return "";
    }
    return stf__chk_keep(k, b.data);
}

/* repr() of a JSON value, "None" for NULL; pooled. */
const char *stf__chk_pyrepr(stf__chk *k, const stf_pyval *v)
{
    char *o = NULL;
    if (!v) return "None";
    if (k->rc) return "";
    int rc = stf_pyrepr_value(&o, v, k->err);
    return kept(k, rc, o);
}

/* str() of a JSON value, "None" for NULL; pooled. A string is its own
 * bytes: the model's values outlive the pool, and a check of a million
 * layers then keeps no copy of each one's format. */
const char *stf__chk_pystr(stf__chk *k, const stf_pyval *v)
{
    char *o = NULL;
    if (!v) return "None";
    if (k->rc) return "";
    const char *s = stf_pyval_str(v, NULL);
    if (s) return s;
    int rc = stf_pystr_value(&o, v, k->err);
    return kept(k, rc, o);
}

/* SGLang's weight_meta ('I8', (2, 256)) or None; pooled. */
const char *stf__chk_meta(stf__chk *k, const stf_tensor_info *t)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_tensor_meta(&o, t, k->err);
    return kept(k, rc, o);
}

/* repr(sorted(names)[:limit]); pooled. names and lens are borrowed. */
const char *stf__chk_sorted(stf__chk *k, const char *const *names, const size_t *lens, size_t n,
                            size_t limit)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_sorted(&o, names, lens, n, limit, k->err);
    return kept(k, rc, o);
}

/* torch's name of a dtype (torch.bfloat16), else its safetensors name. */
const char *stf__chk_torch_dtype(stf_dtype d)
{
    switch (d) {
    case STF_BF16: return "torch.bfloat16";
    case STF_F16: return "torch.float16";
    case STF_F64: return "torch.float64";
    default: return stf_dtype_name(d);
    }
}

/* Static dtype name of t, "None" for NULL. */
const char *stf__chk_dtype(const stf_tensor_info *t)
{
    const char *n = t ? stf_dtype_name(t->dtype) : NULL;
    return n ? n : "None";
}
