/*
 * Test helper: the allocation hook for "fail the Nth allocation" loops.
 * It counts every call of the hook's realloc (fresh blocks and resizes),
 * fails the one armed, and counts the blocks alive so a loop can assert
 * that an error path freed everything it took.
 */
#ifndef ST_ALLOC_H
#define ST_ALLOC_H

/* Route the library's allocations through the hook (stf_set_allocator). */
void st_alloc_install(void);

/* Back to malloc/realloc/free, and disarmed; the counters keep their values. */
void st_alloc_uninstall(void);

/* Zero the call and live counters and fail call number n (1-based) from now
 * on; n 0 fails nothing. A loop over k = 0, 1, ... arms k + 1. */
void st_alloc_arm(long n);

/* Stop failing; the counters keep counting. */
void st_alloc_disarm(void);

/* Hook calls since the last st_alloc_arm. */
long st_alloc_calls(void);

/* Blocks the hook handed out and has not seen freed since the last arm. */
long st_alloc_live(void);

/*
 * The usual sweep: run fn with allocation N failing for N = 1, 2, ... until
 * it succeeds (cmocka-fails after 10000 tries). Asserts that every failure
 * returns STF_ENOMEM and leaves no block alive, that the success needed fewer
 * calls than the last armed N, and runs after_fail(ud) (may be NULL) after
 * each failure for the caller's own checks (e.g. nothing left on disk).
 */
struct stf_err;
void st_alloc_sweep(int (*fn)(void *ud, struct stf_err *err), void *ud,
                    void (*after_fail)(void *ud));

#endif
