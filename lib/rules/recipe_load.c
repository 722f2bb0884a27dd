/*
 * Recipe loading: read the file, parse the YAML document and validate the
 * top-level and rule schema (selectors and actions are validated by their
 * own files, includes by recipe_include.c), then hash the resolved recipe.
 * Validation goes on after a problem so that `stfix rules lint` can show
 * every one of them in a single run.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_internal.h"

#define RECIPE_MAX_BYTES STF__RECIPE_MAX_BYTES
#define RECIPE_MAX_RULES STF__RECIPE_MAX_RULES

static const char top_keys[] = "stfix, target, kind, description, include, rules, parallel";
static const char rule_keys[] = "name, description, match, do";

/* Frees a recipe and everything it owns; no-op on NULL. */
void stf_recipe_free(stf_recipe *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->rule_count; i++) {
        stf_rule *ru = &r->rules[i];
        stf__free(ru->name);
        stf__selector_free(ru->sel);
        for (size_t j = 0; j < ru->action_count; j++) stf__action_clear(&ru->actions[j]);
        stf__free(ru->actions);
    }
    stf__free(r->rules);
    stf__styles_free(r->styles, r->nstyles);
    stf__free(r->description);
    for (size_t i = 0; i < r->file_count; i++) stf__free(r->files[i]);
    stf__free(r->files);
    stf__free(r->resolved);
    stf_recipe_diags_free(r->warnings);
    stf__free(r);
}

/* Number of warnings; 0 for NULL. */
size_t stf_recipe_warning_count(const stf_recipe *r)
{
    return r ? stf_recipe_diags_count(r->warnings) : 0;
}

/* Warning i as "FILE:LINE:COL: message" (borrowed), or NULL. */
const char *stf_recipe_warning(const stf_recipe *r, size_t i)
{
    return r ? stf_recipe_diags_text(r->warnings, i) : NULL;
}

/* The size of version 2 of stf_recipe_opts, which ends at max_regex_steps. */
#define RECIPE_OPTS_V2 (offsetof(stf_recipe_opts, max_regex_steps) + sizeof(uint64_t))

/* The bytes of stf_recipe_opts that layout `version` has (1 to the newest). */
static size_t opts_size(unsigned version)
{
    return version == 2 ? RECIPE_OPTS_V2 : sizeof(stf_recipe_opts);
}

/* Defaults (contract in rules.h). */
void stf_recipe_opts_init_version(stf_recipe_opts *o, unsigned version)
{
    if (o)
        stf__opts_reset_v(o, opts_size(version), offsetof(stf_recipe_opts, max_regex_steps),
                          version, STF_RECIPE_OPTS_VERSION);
}

/* Bitmask of STF_CONSUMER_*; 0 for NULL. */
unsigned stf_recipe_targets(const stf_recipe *r)
{
    return r ? r->targets : 0;
}

/* "repair", "conversion" or NULL (contract in rules.h). */
const char *stf_recipe_kind(const stf_recipe *r)
{
    return r ? r->kind : NULL;
}

/* The description string owned by the recipe, or NULL. */
const char *stf_recipe_description(const stf_recipe *r)
{
    return r ? r->description : NULL;
}

/* Lower-case hex SHA-256 of the loaded bytes, owned by the recipe. */
const char *stf_recipe_sha256(const stf_recipe *r)
{
    return r ? r->sha256 : NULL;
}

/* The resolved text, owned by the recipe (contract in rules.h). */
const char *stf_recipe_resolved(const stf_recipe *r, size_t *len)
{
    if (len) *len = r ? r->resolved_len : 0;
    return r ? r->resolved : NULL;
}

/* Number of files read; 0 for NULL. */
size_t stf_recipe_file_count(const stf_recipe *r)
{
    return r ? r->file_count : 0;
}

/* File i as named when read, or NULL when out of range. */
const char *stf_recipe_file(const stf_recipe *r, size_t i)
{
    return r && i < r->file_count ? r->files[i] : NULL;
}

/* Number of rules; 0 for NULL. */
size_t stf_recipe_rule_count(const stf_recipe *r)
{
    return r ? r->rule_count : 0;
}

