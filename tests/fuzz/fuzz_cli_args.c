/*
 * libFuzzer harness for the program's command-line helpers (cmd/cli_opts.c
 * and cmd/cli_size.c, linked with the rest of cmd/cli_*.c): the option
 * table parser, the "did you mean" suggestion, sizes ("500MB", "4GiB") and
 * an error's text. The input is an argument vector: strings separated by
 * NUL bytes (at most 16), the first one standing for the verb.
 *
 * Each helper is held against a plain restatement of its contract. The
 * parser: in argv order, "--" ends the options; "--name" must be a name of
 * the table spelt in full, its value after '=' or in the next argument, a
 * flag takes none; "-abc" is a cluster of short options, a valued one
 * taking the rest of the cluster or the next argument; -h and -V end the
 * parse with 0, any problem with 3; the builtins -q, -v, --no-progress and
 * --color[=auto|always|never] are accepted and change nothing recorded
 * here; everything else is an argument, kept in order. It is run twice
 * on each input, so that getopt's state left by one run cannot change the
 * next. A size is decimal digits, an optional fraction ('.' and digits),
 * and an optional unit of any case (B; K, M, G, T, P, E alone or with i or
 * iB: powers of 1024; with B: powers of 1000); its byte count is the exact
 * product, a fraction of a byte dropped, refused when it does not fit in
 * 64 bits.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "fuzz.h"

enum { MAX_ARGS = 16, MAX_INPUT = 4096 };

__extension__ typedef unsigned __int128 u128;

/* The size grammar, restated: 0 and *out; -1 not a size; -2 above
 * 2^64 - 1. The product is worked out in full, a decimal digit array
 * times the unit from its lowest digit, then read back from the top. */

static int ref_size(const char *s, unsigned long long *out)
{
    static const struct { const char *sfx; unsigned long long mul; } units[] = {
        { "", 1 }, { "b", 1 },
        { "k", 1ULL << 10 }, { "ki", 1ULL << 10 }, { "kib", 1ULL << 10 }, { "kb", 1000ULL },
        { "m", 1ULL << 20 }, { "mi", 1ULL << 20 }, { "mib", 1ULL << 20 }, { "mb", 1000000ULL },
        { "g", 1ULL << 30 }, { "gi", 1ULL << 30 }, { "gib", 1ULL << 30 }, { "gb", 1000000000ULL },
        { "t", 1ULL << 40 }, { "ti", 1ULL << 40 }, { "tib", 1ULL << 40 }, { "tb", 1000000000000ULL },
        { "p", 1ULL << 50 }, { "pi", 1ULL << 50 }, { "pib", 1ULL << 50 }, { "pb", 1000000000000000ULL },
        { "e", 1ULL << 60 }, { "ei", 1ULL << 60 }, { "eib", 1ULL << 60 }, { "eb", 1000000000000000000ULL },
    };
    unsigned char dig[MAX_INPUT + 40];
    size_t n = 0, nfrac = 0, i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) dig[n++] = (unsigned char)(s[i] - '0');
    if (i == 0) return -1;
    if (s[i] == '.') {
        size_t f = ++i;
        for (; s[i] >= '0' && s[i] <= '9'; i++) dig[n++] = (unsigned char)(s[i] - '0');
        nfrac = i - f;
        if (!nfrac) return -1;
    }
    char low[8];
    size_t ul = strlen(s + i);
    if (ul >= sizeof low) return -1;
    for (size_t k = 0; k <= ul; k++) low[k] = (char)tolower((unsigned char)s[i + k]);
    unsigned long long mul = 0;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (!strcmp(low, units[u].sfx)) mul = units[u].mul;
    if (!mul) return -1;
    /* prod = dig * mul, most significant first, 20 digits of room. */
    unsigned char prod[MAX_INPUT + 40];
    size_t m = n + 20;
    memset(prod, 0, m);
    u128 carry = 0;
    for (size_t k = m; k-- > 0;) {
        size_t at = k - 20; /* dig[at] lines up with prod[k] */
        u128 v = carry + (k >= 20 ? (u128)dig[at] * mul : 0);
        prod[k] = (unsigned char)(v % 10);
        carry = v / 10;
    }
    u128 v = 0;
    for (size_t k = 0; k < m - nfrac; k++) {
        v = v * 10 + prod[k];
        if (v > ~0ULL) return -2;
    }
    *out = (unsigned long long)v;
    return 0;
}

