/*
 * JSON pieces the subcommands' --json documents share. Strings go through
 * the library's stf_json_quote, so the program has one escaper and it is
 * the one the canonical writer uses (serde escaping, UTF-8 raw, bytes that
 * are not UTF-8 escaped).
 */
/* Uses the experimental stf_json_quote (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <string.h>

#include "cli.h"

/* s[0..n) as a JSON string literal; see cli.h. */
void cli_json_strn(FILE *o, const char *s, size_t n)
{
    /* Out of memory: an empty literal keeps the document parseable. */
    if (cli_put(o, stf_json_quote, s, n)) fputs("\"\"", o);
}

/* s as a JSON string literal, NULL as ""; see cli.h. */
void cli_json_str(FILE *o, const char *s)
{
    cli_json_strn(o, s ? s : "", s ? strlen(s) : 0);
}

/* s as a JSON string literal, NULL as null; see cli.h. */
void cli_json_str_or_null(FILE *o, const char *s)
{
    if (s) cli_json_strn(o, s, strlen(s));
    else fputs("null", o);
}

/* v[0..n) as a JSON array of strings; see cli.h. */
void cli_json_strv(FILE *o, const char *const *v, size_t n)
{
    fputc('[', o);
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", o);
        cli_json_str(o, v[i]);
    }
    fputc(']', o);
}

/* A shape as a JSON array of integers; see cli.h. */
void cli_json_shape(FILE *o, const uint64_t *shape, unsigned rank)
{
    fputc('[', o);
    for (unsigned d = 0; d < rank; d++) fprintf(o, "%s%" PRIu64, d ? ", " : "", shape[d]);
    fputc(']', o);
}

/* The STF_CONSUMER_* bits as a JSON array of names; see cli.h. */
void cli_json_targets(FILE *o, unsigned targets)
{
    int sg = (targets & STF_CONSUMER_SGLANG) != 0, cf = (targets & STF_CONSUMER_COMFYUI) != 0;
    fprintf(o, "[%s%s%s]", sg ? "\"sglang\"" : "", sg && cf ? ", " : "", cf ? "\"comfyui\"" : "");
}

/* One diagnostics-array entry on its own line; see cli.h. */
void cli_json_diag(FILE *o, const stf_diag *d, int first, int with_fix)
{
    fputs(first ? "\n  {\"rule\": " : ",\n  {\"rule\": ", o);
    cli_json_str(o, d->rule);
    fputs(", \"severity\": ", o);
    cli_json_str(o, stf_severity_name(d->severity));
    fputs(", \"layer\": ", o);
    cli_json_strn(o, d->layer, d->layer_len);
    fputs(", \"message\": ", o);
    cli_json_str(o, d->message);
    if (with_fix) {
        fputs(", \"fix\": ", o);
        cli_json_str(o, d->fix);
    }
    fputs(", \"effect\": ", o);
    cli_json_str(o, stf_effect_name(d->effect));
    fputc('}', o);
}

/* The document a --json command prints when it fails; see cli.h. */
void cli_json_error(FILE *o, const char *verb, const char *file, int status, const stf_err *err)
{
    fputs("{\"file\": ", o);
    cli_json_str_or_null(o, file);
    fputs(", \"command\": ", o);
    cli_json_str_or_null(o, verb);
    fprintf(o, ", \"exit\": %d, \"error\": {\"rule\": ", status);
    cli_json_str_or_null(o, err->rule[0] ? err->rule : NULL);
    fputs(", \"message\": ", o);
    cli_json_str(o, cli_err_text(err));
    if (err->has_offset) fprintf(o, ", \"offset\": %" PRIu64, err->offset);
    else fputs(", \"offset\": null", o);
    fputs(", \"code\": ", o);
    cli_json_str_or_null(o, cli_exit_code_name(err->code));
    fputs("}}\n", o);
}
