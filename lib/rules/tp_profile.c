/*
 * Parallel-style profiles and a recipe's `parallel` overrides: lists of
 * {match, style} entries, parsed with the recipe's selector syntax, whose
 * first entry that selects a layer names the layer's tensor-parallel style
 * (stfix-rules(5), PARALLEL STYLES).
 */
#include <string.h>

#include "rules/rules_internal.h"

static const char profile_keys[] = "stfix, profile, description, styles";
static const char entry_keys[] = "match, style";

/* The spelling of each style in a profile, in stf_parallel_style order. */
static const char *const style_words[] = { NULL, "column", "row", "replicated" };

void stf__styles_free(stf__style_entry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) stf__selector_free(v[i].sel);
    stf__free(v);
}

static int parse_entry(stf__style_entry *e, const stf__ynode *m, const char *path,
                       stf__regex_set *set, stf_recipe_diags *d)
{
    static const char *const required[] = { "match", "style", NULL };
    char sub[STF__PATH_MAX];
    if (m->type != STF__Y_MAP) return stf__bad(d, m, path, "a mapping with match and style");
    e->line = m->line;
    int rc = stf__check_keys(m, path, entry_keys, required, d);
    if (rc) return rc;
    const stf__ynode *match = stf__y_get(m, "match");
    if (match) {
        stf__path(sub, sizeof sub, "%s.match", path);
        if ((rc = stf__selector_compile(&e->sel, match, sub, set, d))) return rc;
    }
    const stf__ynode *style = stf__y_get(m, "style");
    if (style) {
        stf__path(sub, sizeof sub, "%s.style", path);
        for (int s = STF_PARALLEL_COLUMN; s < STF_PARALLEL_COUNT; s++)
            if (stf__y_is_word(style, style_words[s])) e->style = (stf_parallel_style)s;
        if (e->style == STF_PARALLEL_UNKNOWN)
            return stf__bad(d, style, sub, "one of column, row, replicated");
    }
    return 0;
}

/* Parses a sequence of entries; problems go to d. 0 or STF_ENOMEM. */
int stf__styles_parse(stf__style_entry **out, size_t *count, const stf__ynode *node,
                      const char *path, stf__regex_set *set, stf_recipe_diags *d)
{
    *out = NULL;
    *count = 0;
    if (node->type != STF__Y_SEQ)
        return stf__bad(d, node, path, "a sequence of {match, style} mappings");
    if (!node->count) return 0;
    stf__style_entry *v = stf__calloc(node->count, sizeof *v);
    if (!v) return STF_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < node->count && !rc; i++) {
        char p[STF__PATH_MAX];
        stf__path(p, sizeof p, "%s[%zu]", path, i);
        rc = parse_entry(&v[i], node->items[i], p, set, d);
    }
    if (rc) {
        stf__styles_free(v, node->count);
        return rc;
    }
    *out = v;
    *count = node->count;
    return 0;
}

