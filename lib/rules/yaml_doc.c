/*
 * The positioned YAML document model recipes are read into: libyaml events
 * turned into a small tree whose every node remembers its 1-based line and
 * column, plain-scalar typing, and the list of positioned problems.
 *
 * Only the subset a recipe needs is accepted. Anchors and aliases are
 * refused because an alias can multiply a small file into a huge tree; tags
 * are refused because they would change scalar typing behind the schema's
 * back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "rules/rules_internal.h"

#define YDEPTH_MAX 32
#define YNODES_MAX 100000
/* Duplicate keys are found by a linear scan, so mappings stay small. */
#define YMAP_MAX 1024

/* ------------------------------------------------------ problem list */

/* An empty problem list for file `name` (copied); NULL when out of memory. */
stf_recipe_diags *stf__diags_new(const char *name)
{
    stf_recipe_diags *d = stf__calloc(1, sizeof *d);
    if (!d) return NULL;
    d->name = stf__strdup(name ? name : "<recipe>");
    if (!d->name) {
        stf__free(d);
        return NULL;
    }
    return d;
}

/*
 * Appends "NAME:LINE:COL: message"; beyond STF__DIAGS_MAX only counts it.
 * 0 or STF_ENOMEM.
 */
int stf__diag_add(stf_recipe_diags *d, unsigned line, unsigned col, const char *fmt, ...)
{
    if (d->count >= STF__DIAGS_MAX) {
        d->dropped++;
        return 0;
    }
    if (d->count == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 8;
        stf__diag *nv = stf__realloc(d->v, nc * sizeof *nv);
        if (!nv) return STF_ENOMEM;
        d->v = nv;
        d->cap = nc;
    }
    stf_buf b;
    stf__buf_init(&b);
    if (line) stf__buf_printf(&b, "%s:%u:%u: ", d->name, line, col);
    else stf__buf_printf(&b, "%s: ", d->name);
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    for (const char *c = tmp; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u < 0x20 || u == 0x7f) stf__buf_printf(&b, "\\x%02x", u);
        else stf__buf_putc(&b, *c);
    }
    if (b.oom || !b.data) {
        stf__buf_free(&b);
        return STF_ENOMEM;
    }
    d->v[d->count].line = line;
    d->v[d->count].col = col;
    d->v[d->count].text = b.data;
    d->count++;
    return 0;
}

/* Copies s into buf, clipped to `max` bytes backing up to a UTF-8
 * character start, with "..." after a clipped one. */
static const char *clip_to(char *buf, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) {
        memcpy(buf, s, n + 1);
        return buf;
    }
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    memcpy(buf, s, n);
    memcpy(buf + n, "...", 4);
    return buf;
}

/* Clips s to STF__CLIP_LEN bytes (rules_internal.h). */
const char *stf__clip(char buf[STF__CLIP_SIZE], const char *s)
{
    return clip_to(buf, s, STF__CLIP_LEN);
}

/* Clips a key to STF__KEY_CLIP_LEN bytes (rules_internal.h). */
const char *stf__clip_key(char buf[STF__KEY_CLIP_SIZE], const char *s)
{
    return clip_to(buf, s, STF__KEY_CLIP_LEN);
}

/* Formats a node path for messages, truncating silently. */
void stf__path(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, size, fmt, ap);
    va_end(ap);
}

/* Number of problems kept; 0 for NULL. */
size_t stf_recipe_diags_count(const stf_recipe_diags *d)
{
    return d ? d->count : 0;
}

/* Problem i as "FILE:LINE:COL: message" (borrowed), or NULL. */
const char *stf_recipe_diags_text(const stf_recipe_diags *d, size_t i)
{
    return d && i < d->count ? d->v[i].text : NULL;
}

/* 1-based line of problem i; 0 when out of range. */
unsigned stf_recipe_diags_line(const stf_recipe_diags *d, size_t i)
{
    return d && i < d->count ? d->v[i].line : 0;
}

