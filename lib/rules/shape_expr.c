/*
 * Shape predicates: the small, fully specified expression language of the
 * `shape` selector key ("K % 16 == 0", "rank == 2 && N == K").
 *
 *   predicate := or
 *   or        := and { "||" and }
 *   and       := not { "&&" not }
 *   not       := "!" not | cmp
 *   cmp       := sum [ ("==" | "!=" | "<" | "<=" | ">" | ">=") sum ]
 *   sum       := prod { ("+" | "-") prod }
 *   prod      := atom { ("*" | "/" | "%") atom }
 *   atom      := INTEGER | IDENT | "(" or ")"
 *
 * Names: N, K (logical out/in features), G (the marker's convrot_groupsize),
 * rank, numel, D0..D7 (weight dimensions), scale_rank, scale_numel, S0..S7,
 * input_scale_rank, input_scale_numel.
 *
 * Every subexpression is either an integer or a truth value, checked at
 * compile time: the whole predicate must be a truth value, comparisons take
 * integers, `!`, `&&` and `||` take truth values. Integers are signed 64-bit.
 * A value can be undefined (a dimension the tensor lacks, no scale, division
 * by zero, overflow); arithmetic on an undefined value is undefined and a
 * comparison with one is false, so a predicate never errors at run time.
 * Nothing else is evaluated: there are no calls, strings or assignments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_internal.h"

#define EXPR_MAX_LEN 1024
#define EXPR_MAX_DEPTH 64

typedef enum op {
    OP_INT, OP_ID, OP_NOT, OP_AND, OP_OR,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD
} op;

typedef enum ident {
    ID_N, ID_K, ID_G, ID_RANK, ID_NUMEL, ID_SCALE_RANK, ID_SCALE_NUMEL, ID_D, ID_S,
    ID_INPUT_RANK, ID_INPUT_NUMEL
} ident;

typedef struct node {
    op op;
    int is_bool;
    long long value; /* OP_INT */
    ident id;        /* OP_ID */
    unsigned dim;    /* ID_D / ID_S index */
    struct node *l, *r;
} node;

struct stf__expr {
    node *root;
};

typedef struct parser {
    const char *s;
    size_t pos;
    size_t depth;
    int oom;
    int failed;
    size_t err_pos;
    char *msg;
    size_t msg_size;
} parser;

static void node_free(node *n)
{
    if (!n) return;
    node_free(n->l);
    node_free(n->r);
    stf__free(n);
}

static void skip_ws(parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t') p->pos++;
}

static node *fail(parser *p, size_t at, const char *fmt, const char *arg)
{
    if (!p->failed) {
        p->failed = 1;
        p->err_pos = at;
        snprintf(p->msg, p->msg_size, fmt, arg ? arg : "");
    }
    return NULL;
}

static node *mk(parser *p, op o, int is_bool, node *l, node *r)
{
    node *n = stf__calloc(1, sizeof *n);
    if (!n) {
        p->oom = 1;
        node_free(l);
        node_free(r);
        return NULL;
    }
    n->op = o;
    n->is_bool = is_bool;
    n->l = l;
    n->r = r;
    return n;
}

/* Consume `tok` when it comes next (after blanks). */
static int accept(parser *p, const char *tok)
{
    skip_ws(p);
    size_t n = strlen(tok);
    if (strncmp(p->s + p->pos, tok, n)) return 0;
    p->pos += n;
    return 1;
}

static node *parse_or(parser *p);

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The names a predicate may use, as the messages list them. */
#define NAMES                                                                                      \
    "N, K, G, rank, numel, D0..D7, scale_rank, scale_numel, S0..S7, input_scale_rank, "            \
    "input_scale_numel"

