/*
 * The run of a plan's selectors: the regex step budget all its searches
 * share, and each pattern's verdict on the layer name searched last. A plan
 * evaluates every rule on a layer several times (once per probe verdict it
 * might need, then for the actions) and in several passes, and several
 * rules may share one pattern; the verdicts spare the searches after the
 * first.
 */
#include <string.h>

#include "rules/rules_internal.h"

/* A run of recipe r (rules_internal.h). */
int stf__rules_run_init(stf__rules_run *run, const stf_recipe *r, uint64_t left, stf_err *err)
{
    memset(run, 0, sizeof *run);
    stf__buf_init(&run->subject);
    run->steps = r && r->max_regex_steps ? r->max_regex_steps : STF__REGEX_STEPS_DEFAULT;
    run->budget.left = left != UINT64_MAX ? left : run->steps;
    run->nre = r ? r->nregex : 0;
    if (!run->nre) return 0;
    run->seen = stf__calloc(run->nre, sizeof *run->seen);
    run->verdict = stf__calloc(run->nre, sizeof *run->verdict);
    if (!run->seen || !run->verdict) {
        stf__rules_run_free(run);
        return stf__err(err, STF_ENOMEM, "out of memory");
    }
    return 0;
}

/* Frees what a run holds (not the run); no-op on NULL. */
void stf__rules_run_free(stf__rules_run *run)
{
    if (!run) return;
    stf__free(run->seen);
    stf__free(run->verdict);
    stf__buf_free(&run->subject);
    run->seen = NULL;
    run->verdict = NULL;
    run->nre = 0;
}

/* The run's verdict of pattern `id` on this name (rules_internal.h). */
int stf__rules_run_cached(stf__rules_run *run, size_t id, const char *name, size_t len,
                          int *holds, int *known)
{
    *known = 0;
    if (!run || id >= run->nre) return 0;
    if (run->subject.len != len || (len && memcmp(run->subject.data, name, len))) {
        run->subject.len = 0;
        if (stf__buf_put(&run->subject, name, len)) return STF_ENOMEM;
        run->gen++;
    }
    if (run->seen[id] == run->gen) {
        *holds = run->verdict[id];
        *known = 1;
    }
    return 0;
}

/* Keeps pattern id's verdict on the name last asked about (rules_internal.h). */
void stf__rules_run_keep(stf__rules_run *run, size_t id, int holds)
{
    if (!run || id >= run->nre) return;
    run->seen[id] = run->gen;
    run->verdict[id] = (unsigned char)holds;
}
