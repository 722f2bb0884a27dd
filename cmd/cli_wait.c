/*
 * A run that waits for another run's output lock says so (stfix(1), Output
 * safety): the library tells the hook installed here when a writer starts
 * waiting, and the line goes to stderr in place of a progress line that
 * would otherwise sit still for as long as the other run takes.
 */
/* Uses the experimental stf_set_lock_wait_hook (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdio.h>
#include <unistd.h>

#include "cli.h"

/* The hook: ud is the run's verb. */
static void on_wait(void *ud, const char *path)
{
    int level = cli_verbosity();
    if (level <= CLI_QUIET || (level < CLI_VERBOSE && !isatty(STDERR_FILENO))) return;
    cli_progress_clear_current();
    cli_notef(ud, "waiting for %s, locked by another stfix run...", path);
}

/* See cli.h. */
void cli_wait_install(const char *verb)
{
    stf_set_lock_wait_hook(on_wait, (void *)verb);
}