static node *parse_ident(parser *p, size_t start, size_t len)
{
    char name[32];
    if (len >= sizeof name) return fail(p, start, "unknown name (expected " NAMES ")%s", NULL);
    memcpy(name, p->s + start, len);
    name[len] = '\0';
    node *n = mk(p, OP_ID, 0, NULL, NULL);
    if (!n) return NULL;
    if (!strcmp(name, "N")) n->id = ID_N;
    else if (!strcmp(name, "K")) n->id = ID_K;
    else if (!strcmp(name, "G")) n->id = ID_G;
    else if (!strcmp(name, "rank")) n->id = ID_RANK;
    else if (!strcmp(name, "numel")) n->id = ID_NUMEL;
    else if (!strcmp(name, "scale_rank")) n->id = ID_SCALE_RANK;
    else if (!strcmp(name, "scale_numel")) n->id = ID_SCALE_NUMEL;
    else if (!strcmp(name, "input_scale_rank")) n->id = ID_INPUT_RANK;
    else if (!strcmp(name, "input_scale_numel")) n->id = ID_INPUT_NUMEL;
    else if ((name[0] == 'D' || name[0] == 'S') && len == 2 && name[1] >= '0' && name[1] <= '7') {
        n->id = name[0] == 'D' ? ID_D : ID_S;
        n->dim = (unsigned)(name[1] - '0');
    } else {
        stf__free(n);
        return fail(p, start, "unknown name '%s' (expected " NAMES ")", name);
    }
    return n;
}

static node *parse_atom(parser *p)
{
    skip_ws(p);
    size_t start = p->pos;
    char c = p->s[start];
    if (c == '(') {
        p->pos++;
        if (++p->depth > EXPR_MAX_DEPTH) return fail(p, start, "expression nested too deeply%s", NULL);
        node *n = parse_or(p);
        p->depth--;
        if (!n) return NULL;
        if (!accept(p, ")")) {
            node_free(n);
            return fail(p, p->pos, "expected ')'%s", NULL);
        }
        return n;
    }
    if (is_digit(c)) {
        long long v = 0;
        while (is_digit(p->s[p->pos])) {
            int dgt = p->s[p->pos] - '0';
            if (v > (INT64_MAX - dgt) / 10) return fail(p, start, "integer too large%s", NULL);
            v = v * 10 + dgt;
            p->pos++;
        }
        if (is_alpha(p->s[p->pos])) return fail(p, p->pos, "unexpected character after integer%s", NULL);
        node *n = mk(p, OP_INT, 0, NULL, NULL);
        if (n) n->value = v;
        return n;
    }
    if (is_alpha(c)) {
        while (is_alpha(p->s[p->pos]) || is_digit(p->s[p->pos])) p->pos++;
        return parse_ident(p, start, p->pos - start);
    }
    if (c == '\0') return fail(p, start, "unexpected end of expression%s", NULL);
    return fail(p, start, "expected an integer, a name or '('%s", NULL);
}

/* Builds a binary node after checking both operands have the wanted kind. */
static node *binary(parser *p, op o, node *l, node *r, int want_bool, int result_bool,
                    size_t at)
{
    if (!l || !r) {
        node_free(l);
        node_free(r);
        return NULL;
    }
    if (l->is_bool != want_bool || r->is_bool != want_bool) {
        node_free(l);
        node_free(r);
        return fail(p, at, want_bool ? "operator needs truth values on both sides%s"
                                     : "operator needs integers on both sides%s", NULL);
    }
    return mk(p, o, result_bool, l, r);
}

static node *parse_prod(parser *p)
{
    node *l = parse_atom(p);
    while (l) {
        skip_ws(p);
        size_t at = p->pos;
        op o;
        if (accept(p, "*")) o = OP_MUL;
        else if (accept(p, "/")) o = OP_DIV;
        else if (accept(p, "%")) o = OP_MOD;
        else break;
        l = binary(p, o, l, parse_atom(p), 0, 0, at);
    }
    return l;
}

static node *parse_sum(parser *p)
{
    node *l = parse_prod(p);
    while (l) {
        skip_ws(p);
        size_t at = p->pos;
        op o;
        if (accept(p, "+")) o = OP_ADD;
        else if (accept(p, "-")) o = OP_SUB;
        else break;
        l = binary(p, o, l, parse_prod(p), 0, 0, at);
    }
    return l;
}

