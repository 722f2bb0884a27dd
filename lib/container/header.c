/*
 * The strict safetensors header reader: framing (S1-S3), then a lexical
 * pass over the whole header (S4-S7, nesting cap), then a second walk over
 * the same tokens that builds the tensor table and __metadata__ (S8-S14),
 * then the geometry of validate.c (S15-S20). See stfix-checks(7), CONTAINER
 * RULES and RESOURCE LIMITS.
 *
 * cJSON is not used: the token stream already carries every offset, and
 * the table needs exact u64 numbers that cJSON cannot give (lib/README.md,
 * Why not cJSON).
 *
 * Resource caps (lib/README.md, Resource caps), all STF_ELIMIT, each with its
 * own rule id:
 *
 *   id  cap (stf_open_opts field)            default      what is counted
 *   L1  header length   (max_header)         100,000,000  N; above 10^8 is S2
 *   L2  tensors per file (max_tensors)       1,000,000    top-level tensor entries
 *   L3  rank            (max_rank)           8            entries of one "shape"
 *   L4  tensor name     (max_name)           4,096        bytes after unescaping
 *   L5  metadata entries (max_meta_entries)  65,536       members of __metadata__
 *   L6  JSON nesting    (fixed)              3            root, tensor, array
 *
 * A dimension or offset above max_dim (default 2^48-1) is S12, a STRICT
 * rule, not a cap: the value is still read exactly.
 *
 * Verdicts: REF rules fail at once (STF_EFORMAT). STRICT rules are warnings
 * unless o->strict, and then the first one is held back until every REF
 * check has passed, so both modes agree on the primary verdict (the
 * reference's test_validation_overflow fixtures).
 * Duplicates follow what serde ends up holding: the last tensor of a name
 * wins (S13 warns), a metadata key keeps its first position and its last
 * value, and a second "__metadata__" or a repeated tensor field is REF.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "container/header_internal.h"
#include "container/json_lex.h"

#define HEADER_REF_MAX UINT64_C(100000000) /* S2: the reference's limit, 10^8 */
#define HEADER_MAX_DEPTH 3u

/* The size of version 2 of stf_open_opts. */
#define OPEN_OPTS_V2 (offsetof(stf_open_opts, zstd_cache_frames) + sizeof(unsigned))

/* Fill `o` with the documented defaults (lib/README.md, Resource caps). */
void stf_open_opts_init_version(stf_open_opts *o, unsigned version)
{
    /* Version 1 is the layout up to canon_findings, version 2 up to
     * zstd_cache_frames: fill just that part. */
    if (!o || !stf__opts_reset_v(o, version == 2 ? OPEN_OPTS_V2 : sizeof *o,
                                 offsetof(stf_open_opts, spool_dir), version,
                                 STF_OPEN_OPTS_VERSION))
        return;
    o->max_header = HEADER_REF_MAX;
    o->max_tensors = 1000000u;
    o->max_rank = 8;
    o->max_dim = (UINT64_C(1) << 48) - 1;
    o->max_name = 4096;
    o->max_meta_entries = 65536;
    o->max_shards = 10000;
    o->max_index_size = 100000000u;
    if (version == 1) return;
    o->max_zstd_frame = UINT64_C(64) << 20;
    o->max_zstd_frames = UINT64_C(1) << 24;
    o->zstd_cache_frames = 4;
}

/* Options of any known layout as the current one; see container_internal.h. */
void stf__open_opts_upgrade(stf_open_opts *dst, const stf_open_opts *src)
{
    stf_open_opts_init(dst);
    stf__opts_take(dst, src, src->version == 2 ? OPEN_OPTS_V2 : sizeof *dst,
                   offsetof(stf_open_opts, spool_dir), src->version);
    if (dst->zstd_cache_frames == 0) dst->zstd_cache_frames = 1;
}

/* ------------------------------------------------------------ arena */

/* Names, values and shapes live in a few large blocks (stf__arena), so a
 * header with a million tensors costs a few hundred allocations, not
 * millions. */
typedef stf__arena arena;

