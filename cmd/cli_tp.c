/*
 * Tensor parallelism on the command line, for check, plan and fix: the
 * degrees of --tp, the parallel-style profile of --tp-profile (a file, the
 * NAME of a bundled one, or `list`), the detection of the profile from the
 * layer names when none is given, and the per-degree human summary (check
 * --json's is the library's, stf_check_report_json). Bundled profiles are
 * NAME.yaml in the tp/ subdirectory of each directory of the recipe search
 * path (cli_rules_path.c), then those built into the program
 * (cli_builtin_profiles, from rules/tp/), so that they are found wherever
 * stfix runs, as the bundled recipes are.
 */
/* Uses the experimental stf_tp_verdict_name (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* --tp 8 or --tp 2,4,8 into the stf_tp_opts at `target`. */
int cli_opt_tp_degrees(const char *verb, const char *value, void *target)
{
    stf_tp_opts *o = target;
    const char *p = value;
    o->count = 0;
    while (1) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < 1 || v > 65536 || *p == '+' || *p == '-' ||
            o->count == STF_TP_MAX_DEGREES) {
            cli_errorf(verb, "--tp takes one to %d degrees from 1 to 65536, comma-separated "
                             "(e.g. 8 or 2,4,8), not '%s'", STF_TP_MAX_DEGREES, value);
            return -1;
        }
        for (size_t i = 0; i < o->count; i++)
            if (o->degrees[i] == (unsigned)v) {
                cli_errorf(verb, "--tp lists degree %lu twice", v);
                return -1;
            }
        o->degrees[o->count++] = (unsigned)v;
        if (!*end) return 0;
        p = end + 1;
    }
}

/* The profile directories: DIR/tp for each DIR of the recipe search path. */
static int tp_path(cli_rules_path *p)
{
    if (cli_rules_path_get(p)) return -1;
    for (size_t i = 0; i < p->n; i++) {
        size_t n = strlen(p->dirs[i]) + sizeof "/tp";
        char *d = malloc(n);
        if (!d) {
            cli_rules_path_free(p);
            return -1;
        }
        snprintf(d, n, "%s/tp", p->dirs[i]);
        free(p->dirs[i]);
        p->dirs[i] = d;
    }
    return 0;
}

/* Load the profile at `path`, or the built-in one b when b is not NULL:
 * -1 when loaded, else the exit status (every problem printed as
 * FILE:LINE:COL: message). */
static int load_profile(stf_tp_profile **out, const char *verb, const char *path,
                        const cli_builtin_recipe *b)
{
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (!(b ? stf_tp_profile_load_mem(out, &d, b->bytes, b->len, b->path, &err)
            : stf_tp_profile_load_file(out, &d, path, &err)))
        return -1;
    if (!d) return cli_report(verb, &err);
    for (size_t i = 0; i < stf_recipe_diags_count(d); i++)
        cli_textf(stderr, "%s\n", stf_recipe_diags_text(d, i));
    stf_recipe_diags_free(d);
    return cli_report_silent(&err);
}

void cli_tp_free(cli_tp *t)
{
    for (size_t i = 0; i < t->nbundled; i++) stf_tp_profile_free(t->bundled[i]);
    free(t->bundled);
    stf_tp_profile_free(t->given);
    memset(t, 0, sizeof *t);
}

/* The bundled profiles into t->bundled: every one, or when `only` is not
 * NULL just the first DIR/tp/ONLY.yaml, else the built-in ONLY (none when
 * there is neither). A profile that is not asked for is not read, so a
 * broken one stops only the runs that need it. */
static int load_bundled(cli_tp *t, const char *verb, const char *only)
{
    cli_rules_path p;
    cli_recipe_entry *v = NULL;
    size_t n = 0;
    if (tp_path(&p)) return cli_report_code(verb, STF_ENOMEM);
    int rc = cli_recipe_list(&p, cli_builtin_profiles, cli_builtin_profile_count, &v, &n);
    cli_rules_path_free(&p);
    if (rc) return cli_report_code(verb, STF_ENOMEM);
    t->bundled = calloc(n ? n : 1, sizeof *t->bundled);
    if (!t->bundled) {
        cli_recipe_list_free(v, n);
        return cli_report_code(verb, STF_ENOMEM);
    }
    int ex = -1;
    for (size_t i = 0; i < n && ex < 0; i++) {
        if (only && strcmp(v[i].name, only)) continue;
        ex = load_profile(&t->bundled[t->nbundled], verb, v[i].path, v[i].builtin);
        if (ex < 0) t->nbundled++;
    }
    cli_recipe_list_free(v, n);
    return ex;
}

/* --tp-profile list: each bundled profile's name and description. */
int cli_tp_list(const char *verb)
{
    cli_tp t;
    memset(&t, 0, sizeof t);
    int ex = load_bundled(&t, verb, NULL);
    if (ex >= 0) {
        cli_tp_free(&t);
        return ex;
    }
    if (!t.nbundled) fputs("no bundled parallel-style profiles\n", stdout);
    for (size_t i = 0; i < t.nbundled; i++) {
        const char *d = stf_tp_profile_description(t.bundled[i]);
        cli_textf(stdout, "%-12s %s\n", stf_tp_profile_name(t.bundled[i]), d ? d : "");
    }
    cli_tp_free(&t);
    ex = cli_stdout_flush(verb);
    return ex >= 0 ? ex : EXIT_OK_;
}

