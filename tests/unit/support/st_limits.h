/*
 * Test helper: a guard that turns a hang or a runaway allocation into a test
 * failure. Not a timing assertion: the limits are far above what the code
 * under test needs, and only stop it when it has gone wrong.
 */
#ifndef ST_LIMITS_H
#define ST_LIMITS_H

#include <stddef.h>

/*
 * From now on the process is killed by SIGALRM after `seconds`, and may
 * grow its address space by at most `grow` bytes (allocations beyond fail).
 * The address-space cap is skipped under AddressSanitizer, which reserves
 * terabytes of shadow memory up front, and where /proc/self/statm cannot
 * be read.
 */
void st_limits_begin(unsigned seconds, size_t grow);

/* Lifts both limits again (the address-space limit back to what it was). */
void st_limits_end(void);

/* st_limits_end as a cmocka teardown, so that a failed assertion, which
 * leaves the test early, still lifts the limits. Returns 0. */
int st_limits_teardown(void **state);

#endif