/* The first entry whose selector holds; *found 0 when none. */
int stf__styles_eval(stf_parallel_style *style, int *found, const stf__style_entry *v, size_t n,
                     const stf_layer_view *l, stf__rules_run *run, stf_err *err)
{
    *found = 0;
    for (size_t i = 0; i < n; i++) {
        int sel = 0;
        int rc = stf__selector_eval(&sel, v[i].sel, l, run, err);
        if (rc) return rc;
        if (sel) {
            *style = v[i].style;
            *found = 1;
            return 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ profiles */

void stf_tp_profile_free(stf_tp_profile *p)
{
    if (!p) return;
    stf__styles_free(p->styles, p->nstyles);
    stf__free(p->name);
    stf__free(p->description);
    stf__free(p);
}

const char *stf_tp_profile_name(const stf_tp_profile *p) { return p ? p->name : NULL; }

const char *stf_tp_profile_description(const stf_tp_profile *p)
{
    return p ? p->description : NULL;
}

/* A string value of the profile mapping into *slot. */
static int take_string(char **slot, const stf__ynode *v, const char *path, stf_recipe_diags *d)
{
    if (!stf__y_is_string(v) || !v->len) return stf__bad(d, v, path, "a non-empty string");
    *slot = stf__strdup(v->text);
    return *slot ? 0 : STF_ENOMEM;
}

static int build_profile(void *obj, const stf__ynode *root, stf_recipe_diags *d)
{
    stf_tp_profile *p = obj;
    static const char *const required[] = { "stfix", "profile", "styles", NULL };
    long long ver;
    int rc;
    if (!root || stf__y_is_null(root))
        return stf__diag_add(d, 1, 1, "profile: empty document (expected a mapping with "
                                      "stfix, profile and styles)");
    if (root->type != STF__Y_MAP)
        return stf__bad(d, root, "profile", "a mapping with stfix, profile and styles");
    if ((rc = stf__check_keys(root, "profile", profile_keys, required, d))) return rc;
    const stf__ynode *v = stf__y_get(root, "stfix");
    if (v && (stf__y_int(v, &ver) || ver != 1) &&
        (rc = stf__bad(d, v, "stfix", "the format version 1")))
        return rc;
    if ((v = stf__y_get(root, "profile")) && (rc = take_string(&p->name, v, "profile", d)))
        return rc;
    if ((v = stf__y_get(root, "description")) &&
        (rc = take_string(&p->description, v, "description", d)))
        return rc;
    if ((v = stf__y_get(root, "styles")))
        return stf__styles_parse(&p->styles, &p->nstyles, v, "styles", NULL, d);
    return 0;
}

/* Loads a profile from memory; problems as stf_recipe_load_mem reports them. */
int stf_tp_profile_load_mem(stf_tp_profile **out, stf_recipe_diags **diags, const void *buf,
                            size_t len, const char *name, stf_err *err)
{
    *out = NULL;
    if (diags) *diags = NULL;
    if (!buf && len) return stf__err(err, STF_EINVAL, "profile buffer is NULL");
    stf_tp_profile *p = stf__calloc(1, sizeof *p);
    if (!p) return stf__err(err, STF_ENOMEM, "out of memory");
    int rc = stf__yaml_load(diags, buf, len, name ? name : "<profile>", build_profile, p, err);
    if (rc) {
        stf_tp_profile_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* Reads at most 1 MiB from path and loads it as stf_tp_profile_load_mem does. */
int stf_tp_profile_load_file(stf_tp_profile **out, stf_recipe_diags **diags, const char *path,
                             stf_err *err)
{
    *out = NULL;
    if (diags) *diags = NULL;
    if (!path) return stf__err(err, STF_EINVAL, "profile path is NULL");
    char *buf;
    size_t n;
    int rc = stf__read_small_file(&buf, &n, path, "profile", err);
    if (rc) return rc;
    rc = stf_tp_profile_load_mem(out, diags, buf, n, path, err);
    stf__free(buf);
    return rc;
}

int stf_tp_profile_style(stf_parallel_style *style, const stf_tp_profile *p,
                         const stf_layer_view *layer, stf_err *err)
{
    int found;
    *style = STF_PARALLEL_UNKNOWN;
    if (!p || !layer) return 0;
    return stf__styles_eval(style, &found, p->styles, p->nstyles, layer, NULL, err);
}

/* ------------------------------------------------------------- recipes */

void stf_recipe_set_tp_profile(stf_recipe *r, const stf_tp_profile *p)
{
    if (r) r->tp_profile = p;
}

const stf_tp_profile *stf_recipe_tp_profile(const stf_recipe *r)
{
    return r ? r->tp_profile : NULL;
}

int stf_recipe_parallel_style(stf_parallel_style *style, const stf_recipe *r,
                              const stf_layer_view *layer, stf_err *err)
{
    return stf__recipe_parallel_style_run(style, r, layer, NULL, err);
}

/* stf_recipe_parallel_style within a run (rules_internal.h). */
int stf__recipe_parallel_style_run(stf_parallel_style *style, const stf_recipe *r,
                                   const stf_layer_view *layer, stf__rules_run *run,
                                   stf_err *err)
{
    int found = 0;
    *style = STF_PARALLEL_UNKNOWN;
    if (!r || !layer) return 0;
    int rc = stf__styles_eval(style, &found, r->styles, r->nstyles, layer, run, err);
    if (rc || found) return rc;
    return stf_tp_profile_style(style, r->tp_profile, layer, err);
}
