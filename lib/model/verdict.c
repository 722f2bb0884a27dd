/*
 * Names of the row/column detector's verdicts (stf_probe_verdict), the one
 * vocabulary the check, rules and pipeline layers share.
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
