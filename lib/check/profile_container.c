/*
 * The container profile: the reader's own findings (S, I and L rules)
 * reported as diagnostics, each with the fix that clears it.
 */
#include "check/check_internal.h"

static const char *container_fix(const char *rule)
{
    int n = 0;
    for (const char *p = rule + 1; *p >= '0' && *p <= '9' && n < 1000; p++) n = n * 10 + (*p - '0');
    if (rule[0] == 'I')
        return "rewrite the checkpoint with `stfix rewrite` to rebuild the index";
    if (n == 29)
        return "rewrite with `stfix rewrite`, which writes the hash of the data it writes";
    if (n >= 21)
        return "rewrite with `stfix rewrite` to get the canonical layout";
    return "rewrite with `stfix rewrite`, which emits only what every reader accepts";
}

/* The reader's findings, each with the rewrite that clears it. A finding
 * below error severity is one the reference reader accepts: a note. */
int stf__check_container(stf__chk *k)
{
    k->profile = "container";
    size_t n = stf_ckpt_finding_count(k->c);
    for (size_t i = 0; i < n && !k->rc; i++) {
        const stf_finding *f = stf_ckpt_finding(k->c, i);
        if (!f) continue;
        stf__chk_add(k, f->rule, f->severity, f->tensor, f->tensor_len, container_fix(f->rule),
                     "%s",
                     f->message ? f->message : "");
        if (f->severity != STF_SEV_ERROR) stf__chk_effect(k, STF_EFFECT_NOTE);
    }
    return k->rc;
}
