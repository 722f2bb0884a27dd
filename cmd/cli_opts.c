/*
 * The command line of every stfix command, from one declarative table per
 * command (cli_opt in cli.h): the same entries drive the parsing, through
 * getopt_long, and the --help text, so the two cannot disagree.
 *
 * getopt_long is run in order ("-" first in its option string): options
 * and arguments may be mixed, each is handled where it stands, and the
 * first problem in argv order is the one reported. Its own messages are
 * off; ours name the option as typed and the nearest valid spelling. Long
 * names must be spelt in full: getopt_long would take "--js" for "--json",
 * which the program's --json error document (main.c) would not see, and a
 * new option would break an abbreviation that scripts came to rely on.
 *
 * An entry may carry an alias, an older long name kept so that command
 * lines written for it go on working: getopt_long gets it as a second
 * name of the same entry, and --help shows it under the entry's text.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* In every table after the command's own entries; run() knows them by
 * address (no target). */
static const cli_opt builtin[] = {
    { .name = "help", .letter = 'h', .kind = CLI_FLAG, .help = "show this help and exit" },
    { .name = "version", .letter = 'V', .kind = CLI_FLAG,
      .help = "print \"stfix VERSION\" and exit" },
    /* The one option with an optional value: --color alone means always. */
    { .name = "color", .kind = CLI_FLAG, .metavar = "WHEN",
      .help = "colour severities in human text: auto (the default:\n"
              "on a terminal, unless NO_COLOR is set), always, never" },
    { .name = "quiet", .letter = 'q', .kind = CLI_FLAG,
      .help = "errors only on stderr: no warnings, notes or progress" },
    { .name = "verbose", .letter = 'v', .kind = CLI_FLAG,
      .help = "more detail on stderr (files read, sizes)" },
    { .name = "no-progress", .kind = CLI_FLAG,
      .help = "no progress line (shown only when stderr is a\n"
              "terminal)" },
};
enum { NBUILTIN = sizeof builtin / sizeof builtin[0], VAL_BASE = 256 };

/* ------------------------------------------------------------------ help */

/* The left column of an entry: "-r, --recipe RECIPE", "--json", "FILE...". */
static void lhs(char *buf, size_t cap, const cli_opt *o)
{
    if (o->kind == CLI_ARG && !o->name) {
        snprintf(buf, cap, "%s", o->metavar ? o->metavar : "");
        return;
    }
    if (o == &builtin[2] || o->optional) {
        snprintf(buf, cap, "--%s[=%s]", o->name, o->metavar);
        return;
    }
    char sh[8] = "";
    if (o->letter) snprintf(sh, sizeof sh, "-%c, ", o->letter);
    snprintf(buf, cap, "%s--%s%s%s", sh, o->name, o->metavar ? " " : "",
             o->metavar ? o->metavar : "");
}

/* Help texts start in this column; a longer left column gets a line of
 * its own. */
enum { COL_MAX = 28 };

static void entry(FILE *to, const cli_opt *o, size_t col)
{
    char l[128];
    lhs(l, sizeof l, o);
    size_t w = strlen(l) + 2;
    fprintf(to, "  %s", l);
    const char *h = o->help ? o->help : "";
    if (w + 2 > col) fprintf(to, "\n%*s", (int)col, "");
    else fprintf(to, "%*s", (int)(col - w), "");
    for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
        fprintf(to, "%.*s\n%*s", (int)(nl - h), h, (int)col, "");
    fprintf(to, "%s\n", h);
    if (o->alias) fprintf(to, "%*s(older spelling: --%s)\n", (int)col, "", o->alias);
}

