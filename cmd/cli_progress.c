/*
 * The progress line on stderr: bytes done of the total with the rate, the
 * time left and what is at work (a layer, a tensor, a checkpoint), redrawn
 * in place at most ten times a second. Only when stderr is a terminal, and
 * neither -q nor --no-progress was given: logs and pipes stay clean, and
 * stdout never sees it. The note on how a zstd stream input is read
 * (cli_zstd.c) goes on the line, or with -v, when there is none, on a line
 * of its own. API in cli.h.
 */
/* Uses the experimental stf_name_escape (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Redraw at most this often (seconds), besides the first and last update. */
#define REDRAW 0.1
/* The rate and the time left are shown once this much time has passed. */
#define SETTLE 0.5

struct cli_progress {
    const char *verb;
    const char *unit;          /* NULL: bytes; else the noun counted */
    uint64_t done, total;      /* in the unit */
    uint64_t bdone, btotal;    /* bytes, beside a count (btotal 0: none) */
    double start, last;        /* monotonic seconds: begun, last drawn */
    int drawn;                 /* a line is on the terminal */
    const stf_ckpt *src;       /* its zstd stream inputs are named (cli_zstd.c) */
    const char *spool;
};

static int disabled;

/* The line of the run, while there is one (one at a time): what a message
 * from outside the command, such as cli_wait.c's, clears first. */
static cli_progress *current;

/* --no-progress; see cli.h. */
void cli_progress_disable(void)
{
    disabled = 1;
}

/* Whether a progress line would be shown; see cli.h. */
int cli_progress_enabled(void)
{
    return !disabled && cli_verbosity() > CLI_QUIET && isatty(STDERR_FILENO);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A progress line for `verb`; see cli.h. */
cli_progress *cli_progress_start(const char *verb, const char *unit)
{
    if (!cli_progress_enabled()) return NULL;
    cli_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL; /* no line is no failure */
    p->verb = verb;
    p->unit = unit;
    p->start = now();
    current = p;
    return p;
}

/* "12.3 MiB" of n bytes into buf. */
static const char *size_text(char *buf, size_t cap, double n)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int u = 0;
    while (n >= 1024 && u < 5) {
        n /= 1024;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%.0f B", n);
    else snprintf(buf, cap, "%.1f %s", n, units[u]);
    return buf;
}

/* "1:05" or "2:03:04" of s seconds into buf. */
static const char *time_text(char *buf, size_t cap, double s)
{
    unsigned long t = s > 0 && s < 1e7 ? (unsigned long)(s + 0.5) : 0;
    if (t >= 3600) snprintf(buf, cap, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, cap, "%lu:%02lu", t / 60, t % 60);
    return buf;
}

/* The terminal's width, 80 when it does not say. */
static size_t columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    return 80;
}

static void draw(cli_progress *p, const char *what, size_t what_len, double t)
{
    char line[1024], a[32], b[32], r[32], e[32];
    size_t at = 0, cap = sizeof line;
    uint64_t bd = p->unit ? p->bdone : p->done, bt = p->unit ? p->btotal : p->total;
    at += (size_t)snprintf(line, cap, "stfix: %s: ", p->verb);
    if (p->unit) {
        at += (size_t)snprintf(line + at, cap - at, "%" PRIu64 " of %" PRIu64 " %s", p->done,
                               p->total, p->unit);
        if (bt) at += (size_t)snprintf(line + at, cap - at, ", ");
    }
    if (!p->unit || bt)
        at += (size_t)snprintf(line + at, cap - at, "%s of %s (%d%%)",
                               size_text(a, sizeof a, (double)bd),
                               size_text(b, sizeof b, (double)bt),
                               bt ? (int)((double)bd * 100.0 / (double)bt) : 100);
    double el = t - p->start;
    if (el >= SETTLE && bd && at < cap) {
        double rate = (double)bd / el;
        at += (size_t)snprintf(line + at, cap - at, ", %s/s, ETA %s",
                               size_text(r, sizeof r, rate),
                               time_text(e, sizeof e, bt > bd ? (double)(bt - bd) / rate : 0));
    }
    if (p->src && at + 2 < cap) {
        size_t k = cli_zstd_stream_note(line + at + 2, cap - at - 2, p->src, p->spool, 1);
        if (k) {
            memcpy(line + at, ", ", 2);
            at += 2 + k;
        }
    }
    if (what && at + 2 < cap) {
        at += (size_t)snprintf(line + at, cap - at, "  ");
        at += stf_name_escape(line + at, cap - at, what, what_len);
    }
    if (at >= cap) at = cap - 1;
    /* One terminal line: cut at the width, at a character's start. */
    size_t w = columns() - 1;
    if (at > w) {
        at = w;
        while (at && ((unsigned char)line[at] & 0xC0) == 0x80) at--;
    }
    fprintf(stderr, "\r\033[K%.*s", (int)at, line);
    fflush(stderr);
    p->drawn = 1;
    p->last = t;
}

/* Name how the zstd stream inputs are read; see cli.h. */
void cli_progress_source(cli_progress *p, const stf_ckpt *c, const char *spool_dir)
{
    if (!p) return;
    p->src = c;
    p->spool = spool_dir;
}

/* The same note with -v when no line shows it; see cli.h. */
void cli_zstd_stream_info(const char *verb, const stf_ckpt *c, const char *spool_dir)
{
    char note[4200];
    if (cli_progress_enabled() || !cli_zstd_stream_note(note, sizeof note, c, spool_dir, 0)) return;
    cli_infof(verb, "%s", note);
}

/* Update the count; see cli.h. */
void cli_progress_show(cli_progress *p, uint64_t done, uint64_t total, const char *what,
                       size_t what_len)
{
    if (!p) return;
    p->done = done;
    p->total = total;
    double t = now();
    if (!p->drawn || done >= total || t - p->last >= REDRAW) draw(p, what, what_len, t);
}

/* Bytes beside a count; see cli.h. */
void cli_progress_bytes(cli_progress *p, uint64_t done, uint64_t total)
{
    if (!p) return;
    p->bdone = done;
    p->btotal = total;
}

/* The library's stf_progress_fn; see cli.h. */
void cli_progress_cb(void *ud, uint64_t done, uint64_t total, const char *what, size_t what_len)
{
    cli_progress_show(ud, done, total, what, what_len);
}

/* Clear the line; see cli.h. */
void cli_progress_clear(cli_progress *p)
{
    if (!p || !p->drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = 0;
}

/* Clear the line and free; see cli.h. */
void cli_progress_end(cli_progress *p)
{
    cli_progress_clear(p);
    if (p == current) current = NULL;
    free(p);
}

/* Clear the run's line, whichever it is; see cli.h. */
void cli_progress_clear_current(void)
{
    cli_progress_clear(current);
}

/* See cli.h. */
cli_progress *cli_progress_hook(const char *verb, stf_progress_fn *fn, void **ud)
{
    cli_progress *p = cli_progress_start(verb, NULL);
    *fn = p ? cli_progress_cb : NULL;
    *ud = p;
    return p;
}
