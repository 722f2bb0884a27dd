/*
 * How a run reports failure. Every error goes to stderr as
 * "stfix: VERB: message"; the first one is also kept, so that a command
 * run with --json can end with one JSON document on stdout saying why it
 * failed (cli_run_end, cli_json_error), whatever path the failure took.
 * The exit status of a library error comes from the table in cli_exit.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The run: its verb, whether it answers in JSON, its input, and the first
 * error it reported. One per process. */
static struct {
    const char *verb;
    const char *input;
    int json;
    int failed;
    stf_err err;
} run;

/* The message is escaped as free text (cli_vtextf): it may quote input,
 * such as a path or a name, that holds control characters or bytes that
 * are not UTF-8. */
static void vprint(const char *verb, const char *fmt, va_list ap)
{
    fprintf(stderr, "stfix: %s%s", verb ? verb : "", verb ? ": " : "");
    cli_vtextf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void keep(const stf_err *err)
{
    if (run.failed) return;
    run.failed = 1;
    run.err = *err;
}

/* Print an error and keep it as the run's; see cli.h. */
void cli_errorf(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(verb, fmt, ap);
    va_end(ap);
    if (run.failed) return;
    stf_err e;
    stf_err_clear(&e);
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    keep(&e);
}

static int verbosity = CLI_NORMAL;

/* -q, -v; see cli.h. */
void cli_verbosity_set(int level)
{
    verbosity = level;
}

int cli_verbosity(void)
{
    return verbosity;
}

/* Print a message that does not end the run, unless -q; see cli.h. */
void cli_notef(const char *verb, const char *fmt, ...)
{
    if (verbosity <= CLI_QUIET) return;
    va_list ap;
    va_start(ap, fmt);
    vprint(verb, fmt, ap);
    va_end(ap);
}

/* Print detail only with -v; see cli.h. */
void cli_infof(const char *verb, const char *fmt, ...)
{
    if (verbosity < CLI_VERBOSE) return;
    va_list ap;
    va_start(ap, fmt);
    vprint(verb, fmt, ap);
    va_end(ap);
}

/* Print a library error (also with -q), keep it, and map its code; see cli.h. */
int cli_report(const char *verb, const stf_err *err)
{
    fprintf(stderr, "stfix: %s%s", verb ? verb : "", verb ? ": " : "");
    cli_text(stderr, cli_err_text(err));
    fputc('\n', stderr);
    return cli_report_silent(err);
}

/* Report a bare code; see cli.h. */
int cli_report_code(const char *verb, int code)
{
    stf_err e;
    stf_err_clear(&e);
    e.code = code;
    return cli_report(verb, &e);
}

/* Keep a library error already printed, and map its code; see cli.h. */
int cli_report_silent(const stf_err *err)
{
    stf_err e = *err;
    if (!e.msg[0]) snprintf(e.msg, sizeof e.msg, "%s", stf_strerror(e.code));
    keep(&e);
    return cli_exit_for(err->code);
}

/* Hand over the kept error and forget it; see cli.h. */
int cli_run_error_take(stf_err *out)
{
    int had = run.failed;
    if (had) *out = run.err;
    else stf_err_clear(out);
    run.failed = 0;
    stf_err_clear(&run.err);
    return had;
}

/* The command wrote its own JSON error documents; see cli.h. */
void cli_run_json_handled(void)
{
    run.json = 0;
}

/* The error's message, or its code's text; see cli.h. */
const char *cli_err_text(const stf_err *err)
{
    return err->msg[0] ? err->msg : stf_strerror(err->code);
}

/* Start the run of `verb`; see cli.h. */
void cli_run_begin(const char *verb, int json)
{
    memset(&run, 0, sizeof run);
    run.verb = verb;
    run.json = json;
}

/* The input path the JSON error names; see cli.h. */
void cli_run_input(const char *path)
{
    run.input = path;
}

/* End the run: the JSON error document when one is due; see cli.h. */
int cli_run_end(int status)
{
    if (!run.json || status == EXIT_OK_ || status == EXIT_FINDINGS || ferror(stdout))
        return status;
    if (!run.failed) {
        /* Every failing path reports an error first; this only keeps the
         * document well-formed if one does not. */
        stf_err e;
        stf_err_clear(&e);
        snprintf(e.msg, sizeof e.msg, "failed with exit status %d", status);
        keep(&e);
    }
    cli_json_error(stdout, run.verb, run.input, status, &run.err);
    fflush(stdout);
    return status;
}

/* The document a --json command prints when it fails; see cli.h. */
void cli_json_error(FILE *o, const char *verb, const char *file, int status, const stf_err *err)
{
    cJSON *doc = cli_j_object(0), *e = cli_j_object(0);
    cli_j_add(doc, "file", cli_j_str_or_null(file), 0);
    cli_j_add(doc, "command", cli_j_str_or_null(verb), 0);
    cli_j_add(doc, "exit", cli_j_u64((uint64_t)status), 0);
    cli_j_add(e, "rule", cli_j_str_or_null(err->rule[0] ? err->rule : NULL), 0);
    cli_j_add(e, "message", cli_j_str(cli_err_text(err)), 0);
    cli_j_add(e, "offset", err->has_offset ? cli_j_u64(err->offset) : cli_j_null(), 0);
    cli_j_add(e, "code", cli_j_str_or_null(cli_exit_code_name(err->code)), 0);
    cli_j_add(doc, "error", e, 0);
    if (cli_json_print(o, doc)) fputs("{}\n", o); /* out of memory: still one document */
}
