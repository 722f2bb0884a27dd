/*
 * stf_check_run, which drives the profiles over a checkpoint, and the
 * defaults of its options.
 */
#include <string.h>

#include "check/check_internal.h"

/* Contract in check.h: defaults (every profile but numeric, tau 0.99); NULL is a no-op. */
void stf_check_opts_init_version(stf_check_opts *o, unsigned version)
{
    /* Layout 1 ends before progress. */
    if (!o || !stf__opts_reset_v(o, sizeof *o, offsetof(stf_check_opts, progress), version,
                                 STF_CHECK_OPTS_VERSION))
        return;
    o->profiles = STF_CHECK_ALL;
    o->tau = 0.99;
}

/*
 * Contract in check.h: runs the selected profiles over c; *out owned by
 * the caller (stf_check_report_free). Fails with STF_EINVAL, STF_ENOMEM or
 * the read error of a marker or tensor; findings are never failures.
 */
int stf_check_run(stf_check_report **out, const stf_ckpt *c, const stf_check_opts *opts,
                  stf_err *err)
{
    return stf_check_run_tp(out, c, opts, NULL, err);
}

/* Contract in check.h: defaults (no degrees, no classifier); NULL is a no-op. */
void stf_tp_opts_init_version(stf_tp_opts *o, unsigned version)
{
    if (!o) return;
    stf__opts_reset(o, sizeof *o, version, STF_TP_OPTS_VERSION);
}

/* Contract in check.h: stf_check_run, then the T rules of `tp`. */
int stf_check_run_tp(stf_check_report **out, const stf_ckpt *c, const stf_check_opts *opts,
                     const stf_tp_opts *tp, stf_err *err)
{
    stf_check_opts def, mine;
    stf__chk k;
    stf_model *m = NULL;
    int rc = 0;
    if (!out || !c) return stf__err(err, STF_EINVAL, "stf_check_run: NULL argument");
    *out = NULL;
    if (!opts) {
        stf_check_opts_init(&def);
        opts = &def;
    }
    if ((rc = stf__opts_version(err, opts->version, STF_CHECK_OPTS_VERSION, "stf_check_opts")))
        return rc;
    /* An older layout is read only as far as it goes. */
    stf_check_opts_init(&mine);
    stf__opts_take(&mine, opts, sizeof mine, offsetof(stf_check_opts, progress), opts->version);
    opts = &mine;
    if (tp && (rc = stf__opts_version(err, tp->version, STF_TP_OPTS_VERSION, "stf_tp_opts")))
        return rc;
    memset(&k, 0, sizeof k);
    k.c = c;
    k.o = opts;
    k.err = err;
    k.r = stf__report_new();
    if (!k.r) return stf__err(err, STF_ENOMEM, "out of memory");
    rc = stf_model_build(&m, c, err);
    if (rc) goto done;
    k.m = m;
    rc = stf__check_container(&k);
    if (!rc && (opts->profiles & STF_CONSUMER_SGLANG)) rc = stf__check_sglang(&k);
    if (!rc && (opts->profiles & STF_CONSUMER_COMFYUI)) rc = stf__check_comfyui(&k);
    if (!rc && (opts->profiles & STF_CHECK_NUMERIC)) rc = stf__check_numeric(&k);
    if (!rc && tp && tp->count) rc = stf__check_tp(&k, tp);
    if (!rc) rc = k.rc;
    if (rc == STF_ENOMEM && err && !err->msg[0]) stf__err(err, rc, "out of memory");
done:
    for (size_t i = 0; i < k.npool; i++) stf_model_str_free(k.pool[i]);
    stf__free(k.pool);
    stf_model_free(m);
    if (rc) {
        stf_check_report_free(k.r);
        return rc;
    }
    *out = k.r;
    return 0;
}
