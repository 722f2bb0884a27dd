/*
 * Selectors: a rule's `match` mapping compiled once and evaluated against
 * every layer view. All keys present must hold (logical AND); a key that
 * takes a list holds when any element does (logical OR).
 *
 * Marker values compare by JSON type: `convrot: true` does not select a
 * marker holding 1, because SGLang requires the literal true (R23) and a
 * recipe must be able to find exactly the markers it rejects. Numbers
 * compare by value, so `convrot_groupsize: 256` also selects 256.0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_internal.h"

#define SEL_MAX 16
#define SHAPE_MAX_RANK 8

typedef enum req { REQ_ANY = 0, REQ_PRESENT, REQ_ABSENT } req;
typedef enum dimk { DIM_LIT, DIM_N, DIM_K, DIM_ANY } dimk;
typedef enum vtype { V_NULL, V_BOOL, V_NUM, V_STR, V_OTHER } vtype;

typedef struct shape_pat {
    unsigned rank;
    dimk kind[SHAPE_MAX_RANK];
    uint64_t value[SHAPE_MAX_RANK];
} shape_pat;

typedef struct fvalue {
    vtype type;
    int b;
    double num;
    char *str;
} fvalue;

typedef struct field_cond {
    char *key;
    req want;     /* REQ_ANY: compare with any of the values */
    size_t nvalues;
    fvalue values[SEL_MAX];
} field_cond;

struct stf__selector {
    size_t nglobs;
    char *globs[SEL_MAX];
    stf__regex *re;
    char *re_where; /* "FILE:LINE:COL: PATH" of the regex, for match-time errors */
    stf__regex_set *set; /* while compiling: where regexes are shared */
    size_t nwdtypes;
    stf_dtype wdtypes[SEL_MAX];
    size_t nexprs;
    stf__expr *exprs[SEL_MAX];
    req scale;
    size_t nsdtypes;
    stf_dtype sdtypes[SEL_MAX];
    size_t npats;
    shape_pat pats[SEL_MAX];
    req marker;
    size_t nfields;
    field_cond fields[SEL_MAX];
    size_t nformats;
    char *formats[SEL_MAX];
    int format_absent;
    unsigned probe_mask;     /* 0: any */
    unsigned rotation_mask;  /* 0: any */
    unsigned parallel_mask;  /* 0: any */
    req weight;
    struct stf__selector *negated; /* `not`: holds when this does not */
};

static const char *const keys[] = {
    "prefix", "regex", "weight_dtype", "shape", "scale", "scale_dtype", "scale_shape",
    "marker", "format", "probe", "rotation", "parallel", "weight", "not", NULL
};
/* The recipe spelling of each stf_probe_verdict, in its order. */
static const char *const probe_names[STF_PROBE_COUNT + 1] = {
    "unknown", "rowwise", "columnwise", "tensorwise", "blockwise", "ambiguous", NULL
};
static const char *const rotation_names[] = { "unknown", "regular", "sylvester", NULL };
/* The recipe spelling of each stf_parallel_style, in its order. */
static const char *const parallel_names[] = { "unknown", "column", "row", "replicated", NULL };

/* Frees a compiled selector (and a nested `not`); no-op on NULL. */
void stf__selector_free(stf__selector *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nglobs; i++) stf__free(s->globs[i]);
    stf__regex_free(s->re);
    stf__free(s->re_where);
    for (size_t i = 0; i < s->nexprs; i++) stf__expr_free(s->exprs[i]);
    for (size_t i = 0; i < s->nfields; i++) {
        stf__free(s->fields[i].key);
        for (size_t j = 0; j < s->fields[i].nvalues; j++) stf__free(s->fields[i].values[j].str);
    }
    stf__selector_free(s->negated);
    for (size_t i = 0; i < s->nformats; i++) stf__free(s->formats[i]);
    stf__free(s);
}

/* --------------------------------------------------------- compiling */

