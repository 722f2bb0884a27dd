/*
 * Internal interfaces of the rules layer: the positioned YAML document
 * model, the problem list, shape predicates, globs, selectors and action
 * parsing. Not part of the public API.
 */
#ifndef STF_RULES_INTERNAL_H
#define STF_RULES_INTERNAL_H

#include <stdarg.h>

#include "stfix/rules.h"
#include "util/sha256.h"
#include "util/util.h"

/* ------------------------------------------------------ problem list */

/* At most this many problems are kept; one more line says how many were cut. */
#define STF__DIAGS_MAX 100

typedef struct stf__diag {
    unsigned line, col;
    char *text; /* "NAME:LINE:COL: message" */
} stf__diag;

struct stf_recipe_diags {
    char *name;
    size_t count, cap;
    size_t dropped;
    stf__diag *v;
};

/* Create an empty list for file `name`. NULL when out of memory. */
stf_recipe_diags *stf__diags_new(const char *name);

/*
 * Append "NAME:LINE:COL: <fmt...>" ("NAME: <fmt...>" for line 0: a
 * problem of the file as a whole). Returns 0, or STF_ENOMEM. Beyond
 * STF__DIAGS_MAX problems only a count is kept. Control characters in the
 * message are written as \xNN so that every problem stays on one line.
 */
int stf__diag_add(stf_recipe_diags *d, unsigned line, unsigned col, const char *fmt, ...)
    STF_PRINTF(4, 5);

/* Node paths in messages ("rules[2].match.prefix"): vsnprintf into dst,
 * truncating silently (a path is only ever shown, never parsed). */
#define STF__PATH_MAX 512
void stf__path(char *dst, size_t size, const char *fmt, ...) STF_PRINTF(3, 4);

/* Echoes of recipe text in messages are clipped to this many bytes plus "...". */
#define STF__CLIP_LEN 60
#define STF__CLIP_SIZE (STF__CLIP_LEN + 4)
/* Copy of s for a message, clipped; returns buf. */
const char *stf__clip(char buf[STF__CLIP_SIZE], const char *s);
/* A mapping key in a message ("unknown key '...'") is clipped shorter: the
 * file may be no recipe at all but some other file named by mistake, whose
 * lines (a password file's hashes) must not be shown. */
#define STF__KEY_CLIP_LEN 16
#define STF__KEY_CLIP_SIZE (STF__KEY_CLIP_LEN + 4)
const char *stf__clip_key(char buf[STF__KEY_CLIP_SIZE], const char *s);

/* ------------------------------------------------- YAML document model */

typedef enum stf__ytype { STF__Y_SCALAR = 0, STF__Y_SEQ, STF__Y_MAP } stf__ytype;

/*
 * A node with its 1-based position. Scalars keep their text and whether they
 * were plain (unquoted): only plain scalars are typed as int/bool/null, so
 * `"256"` stays a string. Mappings store key, value pairs in `items`
 * (items[2i] is a key scalar, items[2i+1] its value); `count` is the number
 * of items (pairs × 2 for mappings).
 */
typedef struct stf__ynode {
    stf__ytype type;
    unsigned line, col;
    char *text; /* scalars: NUL-terminated */
    size_t len;
    int plain;
    size_t count, cap;
    struct stf__ynode **items;
    /* Bytes [start, end) of the source the node is written in: a block
     * collection ends where its last item does (`stfix rules show` copies
     * rules out of their files with it). */
    size_t start, end;
    int flow; /* a flow collection ([...] or {...}) */
} stf__ynode;

/*
 * Parse one YAML document. On a syntax error or an unsupported construct
 * (aliases, anchors, tags, several documents, non-scalar keys, duplicate keys,
 * nesting deeper than 32) the problems go to `d` and the function returns
 * STF_EFORMAT with *out NULL. STF_ENOMEM otherwise. An empty document gives a
 * NULL root and 0.
 */
