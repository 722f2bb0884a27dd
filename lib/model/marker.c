/*
 * Comfy quantization markers (stfix-defects(7), MARKER CHANNELS, MARKER FIELDS
 * and CANONICAL MARKER): reading both channels the way SGLang's inspection does
 * (so R1-R8 can be reported exactly), reading a marker's fields the way
 * ComfyUI's loader does (so a repair keeps what ComfyUI understood), and
 * writing the canonical bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* ------------------------------------------------------------ reading */

/* Dtypes torch cannot hand to numpy: .numpy() raises TypeError (R8). */
static int dtype_numpy_ok(stf_dtype d)
{
    switch (d) {
    case STF_BF16:
    case STF_F4:
    case STF_F6_E2M3:
    case STF_F6_E3M2:
    case STF_F8_E5M2:
    case STF_F8_E4M3:
    case STF_F8_E8M0:
    case STF_F8_E4M3FNUZ:
    case STF_F8_E5M2FNUZ: return 0;
    default: return 1;
    }
}

/* Frees what m owns (tensor-channel value, error text); contract in model_internal.h. */
void stf__marker_clear(stf_marker *m)
{
    if (!m) return;
    if (m->channel == STF_CHAN_TENSOR) stf_pyval_free((stf_pyval *)(uintptr_t)m->value);
    stf__free((char *)(uintptr_t)m->error);
    m->value = NULL;
    m->error = NULL;
}

/* Record a decode failure from err into m: NOT_JSON, or TOO_DEEP for the
 * parser's STF_ELIMIT (Python's RecursionError). */
static int set_not_json(stf_marker *m, int rc, const stf_err *perr, const char *fallback,
                        stf_err *err)
{
    const char *msg = perr ? perr->msg : fallback;
    char *e = stf__strdup(msg);
    if (!e) return stf__err(err, STF_ENOMEM, "out of memory reading marker %s", m->key);
    m->status = rc == STF_ELIMIT ? STF_MARKER_TOO_DEEP : STF_MARKER_NOT_JSON;
    m->error = e;
    m->error_offset = perr && perr->has_offset ? perr->offset : 0;
    return 0;
}

/* Tensor channel (R6-R8) for tensor idx; contract in model_internal.h. */
int stf__marker_from_tensor(stf_marker *m, const stf_ckpt *c, size_t idx, stf_err *err)
{
    const stf_tensor_info *t = stf_ckpt_tensor(c, idx);
    memset(m, 0, sizeof *m);
    m->channel = STF_CHAN_TENSOR;
    m->shard = t->shard;
    m->path = stf_ckpt_shard_path(c, t->shard);
    m->key = t->name;
    m->key_len = t->name_len;
    m->tensor = (int64_t)idx;
    if (!dtype_numpy_ok(t->dtype)) {
        m->status = STF_MARKER_BAD_DTYPE;
        return 0;
    }
    if (t->nbytes > STF_MARKER_MAX_BYTES)
        return set_not_json(m, STF_EFORMAT, NULL, "marker tensor larger than 16 MiB; not parsed",
                            err);
    size_t n = (size_t)t->nbytes;
    const void *data = stf_ckpt_tensor_data(c, idx);
    void *copy = NULL;
    if (!data && n) {
        copy = stf__malloc(n);
        char tn[STF__NAME_SHOWN];
        if (!copy)
            return stf__err(err, STF_ENOMEM, "out of memory reading marker %s",
                            stf__name_render(tn, sizeof tn, t->name, t->name_len));
        int rc = stf_ckpt_read(copy, c, idx, 0, n, err);
        if (rc) {
            stf__free(copy);
            return rc;
        }
        data = copy;
    }
    stf_pyval *v = NULL;
    stf_err perr;
    stf_err_clear(&perr);
    int rc = stf_pyjson_parse(&v, data, n, &perr);
    stf__free(copy);
    if (rc == STF_ENOMEM) {
        char tn[STF__NAME_SHOWN];
        return stf__err(err, STF_ENOMEM, "out of memory parsing marker %s",
                        stf__name_render(tn, sizeof tn, t->name, t->name_len));
    }
    if (rc) return set_not_json(m, rc, &perr, NULL, err);
    m->value = v;
    m->status = stf_pyval_type(v) == STF_PY_DICT ? STF_MARKER_OK : STF_MARKER_NOT_OBJECT;
    return 0;
}

