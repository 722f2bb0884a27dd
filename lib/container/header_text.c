/*
 * The canonical header text (lib/README.md, Canonical form): serde_json string
 * escaping, writer order, compact layout, space padding to a multiple of 8.
 * Everything here is byte-exact because tests compare against the
 * reference writer's output.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "container/writer_internal.h"

/*
 * Append `s` (n bytes) as a JSON string literal with serde_json's escaping
 * through stf_json_quote, so the header and the program's JSON
 * share one escaper. Names and metadata reach the writer as checked UTF-8,
 * which that escaper copies raw. Returns 0 or STF_ENOMEM.
 */
int stf__json_put_string(stf_buf *b, const char *s, size_t n)
{
    size_t need = stf_json_quote(NULL, 0, s, n);
    if (stf__buf_reserve(b, need)) return STF_ENOMEM;
    stf_json_quote(b->data + b->len, need + 1, s, n);
    b->len += need;
    return 0;
}

/*
 * Strict UTF-8 (Rust str::from_utf8): no overlong forms, no surrogates,
 * nothing above U+10FFFF, no truncated sequences.
 */
int stf__utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return 0;
        if (n - i < len) return 0;
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        i += len;
    }
    return 1;
}

static int writer_cmp(const void *pa, const void *pb)
{
    const stf_tensor_info *a = pa, *b = pb;
    if (a->dtype != b->dtype) return a->dtype > b->dtype ? -1 : 1;
    return stf__bytes_cmp(a->name, a->name_len, b->name, b->name_len);
}

/*
 * Sort into writer order and assign contiguous offsets. Names are unique
 * among the writer's tensors, so qsort's instability cannot matter.
 */
int stf__canon_order(stf_tensor_info *t, size_t n, stf_err *err)
{
    if (n > 1) qsort(t, n, sizeof *t, writer_cmp);
    uint64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        t[i].begin = cur;
        if (stf__add_u64(&cur, cur, t[i].nbytes)) {
            char shown[STF__NAME_SHOWN];
            return stf__err(err, STF_EINVAL, "tensor '%s': data section size overflows u64",
                            stf__name_render(shown, sizeof shown, t[i].name, t[i].name_len));
        }
        t[i].end = cur;
    }
    return 0;
}

/* Sort key for metadata: the key bytes, then the original position so that
 * the last of equal keys can be kept (Python dict semantics). */
typedef struct meta_ref {
    const stf_meta_entry *e;
    size_t pos;
} meta_ref;

static int meta_cmp(const void *pa, const void *pb)
{
    const meta_ref *a = pa, *b = pb;
    int r = stf__bytes_cmp(a->e->key, a->e->key_len, b->e->key, b->e->key_len);
    if (r) return r;
    return a->pos < b->pos ? -1 : a->pos > b->pos ? 1 : 0;
}

static int put_u64(stf_buf *b, uint64_t v) { return stf__buf_printf(b, "%" PRIu64, v); }

static int put_tensor(stf_buf *b, const stf_tensor_info *t)
{
    if (stf__json_put_string(b, t->name, t->name_len)) return STF_ENOMEM;
    if (stf__buf_puts(b, ":{\"dtype\":")) return STF_ENOMEM;
    const char *dn = stf_dtype_name(t->dtype);
    if (stf__json_put_string(b, dn ? dn : "", dn ? strlen(dn) : 0)) return STF_ENOMEM;
    if (stf__buf_puts(b, ",\"shape\":[")) return STF_ENOMEM;
    for (unsigned d = 0; d < t->rank; d++) {
        if (d && stf__buf_putc(b, ',')) return STF_ENOMEM;
        if (put_u64(b, t->shape[d])) return STF_ENOMEM;
    }
    if (stf__buf_puts(b, "],\"data_offsets\":[") || put_u64(b, t->begin) ||
        stf__buf_putc(b, ',') || put_u64(b, t->end) || stf__buf_puts(b, "]}"))
        return STF_ENOMEM;
    return 0;
}

/*
 * Build the canonical header text. Metadata is sorted through a side array
 * so the caller's entries keep their order.
 */
int stf__canon_header(stf_buf *out, const stf_tensor_info *t, size_t n,
                      const stf_meta_entry *meta, size_t nmeta, int emit_meta, stf_err *err)
{
    int rc = 0;
    meta_ref *refs = NULL;
    size_t start = out->len;

    if (stf__buf_putc(out, '{')) goto oom;
    if (emit_meta || nmeta) {
        if (nmeta) {
            refs = stf__calloc(nmeta, sizeof *refs);
            if (!refs) goto oom;
            for (size_t i = 0; i < nmeta; i++) {
                refs[i].e = &meta[i];
                refs[i].pos = i;
            }
            qsort(refs, nmeta, sizeof *refs, meta_cmp);
        }
        if (stf__buf_puts(out, "\"__metadata__\":{")) goto oom;
        int first = 1;
        for (size_t i = 0; i < nmeta; i++) {
            const stf_meta_entry *e = refs[i].e;
            if (i + 1 < nmeta && !stf__bytes_cmp(e->key, e->key_len, refs[i + 1].e->key,
                                                 refs[i + 1].e->key_len))
                continue; /* a later duplicate replaces this one */
            if (!first && stf__buf_putc(out, ',')) goto oom;
            first = 0;
            if (stf__json_put_string(out, e->key, e->key_len) || stf__buf_putc(out, ':') ||
                stf__json_put_string(out, e->value, e->value_len))
                goto oom;
        }
        if (stf__buf_putc(out, '}')) goto oom;
        if (n && stf__buf_putc(out, ',')) goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        if (i && stf__buf_putc(out, ',')) goto oom;
        if (put_tensor(out, &t[i])) goto oom;
    }
    if (stf__buf_putc(out, '}')) goto oom;
    while ((out->len - start) % 8)
        if (stf__buf_putc(out, ' ')) goto oom;
    if ((uint64_t)(out->len - start) > STF__MAX_HEADER) {
        rc = stf__err_rule(err, STF_ELIMIT, "S2", 0, 0,
                           "S2 HeaderTooLarge: the header would be %zu bytes, more than "
                           "100,000,000",
                           out->len - start);
        goto done;
    }
    goto done;
oom:
    rc = stf__err(err, STF_ENOMEM, "out of memory while building the header text");
done:
    stf__free(refs);
    return rc;
}
