/*
 * libFuzzer harness for the program's argument helpers (cmd/cli_args.c,
 * linked with the rest of cmd/cli_*.c): sizes ("500MB", "4GiB"), option
 * spellings ("--opt VALUE", "--opt=VALUE", a short alias), --help, and an
 * error's text. The input is an argument vector: strings
 * separated by NUL bytes (at most 16).
 *
 * Each helper is held against a plain restatement of its contract: a size
 * is decimal digits and nothing else before an optional unit (B, KB/kB, MB,
 * GB, KiB, MiB, GiB), and it is refused when the byte count does not fit in
 * 64 bits; an option's value is the text after '=' or the next argument.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"

enum { MAX_ARGS = 16, MAX_INPUT = 4096 };

/* The size grammar, restated: 0 and *out, or -1. */
static int ref_size(const char *s, unsigned long long *out)
{
    static const struct { const char *sfx; unsigned long long mul; } units[] = {
        { "", 1 }, { "B", 1 }, { "KB", 1000ULL }, { "kB", 1000ULL }, { "MB", 1000000ULL },
        { "GB", 1000000000ULL }, { "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "GiB", 1ULL << 30 },
    };
    unsigned long long v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++)
        if (__builtin_mul_overflow(v, 10ULL, &v) ||
            __builtin_add_overflow(v, (unsigned long long)(s[i] - '0'), &v))
            return -1;
    if (i == 0) return -1;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (!strcmp(s + i, units[u].sfx)) return __builtin_mul_overflow(v, units[u].mul, out) ? -1 : 0;
    return -1;
}

static int ref_opt_is(const char *a, const char *shortname, const char *longname)
{
    size_t n = strlen(longname);
    if (shortname && !strcmp(a, shortname)) return 1;
    return !strncmp(a, longname, n) && (a[n] == '\0' || a[n] == '=');
}

static void check_options(int argc, char **argv, const char *shortname, const char *longname)
{
    size_t n = strlen(longname);
    for (int i = 0; i < argc; i++) {
        int is = cli_opt_is(argv[i], shortname, longname);
        CHECK(!!is == ref_opt_is(argv[i], shortname, longname));
        if (!is) continue;
        int j = i;
        const char *v = cli_opt_value(argc, argv, &j, longname);
        if (!strncmp(argv[i], longname, n) && argv[i][n] == '=') {
            CHECK(v == argv[i] + n + 1 && j == i);
        } else if (i + 1 < argc) {
            CHECK(v == argv[i + 1] && j == i + 1);
        } else {
            CHECK(v == NULL && j == i);
        }
    }
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
        CHECK(!!cli_is_help(argv[i]) == (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")));
    }
    check_options(argc, argv, "-r", "--recipe");
    check_options(argc, argv, NULL, "--max-shard-size");
    check_options(argc, argv, "-o", "--output");
    /* Spellings taken from the input itself: "-", "--", "" included. */
    if (argc >= 2) check_options(argc, argv, argv[0], argv[1]);

    stf_err e;
    stf_err_clear(&e);
    e.code = argc ? -(int)(unsigned char)argv[0][0] % 12 : STF_EIO;
    CHECK(!strcmp(cli_err_text(&e), stf_strerror(e.code)));
    snprintf(e.msg, sizeof e.msg, "%s", argc > 1 ? argv[1] : "x");
    CHECK(e.msg[0] ? cli_err_text(&e) == e.msg : cli_err_text(&e) != NULL);
    return 0;
}