int stf__yaml_parse(stf__ynode **out, stf_recipe_diags *d, const void *buf, size_t len,
                    stf_err *err);

void stf__ynode_free(stf__ynode *n);

/* Builds a loaded object from the document's root (NULL when empty):
 * problems go to d; returns 0 or STF_ENOMEM. */
typedef int (*stf__yaml_build_fn)(void *obj, const stf__ynode *root, stf_recipe_diags *d);
/*
 * The load shared by recipes and parallel-style profiles: parse buf (len
 * bytes; not NULL when len > 0) and build(obj, root, d), problems named
 * NAME:LINE:COL. 0 when the document built without a problem. STF_EFORMAT
 * when it has problems: the first is in err, all of them in *diags when
 * diags is not NULL (free with stf_recipe_diags_free). STF_ENOMEM otherwise.
 * obj stays the caller's either way.
 */
int stf__yaml_load(stf_recipe_diags **diags, const void *buf, size_t len, const char *name,
                   stf__yaml_build_fn build, void *obj, stf_err *err);

/* Mapping helpers: number of pairs, key i, value i. */
size_t stf__ymap_size(const stf__ynode *m);
const stf__ynode *stf__ymap_key(const stf__ynode *m, size_t i);
const stf__ynode *stf__ymap_val(const stf__ynode *m, size_t i);

/* Plain-scalar typing (YAML 1.2 core schema, decimal integers only). */
int stf__y_is_null(const stf__ynode *n);
int stf__y_bool(const stf__ynode *n, int *out);           /* 0 when n is a bool */
int stf__y_int(const stf__ynode *n, long long *out);     /* 0 when n is an int */
int stf__y_is_string(const stf__ynode *n);               /* scalar, not null/bool/int */
int stf__y_is_word(const stf__ynode *n, const char *w);  /* plain scalar equal to w */

/* Short description for "got ...": "'text'", "a sequence", "a mapping", "null". */
void stf__y_describe(const stf__ynode *n, char *buf, size_t size);

/* ----------------------------------------------------- shape predicates */

typedef struct stf__expr stf__expr;

/*
 * Compile a predicate such as "K % 16 == 0 && rank == 2" (grammar in
 * stf-rules(5)). STF_EFORMAT with a message in msg and the 0-based byte
 * offset of the problem in *pos; STF_ENOMEM.
 */
int stf__expr_compile(stf__expr **out, const char *src, size_t *pos, char *msg,
                      size_t msg_size);

/* 1 when the predicate holds; 0 when false or undefined (missing dimension,
 * division by zero, overflow). */
int stf__expr_eval(const stf__expr *e, const stf_layer_view *layer);

void stf__expr_free(stf__expr *e);

/* ---------------------------------------------------------------- globs */

/* 0 when pattern is a valid prefix glob; else -1 with *pos and *why set. */
int stf__glob_check(const char *pattern, size_t *pos, const char **why);

/* 1 when `name` matches the whole glob `pattern`, else 0. */
int stf__glob_match(const char *pattern, const char *name);
/* The same for a name of len bytes, which may hold U+0000. */
int stf__glob_match_n(const char *pattern, const char *name, size_t len);

/* -------------------------------------------------------------- regexes */

typedef struct stf__regex stf__regex;

/* Longest pattern the `regex` key accepts, in bytes. */
#define STF__REGEX_MAX_LEN 1024u
/* A position that means "the pattern as a whole". */
#define STF__REGEX_WHOLE ((size_t)-1)
/* The regex steps one plan may take over all its searches, by default
 * (stf_recipe_opts.max_regex_steps). */
#define STF__REGEX_STEPS_DEFAULT 100000000ull

/*
 * The patterns of one recipe, each compiled once however many selectors
 * use it: a selector takes a reference to the one the set holds, and the
 * set's index of it is the pattern's id (stf__regex_id). `v` holds a
 * reference to each until stf__regex_set_clear.
 */