/* Metadata channel status (R1-R3) of one shard; contract in model_internal.h. */
int stf__qmeta_parse(stf_qmeta_status *status, stf_pyval **root, char **error,
                     uint64_t *error_off, const stf_ckpt *c, size_t shard, stf_err *err)
{
    *status = STF_QMETA_ABSENT;
    *root = NULL;
    *error = NULL;
    *error_off = 0;
    const stf_meta_entry *e = stf_ckpt_meta_find(c, shard, "_quantization_metadata");
    if (!e) return 0;
    stf_err perr;
    stf_err_clear(&perr);
    stf_pyval *v = NULL;
    int rc = stf__pyjson_parse_text(&v, e->value, e->value_len, &perr);
    if (rc == STF_ENOMEM) return stf__err(err, STF_ENOMEM, "out of memory parsing _quantization_metadata");
    if (rc) {
        *error = stf__strdup(perr.msg);
        if (!*error) return stf__err(err, STF_ENOMEM, "out of memory parsing _quantization_metadata");
        *error_off = perr.offset;
        *status = rc == STF_ELIMIT ? STF_QMETA_TOO_DEEP : STF_QMETA_NOT_JSON;
        return 0;
    }
    *root = v;
    if (stf_pyval_type(v) != STF_PY_DICT) *status = STF_QMETA_NOT_OBJECT;
    else {
        const stf_pyval *layers = stf_pyval_find(v, "layers");
        *status = layers && stf_pyval_type(layers) == STF_PY_DICT ? STF_QMETA_OK
                                                                   : STF_QMETA_NO_LAYERS;
    }
    return 0;
}

/* ------------------------------------------------------------ normalising */

/* ComfyUI's lookup: the top level, then the legacy nested `params` dict
 * (nested-params). */
static const stf_pyval *field(const stf_pyval *marker, const char *key, int top_only)
{
    const stf_pyval *v = stf_pyval_find(marker, key);
    if (v || top_only) return v;
    const stf_pyval *params = stf_pyval_find(marker, "params");
    if (params && stf_pyval_type(params) == STF_PY_DICT) return stf_pyval_find(params, key);
    return NULL;
}

static int int_field(int *set, int64_t *out, const stf_pyval *marker, const char *key,
                     int top_only, stf_err *err)
{
    const stf_pyval *v = field(marker, key, top_only);
    if (!v) return 0;
    stf_err ierr;
    stf_err_clear(&ierr);
    int rc = stf_pyval_pyint(out, v, &ierr);
    if (rc) return stf__err(err, STF_EFORMAT, "marker key '%s': %s", key, ierr.msg);
    *set = 1;
    return 0;
}

/* A ConvRot marker (convrot true, or convrot_w4a4) without a group size
 * means ComfyUI's default, 256; the canonical form spells it out, whoever
 * built the spec (a set-marker that forced convrot or dropped the key). */
static void default_groupsize(stf_marker_spec *s)
{
    if (!s->convrot_groupsize_set && (s->convrot || !strcmp(s->format, "convrot_w4a4"))) {
        s->convrot_groupsize_set = 1;
        s->convrot_groupsize = 256;
    }
}
/*
 * ComfyUI-style field read into *out (contract in model.h); strings in *out
 * are borrowed from marker. STF_EFORMAT names the offending key.
 */
int stf_marker_normalize(stf_marker_spec *out, const stf_pyval *marker, unsigned flags,
                         stf_err *err)
{
    memset(out, 0, sizeof *out);
    if (marker && stf_pyval_type(marker) == STF_PY_STR && (flags & STF_NORM_WRAP_STRING)) {
        out->format = stf_pyval_str(marker, NULL); /* string-metadata-value */
        return 0;
    }
    if (!marker || stf_pyval_type(marker) != STF_PY_DICT)
        return stf__err(err, STF_EFORMAT, "marker is not a JSON object");
    const stf_pyval *f = field(marker, "format", 0);
    if (f) {
        if (stf_pyval_type(f) != STF_PY_STR)
            return stf__err(err, STF_EFORMAT, "marker key 'format' is not a string");
        out->format = stf_pyval_str(f, NULL);
    } else if (flags & STF_NORM_ADD_INT8_FORMAT) {
        out->format = "int8_tensorwise"; /* missing-format */
    } else {
        return stf__err(err, STF_EFORMAT, "marker has no 'format'");
    }
    out->full_precision_matrix_mult = stf_pyval_truthy(field(marker, "full_precision_matrix_mult", 0));
    out->convrot = stf_pyval_truthy(field(marker, "convrot", 0));
    int is_w4a8 = strcmp(out->format, "asym_w4a8_int8") == 0;
    int is_awq = strcmp(out->format, "awq_w4a16") == 0;
    /* w4a8-without-convrot */
    if (is_w4a8 && (flags & STF_NORM_ADD_W4A8_CONVROT)) out->convrot = 1;
    int rc = int_field(&out->convrot_groupsize_set, &out->convrot_groupsize, marker,
                       "convrot_groupsize", 0, err);
    if (rc) return rc;
    default_groupsize(out);
    /* awq reads group_size at the top level only (C14) */
    rc = int_field(&out->group_size_set, &out->group_size, marker, "group_size", is_awq, err);
    if (rc) return rc;
    const stf_format_info *fi = stf_format_find(out->format, strlen(out->format));
    if (!out->group_size_set && is_w4a8 && fi) {
        out->group_size_set = 1;
        out->group_size = fi->default_group_size;
    }
    const stf_pyval *ld = field(marker, "linear_dtype", 0);
    if (ld) {
        if (stf_pyval_type(ld) != STF_PY_STR)
            return stf__err(err, STF_EFORMAT, "marker key 'linear_dtype' is not a string");
        const char *s = stf_pyval_str(ld, NULL);
        out->linear_dtype = strcmp(s, "int4") == 0 ? NULL : s;
    }
    return int_field(&out->num_experts_set, &out->num_experts, marker, "num_experts", 0, err);
}