static int bad(stf_recipe_diags *d, const stf__ynode *v, const char *path, const char *expected)
{
    char got[96];
    stf__y_describe(v, got, sizeof got);
    return stf__diag_add(d, v->line, v->col, "%s: expected %s, got %s", path, expected, got);
}

/*
 * Visit a "one or a list" value: calls fn for the scalar itself or for each
 * element of a sequence (at most SEL_MAX).
 */
typedef int (*item_fn)(stf__selector *s, const stf__ynode *it, const char *path,
                       stf_recipe_diags *d);

static int each(stf__selector *s, const stf__ynode *v, const char *path, stf_recipe_diags *d,
                const char *expected, item_fn fn)
{
    if (v->type == STF__Y_SCALAR && !stf__y_is_null(v)) return fn(s, v, path, d);
    if (v->type != STF__Y_SEQ || v->count == 0 || v->count > SEL_MAX) return bad(d, v, path, expected);
    for (size_t i = 0; i < v->count; i++) {
        char ip[STF__PATH_MAX];
        stf__path(ip, sizeof ip, "%s[%zu]", path, i);
        int rc = fn(s, v->items[i], ip, d);
        if (rc) return rc;
    }
    return 0;
}

static int add_glob(stf__selector *s, const stf__ynode *it, const char *path, stf_recipe_diags *d)
{
    char clip[STF__CLIP_SIZE];
    size_t pos;
    const char *why;
    if (!stf__y_is_string(it)) return bad(d, it, path, "a glob string");
    if (stf__glob_check(it->text, &pos, &why))
        return stf__diag_add(d, it->line, it->col, "%s: invalid glob '%s': %s", path,
                             stf__clip(clip, it->text), why);
    char *g = stf__strdup(it->text);
    if (!g) return STF_ENOMEM;
    s->globs[s->nglobs++] = g;
    return 0;
}

static int add_dtype(stf_dtype *v, size_t *n, const stf__ynode *it, const char *path,
                     stf_recipe_diags *d)
{
    stf_dtype t;
    if (it->type != STF__Y_SCALAR || stf_dtype_from_name(&t, it->text, it->len))
        return bad(d, it, path, "a safetensors dtype name (BF16, F16, F32, I8, U8, F8_E4M3, ...)");
    v[(*n)++] = t;
    return 0;
}

static int add_wdtype(stf__selector *s, const stf__ynode *it, const char *path, stf_recipe_diags *d)
{
    return add_dtype(s->wdtypes, &s->nwdtypes, it, path, d);
}

static int add_sdtype(stf__selector *s, const stf__ynode *it, const char *path, stf_recipe_diags *d)
{
    return add_dtype(s->sdtypes, &s->nsdtypes, it, path, d);
}

/*
 * The file column of byte `pos` of a scalar's text: a one-line scalar maps
 * offsets onto columns, and quoted styles start one column after the opening
 * quote. Multi-line scalars and STF__REGEX_WHOLE give the scalar's own column.
 */
static unsigned text_col(const stf__ynode *it, size_t pos)
{
    if (pos == STF__REGEX_WHOLE || pos > it->len || memchr(it->text, '\n', it->len)) return it->col;
    return it->col + (unsigned)pos + (it->plain ? 0u : 1u);
}

static int add_expr(stf__selector *s, const stf__ynode *it, const char *path, stf_recipe_diags *d)
{
    char msg[256], clip[STF__CLIP_SIZE];
    size_t pos;
    if (!stf__y_is_string(it)) return bad(d, it, path, "a shape predicate string such as 'K % 16 == 0'");
    int rc = stf__expr_compile(&s->exprs[s->nexprs], it->text, &pos, msg, sizeof msg);
    if (rc == STF_ENOMEM) return rc;
    if (rc)
        return stf__diag_add(d, it->line, text_col(it, pos), "%s: invalid predicate '%s': %s",
                             path, stf__clip(clip, it->text), msg);
    s->nexprs++;
    return 0;
}