static void arena_free(arena *a)
{
    stf__arena_clear(a);
    stf__free(a);
}

/* ------------------------------------------------------------ framing */

static const stf_open_opts *opts_or_default(const stf_open_opts *o, stf_open_opts *tmp)
{
    if (o) return o;
    stf_open_opts_init(tmp);
    return tmp;
}

/* S1-S3 and the L1 cap on the first 8 bytes; contract in container_internal.h. */
int stf__frame_check(uint64_t *n_out, const uint8_t *first, uint64_t file_size,
                     const char *path, const stf_open_opts *o, stf_err *err)
{
    stf_open_opts dflt;
    stf__header_ctx c;
    uint64_t n = 0;
    memset(&c, 0, sizeof c);
    c.path = path ? path : "(input)";
    c.o = opts_or_default(o, &dflt);
    c.err = err;
    if (file_size < 8 || !first)
        return stf__hreport(&c, STF__LV_REF, "S1", "HeaderTooSmall", NULL, 0, 1, 0,
                            "the file is %llu bytes, shorter than the 8-byte header length",
                            (unsigned long long)file_size);
    for (int i = 7; i >= 0; i--) n = (n << 8) | first[i];
    if (n > HEADER_REF_MAX || n > SIZE_MAX)
        return stf__hreport(&c, STF__LV_REF, "S2", "HeaderTooLarge", NULL, 0, 1, 0,
                            "header length %llu exceeds 100000000",
                            (unsigned long long)n);
    if (n > file_size - 8)
        return stf__hreport(&c, STF__LV_REF, "S3", "InvalidHeaderLength", NULL, 0, 1, 0,
                            "header length %llu runs past the end of the %llu-byte file",
                            (unsigned long long)n, (unsigned long long)file_size);
    if (n > c.o->max_header)
        return stf__hreport(&c, STF__LV_LIMIT, "L1", "LimitExceeded", NULL, 0, 1, 0,
                            "header length %llu exceeds the cap of %llu bytes",
                            (unsigned long long)n, (unsigned long long)c.o->max_header);
    *n_out = n;
    return 0;
}

/* ------------------------------------------------------------ the walk */

typedef struct pstate {
    stf__header_ctx *c;
    const uint8_t *hdr;
    stf__json_lexer lx;
    arena *ar;
    unsigned max_rank;
    stf__tensor_record *recs;
    size_t nrec, caprec;
    stf_meta_entry *meta;
    uint64_t *meta_off;
    size_t nmeta, capmeta;
    int has_meta, seen_meta;
} pstate;

#define ABS(pos) ((uint64_t)(pos) + 8u)

static const char *tok_what(int type)
{
    switch (type) {
    case STF__J_LBRACE: return "an object";
    case STF__J_LBRACKET: return "an array";
    case STF__J_STRING: return "a string";
    case STF__J_NUMBER: return "a number";
    case STF__J_TRUE:
    case STF__J_FALSE: return "a boolean";
    case STF__J_NULL: return "null";
    case STF__J_EOF: return "the end of the header";
    default: return "punctuation";
    }
}

static int next_tok(pstate *ps, stf__json_token *t)
{
    stf__json_error e;
    /* The grammar pass already accepted these bytes; failing here means
     * the two passes disagree, which is still reported, never trusted. */
    if (stf__json_lexer_next(&ps->lx, t, &e))
        return stf__hreport(ps->c, STF__LV_REF, "S5", "InvalidHeaderDeserialization", NULL, 0,
                            1, ABS(e.pos), "%s", e.why);
    return 0;
}

/* Expect punctuation of `type` next (guaranteed by the grammar pass). */
static int expect(pstate *ps, int type)
{
    stf__json_token t;
    int rc = next_tok(ps, &t);
    if (rc) return rc;
    if (t.type != type)
        return stf__hreport(ps->c, STF__LV_REF, "S5", "InvalidHeaderDeserialization", NULL, 0,
                            1, ABS(t.pos), "unexpected %s", tok_what(t.type));
    return 0;
}