/* 1-based column of problem i; 0 when out of range. */
unsigned stf_recipe_diags_column(const stf_recipe_diags *d, size_t i)
{
    return d && i < d->count ? d->v[i].col : 0;
}

/* No-op on NULL. */
void stf_recipe_diags_free(stf_recipe_diags *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->count; i++) stf__free(d->v[i].text);
    stf__free(d->v);
    stf__free(d->name);
    stf__free(d);
}

/* ------------------------------------------------------------- nodes */

/* Frees a node and its children; no-op on NULL. */
void stf__ynode_free(stf__ynode *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->count; i++) stf__ynode_free(n->items[i]);
    stf__free(n->items);
    stf__free(n->text);
    stf__free(n);
}

static stf__ynode *node_new(stf__ytype t, const yaml_mark_t *m)
{
    stf__ynode *n = stf__calloc(1, sizeof *n);
    if (!n) return NULL;
    n->type = t;
    /* libyaml marks are 0-based; every message is 1-based. */
    n->line = (unsigned)m->line + 1;
    n->col = (unsigned)m->column + 1;
    n->start = n->end = m->index;
    return n;
}

static int node_push(stf__ynode *parent, stf__ynode *child)
{
    if (parent->count == parent->cap) {
        size_t nc = parent->cap ? parent->cap * 2 : 4;
        stf__ynode **ni = stf__realloc(parent->items, nc * sizeof *ni);
        if (!ni) return STF_ENOMEM;
        parent->items = ni;
        parent->cap = nc;
    }
    parent->items[parent->count++] = child;
    return 0;
}

/* Number of key/value pairs; 0 for anything but a mapping. */
size_t stf__ymap_size(const stf__ynode *m)
{
    return m && m->type == STF__Y_MAP ? m->count / 2 : 0;
}

/* Key of pair i (i < stf__ymap_size). */
const stf__ynode *stf__ymap_key(const stf__ynode *m, size_t i)
{
    return m->items[2 * i];
}

/* Value of pair i (i < stf__ymap_size). */
const stf__ynode *stf__ymap_val(const stf__ynode *m, size_t i)
{
    return m->items[2 * i + 1];
}

/* ------------------------------------------------------------ parse */

typedef struct pstate {
    stf__ynode *stack[YDEPTH_MAX + 1];
    size_t depth;
    size_t nodes;
    stf__ynode *root;
    int docs;
} pstate;

/* Reports a construct the recipe subset does not allow. */
static int refuse(stf_recipe_diags *d, const yaml_mark_t *m, const char *what)
{
    int rc = stf__diag_add(d, (unsigned)m->line + 1, (unsigned)m->column + 1,
                           "%s are not supported in recipes", what);
    return rc ? rc : STF_EFORMAT;
}

/* Attach a finished node to the open collection (or make it the root). */
static int attach(pstate *ps, stf_recipe_diags *d, stf__ynode *n)
{
    if (++ps->nodes > YNODES_MAX) {
        int rc = stf__diag_add(d, n->line, n->col, "recipe has more than %d nodes",
                               YNODES_MAX);
        stf__ynode_free(n);
        return rc ? rc : STF_EFORMAT;
    }
    if (ps->depth == 0) {
        ps->root = n;
        return 0;
    }
    stf__ynode *p = ps->stack[ps->depth - 1];
    if (p->type == STF__Y_MAP && p->count % 2 == 0) {
        if (p->count / 2 >= YMAP_MAX) {
            int rc = stf__diag_add(d, n->line, n->col, "mapping has more than %d keys",
                                   YMAP_MAX);
            stf__ynode_free(n);
            return rc ? rc : STF_EFORMAT;
        }
        /* A key: recipes only use scalar keys, and each at most once. */
        if (n->type != STF__Y_SCALAR) {
            int rc = stf__diag_add(d, n->line, n->col, "mapping keys must be scalars");
            stf__ynode_free(n);
            return rc ? rc : STF_EFORMAT;
        }
        for (size_t i = 0; i < p->count; i += 2) {
            if (!strcmp(p->items[i]->text, n->text)) {
                char c[STF__KEY_CLIP_SIZE];
                int rc = stf__diag_add(d, n->line, n->col,
                                       "duplicate key '%s' (first at line %u)",
                                       stf__clip_key(c, n->text), p->items[i]->line);
                stf__ynode_free(n);
                return rc ? rc : STF_EFORMAT;
            }
        }
    }
    int rc = node_push(p, n);
    if (rc) stf__ynode_free(n);
    return rc;
}

