/*
 * Recipes by name: the directories of the search path (cli_rules_path.c),
 * then the bundled recipes built into the program (cli_builtin_recipes,
 * generated from the YAML files of rules/), so that -r NAME works wherever
 * stfix runs, also from the build tree or copied alone; the lookup of
 * `-r NAME` on it, and the listing `stfix rules list` prints.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Whether `arg` names a recipe rather than a file; see cli.h. */
int cli_recipe_is_name(const char *arg)
{
    return arg[0] && !strchr(arg, '/') && !ends_with(arg, ".yaml") && !ends_with(arg, ".yml");
}

/* DIR/NAME.yaml, malloc'd; NULL when out of memory. */
static char *join(const char *dir, const char *name, size_t name_len)
{
    size_t n = strlen(dir) + 1 + name_len + sizeof ".yaml";
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%.*s.yaml", dir, (int)name_len, name);
    return s;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The built-in recipe NAME (name_len bytes), or NULL. */
static const cli_builtin_recipe *builtin_find(const char *name, size_t name_len)
{
    for (size_t i = 0; i < cli_builtin_recipe_count; i++) {
        const cli_builtin_recipe *b = &cli_builtin_recipes[i];
        if (strlen(b->name) == name_len && !strncmp(b->name, name, name_len)) return b;
    }
    return NULL;
}

/* Load a listing entry silently; see cli.h. */
int cli_recipe_entry_load(stf_recipe **out, stf_recipe_diags **d, const cli_recipe_entry *e,
                          stf_err *err)
{
    if (!e->builtin) return cli_recipe_load_file(out, d, e->path, err);
    return cli_recipe_load_builtin(out, d, e->builtin, err);
}

/* Load the recipe `arg` names: a file, or NAME on the search path; see cli.h. */
int cli_recipe_load_arg(stf_recipe **out, const char *verb, const char *arg)
{
    size_t nl = strlen(arg);
    if (!cli_recipe_is_name(arg)) {
        /* NAME.yaml with no directory: the file here, else the recipe NAME. */
        size_t sl = ends_with(arg, ".yaml") ? 5 : ends_with(arg, ".yml") ? 4 : 0;
        if (strchr(arg, '/') || !sl || sl == nl || is_file(arg))
            return cli_recipe_load(out, verb, arg);
        nl -= sl;
    }
    cli_rules_path p;
    if (cli_rules_path_get(&p)) return cli_report_code(verb, STF_ENOMEM);
    for (size_t i = 0; i < p.n; i++) {
        char *path = join(p.dirs[i], arg, nl);
        if (!path) {
            cli_rules_path_free(&p);
            return cli_report_code(verb, STF_ENOMEM);
        }
        if (is_file(path)) {
            cli_rules_path_free(&p);
            int ex = cli_recipe_load(out, verb, path);
            free(path);
            return ex;
        }
        free(path);
    }
    const cli_builtin_recipe *b = builtin_find(arg, nl);
    if (b) {
        cli_rules_path_free(&p);
        stf_recipe_diags *d = NULL;
        stf_err err;
        stf_err_clear(&err);
        int rc = cli_recipe_load_builtin(out, &d, b, &err);
        return cli_recipe_loaded(out, verb, b->path, rc, d, &err);
    }
    /* The miss names every directory searched, in order. */
    size_t len = 0;
    for (size_t i = 0; i < p.n; i++) len += strlen(p.dirs[i]) + 2;
    char *list = malloc(len + 1);
    if (!list) {
        cli_rules_path_free(&p);
        return cli_report_code(verb, STF_ENOMEM);
    }
    list[0] = '\0';
    for (size_t i = 0; i < p.n; i++) {
        if (i) strcat(list, ", ");
        strcat(list, p.dirs[i]);
    }
    stf_err err;
    stf_err_clear(&err);
    err.code = STF_ENOTFOUND;
    snprintf(err.msg, sizeof err.msg,
             "recipe '%s' not found (searched %.*s.yaml in: %s; and the built-in recipes)", arg,
             (int)nl, arg, list);
    free(list);
    cli_rules_path_free(&p);
    return cli_report(verb, &err);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const cli_recipe_entry *)a)->name, ((const cli_recipe_entry *)b)->name);
}

/* Frees a listing; see cli.h. */
void cli_recipe_list_free(cli_recipe_entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].path);
    }
    free(v);
}

/* Every NAME.yaml on the search path, first one per name; see cli.h. */
int cli_recipe_list(const cli_rules_path *p, const cli_builtin_recipe *builtins,
                    size_t nbuiltins, cli_recipe_entry **out, size_t *count)
{
    cli_recipe_entry *v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++) {
        DIR *d = opendir(p->dirs[i]);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            const char *nm = e->d_name;
            if (nm[0] == '.' || !ends_with(nm, ".yaml")) continue;
            size_t nl = strlen(nm) - 5;
            int seen = 0;
            for (size_t k = 0; k < n && !seen; k++)
                seen = strlen(v[k].name) == nl && !strncmp(v[k].name, nm, nl);
            if (seen) continue;
            char *path = join(p->dirs[i], nm, nl);
            if (!path) goto nomem;
            if (!is_file(path)) {
                free(path);
                continue;
            }
            cli_recipe_entry *nv = realloc(v, (n + 1) * sizeof *nv);
            if (!nv) {
                free(path);
                goto nomem;
            }
            v = nv;
            v[n].path = path;
            v[n].builtin = NULL;
            if (!(v[n].name = strndup(nm, nl))) {
                free(path);
                goto nomem;
            }
            n++;
            continue;
        nomem:
            closedir(d);
            cli_recipe_list_free(v, n);
            return -1;
        }
        closedir(d);
    }
    /* The built-in ones that no directory has. */
    for (size_t i = 0; builtins && i < nbuiltins; i++) {
        const cli_builtin_recipe *b = &builtins[i];
        int seen = 0;
        for (size_t k = 0; k < n && !seen; k++) seen = !strcmp(v[k].name, b->name);
        if (seen) continue;
        cli_recipe_entry *nv = realloc(v, (n + 1) * sizeof *nv);
        if (!nv) {
            cli_recipe_list_free(v, n);
            return -1;
        }
        v = nv;
        v[n].builtin = b;
        v[n].path = strdup(b->path);
        v[n].name = strdup(b->name);
        if (!v[n].path || !v[n].name) {
            free(v[n].path);
            free(v[n].name);
            cli_recipe_list_free(v, n);
            return -1;
        }
        n++;
    }
    if (n) qsort(v, n, sizeof *v, by_name);
    *out = v;
    *count = n;
    return 0;
}