typedef struct stf__regex_set {
    stf__regex **v;
    size_t n, cap;
    stf_recipe_diags *warn; /* where warnings about patterns go; NULL: nowhere */
} stf__regex_set;

/*
 * Compile the `len` bytes at `pattern` (PCRE2 syntax, stfix-rules(5)) under
 * the load-time limits, or take a new reference to the same pattern in
 * `set` (NULL: none) and add a new one there. STF_EFORMAT with a message in
 * msg and in *pos the 0-based byte offset of the problem, or
 * STF__REGEX_WHOLE when it concerns the whole pattern (length, size,
 * back-references); STF_ENOMEM.
 */
int stf__regex_compile(stf__regex **out, stf__regex_set *set, const char *pattern, size_t len,
                       size_t *pos, char *msg, size_t msg_size);

/* Drop the set's references (the selectors keep theirs). */
void stf__regex_set_clear(stf__regex_set *set);

/* The pattern's index in its set; SIZE_MAX when compiled without one. */
size_t stf__regex_id(const stf__regex *re);

/* The pattern's text, NUL-terminated (and cut at a NUL it holds), for messages. */
const char *stf__regex_text(const stf__regex *re);

/*
 * The regex steps a run may still take: every search counts each item of
 * the pattern it tries, and one that would go past `left` stops with
 * `spent` set. One thread at a time.
 */
typedef struct stf__regex_budget {
    uint64_t left;
    int spent;
} stf__regex_budget;

/*
 * Search subject[0..len) for a match anywhere (*found 1 or 0), its steps
 * counted against `b` when not NULL. A search that reaches a match-time
 * limit, or spends the budget (b->spent then set), returns STF_ELIMIT,
 * another PCRE2 failure STF_EFORMAT, both with the reason in msg;
 * STF_ENOMEM. Safe to call from several threads on one regex with
 * distinct budgets.
 */
int stf__regex_search(int *found, const stf__regex *re, const char *subject, size_t len,
                      stf__regex_budget *b, char *msg, size_t msg_size);

/*
 * Whether the pattern (len bytes; compiled without error) repeats a group
 * that holds a repeat, such as (a+)+, (a*)* or (a{1,9}){1,9}: the shape
 * whose search may try exponentially many ways to split a name. 1 and in
 * *pos the offset of the outer group's '(' when it does, else 0. A
 * possessive repeat (a++) does not count, since it gives nothing back.
 */
int stf__regex_nested_repeat(const char *pattern, size_t len, size_t *pos);

/* Drops a reference; the last one frees the regex. No-op on NULL. */
void stf__regex_free(stf__regex *re);

/*
 * What the selectors of one run (one plan) share: the regex step budget,
 * and each pattern's verdict on the layer name searched last, so that a
 * pattern several rules use, or a rule evaluated again for the same layer,
 * searches the name once. One thread at a time.
 */
typedef struct stf__rules_run {
    stf__regex_budget budget;
    uint64_t steps;     /* the budget at the start, for messages */
    size_t nre;         /* the recipe's patterns */
    uint64_t *seen;     /* per pattern: the subject generation of its verdict */
    unsigned char *verdict;
    uint64_t gen;       /* the generation of `subject` */
    stf_buf subject;    /* the layer name searched last */
    stf_err spent_err;  /* the error of the search that spent the budget */
} stf__rules_run;

/* A run of recipe r with r's step budget, or `left` steps when not
 * UINT64_MAX (a rebuilt plan goes on with what its first build left).
 * 0 or STF_ENOMEM. */
int stf__rules_run_init(stf__rules_run *run, const stf_recipe *r, uint64_t left, stf_err *err);
void stf__rules_run_free(stf__rules_run *run);
/* The run's verdict of pattern `id` on the name (len bytes): *known 1 with
 * it in *holds when the run has it, else 0 (the name is then the one the
 * next verdict is kept for, stf__rules_run_keep). 0 or STF_ENOMEM. */
int stf__rules_run_cached(stf__rules_run *run, size_t id, const char *name, size_t len,
                          int *holds, int *known);
