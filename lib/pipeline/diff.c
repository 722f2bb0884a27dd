/*
 * stf_diff_run: what differs between two checkpoints - tensors by name
 * (added, removed, dtype, shape, data bytes compared in bounded pieces), the
 * marker ComfyUI reads per layer, and the __metadata__ entries. The numeric
 * comparison of dequantized weights is diff_numeric.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline/diff_internal.h"

/* Bytes compared per read of each side. */
#define DIFF_PIECE ((size_t)1 << 20)

void stf_diff_opts_init_version(stf_diff_opts *o, unsigned version)
{
    if (!o || !stf__opts_reset(o, sizeof *o, version, STF_DIFF_OPTS_VERSION)) return;
    o->max_mem = (uint64_t)256 << 20;
}

void stf_diff_free(stf_diff *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->nmarkers; i++) {
        stf__free((void *)d->markers[i].a);
        stf__free((void *)d->markers[i].b);
    }
    for (size_t i = 0; i < d->nnumeric; i++) stf__free((void *)d->numeric[i].why);
    stf__free(d->tensors);
    stf__free(d->markers);
    stf__free(d->meta);
    stf__free(d->numeric);
    stf_model_free(d->ma);
    stf_model_free(d->mb);
    stf__free(d);
}

int stf_diff_identical(const stf_diff *d)
{
    return d && !d->ntensors && !d->nmarkers && !d->nmeta;
}

size_t stf_diff_tensor_count(const stf_diff *d) { return d ? d->ntensors : 0; }
size_t stf_diff_marker_count(const stf_diff *d) { return d ? d->nmarkers : 0; }
size_t stf_diff_meta_count(const stf_diff *d) { return d ? d->nmeta : 0; }
size_t stf_diff_numeric_count(const stf_diff *d) { return d ? d->nnumeric : 0; }

const stf_diff_tensor_info *stf_diff_tensor(const stf_diff *d, size_t i)
{
    return d && i < d->ntensors ? &d->tensors[i] : NULL;
}

const stf_diff_text *stf_diff_marker(const stf_diff *d, size_t i)
{
    return d && i < d->nmarkers ? &d->markers[i] : NULL;
}

const stf_diff_text *stf_diff_meta(const stf_diff *d, size_t i)
{
    return d && i < d->nmeta ? &d->meta[i] : NULL;
}

const stf_diff_numeric_info *stf_diff_numeric(const stf_diff *d, size_t i)
{
    return d && i < d->nnumeric ? &d->numeric[i] : NULL;
}

/* Progress (contract in diff_internal.h). */
void stf__diff_tick(stf__diff_progress *pg, uint64_t add, const char *what, size_t what_len)
{
    pg->done += add;
    if (pg->done > pg->total) pg->done = pg->total;
    if (pg->o->progress) pg->o->progress(pg->o->progress_ud, pg->done, pg->total, what, what_len);
}

/* Room for one more element of `size` bytes in *v (n used, *cap). */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *nv = stf__realloc(*v, nc * size);
    if (!nv) return STF_ENOMEM;
    *v = nv;
    *cap = nc;
    return 0;
}