static int on_event(pstate *ps, stf_recipe_diags *d, const yaml_event_t *ev)
{
    const yaml_mark_t *m = &ev->start_mark;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++ps->docs > 1) return refuse(d, m, "multiple documents");
        return 0;
    case YAML_ALIAS_EVENT:
        return refuse(d, m, "aliases");
    case YAML_SCALAR_EVENT: {
        if (ev->data.scalar.anchor) return refuse(d, m, "anchors");
        if (ev->data.scalar.tag && !ev->data.scalar.plain_implicit &&
            !ev->data.scalar.quoted_implicit)
            return refuse(d, m, "tags");
        stf__ynode *n = node_new(STF__Y_SCALAR, m);
        if (!n) return STF_ENOMEM;
        n->text = stf__strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        if (!n->text) {
            stf__free(n);
            return STF_ENOMEM;
        }
        n->len = ev->data.scalar.length;
        n->end = ev->end_mark.index;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return attach(ps, d, n);
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int seq = ev->type == YAML_SEQUENCE_START_EVENT;
        const yaml_char_t *anchor = seq ? ev->data.sequence_start.anchor
                                        : ev->data.mapping_start.anchor;
        int implicit = seq ? ev->data.sequence_start.implicit : ev->data.mapping_start.implicit;
        if (anchor) return refuse(d, m, "anchors");
        if (!implicit) return refuse(d, m, "tags");
        if (ps->depth >= YDEPTH_MAX) {
            int rc = stf__diag_add(d, (unsigned)m->line + 1, (unsigned)m->column + 1,
                                   "nesting deeper than %d levels", YDEPTH_MAX);
            return rc ? rc : STF_EFORMAT;
        }
        stf__ynode *n = node_new(seq ? STF__Y_SEQ : STF__Y_MAP, m);
        if (!n) return STF_ENOMEM;
        n->flow = (seq ? ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE
                       : ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE);
        int rc = attach(ps, d, n);
        if (rc) return rc;
        ps->stack[ps->depth++] = n;
        return 0;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (ps->depth) {
            /* A flow collection ends after its bracket; a block one where
             * its last item does (its own end mark is the next token's). */
            stf__ynode *n = ps->stack[--ps->depth];
            n->end = n->flow ? ev->end_mark.index
                     : n->count ? n->items[n->count - 1]->end : n->start;
        }
        return 0;
    default:
        return 0;
    }
}

/*
 * Parses one document into a node tree owned by the caller
 * (stf__ynode_free); see rules_internal.h for the refused constructs.
 */
int stf__yaml_parse(stf__ynode **out, stf_recipe_diags *d, const void *buf, size_t len,
                    stf_err *err)
{
    *out = NULL;
    yaml_parser_t parser;
    pstate ps;
    memset(&ps, 0, sizeof ps);
    int rc = 0;
    if (!yaml_parser_initialize(&parser)) return stf__err(err, STF_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            if (parser.error == YAML_MEMORY_ERROR) {
                rc = stf__err(err, STF_ENOMEM, "out of memory");
                goto done;
            }
            const yaml_mark_t *pm = &parser.problem_mark;
            if (parser.context)
                rc = stf__diag_add(d, (unsigned)pm->line + 1, (unsigned)pm->column + 1,
                                   "YAML syntax error: %s %s",
                                   parser.problem ? parser.problem : "invalid input",
                                   parser.context);
            else
                rc = stf__diag_add(d, (unsigned)pm->line + 1, (unsigned)pm->column + 1,
                                   "YAML syntax error: %s",
                                   parser.problem ? parser.problem : "invalid input");
            if (!rc) rc = STF_EFORMAT;
            goto done;
        }
        int end = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(&ps, d, &ev);
        yaml_event_delete(&ev);
        if (rc || end) break;
    }