/* The usage lines and the aligned table; see cli.h. */
void cli_opts_usage(FILE *to, const cli_cmd *cmd)
{
    const char *s = cmd->synopsis;
    for (int first = 1;; first = 0) {
        const char *nl = strchr(s, '\n');
        int n = nl ? (int)(nl - s) : (int)strlen(s);
        fprintf(to, "%s%.*s\n", first ? "usage: stfix " : "       stfix ", n, s);
        if (!nl) break;
        s = nl + 1;
    }
    static const cli_opt dashes = { .kind = CLI_ARG, .metavar = "--",
                                    .help = "end of the options: what follows is an argument,\n"
                                            "also when it starts with '-'" };
    size_t col = 0;
    char l[128];
    for (size_t i = 0; i < cmd->nopts + NBUILTIN; i++) {
        lhs(l, sizeof l, i < cmd->nopts ? &cmd->opts[i] : &builtin[i - cmd->nopts]);
        size_t w = strlen(l) + 4;
        if (w > col && w <= COL_MAX) col = w;
    }
    for (size_t i = 0; i < cmd->nopts; i++) entry(to, &cmd->opts[i], col);
    for (size_t i = 0; i < NBUILTIN; i++) entry(to, &builtin[i], col);
    entry(to, &dashes, col);
}

/* The whole --help text; see cli.h. */
void cli_opts_help(FILE *to, const cli_cmd *cmd)
{
    cli_opts_usage(to, cmd);
    if (cmd->epilog) fprintf(to, "\n%s", cmd->epilog);
    int sizes = 0;
    for (size_t i = 0; i < cmd->nopts; i++) sizes |= cmd->opts[i].kind == CLI_SIZE;
    if (sizes) /* cli_size.c's units */
        fputs("\nSIZE: bytes, or a number (a decimal fraction allowed) and a unit of any\n"
              "case: KB MB GB TB (powers of 1000), KiB MiB GiB TiB or K M G T (powers\n"
              "of 1024); e.g. 5GB, 1.5GiB, 512MiB, 5G.\n",
              to);
    cli_exit_help(to);
}

/* A usage error, then the usage; see cli.h. */
int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_errorf(cmd->verb, "%s", msg);
    cli_opts_usage(stderr, cmd);
    return EXIT_USAGE;
}

/* ------------------------------------------------------------ suggestion */

/* Optimal string alignment distance, letters folded to lower case. */
size_t cli_edit_distance(const char *a, const char *b, size_t limit)
{
    enum { MAXLEN = 64 };
    size_t la = strlen(a), lb = strlen(b);
    size_t diff = la > lb ? la - lb : lb - la;
    if (diff > limit) return limit + 1;
    if (la > MAXLEN || lb > MAXLEN) return strcasecmp(a, b) ? limit + 1 : 0; /* never ours */
    size_t r0[MAXLEN + 1], r1[MAXLEN + 1], r2[MAXLEN + 1];
    size_t *pp = r0, *p = r1, *c = r2; /* rows i-2, i-1, i */
    for (size_t j = 0; j <= lb; j++) p[j] = j;
    for (size_t i = 1; i <= la; i++) {
        int ai = tolower((unsigned char)a[i - 1]);
        c[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int bj = tolower((unsigned char)b[j - 1]);
            size_t v = p[j - 1] + (ai != bj);
            if (p[j] + 1 < v) v = p[j] + 1;
            if (c[j - 1] + 1 < v) v = c[j - 1] + 1;
            if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == bj && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            c[j] = v;
        }
        size_t *t = pp;
        pp = p;
        p = c;
        c = t;
    }
    return p[lb];
}

static int begins(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (!*s || tolower((unsigned char)*s) != tolower((unsigned char)*prefix)) return 0;
    return 1;
}

/* The nearest candidate, when near enough; see cli.h. */
const char *cli_suggest(const char *typed, const char *const *cand, size_t n)
{
    size_t len = strlen(typed);
    if (!len) return NULL;
    size_t limit = len <= 3 ? 1 : len <= 6 ? 2 : 3, best = limit + 1;
    const char *pick = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t d = cli_edit_distance(typed, cand[i], limit);
        if (len >= 2 && d > 1 && begins(cand[i], typed)) d = 1;
        if (d < best) best = d, pick = cand[i];
    }
    return pick;
}

/* ---------------------------------------------------------------- parse */