static int add_regex(stf__selector *s, const stf__ynode *v, const char *path, stf_recipe_diags *d)
{
    char msg[256], clip[STF__CLIP_SIZE];
    size_t pos;
    if (!stf__y_is_string(v) || v->len == 0)
        return bad(d, v, path, "a regular expression (PCRE2 syntax)");
    int rc = stf__regex_compile(&s->re, s->set, v->text, v->len, &pos, msg, sizeof msg);
    if (rc == STF_ENOMEM) return rc;
    if (rc)
        return stf__diag_add(d, v->line, text_col(v, pos), "%s: invalid regex '%s': %s", path,
                             stf__clip(clip, v->text), msg);
    if (s->set && s->set->warn && stf__regex_nested_repeat(v->text, v->len, &pos) &&
        (rc = stf__diag_add(s->set->warn, v->line, text_col(v, pos),
                            "%s: warning: '%s' repeats a group that holds a repeat: a search "
                            "may try exponentially many ways to split a name it does not "
                            "match; remove one of the repeats, or make the inner one "
                            "possessive (a++)",
                            path, stf__clip(clip, v->text))))
        return rc;
    stf_buf w;
    stf__buf_init(&w);
    stf__buf_printf(&w, "%s:%u:%u: %s", d->name, v->line, v->col, path);
    if (w.oom) {
        stf__buf_free(&w);
        return STF_ENOMEM;
    }
    s->re_where = w.data;
    return 0;
}

static int add_format(stf__selector *s, const stf__ynode *it, const char *path, stf_recipe_diags *d)
{
    if (stf__y_is_word(it, "absent")) {
        s->format_absent = 1;
        return 0;
    }
    if (!stf__y_is_string(it) || it->len == 0) return bad(d, it, path, "a format name or absent");
    char *f = stf__strdup(it->text);
    if (!f) return STF_ENOMEM;
    s->formats[s->nformats++] = f;
    return 0;
}

static int name_mask(unsigned *mask, const char *const *names, const stf__ynode *it,
                     const char *path, stf_recipe_diags *d, const char *expected)
{
    if (it->type == STF__Y_SCALAR)
        for (unsigned i = 0; names[i]; i++)
            if (!strcmp(names[i], it->text)) {
                *mask |= 1u << i;
                return 0;
            }
    return bad(d, it, path, expected);
}

static int add_probe(stf__selector *s, const stf__ynode *it, const char *path, stf_recipe_diags *d)
{
    return name_mask(&s->probe_mask, probe_names, it, path, d,
                     "one of unknown, rowwise, columnwise, tensorwise, blockwise, ambiguous");
}

static int add_rotation(stf__selector *s, const stf__ynode *it, const char *path,
                        stf_recipe_diags *d)
{
    return name_mask(&s->rotation_mask, rotation_names, it, path, d,
                     "one of unknown, regular, sylvester");
}

static int add_parallel(stf__selector *s, const stf__ynode *it, const char *path,
                        stf_recipe_diags *d)
{
    return name_mask(&s->parallel_mask, parallel_names, it, path, d,
                     "one of unknown, column, row, replicated");
}

static int parse_pattern(shape_pat *p, const stf__ynode *v, const char *path, stf_recipe_diags *d)
{
    const char *what = "a shape pattern such as [N, 1], [N] or [] (dimensions: integers, N, K, _)";
    if (v->type != STF__Y_SEQ || v->count > SHAPE_MAX_RANK) return bad(d, v, path, what);
    p->rank = (unsigned)v->count;
    for (size_t i = 0; i < v->count; i++) {
        const stf__ynode *it = v->items[i];
        long long iv;
        char ip[STF__PATH_MAX];
        stf__path(ip, sizeof ip, "%s[%zu]", path, i);
        if (stf__y_is_word(it, "N")) p->kind[i] = DIM_N;
        else if (stf__y_is_word(it, "K")) p->kind[i] = DIM_K;
        else if (stf__y_is_word(it, "_")) p->kind[i] = DIM_ANY;
        else if (!stf__y_int(it, &iv) && iv >= 0) {
            p->kind[i] = DIM_LIT;
            p->value[i] = (uint64_t)iv;
        } else return bad(d, it, ip, "an integer >= 0, N, K or _");
    }
    return 0;
}

