/*
 * stfix explain RULE... [--json]
 * stfix explain --list [--json]
 *
 * The rule catalogue (stf_rule_doc), the source stfix-checks(7) and the
 * rule list of stfix(1) are generated from (man/mkchecks.py reads
 * `stfix explain --list --json`).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define WRAP 78   /* columns of a wrapped paragraph, indent included */
#define INDENT 2
#define MAX_ID 16 /* longer arguments cannot be rule ids */

/* `s` wrapped at WRAP columns, each line indented by INDENT spaces. A word
 * longer than a line gets a line of its own. */
static void wrapped(const char *s)
{
    size_t col = 0;
    while (*s) {
        while (*s == ' ') s++;
        size_t n = strcspn(s, " ");
        if (!n) break;
        if (col && col + 1 + n > WRAP) {
            fputc('\n', stdout);
            col = 0;
        }
        if (!col) col = (size_t)printf("%*s", INDENT, "");
        else col += (size_t)printf(" ");
        col += fwrite(s, 1, n, stdout);
        s += n;
    }
    fputc('\n', stdout);
}

static void entry_text(const stf_rule_doc *d)
{
    static const char *const label[] = { "Checks:", "Why it matters:", "If ignored:",
                                         "How to fix:", "Recipe action:" };
    const char *const text[] = { d->checks, d->why, d->ignored, d->fix,
                                 d->action ? d->action : "none" };
    printf("%s  %s\nseverity: %s\neffect: %s\n", d->id, d->title, d->severity,
           d->effect ? d->effect : "note");
    for (size_t i = 0; i < sizeof label / sizeof label[0]; i++) {
        printf("\n%s\n", label[i]);
        wrapped(text[i]);
    }
}

static cJSON *entry_json(const stf_rule_doc *d)
{
    static const char *const key[] = { "id", "severity", "title", "checks", "why", "ignored", "fix" };
    const char *const val[] = { d->id, d->severity, d->title, d->checks, d->why, d->ignored, d->fix };
    cJSON *o = cli_j_object(0);
    for (size_t i = 0; i < sizeof key / sizeof key[0]; i++) cli_j_add(o, key[i], cli_j_str(val[i]), 0);
    cli_j_add(o, "action", cli_j_str_or_null(d->action), 0);
    cli_j_add(o, "effect", cli_j_str(d->effect ? d->effect : "note"), 0);
    return o;
}

/* The severity's first word ("warning" of "warning; error with --strict"). */
static int base_severity_len(const char *sev)
{
    size_t n = 0;
    while (isalpha((unsigned char)sev[n])) n++;
    return (int)n;
}

/* The entry of `arg` in any case; NULL if there is none. */
static const stf_rule_doc *lookup(const char *arg)
{
    char id[MAX_ID + 1];
    size_t n = strlen(arg);
    if (n > MAX_ID) return NULL;
    for (size_t i = 0; i <= n; i++) id[i] = (char)toupper((unsigned char)arg[i]);
    return stf_rule_doc_find(id);
}

/* The catalogue's family letters and number of an id ("R15": "R", 15). */
static int split_id(const char *id, size_t *fam, long *num)
{
    size_t f = 0;
    while (isalpha((unsigned char)id[f])) f++;
    if (!f || !isdigit((unsigned char)id[f])) return -1;
    char *end;
    *num = strtol(id + f, &end, 10);
    *fam = f;
    return *end ? -1 : 0;
}

/* An unknown id: name it, with the ids of its family whose numbers are the
 * nearest (at most two, the lower first), and the way to list them all. */