/* Unescape string token t into the arena, NUL-terminated. */
static int str_dup(pstate *ps, const stf__json_token *t, char **out, size_t *len)
{
    size_t body = t->len - 2;
    char *d = stf__arena_alloc(ps->ar, body + 1);
    if (!d) return stf__err(ps->c->err, STF_ENOMEM, "%s: out of memory", ps->c->path);
    size_t n = body;
    if (t->flags & STF__JS_ESCAPE)
        n = stf__json_unescape((uint8_t *)d, ps->hdr + t->pos + 1, body);
    else if (body)
        memcpy(d, ps->hdr + t->pos + 1, body);
    d[n] = '\0';
    *out = d;
    *len = n;
    return 0;
}

/* Unescape a short string token into buf (cap bytes); 0 if it does not fit. */
static size_t str_small(pstate *ps, const stf__json_token *t, char *buf, size_t cap)
{
    size_t body = t->len - 2;
    if (body >= cap) return 0;
    if (t->flags & STF__JS_ESCAPE)
        return stf__json_unescape((uint8_t *)buf, ps->hdr + t->pos + 1, body);
    memcpy(buf, ps->hdr + t->pos + 1, body);
    return body;
}

/*
 * Skip one value whose first token is t (an ignored extra field). serde
 * still parses it, so a leading-zero number in it is S5.
 */
static int skip_value(pstate *ps, stf__json_token t)
{
    int depth = 0;
    for (;;) {
        int rc;
        if (t.type == STF__J_NUMBER && (t.flags & STF__JN_LEADZERO))
            return stf__hreport(ps->c, STF__LV_REF, "S5", "InvalidHeaderDeserialization",
                                NULL, 0, 1, ABS(t.pos), "invalid number (leading zero)");
        if (t.type == STF__J_LBRACE || t.type == STF__J_LBRACKET) depth++;
        else if (t.type == STF__J_RBRACE || t.type == STF__J_RBRACKET) depth--;
        else if (t.type == STF__J_EOF) return expect(ps, STF__J_RBRACE);
        if (depth == 0) return 0;
        if ((rc = next_tok(ps, &t))) return rc;
    }
}

/* One element of shape or data_offsets: S11 lexically, then S12. */
static int parse_dim(pstate *ps, const stf__json_token *t, const char *field, const char *name,
                     size_t name_len, uint64_t *out)
{
    stf__header_ctx *c = ps->c;
    const uint8_t *lex = ps->hdr + t->pos;
    int shown = t->len > 40 ? 40 : (int)t->len;
    const char *more = t->len > 40 ? "..." : "";
    if (t->type != STF__J_NUMBER)
        return stf__hreport(c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            name_len, 1, ABS(t->pos), "%s holds %s, not an integer", field,
                            tok_what(t->type));
    if (t->flags & (STF__JN_LEADZERO | STF__JN_FRAC | STF__JN_EXP))
        return stf__hreport(c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            name_len, 1, ABS(t->pos),
                            "%s value '%.*s%s' is not a plain decimal integer", field, shown,
                            (const char *)lex, more);
    /* Even -0: serde_json reads it as the float -0.0, and usize refuses a float. */
    if (t->flags & STF__JN_MINUS)
        return stf__hreport(c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            name_len, 1, ABS(t->pos), "%s value '%.*s%s' is %s", field, shown,
                            (const char *)lex, more,
                            t->len == 2 && lex[1] == '0'
                                ? "negative zero, a float to the reference reader"
                                : "negative");
    if (stf__json_u64(out, lex, t->len))
        return stf__hreport(c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            name_len, 1, ABS(t->pos),
                            "%s value '%.*s%s' does not fit in 64 bits", field, shown,
                            (const char *)lex, more);
    if (*out > c->o->max_dim)
        return stf__hreport(c, STF__LV_STRICT, "S12", "ValueTooLarge", name, name_len, 1,
                            ABS(t->pos), "%s value %llu exceeds %llu", field,
                            (unsigned long long)*out, (unsigned long long)c->o->max_dim);
    return 0;
}