static int parse_scale_shape(stf__selector *s, const stf__ynode *v, const char *path,
                             stf_recipe_diags *d)
{
    int alternatives = v->type == STF__Y_SEQ && v->count > 0 && v->items[0]->type == STF__Y_SEQ;
    if (!alternatives) {
        s->npats = 1;
        return parse_pattern(&s->pats[0], v, path, d);
    }
    if (v->count > SEL_MAX) return bad(d, v, path, "at most 16 shape patterns");
    for (size_t i = 0; i < v->count; i++) {
        char ip[STF__PATH_MAX];
        stf__path(ip, sizeof ip, "%s[%zu]", path, i);
        int rc = parse_pattern(&s->pats[i], v->items[i], ip, d);
        if (rc) return rc;
        s->npats++;
    }
    return 0;
}

static int parse_presence(req *out, const stf__ynode *v, const char *path, stf_recipe_diags *d)
{
    if (stf__y_is_word(v, "present")) *out = REQ_PRESENT;
    else if (stf__y_is_word(v, "absent")) *out = REQ_ABSENT;
    else return bad(d, v, path, "present or absent");
    return 0;
}

static int parse_value(fvalue *f, const stf__ynode *v, const char *path, stf_recipe_diags *d)
{
    long long iv;
    if (v->type != STF__Y_SCALAR) return bad(d, v, path, "a scalar, a list of scalars, present or absent");
    if (stf__y_is_null(v)) f->type = V_NULL;
    else if (!stf__y_bool(v, &f->b)) f->type = V_BOOL;
    else if (!stf__y_int(v, &iv)) {
        f->type = V_NUM;
        f->num = (double)iv;
    } else {
        char *end = NULL;
        double x = v->plain ? strtod(v->text, &end) : 0.0;
        if (v->plain && end && end != v->text && *end == '\0' && isfinite(x)) {
            f->type = V_NUM;
            f->num = x;
        } else {
            f->type = V_STR;
            f->str = stf__strdup(v->text);
            if (!f->str) return STF_ENOMEM;
        }
    }
    return 0;
}

static int parse_field(field_cond *f, const stf__ynode *key, const stf__ynode *v,
                       const char *path, stf_recipe_diags *d)
{
    f->key = stf__strdup(key->text);
    if (!f->key) return STF_ENOMEM;
    if (stf__y_is_word(v, "absent")) {
        f->want = REQ_ABSENT;
        return 0;
    }
    if (stf__y_is_word(v, "present")) {
        f->want = REQ_PRESENT;
        return 0;
    }
    if (v->type != STF__Y_SEQ) {
        f->nvalues = 1;
        return parse_value(&f->values[0], v, path, d);
    }
    if (v->count == 0 || v->count > SEL_MAX)
        return bad(d, v, path, "a scalar, a list of 1 to 16 scalars, present or absent");
    for (size_t i = 0; i < v->count; i++) {
        char ip[STF__PATH_MAX];
        stf__path(ip, sizeof ip, "%s[%zu]", path, i);
        int rc = parse_value(&f->values[f->nvalues++], v->items[i], ip, d);
        if (rc) return rc;
    }
    return 0;
}