/* Rule i in file order (borrowed), or NULL when out of range. */
const stf_rule *stf_recipe_rule(const stf_recipe *r, size_t i)
{
    return r && i < r->rule_count ? &r->rules[i] : NULL;
}

/* The rule name, owned by the recipe. */
const char *stf_rule_name(const stf_rule *rule)
{
    return rule ? rule->name : NULL;
}

/* 1-based line of the rule mapping. */
unsigned stf_rule_line(const stf_rule *rule)
{
    return rule ? rule->line : 0;
}

/* The file the rule is written in, owned by the recipe. */
const char *stf_rule_file(const stf_rule *rule)
{
    return rule ? rule->file : NULL;
}

/* Number of resolved actions of the rule. */
size_t stf_rule_action_count(const stf_rule *rule)
{
    return rule ? rule->action_count : 0;
}

/* Action i (borrowed), or NULL when out of range. */
const stf_action *stf_rule_action(const stf_rule *rule, size_t i)
{
    return rule && i < rule->action_count ? &rule->actions[i] : NULL;
}

/* ------------------------------------------------------------ schema */

int stf__bad(stf_recipe_diags *d, const stf__ynode *v, const char *path, const char *expected)
{
    char got[96];
    stf__y_describe(v, got, sizeof got);
    return stf__diag_add(d, v->line, v->col, "%s: expected %s, got %s", path, expected, got);
}

/* Value of `key` in mapping m, or NULL. */
const stf__ynode *stf__y_get(const stf__ynode *m, const char *key)
{
    for (size_t i = 0; i < stf__ymap_size(m); i++)
        if (!strcmp(stf__ymap_key(m, i)->text, key)) return stf__ymap_val(m, i);
    return NULL;
}

/* Reports keys outside `allowed` (a ", "-separated list) and missing required ones. */
int stf__check_keys(const stf__ynode *m, const char *path, const char *allowed,
                    const char *const *required, stf_recipe_diags *d)
{
    char clip[STF__KEY_CLIP_SIZE];
    for (size_t i = 0; i < stf__ymap_size(m); i++) {
        const stf__ynode *k = stf__ymap_key(m, i);
        const char *p = allowed;
        int found = 0;
        size_t kl = strlen(k->text);
        while (*p && !found) {
            size_t n = strcspn(p, ",");
            if (n == kl && !strncmp(p, k->text, n)) found = 1;
            p += n;
            while (*p == ',' || *p == ' ') p++;
        }
        if (!found) {
            int rc = stf__diag_add(d, k->line, k->col,
                                   "%s: unknown key '%s' (expected one of: %s)", path,
                                   stf__clip_key(clip, k->text), allowed);
            if (rc) return rc;
        }
    }
    for (size_t i = 0; required[i]; i++)
        if (!stf__y_get(m, required[i])) {
            int rc = stf__diag_add(d, m->line, m->col, "%s: missing required key '%s'", path,
                                   required[i]);
            if (rc) return rc;
        }
    return 0;
}

/* The targets of one file, added to those of its includes. */
static int parse_targets(stf_recipe *r, const stf__ynode *v, stf_recipe_diags *d)
{
    unsigned mine = 0;
    const char *what = "sglang, comfyui, or a list of them";
    size_t n = v->type == STF__Y_SEQ ? v->count : 1;
    if (v->type == STF__Y_MAP || n == 0 || (v->type == STF__Y_SCALAR && stf__y_is_null(v)))
        return stf__bad(d, v, "target", what);
    for (size_t i = 0; i < n; i++) {
        const stf__ynode *it = v->type == STF__Y_SEQ ? v->items[i] : v;
        char p[STF__PATH_MAX];
        if (v->type == STF__Y_SEQ) stf__path(p, sizeof p, "target[%zu]", i);
        else stf__path(p, sizeof p, "target");
        unsigned bit = 0;
        if (stf__y_is_word(it, "sglang")) bit = STF_CONSUMER_SGLANG;
        else if (stf__y_is_word(it, "comfyui")) bit = STF_CONSUMER_COMFYUI;
        int rc = 0;
        if (!bit) rc = stf__bad(d, it, p, "sglang or comfyui");
        else if (mine & bit)
            rc = stf__diag_add(d, it->line, it->col, "%s: '%s' is listed twice", p, it->text);
        if (rc) return rc;
        mine |= bit;
    }
    r->targets |= mine;
    return 0;
}