/* The parser's view of one run: the table and getopt_long's arrays. */
typedef struct parse {
    const cli_cmd *cmd;
    const char *verb;
    const char **names; /* every long name, the table's then the built-in ones */
    size_t nnames;
} parse;

/* The entry for getopt_long's return value `val`, NULL if none. */
static const cli_opt *by_val(const parse *ps, int val)
{
    size_t n = ps->cmd->nopts;
    if (val >= VAL_BASE && (size_t)(val - VAL_BASE) < n + NBUILTIN) {
        size_t i = (size_t)(val - VAL_BASE);
        return i < n ? &ps->cmd->opts[i] : &builtin[i - n];
    }
    for (size_t i = 0; i < n + NBUILTIN && val > 0; i++) {
        const cli_opt *o = i < n ? &ps->cmd->opts[i] : &builtin[i - n];
        if (o->kind != CLI_ARG && o->letter == val) return o;
    }
    return NULL;
}

/* Whether `name` is the first `len` bytes of s. */
static int is_name(const char *name, const char *s, size_t len)
{
    return name && strlen(name) == len && !strncmp(name, s, len);
}

/* The long name of o that `arg` ("--NAME" or "--NAME=VALUE") spells: its
 * alias when it spells that, else its name. */
static const char *spelt(const cli_opt *o, const char *arg)
{
    return is_name(o->alias, arg + 2, strcspn(arg + 2, "=")) ? o->alias : o->name;
}

/* The entry whose long name or alias is the first `len` bytes of s, NULL
 * if none. */
static const cli_opt *by_name(const parse *ps, const char *s, size_t len)
{
    size_t n = ps->cmd->nopts;
    for (size_t i = 0; i < n + NBUILTIN; i++) {
        const cli_opt *o = i < n ? &ps->cmd->opts[i] : &builtin[i - n];
        if (o->kind != CLI_ARG && (is_name(o->name, s, len) || is_name(o->alias, s, len)))
            return o;
    }
    return NULL;
}

/* An option that is not in the table: `arg` is the argument that holds it
 * and `letter` the short option (0 for a long one). */
static int unknown(const parse *ps, const char *arg, int letter)
{
    char shown[80], sug[80] = "";
    const char *near = NULL;
    if (!letter) {
        /* "--name" or "--name=VALUE": the name as typed, the value left out. */
        size_t len = strcspn(arg + 2, "=");
        char name[72];
        snprintf(name, sizeof name, "%.*s", (int)(len < 64 ? len : 64), arg + 2);
        snprintf(shown, sizeof shown, "'--%.40s%s'", name, len > 40 ? "..." : "");
        if ((near = cli_suggest(name, ps->names, ps->nnames)))
            snprintf(sug, sizeof sug, "--%s", near);
    } else {
        if (arg[2]) /* in a cluster, or a word: "-json" */
            snprintf(shown, sizeof shown, "'-%c' (in '%.40s%s')", letter, arg,
                     strlen(arg) > 40 ? "..." : "");
        else snprintf(shown, sizeof shown, "'-%c'", letter);
        /* "-json" is most likely --json; "-R" most likely -r. */
        if (arg[1] == letter && arg[2] && (near = cli_suggest(arg + 1, ps->names, ps->nnames)))
            snprintf(sug, sizeof sug, "--%s", near);
        size_t n = ps->cmd->nopts + NBUILTIN;
        for (size_t i = 0; i < n && !sug[0] && isalpha(letter); i++) {
            const cli_opt *o = i < ps->cmd->nopts ? &ps->cmd->opts[i] : &builtin[i - ps->cmd->nopts];
            if (o->kind != CLI_ARG && o->letter && o->letter != letter &&
                tolower((unsigned char)o->letter) == tolower(letter))
                snprintf(sug, sizeof sug, "-%c", o->letter);
        }
    }
    if (!sug[0]) return cli_usage_error(ps->cmd, "unknown option %s", shown);
    cli_errorf(ps->verb, "unknown option %s; did you mean %s?", shown, sug);
    return EXIT_USAGE;
}

