/*
 * Colour in the human text: a finding's severity word (error red, warning
 * yellow, info cyan) and its rule id (bold), nothing else. Whether a
 * stream gets colour is decided here once per stream: --color=always and
 * --color=never decide; otherwise (auto) only a terminal does, and not when
 * NO_COLOR is set to a non-empty value or TERM is "dumb". The JSON
 * documents never call these functions.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static cli_color_mode mode = CLI_COLOR_AUTO;

/* One stream's answer, worked out on first use: -1 not yet known. */
static int out_on = -1, err_on = -1;

/* Set the mode; see cli.h. */
void cli_color_set(cli_color_mode m)
{
    mode = m;
    out_on = err_on = -1;
}

/* Parse WHEN of --color=WHEN; see cli.h. */
int cli_color_parse(const char *when, cli_color_mode *out)
{
    if (!strcmp(when, "auto")) *out = CLI_COLOR_AUTO;
    else if (!strcmp(when, "always")) *out = CLI_COLOR_ALWAYS;
    else if (!strcmp(when, "never")) *out = CLI_COLOR_NEVER;
    else return -1;
    return 0;
}

static int decide(FILE *o)
{
    if (mode != CLI_COLOR_AUTO) return mode == CLI_COLOR_ALWAYS;
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    if (no && *no) return 0;
    if (term && !strcmp(term, "dumb")) return 0;
    int fd = fileno(o);
    return fd >= 0 && isatty(fd);
}

/* Whether `o` gets colour; see cli.h. */
int cli_color_on(FILE *o)
{
    if (o == stdout) return out_on >= 0 ? out_on : (out_on = decide(o));
    if (o == stderr) return err_on >= 0 ? err_on : (err_on = decide(o));
    /* A memory stream or a file: only when asked for. */
    return mode == CLI_COLOR_ALWAYS;
}

/* The SGR sequence that starts a severity's colour. */
static const char *severity_sgr(stf_severity s)
{
    switch (s) {
    case STF_SEV_ERROR: return "\033[1;31m";
    case STF_SEV_WARNING: return "\033[33m";
    default: return "\033[36m";
    }
}

/* The severity's name, coloured, then spaces up to `width`; see cli.h. */
void cli_severity(FILE *o, stf_severity s, int width)
{
    const char *name = stf_severity_name(s);
    int on = cli_color_on(o);
    fprintf(o, "%s%s%s", on ? severity_sgr(s) : "", name, on ? "\033[0m" : "");
    for (int w = (int)strlen(name); w < width; w++) fputc(' ', o);
}

/* The rule id in bold; see cli.h. */
void cli_rule_id(FILE *o, const char *rule)
{
    int on = cli_color_on(o);
    fprintf(o, "%s%s%s", on ? "\033[1m" : "", rule, on ? "\033[0m" : "");
}