/* The shape array (t is its first token). */
static int parse_shape(pstate *ps, const stf__json_token *t, stf__tensor_record *r)
{
    uint64_t dims[STF_MAX_RANK_HARD];
    unsigned rank = 0;
    stf__json_token e;
    int rc;
    const char *name = r->ti.name;
    if (t->type != STF__J_LBRACKET)
        return stf__hreport(ps->c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            r->ti.name_len, 1, ABS(t->pos), "shape is %s, not an array",
                            tok_what(t->type));
    r->shape_off = ABS(t->pos);
    if ((rc = next_tok(ps, &e))) return rc;
    while (e.type != STF__J_RBRACKET) {
        if (rank >= ps->max_rank)
            return stf__hreport(ps->c, STF__LV_LIMIT, "L3", "LimitExceeded", name,
                                r->ti.name_len, 1, ABS(e.pos),
                                "shape has more than %u dimensions", ps->max_rank);
        if ((rc = parse_dim(ps, &e, "shape", name, r->ti.name_len, &dims[rank]))) return rc;
        rank++;
        if ((rc = next_tok(ps, &e))) return rc;
        if (e.type == STF__J_COMMA && (rc = next_tok(ps, &e))) return rc;
    }
    r->ti.rank = rank;
    r->ti.shape = NULL;
    if (rank) {
        uint64_t *s = stf__arena_alloc(ps->ar, rank * sizeof *s);
        if (!s) return stf__err(ps->c->err, STF_ENOMEM, "%s: out of memory", ps->c->path);
        memcpy(s, dims, rank * sizeof *s);
        r->ti.shape = s;
    }
    return 0;
}

static int parse_offsets(pstate *ps, const stf__json_token *t, stf__tensor_record *r)
{
    uint64_t v[2] = { 0, 0 };
    unsigned k = 0;
    stf__json_token e;
    int rc;
    const char *name = r->ti.name;
    if (t->type != STF__J_LBRACKET)
        return stf__hreport(ps->c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            r->ti.name_len, 1, ABS(t->pos), "data_offsets is %s, not an array",
                            tok_what(t->type));
    r->offs_off = ABS(t->pos);
    if ((rc = next_tok(ps, &e))) return rc;
    while (e.type != STF__J_RBRACKET) {
        if (k == 2)
            return stf__hreport(ps->c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                                r->ti.name_len, 1, ABS(e.pos),
                                "data_offsets has more than 2 values");
        if ((rc = parse_dim(ps, &e, "data_offsets", name, r->ti.name_len, &v[k]))) return rc;
        k++;
        if ((rc = next_tok(ps, &e))) return rc;
        if (e.type == STF__J_COMMA && (rc = next_tok(ps, &e))) return rc;
    }
    if (k != 2)
        return stf__hreport(ps->c, STF__LV_REF, "S11", "InvalidHeaderDeserialization", name,
                            r->ti.name_len, 1, ABS(e.pos), "data_offsets has %u values, not 2",
                            k);
    r->ti.begin = v[0];
    r->ti.end = v[1];
    return 0;
}

static int parse_dtype(pstate *ps, const stf__json_token *t, stf__tensor_record *r)
{
    char buf[80];
    size_t len = 0;
    if (t->type == STF__J_STRING) {
        len = str_small(ps, t, buf, sizeof buf);
        if (len && stf_dtype_from_name(&r->ti.dtype, buf, len) == 0) return 0;
    }
    if (t->type != STF__J_STRING)
        return stf__hreport(ps->c, STF__LV_REF, "S10", "InvalidHeaderDeserialization",
                            r->ti.name, r->ti.name_len, 1, ABS(t->pos),
                            "dtype is %s, not a string", tok_what(t->type));
    {
        char shown[64];
        size_t body = t->len - 2;
        stf__name_render(shown, sizeof shown, (const char *)ps->hdr + t->pos + 1, body);
        return stf__hreport(ps->c, STF__LV_REF, "S10", "InvalidHeaderDeserialization",
                            r->ti.name, r->ti.name_len, 1, ABS(t->pos),
                            "unknown dtype \"%s\"", shown);
    }
}

/* S14 on an unescaped name: non-empty, no control characters (C0, DEL,
 * C1), no U+0000. */
