/*
 * Canonical-form checks S21-S25 (stfix-checks(7), CONTAINER RULES): is a file
 * byte-identical to what the canonical writer would emit, and if not, which
 * rule does it break first. The verdict is a byte comparison with the
 * writer's own header text, so the two can never disagree; the scan below
 * only explains a mismatch.
 */
#include <string.h>

#include "container/writer_internal.h"

/* What one pass over the (already validated) header JSON found. */
typedef struct scan {
    size_t js, je;          /* JSON value start and end (exclusive) */
    int ws;                 /* whitespace between tokens inside the value */
    size_t ws_pos;
    int esc;                /* a non-serde escape or a minus sign */
    size_t esc_pos;
    int meta_late;          /* __metadata__ is not the first member */
    int have_meta;
    size_t meta_pos;
    int fields;             /* tensor fields not dtype, shape, data_offsets */
    size_t fields_pos;
} scan;

#define MAX_DEPTH 8

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Is the escape at s[i] (s[i] == '\\') what the canonical writer would emit? */
static int escape_canonical(const uint8_t *s, size_t n, size_t i)
{
    if (i + 1 >= n) return 0;
    switch (s[i + 1]) {
    case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't': return 1;
    case 'u': break;
    default: return 0; /* "\/" decodes to '/', which goes out raw */
    }
    if (i + 5 >= n || s[i + 2] != '0' || s[i + 3] != '0') return 0;
    uint8_t h = s[i + 4], l = s[i + 5];
    if (h != '0' && h != '1') return 0;
    if (!((l >= '0' && l <= '9') || (l >= 'a' && l <= 'f'))) return 0;
    unsigned v = (unsigned)(h - '0') * 16u + (unsigned)(l <= '9' ? l - '0' : l - 'a' + 10);
    /* The five with short forms must use them. */
    return v != 0x08 && v != 0x0C && v != 0x0A && v != 0x0D && v != 0x09;
}

static const char *const field_order[3] = { "dtype", "shape", "data_offsets" };

static void scan_header(scan *sc, const uint8_t *s, size_t n)
{
    memset(sc, 0, sizeof *sc);
    size_t i = 0;
    while (i < n && is_ws(s[i])) i++;
    sc->js = i;
    char kind[MAX_DEPTH];     /* '{' or '[' per open container */
    unsigned nkeys[MAX_DEPTH]; /* members seen per open object */
    int tensor_obj[MAX_DEPTH];
    int depth = 0, expect_key = 0, top_key_is_meta = 0;
    for (; i < n; i++) {
        uint8_t c = s[i];
        if (is_ws(c)) {
            if (depth == 0) break;
            if (!sc->ws) { sc->ws = 1; sc->ws_pos = i; }
            continue;
        }
        if (c == '"') {
            size_t st = ++i;
            while (i < n && s[i] != '"') {
                if (s[i] == '\\') {
                    if (!sc->esc && !escape_canonical(s, n, i)) { sc->esc = 1; sc->esc_pos = i; }
                    i++;
                }
                i++;
            }
            size_t len = i - st;
            if (expect_key && depth >= 1 && depth <= MAX_DEPTH) {
                unsigned k = nkeys[depth - 1]++;
                if (depth == 1) {
                    top_key_is_meta = len == 12 && !memcmp(s + st, "__metadata__", 12);
                    if (top_key_is_meta) {
                        sc->have_meta = 1;
                        sc->meta_pos = st - 1;
                        if (k && !sc->meta_late) sc->meta_late = 1;
                    }
                } else if (depth == 2 && tensor_obj[1]) {
                    if (!sc->fields && (k >= 3 || strlen(field_order[k]) != len ||
                                        memcmp(s + st, field_order[k], len))) {
                        sc->fields = 1;
                        sc->fields_pos = st - 1;
                    }
                }
            }
            expect_key = 0;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth < MAX_DEPTH) {
                kind[depth] = (char)c;
                nkeys[depth] = 0;
                tensor_obj[depth] = depth == 1 && c == '{' && !top_key_is_meta;
            }
            depth++;
            expect_key = c == '{';
            continue;
        }
        if (c == '}' || c == ']') {
            depth--;
            expect_key = 0;
            if (depth == 0) {
                sc->je = i + 1;
                return;
            }
            continue;
        }
        if (c == ',') {
            expect_key = depth >= 1 && depth <= MAX_DEPTH && kind[depth - 1] == '{';
            continue;
        }
        if (c == '-' && !sc->esc) { sc->esc = 1; sc->esc_pos = i; }
    }
    sc->je = i;
}

