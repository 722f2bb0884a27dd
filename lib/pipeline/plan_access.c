/*
 * Read-only accessors of a plan (include/stfix/pipeline.h, plan section).
 * Out-of-range indices give NULL (or 0), never a crash.
 */
#include "pipeline/plan_internal.h"

/* Name of an output op ("copy", ...); "?" when out of range. */
const char *stf_out_op_name(stf_out_op op)
{
    static const char *const names[] = { "copy", "reshape", "relabel", "cast", "new",
                                         "quant-weight", "quant-scale", "dequant" };
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

/* Layers of the plan, in model order (tensor order, then metadata-only prefixes). */
size_t stf_plan_layer_count(const stf_plan *p) { return p ? p->nlayers : 0; }

const stf_plan_layer_info *stf_plan_layer(const stf_plan *p, size_t i)
{
    return p && i < p->nlayers ? &p->layers[i].pub : NULL;
}

/* Output tensors in canonical writer order. */
size_t stf_plan_tensor_count(const stf_plan *p) { return p ? p->nouts : 0; }

const stf_plan_tensor_info *stf_plan_tensor(const stf_plan *p, size_t i)
{
    return p && i < p->nouts ? &p->outs[i].pub : NULL;
}

/* Input tensor names that are not written. */
size_t stf_plan_dropped_count(const stf_plan *p) { return p ? p->ndropped : 0; }

const char *stf_plan_dropped_n(const stf_plan *p, size_t i, size_t *len)
{
    if (!p || i >= p->ndropped) return NULL;
    if (len) *len = p->dropped_len[i];
    return p->dropped[i];
}

const char *stf_plan_dropped(const stf_plan *p, size_t i) { return stf_plan_dropped_n(p, i, NULL); }

/* Output __metadata__ entries, sorted by key bytes. */
size_t stf_plan_meta_count(const stf_plan *p) { return p ? p->nmeta : 0; }

const stf_meta_entry *stf_plan_meta(const stf_plan *p, size_t i)
{
    return p && i < p->nmeta ? &p->meta[i] : NULL;
}

/* Data bytes of the output, and how many of them are input bytes copied unchanged. */
uint64_t stf_plan_bytes_total(const stf_plan *p) { return p ? p->bytes_total : 0; }

uint64_t stf_plan_bytes_copied(const stf_plan *p) { return p ? p->bytes_copied : 0; }

/* STF_CONSUMER_* bits of the recipe. */
unsigned stf_plan_targets(const stf_plan *p) { return p ? p->targets : 0; }

/* Whether the output differs from the input (contract in pipeline.h). */
int stf_plan_changed(const stf_plan *p) { return p ? p->changed : 0; }