/* Rule `idx` of its file, at r->rules[base + idx]. */
static int parse_rule(stf_recipe *r, size_t base, const stf__ynode *m, size_t idx,
                      stf__regex_set *set, stf_recipe_diags *d)
{
    stf_rule *ru = &r->rules[base + idx];
    static const char *const required[] = { "name", "match", "do", NULL };
    char path[STF__PATH_MAX], sub[STF__PATH_MAX], clip[STF__CLIP_SIZE];
    stf__path(path, sizeof path, "rules[%zu]", idx);
    if (m->type != STF__Y_MAP) return stf__bad(d, m, path, "a mapping with name, match and do");
    ru->line = m->line;
    int rc = stf__check_keys(m, path, rule_keys, required, d);
    if (rc) return rc;
    const stf__ynode *name = stf__y_get(m, "name");
    if (name) {
        stf__path(sub, sizeof sub, "%s.name", path);
        if (!stf__y_is_string(name) || name->len == 0) {
            rc = stf__bad(d, name, sub, "a non-empty string");
        } else {
            for (size_t i = 0; i < base + idx && !rc; i++) {
                const stf_rule *o = &r->rules[i];
                if (!o->name || strcmp(o->name, name->text)) continue;
                if (i >= base)
                    rc = stf__diag_add(d, name->line, name->col,
                                       "%s: duplicate rule name '%s' (first at line %u)", sub,
                                       stf__clip(clip, name->text), o->line);
                else
                    rc = stf__diag_add(d, name->line, name->col,
                                       "%s: duplicate rule name '%s' (first at %s:%u)", sub,
                                       stf__clip(clip, name->text), o->file, o->line);
            }
            if (!rc) {
                ru->name = stf__strdup(name->text);
                if (!ru->name) return STF_ENOMEM;
            }
        }
        if (rc) return rc;
    }
    const stf__ynode *desc = stf__y_get(m, "description");
    if (desc && !stf__y_is_string(desc)) {
        stf__path(sub, sizeof sub, "%s.description", path);
        rc = stf__bad(d, desc, sub, "a string");
        if (rc) return rc;
    }
    const stf__ynode *match = stf__y_get(m, "match");
    if (match) {
        stf__path(sub, sizeof sub, "%s.match", path);
        rc = stf__selector_compile(&ru->sel, match, sub, set, d);
        if (rc) return rc;
    }
    const stf__ynode *act = stf__y_get(m, "do");
    if (act) {
        stf__path(sub, sizeof sub, "%s.do", path);
        rc = stf__actions_parse(&ru->actions, &ru->action_count, act, sub, d);
    }
    return rc;
}

/* Room for n more rules in r. 0 or STF_ENOMEM. */
static int rules_reserve(stf_recipe *r, size_t n)
{
    if (r->rule_count + n <= r->rule_cap) return 0;
    size_t cap = r->rule_count + n;
    if (cap < 2 * r->rule_cap) cap = 2 * r->rule_cap;
    stf_rule *v = stf__realloc(r->rules, cap * sizeof *v);
    if (!v) return STF_ENOMEM;
    memset(v + r->rule_cap, 0, (cap - r->rule_cap) * sizeof *v);
    r->rules = v;
    r->rule_cap = cap;
    return 0;
}

/*
 * Validates the document of file `file` (its bytes `src`) into `r`, its
 * includes first; problems go to L->d. `top`: the file loaded, whose
 * description is the recipe's. 0 or STF_ENOMEM.
 */
