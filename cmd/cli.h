/*
 * The stfix program: shared declarations of the subcommands and the small
 * helpers they share. cmd/ reaches the library only through <stfix.h>.
 */
#ifndef STFIX_CLI_H
#define STFIX_CLI_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "stfix.h"

/* Exit statuses, documented in stfix(1) and by cli_exit_help. A library
 * error becomes one through cli_exit_for, never case by case. */
enum {
    EXIT_OK_ = 0,      /* success; check: no error-severity finding */
    EXIT_FINDINGS = 1, /* check: an error-severity finding; fix: output failed verification */
    EXIT_INVALID = 2,  /* an input or the recipe is invalid, over a cap, missing, unsupported */
    EXIT_USAGE = 3,    /* bad command line, or an argument the library refused */
    EXIT_FAILED = 4    /* the operation failed (I/O, memory, output locked, unknown) */
};

/* One subcommand: argv[0] is the verb. Returns the exit code. */
int cmd_inspect(int argc, char **argv);
int cmd_rewrite(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_fix(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_decompress(int argc, char **argv);
int cmd_hash(int argc, char **argv);

/* cli_exit.c: the one table from library error code to exit status. */
/* The exit status for `code`: 0 for STF_OK, the table's entry, else
 * EXIT_FAILED (a code the table does not know is a failed operation). */
int cli_exit_for(int code);
/* The code's name ("STF_EFORMAT"), NULL when the table does not list it. */
const char *cli_exit_code_name(int code);
/* The worse of two exit statuses, for a command with several inputs: the
 * higher number, 4 > 3 > 2 > 1 > 0 (a failed run outranks a refused
 * argument, which outranks an invalid input, which outranks a finding). */
int cli_exit_worst(int a, int b);
/* The exit-status lines every --help ends with. */
void cli_exit_help(FILE *to);

/* cli_report.c: errors, and the one run they belong to. */
/* Print "stfix: <verb>: <msg>\n" to stderr. The first error of the run is
 * also kept (without rule, offset or code) for cli_run_end. */
void cli_errorf(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* As cli_errorf, for a message that does not end the run (a finding, a
 * warning): nothing is kept, and nothing is printed with -q. */
void cli_notef(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Print an stf_err ("stfix: <verb>: <msg>"), keep it as cli_errorf does
 * (with its rule, offset and code) and return cli_exit_for(err->code). */
int cli_report(const char *verb, const stf_err *err);

/* cli_report of a bare library code (its stf_strerror text), for cmd/'s
 * own failures such as running out of memory while rendering. */
int cli_report_code(const char *verb, int code);

/* cli_report for an error whose text is already on stderr: keep it and
 * return its exit status, printing nothing. */
int cli_report_silent(const stf_err *err);

/* main: start the run of `verb`; with `json`, a failing run ends with one
 * JSON error document on stdout (cli_run_end). */
void cli_run_begin(const char *verb, int json);

/* The command's input path as given, for the JSON error ("file"); borrowed
 * (argv). Not called: "file" is null. A command that reads several files
 * calls it again before each, so that "file" names the one that failed. */
void cli_run_input(const char *path);

/* main: end the run with `status` and return it. When the run asked for
 * JSON and status is 2, 3 or 4, print the JSON error document of the
 * first error kept (cli_json_error) on stdout, unless stdout has failed. */
int cli_run_end(int status);

/* cli_report.c: the document a --json command prints instead of its own
 * when it fails:
 * {"file": PATH|null, "command": VERB, "exit": status,
 *  "error": {"rule": RULE|null, "message": MSG, "offset": N|null,
 *            "code": "STF_E..."|null}} and a newline. `file` may be NULL;
 * rule, offset and code are null when `err` has none. */
void cli_json_error(FILE *o, const char *verb, const char *file, int status, const stf_err *err);

/* For a command with several inputs, each reported on its own: copy the
 * run's kept error into *out and forget it, so that the next input's first
 * error is kept in turn. 1 when there was one, else 0 (*out cleared). */
int cli_run_error_take(stf_err *out);

/* The command has written its own JSON documents, errors included (one
 * per input): cli_run_end adds none from now on. */
void cli_run_json_handled(void);

/* The error's message, or the code's generic text when it has none. */
const char *cli_err_text(const stf_err *err);

/* cli_report.c: how much goes to stderr, from the options every command
 * takes (cli_opts.c): -q errors only, -v more detail. The last one given
 * wins. */
enum { CLI_QUIET = -1, CLI_NORMAL = 0, CLI_VERBOSE = 1 };
void cli_verbosity_set(int level);
int cli_verbosity(void);
/* As cli_notef, only with -v: detail a run does not need to report. */
void cli_infof(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/*
 * cli_progress.c: the progress line on stderr, redrawn in place ("\r"),
 * e.g. "stfix: fix: 1.2 GiB of 4.0 GiB (30%), 310.5 MiB/s, ETA 0:09  NAME",
 * or for a count "stfix: batch: 3 of 20 checkpoints, 1.2 GiB of 8.0 GiB
 * (15%), ...  NAME". Shown only when stderr is a terminal and neither -q
 * nor --no-progress was given; stdout never gets it.
 *
 * Use: p = cli_progress_start(verb, NULL) for bytes (or "checkpoints" for a
 * count); pass cli_progress_cb with p as the library's stf_progress_fn and
 * its user data, or call cli_progress_show (and, for a count,
 * cli_progress_bytes first) yourself; cli_progress_end(p) before printing
 * anything else on stderr, and at the end. Every function takes the NULL
 * that cli_progress_start returns when no line is shown, so callers do not
 * test. One line at a time, from one thread.
 */
typedef struct cli_progress cli_progress;
/* --no-progress (cli_opts.c). */
void cli_progress_disable(void);
/* Whether cli_progress_start would show a line. */
int cli_progress_enabled(void);
/* A line for `verb` counting bytes (unit NULL) or `unit`s (a noun such as
 * "checkpoints"); NULL when no line is shown (or out of memory). */
cli_progress *cli_progress_start(const char *verb, const char *unit);
/* cli_progress_start(verb, NULL), with *fn and *ud set to what the
 * library's options take (cli_progress_cb and the line; NULL and NULL when
 * no line is shown). */
cli_progress *cli_progress_hook(const char *verb, stf_progress_fn *fn, void **ud);
/* `done` of `total` (bytes, or units), `what` (what_len bytes, escaped as
 * a name; NULL for none) at work. Redrawn at most every 0.1 s, and always
 * the first time and when done reaches total. */
void cli_progress_show(cli_progress *p, uint64_t done, uint64_t total, const char *what,
                       size_t what_len);
/* For a count: the bytes done of the total, shown beside it with the rate
 * and time left (from the bytes); takes effect at the next show. */
void cli_progress_bytes(cli_progress *p, uint64_t done, uint64_t total);
/* cli_progress_show as a stf_progress_fn (ud is the cli_progress). */
void cli_progress_cb(void *ud, uint64_t done, uint64_t total, const char *what,
                     size_t what_len);
/* Say on the line how the zstd stream inputs of c are read (see
 * cli_zstd_stream_note); spool_dir as cli_spool_dir gives it. Both must
 * outlive p. */
void cli_progress_source(cli_progress *p, const stf_ckpt *c, const char *spool_dir);
/* Clear the line (if one was drawn) before other output on stderr; the
 * next show draws it again. */
void cli_progress_clear(cli_progress *p);
/* Clear the line (if one was drawn) and free p. */
void cli_progress_end(cli_progress *p);
/* cli_progress_clear of the line started last and not yet ended, for a
 * message that does not know it (a callback's). */
void cli_progress_clear_current(void);

/* cli_wait.c: main installs, for the run of `verb`, the library's
 * lock-wait hook: when a writer waits for an output another run is
 * writing, "stfix: VERB: waiting for OUT, locked by another stfix run..."
 * goes to stderr, on a terminal (unless -q) and always with -v. */
void cli_wait_install(const char *verb);

/* cli_opts.c: one declarative table of options per command, which drives
 * both the parsing (getopt_long underneath) and the --help text. */

/* What an entry of the table does with its option. */
typedef enum cli_opt_kind {
    CLI_ARG,  /* no option: a positional argument's line in --help (metavar, help) */
    CLI_FLAG, /* int *target = 1 */
    CLI_STR,  /* const char **target = VALUE */
    CLI_SIZE, /* unsigned long long *target = VALUE as cli_parse_size reads it, >= min */
    CLI_INT,  /* int *target = VALUE, decimal digits, from min to max */
    CLI_CALL  /* call(verb, VALUE, target): 0, or -1 once it printed its error */
} cli_opt_kind;

/* One entry of a command's table. -h/--help, -V/--version, --color,
 * -q/--quiet, -v/--verbose, --no-progress and -- are in every table without
 * being listed; the letters h, V, q and v are theirs. */
typedef struct cli_opt {
    const char *name;    /* long name without "--"; NULL for CLI_ARG */
    char letter;         /* short alias ('r' for -r), 0 for none */
    const char *metavar; /* the value's name in --help; NULL: the option takes no value */
    const char *help;    /* its --help text; '\n' starts a continuation line */
    cli_opt_kind kind;
    void *target;
    long long min, max; /* CLI_INT: the range; CLI_SIZE: min */
    int (*call)(const char *verb, const char *value, void *target); /* CLI_CALL */
    int optional;       /* CLI_CALL: the value may be left out ("--name" alone:
                         * call gets NULL; "--name=VALUE" gives one) */
    const char *alias;  /* an older long name, still taken as `name` is (spelt in
                         * full too); --help names it under the entry, and
                         * messages name the option as it was typed */
} cli_opt;

/* A command's command line. */
typedef struct cli_cmd {
    const char *verb;     /* "fix": messages are "stfix: fix: ..."; NULL for stfix itself */
    const char *synopsis; /* after "usage: stfix "; '\n' starts another usage line */
    const cli_opt *opts;
    size_t nopts;
    const char *epilog; /* text after the options in --help, or NULL */
    int stop_at_arg;    /* options end at the first argument (a subcommand follows) */
    int input_arg;      /* the first argument is the run's input (cli_run_input) */
} cli_cmd;

/*
 * Parse argv[1..argc) against cmd's table, in order: "--name VALUE",
 * "--name=VALUE", "-x VALUE", "-xVALUE", clustered short flags; every long
 * name is spelt in full (no abbreviations); "--" ends the options. The
 * arguments that are not options, in order, are moved to argv[1..*nargs]
 * (with stop_at_arg, everything from the first one on). Returns -1 to go on,
 * else the exit status to end with: 0 after -h (the --help text on stdout)
 * or -V ("stfix VERSION"); EXIT_USAGE after an unknown option (naming it,
 * and the nearest valid one when there is one), a missing or unwanted
 * value (naming the option) or a value the entry refuses; EXIT_FAILED when
 * out of memory. The first problem in argv order is the one reported.
 */
int cli_opts_parse(const cli_cmd *cmd, int argc, char **argv, int *nargs);

/* The usage lines and the aligned table (--help without the exit-status
 * lines), e.g. to stderr after a usage error. */
void cli_opts_usage(FILE *to, const cli_cmd *cmd);

/* The whole --help text: cli_opts_usage, the epilog, cli_exit_help. */
void cli_opts_help(FILE *to, const cli_cmd *cmd);

/* A usage error the command finds itself (a missing argument, two options
 * that exclude each other): the message as cli_errorf prints it, then
 * cli_opts_usage on stderr. Returns EXIT_USAGE. */
int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The edit distance between a and b (insertions, deletions, substitutions
 * and swaps of two neighbours, letters compared without case), or any
 * number above `limit` when it is more than `limit`. A string of more than
 * 64 bytes is taken to be farther than `limit` from any other. */
size_t cli_edit_distance(const char *a, const char *b, size_t limit);

/* The candidate `typed` most likely meant: the nearest by cli_edit_distance
 * (a `typed` of two or more characters that begins a candidate counts as 1),
 * the first of equals, and only when it is near enough (at most 1 for a
 * `typed` of up to 3 characters, 2 up to 6, else 3). NULL when none is. */
const char *cli_suggest(const char *typed, const char *const *cand, size_t n);

/* cli_size.c: a size into bytes: "5000000000", "5GB", "5gb", "1.5GB",
 * "512MiB", "5G", "4Gi". Digits, an optional fraction ('.' and digits),
 * then a unit of any case: none or B (bytes), K M G T P E alone or with
 * "i" or "iB" (powers of 1024), with "B" (powers of 1000). The value is
 * the exact decimal rational times the unit, a fraction of a byte
 * dropped. 0 and *out; -1 when s is not a size (*out untouched); -2 when
 * it is one but above 2^64 - 1 bytes. */
int cli_parse_size(const char *s, unsigned long long *out);

/* cli_args.c. */

/* The CLI_CALL of --quant-mode: cuda, fp32 or eager into the
 * stf_plan_opts at `target` (quant_mode, quant_mode_set). */
int cli_opt_quant_mode(const char *verb, const char *value, void *target);

/* The directory a zstd stream read out of order spools in: that of
 * out_path, or $TMPDIR (else /tmp) without one; buf holds it when it is
 * out_path's. */
const char *cli_spool_dir(char *buf, size_t cap, const char *out_path);
/* Open the checkpoint at `path` (o may be NULL). -1 when it is open in
 * *out; otherwise the error is reported for `verb` (cli_report) and its
 * exit status comes back. A plain zstd stream read out of data order is
 * spooled in the directory of `out_path` (the command's output), or in
 * $TMPDIR (else /tmp) when out_path is NULL, unless o names a directory. */
int cli_ckpt_open(stf_ckpt **out, const char *verb, const char *path, const stf_open_opts *o,
                  const char *out_path);
/* With -v, "PATH: N tensors in M file(s), B bytes" about c, opened. */
void cli_ckpt_opened(const stf_ckpt *c, const char *verb, const char *path);

/* --hash of check and inspect: S29 findings added to c for every shard
 * whose modelspec.hash_sha256 its tensor data do not match (those shards
 * are read whole, with a progress line). -1 to go on; otherwise the error
 * is reported for `verb` and its exit status comes back. */
int cli_ckpt_check_hashes(stf_ckpt *c, const char *verb);

/* stf_recipe_load_file_opts with `include: NAME` looked up on the search
 * path of cli_rules_path_get (as -r NAME is): 0 or the library's code. */
int cli_recipe_load_file(stf_recipe **out, stf_recipe_diags **d, const char *path, stf_err *err);
/* The same for the built-in recipe b (cli_builtin_recipes), loaded from
 * its bytes under its path; for both, a NAME on no directory of the path
 * is the built-in recipe NAME, as for -r NAME. */
int cli_recipe_load_builtin(stf_recipe **out, stf_recipe_diags **d, const stf_recipe_builtin *b,
                            stf_err *err);

/* --max-regex-steps N (1 or more): the regex steps each plan of a recipe
 * loaded from now on (cli_recipe_load_file) may take over all its searches
 * (stf_recipe_opts.max_regex_steps). A command that evaluates recipes puts
 * CLI_REGEX_STEPS_OPT in its table. */
int cli_opt_regex_steps(const char *verb, const char *value, void *target);
#define CLI_REGEX_STEPS_OPT                                                               \
    { .name = "max-regex-steps", .metavar = "N", .kind = CLI_CALL,                        \
      .call = cli_opt_regex_steps,                                                        \
      .help = "regex steps one plan may take, all rules and layers\n"                      \
              "together (default 100000000)" }

/* Why cli_recipe_load_file failed, printed: each problem of d as
 * FILE:LINE:COL: message, one a line (or, d NULL, err for `verb`); err is
 * kept as the run's error and its exit status comes back. */
int cli_recipe_problems(const char *verb, const stf_recipe_diags *d, const stf_err *err);

/* Load the recipe at `path` (cli_recipe_load_file). -1 when it is loaded in *out; otherwise every
 * problem is printed (FILE:LINE:COL: message, one a line, or the error for
 * `verb`), the first is kept as the run's error, and its exit status comes
 * back. */
int cli_recipe_load(stf_recipe **out, const char *verb, const char *path);
/* What cli_recipe_load says of a load of `path` that returned rc (0: *out
 * loaded) with the problems d (freed) and err: -1, or the exit status. */
int cli_recipe_loaded(stf_recipe **out, const char *verb, const char *path, int rc,
                      stf_recipe_diags *d, stf_err *err);

/* cli_rules_path.c: the recipe search path: each directory of
 * $STFIX_RULES_PATH (colon-separated, in order), the installed directory
 * ($(PREFIX)/share/stfix/rules), then ./rules (the source tree). */
typedef struct {
    char **dirs;
    size_t n;
} cli_rules_path;
/* The search path into *p (free with cli_rules_path_free): 0, or -1 when
 * out of memory (*p empty). */
int cli_rules_path_get(cli_rules_path *p);
void cli_rules_path_free(cli_rules_path *p);

/* cli_recipes.c: recipes by name, on the search path (cli_rules_path.c),
 * then the bundled recipes built into the program. */

/* One bundled recipe or parallel-style profile built into the program:
 * rules/NAME.yaml's or rules/tp/NAME.yaml's bytes (generated by
 * cmd/embed_recipes.sh into the build directory), as the library takes
 * the recipes that `include: NAME` finds after the search path; path is
 * CLI_BUILTIN_DIR/NAME.yaml or CLI_BUILTIN_DIR/tp/NAME.yaml. */
typedef stf_recipe_builtin cli_builtin_recipe;
extern const cli_builtin_recipe cli_builtin_recipes[];
extern const size_t cli_builtin_recipe_count;
extern const cli_builtin_recipe cli_builtin_profiles[];
extern const size_t cli_builtin_profile_count;
/* The directory a built-in recipe or profile is loaded under, as its path
 * appears in messages and listings: "(built-in)/NAME.yaml",
 * "(built-in)/tp/NAME.yaml". */
#define CLI_BUILTIN_DIR "(built-in)"

/* Whether `arg` of -r is a NAME to look up: no '/', and not ending in
 * ".yaml" or ".yml". */
int cli_recipe_is_name(const char *arg);
/* As cli_recipe_load for the argument of -r: a file, or NAME.yaml from the
 * first directory of the search path that has it, else the built-in
 * NAME. NAME.yaml (or .yml) without a '/' that is no file here is looked
 * up as NAME. A miss is an STF_ENOTFOUND error naming every directory
 * searched (exit 2). */
int cli_recipe_load_arg(stf_recipe **out, const char *verb, const char *arg);
/* One recipe of `stfix rules list`. */
typedef struct {
    char *name; /* NAME of NAME.yaml */
    char *path; /* DIR/NAME.yaml, or CLI_BUILTIN_DIR/NAME.yaml */
    const cli_builtin_recipe *builtin; /* the built-in one, else NULL */
} cli_recipe_entry;
/* Load the recipe of a listing entry (a file or a built-in) without
 * printing anything: 0, or the library's code with err filled. */
int cli_recipe_entry_load(stf_recipe **out, stf_recipe_diags **d, const cli_recipe_entry *e,
                          stf_err *err);
/* Every NAME.yaml in the directories of `p`, the first one per NAME, then
 * those of the nbuiltins entries of `builtins` (cli_builtin_recipes or
 * cli_builtin_profiles; NULL: none) that no directory has, sorted by name:
 * 0, or -1 when out of memory. Free with cli_recipe_list_free. */
int cli_recipe_list(const cli_rules_path *p, const cli_builtin_recipe *builtins,
                    size_t nbuiltins, cli_recipe_entry **out, size_t *count);
void cli_recipe_list_free(cli_recipe_entry *v, size_t n);

/* cli_tp.c: tensor parallelism for check, plan and fix. */
typedef struct cli_tp {
    stf_tp_profile **bundled;    /* every bundled profile (DIR/tp/NAME.yaml) */
    size_t nbundled;
    stf_tp_profile *given;       /* --tp-profile FILE */
    const stf_tp_profile *use;   /* the profile in effect, NULL when none */
    int detected;                /* chosen from the names (no --tp-profile) */
    size_t classified, linear;   /* Linear layers `use` classifies, Linear layers */
} cli_tp;
/* The CLI_CALL of --tp: "8" or "2,4,8" into the stf_tp_opts at `target`. */
int cli_opt_tp_degrees(const char *verb, const char *value, void *target);
/* --tp-profile list: prints the bundled profiles; the exit status. */
int cli_tp_list(const char *verb);
/* The profile for checkpoint c: `arg` (a file or a bundled NAME), or the
 * one detected from c's names when arg is NULL. -1 when resolved into *t,
 * else the exit status (the error reported); free *t with cli_tp_free in
 * both cases. */
int cli_tp_resolve(cli_tp *t, const char *verb, const char *arg, const stf_ckpt *c);
void cli_tp_free(cli_tp *t);
/* Whether a requantize of the recipe (rewrite-format's included) has a tp
 * degree above 1. */
int cli_recipe_uses_tp(const stf_recipe *r);
/* cli_tp_resolve, then the profile is attached to r (plan and fix). */
int cli_tp_attach(cli_tp *t, const char *verb, const char *arg, const stf_ckpt *c,
                  stf_recipe *r);
/* "tp profile: NAME (given|detected ...)" on one line. */
void cli_tp_describe(FILE *o, const cli_tp *t);
/* One "  TP T: verdict; counts" line per degree of the report. */
void cli_tp_summary_human(FILE *o, const stf_check_report *r);
/* Adds the members profile (NAME or null), detected, classified and linear
 * to the JSON object o: which profile gave the layer styles. */
void cli_tp_profile_add(cJSON *o, const cli_tp *t);

/* Flush stdout: -1 when everything written reached it, else the failure is
 * reported for `verb` as an STF_EIO error and its exit status comes back. */
int cli_stdout_flush(const char *verb);

/* Print the reader's findings of severity `min` and above to stderr, one
 * "stfix: VERB: SEVERITY RULE: message" line each (cli_finding_line). */
void cli_findings_print(const char *verb, const stf_ckpt *c, stf_severity min);

/* cli_text.c: text from the input, escaped on its way out (valid UTF-8,
 * nothing raw a terminal would act on). An escaper is one of the library's
 * stf_json_quote, stf_name_escape, stf_text_escape. */
typedef size_t (*cli_escaper)(char *dst, size_t cap, const char *s, size_t n);
/* Write s[0..n) through `esc`: 0, or -1 (nothing written) when the
 * escaped text needs memory that cannot be had. */
int cli_put(FILE *o, cli_escaper esc, const char *s, size_t n);
/* A name (tensor, layer prefix, metadata key) of n bytes, as stf_name_escape
 * shows it: U+0000 as \u0000, a backslash as \\. */
void cli_name(FILE *o, const char *s, size_t n);
/* Free text such as a message or a path (NULL prints nothing). */
void cli_text(FILE *o, const char *s);
/* The display columns of a name once escaped (its code points; a wide
 * character counts one). */
size_t cli_name_width(const char *s, size_t n);
/* A name padded with spaces to `width` display columns (a table column);
 * a wider name is printed whole. */
void cli_name_col(FILE *o, const char *s, size_t n, size_t width);
/* printf into free text (a final newline is kept as the line's end);
 * cli_vtextf takes a va_list. */
void cli_vtextf(FILE *o, const char *fmt, va_list ap);
void cli_textf(FILE *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A shape as "[d0, d1, ...]" into buf (rank at most 8: 256 bytes hold
 * any); returns its length. */
size_t cli_shape_text(char *buf, size_t cap, const uint64_t *shape, unsigned rank);

/* cli_color.c: colour in human text (never in JSON). */
typedef enum { CLI_COLOR_AUTO, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER } cli_color_mode;
/* auto: colour on a terminal, unless NO_COLOR is set and not empty or TERM
 * is "dumb"; always; never. The default is auto. */
void cli_color_set(cli_color_mode m);
/* "auto", "always" or "never" into *out: 0, else -1. */
int cli_color_parse(const char *when, cli_color_mode *out);
/* Whether text written to `o` gets colour (decided once per stream). */
int cli_color_on(FILE *o);
/* The severity's name, coloured where `o` takes colour, then spaces up
 * to `width` columns. */
void cli_severity(FILE *o, stf_severity s, int width);
/* A rule id, bold where `o` takes colour. */
void cli_rule_id(FILE *o, const char *rule);

/* cli_diags.c: findings in human text, "SEVERITY RULE: MESSAGE". */
/* A message with the first repeat of `rule` left out ("F: S23 not
 * canonical" is shown as "F: not canonical"), escaped as free text. */
void cli_message(FILE *o, const char *msg, const char *rule);
/* One diagnostic as "INDENT SEVERITY RULE: MESSAGE\n": the severity padded
 * to 7 columns, the rule and its colon to 4, the message as cli_message. */
void cli_diag_line(FILE *o, const stf_diag *d, const char *indent);
/* One reader finding on stderr: "stfix: VERB: SEVERITY RULE: MESSAGE"
 * (with -q, only one of error severity). */
void cli_finding_line(const char *verb, stf_severity s, const char *rule, const char *msg);
/* The order every listing of a report's diagnostics follows, text and
 * JSON alike: file-level findings first, then each layer in order of its
 * first finding in the report, a layer's findings in report order. *out
 * gets the report's indices in that order (free it): 0, or -1 when out
 * of memory (*out NULL). */
int cli_diags_order(const stf_check_report *r, size_t **out);
/* The report's diagnostics in cli_diags_order, grouped: the file-level
 * ones under "INDENT file-level:", each layer's under "INDENT layer
 * NAME:" (cli_diag_line, indented two more). first (may be NULL; room for
 * a stf_diag rule) gets the rule id of the first line, "" when there is
 * none. 0, or -1 when out of memory. */
int cli_diags_listing(FILE *o, const stf_check_report *r, const char *indent, char *first);
/* Diagnostic i of r into *d (stf_check_diag_peek) with its message in
 * *buf, which is grown (realloc) to hold it: a report read a finding at a
 * time keeps no message. 0, or -1 when out of memory. */
int cli_diag_get(const stf_check_report *r, size_t i, stf_diag *d, char **buf, size_t *cap);

/*
 * cli_json.c: the --json documents, built as cJSON trees and printed in
 * stfix's layout: {"key": value, ...} and [a, b] on one line, unless a
 * node's layout flags say otherwise. Strings and integers enter the tree
 * as raw JSON text (stf_json_quote; exact decimals), never as cJSON strings
 * or numbers. A builder that runs out of memory returns NULL; adding NULL
 * is allowed and makes cli_json_print fail, so callers check once.
 */
/* Layout flags, or'ed into a node's cJSON type (bits cJSON leaves alone). */
#define CLI_J_LINES (1 << 12) /* an array or object: each item on its own line, "\n  " */
#define CLI_J_CLOSE (1 << 13) /* with CLI_J_LINES: "\n" before the closing bracket */
#define CLI_J_BREAK (1 << 14) /* an object member: ",\n " before it instead of ", " */
cJSON *cli_j_strn(const char *s, size_t n);  /* a string literal of s[0..n) */
cJSON *cli_j_str(const char *s);             /* NULL as "" */
cJSON *cli_j_str_or_null(const char *s);     /* NULL as null */
cJSON *cli_j_u64(uint64_t v);
cJSON *cli_j_num(double v, int digits);      /* %.{digits}g; null when not finite */
cJSON *cli_j_bool(int b);
cJSON *cli_j_null(void);
cJSON *cli_j_object(int layout);
cJSON *cli_j_array(int layout);
/* obj[key] = v (key: the program's own ASCII), v's layout or'ed with
 * `layout` (CLI_J_BREAK, or a container's flags). */
void cli_j_add(cJSON *obj, const char *key, cJSON *v, int layout);
/* obj[key] for a key of len bytes from the input (a metadata key, which
 * may hold anything): escaped as strings are. */
void cli_j_add_raw_key(cJSON *obj, const char *key, size_t len, cJSON *v);
/* JSON text of len bytes taken as it is (already valid JSON). */
cJSON *cli_j_raw(const char *text, size_t len);
void cli_j_push(cJSON *arr, cJSON *v);
cJSON *cli_j_shape(const uint64_t *shape, unsigned rank);  /* [d0, d1, ...] */
cJSON *cli_j_strv(const char *const *v, size_t n);         /* ["s0", ...] */
/* ["sglang", "comfyui"], either or both, per the STF_CONSUMER_* bits. */
cJSON *cli_j_targets(unsigned targets);
/* {"rule", "severity", "layer", "message"}, "fix" when with_fix, then
 * "effect": the bytes of cli_jw_diag as a node. */
cJSON *cli_j_diag(const stf_diag *d, int with_fix);
/* Print doc and a newline to o, and free it: 0, or -1 (nothing printed)
 * when a builder ran out of memory since the last print. */
int cli_json_print(FILE *o, cJSON *doc);
/*
 * A document written as it goes, for one whose items are too many to hold
 * as a tree (check's diagnostics): the program writes its own punctuation
 * and each item, and the parts it builds as trees, in the layout above.
 * With oneline (JSON Lines) every line break is left out. cli_jw_end says
 * whether everything could be made: -1 when a part ran out of memory
 * (then the document is cut short there).
 */
typedef struct cli_jw {
    FILE *o;
    int oneline;
    int failed;
    char *buf;   /* a string literal being quoted */
    size_t cap;
} cli_jw;
void cli_jw_begin(cli_jw *w, FILE *o, int oneline);
void cli_jw_text(cli_jw *w, const char *t);          /* punctuation, keys: as they are */
void cli_jw_str(cli_jw *w, const char *s, size_t n); /* s[0..n) as a string literal */
void cli_jw_value(cli_jw *w, cJSON *v);              /* a built tree, printed and freed */
/* A member of an object: its separator (none when first, a break where v
 * asks for one, as a built object lays it out), "key": and v, as
 * cli_jw_value. */
void cli_jw_member(cli_jw *w, int first, const char *key, cJSON *v);
void cli_jw_diag(cli_jw *w, const stf_diag *d, int with_fix); /* as cli_j_diag */
int cli_jw_end(cli_jw *w);

/* cli_json_out.c: the --json documents of the commands that write files
 * (stfix(1), JSON OUTPUT). Each prints one document and a newline to o:
 * 0, or -1 when out of memory (nothing printed). A sharded output is
 * described from the index at its path. */
/* rewrite: {"input", "output", "tensors", "zstd": null|{"level", "grouped",
 * "verified"}, "files": [{"path", "bytes"}]}; out is the index for a
 * sharded output; wo as the rewrite used it, its input still open (what it
 * cost over the network, "network", for a remote one). */
int cli_json_rewrite(FILE *o, const char *in, const char *out, size_t tensors,
                     const stf_write_opts *wo);
/* compress and decompress: {"input", "output", "bytes_in", "bytes_out",
 * "files": [{"input", "output", "bytes_in", "bytes_out"}]}: an index's
 * shards paired by the tensors they hold, then the file or index itself. */
int cli_json_zstd(FILE *o, const char *in, const char *out);
/* What a batch did, for its summary document. */
typedef struct cli_batch_failure {
    const char *input, *error; /* error: "RULE: message", or NULL */
} cli_batch_failure;
typedef struct cli_batch_summary {
    size_t checkpoints, kept;    /* found (this share), taken from the report by --resume */
    size_t count[4];             /* by stf_batch_status */
    unsigned long long bytes_read, bytes_written;
    const char *report;          /* the JSON Lines report, NULL for none */
    int exit;                    /* the batch's exit status */
    const cli_batch_failure *failed;
    size_t nfailed;
    int remote;                  /* some line carries "network": the sums */
    uint64_t net_bytes, net_requests;
} cli_batch_summary;
/* batch: {"checkpoints", "resumed", "status": {"fixed", "compliant",
 * "failed", "skipped"}, "bytes_read", "bytes_written", "report", "exit",
 * "failed": [{"input", "error"}]}, and "network" when remote. */
int cli_json_batch(FILE *o, const cli_batch_summary *s);

/* cli_json_rules.c: the --json documents of `stfix rules` (stfix(1), JSON
 * OUTPUT); each 0, or -1 when out of memory (nothing printed). */
/* rules lint: each of paths[0..n) linted (its problems on stderr as
 * without --json, the first kept as the run's error), then {"files":
 * [{"file", "exit", "rules", "sha256", "findings": [{"file", "line",
 * "col", "severity", "message"}]}]} on o; *worst: the highest status. */
int cli_json_rules_lint(FILE *o, char *const *paths, size_t n, int *worst);
/* rules show: {"recipe": arg, "files", "rules", "description", "sha256",
 * "text"} of the recipe r loaded from arg. */
int cli_json_rules_show(FILE *o, const char *arg, const stf_recipe *r);

/* cli_verify.c: one verification of an output (stfix verify, batch --verify-report). */
typedef struct cli_verify_args {
    const char *out, *in, *recipe;
    unsigned long long max_shard_size; /* 0: one file, or for an index OUT IN's largest shard */
    int json;
    int batch_layout; /* OUT was written by batch: a sharded IN is split at its largest shard */
} cli_verify_args;
/* Re-run the conversion of a->in by a->recipe in memory and compare it
 * with a->out; the verdict goes to `o` (text or JSON). EXIT_OK_ when
 * identical and stamped with the recipe, EXIT_FINDINGS when not, else the
 * error's status (reported for `verb`). `pool` may be NULL. */
int cli_verify_one(const char *verb, const cli_verify_args *a, stf_pool *pool, FILE *o);

/* --max-spool SIZE, for a command that may read a plain zstd stream out of
 * data order: the cap on its spool (stf_open_opts.max_spool, rule L11) in
 * the unsigned long long at `t`, 0 when not given. */
#define CLI_SPOOL_OPT(t)                                                                  \
    { .name = "max-spool", .metavar = "SIZE", .kind = CLI_SIZE, .target = (t), .min = 1,  \
      .help = "spool at most SIZE bytes of a plain zstd stream read\n"                    \
              "out of order (default: its size as the header declares)" }

/* cli_zstd.c: the compressed-output options every writing command takes
 * (stfix(1), COMPRESSED FILES). A command puts CLI_ZSTD_OPTS(&z) in its
 * table and calls cli_zstd_apply after parsing. */
typedef struct cli_zstd {
    int level;                /* 0: not asked for */
    unsigned long long frame; /* 0: the library's default */
    int grouped, verify;
    char *out;                /* owned: OUT with the suffix added (cli_zstd_apply) */
} cli_zstd;

/* --zstd[=LEVEL]: LEVEL 1 to 22, 3 when left out. */
int cli_opt_zstd(const char *verb, const char *value, void *target);

#define CLI_ZSTD_OPTS(z)                                                                  \
    { .name = "zstd", .metavar = "LEVEL", .kind = CLI_CALL, .call = cli_opt_zstd,         \
      .target = (z), .optional = 1,                                                       \
      .help = "write zstd seekable files (OUT.zst; default level 3);\n"                   \
              "plain `zstd -d` restores the .safetensors" },                              \
    { .name = "zstd-frame", .metavar = "SIZE", .kind = CLI_SIZE, .target = &(z)->frame,   \
      .min = 1024, .help = "at most SIZE bytes per zstd frame (default 4MiB)" },          \
    { .name = "zstd-grouped", .kind = CLI_FLAG, .target = &(z)->grouped,                  \
      .help = "BF16/F16 frames byte-grouped (OUT.stz; implies --zstd;\n"                  \
              "`stfix decompress` restores it)" },                                        \
    { .name = "zstd-verify", .kind = CLI_FLAG, .target = &(z)->verify,                    \
      .help = "decompress each file after writing and compare SHA-256" }

/*
 * After parsing: refuse --zstd-frame or --zstd-verify without --zstd
 * (EXIT_USAGE, message printed), set wo's zstd fields, and make *out end in
 * the suffix (".zst", or ".stz" when grouped) by appending it when missing
 * (z->out then owns the new name; free it with cli_zstd_free). -1 to go
 * on. Without any zstd option nothing changes.
 */
int cli_zstd_apply(const char *verb, cli_zstd *z, stf_write_opts *wo, const char **out);
void cli_zstd_free(cli_zstd *z);
/*
 * How the first zstd-stream shard of c (a plain zstd file, no seek table)
 * is being read, into buf: "reading IN.zst in order", "spooling IN.zst to
 * DIR (random access)", "decompressing IN.zst again from the start (random
 * access)", or before any read "reading IN.zst as a stream". Of several,
 * the one read out of order is named; `brief`: by its file name alone.
 * 0 and buf empty when c has none.
 */
size_t cli_zstd_stream_note(char *buf, size_t cap, const stf_ckpt *c, const char *spool_dir,
                            int brief);
/* With -v and no progress line on a terminal: the note as a line, where
 * the line would have shown it (cli_progress.c). */
void cli_zstd_stream_info(const char *verb, const stf_ckpt *c, const char *spool_dir);

/*
 * cli_net.c: remote inputs (stfix(1), INPUTS). cli_net_init sets the
 * library's network options from the defaults and the environment
 * (HF_ENDPOINT, HF_TOKEN, https_proxy/HTTPS_PROXY, http_proxy,
 * no_proxy/NO_PROXY), once; 0, or -1 once it printed its error. A command
 * reading inputs puts CLI_NET_OPTS in its table.
 */
int cli_net_init(const char *verb);
/* The CLI_CALL of the network options; target names the option. */
int cli_opt_net(const char *verb, const char *value, void *target);
/*
 * For a remote input and its checkpoint c: with -v, "INPUT: N bytes in M
 * request(s) over the network" on stderr, and with bytes and requests
 * (may be NULL) those figures (what was fetched for c since its open,
 * stf_ckpt_network: c's alone, whatever other inputs read at the same
 * time), for the "network" member of its JSON document; returns 1.
 * Nothing for a local input or a NULL c: returns 0.
 */
int cli_net_report(const char *verb, const char *input, const stf_ckpt *c, uint64_t *bytes,
                   uint64_t *requests);
/* With -v at the end of a run, what crossed the network and no input's
 * report has said (fix, diff, rewrite, batch; inputs that failed): "N
 * bytes in M request(s) over the network in all". */
void cli_net_run_total(const char *verb);
/* The same for a document made with cli_j_*: the member added to doc. */
void cli_net_json(const char *verb, const char *input, const stf_ckpt *c, cJSON *doc);
/* The same for a document about two inputs (diff), when either is remote:
 * what was fetched for both, -v's line naming the remote ones ("A and B:
 * ..." when both are). */
void cli_net_json_pair(const char *verb, const char *a, const stf_ckpt *ca, const char *b,
                       const stf_ckpt *cb, cJSON *doc);
/* The member {"bytes": N, "requests": M} added to doc as it is given
 * (batch's total of its checkpoints' figures). */
void cli_net_json_total(cJSON *doc, uint64_t bytes, uint64_t requests);
/*
 * EXIT_USAGE, with its message ("WHAT 'PATH' is a URL: ..."), when a path
 * to be written is a URL; -1 to go on.
 */
int cli_net_refuse_output(const char *verb, const char *path, const char *what);

#define CLI_NET_OPTS                                                                      \
    { .name = "hub-endpoint", .metavar = "URL", .kind = CLI_CALL, .call = cli_opt_net,    \
      .target = (void *)"hub-endpoint",                                                   \
      .help = "where hf:// names resolve (default $HF_ENDPOINT,\n"                        \
              "else https://huggingface.co)" },                                           \
    { .name = "header", .metavar = "LINE", .kind = CLI_CALL, .call = cli_opt_net,         \
      .target = (void *)"header",                                                         \
      .help = "send LINE ('Name: value') with each request to the\n"                      \
              "host of a URL input, never after a redirect to another" },                 \
    { .name = "insecure", .kind = CLI_CALL, .call = cli_opt_net,                          \
      .target = (void *)"insecure",                                                       \
      .help = "do not verify the TLS certificates of https:// inputs" },                  \
    { .name = "connect-timeout", .metavar = "S", .kind = CLI_CALL, .call = cli_opt_net,   \
      .target = (void *)"connect-timeout",                                                \
      .help = "give up connecting after S seconds (default 30)" },                        \
    { .name = "stall-timeout", .metavar = "S", .kind = CLI_CALL, .call = cli_opt_net,     \
      .target = (void *)"stall-timeout",                                                  \
      .help = "fail a transfer that receives nothing for S seconds\n"                     \
              "(default 60)" },                                                           \
    { .name = "retries", .metavar = "N", .kind = CLI_CALL, .call = cli_opt_net,           \
      .target = (void *)"retries",                                                        \
      .help = "retry a failed connection, 429 or 5xx N times\n"                           \
              "(default 4)" }

/* --net-jobs N of the commands that read several inputs ahead (check,
 * batch), into the int at tgt (default 8, set by the command). */
#define CLI_NET_JOBS_OPT(tgt)                                                             \
    { .name = "net-jobs", .metavar = "N", .kind = CLI_INT, .target = (tgt), .min = 1,     \
      .max = 256, .help = "inputs read at once when some are URLs (default 8)" }

/*
 * cli_ahead.c: several inputs, up to `width` opened at once on threads of
 * their own, so that remote inputs' requests overlap; the caller takes
 * each result in order. With o, each is opened (stf_ckpt_open, the spool
 * directory of cli_spool_dir) and checked (stf_check_run with o, less its
 * pool, which serves one call at a time: the probes run inline); without,
 * each is opened with the default options and its markers fetched (what
 * stf_batch_run_item would read first), no report. A NULL name in files
 * is not opened: its result is no checkpoint and 0. 0, or -1 when out of
 * memory or no thread starts.
 */
typedef struct cli_ahead cli_ahead;
int cli_ahead_start(cli_ahead **out, char **files, int n, int width, const stf_check_opts *o);
/* Wait for input k (taken in order): its checkpoint and report, both the
 * caller's to free, or its error (the return value, 0 or a library code).
 * What the checkpoint cost over the network is its own to say
 * (cli_net_report), whichever thread fetched it. */
int cli_ahead_take(cli_ahead *a, int k, stf_ckpt **c, stf_check_report **r, stf_err *err);
/* Stop the threads; free what was not taken. No-op on NULL. */
void cli_ahead_free(cli_ahead *a);

#endif