/* What one parse produced. */
typedef struct result {
    int status; /* -1 go on, 0 help/version, 3 usage */
    int json, strict, jobs;
    const char *out, *mode;
    unsigned long long size;
    int nargs;
    const char *args[MAX_ARGS];
} result;

static int set_mode(const char *verb, const char *v, void *target)
{
    if (strcmp(v, "a") && strcmp(v, "b")) {
        cli_errorf(verb, "--mode takes a or b");
        return -1;
    }
    *(const char **)target = v;
    return 0;
}

/* The parser under test, on a copy of argv. */
static void parse(int argc, char **argv, result *r)
{
    memset(r, 0, sizeof *r);
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE...", .help = "inputs" },
        { .name = "json", .kind = CLI_FLAG, .target = &r->json, .help = "JSON" },
        { .name = "strict", .letter = 's', .kind = CLI_FLAG, .target = &r->strict, .help = "x" },
        { .name = "output", .letter = 'o', .metavar = "OUT", .kind = CLI_STR, .target = &r->out,
          .help = "the output" },
        { .name = "max-shard-size", .metavar = "SIZE", .kind = CLI_SIZE, .target = &r->size,
          .help = "a size" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &r->jobs,
          .min = 1, .max = 1024, .help = "threads" },
        { .name = "mode", .metavar = "M", .kind = CLI_CALL, .call = set_mode, .target = &r->mode,
          .help = "a or b" },
    };
    const cli_cmd cmd = { .verb = "fuzz", .synopsis = "fuzz FILE...", .opts = opts,
                          .nopts = sizeof opts / sizeof opts[0] };
    char *v[MAX_ARGS + 1];
    memcpy(v, argv, sizeof(char *) * (size_t)(argc + 1));
    cli_run_begin("fuzz", 0);
    r->status = cli_opts_parse(&cmd, argc, v, &r->nargs);
    for (int i = 0; r->status < 0 && i < r->nargs; i++) r->args[i] = v[i + 1];
}

/* A CLI_INT value: digits only, 1..1024. */
static int ref_jobs(const char *s, int *out)
{
    int v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > 1024) return -1;
    }
    if (v < 1) return -1;
    *out = v;
    return 0;
}

/* Store a value for the option named `name`: 0, or 3. */
static int ref_apply(result *r, const char *name, const char *v)
{
    if (!strcmp(name, "output")) r->out = v;
    else if (!strcmp(name, "max-shard-size")) return ref_size(v, &r->size) ? 3 : 0;
    else if (!strcmp(name, "jobs")) return ref_jobs(v, &r->jobs) ? 3 : 0;
    else if (!strcmp(name, "mode")) {
        if (strcmp(v, "a") && strcmp(v, "b")) return 3;
        r->mode = v;
    }
    return 0;
}

/* The contract, restated. */
static void ref_parse(int argc, char **argv, result *r)
{
    /* The table's flags, then the builtins that take no value. */
    static const char *const flags[] = { "json", "strict", "quiet", "verbose", "no-progress" };
    static const char *const valued[] = { "output", "max-shard-size", "jobs", "mode" };
    memset(r, 0, sizeof *r);
    r->status = -1;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] == '-' && a[1] == '-') {
            size_t len = strcspn(a + 2, "=");
            int eq = a[2 + len] == '=';
            const char *name = NULL;
            int takes = 0;
            for (size_t k = 0; k < 5; k++)
                if (strlen(flags[k]) == len && !strncmp(a + 2, flags[k], len)) name = flags[k];
            if (len == 5 && !strncmp(a + 2, "color", 5)) {
                /* --color alone, or --color=WHEN; never the next argument */
                const char *w = a + 8;
                if (eq && strcmp(w, "auto") && strcmp(w, "always") && strcmp(w, "never")) {
                    r->status = 3;
                    return;
                }
                continue;
            }
            for (size_t k = 0; k < 4; k++)
                if (strlen(valued[k]) == len && !strncmp(a + 2, valued[k], len))
                    name = valued[k], takes = 1;
            int help = len == 4 && !strncmp(a + 2, "help", 4);
            int version = len == 7 && !strncmp(a + 2, "version", 7);
            if ((help || version) && !eq) {
                r->status = 0;
                return;
            }
            if (!name || (eq && !takes)) {
                r->status = 3;
                return;
            }
            if (!takes) {
                if (!strcmp(name, "json")) r->json = 1;
                else if (!strcmp(name, "strict")) r->strict = 1;
                continue;
            }
            const char *v = eq ? a + 3 + len : i + 1 < argc ? argv[++i] : NULL;
            if (!v || (r->status = ref_apply(r, name, v)) == 3) {
                r->status = 3;
                return;
            }
            r->status = -1;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            for (size_t k = 1; a[k]; k++) {
                char c = a[k];
                if (c == 'h' || c == 'V') {
                    r->status = 0;
                    return;
                }
                if (c == 's') {
                    r->strict = 1;
                    continue;
                }
                if (c == 'q' || c == 'v') continue; /* the builtins -q and -v */
                if (c != 'o' && c != 'j') {
                    r->status = 3;
                    return;
                }
                const char *v = a[k + 1] ? a + k + 1 : i + 1 < argc ? argv[++i] : NULL;
                if (!v || ref_apply(r, c == 'o' ? "output" : "jobs", v)) {
                    r->status = 3;
                    return;
                }
                break;
            }
            continue;
        }
        r->args[r->nargs++] = a;
    }
    for (; i < argc; i++) r->args[r->nargs++] = argv[i];
}