static int parse_marker(stf__selector *s, const stf__ynode *v, const char *path,
                        stf_recipe_diags *d)
{
    if (v->type == STF__Y_SCALAR) return parse_presence(&s->marker, v, path, d);
    if (v->type != STF__Y_MAP || stf__ymap_size(v) > SEL_MAX)
        return bad(d, v, path, "present, absent or a mapping of marker fields");
    s->marker = REQ_PRESENT;
    for (size_t i = 0; i < stf__ymap_size(v); i++) {
        char fp[STF__PATH_MAX];
        const stf__ynode *key = stf__ymap_key(v, i);
        stf__path(fp, sizeof fp, "%s.%s", path, key->text);
        int rc = parse_field(&s->fields[s->nfields++], key, stf__ymap_val(v, i), fp, d);
        if (rc) return rc;
    }
    return 0;
}

static int compile_key(stf__selector *s, const stf__ynode *key, const stf__ynode *v,
                       const char *path, stf_recipe_diags *d)
{
    const char *k = key->text;
    if (!strcmp(k, "prefix")) return each(s, v, path, d, "a glob or a list of globs", add_glob);
    if (!strcmp(k, "regex")) return add_regex(s, v, path, d);
    if (!strcmp(k, "weight_dtype"))
        return each(s, v, path, d, "a dtype or a list of dtypes", add_wdtype);
    if (!strcmp(k, "shape"))
        return each(s, v, path, d, "a predicate or a list of predicates", add_expr);
    if (!strcmp(k, "scale")) return parse_presence(&s->scale, v, path, d);
    if (!strcmp(k, "scale_dtype"))
        return each(s, v, path, d, "a dtype or a list of dtypes", add_sdtype);
    if (!strcmp(k, "scale_shape")) return parse_scale_shape(s, v, path, d);
    if (!strcmp(k, "marker")) return parse_marker(s, v, path, d);
    if (!strcmp(k, "format")) return each(s, v, path, d, "a format, absent, or a list", add_format);
    if (!strcmp(k, "probe")) return each(s, v, path, d, "a probe verdict or a list", add_probe);
    if (!strcmp(k, "weight")) return parse_presence(&s->weight, v, path, d);
    if (!strcmp(k, "not")) return stf__selector_compile(&s->negated, v, path, s->set, d);
    if (!strcmp(k, "parallel"))
        return each(s, v, path, d, "a parallel style or a list", add_parallel);
    return each(s, v, path, d, "a rotation or a list", add_rotation);
}

/*
 * Compiles a `match` mapping; problems go to d and leave *out NULL.
 * 0 or STF_ENOMEM.
 */
int stf__selector_compile(stf__selector **out, const stf__ynode *match, const char *path,
                          stf__regex_set *set, stf_recipe_diags *d)
{
    *out = NULL;
    if (!match || match->type != STF__Y_MAP) {
        char got[96];
        stf__y_describe(match, got, sizeof got);
        return stf__diag_add(d, match ? match->line : 0, match ? match->col : 0,
                             "%s: expected a mapping of selector keys ({} selects every layer), "
                             "got %s", path, got);
    }
    stf__selector *s = stf__calloc(1, sizeof *s);
    if (!s) return STF_ENOMEM;
    s->set = set;
    size_t before = d->count + d->dropped;
    int rc = 0;
    char clip[STF__KEY_CLIP_SIZE];
    for (size_t i = 0; i < stf__ymap_size(match); i++) {
        const stf__ynode *key = stf__ymap_key(match, i);
        size_t j = 0;
        while (keys[j] && strcmp(keys[j], key->text)) j++;
        if (!keys[j]) {
            rc = stf__diag_add(d, key->line, key->col,
                               "%s: unknown key '%s' (expected one of: prefix, regex, "
                               "weight, weight_dtype, shape, scale, scale_dtype, scale_shape, "
                               "marker, format, probe, rotation, parallel, not)", path,
                               stf__clip_key(clip, key->text));
        } else {
            char kp[STF__PATH_MAX];
            stf__path(kp, sizeof kp, "%s.%s", path, key->text);
            rc = compile_key(s, key, stf__ymap_val(match, i), kp, d);
        }
        if (rc) break;
    }
    s->set = NULL;
    if (rc || d->count + d->dropped != before) {
        stf__selector_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* --------------------------------------------------------- evaluating */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static unsigned hex4(const char *p, int *ok)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned x;
        if (c >= '0' && c <= '9') x = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x = (unsigned)(c - 'A' + 10);
        else {
            *ok = 0;
            return 0;
        }
        v = v * 16 + x;
    }
    return v;
}

