/*
 * Recipe loading: read the file, hash its bytes, parse the YAML document and
 * validate the top-level and rule schema (selectors and actions are
 * validated by their own files). Validation goes on after a problem so that
 * `stfix rules lint` can show every one of them in a single run.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rules/rules_internal.h"

#define RECIPE_MAX_BYTES (1u << 20)
#define RECIPE_MAX_RULES 10000

static const char top_keys[] = "stfix, target, description, rules, parallel";
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
    stf__free(r);
}

/* Bitmask of STF_CONSUMER_*; 0 for NULL. */
unsigned stf_recipe_targets(const stf_recipe *r)
{
    return r ? r->targets : 0;
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
    char clip[STF__CLIP_SIZE];
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
                                   stf__clip(clip, k->text),
                                   allowed);
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

static int parse_targets(stf_recipe *r, const stf__ynode *v, stf_recipe_diags *d)
{
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
        else if (r->targets & bit)
            rc = stf__diag_add(d, it->line, it->col, "%s: '%s' is listed twice", p, it->text);
        if (rc) return rc;
        r->targets |= bit;
    }
    return 0;
}

static int parse_rule(stf_recipe *r, stf_rule *ru, const stf__ynode *m, size_t idx,
                      stf_recipe_diags *d)
{
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
            for (size_t i = 0; i < idx && !rc; i++)
                if (r->rules[i].name && !strcmp(r->rules[i].name, name->text))
                    rc = stf__diag_add(d, name->line, name->col,
                                       "%s: duplicate rule name '%s' (first at line %u)", sub,
                                       stf__clip(clip, name->text), r->rules[i].line);
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
        rc = stf__selector_compile(&ru->sel, match, sub, d);
        if (rc) return rc;
    }
    const stf__ynode *act = stf__y_get(m, "do");
    if (act) {
        stf__path(sub, sizeof sub, "%s.do", path);
        rc = stf__actions_parse(&ru->actions, &ru->action_count, act, sub, d);
    }
    return rc;
}

/* Validates the document into `r`; problems go to `d`. 0 or STF_ENOMEM. */
static int build(stf_recipe *r, const stf__ynode *root, stf_recipe_diags *d)
{
    static const char *const required[] = { "stfix", "target", "rules", NULL };
    long long ver;
    int rc;
    if (!root || stf__y_is_null(root))
        return stf__diag_add(d, 1, 1, "recipe: empty document (expected a mapping with "
                                      "stfix, target and rules)");
    if (root->type != STF__Y_MAP)
        return stf__bad(d, root, "recipe", "a mapping with stfix, target and rules");
    if ((rc = stf__check_keys(root, "recipe", top_keys, required, d))) return rc;
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
    if ((v = stf__y_get(root, "description"))) {
        if (!stf__y_is_string(v)) {
            if ((rc = stf__bad(d, v, "description", "a string"))) return rc;
        } else if (!(r->description = stf__strdup(v->text))) {
            return STF_ENOMEM;
        }
    }
    if ((v = stf__y_get(root, "parallel")) &&
        (rc = stf__styles_parse(&r->styles, &r->nstyles, v, "parallel", d)))
        return rc;
    v = stf__y_get(root, "rules");
    if (!v) return 0;
    if (v->type != STF__Y_SEQ) return stf__bad(d, v, "rules", "a sequence of rules");
    if (v->count > RECIPE_MAX_RULES)
        return stf__diag_add(d, v->line, v->col, "rules: more than %d rules", RECIPE_MAX_RULES);
    if (v->count) {
        r->rules = stf__calloc(v->count, sizeof *r->rules);
        if (!r->rules) return STF_ENOMEM;
    }
    for (size_t i = 0; i < v->count; i++) {
        r->rule_count = i + 1;
        if ((rc = parse_rule(r, &r->rules[i], v->items[i], i, d))) return rc;
    }
    return 0;
}

static int build_cb(void *r, const stf__ynode *root, stf_recipe_diags *d)
{
    return build(r, root, d);
}

/* Loads a recipe from memory; see rules.h for ownership and errors. */
int stf_recipe_load_mem(stf_recipe **out, stf_recipe_diags **diags, const void *buf,
                        size_t len, const char *name, stf_err *err)
{
    *out = NULL;
    if (diags) *diags = NULL;
    if (!buf && len) return stf__err(err, STF_EINVAL, "recipe buffer is NULL");
    if (!name) name = "<recipe>";
    if (len > RECIPE_MAX_BYTES)
        return stf__err(err, STF_ELIMIT, "%s: recipe is larger than %u bytes", name,
                        RECIPE_MAX_BYTES);
    stf_recipe *r = stf__calloc(1, sizeof *r);
    if (!r) return stf__err(err, STF_ENOMEM, "out of memory");
    stf__sha256_hex(r->sha256, len ? buf : "", len);
    int rc = stf__yaml_load(diags, buf, len, name, build_cb, r, err);
    if (rc) {
        stf_recipe_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* Reads the file at `path` (at most 1 MiB) into a new buffer *buf of *len
 * bytes; `what` ("recipe") names the file in messages. */
int stf__read_small_file(char **buf, size_t *len, const char *path, const char *what,
                         stf_err *err)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        return stf__err(err, e == ENOENT ? STF_ENOTFOUND : STF_EIO, "%s: cannot open: %s", path,
                        strerror(e));
    }
    char *b = stf__malloc(RECIPE_MAX_BYTES + 1);
    int rc = 0;
    if (!b) {
        rc = stf__err(err, STF_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = fread(b, 1, RECIPE_MAX_BYTES + 1, f);
    if (ferror(f)) {
        rc = stf__err(err, STF_EIO, "%s: read error: %s", path, strerror(errno));
        goto done;
    }
    if (n > RECIPE_MAX_BYTES) {
        rc = stf__err(err, STF_ELIMIT, "%s: %s is larger than %u bytes", path, what,
                      RECIPE_MAX_BYTES);
        goto done;
    }
    *buf = b;
    *len = n;
    b = NULL;
done:
    stf__free(b);
    fclose(f);
    return rc;
}

/* Reads at most 1 MiB from path and loads it as stf_recipe_load_mem does. */
int stf_recipe_load_file(stf_recipe **out, stf_recipe_diags **diags, const char *path,
                         stf_err *err)
{
    *out = NULL;
    if (diags) *diags = NULL;
    if (!path) return stf__err(err, STF_EINVAL, "recipe path is NULL");
    char *buf;
    size_t n;
    int rc = stf__read_small_file(&buf, &n, path, "recipe", err);
    if (rc) return rc;
    rc = stf_recipe_load_mem(out, diags, buf, n, path, err);
    stf__free(buf);
    return rc;
}