static void same(const result *x, const result *y)
{
    CHECK(x->status == y->status);
    if (x->status >= 0) return;
    CHECK(x->json == y->json && x->strict == y->strict && x->jobs == y->jobs);
    CHECK(x->out == y->out && x->mode == y->mode && x->size == y->size);
    CHECK(x->nargs == y->nargs);
    for (int i = 0; i < x->nargs; i++) CHECK(x->args[i] == y->args[i]);
}

/* The suggestion's contract: the first nearest candidate, a beginning of
 * one counting as 1, and only when it is near enough. */
static void check_suggest(const char *typed, const char *const *cand, size_t n)
{
    size_t len = strlen(typed), limit = len <= 3 ? 1 : len <= 6 ? 2 : 3, best = limit + 1;
    const char *want = NULL;
    for (size_t i = 0; i < n && len; i++) {
        size_t d = cli_edit_distance(typed, cand[i], 64);
        CHECK(d == cli_edit_distance(cand[i], typed, 64));
        CHECK((d == 0) == !strcasecmp(typed, cand[i]));
        if (len >= 2 && d > 1 && !strncasecmp(typed, cand[i], len)) d = 1;
        if (d < best) best = d, want = cand[i];
    }
    CHECK(cli_suggest(typed, cand, n) == want);
}

/* Run f with stdout and stderr sent to /dev/null: the parser prints help
 * and messages, which say nothing here. */
static void quietly(int argc, char **argv, result *r)
{
    fflush(stdout);
    fflush(stderr);
    int o = dup(1), e = dup(2), nul = open("/dev/null", O_WRONLY);
    CHECK(o >= 0 && e >= 0 && nul >= 0);
    dup2(nul, 1);
    dup2(nul, 2);
    parse(argc, argv, r);
    fflush(stdout);
    fflush(stderr);
    dup2(o, 1);
    dup2(e, 2);
    close(o);
    close(e);
    close(nul);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) return 0;
    char buf[MAX_INPUT + 1];
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (size_t at = 0; at <= size && argc < MAX_ARGS; at += strlen(buf + at) + 1)
        argv[argc++] = buf + at;
    argv[argc] = NULL;

    for (int i = 0; i < argc; i++) {
        unsigned long long got = 0, want = 0;
        int rc = cli_parse_size(argv[i], &got), ref = ref_size(argv[i], &want);
        CHECK(rc == ref);
        if (rc == 0) CHECK(got == want);
    }

    result r1, r2, ref;
    quietly(argc, argv, &r1);
    quietly(argc, argv, &r2);
    ref_parse(argc, argv, &ref);
    same(&r1, &ref);
    same(&r2, &ref);

    /* Suggestions among the input's own strings, and among option names. */
    static const char *const names[] = { "json", "strict", "output", "max-shard-size",
                                         "jobs", "help", "version" };
    for (int i = 0; i < argc; i++) {
        check_suggest(argv[i], names, sizeof names / sizeof names[0]);
        check_suggest(argv[i], (const char *const *)argv, (size_t)argc);
    }

    stf_err e;
    stf_err_clear(&e);
    e.code = argc ? -(int)(unsigned char)argv[0][0] % 12 : STF_EIO;
    CHECK(!strcmp(cli_err_text(&e), stf_strerror(e.code)));
    snprintf(e.msg, sizeof e.msg, "%s", argc > 1 ? argv[1] : "x");
    CHECK(e.msg[0] ? cli_err_text(&e) == e.msg : cli_err_text(&e) != NULL);
    return 0;
}
