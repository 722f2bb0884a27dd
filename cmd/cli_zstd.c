/*
 * The compressed-output options (--zstd, --zstd-frame, --zstd-grouped,
 * --zstd-verify) shared by every writing command (stfix(1), COMPRESSED
 * FILES): one table entry macro in cli.h and the checks here. Also the
 * note that says how a plain zstd input is read (stfix(1), INPUT FORMATS),
 * which the progress line shows (cli_progress.c, which also prints it with
 * -v when there is no line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* --zstd[=LEVEL] (contract in cli.h). */
int cli_opt_zstd(const char *verb, const char *value, void *target)
{
    cli_zstd *z = target;
    if (!value) {
        z->level = 3;
        return 0;
    }
    char *end = NULL;
    long v = strtol(value, &end, 10);
    if (!*value || *end || v < 1 || v > 22) {
        cli_errorf(verb, "--zstd takes a level from 1 to 22, not '%s'", value);
        return -1;
    }
    z->level = (int)v;
    return 0;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Check, fill the writer options, name the output (contract in cli.h). */
int cli_zstd_apply(const char *verb, cli_zstd *z, stf_write_opts *wo, const char **out)
{
    if (z->grouped && !z->level) z->level = 3;
    if (!z->level) {
        if (z->frame || z->verify) {
            cli_errorf(verb, "--%s needs --zstd", z->frame ? "zstd-frame" : "zstd-verify");
            return EXIT_USAGE;
        }
        return -1;
    }
    wo->zstd_level = z->level;
    wo->zstd_frame = z->frame;
    wo->zstd_grouped = z->grouped;
    wo->zstd_verify = z->verify;
    const char *suf = z->grouped ? ".stz" : ".zst";
    if (!*out || ends_with(*out, suf)) return -1;
    size_t n = strlen(*out);
    z->out = malloc(n + 5);
    if (!z->out) return cli_report_code(verb, STF_ENOMEM);
    memcpy(z->out, *out, n);
    memcpy(z->out + n, suf, 5);
    *out = z->out;
    return -1;
}

void cli_zstd_free(cli_zstd *z)
{
    free(z->out);
    z->out = NULL;
}

/* The note (contract in cli.h). */
size_t cli_zstd_stream_note(char *buf, size_t cap, const stf_ckpt *c, const char *spool_dir,
                            int brief)
{
    size_t pick = (size_t)-1;
    stf_stream_mode m = STF_STREAM_NONE;
    if (cap) buf[0] = '\0';
    for (size_t i = 0; c && i < stf_ckpt_shard_count(c); i++) {
        if (stf_ckpt_shard_storage(c, i) != STF_STORAGE_ZSTD_STREAM) continue;
        stf_stream_mode k = stf_ckpt_shard_stream_mode(c, i);
        if (pick == (size_t)-1 || k > m) {
            pick = i;
            m = k;
        }
    }
    if (pick == (size_t)-1 || !cap) return 0;
    const char *f = stf_ckpt_shard_path(c, pick);
    const char *slash = brief ? strrchr(f, '/') : NULL;
    if (slash && slash[1]) f = slash + 1;
    int n;
    switch (m) {
    case STF_STREAM_IN_ORDER: n = snprintf(buf, cap, "reading %s in order", f); break;
    case STF_STREAM_SPOOLED:
        n = snprintf(buf, cap, "spooling %s to %s (random access)", f,
                     spool_dir ? spool_dir : "a spool file");
        break;
    case STF_STREAM_RESTARTED:
        n = snprintf(buf, cap, "decompressing %s again from the start (random access)", f);
        break;
    default: n = snprintf(buf, cap, "reading %s as a stream", f); break;
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