/* ------------------------------------------------------------ writing */

static void put_int(stf_buf *b, const char *key, int64_t v)
{
    stf__buf_printf(b, ", \"%s\": %lld", key, (long long)v);
}

/* Canonical marker bytes for s; *out is owned by the caller (stf_model_str_free). */
int stf_marker_canonical(char **out, size_t *len, const stf_marker_spec *s, stf_err *err)
{
    *out = NULL;
    if (!s || !s->format) return stf__err(err, STF_EINVAL, "canonical marker needs a format");
    stf_marker_spec full = *s;
    default_groupsize(&full);
    s = &full;
    stf_buf b;
    stf__buf_init(&b);
    stf__buf_puts(&b, "{\"format\": ");
    stf__pyjson_str_put(&b, s->format, strlen(s->format));
    if (s->full_precision_matrix_mult) stf__buf_puts(&b, ", \"full_precision_matrix_mult\": true");
    if (s->group_size_set) put_int(&b, "group_size", s->group_size);
    if (s->convrot) stf__buf_puts(&b, ", \"convrot\": true");
    if (s->convrot_groupsize_set) put_int(&b, "convrot_groupsize", s->convrot_groupsize);
    if (s->linear_dtype && strcmp(s->linear_dtype, "int4") != 0) {
        stf__buf_puts(&b, ", \"linear_dtype\": ");
        stf__pyjson_str_put(&b, s->linear_dtype, strlen(s->linear_dtype));
    }
    if (s->num_experts_set) put_int(&b, "num_experts", s->num_experts);
    stf__buf_putc(&b, '}');
    if (stf__buf_take(out, len, &b) != 0)
        return stf__err(err, STF_ENOMEM, "out of memory building a marker");
    return 0;
}

typedef struct qentry {
    const char *prefix, *marker;
    size_t plen;
} qentry;

static int qentry_cmp(const void *pa, const void *pb)
{
    const qentry *a = pa, *b = pb;
    return stf__bytes_cmp(a->prefix, a->plen, b->prefix, b->plen);
}

/* The _quantization_metadata value; *out owned by the caller. STF_EINVAL on
 * NULL or duplicate prefixes. */
int stf_qmeta_canonical(char **out, size_t *len, const char *const *prefixes, const size_t *plens,
                        const char *const *markers, size_t n, stf_err *err)
{
    *out = NULL;
    if (n && (!prefixes || !markers)) return stf__err(err, STF_EINVAL, "NULL layer list");
    qentry *v = NULL;
    if (n) {
        v = stf__calloc(n, sizeof *v);
        if (!v) return stf__err(err, STF_ENOMEM, "out of memory building _quantization_metadata");
    }
    for (size_t i = 0; i < n; i++) {
        if (!prefixes[i] || !markers[i]) {
            stf__free(v);
            return stf__err(err, STF_EINVAL, "NULL layer prefix or marker");
        }
        v[i].prefix = prefixes[i];
        v[i].plen = plens ? plens[i] : strlen(prefixes[i]);
        v[i].marker = markers[i];
    }
    if (n > 1) qsort(v, n, sizeof *v, qentry_cmp);
    for (size_t i = 1; i < n; i++)
        if (qentry_cmp(&v[i - 1], &v[i]) == 0) {
            char shown[STF__NAME_SHOWN];
            int rc = stf__err(err, STF_EINVAL, "layer %s listed twice",
                              stf__name_render(shown, sizeof shown, v[i].prefix, v[i].plen));
            stf__free(v);
            return rc;
        }
    stf_buf b;
    stf__buf_init(&b);
    stf__buf_puts(&b, "{\"format_version\": \"1.0\", \"layers\": {");
    for (size_t i = 0; i < n; i++) {
        if (i) stf__buf_puts(&b, ", ");
        stf__pyjson_str_put(&b, v[i].prefix, v[i].plen);
        stf__buf_puts(&b, ": ");
        stf__buf_puts(&b, v[i].marker);
    }
    stf__buf_puts(&b, "}}");
    stf__free(v);
    if (stf__buf_take(out, len, &b) != 0)
        return stf__err(err, STF_ENOMEM, "out of memory building _quantization_metadata");
    return 0;
}