/* Decimal digits only, at most max (>= 0): 0 and *out, or -1. */
static int digits(const char *s, long long max, long long *out)
{
    long long v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (max - (*s - '0')) / 10) return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

/* Store the option's value (v is NULL for a flag): 0, or EXIT_USAGE once
 * the problem is printed, naming the option as `name` (its name or alias,
 * as typed). */
static int apply(const parse *ps, const cli_opt *o, const char *name, const char *v)
{
    const char *verb = ps->verb;
    switch (o->kind) {
    case CLI_FLAG: *(int *)o->target = 1; return 0;
    case CLI_STR: *(const char **)o->target = v; return 0;
    case CLI_SIZE: {
        unsigned long long n = 0;
        int rc = cli_parse_size(v, &n);
        if (rc == -2) {
            cli_errorf(verb, "--%s: '%s' is too large (the most is %llu bytes)", name, v, ~0ULL);
            return EXIT_USAGE;
        }
        if (rc) {
            cli_errorf(verb, "--%s: '%s' is not a size (e.g. 5GB, 1.5GiB, 512MiB, 5G)", name, v);
            return EXIT_USAGE;
        }
        if (n < (unsigned long long)o->min) {
            cli_errorf(verb, "--%s: '%s' is too small (the least is %lld)", name, v, o->min);
            return EXIT_USAGE;
        }
        *(unsigned long long *)o->target = n;
        return 0;
    }
    case CLI_INT: {
        long long n = 0;
        if (digits(v, o->max, &n) || n < o->min || n > o->max) {
            cli_errorf(verb, "--%s takes a number from %lld to %lld, not '%s'", name, o->min,
                       o->max, v);
            return EXIT_USAGE;
        }
        *(int *)o->target = (int)n;
        return 0;
    }
    case CLI_CALL: return o->call(verb, v, o->target) ? EXIT_USAGE : 0;
    case CLI_ARG: break;
    }
    return 0;
}

/* getopt_long's option string and table for cmd: -1 when out of memory. */
static int build(const cli_cmd *cmd, char **optstring, struct option **longopts,
                 const char ***names, size_t *nnames)
{
    size_t n = cmd->nopts + NBUILTIN, k = 0, m = 0, na = 0;
    for (size_t i = 0; i < cmd->nopts; i++) na += cmd->opts[i].alias != NULL;
    char *s = malloc(2 * n + 3);
    struct option *lo = calloc(n + na + 1, sizeof *lo);
    const char **nm = calloc(n + na, sizeof *nm);
    if (!s || !lo || !nm) {
        free(s);
        free(lo);
        free(nm);
        return -1;
    }
    s[k++] = cmd->stop_at_arg ? '+' : '-'; /* stop at an argument, or hand it over in order */
    s[k++] = ':';                          /* a missing value returns ':', and no messages */
    for (size_t i = 0; i < n; i++) {
        const cli_opt *o = i < cmd->nopts ? &cmd->opts[i] : &builtin[i - cmd->nopts];
        if (o->kind == CLI_ARG) continue;
        if (o->letter) {
            s[k++] = o->letter;
            if (o->metavar) s[k++] = ':';
        }
        int has = o == &builtin[2] || o->optional ? optional_argument
                  : o->metavar   ? required_argument
                                 : no_argument;
        int val = o->letter ? o->letter : VAL_BASE + (int)i;
        lo[m] = (struct option){ o->name, has, NULL, val };
        nm[m++] = o->name;
        if (o->alias) {
            lo[m] = (struct option){ o->alias, has, NULL, val };
            nm[m++] = o->alias;
        }
    }
    s[k] = '\0';
    *optstring = s;
    *longopts = lo;
    *names = nm;
    *nnames = m;
    return 0;
}

