/*
 * The stfix program: shared declarations of the subcommands and the small
 * helpers they share. cmd/ reaches the library only through <stfix.h>.
 */
#ifndef STFIX_CLI_H
#define STFIX_CLI_H

#include <stdarg.h>
#include <stdio.h>

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
int cmd_compress(int argc, char **argv);
int cmd_decompress(int argc, char **argv);

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
 * warning): nothing is kept. */
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
 * (argv). Not called: "file" is null. */
void cli_run_input(const char *path);

/* main: end the run with `status` and return it. When the run asked for
 * JSON and status is 2, 3 or 4, print the JSON error document of the
 * first error kept (cli_json_error) on stdout, unless stdout has failed. */
int cli_run_end(int status);

/* For a command with several inputs, each reported on its own: copy the
 * run's kept error into *out and forget it, so that the next input's first
 * error is kept in turn. 1 when there was one, else 0 (*out cleared). */
int cli_run_error_take(stf_err *out);

/* The command has written its own JSON documents, errors included (one
 * per input): cli_run_end adds none from now on. */
void cli_run_json_handled(void);

/* The error's message, or the code's generic text when it has none. */
const char *cli_err_text(const stf_err *err);

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

/* One entry of a command's table. -h/--help, -V/--version and -- are in
 * every table without being listed; the letters h and V are theirs. */
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

/* cli_args.c. */

/* Parse a size like "5000000000", "5GB", "500MB", "4GiB" into bytes. 0 or -1. */
int cli_parse_size(const char *s, unsigned long long *out);

/* The CLI_CALL of --quant-mode: cuda, fp32 or eager into the
 * stf_plan_opts at `target` (quant_mode, quant_mode_set). */
int cli_opt_quant_mode(const char *verb, const char *value, void *target);

/* Open the checkpoint at `path` (o may be NULL). -1 when it is open in
 * *out; otherwise the error is reported for `verb` (cli_report) and its
 * exit status comes back. A plain zstd stream read out of data order is
 * spooled in the directory of `out_path` (the command's output), or in
 * $TMPDIR (else /tmp) when out_path is NULL, unless o names a directory. */
int cli_ckpt_open(stf_ckpt **out, const char *verb, const char *path, const stf_open_opts *o,
                  const char *out_path);

/* Load the recipe at `path`. -1 when it is loaded in *out; otherwise every
 * problem is printed (FILE:LINE:COL: message, one a line, or the error for
 * `verb`), the first is kept as the run's error, and its exit status comes
 * back. */
int cli_recipe_load(stf_recipe **out, const char *verb, const char *path);

/* cli_recipes.c: recipes by name, on the search path: each directory of
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
/* Whether `arg` of -r is a NAME to look up: no '/', and not ending in
 * ".yaml" or ".yml". */
int cli_recipe_is_name(const char *arg);
/* As cli_recipe_load for the argument of -r: a file, or NAME.yaml from the
 * first directory of the search path that has it. A miss is an
 * STF_ENOTFOUND error naming every directory searched (exit 2). */
int cli_recipe_load_arg(stf_recipe **out, const char *verb, const char *arg);
/* One recipe of `stfix rules list`. */
typedef struct {
    char *name; /* NAME of NAME.yaml */
    char *path; /* DIR/NAME.yaml */
} cli_recipe_entry;
/* Every NAME.yaml in the directories of `p`, the first one per NAME,
 * sorted by name: 0, or -1 when out of memory. Free with
 * cli_recipe_list_free. */
int cli_recipe_list(const cli_rules_path *p, cli_recipe_entry **out, size_t *count);
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
/* "profile": NAME|null, "detected": B, "classified": N, "linear": N. */
void cli_tp_profile_json(FILE *o, const cli_tp *t);
/* The JSON member "tp": {...} (profile, detection, one object per degree). */
void cli_tp_summary_json(FILE *o, const cli_tp *t, const stf_check_report *r);

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
/* One reader finding on stderr: "stfix: VERB: SEVERITY RULE: MESSAGE". */
void cli_finding_line(const char *verb, stf_severity s, const char *rule, const char *msg);
/* The report's diagnostics grouped by layer: file-level findings first
 * under "INDENT file-level:", then each layer in order of first appearance
 * under "INDENT layer NAME:", its findings (cli_diag_line, indented two
 * more) in report order. *first (may be NULL) gets the rule id of the
 * first line, NULL when there is none. 0, or -1 when out of memory. */
int cli_diags_listing(FILE *o, const stf_check_report *r, const char *indent, const char **first);

/* cli_json.c: pieces of the --json documents, written to `o`. */
/* A JSON string literal of s[0..n) through stf_json_quote. */
void cli_json_strn(FILE *o, const char *s, size_t n);
/* A JSON string literal of s; NULL is written as "". */
void cli_json_str(FILE *o, const char *s);
/* A JSON string literal of s; NULL is written as null. */
void cli_json_str_or_null(FILE *o, const char *s);
/* ["s0", "s1", ...] */
void cli_json_strv(FILE *o, const char *const *v, size_t n);
/* [d0, d1, ...] */
void cli_json_shape(FILE *o, const uint64_t *shape, unsigned rank);
/* ["sglang", "comfyui"], either or both, per the STF_CONSUMER_* bits. */
void cli_json_targets(FILE *o, unsigned targets);
/* One entry of a diagnostics array, on its own line ("\n  {" first, else
 * ",\n  {"): rule, severity, layer, message, and fix when with_fix. */
void cli_json_diag(FILE *o, const stf_diag *d, int first, int with_fix);
/* The document a --json command prints instead of its own when it fails:
 * {"file": PATH|null, "command": VERB, "exit": status,
 *  "error": {"rule": RULE|null, "message": MSG, "offset": N|null,
 *            "code": "STF_E..."|null}} and a newline. `file` may be NULL;
 * rule, offset and code are null when `err` has none. */
void cli_json_error(FILE *o, const char *verb, const char *file, int status, const stf_err *err);

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

#endif
