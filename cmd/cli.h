/*
 * The stfix program: shared declarations of the subcommands and the small
 * helpers they share. cmd/ reaches the library only through <stfix.h>.
 */
#ifndef STFIX_CLI_H
#define STFIX_CLI_H

#include <stdio.h>

#include "stfix.h"

/* Exit codes, documented in stfix(1). */
enum {
    EXIT_OK_ = 0,        /* success; check: no error-severity finding */
    EXIT_FINDINGS = 1,   /* check: at least one error-severity finding */
    EXIT_INVALID = 2,    /* an input is unreadable or invalid */
    EXIT_USAGE = 3,      /* bad command line */
    EXIT_FAILED = 4      /* the operation failed (I/O, memory, output rejected) */
};

/* One subcommand: argv[0] is the verb. Returns the exit code. */
int cmd_inspect(int argc, char **argv);
int cmd_rewrite(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_fix(int argc, char **argv);

/* Print "stfix: <verb>: <msg>\n" to stderr. */
void cli_errorf(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Print an stf_err ("stfix: <verb>: <msg>") and map its code to an exit code. */
int cli_report(const char *verb, const stf_err *err);

/* Parse a size like "5000000000", "5GB", "500MB", "4GiB" into bytes. 0 or -1. */
int cli_parse_size(const char *s, unsigned long long *out);

/* cli_args.c. The error's message, or the code's generic text when it has
 * none. */
const char *cli_err_text(const stf_err *err);

/* "--help" or "-h". */
int cli_is_help(const char *a);

/* `a` is `shortname` (may be NULL), `longname`, or "longname=VALUE". */
int cli_opt_is(const char *a, const char *shortname, const char *longname);

/* The value of the option at argv[*i]: after '=' in "longname=VALUE", else
 * the next argument (advancing *i); NULL when there is none. */
const char *cli_opt_value(int argc, char **argv, int *i, const char *longname);

/* Open the checkpoint at `path` (o may be NULL). -1 when it is open in
 * *out; otherwise the error is printed for `verb` and the exit code comes
 * back: EXIT_FAILED when out of memory, else EXIT_INVALID. */
int cli_ckpt_open(stf_ckpt **out, const char *verb, const char *path, const stf_open_opts *o);

/* Print the reader's findings of severity `min` and above to stderr, one
 * "stfix: VERB: SEVERITY RULE: message" line each. */
void cli_findings_print(const char *verb, const stf_ckpt *c, stf_severity min);

/* Print a recipe's diagnostics (FILE:LINE:COL: message) to stderr, one a
 * line, and free them. */
void cli_recipe_diags_print(stf_recipe_diags *d);

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
/* ["sglang", "comfyui"], either or both, per the STF_TARGET_* bits. */
void cli_json_targets(FILE *o, unsigned targets);
/* One entry of a diagnostics array, on its own line ("\n  {" first, else
 * ",\n  {"): rule, severity, layer, message, and fix when with_fix. */
void cli_json_diag(FILE *o, const stf_diag *d, int first, int with_fix);

#endif