/* The profile in effect for `c`: `arg` (a file, or the bundled profile
 * DIR/tp/NAME.yaml), or the bundled profile detected from the names when
 * arg is NULL; either way t->classified of t->linear Linear layers have a
 * style in it. On failure *t still holds what was loaded: the caller frees
 * it either way. */
int cli_tp_resolve(cli_tp *t, const char *verb, const char *arg, const stf_ckpt *c)
{
    memset(t, 0, sizeof t[0]);
    int ex;
    if (arg && !cli_recipe_is_name(arg)) {
        if ((ex = load_profile(&t->given, verb, arg, NULL)) >= 0) return ex;
        t->use = t->given;
    } else {
        if ((ex = load_bundled(t, verb, arg)) >= 0) return ex;
        if (arg && !t->nbundled) {
            stf_err err;
            stf_err_clear(&err);
            err.code = STF_ENOTFOUND;
            snprintf(err.msg, sizeof err.msg,
                     "parallel-style profile '%s' not found (stfix check --tp-profile list "
                     "shows the bundled ones)", arg);
            return cli_report(verb, &err);
        }
        if (arg) t->use = t->bundled[0];
    }
    /* The given profile is scored like a detected one: how many layers it classifies. */
    const stf_tp_profile *const *cand =
        t->use ? &t->use : (const stf_tp_profile *const *)t->bundled;
    size_t ncand = t->use ? 1 : t->nbundled;
    stf_model *m = NULL;
    stf_err err;
    stf_err_clear(&err);
    size_t best;
    if (stf_model_build(&m, c, &err) ||
        stf_tp_profile_detect(&best, &t->classified, &t->linear, cand, ncand, m, &err)) {
        stf_model_free(m);
        return cli_report(verb, &err);
    }
    stf_model_free(m);
    if (!arg) {
        t->detected = 1;
        if (best != SIZE_MAX) t->use = t->bundled[best];
    }
    return -1;
}

/* One line: which profile and how it was chosen. */
void cli_tp_describe(FILE *o, const cli_tp *t)
{
    const char *name = t->use ? stf_tp_profile_name(t->use) : NULL;
    if (!t->detected)
        cli_textf(o, "tp profile: %s (given: it classifies %zu of %zu Linear layers)\n",
                  name ? name : "none", t->classified, t->linear);
    else if (name)
        cli_textf(o, "tp profile: %s (detected: it classifies %zu of %zu Linear layers)\n", name,
                  t->classified, t->linear);
    else
        cli_textf(o, "tp profile: none (no bundled profile classifies any of %zu Linear layers: "
                     "every layer is unknown)\n", t->linear);
}

/* The human per-degree summary. */
void cli_tp_summary_human(FILE *o, const stf_check_report *r)
{
    for (size_t i = 0; i < stf_check_tp_count(r); i++) {
        const stf_tp_summary *s = stf_check_tp_summary(r, i);
        fprintf(o, "  TP %u: %s; %zu sharded, %zu replicated by style, %zu replicated", s->tp,
                stf_tp_verdict_name(s), s->sharded, s->replicated_by_style, s->replicated);
        /* The bytes only when there are some: "(0 bytes ... instead of 0)" says nothing. */
        if (s->replicated)
            fprintf(o, " (%llu bytes per GPU instead of %llu)",
                    (unsigned long long)s->replicated_bytes,
                    (unsigned long long)(s->replicated_bytes / s->tp));
        fprintf(o, ", %zu cannot load, %zu unknown\n", s->cannot_load, s->unknown);
    }
}

/* The profile members of a "tp" object (contract in cli.h). */
void cli_tp_profile_add(cJSON *o, const cli_tp *t)
{
    cli_j_add(o, "profile", cli_j_str_or_null(t->use ? stf_tp_profile_name(t->use) : NULL), 0);
    cli_j_add(o, "detected", cli_j_bool(t->detected), 0);
    cli_j_add(o, "classified", cli_j_u64(t->classified), 0);
    cli_j_add(o, "linear", cli_j_u64(t->linear), 0);
}

/* Whether a requantize of r (an action, or rewrite-format's fallback) has a
 * degree above 1. */
int cli_recipe_uses_tp(const stf_recipe *r)
{
    for (size_t i = 0; i < stf_recipe_rule_count(r); i++) {
        const stf_rule *ru = stf_recipe_rule(r, i);
        for (size_t j = 0; j < stf_rule_action_count(ru); j++) {
            const stf_action *a = stf_rule_action(ru, j);
            if (a->kind == STF_ACT_REQUANTIZE && a->params.requantize.tp > 1) return 1;
            if (a->kind == STF_ACT_REWRITE_FORMAT && a->params.rewrite_format.tp > 1) return 1;
        }
    }
    return 0;
}

/* Resolve the profile for c (cli_tp_resolve) and attach it to r. */
int cli_tp_attach(cli_tp *t, const char *verb, const char *arg, const stf_ckpt *c,
                  stf_recipe *r)
{
    int ex = cli_tp_resolve(t, verb, arg, c);
    if (ex >= 0) return ex;
    stf_recipe_set_tp_profile(r, t->use);
    return -1;
}
