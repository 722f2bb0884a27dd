/*
 * cmd/cli_opts.c: the option table of a command drives its parsing and its
 * --help text; an unknown option names the nearest valid one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

/* ------------------------------------------------------------ suggestion */

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(cli_edit_distance("json", "json", 3), 0);
    assert_int_equal(cli_edit_distance("JSON", "json", 3), 0);
    assert_int_equal(cli_edit_distance("jsn", "json", 3), 1);      /* a deletion */
    assert_int_equal(cli_edit_distance("jsoon", "json", 3), 1);    /* an insertion */
    assert_int_equal(cli_edit_distance("jsox", "json", 3), 1);     /* a substitution */
    assert_int_equal(cli_edit_distance("traget", "target", 3), 1); /* a swap */
    assert_int_equal(cli_edit_distance("kitten", "sitting", 5), 3);
    assert_int_equal(cli_edit_distance("", "abc", 5), 3);
    assert_int_equal(cli_edit_distance("abc", "", 5), 3);
    /* Past the limit only "more than limit" is promised. */
    assert_true(cli_edit_distance("kitten", "sitting", 2) > 2);
    assert_true(cli_edit_distance("a", "abcdef", 2) > 2);
}

static const char *const fix_names[] = {
    "recipe", "output", "in-place", "jobs", "quant-mode", "error-report",
    "allow-noncompliant", "max-shard-size", "max-mem", "no-wait", "fail-if-unchanged",
    "json", "help", "version",
};
#define NFIX (sizeof fix_names / sizeof fix_names[0])

static void test_suggest(void **state)
{
    (void)state;
    assert_string_equal(cli_suggest("jsn", fix_names, NFIX), "json");
    assert_string_equal(cli_suggest("JSON", fix_names, NFIX), "json");
    assert_string_equal(cli_suggest("recipie", fix_names, NFIX), "recipe");
    assert_string_equal(cli_suggest("no-wiat", fix_names, NFIX), "no-wait");
    assert_string_equal(cli_suggest("quantmode", fix_names, NFIX), "quant-mode");
    assert_string_equal(cli_suggest("allow-non-compliant", fix_names, NFIX), "allow-noncompliant");
    /* A beginning of a name counts as one edit; the first of equals wins. */
    assert_string_equal(cli_suggest("out", fix_names, NFIX), "output");
    assert_string_equal(cli_suggest("max", fix_names, NFIX), "max-shard-size");
    assert_string_equal(cli_suggest("fail", fix_names, NFIX), "fail-if-unchanged");
    /* Too far from everything: no suggestion. */
    assert_null(cli_suggest("frobnicate", fix_names, NFIX));
    assert_null(cli_suggest("fast", fix_names, NFIX));
    assert_null(cli_suggest("x", fix_names, NFIX));
    assert_null(cli_suggest("", fix_names, NFIX));
    assert_null(cli_suggest("json", fix_names, 0));
    /* Up to 3 characters one edit, up to 6 two, longer three. */
    static const char *const one[] = { "abcdefgh" };
    assert_null(cli_suggest("abx", (const char *const[]){ "axy" }, 1));
    assert_string_equal(cli_suggest("abxy", (const char *const[]){ "abzw" }, 1), "abzw");
    assert_string_equal(cli_suggest("abcxyzgh", one, 1), "abcdefgh");
    assert_null(cli_suggest("abwxyzgh", one, 1));
}

/* ---------------------------------------------------------------- parse */

typedef struct got {
    int json, jobs;
    const char *out;
    unsigned long long size;
} got;

#define TABLE(g)                                                                                \
    const cli_opt opts[] = {                                                                    \
        { .kind = CLI_ARG, .metavar = "IN", .help = "the input" },                              \
        { .name = "output", .letter = 'o', .metavar = "OUT", .kind = CLI_STR,                   \
          .target = &(g).out, .help = "the output file\nsecond line" },                         \
        { .name = "json", .kind = CLI_FLAG, .target = &(g).json, .help = "JSON instead" },      \
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &(g).jobs,  \
          .min = 1, .max = 1024, .help = "threads", .alias = "threads" },                       \
        { .name = "a-rather-long-option-name", .metavar = "SIZE", .kind = CLI_SIZE,             \
          .target = &(g).size, .min = 1, .help = "a size" },                                    \
    };                                                                                          \
    const cli_cmd cmd = { .verb = "demo", .synopsis = "demo IN [-o OUT]\ndemo --json",         \
                          .opts = opts, .nopts = sizeof opts / sizeof opts[0] }

/* Parse argv (NULL-terminated) into *g; returns the status, *nargs and the
 * message kept for the run ("" when none). */
static int parse(char **argv, got *g, int *nargs, char *msg, size_t cap)
{
    memset(g, 0, sizeof *g);
    TABLE(*g);
    int argc = 0;
    while (argv[argc]) argc++;
    cli_run_begin("demo", 0);
    int ex = cli_opts_parse(&cmd, argc, argv, nargs);
    stf_err e;
    cli_run_error_take(&e);
    snprintf(msg, cap, "%s", e.msg);
    return ex;
}

