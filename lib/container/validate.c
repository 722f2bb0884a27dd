/*
 * Table-level checks of the strict reader: duplicate names (S13) and the
 * geometry walk of the reference's Metadata::validate (S15-S19), plus the
 * S20 aliasing warning. See stfix-checks(7), CONTAINER RULES.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/header_internal.h"

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    if (r) return r;
    return al < bl ? -1 : al > bl;
}

/* Sort by name, then by position in the array (= header order). */
static int trec_ptr_cmp(const void *x, const void *y)
{
    const stf__tensor_record *a = *(const stf__tensor_record *const *)x;
    const stf__tensor_record *b = *(const stf__tensor_record *const *)y;
    int r = name_cmp(a->ti.name, a->ti.name_len, b->ti.name, b->ti.name_len);
    if (r) return r;
    return a < b ? -1 : a > b;
}

static int meta_ptr_cmp(const void *x, const void *y)
{
    const stf_meta_entry *a = *(const stf_meta_entry *const *)x;
    const stf_meta_entry *b = *(const stf_meta_entry *const *)y;
    int r = name_cmp(a->key, a->key_len, b->key, b->key_len);
    if (r) return r;
    return a < b ? -1 : a > b;
}

/* S13 keep-last for tensor names; contract in header_internal.h. */
int stf__validate_dup_tensors(stf__tensor_record *t, size_t *n, stf__header_ctx *c)
{
    size_t cnt = *n, out = 0;
    const stf__tensor_record **p = NULL;
    size_t *prev = NULL; /* index of the previous record of the same name */
    int rc = 0;
    if (cnt < 2) return 0;
    p = stf__malloc(cnt * sizeof *p);
    prev = stf__malloc(cnt * sizeof *prev);
    if (!p || !prev) {
        rc = stf__err(c->err, STF_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    for (size_t i = 0; i < cnt; i++) {
        p[i] = &t[i];
        prev[i] = SIZE_MAX;
    }
    qsort(p, cnt, sizeof *p, trec_ptr_cmp);
    for (size_t i = 1; i < cnt; i++)
        if (name_cmp(p[i]->ti.name, p[i]->ti.name_len, p[i - 1]->ti.name,
                     p[i - 1]->ti.name_len) == 0)
            prev[p[i] - t] = (size_t)(p[i - 1] - t);
    /* Reported in header order, so the deferred strict error is the first
     * duplicate a reader of the file would meet. */
    for (size_t i = 0; i < cnt; i++) {
        if (prev[i] == SIZE_MAX) continue;
        const stf__tensor_record *a = &t[prev[i]];
        rc = stf__hreport(c, STF__LV_STRICT, "S13", "DuplicateKey", t[i].ti.name,
                          t[i].ti.name_len, 1, t[i].ti.header_offset,
                          "duplicate tensor name (also at byte %llu); the reference keeps "
                          "this last one",
                          (unsigned long long)a->ti.header_offset);
        if (rc) goto done;
    }
    /* A record is dropped when a later one has its name: keep-last. */
    for (size_t i = 0; i < cnt; i++) p[i] = NULL;
    for (size_t i = 0; i < cnt; i++)
        if (prev[i] != SIZE_MAX) p[prev[i]] = &t[i]; /* mark as superseded */
    for (size_t i = 0; i < cnt; i++)
        if (!p[i]) t[out++] = t[i];
    *n = out;
done:
    stf__free(p);
    stf__free(prev);
    return rc;
}

/* S13 for __metadata__ keys; contract in header_internal.h. */
int stf__validate_dup_meta(stf_meta_entry *m, uint64_t *key_off, size_t *n, stf__header_ctx *c)
{
    size_t cnt = *n, out = 0;
    const stf_meta_entry **p = NULL;
    size_t *first = NULL; /* index of the first entry with the same key */
    int rc = 0;
    if (cnt < 2) return 0;
    p = stf__malloc(cnt * sizeof *p);
    first = stf__malloc(cnt * sizeof *first);
    if (!p || !first) {
        rc = stf__err(c->err, STF_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    for (size_t i = 0; i < cnt; i++) {
        p[i] = &m[i];
        first[i] = SIZE_MAX;
    }
    qsort(p, cnt, sizeof *p, meta_ptr_cmp);
    for (size_t i = 1; i < cnt; i++)
        if (name_cmp(p[i]->key, p[i]->key_len, p[i - 1]->key, p[i - 1]->key_len) == 0) {
            size_t f = first[p[i - 1] - m];
            first[p[i] - m] = f == SIZE_MAX ? (size_t)(p[i - 1] - m) : f;
        }
    for (size_t i = 0; i < cnt; i++) {
        if (first[i] == SIZE_MAX) continue;
        char key[128];
        rc = stf__hreport(c, STF__LV_STRICT, "S13", "DuplicateKey", NULL, 0, 1, key_off[i],
                          "duplicate __metadata__ key \"%s\" (first at byte %llu); the last "
                          "value is kept",
                          stf__name_render(key, sizeof key, m[i].key, m[i].key_len),
                          (unsigned long long)key_off[first[i]]);
        if (rc) goto done;
        /* Python dicts and serde maps both end up with the last value. */
        m[first[i]].value = m[i].value;
        m[first[i]].value_len = m[i].value_len;
    }
    for (size_t i = 0; i < cnt; i++)
        if (first[i] == SIZE_MAX) {
            key_off[out] = key_off[i];
            m[out++] = m[i];
        }
    *n = out;
done:
    stf__free(p);
    stf__free(first);
    return rc;
}

/* (begin, end) as the reference sorts; name bytes make ties deterministic. */
static int geom_cmp(const void *x, const void *y)
{
    const stf__tensor_record *a = x, *b = y;
    if (a->ti.begin != b->ti.begin) return a->ti.begin < b->ti.begin ? -1 : 1;
    if (a->ti.end != b->ti.end) return a->ti.end < b->ti.end ? -1 : 1;
    return name_cmp(a->ti.name, a->ti.name_len, b->ti.name, b->ti.name_len);
}

/* "F32 [2,2]" for messages; long shapes are cut. */
static const char *shape_text(char *buf, size_t cap, const stf_tensor_info *ti)
{
    size_t o = (size_t)snprintf(buf, cap, "%s [", stf_dtype_name(ti->dtype));
    for (unsigned i = 0; i < ti->rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", i ? "," : "",
                              (unsigned long long)ti->shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* S15-S20 in the reference order; contract in header_internal.h. */
int stf__validate_geometry(stf__tensor_record *t, size_t n, uint64_t hdr_n, uint64_t file_size,
                           uint64_t *data_size, stf__header_ctx *c)
{
    uint64_t cursor = 0, end_abs = 0;
    char sh[200];
    int rc;
    if (n > 1) qsort(t, n, sizeof *t, geom_cmp);
    for (size_t i = 0; i < n; i++) {
        stf_tensor_info *ti = &t[i].ti;
        uint64_t nelem = 1, bits;
        if (ti->begin != cursor || ti->end < ti->begin)
            return stf__hreport(c, STF__LV_REF, "S15", "InvalidOffset", ti->name, ti->name_len,
                                1, t[i].offs_off, "data_offsets [%llu,%llu] %s %llu",
                                (unsigned long long)ti->begin, (unsigned long long)ti->end,
                                ti->begin != cursor ? "do not start at" : "end before they "
                                                                          "begin, cursor",
                                (unsigned long long)cursor);
        for (unsigned d = 0; d < ti->rank; d++)
            if (stf__mul_u64(&nelem, nelem, ti->shape[d]))
                return stf__hreport(c, STF__LV_REF, "S16", "ValidationOverflow", ti->name,
                                    ti->name_len, 1, t[i].shape_off,
                                    "the element count of %s overflows 64 bits",
                                    shape_text(sh, sizeof sh, ti));
        if (stf__mul_u64(&bits, nelem, stf_dtype_bits(ti->dtype)))
            return stf__hreport(c, STF__LV_REF, "S16", "ValidationOverflow", ti->name,
                                ti->name_len, 1, t[i].shape_off,
                                "the bit count of %s (%llu elements) overflows 64 bits",
                                shape_text(sh, sizeof sh, ti), (unsigned long long)nelem);
        if (bits % 8 != 0)
            return stf__hreport(c, STF__LV_REF, "S17", "MisalignedSlice", ti->name,
                                ti->name_len, 1, t[i].shape_off,
                                "%s is %llu bits, not a whole number of bytes",
                                shape_text(sh, sizeof sh, ti), (unsigned long long)bits);
        if (ti->end - ti->begin != bits / 8)
            return stf__hreport(c, STF__LV_REF, "S18", "TensorInvalidInfo", ti->name,
                                ti->name_len, 1, t[i].offs_off,
                                "data_offsets [%llu,%llu] hold %llu bytes, but %s needs %llu",
                                (unsigned long long)ti->begin, (unsigned long long)ti->end,
                                (unsigned long long)(ti->end - ti->begin),
                                shape_text(sh, sizeof sh, ti), (unsigned long long)(bits / 8));
        ti->nelem = nelem;
        ti->nbytes = ti->end - ti->begin;
        cursor = ti->end;
    }
    int ovf = stf__add_u64(&end_abs, 8 + hdr_n, cursor);
    if (ovf || (end_abs != file_size && file_size != STF__SIZE_FROM_HEADER)) {
        int fits = !ovf;
        return stf__hreport(c, STF__LV_REF, "S19", "MetadataIncompleteBuffer", NULL, 0, 1,
                            8 + hdr_n,
                            "the tensors cover %llu data bytes, so the file should be %s%llu "
                            "bytes, but it is %llu",
                            (unsigned long long)cursor, fits ? "" : "more than ",
                            (unsigned long long)(fits ? end_abs : UINT64_MAX),
                            (unsigned long long)file_size);
    }
    for (size_t i = 0; i < n; i++) {
        const stf_tensor_info *ti = &t[i].ti;
        if (ti->nbytes != 0) continue;
        int alias = (i > 0 && t[i - 1].ti.begin == ti->begin) ||
                    (i + 1 < n && t[i + 1].ti.begin == ti->begin);
        if (!alias) continue;
        rc = stf__hreport(c, STF__LV_WARN, "S20", "ZeroSizeAlias", ti->name, ti->name_len, 1,
                          t[i].offs_off,
                          "zero-size tensor at data offset %llu shares it with another tensor",
                          (unsigned long long)ti->begin);
        if (rc) return rc;
    }
    *data_size = cursor;
    return 0;
}
