/*
 * Verifying an output before it becomes visible: the written temp files
 * are re-opened with the strict reader and checked with the recipe's target
 * profiles, so a fix never publishes a file its consumer would refuse.
 */
#include <string.h>

#include "pipeline/run_internal.h"

/* Profiles for the targets (contract in run_internal.h). */
unsigned stf__verify_profiles(unsigned targets)
{
    return STF_CHECK_CONTAINER | (targets & STF_CONSUMER_ALL);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

/* The first error-severity diagnostic of r, or NULL. */
static const stf_diag *first_error(const stf_check_report *r)
{
    size_t n = stf_check_count(r);
    for (size_t i = 0; i < n; i++) {
        const stf_diag *d = stf_check_diag(r, i);
        if (d && d->severity == STF_SEV_ERROR) return d;
    }
    return NULL;
}

/* Diagnostics name the file they read, the temp file; users know the final one. */
static void name_final(stf_err *err, const char *tmp, const char *final)
{
    if (!err) return;
    char buf[sizeof err->msg];
    size_t tl = strlen(tmp), fl = strlen(final), o = 0;
    const char *p = err->msg, *hit;
    while ((hit = strstr(p, tmp)) != NULL && o + (size_t)(hit - p) + fl < sizeof buf) {
        memcpy(buf + o, p, (size_t)(hit - p));
        o += (size_t)(hit - p);
        memcpy(buf + o, final, fl);
        o += fl;
        p = hit + tl;
    }
    if (p == err->msg) return;
    size_t rest = strlen(p);
    if (o + rest >= sizeof buf) rest = sizeof buf - 1 - o;
    memcpy(buf + o, p, rest);
    buf[o + rest] = '\0';
    memcpy(err->msg, buf, o + rest + 1);
}

/* Check one temp file; on an error diagnostic (not allowed) fill err. */
static int verify_file(stf_check_report ***reports, size_t *nreports, const char *tmp,
                       const char *final, unsigned profiles, int allow, stf_err *err)
{
    stf_ckpt *c = NULL;
    stf_check_report *r = NULL;
    stf_check_opts co;
    int rc = stf_ckpt_open(&c, tmp, NULL, err);
    if (rc) {
        stf__err_prefix(err, "%s: verification: the output does not re-open: ", final);
        /* Our own writer produced it: a reader verdict is a bug, never allowed. */
        if (rc != STF_ENOMEM && rc != STF_EIO) {
            if (err) err->code = STF_EFORMAT;
            rc = STF_EFORMAT;
        }
        goto done;
    }
    stf_check_opts_init(&co);
    co.profiles = profiles;
    rc = stf_check_run(&r, c, &co, err);
    if (rc) goto done;
    stf_check_report **grown =
        stf__realloc(*reports, (*nreports + 1) * sizeof **reports);
    if (!grown) {
        rc = stf__err(err, STF_ENOMEM, "%s: verification: out of memory", final);
        goto done;
    }
    *reports = grown;
    (*reports)[(*nreports)++] = r;
    const stf_diag *d = first_error(r);
    r = NULL;
    if (d && !allow)
        rc = stf__err_rule(err, STF_EFORMAT, d->rule, 0, 0,
                           "%s: the output would not pass the %s profile: %s%s%s%s: %s%s%s "
                           "(nothing was written; --allow-noncompliant keeps it)",
                           final, d->profile, d->rule, d->layer && *d->layer ? " (layer '" : "",
                           d->layer && *d->layer ? d->layer : "",
                           d->layer && *d->layer ? "')" : "", d->message,
                           d->fix && *d->fix ? "; fix: " : "", d->fix ? d->fix : "");
done:
    if (rc) name_final(err, tmp, final);
    stf_check_report_free(r);
    stf_ckpt_free(c);
    return rc;
}

/* Verify every shard of the prepared output (contract in run_internal.h). */
int stf__verify_output(stf_check_report ***reports, size_t *nreports, const stf_writer *w,
                       unsigned targets, int allow_noncompliant, stf_err *err)
{
    unsigned profiles = stf__verify_profiles(targets);
    size_t nf = stf_writer_file_count(w);
    if (nf == 0) return stf__err(err, STF_EINVAL, "verification: the writer was not prepared");
    for (size_t i = 0; i < nf; i++) {
        const char *tmp = stf_writer_temp_path(w, i);
        const char *final = stf_writer_final_path(w, i);
        if (!tmp || !final) return stf__err(err, STF_EINVAL, "verification: no file %zu", i);
        /* The index names the shards by their final names, which do not exist
         * yet; each shard is checked on its own (I7 keeps a layer together). */
        if (ends_with(final, ".index.json")) continue;
        int rc = verify_file(reports, nreports, tmp, final, profiles, allow_noncompliant, err);
        if (rc) return rc;
    }
    return 0;
}

/* Verify a file in place (contract in run_internal.h). */
int stf__verify_path(stf_check_report ***reports, size_t *nreports, const char *path,
                     unsigned targets, int allow_noncompliant, stf_err *err)
{
    return verify_file(reports, nreports, path, path, stf__verify_profiles(targets),
                       allow_noncompliant, err);
}
