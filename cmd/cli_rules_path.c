/*
 * The recipe search path: each directory of $STFIX_RULES_PATH, the
 * installed directory, then ./rules of the source tree, in that order.
 * Recipes named on the command line (cli_recipes.c), the recipes an
 * `include: NAME` loads (cli_args.c) and the parallel-style profiles
 * (cli_tp.c) are all looked for on it. The library never reads the
 * environment; this is the one place that does it for recipes.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The installed recipes, from the Makefile's PREFIX. */
#ifndef STFIX_RULES_DIR
#define STFIX_RULES_DIR "/usr/local/share/stfix/rules"
#endif

/* The source tree's recipes, relative to the current directory. */
#define SOURCE_RULES_DIR "./rules"

/* Frees a search path; see cli.h. */
void cli_rules_path_free(cli_rules_path *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) free(p->dirs[i]);
    free(p->dirs);
    p->dirs = NULL;
    p->n = 0;
}

static int push(cli_rules_path *p, const char *s, size_t n)
{
    char **d = realloc(p->dirs, (p->n + 1) * sizeof *d);
    if (!d) return -1;
    p->dirs = d;
    if (!(d[p->n] = strndup(s, n))) return -1;
    p->n++;
    return 0;
}

/* The directories searched, in order; see cli.h. */
int cli_rules_path_get(cli_rules_path *p)
{
    p->dirs = NULL;
    p->n = 0;
    const char *env = getenv("STFIX_RULES_PATH");
    while (env && *env) {
        const char *colon = strchr(env, ':');
        size_t n = colon ? (size_t)(colon - env) : strlen(env);
        /* An empty entry ("a::b", a leading or trailing colon) adds nothing. */
        if (n && push(p, env, n)) goto nomem;
        env = colon ? colon + 1 : NULL;
    }
    if (push(p, STFIX_RULES_DIR, strlen(STFIX_RULES_DIR))) goto nomem;
    if (push(p, SOURCE_RULES_DIR, strlen(SOURCE_RULES_DIR))) goto nomem;
    return 0;
nomem:
    cli_rules_path_free(p);
    return -1;
}
