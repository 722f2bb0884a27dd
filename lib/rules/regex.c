/*
 * The `regex` selector key: PCRE2 patterns compiled and searched under
 * explicit limits, so that a hostile recipe costs bounded time and memory
 * both when it is loaded and when it is matched against layer names.
 *
 * Load time: the pattern is at most REGEX_MAX_LEN bytes with parentheses
 * nested at most REGEX_MAX_NEST deep; compiling may allocate at most
 * REGEX_COMPILE_BUDGET bytes and the compiled form may be at most
 * REGEX_MAX_CODE bytes. PCRE2 copies a repeated group once per repetition,
 * so the compiled size is what grows with counted repeats of groups.
 *
 * Match time: at most REGEX_MATCH_LIMIT backtracking steps, backtracking
 * REGEX_DEPTH_LIMIT deep and REGEX_HEAP_LIMIT_KIB KiB of backtracking
 * memory per search. A search that reaches a limit is an error, never a
 * silent non-match. A pattern may lower these limits with (*LIMIT_MATCH=n)
 * and its kind but never raise them; messages quote the limit in force.
 *
 * Those limits hold per search, and a plan searches every layer name with
 * every pattern, so a run has a budget too: the pattern is compiled a
 * second time with a callout before each of its items (PCRE2_AUTO_CALLOUT),
 * and each callout a search passes is a step taken from the run's budget
 * (stf__regex_budget). The callouts change nothing the search finds. A
 * recipe's patterns are compiled once each, whatever the number of
 * selectors that use them (stf__regex_set).
 *
 * Options keep what the POSIX ERE selector promised: subjects are bytes
 * (no UTF, no Unicode properties), `.` matches every byte including a
 * newline, and `$` matches only at the very end of the name.
 * Back-references are refused (a layer selector never needs them), and
 * `{,N}` is refused because PCRE2 releases disagree on whether it is a
 * repeat or literal text.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rules/rules_internal.h"

#define REGEX_MAX_NEST 32
#define REGEX_MAX_CODE (16u << 10)
#define REGEX_COMPILE_BUDGET (1u << 20)
#define REGEX_MATCH_LIMIT 1000000u
#define REGEX_DEPTH_LIMIT 10000u
#define REGEX_HEAP_LIMIT_KIB 8192u

#define REGEX_OPTIONS (PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_UTF | PCRE2_NEVER_UCP)

/* What compiling may still allocate, and why an allocation failed. */
typedef struct re_mem {
    size_t used, cap;
    int over; /* the budget said no */
    int oom;  /* the allocation hook said no */
} re_mem;

struct stf__regex {
    re_mem mem;                  /* the compiled code's allocator data: lives as long */
    pcre2_code *code;
    pcre2_code *counted;         /* the same with a callout before each item */
    char *text;                  /* the pattern, NUL-terminated */
    size_t len;
    size_t id;                   /* index in its set; SIZE_MAX: none */
    unsigned refs;
    pcre2_general_context *gctx; /* plain allocation, for match data */
    pcre2_match_context *mctx;
    uint32_t match_limit, depth_limit, heap_limit_kib; /* in force, for messages */
};

/* PCRE2's allocator: the library's hook, within a budget when `ud` has one. */
static void *re_malloc(size_t n, void *ud)
{
    re_mem *m = ud;
    if (m && n > m->cap - m->used) {
        m->over = 1;
        return NULL;
    }
    void *p = stf__malloc(n);
    if (m && !p) m->oom = 1;
    if (m && p) m->used += n;
    return p;
}

static void re_free(void *p, void *ud)
{
    (void)ud;
    stf__free(p);
}

/* Drops a reference to a compiled regex, freeing it with the last one;
 * no-op on NULL. */
void stf__regex_free(stf__regex *re)
{
    if (!re || --re->refs) return;
    pcre2_match_context_free(re->mctx);
    pcre2_general_context_free(re->gctx);
    pcre2_code_free(re->code);
    pcre2_code_free(re->counted);
    stf__free(re->text);
    stf__free(re);
}

/* Drops the set's references (rules_internal.h). */
void stf__regex_set_clear(stf__regex_set *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->n; i++) stf__regex_free(set->v[i]);
    stf__free(set->v);
    set->v = NULL;
    set->n = set->cap = 0;
}