static int check_name(pstate *ps, const char *name, size_t len, uint64_t off)
{
    stf__header_ctx *c = ps->c;
    if (len == 0)
        return stf__hreport(c, STF__LV_STRICT, "S14", "InvalidTensorName", name, len, 1, off,
                            "the tensor name is empty");
    if (memchr(name, '\0', len))
        return stf__hreport(c, STF__LV_STRICT, "S14", "InvalidTensorName", name, len, 1, off,
                            "the tensor name contains U+0000");
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        int ctl = ch < 0x20 || ch == 0x7F ||
                  (ch == 0xC2 && i + 1 < len && (unsigned char)name[i + 1] < 0xA0);
        if (ctl)
            return stf__hreport(c, STF__LV_STRICT, "S14", "InvalidTensorName", name, len, 1,
                                off, "the tensor name contains a control character");
    }
    if (len > c->o->max_name)
        return stf__hreport(c, STF__LV_LIMIT, "L4", "LimitExceeded", name, len, 1, off,
                            "the tensor name is %zu bytes, more than the cap of %zu", len,
                            c->o->max_name);
    return 0;
}

enum { F_DTYPE = 1, F_SHAPE = 2, F_OFFSETS = 4 };

/* A top-level member other than __metadata__; the key is already read. */
static int parse_tensor(pstate *ps, const stf__json_token *key)
{
    stf__header_ctx *c = ps->c;
    stf__tensor_record *r;
    stf__json_token t;
    unsigned seen = 0;
    int rc;
    char *name;
    size_t name_len;

    /* An escape shrinks at most 6 bytes to 1, so a raw name over 6x the cap
     * is refused before a copy of it is allocated. */
    if (key->len - 2 > c->o->max_name && (key->len - 2) / 6 > c->o->max_name)
        return stf__hreport(c, STF__LV_LIMIT, "L4", "LimitExceeded", NULL, 0, 1,
                            ABS(key->pos), "a tensor name of %zu raw bytes exceeds the cap of %zu",
                            key->len - 2, c->o->max_name);
    if ((rc = str_dup(ps, key, &name, &name_len))) return rc;
    if ((rc = check_name(ps, name, name_len, ABS(key->pos)))) return rc;
    if (ps->nrec >= c->o->max_tensors)
        return stf__hreport(c, STF__LV_LIMIT, "L2", "LimitExceeded", name, name_len, 1,
                            ABS(key->pos), "more than %llu tensors",
                            (unsigned long long)c->o->max_tensors);
    if (ps->nrec == ps->caprec) {
        size_t cap = ps->caprec ? ps->caprec * 2 : 16;
        stf__tensor_record *v =
            cap > SIZE_MAX / sizeof *v ? NULL : stf__realloc(ps->recs, cap * sizeof *v);
        if (!v) return stf__err(c->err, STF_ENOMEM, "%s: out of memory", c->path);
        ps->recs = v;
        ps->caprec = cap;
    }
    r = &ps->recs[ps->nrec];
    memset(r, 0, sizeof *r);
    r->ti.name = name;
    r->ti.name_len = name_len;
    r->ti.header_offset = ABS(key->pos);

    if ((rc = next_tok(ps, &t))) return rc;
    if (t.type != STF__J_LBRACE)
        return stf__hreport(c, STF__LV_REF, "S9", "InvalidHeaderDeserialization", name, name_len,
                            1, ABS(t.pos), "the entry is %s, not a tensor object",
                            tok_what(t.type));
    if ((rc = next_tok(ps, &t))) return rc;
    while (t.type != STF__J_RBRACE) {
        stf__json_token v;
        char fbuf[80];
        size_t flen = 0;
        unsigned f = 0;
        if (t.type != STF__J_STRING) return expect(ps, STF__J_STRING);
        flen = str_small(ps, &t, fbuf, sizeof fbuf);
        if (flen == 5 && memcmp(fbuf, "dtype", 5) == 0) f = F_DTYPE;
        else if (flen == 5 && memcmp(fbuf, "shape", 5) == 0) f = F_SHAPE;
        else if (flen == 12 && memcmp(fbuf, "data_offsets", 12) == 0) f = F_OFFSETS;
        if (f && (seen & f))
            return stf__hreport(c, STF__LV_REF, "S9", "InvalidHeaderDeserialization", name,
                                name_len, 1, ABS(t.pos), "duplicate field `%.*s`", (int)flen,
                                fbuf);
        if (!f) {
            char shown[64];
            stf__name_render(shown, sizeof shown, (const char *)ps->hdr + t.pos + 1, t.len - 2);
            rc = stf__hreport(c, STF__LV_STRICT, "S9", "UnknownField", name, name_len, 1,
                              ABS(t.pos), "unknown field \"%s\"", shown);
            if (rc) return rc;
        }
        seen |= f;
        if ((rc = expect(ps, STF__J_COLON))) return rc;
        if ((rc = next_tok(ps, &v))) return rc;
        if (f == F_DTYPE) rc = parse_dtype(ps, &v, r);
        else if (f == F_SHAPE) rc = parse_shape(ps, &v, r);
        else if (f == F_OFFSETS) rc = parse_offsets(ps, &v, r);
        else rc = skip_value(ps, v);
        if (rc) return rc;
        if ((rc = next_tok(ps, &t))) return rc;
        if (t.type == STF__J_COMMA && (rc = next_tok(ps, &t))) return rc;
    }
    /* serde reports the first missing field in declaration order. */
    if (seen != (F_DTYPE | F_SHAPE | F_OFFSETS)) {
        const char *miss = !(seen & F_DTYPE) ? "dtype" : !(seen & F_SHAPE) ? "shape"
                                                                           : "data_offsets";
        return stf__hreport(c, STF__LV_REF, "S9", "InvalidHeaderDeserialization", name,
                            name_len, 1, ABS(key->pos), "missing field `%s`", miss);
    }
    ps->nrec++;
    return 0;
}

