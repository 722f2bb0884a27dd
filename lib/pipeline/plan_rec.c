/*
 * The plan's per-layer records: which rules and actions applied to a layer
 * (shared by a run of layers that the same ones apply to), and the rename
 * actions that make a layer's output prefix from its prefix.
 */
#include <string.h>

#include "pipeline/plan_internal.h"

/* Whether acts[0..n) record as layer record `last` holds its rules and actions. */
static int same_rules(const stf__player *last, const stf__matched_action *acts, size_t n)
{
    if (!last || last->pub.nactions != n) return 0;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        if (last->acts[i] != acts[i].a) return 0;
        const char *nm = stf_rule_name(acts[i].rule);
        if (nr && !strcmp(last->rule_names[nr - 1], nm)) continue;
        if (nr == last->pub.nrules || last->rule_names[nr] != nm) return 0;
        nr++;
    }
    return nr == last->pub.nrules;
}

/* Layer record pl's rules and actions: those of the layer recorded before
 * it when they are the same (a recipe's rules usually treat a run of
 * layers alike), which stf_plan_free then frees once. */
int stf__plan_record_rules(stf__plan_builder *b, stf__player *pl, const stf__matched_action *acts,
                           size_t n, stf_err *err)
{
    if (!n) return 0;
    if (same_rules(b->last_rules, acts, n)) {
        pl->acts = b->last_rules->acts;
        pl->rule_names = b->last_rules->rule_names;
        pl->pub.nactions = n;
        pl->pub.actions = pl->acts;
        pl->pub.nrules = b->last_rules->pub.nrules;
        pl->pub.rules = pl->rule_names;
        return 0;
    }
    pl->acts = stf__calloc(n, sizeof *pl->acts);
    pl->rule_names = stf__calloc(n, sizeof *pl->rule_names);
    if (!pl->acts || !pl->rule_names) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        pl->acts[i] = acts[i].a;
        const char *nm = stf_rule_name(acts[i].rule);
        if (!nr || strcmp(pl->rule_names[nr - 1], nm)) pl->rule_names[nr++] = nm;
    }
    pl->pub.nactions = n;
    pl->pub.actions = pl->acts;
    pl->pub.nrules = nr;
    pl->pub.rules = pl->rule_names;
    b->last_rules = pl;
    return 0;
}

/* One rename action on a name of len bytes (contract in plan_internal.h). */
char *stf__rename_apply(const stf_action *a, const char *name, size_t len, size_t *out_len,
                        int *hit)
{
    const char *from = a->params.rename.from ? a->params.rename.from : "";
    const char *to = a->params.rename.to ? a->params.rename.to : "";
    size_t fl = strlen(from), tl = strlen(to), rl;
    *hit = fl <= len && memcmp(name, from, fl) == 0;
    if (!*hit) return NULL;
    rl = len - fl;
    char *nn = stf__malloc(tl + rl + 1);
    if (nn) {
        memcpy(nn, to, tl);
        memcpy(nn + tl, name + fl, rl);
        nn[tl + rl] = '\0';
        *out_len = tl + rl;
    }
    return nn;
}