/* Whether the JSON string starting at the quote `j` decodes to exactly `want`. */
static int json_str_eq(const char *j, const char *want)
{
    const unsigned char *w = (const unsigned char *)want;
    j++;
    while (*j && *j != '"') {
        unsigned char buf[4];
        size_t n = 0;
        if (*j != '\\') {
            buf[n++] = (unsigned char)*j++;
        } else {
            j++;
            char e = *j++;
            const char *simple = "\"\\/bfnrt", *map = "\"\\/\b\f\n\r\t";
            const char *hit = e ? strchr(simple, e) : NULL;
            if (hit) {
                buf[n++] = (unsigned char)map[hit - simple];
            } else if (e == 'u') {
                int ok = 1;
                unsigned cp = hex4(j, &ok);
                if (!ok) return 0;
                j += 4;
                if (cp >= 0xD800 && cp < 0xDC00) {
                    if (j[0] != '\\' || j[1] != 'u') return 0;
                    unsigned lo = hex4(j + 2, &ok);
                    if (!ok || lo < 0xDC00 || lo > 0xDFFF) return 0;
                    j += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp < 0xE000) {
                    return 0;
                }
                if (cp < 0x80) buf[n++] = (unsigned char)cp;
                else if (cp < 0x800) {
                    buf[n++] = (unsigned char)(0xC0 | (cp >> 6));
                    buf[n++] = (unsigned char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    buf[n++] = (unsigned char)(0xE0 | (cp >> 12));
                    buf[n++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[n++] = (unsigned char)(0x80 | (cp & 0x3F));
                } else {
                    buf[n++] = (unsigned char)(0xF0 | (cp >> 18));
                    buf[n++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                    buf[n++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[n++] = (unsigned char)(0x80 | (cp & 0x3F));
                }
            } else {
                return 0;
            }
        }
        for (size_t i = 0; i < n; i++)
            if (*w++ != buf[i]) return 0;
    }
    return *j == '"' && *w == '\0';
}

static int value_matches(const fvalue *f, const char *json)
{
    const char *p = skip_ws(json);
    switch (f->type) {
    case V_NULL: return !strncmp(p, "null", 4) && *skip_ws(p + 4) == '\0';
    case V_BOOL:
        if (f->b) return !strncmp(p, "true", 4) && *skip_ws(p + 4) == '\0';
        return !strncmp(p, "false", 5) && *skip_ws(p + 5) == '\0';
    case V_NUM: {
        if (*p != '-' && (*p < '0' || *p > '9')) return 0;
        char *end = NULL;
        double x = strtod(p, &end);
        return end != p && *skip_ws(end) == '\0' && x == f->num;
    }
    case V_STR: return *p == '"' && json_str_eq(p, f->str);
    default: return 0;
    }
}

static int field_matches(const field_cond *f, const char *json)
{
    if (f->want == REQ_ABSENT) return json == NULL;
    if (!json) return 0;
    if (f->want == REQ_PRESENT) return 1;
    for (size_t i = 0; i < f->nvalues; i++)
        if (value_matches(&f->values[i], json)) return 1;
    return 0;
}

static int pattern_matches(const shape_pat *p, const stf_layer_view *l)
{
    if (p->rank != l->scale_rank) return 0;
    for (unsigned i = 0; i < p->rank; i++) {
        uint64_t dv = l->scale_shape[i];
        switch (p->kind[i]) {
        case DIM_LIT: if (dv != p->value[i]) return 0; break;
        case DIM_N: if (!l->has_weight || dv != l->n) return 0; break;
        case DIM_K: if (!l->has_weight || dv != l->k) return 0; break;
        case DIM_ANY: break;
        }
    }
    return 1;
}

static int dtype_in(const stf_dtype *v, size_t n, stf_dtype t)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == t) return 1;
    return 0;
}

static const char *field_json(const stf_layer_view *l, const char *key)
{
    for (size_t i = 0; i < l->marker_field_count; i++)
        if (l->marker_fields[i].key && !strcmp(l->marker_fields[i].key, key))
            return l->marker_fields[i].json;
    return NULL;
}

/*
 * A layer name (len bytes) for a message: whole when short, else its first
 * and last 30 bytes around "..." (the end of a name is what tells layers
 * apart), escaped as stfix prints names (stf_name_escape), so that the
 * message stays on one line and a U+0000 does not end the name.
 */
static const char *name_for_msg(char *buf, size_t size, const char *name, size_t len)
{
    size_t head = len, tail = 0, at;
    if (len > STF__CLIP_LEN) {
        head = STF__CLIP_LEN / 2;
        while (head > 0 && ((unsigned char)name[head] & 0xC0) == 0x80) head--;
        tail = STF__CLIP_LEN / 2;
        while (tail > 0 && ((unsigned char)name[len - tail] & 0xC0) == 0x80) tail--;
    }
    stf_name_escape(buf, size, name, head);
    if (len > STF__CLIP_LEN) {
        at = strlen(buf);
        if (at + 3 < size) {
            memcpy(buf + at, "...", 4);
            at += 3;
            stf_name_escape(buf + at, size - at, name + len - tail, tail);
        }
    }
    return buf;
}

static int regex_holds(int *holds, const stf__selector *s, const char *prefix, size_t plen,
                       stf__rules_run *run, stf_err *err)
{
    char why[160], shown[16 * STF__CLIP_SIZE], clip[STF__CLIP_SIZE];
    size_t id = stf__regex_id(s->re);
    /* Once spent, the budget stays spent: every later search of the run
     * fails with the message of the one that spent it. */
    if (run && run->budget.spent) {
        if (err) *err = run->spent_err;
        return run->spent_err.code;
    }
    int known, rc = stf__rules_run_cached(run, id, prefix, plen, holds, &known);
    if (rc || known) return rc ? stf__err(err, rc, "%s: out of memory", s->re_where) : 0;
    rc = stf__regex_search(holds, s->re, prefix, plen, run ? &run->budget : NULL, why, sizeof why);
    if (!rc) {
        stf__rules_run_keep(run, id, *holds);
        return 0;
    }
    name_for_msg(shown, sizeof shown, prefix, plen);
    if (rc == STF_ELIMIT && run && run->budget.spent) {
        stf__err_rule(&run->spent_err, rc, "L12", 0, 0,
                      "%s: L12 LimitExceeded: '%s' spent the run's budget of %llu regex steps "
                      "matching '%s'; simplify the regex, or raise the budget with "
                      "--max-regex-steps",
                      s->re_where, stf__clip(clip, stf__regex_text(s->re)),
                      (unsigned long long)run->steps, shown);
        if (err) *err = run->spent_err;
        return rc;
    }
    if (rc == STF_ELIMIT)
        return stf__err(err, rc, "%s: matching '%s' needed %s; simplify the regex",
                        s->re_where, shown, why);
    if (rc == STF_ENOMEM)
        return stf__err(err, rc, "%s: matching '%s': out of memory", s->re_where, shown);
    return stf__err(err, rc, "%s: matching '%s' failed: %s", s->re_where, shown, why);
}

/* Whether every key but `regex` and `not` holds: the cheap checks. */
static int plain_keys_hold(const stf__selector *s, const stf_layer_view *l, const char *prefix,
                           size_t plen)
{
    if (s->nglobs) {
        size_t i = 0;
        while (i < s->nglobs && !stf__glob_match_n(s->globs[i], prefix, plen)) i++;
        if (i == s->nglobs) return 0;
    }
    if (s->weight == REQ_PRESENT && !l->has_weight) return 0;
    if (s->weight == REQ_ABSENT && l->has_weight) return 0;
    if (s->nwdtypes && (!l->has_weight || !dtype_in(s->wdtypes, s->nwdtypes, l->weight_dtype)))
        return 0;
    for (size_t i = 0; i < s->nexprs; i++)
        if (!stf__expr_eval(s->exprs[i], l)) return 0;
    if (s->scale == REQ_PRESENT && !l->has_scale) return 0;
    if (s->scale == REQ_ABSENT && l->has_scale) return 0;
    if (s->nsdtypes && (!l->has_scale || !dtype_in(s->sdtypes, s->nsdtypes, l->scale_dtype)))
        return 0;
    if (s->npats) {
        size_t i = 0;
        while (i < s->npats && !(l->has_scale && pattern_matches(&s->pats[i], l))) i++;
        if (i == s->npats) return 0;
    }
    if (s->marker == REQ_PRESENT && !l->has_marker) return 0;
    if (s->marker == REQ_ABSENT && l->has_marker) return 0;
    for (size_t i = 0; i < s->nfields; i++)
        if (!field_matches(&s->fields[i], field_json(l, s->fields[i].key))) return 0;
    if (s->nformats || s->format_absent) {
        int ok = s->format_absent && !l->format;
        for (size_t i = 0; !ok && i < s->nformats; i++)
            ok = l->format && !strcmp(l->format, s->formats[i]);
        if (!ok) return 0;
    }
    if (s->probe_mask && ((unsigned)l->probe >= STF_PROBE_COUNT ||
                          !((s->probe_mask >> (unsigned)l->probe) & 1u)))
        return 0;
    if (s->rotation_mask && ((unsigned)l->rotation > STF_ROTATION_SYLVESTER ||
                             !((s->rotation_mask >> (unsigned)l->rotation) & 1u)))
        return 0;
    if (s->parallel_mask && ((unsigned)l->parallel >= STF_PARALLEL_COUNT ||
                             !((s->parallel_mask >> (unsigned)l->parallel) & 1u)))
        return 0;
    return 1;
}

/*
 * *selected: whether every key holds. The regex runs only when the cheap
 * keys hold, so a costly pattern is searched no more often than needed.
 */
int stf__selector_eval(int *selected, const stf__selector *s, const stf_layer_view *l,
                       stf__rules_run *run, stf_err *err)
{
    *selected = 0;
    if (!s || !l) return 0;
    const char *prefix = l->prefix ? l->prefix : "";
    size_t plen = l->prefix_len ? l->prefix_len : strlen(prefix);
    if (!plain_keys_hold(s, l, prefix, plen)) return 0;
    int holds = 1, rc;
    if (s->re && (rc = regex_holds(&holds, s, prefix, plen, run, err))) return rc;
    if (!holds) return 0;
    if (s->negated) {
        if ((rc = stf__selector_eval(&holds, s->negated, l, run, err))) return rc;
        if (holds) return 0;
    }
    *selected = 1;
    return 0;
}

/* *matched: whether the rule selects the layer (0 for NULL arguments). */
int stf_rules_match(int *matched, const stf_rule *rule, const stf_layer_view *layer,
                    stf_err *err)
{
    return stf__rules_match_run(matched, rule, layer, NULL, err);
}

/* stf_rules_match within a run (rules_internal.h). */
int stf__rules_match_run(int *matched, const stf_rule *rule, const stf_layer_view *layer,
                         stf__rules_run *run, stf_err *err)
{
    *matched = 0;
    return rule ? stf__selector_eval(matched, rule->sel, layer, run, err) : 0;
}
