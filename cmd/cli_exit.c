/*
 * The exit status of every stfix command, in one table: which library
 * error code ends a run with which status, and the lines every --help ends
 * with. stfix(1) EXIT STATUS documents the same contract.
 *
 * The classes say who has to act: 2 the user must change an input file or
 * the recipe, 3 the user must change the command line (including an
 * argument the library refused, such as an output path that would replace
 * an input), 4 the run itself failed and may succeed when repeated.
 */
#include "cli.h"

static const struct {
    int code;
    const char *name;
    int status;
} exit_table[] = {
    { STF_EFORMAT, "STF_EFORMAT", EXIT_INVALID },
    { STF_ELIMIT, "STF_ELIMIT", EXIT_INVALID },
    { STF_ENOTFOUND, "STF_ENOTFOUND", EXIT_INVALID },
    { STF_EUNSUPPORTED, "STF_EUNSUPPORTED", EXIT_INVALID },
    { STF_ENUMERIC, "STF_ENUMERIC", EXIT_INVALID },
    { STF_EINVAL, "STF_EINVAL", EXIT_USAGE },
    { STF_EIO, "STF_EIO", EXIT_FAILED },
    { STF_ENOMEM, "STF_ENOMEM", EXIT_FAILED },
    { STF_EBUSY, "STF_EBUSY", EXIT_FAILED },
};

#define EXIT_TABLE_LEN (sizeof exit_table / sizeof exit_table[0])

/* The exit status for a library error code; see cli.h. */
int cli_exit_for(int code)
{
    if (code == STF_OK) return EXIT_OK_;
    for (size_t i = 0; i < EXIT_TABLE_LEN; i++)
        if (exit_table[i].code == code) return exit_table[i].status;
    return EXIT_FAILED;
}

/* "STF_EFORMAT" and so on, NULL for a code not in the table; see cli.h. */
const char *cli_exit_code_name(int code)
{
    for (size_t i = 0; i < EXIT_TABLE_LEN; i++)
        if (exit_table[i].code == code) return exit_table[i].name;
    return NULL;
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