static int same_shape(const stf_tensor_info *a, const stf_tensor_info *b)
{
    if (a->rank != b->rank) return 0;
    for (unsigned i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* *first = offset of the first differing byte of tensors ia of A and ib of
 * B (equal nbytes), UINT64_MAX when none. */
static int compare_data(uint64_t *first, const stf_ckpt *a, size_t ia, const stf_ckpt *b,
                        size_t ib, unsigned char *buf, stf__diff_progress *pg, stf_err *err)
{
    const stf_tensor_info *t = stf_ckpt_tensor(a, ia);
    uint64_t n = t->nbytes;
    const unsigned char *ma = stf_ckpt_tensor_data(a, ia), *mb = stf_ckpt_tensor_data(b, ib);
    *first = UINT64_MAX;
    for (uint64_t off = 0; off < n; off += DIFF_PIECE) {
        size_t len = n - off < DIFF_PIECE ? (size_t)(n - off) : DIFF_PIECE;
        const unsigned char *pa = ma ? ma + off : buf, *pb = mb ? mb + off : buf + DIFF_PIECE;
        int rc = ma ? 0 : stf_ckpt_read(buf, a, ia, off, len, err);
        if (!rc && !mb) rc = stf_ckpt_read(buf + DIFF_PIECE, b, ib, off, len, err);
        if (rc) return rc;
        stf__diff_tick(pg, 2 * (uint64_t)len, t->name, t->name_len);
        if (!memcmp(pa, pb, len)) continue;
        size_t i = 0;
        while (pa[i] == pb[i]) i++;
        *first = off + i;
        /* The rest is not read: count it as done. */
        stf__diff_tick(pg, 2 * (n - off - len), t->name, t->name_len);
        return 0;
    }
    return 0;
}

static int add_tensor(stf_diff *d, const stf_tensor_info *ta, const stf_tensor_info *tb,
                      unsigned what, uint64_t first, stf_err *err)
{
    if (grow((void **)&d->tensors, d->ntensors, &d->tcap, sizeof *d->tensors))
        return stf__err(err, STF_ENOMEM, "diff: out of memory");
    const stf_tensor_info *t = ta ? ta : tb;
    d->tensors[d->ntensors++] = (stf_diff_tensor_info){ t->name, t->name_len, what, ta, tb, first };
    return 0;
}

static int diff_tensors(stf_diff *d, const stf_ckpt *a, const stf_ckpt *b,
                        stf__diff_progress *pg, stf_err *err)
{
    int rc = 0;
    unsigned char *buf = NULL;
    size_t na = stf_ckpt_tensor_count(a), nb = stf_ckpt_tensor_count(b);
    for (size_t i = 0; i < na && !rc; i++) {
        const stf_tensor_info *ta = stf_ckpt_tensor(a, i);
        size_t j;
        if (stf_ckpt_find_n(&j, b, ta->name, ta->name_len)) {
            rc = add_tensor(d, ta, NULL, STF_DIFF_REMOVED, 0, err);
            continue;
        }
        const stf_tensor_info *tb = stf_ckpt_tensor(b, j);
        unsigned what = (ta->dtype != tb->dtype ? STF_DIFF_DTYPE : 0u) |
                        (same_shape(ta, tb) ? 0u : STF_DIFF_SHAPE);
        uint64_t first = UINT64_MAX;
        if (ta->nbytes != tb->nbytes) {
            first = 0;
        } else if (ta->nbytes) {
            if (!buf && !(buf = stf__malloc(2 * DIFF_PIECE))) {
                rc = stf__err(err, STF_ENOMEM, "diff: out of memory");
                break;
            }
            if ((rc = compare_data(&first, a, i, b, j, buf, pg, err))) break;
        }
        if (first != UINT64_MAX) what |= STF_DIFF_BYTES;
        if (what) rc = add_tensor(d, ta, tb, what, first == UINT64_MAX ? 0 : first, err);
    }
    for (size_t j = 0; j < nb && !rc; j++) {
        const stf_tensor_info *tb = stf_ckpt_tensor(b, j);
        size_t i;
        if (stf_ckpt_find_n(&i, a, tb->name, tb->name_len))
            rc = add_tensor(d, NULL, tb, STF_DIFF_ADDED, 0, err);
    }
    stf__free(buf);
    return rc;
}

/* The marker text of a layer (owned; NULL with 0 when it has none). */
static int marker_text(char **out, size_t *len, const stf_layer *l, stf_err *err)
{
    *out = NULL;
    *len = 0;
    const stf_marker *mk = l ? l->comfy : NULL;
    if (!mk) return 0;
    if (mk->value) {
        char *t = NULL;
        int rc = stf_pyjson_dumps(&t, len, mk->value, err);
        if (rc) return rc;
        *out = stf__strndup(t, *len);
        stf_model_str_free(t);
    } else {
        /* Bytes that are not a JSON value: the defect's name stands for them. */
        const char *what = mk->status == STF_MARKER_BAD_DTYPE  ? "(marker tensor of a dtype "
                                                                "JSON cannot be read from)"
                           : mk->status == STF_MARKER_TOO_DEEP ? "(marker nested too deep)"
                                                               : "(marker is not JSON)";
        *len = strlen(what);
        *out = stf__strdup(what);
    }
    return *out ? 0 : stf__err(err, STF_ENOMEM, "diff: out of memory");
}

static int add_marker(stf_diff *d, const stf_layer *la, const stf_layer *lb, stf_err *err)
{
    char *ta = NULL, *tb = NULL;
    size_t al = 0, bl = 0;
    int rc = marker_text(&ta, &al, la, err);
    if (!rc) rc = marker_text(&tb, &bl, lb, err);
    if (!rc && ((!ta) != (!tb) || (ta && (al != bl || memcmp(ta, tb, al))))) {
        if (grow((void **)&d->markers, d->nmarkers, &d->mcap, sizeof *d->markers)) {
            rc = stf__err(err, STF_ENOMEM, "diff: out of memory");
        } else {
            const stf_layer *l = la ? la : lb;
            d->markers[d->nmarkers++] =
                (stf_diff_text){ l->prefix, l->prefix_len, ta, tb, al, bl };
            return 0;
        }
    }
    stf__free(ta);
    stf__free(tb);
    return rc;
}

static int diff_markers(stf_diff *d, const stf_model *ma, const stf_model *mb, stf_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < stf_model_layer_count(ma) && !rc; i++) {
        stf__layer_tmp at, bt;
        const stf_layer *la = stf__model_layer_at(ma, i, &at);
        size_t j;
        const stf_layer *lb = stf_model_find_layer(&j, mb, la->prefix, la->prefix_len)
                                  ? NULL
                                  : stf__model_layer_at(mb, j, &bt);
        rc = add_marker(d, la, lb, err);
    }
    for (size_t j = 0; j < stf_model_layer_count(mb) && !rc; j++) {
        stf__layer_tmp bt;
        const stf_layer *lb = stf__model_layer_at(mb, j, &bt);
        size_t i;
        if (stf_model_find_layer(&i, ma, lb->prefix, lb->prefix_len))
            rc = add_marker(d, NULL, lb, err);
    }
    return rc;
}

/* A metadata entry and its place among all entries of the checkpoint. */
typedef struct meta_ref {
    const stf_meta_entry *e;
    size_t ord;
} meta_ref;

/* By key bytes. */
static int key_cmp(const stf_meta_entry *a, const stf_meta_entry *b)
{
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    if (c) return c;
    return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

/* By key, then by place: the first shard's entry of a key comes first. */
static int ref_cmp(const void *x, const void *y)
{
    const meta_ref *a = x, *b = y;
    int c = key_cmp(a->e, b->e);
    return c ? c : a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* Every __metadata__ entry of c, sorted by key, the first shard's of a key
 * that several hold. */
static int meta_sorted(meta_ref **out, size_t *n, const stf_ckpt *c)
{
    size_t total = 0, k = 0;
    for (size_t s = 0; s < stf_ckpt_shard_count(c); s++) total += stf_ckpt_meta_count(c, s);
    *out = NULL;
    *n = 0;
    if (!total) return 0;
    meta_ref *v = stf__calloc(total, sizeof *v);
    if (!v) return STF_ENOMEM;
    for (size_t s = 0; s < stf_ckpt_shard_count(c); s++)
        for (size_t i = 0; i < stf_ckpt_meta_count(c, s); i++, k++)
            v[k] = (meta_ref){ stf_ckpt_meta(c, s, i), k };
    qsort(v, k, sizeof *v, ref_cmp);
    size_t w = 0;
    for (size_t i = 0; i < k; i++)
        if (!w || key_cmp(v[w - 1].e, v[i].e)) v[w++] = v[i];
    *out = v;
    *n = w;
    return 0;
}

static int add_meta(stf_diff *d, const stf_meta_entry *a, const stf_meta_entry *b)
{
    if (a && b && a->value_len == b->value_len && !memcmp(a->value, b->value, a->value_len))
        return 0;
    if (grow((void **)&d->meta, d->nmeta, &d->metacap, sizeof *d->meta)) return STF_ENOMEM;
    const stf_meta_entry *e = a ? a : b;
    d->meta[d->nmeta++] = (stf_diff_text){ e->key, e->key_len, a ? a->value : NULL,
                                           b ? b->value : NULL, a ? a->value_len : 0,
                                           b ? b->value_len : 0 };
    return 0;
}

static int diff_meta(stf_diff *d, const stf_ckpt *a, const stf_ckpt *b, stf_err *err)
{
    meta_ref *va = NULL, *vb = NULL;
    size_t na = 0, nb = 0, i = 0, j = 0;
    int rc = meta_sorted(&va, &na, a);
    if (!rc) rc = meta_sorted(&vb, &nb, b);
    while (!rc && (i < na || j < nb)) {
        int c = i == na ? 1 : j == nb ? -1 : key_cmp(va[i].e, vb[j].e);
        rc = add_meta(d, c <= 0 ? va[i].e : NULL, c >= 0 ? vb[j].e : NULL);
        if (c <= 0) i++;
        if (c >= 0) j++;
    }
    stf__free(va);
    stf__free(vb);
    return rc ? stf__err(err, STF_ENOMEM, "diff: out of memory") : 0;
}

/* The bytes the data comparison and the numeric one will read. */
static uint64_t total_bytes(const stf_ckpt *a, const stf_ckpt *b, const stf_model *ma,
                            const stf_model *mb, int numeric)
{
    uint64_t t = 0;
    for (size_t i = 0; i < stf_ckpt_tensor_count(a); i++) {
        const stf_tensor_info *ta = stf_ckpt_tensor(a, i);
        size_t j;
        if (!stf_ckpt_find_n(&j, b, ta->name, ta->name_len) &&
            stf_ckpt_tensor(b, j)->nbytes == ta->nbytes)
            t += 2 * ta->nbytes;
    }
    for (size_t i = 0; numeric && i < stf_model_layer_count(ma); i++) {
        size_t j;
        if (stf__diff_numeric_wanted(&j, ma, i, mb))
            t += stf__diff_weight_bytes(ma, i) + stf__diff_weight_bytes(mb, j);
    }
    return t;
}

int stf_diff_run(stf_diff **out, const stf_ckpt *a, const stf_ckpt *b, const stf_diff_opts *o,
                 stf_err *err)
{
    stf_diff_opts defo;
    *out = NULL;
    if (!a || !b) return stf__err(err, STF_EINVAL, "stf_diff_run: NULL checkpoint");
    if (!o) {
        stf_diff_opts_init(&defo);
        o = &defo;
    }
    int rc = stf__opts_version(err, o->version, STF_DIFF_OPTS_VERSION, "stf_diff_opts");
    if (rc) return rc;
    stf_diff *d = stf__calloc(1, sizeof *d);
    if (!d) return stf__err(err, STF_ENOMEM, "diff: out of memory");
    if ((rc = stf_model_build(&d->ma, a, err)) || (rc = stf_model_build(&d->mb, b, err)))
        goto done;
    const stf_model *ma = d->ma, *mb = d->mb;
    stf__diff_progress pg = { o, 0, total_bytes(a, b, ma, mb, o->numeric) };
    if ((rc = diff_tensors(d, a, b, &pg, err))) goto done;
    if ((rc = diff_markers(d, ma, mb, err))) goto done;
    if ((rc = diff_meta(d, a, b, err))) goto done;
    if (o->numeric && (rc = stf__diff_numeric(d, ma, mb, o, &pg, err))) goto done;
    pg.done = pg.total;
    stf__diff_tick(&pg, 0, NULL, 0);
done:
    if (rc) {
        stf_diff_free(d);
        return rc;
    }
    *out = d;
    return 0;
}