static node *parse_cmp(parser *p)
{
    node *l = parse_sum(p);
    if (!l) return NULL;
    skip_ws(p);
    size_t at = p->pos;
    op o;
    /* Two-character operators first, so "<=" is not read as "<". */
    if (accept(p, "==")) o = OP_EQ;
    else if (accept(p, "!=")) o = OP_NE;
    else if (accept(p, "<=")) o = OP_LE;
    else if (accept(p, ">=")) o = OP_GE;
    else if (accept(p, "<")) o = OP_LT;
    else if (accept(p, ">")) o = OP_GT;
    else return l;
    return binary(p, o, l, parse_sum(p), 0, 1, at);
}

static node *parse_not(parser *p)
{
    skip_ws(p);
    size_t at = p->pos;
    if (p->s[at] == '!' && p->s[at + 1] != '=') {
        p->pos++;
        if (++p->depth > EXPR_MAX_DEPTH) return fail(p, at, "expression nested too deeply%s", NULL);
        node *x = parse_not(p);
        p->depth--;
        if (!x) return NULL;
        if (!x->is_bool) {
            node_free(x);
            return fail(p, at, "'!' needs a truth value%s", NULL);
        }
        return mk(p, OP_NOT, 1, x, NULL);
    }
    return parse_cmp(p);
}

static node *parse_and(parser *p)
{
    node *l = parse_not(p);
    while (l) {
        skip_ws(p);
        size_t at = p->pos;
        if (!accept(p, "&&")) break;
        l = binary(p, OP_AND, l, parse_not(p), 1, 1, at);
    }
    return l;
}

static node *parse_or(parser *p)
{
    node *l = parse_and(p);
    while (l) {
        skip_ws(p);
        size_t at = p->pos;
        if (!accept(p, "||")) break;
        l = binary(p, OP_OR, l, parse_and(p), 1, 1, at);
    }
    return l;
}

/*
 * Compiles a predicate: 0, STF_EFORMAT with msg and the byte offset in
 * *pos, or STF_ENOMEM. The result is freed with stf__expr_free.
 */
int stf__expr_compile(stf__expr **out, const char *src, size_t *pos, char *msg,
                      size_t msg_size)
{
    *out = NULL;
    *pos = 0;
    if (msg_size) msg[0] = '\0';
    parser p = { src, 0, 0, 0, 0, 0, msg, msg_size };
    if (strlen(src) > EXPR_MAX_LEN) {
        snprintf(msg, msg_size, "expression longer than %d characters", EXPR_MAX_LEN);
        return STF_EFORMAT;
    }
    node *root = parse_or(&p);
    if (root) {
        skip_ws(&p);
        if (p.s[p.pos] != '\0') {
            node_free(root);
            char rest[STF__CLIP_SIZE];
            root = fail(&p, p.pos, "unexpected '%s'", stf__clip(rest, p.s + p.pos));
        } else if (!root->is_bool) {
            node_free(root);
            root = fail(&p, 0, "expression is a number, not a condition "
                               "(compare it, e.g. 'K %% 16 == 0')%s", NULL);
        }
    }
    if (p.oom) {
        node_free(root);
        return STF_ENOMEM;
    }
    if (!root) {
        *pos = p.err_pos;
        return STF_EFORMAT;
    }
    stf__expr *e = stf__malloc(sizeof *e);
    if (!e) {
        node_free(root);
        return STF_ENOMEM;
    }
    e->root = root;
    *out = e;
    return 0;
}

/* No-op on NULL. */
void stf__expr_free(stf__expr *e)
{
    if (!e) return;
    node_free(e->root);
    stf__free(e);
}

/* ------------------------------------------------------------ evaluate */

static int numel(const uint64_t *shape, unsigned rank, long long *out)
{
    uint64_t v = 1;
    for (unsigned i = 0; i < rank; i++)
        if (stf__mul_u64(&v, v, shape[i])) return -1;
    if (v > INT64_MAX) return -1;
    *out = (long long)v;
    return 0;
}