static void unknown(const char *arg)
{
    char want[MAX_ID + 1] = "";
    size_t fam = 0;
    long num = 0, best = -1;
    const char *near[2] = { NULL, NULL };
    if (strlen(arg) <= MAX_ID) {
        for (size_t i = 0; i <= strlen(arg); i++) want[i] = (char)toupper((unsigned char)arg[i]);
        if (split_id(want, &fam, &num)) fam = 0;
    }
    for (size_t i = 0, n = stf_rule_doc_count(); fam && i < n; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        size_t f;
        long k;
        if (split_id(d->id, &f, &k) || f != fam || strncmp(d->id, want, fam)) continue;
        long dist = labs(k - num);
        if (best < 0 || dist < best) {
            best = dist;
            near[0] = d->id;
            near[1] = NULL;
        } else if (dist == best && !near[1]) {
            near[1] = d->id;
        }
    }
    if (near[1])
        cli_errorf("explain", "unknown rule '%s'; did you mean %s or %s? "
                              "(stfix explain --list shows every rule)",
                   arg, near[0], near[1]);
    else if (near[0])
        cli_errorf("explain", "unknown rule '%s'; did you mean %s? "
                              "(stfix explain --list shows every rule)",
                   arg, near[0]);
    else
        cli_errorf("explain", "unknown rule '%s' (stfix explain --list shows every rule)", arg);
}

/* --list: every entry, one line each, or all of them as a JSON array; -1
 * when out of memory. */
static int list(int json)
{
    size_t n = stf_rule_doc_count();
    int wid = 0, wsev = 0;
    for (size_t i = 0; i < n; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        if ((int)strlen(d->id) > wid) wid = (int)strlen(d->id);
        if (base_severity_len(d->severity) > wsev) wsev = base_severity_len(d->severity);
    }
    cJSON *all = json ? cli_j_array(CLI_J_LINES | CLI_J_CLOSE) : NULL;
    for (size_t i = 0; i < n; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        if (json)
            cli_j_push(all, entry_json(d));
        else
            printf("%-*s  %-*.*s  %s\n", wid, d->id, wsev, base_severity_len(d->severity),
                   d->severity, d->title);
    }
    return json ? cli_json_print(stdout, all) : 0;
}

/* `stfix explain`: 0, or 3 for a usage error or an unknown rule id (nothing
 * is printed on stdout then), or 4 when stdout cannot be written. */
int cmd_explain(int argc, char **argv)
{
    int json = 0, all = 0, nid = 0;
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "RULE",
          .help = "a rule id such as R15 or s7 (any case): its entry of the\n"
                  "rule catalogue (stfix-checks(7)): title, severity, effect,\n"
                  "what it checks, why it matters, what happens if it is\n"
                  "ignored, how to fix it and the recipe action that does" },
        { .name = "list", .kind = CLI_FLAG, .target = &all,
          .help = "one line per rule: ID, base severity, title" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "the entries as JSON: an object for one RULE, an array for\n"
                  "several and for --list (fields id, severity, title, checks,\n"
                  "why, ignored, fix, action, effect; action is null when no\n"
                  "recipe action fixes it)" },
    };
    const cli_cmd cmd = { .verb = "explain",
                          .synopsis = "explain RULE... [--json]\nexplain --list [--json]",
                          .opts = opts, .nopts = sizeof opts / sizeof opts[0] };
    int ex = cli_opts_parse(&cmd, argc, argv, &nid);
    if (ex >= 0) return ex;
    if (all && nid) return cli_usage_error(&cmd, "--list takes no rule ids");
    if (!all && !nid)
        return cli_usage_error(&cmd, "no rule id given (stfix explain --list shows every rule)");
    int bad = 0;
    for (int i = 1; i <= nid; i++)
        if (!lookup(argv[i])) {
            unknown(argv[i]);
            bad = 1;
        }
    if (bad) return EXIT_USAGE;
    if (all && list(json)) return cli_report_code("explain", STF_ENOMEM);
    /* One RULE: its object; several: an array of them. */
    cJSON *many = json && nid > 1 ? cli_j_array(CLI_J_LINES | CLI_J_CLOSE) : NULL;
    for (int i = 1; i <= nid; i++) {
        if (many) {
            cli_j_push(many, entry_json(lookup(argv[i])));
        } else if (json) {
            if (cli_json_print(stdout, entry_json(lookup(argv[i]))))
                return cli_report_code("explain", STF_ENOMEM);
        } else {
            if (i > 1) fputc('\n', stdout);
            entry_text(lookup(argv[i]));
        }
    }
    if (many && cli_json_print(stdout, many)) return cli_report_code("explain", STF_ENOMEM);
    int flush = cli_stdout_flush("explain");
    return flush >= 0 ? flush : EXIT_OK_;
}
