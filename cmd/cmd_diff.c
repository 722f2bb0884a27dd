/*
 * stfix diff A B [--numeric] [-j N] [--max-mem SIZE] [--json]
 *
 * What differs between two checkpoints (stf_diff_run): tensors added,
 * removed and changed (dtype, shape, data bytes), the marker ComfyUI reads
 * per layer, the __metadata__ entries and, with --numeric, the error between
 * the dequantized weights of each quantized layer present in both. The
 * library compares; this file renders. Exit 0 identical, 1 different,
 * otherwise the status of the error (cli_exit.c).
 */
/* Uses the experimental stf_pool_new, stf_pool_free (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Text values longer than this are clipped in the human listing. */
#define SHOWN_MAX 72

/* "DTYPE [d0, d1]" of a tensor. */
static void put_type(FILE *o, const stf_tensor_info *t)
{
    fprintf(o, "%s ", stf_dtype_name(t->dtype));
    cli_json_shape(o, t->shape, t->rank);
}

/* A marker or metadata value, "-" when absent, clipped to SHOWN_MAX bytes
 * (at a character boundary) with its length. */
static void put_value(FILE *o, const char *s, size_t n)
{
    if (!s) {
        fputc('-', o);
        return;
    }
    size_t k = n;
    if (k > SHOWN_MAX) {
        k = SHOWN_MAX;
        while (k && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    }
    cli_put(o, stf_text_escape, s, k);
    if (k < n) fprintf(o, "... (%zu bytes)", n);
}

static void print_human(FILE *o, const char *pa, const char *pb, const stf_diff *d, int numeric)
{
    size_t added = 0, removed = 0, changed = 0;
    fputs("--- ", o);
    cli_text(o, pa);
    fputs("\n+++ ", o);
    cli_text(o, pb);
    fputc('\n', o);
    for (size_t i = 0; i < stf_diff_tensor_count(d); i++) {
        const stf_diff_tensor_info *t = stf_diff_tensor(d, i);
        const char *word = t->what & STF_DIFF_ADDED     ? "added   "
                           : t->what & STF_DIFF_REMOVED ? "removed "
                                                        : "changed ";
        fputs(word, o);
        cli_name(o, t->name, t->name_len);
        fputs("  ", o);
        if (t->what & (STF_DIFF_ADDED | STF_DIFF_REMOVED)) {
            put_type(o, t->a ? t->a : t->b);
            fprintf(o, " (%" PRIu64 " bytes)\n", (t->a ? t->a : t->b)->nbytes);
            added += (t->what & STF_DIFF_ADDED) != 0;
            removed += (t->what & STF_DIFF_REMOVED) != 0;
            continue;
        }
        changed++;
        const char *sep = "";
        if (t->what & STF_DIFF_DTYPE) {
            fprintf(o, "dtype %s -> %s", stf_dtype_name(t->a->dtype), stf_dtype_name(t->b->dtype));
            sep = "; ";
        }
        if (t->what & STF_DIFF_SHAPE) {
            fprintf(o, "%sshape ", sep);
            cli_json_shape(o, t->a->shape, t->a->rank);
            fputs(" -> ", o);
            cli_json_shape(o, t->b->shape, t->b->rank);
            sep = "; ";
        }
        if (t->a->nbytes != t->b->nbytes)
            fprintf(o, "%sbytes %" PRIu64 " -> %" PRIu64, sep, t->a->nbytes, t->b->nbytes);
        else if (t->what & STF_DIFF_BYTES)
            fprintf(o, "%sdata differs from byte %" PRIu64, sep, t->first_byte);
        fputc('\n', o);
    }
    for (size_t i = 0; i < stf_diff_marker_count(d); i++) {
        const stf_diff_text *m = stf_diff_marker(d, i);
        fputs("marker  ", o);
        cli_name(o, m->key, m->key_len);
        fputs("  ", o);
        put_value(o, m->a, m->a_len);
        fputs(" -> ", o);
        put_value(o, m->b, m->b_len);
        fputc('\n', o);
    }
    for (size_t i = 0; i < stf_diff_meta_count(d); i++) {
        const stf_diff_text *m = stf_diff_meta(d, i);
        fputs("meta    ", o);
        cli_name(o, m->key, m->key_len);
        fputs("  ", o);
        put_value(o, m->a, m->a_len);
        fputs(" -> ", o);
        put_value(o, m->b, m->b_len);
        fputc('\n', o);
    }
    for (size_t i = 0; numeric && i < stf_diff_numeric_count(d); i++) {
        const stf_diff_numeric_info *x = stf_diff_numeric(d, i);
        fputs("numeric ", o);
        cli_name(o, x->prefix, x->prefix_len);
        if (!x->compared) {
            fputs("  not compared: ", o);
            cli_text(o, x->why);
            fputc('\n', o);
            continue;
        }
        fprintf(o, "  rel-l2 %.6e  cosine %.9f  max-abs %.6e at (%" PRIu64 ", %" PRIu64 ")\n",
                x->m.rel_l2, x->m.cosine, x->m.max_abs, x->m.max_row, x->m.max_col);
    }
    if (stf_diff_identical(d)) {
        fputs("identical\n", o);
        return;
    }
    fprintf(o, "differ: %zu added, %zu removed, %zu changed, %zu marker(s), %zu metadata\n",
            added, removed, changed, stf_diff_marker_count(d), stf_diff_meta_count(d));
}

/* A number of the numeric results: JSON has no infinity or NaN (null). */
static void put_num(FILE *o, double v)
{
    if (isfinite(v)) fprintf(o, "%.17g", v);
    else fputs("null", o);
}

static void put_text_pair(FILE *o, const char *keyname, const stf_diff_text *m, int first)
{
    fprintf(o, "%s    {\"%s\": ", first ? "\n" : ",\n", keyname);
    cli_json_strn(o, m->key, m->key_len);
    fputs(", \"a\": ", o);
    if (m->a) cli_json_strn(o, m->a, m->a_len);
    else fputs("null", o);
    fputs(", \"b\": ", o);
    if (m->b) cli_json_strn(o, m->b, m->b_len);
    else fputs("null", o);
    fputc('}', o);
}

static void put_side_type(FILE *o, const stf_tensor_info *t)
{
    if (!t) {
        fputs("null", o);
        return;
    }
    fputs("{\"dtype\": ", o);
    cli_json_str(o, stf_dtype_name(t->dtype));
    fputs(", \"shape\": ", o);
    cli_json_shape(o, t->shape, t->rank);
    fprintf(o, ", \"bytes\": %" PRIu64 "}", t->nbytes);
}

static void print_json(FILE *o, const char *pa, const char *pb, const stf_diff *d, int numeric)
{
    size_t added = 0, removed = 0, changed = 0, n = stf_diff_tensor_count(d);
    fputs("{\"a\": ", o);
    cli_json_str(o, pa);
    fputs(", \"b\": ", o);
    cli_json_str(o, pb);
    fprintf(o, ", \"identical\": %s,\n  \"tensors\": [", stf_diff_identical(d) ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        const stf_diff_tensor_info *t = stf_diff_tensor(d, i);
        const char *change = t->what & STF_DIFF_ADDED     ? "added"
                             : t->what & STF_DIFF_REMOVED ? "removed"
                                                          : "changed";
        added += (t->what & STF_DIFF_ADDED) != 0;
        removed += (t->what & STF_DIFF_REMOVED) != 0;
        changed += !(t->what & (STF_DIFF_ADDED | STF_DIFF_REMOVED));
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", o);
        cli_json_strn(o, t->name, t->name_len);
        fprintf(o, ", \"change\": \"%s\", \"a\": ", change);
        put_side_type(o, t->a);
        fputs(", \"b\": ", o);
        put_side_type(o, t->b);
        fprintf(o, ", \"dtype\": %s, \"shape\": %s, \"data\": %s",
                t->what & STF_DIFF_DTYPE ? "true" : "false",
                t->what & STF_DIFF_SHAPE ? "true" : "false",
                t->what & STF_DIFF_BYTES ? "true" : "false");
        if (t->what & STF_DIFF_BYTES) fprintf(o, ", \"first_byte\": %" PRIu64 "}", t->first_byte);
        else fputs(", \"first_byte\": null}", o);
    }
    fputs(n ? "\n  ],\n  \"markers\": [" : "],\n  \"markers\": [", o);
    for (size_t i = 0; i < stf_diff_marker_count(d); i++)
        put_text_pair(o, "layer", stf_diff_marker(d, i), i == 0);
    fputs(stf_diff_marker_count(d) ? "\n  ],\n  \"metadata\": [" : "],\n  \"metadata\": [", o);
    for (size_t i = 0; i < stf_diff_meta_count(d); i++)
        put_text_pair(o, "key", stf_diff_meta(d, i), i == 0);
    fputs(stf_diff_meta_count(d) ? "\n  ],\n  \"numeric\": " : "],\n  \"numeric\": ", o);
    size_t nn = numeric ? stf_diff_numeric_count(d) : 0;
    if (!numeric) fputs("null", o);
    else fputc('[', o);
    for (size_t i = 0; i < nn; i++) {
        const stf_diff_numeric_info *x = stf_diff_numeric(d, i);
        fputs(i ? ",\n    {\"layer\": " : "\n    {\"layer\": ", o);
        cli_json_strn(o, x->prefix, x->prefix_len);
        if (!x->compared) {
            fputs(", \"compared\": false, \"reason\": ", o);
            cli_json_str(o, x->why);
            fputc('}', o);
            continue;
        }
        fputs(", \"compared\": true, \"rel_l2\": ", o);
        put_num(o, x->m.rel_l2);
        fputs(", \"cosine\": ", o);
        put_num(o, x->m.cosine);
        fputs(", \"max_abs\": ", o);
        put_num(o, x->m.max_abs);
        fprintf(o, ", \"max_at\": [%" PRIu64 ", %" PRIu64 "]}", x->m.max_row, x->m.max_col);
    }
    if (numeric) fputs(nn ? "\n  ]" : "]", o);
    fprintf(o, ",\n  \"summary\": {\"added\": %zu, \"removed\": %zu, \"changed\": %zu, "
               "\"markers\": %zu, \"metadata\": %zu}}\n",
            added, removed, changed, stf_diff_marker_count(d), stf_diff_meta_count(d));
}

/* stfix diff: open both, compare, render; 0 identical, 1 different. */
int cmd_diff(int argc, char **argv)
{
    int json = 0, numeric = 0, threads = 0, nargs = 0;
    unsigned long long max_mem = 0;
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "A",
          .help = "the checkpoint compared against (a file or an INDEX.json)" },
        { .kind = CLI_ARG, .metavar = "B", .help = "the checkpoint compared with it" },
        { .name = "numeric", .kind = CLI_FLAG, .target = &numeric,
          .help = "also decode each quantized layer present in both and\n"
                  "give the error of B's weight against A's (rel-L2,\n"
                  "cosine, max |difference|)" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &threads,
          .min = 1, .max = 1024,
          .help = "threads for --numeric (default: one per online core);\n"
                  "the results do not depend on N" },
        { .name = "max-mem", .metavar = "SIZE", .kind = CLI_SIZE, .target = &max_mem, .min = 1,
          .help = "working set of --numeric (default 256MiB, at least one\n"
                  "row of each weight)" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document instead of the listing" },
    };
    const cli_cmd cmd = { .verb = "diff",
                          .synopsis = "diff A B [--numeric] [-j N] [--max-mem SIZE] [--json]",
                          .opts = opts, .nopts = sizeof opts / sizeof opts[0],
                          .input_arg = 1 };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs != 2)
        return cli_usage_error(&cmd, nargs < 2 ? "missing %s" : "unexpected argument '%s'",
                               nargs == 0 ? "A and B" : nargs == 1 ? "B" : argv[3]);
    stf_ckpt *a = NULL, *b = NULL;
    stf_diff *d = NULL;
    stf_pool *pool = NULL;
    stf_err err;
    stf_err_clear(&err);
    if ((ex = cli_ckpt_open(&a, "diff", argv[1], NULL, NULL)) >= 0) goto done;
    cli_run_input(argv[2]);
    if ((ex = cli_ckpt_open(&b, "diff", argv[2], NULL, NULL)) >= 0) goto done;
    stf_diff_opts o;
    stf_diff_opts_init(&o);
    o.numeric = numeric;
    if (max_mem) o.max_mem = max_mem;
    if (numeric) {
        if (stf_pool_new(&pool, (unsigned)threads, &err)) {
            ex = cli_report("diff", &err);
            goto done;
        }
        o.pool = pool;
    }
    cli_progress *pg = cli_progress_start("diff", NULL);
    o.progress = pg ? cli_progress_cb : NULL;
    o.progress_ud = pg;
    int rc = stf_diff_run(&d, a, b, &o, &err);
    cli_progress_end(pg);
    if (rc) {
        ex = cli_report("diff", &err);
        goto done;
    }
    if (json) print_json(stdout, argv[1], argv[2], d, numeric);
    else print_human(stdout, argv[1], argv[2], d, numeric);
    ex = cli_stdout_flush("diff");
    if (ex < 0) ex = stf_diff_identical(d) ? EXIT_OK_ : EXIT_FINDINGS;
done:
    stf_diff_free(d);
    stf_pool_free(pool);
    stf_ckpt_free(b);
    stf_ckpt_free(a);
    return ex;
}