/* Keep `holds` as pattern id's verdict on that name; no-op without a run. */
void stf__rules_run_keep(stf__rules_run *run, size_t id, int holds);

/* stf_rules_match and stf_recipe_parallel_style within a run (NULL:
 * none). A search that spends the run's budget is STF_ELIMIT, rule L12. */
int stf__rules_match_run(int *matched, const stf_rule *rule, const stf_layer_view *layer,
                         stf__rules_run *run, stf_err *err);
int stf__recipe_parallel_style_run(stf_parallel_style *style, const stf_recipe *r,
                                   const stf_layer_view *layer, stf__rules_run *run,
                                   stf_err *err);

/* ------------------------------------------------------------ selectors */

typedef struct stf__selector stf__selector;

/*
 * Compile a `match` mapping, its regex through `set` (NULL: none). Schema
 * problems are added to `d` (path names the node, e.g. "rules[2].match")
 * and leave *out NULL with 0 returned; STF_ENOMEM is the only failure.
 */
int stf__selector_compile(stf__selector **out, const stf__ynode *match, const char *path,
                          stf__regex_set *set, stf_recipe_diags *d);

/*
 * *selected is 1 when every key of the selector holds for the layer, else 0.
 * A regex search that reaches its limit or spends the budget of `run`
 * (NULL: none) is an error (STF_ELIMIT, or STF_EFORMAT, STF_ENOMEM) whose
 * message starts with the regex's position "FILE:LINE:COL: PATH" and names
 * the layer prefix searched.
 */
int stf__selector_eval(int *selected, const stf__selector *s, const stf_layer_view *layer,
                       stf__rules_run *run, stf_err *err);

void stf__selector_free(stf__selector *s);

/* -------------------------------------------------------------- actions */

/*
 * Parse a `do` value (one action or a sequence) into a new array of resolved
 * actions. Problems go to `d`; 0 or STF_ENOMEM. *out is NULL when count is 0.
 */
int stf__actions_parse(stf_action **out, size_t *count, const stf__ynode *node,
                       const char *path, stf_recipe_diags *d);

/* Free the strings one action owns (not the action itself). */
void stf__action_clear(stf_action *a);

/* ------------------------------------------------------ schema helpers */

/* "PATH: expected EXPECTED, got ..." at v's position. 0 or STF_ENOMEM. */
int stf__bad(stf_recipe_diags *d, const stf__ynode *v, const char *path, const char *expected);
/* Value of `key` in mapping m, or NULL. */
const stf__ynode *stf__y_get(const stf__ynode *m, const char *key);
/* Reports keys of m outside `allowed` (", "-separated) and missing
 * `required` ones (NULL-terminated). 0 or STF_ENOMEM. */
int stf__check_keys(const stf__ynode *m, const char *path, const char *allowed,
                    const char *const *required, stf_recipe_diags *d);
/* Reads at most 1 MiB of the file at `path` into a new *buf (*len bytes);
 * `what` names it in messages. A file that is not a regular one is refused
 * before it is read ("PATH: not a WHAT (a FIFO, not a regular file)",
 * STF_EIO). STF_ENOTFOUND, STF_EIO, STF_ELIMIT, STF_ENOMEM. */
int stf__read_small_file(char **buf, size_t *len, const char *path, const char *what,
                         stf_err *err);

/* ------------------------------------------------------ parallel styles */

/* One entry of a `parallel` or `styles` list: the first whose selector
 * holds gives the layer's style. */
typedef struct stf__style_entry {
    stf__selector *sel;
    stf_parallel_style style;
    unsigned line;
} stf__style_entry;

/* Parse a sequence of {match, style} mappings at `node` (path names it),
 * regexes through `set` (NULL: none). Problems go to d; 0 or STF_ENOMEM. */
int stf__styles_parse(stf__style_entry **out, size_t *count, const stf__ynode *node,
                      const char *path, stf__regex_set *set, stf_recipe_diags *d);
