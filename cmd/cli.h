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

#endif