static int parse_meta(pstate *ps, const stf__json_token *key)
{
    stf__header_ctx *c = ps->c;
    stf__json_token t, v;
    int rc;
    /* serde's derived struct refuses a second __metadata__ outright, unlike
     * duplicate tensor names which its flattened map silently merges. */
    if (ps->seen_meta)
        return stf__hreport(c, STF__LV_REF, "S13", "InvalidHeaderDeserialization", NULL, 0, 1,
                            ABS(key->pos), "duplicate field `__metadata__`");
    ps->seen_meta = 1;
    if ((rc = next_tok(ps, &t))) return rc;
    if (t.type == STF__J_NULL)
        return stf__hreport(c, STF__LV_STRICT, "S8", "MetadataNull", NULL, 0, 1, ABS(t.pos),
                            "__metadata__ is null");
    if (t.type != STF__J_LBRACE)
        return stf__hreport(c, STF__LV_REF, "S8", "InvalidHeaderDeserialization", NULL, 0, 1,
                            ABS(t.pos), "__metadata__ is %s, not an object", tok_what(t.type));
    ps->has_meta = 1;
    if ((rc = next_tok(ps, &t))) return rc;
    while (t.type != STF__J_RBRACE) {
        stf_meta_entry *m;
        char *k, *val;
        size_t klen, vlen;
        if (t.type != STF__J_STRING) return expect(ps, STF__J_STRING);
        if ((rc = expect(ps, STF__J_COLON))) return rc;
        if ((rc = next_tok(ps, &v))) return rc;
        if (v.type != STF__J_STRING) {
            char shown[64];
            stf__name_render(shown, sizeof shown, (const char *)ps->hdr + t.pos + 1, t.len - 2);
            return stf__hreport(c, STF__LV_REF, "S8", "InvalidHeaderDeserialization", NULL, 0, 1,
                                ABS(v.pos), "__metadata__ value of \"%s\" is %s, not a string",
                                shown, tok_what(v.type));
        }
        if (ps->nmeta >= c->o->max_meta_entries)
            return stf__hreport(c, STF__LV_LIMIT, "L5", "LimitExceeded", NULL, 0, 1, ABS(t.pos),
                                "__metadata__ has more than %zu entries",
                                c->o->max_meta_entries);
        if (ps->nmeta == ps->capmeta) {
            size_t cap = ps->capmeta ? ps->capmeta * 2 : 8;
            stf_meta_entry *nm = cap > SIZE_MAX / sizeof *nm ? NULL
                                     : stf__realloc(ps->meta, cap * sizeof *nm);
            if (nm) ps->meta = nm;
            uint64_t *no = nm ? stf__realloc(ps->meta_off, cap * sizeof *no) : NULL;
            if (!no) return stf__err(c->err, STF_ENOMEM, "%s: out of memory", c->path);
            ps->meta_off = no;
            ps->capmeta = cap;
        }
        if ((rc = str_dup(ps, &t, &k, &klen)) || (rc = str_dup(ps, &v, &val, &vlen))) return rc;
        m = &ps->meta[ps->nmeta];
        m->key = k;
        m->key_len = klen;
        m->value = val;
        m->value_len = vlen;
        ps->meta_off[ps->nmeta] = ABS(t.pos);
        ps->nmeta++;
        if ((rc = next_tok(ps, &t))) return rc;
        if (t.type == STF__J_COMMA && (rc = next_tok(ps, &t))) return rc;
    }
    return 0;
}