static int build(stf__rload *L, stf_recipe *r, const stf__ynode *root, const char *src,
                 const char *file, int top)
{
    static const char *const req_top[] = { "stfix", "target", "rules", NULL };
    static const char *const req_inc[] = { "stfix", "rules", NULL };
    static const char *const req_any[] = { "stfix", NULL };
    stf_recipe_diags *d = L->d;
    long long ver;
    int rc;
    if (!root || stf__y_is_null(root))
        return stf__diag_add(d, 1, 1, "recipe: empty document (expected a mapping with "
                                      "stfix, target and rules)");
    /* A file named by mistake (a password file, a log) is refused as a
     * whole, quoting none of its text. */
    if (root->type != STF__Y_MAP)
        return stf__diag_add(d, 0, 0, "not a recipe (the top level is %s, not a mapping)",
                             root->type == STF__Y_SEQ ? "a sequence" : "a scalar");
    size_t known = 0;
    for (size_t i = 0; i < stf__ymap_size(root); i++) {
        const char *k = stf__ymap_key(root, i)->text;
        size_t kl = strlen(k);
        for (const char *p = top_keys; *p; ) {
            size_t n = strcspn(p, ",");
            if (n == kl && !strncmp(p, k, n)) known++;
            p += n;
            while (*p == ',' || *p == ' ') p++;
        }
    }
    if (!known)
        return stf__diag_add(d, 0, 0, "not a recipe (none of the keys %s at the top level)",
                             top_keys);
    /* A file that includes others may leave target and rules to them; an
     * included file may leave target to the file that includes it. */
    const stf__ynode *inc = stf__y_get(root, "include");
    if ((rc = stf__check_keys(root, "recipe", top_keys, inc ? req_any : top ? req_top : req_inc, d)))
        return rc;
    const stf__ynode *v = stf__y_get(root, "stfix");
    if (v) {
        if (stf__y_int(v, &ver)) rc = stf__bad(d, v, "stfix", "the format version 1");
        else if (ver != 1)
            rc = stf__diag_add(d, v->line, v->col,
                               "stfix: unsupported recipe format version %lld "
                               "(this stfix reads version 1)", ver);
        if (rc) return rc;
    }
    if ((v = stf__y_get(root, "target")) && (rc = parse_targets(r, v, d))) return rc;
    /* What the recipe does to what its consumer already accepts: the
     * loaded file says it (an included file's kind is checked, not kept). */
    if ((v = stf__y_get(root, "kind"))) {
        const char *k = stf__y_is_word(v, "repair")       ? "repair"
                        : stf__y_is_word(v, "conversion") ? "conversion"
                                                          : NULL;
        if (!k && (rc = stf__bad(d, v, "kind", "repair or conversion"))) return rc;
        if (top) r->kind = k;
    }
    if ((v = stf__y_get(root, "description"))) {
        if (!stf__y_is_string(v)) {
            if ((rc = stf__bad(d, v, "description", "a string"))) return rc;
        } else if (top && !(r->description = stf__strdup(v->text))) {
            return STF_ENOMEM;
        }
    }
    if (inc) {
        L->includes = 1;
        if ((rc = stf__recipe_include(L, r, inc, file))) return rc;
    }
    /* Tensor-parallel styles, like rules: the included files' first. */
    if ((v = stf__y_get(root, "parallel"))) {
        stf__style_entry *sv = NULL;
        size_t sn = 0;
        if ((rc = stf__styles_parse(&sv, &sn, v, "parallel", &L->regexes, d))) return rc;
        if (sn) {
            stf__style_entry *all = stf__realloc(r->styles, (r->nstyles + sn) * sizeof *all);
            if (!all) {
                stf__styles_free(sv, sn);
                return STF_ENOMEM;
            }
            memcpy(all + r->nstyles, sv, sn * sizeof *sv);
            r->styles = all;
            r->nstyles += sn;
            stf__free(sv);
            for (size_t i = 0; i < v->count; i++)
                if ((rc = stf__recipe_text_item(&L->styles_text, src, v->items[i]))) return rc;
        }
    }
    v = stf__y_get(root, "rules");
    if (v && v->type != STF__Y_SEQ) return stf__bad(d, v, "rules", "a sequence of rules");
    size_t n = v ? v->count : 0, base = r->rule_count;
    if (n > RECIPE_MAX_RULES - (base < RECIPE_MAX_RULES ? base : RECIPE_MAX_RULES))
        return stf__diag_add(d, v->line, v->col, "rules: more than %d rules%s",
                             RECIPE_MAX_RULES, base ? " with the included ones" : "");
    if ((rc = rules_reserve(r, n))) return rc;
    for (size_t i = 0; i < n; i++) {
        r->rule_count = base + i + 1;
        r->rules[base + i].file = file;
        if ((rc = parse_rule(r, base, v->items[i], i, &L->regexes, d))) return rc;
        if ((rc = stf__recipe_text_item(&L->rules_text, src, v->items[i]))) return rc;
    }
    if (top && L->includes && !d->count) {
        if (!r->targets)
            return stf__diag_add(d, root->line, root->col,
                                 "target: neither this recipe nor the ones it includes name one");
        return stf__recipe_text_make(L, r, src, root);
    }
    return 0;
}

