/* stfix: entry point and subcommand dispatch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    { "inspect", cmd_inspect, "list the metadata and tensors of a checkpoint" },
    { "check", cmd_check, "validate against the SGLang/ComfyUI acceptance rules" },
    { "rewrite", cmd_rewrite, "rewrite a checkpoint canonically, optionally re-sharded" },
    { "rules", cmd_rules, "check repair recipes (stfix rules lint FILE...)" },
    { "plan", cmd_plan, "show what a recipe would change (stfix plan FILE -r RECIPE)" },
    { "fix", cmd_fix, "repair or convert a checkpoint with a recipe" },
};

static void usage(FILE *to)
{
    fprintf(to, "usage: stfix <command> [options] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(to,
            "\nstfix <command> --help shows a command's options.\n"
            "Environment: STFIX_SIMD=scalar|avx2|avx512 forces a kernel variant.\n"
            "Exit codes: 0 ok, 1 findings at error severity, 2 invalid input,\n"
            "3 usage error, 4 operation failed. See stfix(1).\n");
}

void cli_errorf(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stfix: %s%s", verb ? verb : "", verb ? ": " : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_report(const char *verb, const stf_err *err)
{
    cli_errorf(verb, "%s", err->msg[0] ? err->msg : stf_strerror(err->code));
    switch (err->code) {
    case STF_EFORMAT:
    case STF_ELIMIT:
    case STF_ENOTFOUND:
    case STF_EUNSUPPORTED:
        return EXIT_INVALID;
    case STF_EINVAL:
        return EXIT_USAGE;
    default:
        return EXIT_FAILED;
    }
}

int cli_parse_size(const char *s, unsigned long long *out)
{
    char *end = NULL;
    if (!s || !*s || *s == '-') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return -1;
    unsigned long long mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "B")) mul = 1;
    else if (!strcmp(end, "KB") || !strcmp(end, "kB")) mul = 1000ULL;
    else if (!strcmp(end, "MB")) mul = 1000000ULL;
    else if (!strcmp(end, "GB")) mul = 1000000000ULL;
    else if (!strcmp(end, "KiB")) mul = 1ULL << 10;
    else if (!strcmp(end, "MiB")) mul = 1ULL << 20;
    else if (!strcmp(end, "GiB")) mul = 1ULL << 30;
    else return -1;
    if (v > ~0ULL / mul) return -1;
    *out = v * mul;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("stfix %s\n", STF_VERSION_STRING);
        return 0;
    }
    const char *simd = getenv("STFIX_SIMD");
    if (simd && *simd) {
        stf_simd s;
        stf_err err;
        stf_err_clear(&err);
        if (stf_simd_from_name(&s, simd) || stf_simd_select(s, &err)) {
            cli_errorf(NULL, "STFIX_SIMD=%s: not a usable kernel variant on this CPU "
                             "(scalar, avx2, avx512)", simd);
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    cli_errorf(NULL, "unknown command '%s'", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