static int parse_root(pstate *ps)
{
    stf__json_token t;
    int rc;
    if ((rc = expect(ps, STF__J_LBRACE))) return rc;
    if ((rc = next_tok(ps, &t))) return rc;
    while (t.type != STF__J_RBRACE) {
        char kbuf[80];
        size_t klen;
        if (t.type != STF__J_STRING) return expect(ps, STF__J_STRING);
        if ((rc = expect(ps, STF__J_COLON))) return rc;
        /* Compare unescaped: serde sees "\u005f_metadata__" as the field. */
        klen = str_small(ps, &t, kbuf, sizeof kbuf);
        if (klen == 12 && memcmp(kbuf, "__metadata__", 12) == 0) rc = parse_meta(ps, &t);
        else rc = parse_tensor(ps, &t);
        if (rc) return rc;
        if ((rc = next_tok(ps, &t))) return rc;
        if (t.type == STF__J_COMMA && (rc = next_tok(ps, &t))) return rc;
    }
    return 0;
}

/* S4-S7 and the nesting cap, over all N bytes, before anything is built. */
static int lexical_pass(stf__header_ctx *c, const uint8_t *hdr, size_t n, size_t *members)
{
    stf__json_root jc;
    stf__json_error e;
    size_t good = stf__utf8_valid_prefix(hdr, n);
    int rc;
    if (good != n)
        return stf__hreport(c, STF__LV_REF, "S4", "InvalidHeader", NULL, 0, 1, ABS(good),
                            "the header is not valid UTF-8 (byte 0x%02x)", hdr[good]);
    rc = stf__json_check(&jc, hdr, n, HEADER_MAX_DEPTH, &e);
    if (rc == -2)
        return stf__hreport(c, STF__LV_LIMIT, "L6", "LimitExceeded", NULL, 0, 1, ABS(e.pos),
                            "JSON nesting deeper than %u", HEADER_MAX_DEPTH);
    if (rc)
        return stf__hreport(c, STF__LV_REF, "S5", "InvalidHeaderDeserialization", NULL, 0, 1,
                            ABS(e.pos), "%s", e.why);
    if (jc.root_type != STF__J_LBRACE)
        return stf__hreport(c, STF__LV_REF, "S6", "InvalidHeaderDeserialization", NULL, 0, 1,
                            ABS(jc.root_pos), "the header is %s, not an object",
                            tok_what(jc.root_type));
    if (jc.root_pos != 0 &&
        (rc = stf__hreport(c, STF__LV_STRICT, "S7", "LeadingWhitespace", NULL, 0, 1, ABS(0),
                           "the header starts with whitespace, not '{'")))
        return rc;
    *members = jc.root_members;
    return 0;
}