/* The index of the pattern in its set, SIZE_MAX when none. */
size_t stf__regex_id(const stf__regex *re)
{
    return re->id;
}

/* The pattern's text. */
const char *stf__regex_text(const stf__regex *re)
{
    return re->text;
}

static int refuse(size_t *pos, size_t at, char *msg, size_t msg_size, const char *fmt, ...)
    STF_PRINTF(5, 6);

static int refuse(size_t *pos, size_t at, char *msg, size_t msg_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_size, fmt, ap);
    va_end(ap);
    *pos = at;
    return STF_EFORMAT;
}

/* PCRE2's text for an error code. */
static void error_text(char *buf, size_t size, int code)
{
    if (pcre2_get_error_message(code, (PCRE2_UCHAR *)buf, size) < 0)
        snprintf(buf, size, "PCRE2 error %d", code);
}

/* The limit a pattern set with (*LIMIT_...=n), when lower than ours. */
static uint32_t effective(const pcre2_code *code, uint32_t what, uint32_t ours)
{
    uint32_t v = 0;
    if (pcre2_pattern_info(code, what, &v) == 0 && v < ours) return v;
    return ours;
}

/* Compiles the pattern under the load-time limits. Everything it allocates
 * is released on failure; *out is NULL then. */
static int compile_new(stf__regex **out, const char *pattern, size_t len, size_t *pos, char *msg,
                       size_t msg_size)
{
    *out = NULL;
    *pos = STF__REGEX_WHOLE;
    if (len > STF__REGEX_MAX_LEN)
        return refuse(pos, STF__REGEX_WHOLE, msg, msg_size, "longer than %u bytes",
                      STF__REGEX_MAX_LEN);
    for (size_t i = 0; i + 1 < len; i++) {
        if (pattern[i] == '\\') i++;
        else if (pattern[i] == '{' && pattern[i + 1] == ',')
            return refuse(pos, i, msg, msg_size,
                          "'{,N}' is ambiguous (a repeat or literal text, depending on the "
                          "PCRE2 release): write '{0,N}', or '\\{' for a brace");
    }
    int rc = STF_ENOMEM;
    pcre2_general_context *cg = NULL;
    pcre2_compile_context *cc = NULL;
    stf__regex *re = stf__calloc(1, sizeof *re);
    if (!re) goto done;
    re->refs = 1;
    re->id = SIZE_MAX;
    if (!(re->text = stf__strndup(pattern, len))) goto done;
    re->len = len;
    re->mem.cap = REGEX_COMPILE_BUDGET;
    cg = pcre2_general_context_create(re_malloc, re_free, &re->mem);
    re->gctx = pcre2_general_context_create(re_malloc, re_free, NULL);
    if (!cg || !re->gctx) goto done;
    cc = pcre2_compile_context_create(cg);
    re->mctx = pcre2_match_context_create(re->gctx);
    if (!cc || !re->mctx) goto done;
    pcre2_set_max_pattern_length(cc, STF__REGEX_MAX_LEN);
    pcre2_set_parens_nest_limit(cc, REGEX_MAX_NEST);
    int ec = 0;
    PCRE2_SIZE eo = 0;
    re->code = pcre2_compile((PCRE2_SPTR)pattern, len, REGEX_OPTIONS, &ec, &eo, cc);
    if (!re->code) {
        if (re->mem.oom) goto done;
        if (re->mem.over) {
            rc = refuse(pos, STF__REGEX_WHOLE, msg, msg_size,
                        "needs more than %u bytes of memory to compile", REGEX_COMPILE_BUDGET);
            goto done;
        }
        char text[256];
        error_text(text, sizeof text, ec);
        rc = refuse(pos, eo <= len ? (size_t)eo : STF__REGEX_WHOLE, msg, msg_size, "%s", text);
        goto done;
    }
    size_t size = 0;
    uint32_t backrefs = 0;
    pcre2_pattern_info(re->code, PCRE2_INFO_SIZE, &size);
    pcre2_pattern_info(re->code, PCRE2_INFO_BACKREFMAX, &backrefs);
    if (backrefs) {
        rc = refuse(pos, STF__REGEX_WHOLE, msg, msg_size, "back-references are not supported");
        goto done;
    }
    if (size > REGEX_MAX_CODE) {
        rc = refuse(pos, STF__REGEX_WHOLE, msg, msg_size,
                    "compiles to more than %u bytes (a repeated group is copied once per "
                    "repetition)", REGEX_MAX_CODE);
        goto done;
    }
    /* The counting copy: the limits above were checked on the plain code,
     * whose size does not depend on the callouts. */
    re->counted = pcre2_compile((PCRE2_SPTR)pattern, len, REGEX_OPTIONS | PCRE2_AUTO_CALLOUT, &ec,
                                &eo, cc);
    if (!re->counted) {
        if (re->mem.oom) goto done;
        rc = refuse(pos, STF__REGEX_WHOLE, msg, msg_size,
                    "needs more than %u bytes of memory to compile", REGEX_COMPILE_BUDGET);
        goto done;
    }
    re->match_limit = effective(re->code, PCRE2_INFO_MATCHLIMIT, REGEX_MATCH_LIMIT);
    re->depth_limit = effective(re->code, PCRE2_INFO_DEPTHLIMIT, REGEX_DEPTH_LIMIT);
    re->heap_limit_kib = effective(re->code, PCRE2_INFO_HEAPLIMIT, REGEX_HEAP_LIMIT_KIB);
    pcre2_set_match_limit(re->mctx, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(re->mctx, REGEX_HEAP_LIMIT_KIB);
    *out = re;
    re = NULL;
    rc = 0;
done:
    pcre2_compile_context_free(cc);
    pcre2_general_context_free(cg);
    stf__regex_free(re);
    return rc;
}

/* Compiles the pattern, or takes the one `set` holds (rules_internal.h). */
int stf__regex_compile(stf__regex **out, stf__regex_set *set, const char *pattern, size_t len,
                       size_t *pos, char *msg, size_t msg_size)
{
    *out = NULL;
    for (size_t i = 0; set && i < set->n; i++) {
        stf__regex *re = set->v[i];
        if (re->len == len && !memcmp(re->text, pattern, len)) {
            re->refs++;
            *out = re;
            return 0;
        }
    }
    if (set && set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 8;
        stf__regex **v = stf__realloc(set->v, cap * sizeof *v);
        if (!v) return STF_ENOMEM;
        set->v = v;
        set->cap = cap;
    }
    int rc = compile_new(out, pattern, len, pos, msg, msg_size);
    if (rc || !set) return rc;
    (*out)->id = set->n;
    (*out)->refs++;
    set->v[set->n++] = *out;
    return 0;
}

/* A step of a counted search: a callout before a pattern item. */
static int count_step(pcre2_callout_block *cb, void *ud)
{
    (void)cb;
    stf__regex_budget *b = ud;
    if (!b->left) {
        b->spent = 1;
        return PCRE2_ERROR_CALLOUT;
    }
    b->left--;
    return 0;
}

/* Searches subject[0..len) for the pattern: *found is 1 or 0, or an error
 * with its explanation in msg. */
int stf__regex_search(int *found, const stf__regex *re, const char *subject, size_t len,
                      stf__regex_budget *b, char *msg, size_t msg_size)
{
    *found = 0;
    pcre2_match_data *md = pcre2_match_data_create(1, re->gctx);
    pcre2_match_context *mc = b ? pcre2_match_context_copy(re->mctx) : NULL;
    if (!md || (b && !mc)) {
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        return STF_ENOMEM;
    }
    if (b) pcre2_set_callout(mc, count_step, b);
    int rc = pcre2_match(b ? re->counted : re->code, (PCRE2_SPTR)subject, len, 0, 0, md,
                         b ? mc : re->mctx);
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    if (rc >= 0) {
        *found = 1;
        return 0;
    }
    switch (rc) {
    case PCRE2_ERROR_NOMATCH: return 0;
    case PCRE2_ERROR_NOMEMORY: return STF_ENOMEM;
    case PCRE2_ERROR_CALLOUT:
        snprintf(msg, msg_size, "the run's regex step budget");
        return STF_ELIMIT;
    case PCRE2_ERROR_MATCHLIMIT:
        snprintf(msg, msg_size, "more than %u backtracking steps (the match limit)",
                 re->match_limit);
        return STF_ELIMIT;
    case PCRE2_ERROR_DEPTHLIMIT:
        snprintf(msg, msg_size, "backtracking more than %u deep (the depth limit)",
                 re->depth_limit);
        return STF_ELIMIT;
    case PCRE2_ERROR_HEAPLIMIT:
        snprintf(msg, msg_size, "more than %u KiB of backtracking memory (the heap limit)",
                 re->heap_limit_kib);
        return STF_ELIMIT;
    default: error_text(msg, msg_size, rc); return STF_EFORMAT;
    }
}

/* ------------------------------------------------------- nested repeats */

/* The repeat at p[i..len): *n its length (0: none there) and whether it can
 * match its atom more than once; a possessive one (a++) gives back nothing,
 * so it is not counted. */
static int repeat_at(const char *p, size_t len, size_t i, size_t *n)
{
    *n = 0;
    int many = 0;
    size_t j = i;
    if (p[j] == '*' || p[j] == '+') {
        many = 1;
        j++;
    } else if (p[j] == '?') {
        j++;
    } else if (p[j] == '{') {
        unsigned long lo = 0, hi = 0;
        size_t k = j + 1, d = 0;
        for (; k < len && p[k] >= '0' && p[k] <= '9' && d < 9; k++, d++)
            lo = lo * 10 + (unsigned long)(p[k] - '0');
        if (!d || k >= len) return 0;
        if (p[k] == '}') {
            hi = lo;
        } else if (p[k] == ',') {
            k++;
            d = 0;
            for (; k < len && p[k] >= '0' && p[k] <= '9' && d < 9; k++, d++)
                hi = hi * 10 + (unsigned long)(p[k] - '0');
            if (!d) hi = (unsigned long)-1;
            if (k >= len || p[k] != '}') return 0;
        } else {
            return 0; /* a literal brace */
        }
        many = hi > 1;
        j = k + 1;
    } else {
        return 0;
    }
    if (j < len && p[j] == '+') {
        many = 0;
        j++;
    } else if (j < len && p[j] == '?') {
        j++;
    }
    *n = j - i;
    return many;
}

/* Whether a repeated group of the pattern holds a repeat (contract in
 * rules_internal.h). A lexical scan: escapes, classes and \Q...\E are
 * skipped, and a quantifier counts only after an atom. */
int stf__regex_nested_repeat(const char *p, size_t len, size_t *pos)
{
    struct { size_t open; int holds; } st[REGEX_MAX_NEST * 2 + 2];
    size_t depth = 0, i = 0, last_open = 0;
    int atom = 0, group = 0, group_holds = 0;
    while (i < len) {
        char c = p[i];
        size_t n = 0;
        int many = atom ? repeat_at(p, len, i, &n) : 0;
        if (n) {
            if (many && group && group_holds) {
                *pos = last_open;
                return 1;
            }
            if (depth && (many || (group && group_holds))) st[depth - 1].holds = 1;
            atom = group = 0;
            i += n;
            continue;
        }
        if (group && depth && group_holds) st[depth - 1].holds = 1;
        group = 0;
        atom = 1;
        if (c == '\\' && i + 1 < len && p[i + 1] == 'Q') {
            const char *e = NULL;
            for (size_t k = i + 2; k + 1 < len && !e; k++)
                if (p[k] == '\\' && p[k + 1] == 'E') e = p + k;
            i = e ? (size_t)(e - p) + 2 : len;
        } else if (c == '\\') {
            i += 2;
        } else if (c == '[') {
            size_t k = i + 1;
            if (k < len && p[k] == '^') k++;
            if (k < len && p[k] == ']') k++;
            while (k < len && p[k] != ']') {
                if (p[k] == '\\') k += 2;
                else if (p[k] == '[' && k + 1 < len && p[k + 1] == ':') {
                    const char *e = NULL;
                    for (size_t m = k + 2; m + 1 < len && !e; m++)
                        if (p[m] == ':' && p[m + 1] == ']') e = p + m;
                    k = e ? (size_t)(e - p) + 2 : k + 1;
                } else k++;
            }
            i = k + 1;
        } else if (c == '(') {
            if (depth == sizeof st / sizeof st[0]) return 0;
            st[depth].open = i;
            st[depth++].holds = 0;
            atom = 0;
            i++;
        } else if (c == ')' && depth) {
            depth--;
            last_open = st[depth].open;
            group = 1;
            group_holds = st[depth].holds;
            i++;
        } else if (c == '|') {
            atom = 0;
            i++;
        } else {
            i++;
        }
    }
    if (group && depth && group_holds) st[depth - 1].holds = 1;
    return 0;
}