/*
 * Why len bytes at buf cannot be a recipe's text: the offset of a NUL byte
 * or of bytes that are not UTF-8 (surrogates included), in why; 0 when
 * they can. The reason quotes none of the bytes.
 */
static int text_problem(char *why, size_t size, const char *buf, size_t len)
{
    const unsigned char *u = (const unsigned char *)buf;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = u[i] < 0x80 ? 1 : stf__utf8_decode(u, len, i, &cp);
        if (u[i] == 0) {
            snprintf(why, size, "a NUL byte at offset %zu", i);
            return 1;
        }
        if (!n || (cp >= 0xD800 && cp < 0xE000)) {
            snprintf(why, size, "bytes that are not UTF-8 at offset %zu", i);
            return 1;
        }
        i += n;
    }
    return 0;
}

/* One file of a recipe (contract in rules_internal.h). */
int stf__recipe_load_doc(stf__rload *L, stf_recipe *r, const char *buf, size_t len,
                         const char *name, char *real)
{
    char **files = stf__realloc(r->files, (r->file_count + 1) * sizeof *files);
    if (!files) {
        stf__free(real);
        return STF_ENOMEM;
    }
    r->files = files;
    if (!(files[r->file_count] = stf__strdup(name))) {
        stf__free(real);
        return STF_ENOMEM;
    }
    const char *file = files[r->file_count++];
    int top = L->depth == 0;
    L->chain[L->depth] = file;
    L->real[L->depth++] = real;
    /* Problems and warnings in this file are named after it. */
    char *outer = L->d->name, *wouter = L->regexes.warn->name;
    L->d->name = (char *)file;
    L->regexes.warn->name = (char *)file;
    stf__ynode *root = NULL;
    stf_err perr;
    stf_err_clear(&perr);
    char why[64];
    int rc = 0;
    if (text_problem(why, sizeof why, buf, len))
        rc = stf__diag_add(L->d, 0, 0, "not a recipe (%s)", why);
    else if ((rc = stf__yaml_parse(&root, L->d, len ? buf : "", len, &perr)) == STF_EFORMAT)
        rc = 0; /* the problem is in L->d */
    else if (rc == 0) rc = build(L, r, root, len ? buf : "", file, top);
    L->d->name = outer;
    L->regexes.warn->name = wouter;
    stf__free(L->real[--L->depth]);
    L->real[L->depth] = NULL;
    stf__ynode_free(root);
    return rc;
}

/* The real path of `path`, or a copy of it when it has none; NULL when
 * out of memory. */
static char *real_or_copy(const char *path)
{
    char *rp = realpath(path, NULL);
    if (!rp) return stf__strdup(path);
    char *s = stf__strdup(rp);
    free(rp);
    return s;
}