/*
 * S4-S20 over the N header bytes; contract in container_internal.h. Nothing in
 * the result points into `hdr`, so the caller may free it afterwards.
 */
int stf__header_parse(stf__header **out, const uint8_t *hdr, uint64_t n, uint64_t file_size,
                      const char *path, const stf_open_opts *o, stf__findings *findings,
                      stf_err *err)
{
    stf_open_opts dflt;
    stf__header_ctx c;
    pstate ps;
    stf__header *h = NULL;
    size_t members = 0;
    uint64_t data_size = 0;
    int rc;

    memset(&c, 0, sizeof c);
    memset(&ps, 0, sizeof ps);
    c.path = path ? path : "(input)";
    c.o = opts_or_default(o, &dflt);
    c.findings = findings;
    c.err = err;
    if (!out || (!hdr && n) || n > SIZE_MAX || file_size < 8 || n > file_size - 8)
        return stf__err(err, STF_EINVAL, "%s: header_parse: bad arguments", c.path);
    *out = NULL;

    if ((rc = lexical_pass(&c, hdr, (size_t)n, &members))) goto done;

    ps.c = &c;
    ps.hdr = hdr;
    ps.max_rank = c.o->max_rank > STF_MAX_RANK_HARD ? STF_MAX_RANK_HARD : c.o->max_rank;
    stf__json_lexer_init(&ps.lx, hdr, (size_t)n);
    ps.ar = stf__calloc(1, sizeof *ps.ar);
    if (!ps.ar) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", c.path);
        goto done;
    }
    /* The member count was validated by the grammar pass; sizing by it,
     * bounded by the cap, avoids regrowing a million-entry table. */
    if (members) {
        size_t cap = members < c.o->max_tensors ? members : (size_t)c.o->max_tensors;
        if (cap && cap <= SIZE_MAX / sizeof *ps.recs) {
            ps.recs = stf__malloc(cap * sizeof *ps.recs);
            if (!ps.recs) {
                rc = stf__err(err, STF_ENOMEM, "%s: out of memory", c.path);
                goto done;
            }
            ps.caprec = cap;
        }
    }
    if ((rc = parse_root(&ps))) goto done;
    if ((rc = stf__validate_dup_tensors(ps.recs, &ps.nrec, &c))) goto done;
    if ((rc = stf__validate_dup_meta(ps.meta, ps.meta_off, &ps.nmeta, &c))) goto done;
    if ((rc = stf__validate_geometry(ps.recs, ps.nrec, n, file_size, &data_size, &c))) goto done;
    if (c.has_pending) {
        if (err) *err = c.pending;
        rc = STF_EFORMAT;
        goto done;
    }

    h = stf__calloc(1, sizeof *h);
    if (!h || (ps.nrec && !(h->tensors = stf__malloc(ps.nrec * sizeof *h->tensors)))) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", c.path);
        goto done;
    }
    for (size_t i = 0; i < ps.nrec; i++) h->tensors[i] = ps.recs[i].ti;
    h->n = n;
    h->data_size = data_size;
    h->ntensors = ps.nrec;
    h->has_meta = ps.has_meta;
    h->meta = ps.meta;
    h->nmeta = ps.nmeta;
    h->arena = ps.ar;
    ps.meta = NULL;
    ps.ar = NULL;
    *out = h;
    h = NULL;
    rc = 0;

done:
    /* Summaries of capped warnings belong with any verdict but OOM. */
    if (rc != STF_ENOMEM) {
        int r2 = stf__hreport_flush(&c);
        if (r2 && rc == 0) {
            stf__header_free(*out);
            *out = NULL;
            rc = r2;
        }
    }
    if (h) stf__free(h->tensors);
    stf__free(h);
    stf__free(ps.recs);
    stf__free(ps.meta);
    stf__free(ps.meta_off);
    arena_free(ps.ar);
    return rc;
}

/* Free a parsed header and everything it owns. No-op on NULL. */
void stf__header_free(stf__header *h)
{
    if (!h) return;
    stf__free(h->tensors);
    stf__free(h->meta);
    arena_free(h->arena);
    stf__free(h);
}