static int add(stf__findings *f, const char *rule, const char *path,
               const stf_tensor_info *tensor, uint64_t off, const char *what, stf_err *err)
{
    if (stf__findings_add(f, rule, STF_SEV_INFO, path, tensor ? tensor->name : NULL,
                          tensor ? tensor->name_len : 0, 1, off,
                          "%s: %s not canonical: %s (byte %llu)", path, rule, what,
                          (unsigned long long)off))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    return 0;
}

int stf__canon_check(int *is_canonical, const uint8_t *hdr, uint64_t n,
                     const stf_tensor_info *t, size_t nt, const stf_meta_entry *meta,
                     size_t nmeta, int has_meta, const char *path, stf__findings *f,
                     stf_err *err)
{
    int rc = 0;
    stf_buf want;
    stf__buf_init(&want);
    stf_tensor_info *w = stf__calloc(nt ? nt : 1, sizeof *w);
    *is_canonical = 0;
    if (!w) goto oom;
    if (nt) memcpy(w, t, nt * sizeof *w);
    if (stf__canon_order(w, nt, NULL)) goto done; /* cannot happen for a valid file */
    rc = stf__canon_header(&want, w, nt, meta, nmeta, has_meta, err);
    if (rc == STF_ENOMEM) goto done;
    rc = 0;
    if (want.len == n && !memcmp(want.data, hdr, (size_t)n)) {
        *is_canonical = 1;
        goto done;
    }
    if (!f) goto done;

    scan sc;
    scan_header(&sc, hdr, (size_t)n);
    int any = 0;
    /* S21: padding is trailing spaces only, minimal, and N % 8 == 0. */
    size_t pad_bad = sc.js ? 0 : SIZE_MAX;
    for (size_t i = sc.je; i < n && pad_bad == SIZE_MAX; i++)
        if (hdr[i] != ' ') pad_bad = i;
    if (pad_bad == SIZE_MAX && (n % 8 || n - sc.je >= 8)) pad_bad = sc.je;
    if (pad_bad != SIZE_MAX) {
        if ((rc = add(f, "S21", path, NULL, 8 + pad_bad,
                      "padding must be trailing spaces up to a multiple of 8", err)))
            goto done;
        any = 1;
    }
    /* S22: compact, __metadata__ first, tensors in offset order, field order. */
    const char *s22 = NULL;
    uint64_t s22_off = 0;
    const stf_tensor_info *s22_tensor = NULL;
    if (sc.ws) { s22 = "whitespace inside the JSON"; s22_off = 8 + sc.ws_pos; }
    else if (sc.meta_late) { s22 = "__metadata__ is not the first member"; s22_off = 8 + sc.meta_pos; }
    else if (sc.fields) { s22 = "tensor fields are not in the order dtype, shape, data_offsets"; s22_off = 8 + sc.fields_pos; }
    else
        for (size_t i = 1; i < nt; i++)
            if (t[i].header_offset < t[i - 1].header_offset) {
                s22 = "tensor members are not in data-offset order";
                s22_off = t[i].header_offset;
                s22_tensor = &t[i];
                break;
            }
    if (s22) {
        if ((rc = add(f, "S22", path, s22_tensor, s22_off, s22, err))) goto done;
        any = 1;
    }
    /* S23: offset order equals writer order. */
    for (size_t i = 0; i < nt; i++)
        if (t[i].name_len != w[i].name_len || memcmp(t[i].name, w[i].name, t[i].name_len)) {
            if ((rc = add(f, "S23", path, &t[i], t[i].header_offset,
                          "data order is not dtype descending, then name", err)))
                goto done;
            any = 1;
            break;
        }
    /* S24: metadata keys strictly increasing bytewise (no duplicates). */
    for (size_t i = 1; i < nmeta; i++)
        if (stf__bytes_cmp(meta[i - 1].key, meta[i - 1].key_len, meta[i].key, meta[i].key_len) >= 0) {
            if ((rc = add(f, "S24", path, NULL, 8 + sc.meta_pos,
                          "__metadata__ keys are not sorted bytewise", err)))
                goto done;
            any = 1;
            break;
        }
    /* S25: plain decimal numbers, serde string escapes. */
    if (sc.esc) {
        if ((rc = add(f, "S25", path, NULL, 8 + sc.esc_pos,
                      "a number or string escape differs from the canonical writer's", err)))
            goto done;
        any = 1;
    }
    if (!any) {
        /* Whatever remains (e.g. a dropped duplicate) shows as a byte diff. */
        size_t i = 0, m = want.len < n ? want.len : (size_t)n;
        while (i < m && want.data[i] == (char)hdr[i]) i++;
        if ((rc = add(f, "S22", path, NULL, 8 + i,
                      "differs from the canonical header text", err)))
            goto done;
    }
    goto done;
oom:
    rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
done:
    stf__free(w);
    stf__buf_free(&want);
    return rc;
}