/* One run of getopt_long over argv: -1 to go on, else the exit status. */
static int run(const parse *ps, const char *optstring, const struct option *longopts, int argc,
               char **argv, int *nargs)
{
    int n = 0;
    opterr = 0;
    optind = 0; /* glibc: start over, forgetting any earlier scan */
    for (;;) {
        int at = optind ? optind : 1, li = -1;
        int c = getopt_long(argc, argv, optstring, longopts, &li);
        if (c == -1) break;
        const char *arg = argv[at];
        if (c == 1) { /* an argument, in its place among the options */
            if (!n && ps->cmd->input_arg) cli_run_input(optarg);
            argv[++n] = optarg;
            continue;
        }
        int is_long = arg[0] == '-' && arg[1] == '-';
        if (c == '?') {
            const cli_opt *o = NULL;
            if (is_long) o = by_name(ps, arg + 2, strcspn(arg + 2, "="));
            else if (optopt >= VAL_BASE) o = by_val(ps, optopt);
            if (!o) return unknown(ps, arg, is_long ? 0 : optopt);
            cli_errorf(ps->verb, "option '--%s' takes no value", spelt(o, arg));
            return EXIT_USAGE;
        }
        const cli_opt *o = by_val(ps, c == ':' ? optopt : c);
        if (!o) return unknown(ps, arg, is_long ? 0 : c); /* cannot happen */
        if (c == ':') {
            char typed[8];
            snprintf(typed, sizeof typed, "-%c", o->letter);
            cli_errorf(ps->verb, "option '%s%s' needs a value (%s)", is_long ? "--" : "",
                       is_long ? spelt(o, arg) : typed, o->metavar);
            return EXIT_USAGE;
        }
        /* getopt_long takes any unambiguous beginning of a name; we do not. */
        size_t len = is_long ? strcspn(arg + 2, "=") : 0;
        if (li >= 0 && (!is_long || !(is_name(o->name, arg + 2, len) ||
                                      is_name(o->alias, arg + 2, len))))
            return unknown(ps, arg, 0);
        if (o == &builtin[0]) {
            cli_opts_help(stdout, ps->cmd);
            return EXIT_OK_;
        }
        if (o == &builtin[1]) {
            printf("stfix %s\n", STF_VERSION_STRING);
            return EXIT_OK_;
        }
        if (o == &builtin[2]) {
            cli_color_mode mode = CLI_COLOR_ALWAYS; /* a bare --color, as ls(1) takes it */
            if (optarg && cli_color_parse(optarg, &mode)) {
                cli_errorf(ps->verb, "--color takes auto, always or never, not '%s'", optarg);
                return EXIT_USAGE;
            }
            cli_color_set(mode);
            continue;
        }
        if (o == &builtin[3] || o == &builtin[4]) { /* the last of -q and -v wins */
            cli_verbosity_set(o == &builtin[3] ? CLI_QUIET : CLI_VERBOSE);
            continue;
        }
        if (o == &builtin[5]) {
            cli_progress_disable();
            continue;
        }
        int ex = apply(ps, o, is_long ? spelt(o, arg) : o->name, o->metavar ? optarg : NULL);
        if (ex) return ex;
    }
    for (int i = optind; i < argc; i++) { /* after "--", or from the first with stop_at_arg */
        if (!n && ps->cmd->input_arg) cli_run_input(argv[i]);
        argv[++n] = argv[i];
    }
    *nargs = n;
    return -1;
}

/* Parse a command line against the table; see cli.h. */
int cli_opts_parse(const cli_cmd *cmd, int argc, char **argv, int *nargs)
{
    char *optstring = NULL;
    struct option *longopts = NULL;
    parse ps = { cmd, cmd->verb, NULL, 0 };
    *nargs = 0;
    if (build(cmd, &optstring, &longopts, &ps.names, &ps.nnames))
        return cli_report_code(cmd->verb, STF_ENOMEM);
    int ex = argc > 1 ? run(&ps, optstring, longopts, argc, argv, nargs) : -1;
    optind = 1; /* leave getopt as a fresh program finds it */
    free(optstring);
    free(longopts);
    free(ps.names);
    return ex;
}