static void test_parse_mixed_order(void **state)
{
    (void)state;
    got g;
    int n = -1;
    char msg[1024];
    char *argv[] = { "demo", "a", "--output", "o1", "b", "-j", "8", "--json", "c", NULL };
    assert_int_equal(parse(argv, &g, &n, msg, sizeof msg), -1);
    assert_int_equal(n, 3);
    assert_string_equal(argv[1], "a");
    assert_string_equal(argv[2], "b");
    assert_string_equal(argv[3], "c");
    assert_string_equal(g.out, "o1");
    assert_int_equal(g.jobs, 8);
    assert_int_equal(g.json, 1);
    assert_string_equal(msg, "");
}

static void test_parse_spellings(void **state)
{
    (void)state;
    got g;
    int n = -1;
    char msg[1024];
    char *a1[] = { "demo", "--output=x=y", "--jobs=1024", "--a-rather-long-option-name=4GiB", NULL };
    assert_int_equal(parse(a1, &g, &n, msg, sizeof msg), -1);
    assert_string_equal(g.out, "x=y");
    assert_int_equal(g.jobs, 1024);
    assert_true(g.size == 4ULL << 30);
    assert_int_equal(n, 0);
    char *a2[] = { "demo", "-ofile", "-j2", NULL };
    assert_int_equal(parse(a2, &g, &n, msg, sizeof msg), -1);
    assert_string_equal(g.out, "file");
    assert_int_equal(g.jobs, 2);
    /* A value may start with '-': it is the option's. */
    char *a3[] = { "demo", "-o", "--json", NULL };
    assert_int_equal(parse(a3, &g, &n, msg, sizeof msg), -1);
    assert_string_equal(g.out, "--json");
    assert_int_equal(g.json, 0);
}

/* An alias sets what its entry's name sets, in every spelling. */
static void test_parse_alias(void **state)
{
    (void)state;
    got g;
    int n = -1;
    char msg[1024];
    char *a1[] = { "demo", "--threads", "7", "in", NULL };
    assert_int_equal(parse(a1, &g, &n, msg, sizeof msg), -1);
    assert_int_equal(g.jobs, 7);
    assert_int_equal(n, 1);
    char *a2[] = { "demo", "--threads=9", NULL };
    assert_int_equal(parse(a2, &g, &n, msg, sizeof msg), -1);
    assert_int_equal(g.jobs, 9);
    /* The last one given wins, whichever name it has. */
    char *a3[] = { "demo", "--threads=9", "--jobs", "3", "-j4", "--threads", "5", NULL };
    assert_int_equal(parse(a3, &g, &n, msg, sizeof msg), -1);
    assert_int_equal(g.jobs, 5);
}

static void test_parse_double_dash(void **state)
{
    (void)state;
    got g;
    int n = -1;
    char msg[1024];
    char *argv[] = { "demo", "--json", "in", "--", "-x.safetensors", "--jobs", "-", NULL };
    assert_int_equal(parse(argv, &g, &n, msg, sizeof msg), -1);
    assert_int_equal(n, 4);
    assert_string_equal(argv[1], "in");
    assert_string_equal(argv[2], "-x.safetensors");
    assert_string_equal(argv[3], "--jobs");
    assert_string_equal(argv[4], "-");
    assert_int_equal(g.json, 1);
    assert_int_equal(g.jobs, 0);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *argv[4];
        int status;
        const char *msg;
    } cases[] = {
        { { "--jsn" }, 3, "unknown option '--jsn'; did you mean --json?" },
        { { "--jsn=1" }, 3, "unknown option '--jsn'; did you mean --json?" },
        { { "--js" }, 3, "unknown option '--js'; did you mean --json?" }, /* no abbreviations */
        { { "--frobnicate" }, 3, "unknown option '--frobnicate'" },
        { { "-O", "x" }, 3, "unknown option '-O'; did you mean -o?" },
        { { "-Json" }, 3, "unknown option '-J' (in '-Json'); did you mean --json?" },
        { { "-x" }, 3, "unknown option '-x'" },
        { { "--output" }, 3, "option '--output' needs a value (OUT)" },
        { { "in", "-o" }, 3, "option '-o' needs a value (OUT)" },
        { { "--json=yes" }, 3, "option '--json' takes no value" },
        { { "--help=1" }, 3, "option '--help' takes no value" },
        { { "-j", "0" }, 3, "--jobs takes a number from 1 to 1024, not '0'" },
        { { "--jobs=1025" }, 3, "--jobs takes a number from 1 to 1024, not '1025'" },
        { { "--jobs", "+3" }, 3, "--jobs takes a number from 1 to 1024, not '+3'" },
        { { "--a-rather-long-option-name", "5XB" }, 3,
          "--a-rather-long-option-name: '5XB' is not a size (e.g. 5GB, 1.5GiB, 512MiB, 5G)" },
        { { "--a-rather-long-option-name", "16EiB" }, 3,
          "--a-rather-long-option-name: '16EiB' is too large (the most is 18446744073709551615 "
          "bytes)" },
        /* An alias is named as it was typed, spelt in full as a name is. */
        { { "--threads", "0" }, 3, "--threads takes a number from 1 to 1024, not '0'" },
        { { "--threads" }, 3, "option '--threads' needs a value (N)" },
        { { "--threads=" }, 3, "--threads takes a number from 1 to 1024, not ''" },
        { { "--thread", "2" }, 3, "unknown option '--thread'; did you mean --threads?" },
        { { "--threadz=2" }, 3, "unknown option '--threadz'; did you mean --threads?" },
        { { "--a-rather-long-option-name", "0" }, 3,
          "--a-rather-long-option-name: '0' is too small (the least is 1)" },
        /* In argv order: the first problem is the one reported. */
        { { "--jsn", "--frobnicate" }, 3, "unknown option '--jsn'; did you mean --json?" },
        { { "--frobnicate", "-h" }, 3, "unknown option '--frobnicate'" },
        { { "-h", "--frobnicate" }, 0, "" },
        { { "--version", "--jsn" }, 0, "" },
        { { "-V" }, 0, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[6] = { "demo" };
        for (int k = 0; k < 4 && cases[i].argv[k]; k++) argv[k + 1] = (char *)cases[i].argv[k];
        got g;
        int n = -1;
        char msg[1024];
        int ex = parse(argv, &g, &n, msg, sizeof msg);
        if (ex != cases[i].status || strcmp(msg, cases[i].msg))
            fail_msg("case %zu (%s): got %d '%s'", i, cases[i].argv[0], ex, msg);
    }
}