/* Gather shard k's tensors and metadata through the public accessors. */
static int shard_canon(const stf_ckpt *c, size_t k, size_t *ti, int *is_canon,
                       stf__findings *f, stf_err *err)
{
    int rc = 0;
    const char *path = stf_ckpt_shard_path(c, k);
    const stf__source *src = stf__ckpt_shard_source(c, k);
    uint64_t n = stf_ckpt_shard_header_len(c, k);
    size_t nm = stf_ckpt_meta_count(c, k), nt = 0, total = stf_ckpt_tensor_count(c);
    while (*ti + nt < total && stf_ckpt_tensor(c, *ti + nt)->shard == k) nt++;
    uint8_t *copy = NULL;
    stf_tensor_info *t = stf__calloc(nt ? nt : 1, sizeof *t);
    stf_meta_entry *m = stf__calloc(nm ? nm : 1, sizeof *m);
    if (!t || !m || !src) {
        rc = src ? stf__err(err, STF_ENOMEM, "%s: out of memory", path)
                 : stf__err(err, STF_EINVAL, "%s: no source for shard %zu", path, k);
        goto done;
    }
    for (size_t i = 0; i < nt; i++) t[i] = *stf_ckpt_tensor(c, *ti + i);
    for (size_t i = 0; i < nm; i++) m[i] = *stf_ckpt_meta(c, k, i);
    const uint8_t *hdr = stf__source_data(src);
    if (hdr) hdr += 8;
    else {
        copy = stf__malloc(n ? (size_t)n : 1);
        if (!copy) {
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
            goto done;
        }
        if ((rc = stf__source_read(src, 8, copy, (size_t)n, err))) goto done;
        hdr = copy;
    }
    rc = stf__canon_check(is_canon, hdr, n, t, nt, m, nm, stf_ckpt_shard_has_meta(c, k), path,
                          f, err);
done:
    *ti += nt;
    stf__free(copy);
    stf__free(t);
    stf__free(m);
    return rc;
}

int stf__ckpt_canon_findings(stf_ckpt *c, stf_err *err)
{
    stf__findings *f = stf__ckpt_findings(c);
    size_t ti = 0;
    for (size_t k = 0; k < stf_ckpt_shard_count(c); k++) {
        int canon;
        int rc = shard_canon(c, k, &ti, &canon, f, err);
        if (rc) return rc;
    }
    return 0;
}

/*
 * Recomputed from the bytes rather than from recorded findings, so the
 * answer does not depend on how the checkpoint was opened. 0 also when the
 * header cannot be re-read.
 */
int stf_ckpt_shard_is_canonical(const stf_ckpt *c, size_t shard)
{
    if (!c || shard >= stf_ckpt_shard_count(c)) return 0;
    size_t ti = 0;
    for (size_t k = 0; k < shard; k++)
        while (ti < stf_ckpt_tensor_count(c) && stf_ckpt_tensor(c, ti)->shard == k) ti++;
    int canon = 0;
    if (shard_canon(c, shard, &ti, &canon, NULL, NULL)) return 0;
    return canon;
}