void stf__styles_free(stf__style_entry *v, size_t n);
/* *style of the first entry selecting the layer; *found 0 when none does. */
int stf__styles_eval(stf_parallel_style *style, int *found, const stf__style_entry *v, size_t n,
                     const stf_layer_view *l, stf__rules_run *run, stf_err *err);

/* ---------------------------------------------------------------- recipe */

struct stf_rule {
    char *name;
    unsigned line;
    const char *file; /* one of the recipe's files */
    stf__selector *sel;
    stf_action *actions;
    size_t action_count;
};

struct stf_recipe {
    unsigned targets;
    char *description;
    const char *kind;   /* "repair", "conversion" (static), or NULL: not said */
    char sha256[65];
    stf_rule *rules;
    size_t rule_count, rule_cap;
    stf__style_entry *styles;           /* `parallel`: overrides the profile */
    size_t nstyles;
    const stf_tp_profile *tp_profile;   /* borrowed (stf_recipe_set_tp_profile) */
    char **files; /* the file loaded, then each include as read */
    size_t file_count;
    char *resolved; /* stf_recipe_resolved */
    size_t resolved_len;
    size_t nregex;            /* distinct patterns, each compiled once (ids 0..nregex-1) */
    stf_recipe_diags *warnings; /* stf_recipe_warning; NULL: none */
    uint64_t max_regex_steps; /* the step budget of each run (stf_recipe_opts) */
};

struct stf_tp_profile {
    char *name;
    char *description;
    stf__style_entry *styles;
    size_t nstyles;
};

/* Bounds of one recipe file and of a recipe with its includes. */
#define STF__RECIPE_MAX_BYTES (1u << 20)
#define STF__RECIPE_MAX_RULES 10000
#define STF__INCLUDE_DEPTH_MAX 16
#define STF__INCLUDE_FILES_MAX 64
#define STF__INCLUDE_BYTES_MAX (4u << 20)

/* A recipe being loaded: the files open one inside the other (to find
 * cycles), the bytes read so far and the rules of the resolved text. */
typedef struct stf__rload {
    const stf_recipe_opts *o;
    stf_recipe_diags *d;
    const char *chain[STF__INCLUDE_DEPTH_MAX + 1]; /* names as shown, outermost first */
    char *real[STF__INCLUDE_DEPTH_MAX + 1];        /* their real paths */
    size_t depth;
    size_t bytes;
    int includes;        /* some file has an include: the resolved text is made */
    stf_buf rules_text;  /* "- RULE" items of the resolved text, in order */
    stf_buf styles_text; /* "- ENTRY" items of its `parallel`, in order */
    stf__regex_set regexes; /* the patterns of every file, each compiled once */
} stf__rload;

/* recipe_load.c: read `len` bytes of the file `name` (real path `real`,
 * taken over) into r: its includes first, then its own rules. Problems go
 * to L->d under the file's name. 0, or STF_ENOMEM. */
int stf__recipe_load_doc(stf__rload *L, stf_recipe *r, const char *buf, size_t len,
                         const char *name, char *real);

/* recipe_include.c: load every entry of the `include` value v of the file
 * `name` (stf__recipe_load_doc for each); problems are positioned at the
 * entry. 0, or STF_ENOMEM. */
int stf__recipe_include(stf__rload *L, stf_recipe *r, const stf__ynode *v, const char *name);

/* recipe_include.c: append node n of `src` (a rule) to b as a block
 * sequence item "- ...", its lines re-indented under the dash. */
int stf__recipe_text_item(stf_buf *b, const char *src, const stf__ynode *n);

/* recipe_include.c: the resolved text of a recipe that includes others into
 * r->resolved: stfix, target, the top file's description (`src`, `root`),
 * the `parallel` entries of L->styles_text, then the rules of
 * L->rules_text. 0, or STF_ENOMEM. */
int stf__recipe_text_make(stf__rload *L, stf_recipe *r, const char *src, const stf__ynode *root);

#endif