/* getopt keeps state between calls (the place inside "-jo"); a parse that
 * stopped early must not leak into the next. */
static void test_parse_again(void **state)
{
    (void)state;
    got g;
    int n = -1;
    char msg[1024];
    char *a1[] = { "demo", "-Vx", NULL };
    assert_int_equal(parse(a1, &g, &n, msg, sizeof msg), 0);
    char *a2[] = { "demo", "-x", NULL };
    assert_int_equal(parse(a2, &g, &n, msg, sizeof msg), 3);
    char *a3[] = { "demo", "-j3", "f", NULL };
    assert_int_equal(parse(a3, &g, &n, msg, sizeof msg), -1);
    assert_int_equal(g.jobs, 3);
    assert_int_equal(n, 1);
    assert_string_equal(a3[1], "f");
}

/* ----------------------------------------------------------------- help */

static void test_usage_text(void **state)
{
    (void)state;
    got g;
    TABLE(g);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    cli_opts_usage(m, &cmd);
    fclose(m);
    assert_string_equal(buf,
                        "usage: stfix demo IN [-o OUT]\n"
                        "       stfix demo --json\n"
                        "  IN                the input\n"
                        "  -o, --output OUT  the output file\n"
                        "                    second line\n"
                        "  --json            JSON instead\n"
                        "  -j, --jobs N      threads\n"
                        "                    (older spelling: --threads)\n"
                        "  --a-rather-long-option-name SIZE\n"
                        "                    a size\n"
                        "  -h, --help        show this help and exit\n"
                        "  -V, --version     print \"stfix VERSION\" and exit\n"
                        "  --color[=WHEN]    colour severities in human text: auto (the default:\n"
                        "                    on a terminal, unless NO_COLOR is set), always, never\n"
                        "  -q, --quiet       errors only on stderr: no warnings, notes or progress\n"
                        "  -v, --verbose     more detail on stderr (files read, sizes)\n"
                        "  --no-progress     no progress line (shown only when stderr is a\n"
                        "                    terminal)\n"
                        "  --                end of the options: what follows is an argument,\n"
                        "                    also when it starts with '-'\n");
    free(buf);
}

static void test_help_ends_with_exit_lines(void **state)
{
    (void)state;
    got g;
    TABLE(g);
    char *h = NULL, *e = NULL;
    size_t hl = 0, el = 0;
    FILE *m = open_memstream(&h, &hl);
    cli_opts_help(m, &cmd);
    fclose(m);
    m = open_memstream(&e, &el);
    cli_exit_help(m);
    fclose(m);
    assert_true(hl > el);
    assert_string_equal(h + hl - el, e);
    free(h);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_parse_mixed_order),
        cmocka_unit_test(test_parse_spellings),
        cmocka_unit_test(test_parse_alias),
        cmocka_unit_test(test_parse_double_dash),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_again),
        cmocka_unit_test(test_usage_text),
        cmocka_unit_test(test_help_ends_with_exit_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