static int dim(uint64_t v, long long *out)
{
    if (v > INT64_MAX) return -1;
    *out = (long long)v;
    return 0;
}

/* The marker's convrot_groupsize when it is a JSON number with an integer
 * value (256 or 256.0, as SGLang's `in (16, 64, 256)` accepts both). */
static int group_size(const stf_layer_view *l, long long *out)
{
    for (size_t i = 0; i < l->marker_field_count; i++) {
        const stf_marker_field *f = &l->marker_fields[i];
        if (!f->key || !f->json || strcmp(f->key, "convrot_groupsize")) continue;
        const char *p = f->json;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!is_digit(*p) && *p != '-') return -1;
        char *end = NULL;
        double x = strtod(p, &end);
        while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
        if (!end || end == p || *end || !(x >= -9.0e15 && x <= 9.0e15) || x != (double)(long long)x)
            return -1;
        *out = (long long)x;
        return 0;
    }
    return -1;
}

/* Value of a name; -1 when undefined for this layer. */
static int lookup(const node *n, const stf_layer_view *l, long long *out)
{
    int w = l->has_weight, s = l->has_scale;
    switch (n->id) {
    case ID_N: return w ? dim(l->n, out) : -1;
    case ID_K: return w ? dim(l->k, out) : -1;
    case ID_G: return group_size(l, out);
    case ID_RANK: if (!w) return -1; *out = l->weight_rank; return 0;
    case ID_NUMEL: return w ? numel(l->weight_shape, l->weight_rank, out) : -1;
    case ID_SCALE_RANK: if (!s) return -1; *out = l->scale_rank; return 0;
    case ID_SCALE_NUMEL: return s ? numel(l->scale_shape, l->scale_rank, out) : -1;
    case ID_D: return w && n->dim < l->weight_rank ? dim(l->weight_shape[n->dim], out) : -1;
    case ID_S: return s && n->dim < l->scale_rank ? dim(l->scale_shape[n->dim], out) : -1;
    case ID_INPUT_RANK: if (!l->has_input_scale) return -1; *out = l->input_scale_rank; return 0;
    case ID_INPUT_NUMEL:
        return l->has_input_scale ? numel(l->input_scale_shape, l->input_scale_rank, out) : -1;
    }
    return -1;
}

/* Integer value of n; -1 when undefined. */
static int eval_int(const node *n, const stf_layer_view *l, long long *out)
{
    long long a, b;
    if (n->op == OP_INT) {
        *out = n->value;
        return 0;
    }
    if (n->op == OP_ID) return lookup(n, l, out);
    if (eval_int(n->l, l, &a) || eval_int(n->r, l, &b)) return -1;
    switch (n->op) {
    case OP_ADD: return __builtin_add_overflow(a, b, out) ? -1 : 0;
    case OP_SUB: return __builtin_sub_overflow(a, b, out) ? -1 : 0;
    case OP_MUL: return __builtin_mul_overflow(a, b, out) ? -1 : 0;
    case OP_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return -1;
        *out = a / b;
        return 0;
    case OP_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1)) return -1;
        *out = a % b;
        return 0;
    default: return -1;
    }
}

static int eval_bool(const node *n, const stf_layer_view *l)
{
    long long a, b;
    switch (n->op) {
    case OP_NOT: return !eval_bool(n->l, l);
    case OP_AND: return eval_bool(n->l, l) && eval_bool(n->r, l);
    case OP_OR: return eval_bool(n->l, l) || eval_bool(n->r, l);
    default: break;
    }
    if (eval_int(n->l, l, &a) || eval_int(n->r, l, &b)) return 0;
    switch (n->op) {
    case OP_EQ: return a == b;
    case OP_NE: return a != b;
    case OP_LT: return a < b;
    case OP_LE: return a <= b;
    case OP_GT: return a > b;
    case OP_GE: return a >= b;
    default: return 0;
    }
}

/* 1 when the predicate holds for the layer; 0 when false or undefined. */
int stf__expr_eval(const stf__expr *e, const stf_layer_view *layer)
{
    return e && layer ? eval_bool(e->root, layer) : 0;
}
