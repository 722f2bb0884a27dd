/*
 * Names of the row/column detector's verdicts (stf_probe_verdict) and of
 * the tensor-parallel styles (stf_parallel_style): the vocabularies the
 * check, rules and pipeline layers share.
 */
#include "model_internal.h"

static const char *const verdict_names[STF_PROBE_COUNT] = {
    "UNKNOWN", "ROW", "COLUMN", "TENSOR", "BLOCK", "AMBIGUOUS"
};

/* Static verdict text (contract in model.h); NULL out of range. */
const char *stf_probe_verdict_name(stf_probe_verdict v)
{
    return (unsigned)v < STF_PROBE_COUNT ? verdict_names[v] : NULL;
}

static const char *const style_names[STF_PARALLEL_COUNT] = {
    "unknown", "column", "row", "replicated"
};

/* Static style text (contract in model.h); NULL out of range. */
const char *stf_parallel_style_name(stf_parallel_style s)
{
    return (unsigned)s < STF_PARALLEL_COUNT ? style_names[s] : NULL;
}