static int load(stf_recipe **out, stf_recipe_diags **diags, const void *buf, size_t len,
                const char *name, const stf_recipe_opts *o, stf_err *err)
{
    *out = NULL;
    if (diags) *diags = NULL;
    if (!buf && len) return stf__err(err, STF_EINVAL, "recipe buffer is NULL");
    if (!name) name = "<recipe>";
    if (len > RECIPE_MAX_BYTES)
        return stf__err(err, STF_ELIMIT, "%s: recipe is larger than %u bytes", name,
                        RECIPE_MAX_BYTES);
    stf_recipe_opts own;
    stf_recipe_opts_init(&own);
    int rc = o ? stf__opts_version(err, o->version, STF_RECIPE_OPTS_VERSION, "stf_recipe_opts")
               : 0;
    if (rc) return rc;
    /* A layout 1 caller's options stop before max_regex_steps, a layout 2
     * caller's before builtins. */
    if (o)
        stf__opts_take(&own, o, opts_size(o->version), offsetof(stf_recipe_opts, max_regex_steps),
                       o->version);
    o = &own;
    stf__rload L;
    memset(&L, 0, sizeof L);
    L.o = o;
    L.bytes = len;
    stf__buf_init(&L.rules_text);
    stf__buf_init(&L.styles_text);
    stf_recipe *r = NULL;
    char *real = NULL;
    L.d = stf__diags_new(name);
    L.regexes.warn = stf__diags_new(name);
    if (!L.d || !L.regexes.warn || !(r = stf__calloc(1, sizeof *r)) ||
        !(real = real_or_copy(name)) ||
        stf__recipe_load_doc(&L, r, len ? buf : "", len, name, real)) {
        rc = stf__err(err, STF_ENOMEM, "out of memory");
        goto done;
    }
    if (L.d->count) {
        rc = stf__err(err, STF_EFORMAT, "%s", L.d->v[0].text);
        if (diags) {
            *diags = L.d;
            L.d = NULL;
        }
        goto done;
    }
    /* Without includes the resolved recipe is the file itself. */
    if (!r->resolved) {
        r->resolved = stf__malloc(len + 1);
        if (!r->resolved) {
            rc = stf__err(err, STF_ENOMEM, "out of memory");
            goto done;
        }
        if (len) memcpy(r->resolved, buf, len);
        r->resolved[len] = '\0';
        r->resolved_len = len;
    }
    stf__sha256_hex(r->sha256, r->resolved, r->resolved_len);
    r->nregex = L.regexes.n;
    r->max_regex_steps = o->max_regex_steps;
    if (L.regexes.warn->count) {
        r->warnings = L.regexes.warn;
        L.regexes.warn = NULL;
    }
    *out = r;
    r = NULL;
    rc = 0;
done:
    stf_recipe_free(r);
    stf__buf_free(&L.rules_text);
    stf__buf_free(&L.styles_text);
    stf_recipe_diags_free(L.regexes.warn);
    stf__regex_set_clear(&L.regexes);
    stf_recipe_diags_free(L.d);
    return rc;
}

/* Loads a recipe from memory; see rules.h for ownership and errors. */
int stf_recipe_load_mem(stf_recipe **out, stf_recipe_diags **diags, const void *buf,
                        size_t len, const char *name, stf_err *err)
{
    return load(out, diags, buf, len, name, NULL, err);
}

/* Loads a recipe from memory with its includes; see rules.h. */
int stf_recipe_load_mem_opts(stf_recipe **out, stf_recipe_diags **diags, const void *buf,
                             size_t len, const char *name, const stf_recipe_opts *o,
                             stf_err *err)
{
    return load(out, diags, buf, len, name, o, err);
}

/* Reads a recipe file and loads it with its includes; see rules.h. */
int stf_recipe_load_file_opts(stf_recipe **out, stf_recipe_diags **diags, const char *path,
                              const stf_recipe_opts *o, stf_err *err)
{
    *out = NULL;
    if (diags) *diags = NULL;
    if (!path) return stf__err(err, STF_EINVAL, "recipe path is NULL");
    char *buf = NULL;
    size_t n = 0;
    int rc = stf__read_small_file(&buf, &n, path, "recipe", err);
    if (!rc) rc = load(out, diags, buf, n, path, o, err);
    stf__free(buf);
    return rc;
}

/* stf_recipe_load_file_opts with the default options. */
int stf_recipe_load_file(stf_recipe **out, stf_recipe_diags **diags, const char *path,
                         stf_err *err)
{
    return stf_recipe_load_file_opts(out, diags, path, NULL, err);
}
