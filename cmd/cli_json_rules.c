/*
 * The --json documents of `stfix rules lint` and `stfix rules show`
 * (stfix(1), JSON OUTPUT): the lint's problems file by file, with the
 * place each one is at, and the recipe as it was loaded.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* A finding {"file", "line", "col", "severity", "message"}; line and col
 * 0: null (a problem with no place, such as a file that cannot be read). */
static cJSON *finding(const char *file, size_t file_len, unsigned line, unsigned col,
                      const char *msg)
{
    cJSON *f = cli_j_object(0);
    cli_j_add(f, "file", cli_j_strn(file, file_len), 0);
    cli_j_add(f, "line", line ? cli_j_u64(line) : cli_j_null(), 0);
    cli_j_add(f, "col", line ? cli_j_u64(col) : cli_j_null(), 0);
    /* A recipe with any problem does not load: each one is an error. */
    cli_j_add(f, "severity", cli_j_str("error"), 0);
    cli_j_add(f, "message", cli_j_str(msg), 0);
    return f;
}

/* Problem i of d, whose text is "FILE:LINE:COL: message" (FILE the recipe
 * or a file it includes), split at its place. */
static cJSON *diag(const stf_recipe_diags *d, size_t i)
{
    const char *t = stf_recipe_diags_text(d, i);
    unsigned line = stf_recipe_diags_line(d, i), col = stf_recipe_diags_column(d, i);
    char at[32];
    snprintf(at, sizeof at, ":%u:%u: ", line, col);
    const char *p = strstr(t, at);
    if (!p) return finding("", 0, line, col, t);
    return finding(t, (size_t)(p - t), line, col, p + strlen(at));
}

/* One file's entry; *ex its status. */
static cJSON *lint_one(const char *path, int *ex)
{
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    cJSON *e = cli_j_object(0), *fs = cli_j_array(0);
    *ex = EXIT_OK_;
    if (cli_recipe_load_file(&r, &d, path, &err)) {
        *ex = cli_recipe_problems("rules", d, &err);
        for (size_t i = 0; d && i < stf_recipe_diags_count(d); i++) cli_j_push(fs, diag(d, i));
        if (!d) cli_j_push(fs, finding(path, strlen(path), 0, 0, cli_err_text(&err)));
    }
    cli_j_add(e, "file", cli_j_str(path), 0);
    cli_j_add(e, "exit", cli_j_u64((uint64_t)*ex), 0);
    cli_j_add(e, "rules", r ? cli_j_u64(stf_recipe_rule_count(r)) : cli_j_null(), 0);
    cli_j_add(e, "sha256", cli_j_str_or_null(r ? stf_recipe_sha256(r) : NULL), 0);
    cli_j_add(e, "findings", fs, 0);
    stf_recipe_diags_free(d);
    stf_recipe_free(r);
    return e;
}

/* See cli.h. */
int cli_json_rules_lint(FILE *o, char *const *paths, size_t n, int *worst)
{
    cJSON *doc = cli_j_object(0), *files = cli_j_array(CLI_J_LINES);
    *worst = EXIT_OK_;
    for (size_t i = 0; i < n; i++) {
        int ex;
        cli_j_push(files, lint_one(paths[i], &ex));
        *worst = cli_exit_worst(*worst, ex);
    }
    cli_j_add(doc, "files", files, 0);
    return cli_json_print(o, doc);
}

/* See cli.h. */
int cli_json_rules_show(FILE *o, const char *arg, const stf_recipe *r)
{
    cJSON *doc = cli_j_object(0), *files = cli_j_array(0);
    for (size_t i = 0; i < stf_recipe_file_count(r); i++)
        cli_j_push(files, cli_j_str(stf_recipe_file(r, i)));
    size_t len = 0;
    const char *text = stf_recipe_resolved(r, &len);
    cli_j_add(doc, "recipe", cli_j_str(arg), 0);
    cli_j_add(doc, "files", files, 0);
    cli_j_add(doc, "rules", cli_j_u64(stf_recipe_rule_count(r)), 0);
    cli_j_add(doc, "description", cli_j_str_or_null(stf_recipe_description(r)), 0);
    cli_j_add(doc, "sha256", cli_j_str(stf_recipe_sha256(r)), 0);
    cli_j_add(doc, "text", cli_j_strn(text, len), CLI_J_BREAK);
    return cli_json_print(o, doc);
}
