/*
 * The exit status of every stfix command: which library error code ends
 * a run with which status (the library's table, stf_err_exit_status), and
 * the lines every --help ends with. stfix(1) EXIT STATUS documents the
 * same contract.
 *
 * The classes say who has to act: 2 the user must change an input file or
 * the recipe, 3 the user must change the command line (including an
 * argument the library refused, such as an output path that would replace
 * an input), 4 the run itself failed and may succeed when repeated.
 */
/* Uses the experimental stf_err_exit_status, stf_err_code_name
 * (stfix/experimental.h): the library holds the table, which programs
 * binding it share. */
#define STF_EXPERIMENTAL
#include "cli.h"

/* The exit status for a library error code; see cli.h. */
int cli_exit_for(int code)
{
    return stf_err_exit_status(code);
}

/* "STF_EFORMAT" and so on, NULL for a code not in the table; see cli.h. */
const char *cli_exit_code_name(int code)
{
    return stf_err_code_name(code);
}

/* The worse of two statuses: the higher; see cli.h. */
int cli_exit_worst(int a, int b)
{
    return a > b ? a : b;
}

/* The closing lines of every --help; see cli.h. */
void cli_exit_help(FILE *to)
{
    fputs("\nExit status:\n"
          "  0  success\n"
          "  1  check: a finding at error severity; fix: the output fails verification\n"
          "     for the recipe's targets (nothing written); diff: the inputs differ;\n"
          "     batch: a checkpoint failed or stayed non-compliant; verify: the output\n"
          "     differs\n"
          "  2  invalid input or recipe: malformed, over a cap, not found, unsupported,\n"
          "     or unusable numbers\n"
          "  3  usage error: a bad command line, or an argument stfix refused (such as\n"
          "     an output path that would replace an input)\n"
          "  4  the operation failed: I/O, memory, output locked by another writer\n"
          "  check with several inputs exits with the worst of theirs (4 > 3 > 2 > 1 > 0)\n",
          to);
}