done:
    yaml_parser_delete(&parser);
    if (rc == STF_ENOMEM) stf__err(err, STF_ENOMEM, "out of memory");
    else if (rc == STF_EFORMAT && d->count)
        stf__err(err, STF_EFORMAT, "%s", d->v[0].text);
    if (rc) {
        stf__ynode_free(ps.root);
        return rc;
    }
    *out = ps.root;
    return 0;
}

/* Contract in rules_internal.h. */
int stf__yaml_load(stf_recipe_diags **diags, const void *buf, size_t len, const char *name,
                   stf__yaml_build_fn build, void *obj, stf_err *err)
{
    if (diags) *diags = NULL;
    stf__ynode *root = NULL;
    stf_recipe_diags *d = stf__diags_new(name);
    if (!d) return stf__err(err, STF_ENOMEM, "out of memory");
    int rc = stf__yaml_parse(&root, d, len ? buf : "", len, err);
    if (rc == STF_ENOMEM || (rc && !d->count)) goto done;
    if (!rc && build(obj, root, d)) {
        rc = stf__err(err, STF_ENOMEM, "out of memory");
        goto done;
    }
    rc = 0;
    if (d->count) {
        rc = stf__err(err, STF_EFORMAT, "%s", d->v[0].text);
        if (diags) {
            *diags = d;
            d = NULL;
        }
    }
done:
    stf__ynode_free(root);
    stf_recipe_diags_free(d);
    return rc;
}

/* ----------------------------------------------------------- typing */

/* 1 for a missing node or a plain null scalar (~, null, empty). */
int stf__y_is_null(const stf__ynode *n)
{
    if (!n) return 1;
    if (n->type != STF__Y_SCALAR || !n->plain) return 0;
    return !strcmp(n->text, "") || !strcmp(n->text, "~") || !strcmp(n->text, "null") ||
           !strcmp(n->text, "Null") || !strcmp(n->text, "NULL");
}

/* 0 and *out set when n is a plain YAML 1.2 core boolean; -1 otherwise. */
int stf__y_bool(const stf__ynode *n, int *out)
{
    if (!n || n->type != STF__Y_SCALAR || !n->plain) return -1;
    const char *t = n->text;
    if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE")) {
        *out = 0;
        return 0;
    }
    return -1;
}

/* 0 and *out set when n is a plain decimal integer that fits; -1 otherwise. */
int stf__y_int(const stf__ynode *n, long long *out)
{
    if (!n || n->type != STF__Y_SCALAR || !n->plain || n->len == 0) return -1;
    const char *t = n->text;
    size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0;
    if (t[i] == '\0') return -1;
    for (size_t j = i; t[j]; j++)
        if (t[j] < '0' || t[j] > '9') return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(t, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* 1 for a quoted scalar or a plain one that is not null, bool or integer. */
int stf__y_is_string(const stf__ynode *n)
{
    long long v;
    int b;
    if (!n || n->type != STF__Y_SCALAR) return 0;
    if (!n->plain) return 1;
    return !stf__y_is_null(n) && stf__y_bool(n, &b) && stf__y_int(n, &v);
}

/* 1 when n is the plain scalar w (keywords such as absent are unquoted). */
int stf__y_is_word(const stf__ynode *n, const char *w)
{
    return n && n->type == STF__Y_SCALAR && n->plain && !strcmp(n->text, w);
}

/* Short description of a node for "got ..." in messages. */
void stf__y_describe(const stf__ynode *n, char *buf, size_t size)
{
    if (!n || stf__y_is_null(n)) snprintf(buf, size, "null");
    else if (n->type == STF__Y_SEQ) snprintf(buf, size, "a sequence");
    else if (n->type == STF__Y_MAP) snprintf(buf, size, "a mapping");
    else {
        char c[STF__CLIP_SIZE];
        snprintf(buf, size, "'%s'", stf__clip(c, n->text));
    }
}
