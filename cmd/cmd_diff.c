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

/* A shape as "[d0, d1]". */
static void put_shape(FILE *o, const stf_tensor_info *t)
{
    char b[256];
    cli_shape_text(b, sizeof b, t->shape, t->rank);
    fputs(b, o);
}

/* "DTYPE [d0, d1]" of a tensor. */
static void put_type(FILE *o, const stf_tensor_info *t)
{
    fprintf(o, "%s ", stf_dtype_name(t->dtype));
    put_shape(o, t);
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

/* One "LABEL KEY  OLD -> NEW" line of a marker or metadata change. */
static void put_change(FILE *o, const char *label, const stf_diff_text *m)
{
    fputs(label, o);
    cli_name(o, m->key, m->key_len);
    fputs("  ", o);
    put_value(o, m->a, m->a_len);
    fputs(" -> ", o);
    put_value(o, m->b, m->b_len);
    fputc('\n', o);
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
            put_shape(o, t->a);
            fputs(" -> ", o);
            put_shape(o, t->b);
            sep = "; ";
        }
        if (t->a->nbytes != t->b->nbytes)
            fprintf(o, "%sbytes %" PRIu64 " -> %" PRIu64, sep, t->a->nbytes, t->b->nbytes);
        else if (t->what & STF_DIFF_BYTES)
            fprintf(o, "%sdata differs from byte %" PRIu64, sep, t->first_byte);
        fputc('\n', o);
    }
    for (size_t i = 0; i < stf_diff_marker_count(d); i++)
        put_change(o, "marker  ", stf_diff_marker(d, i));
    for (size_t i = 0; i < stf_diff_meta_count(d); i++)
        put_change(o, "meta    ", stf_diff_meta(d, i));
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

/* A marker or metadata entry that differs. */
static cJSON *text_pair(const char *keyname, const stf_diff_text *m)
{
    cJSON *e = cli_j_object(0);
    cli_j_add(e, keyname, cli_j_strn(m->key, m->key_len), 0);
    cli_j_add(e, "a", m->a ? cli_j_strn(m->a, m->a_len) : cli_j_null(), 0);
    cli_j_add(e, "b", m->b ? cli_j_strn(m->b, m->b_len) : cli_j_null(), 0);
    return e;
}

/* One side of a tensor: {dtype, shape, bytes}, or null. */
static cJSON *side(const stf_tensor_info *t)
{
    if (!t) return cli_j_null();
    cJSON *e = cli_j_object(0);
    cli_j_add(e, "dtype", cli_j_str(stf_dtype_name(t->dtype)), 0);
    cli_j_add(e, "shape", cli_j_shape(t->shape, t->rank), 0);
    cli_j_add(e, "bytes", cli_j_u64(t->nbytes), 0);
    return e;
}

/* The comparison as one document (stfix(1), JSON OUTPUT); -1 when out of
 * memory. */
static int print_json(FILE *o, const char *pa, const stf_ckpt *ca, const char *pb,
                      const stf_ckpt *cb, const stf_diff *d, int numeric)
{
    size_t added = 0, removed = 0, changed = 0;
    cJSON *doc = cli_j_object(0), *tensors = cli_j_array(CLI_J_LINES);
    cli_j_add(doc, "a", cli_j_str(pa), 0);
    cli_j_add(doc, "b", cli_j_str(pb), 0);
    cli_j_add(doc, "identical", cli_j_bool(stf_diff_identical(d)), 0);
    for (size_t i = 0; i < stf_diff_tensor_count(d); i++) {
        const stf_diff_tensor_info *t = stf_diff_tensor(d, i);
        int add = (t->what & STF_DIFF_ADDED) != 0, rem = (t->what & STF_DIFF_REMOVED) != 0;
        added += (size_t)add;
        removed += (size_t)rem;
        changed += (size_t)(!add && !rem);
        cJSON *e = cli_j_object(0);
        cli_j_add(e, "name", cli_j_strn(t->name, t->name_len), 0);
        cli_j_add(e, "change", cli_j_str(add ? "added" : rem ? "removed" : "changed"), 0);
        cli_j_add(e, "a", side(t->a), 0);
        cli_j_add(e, "b", side(t->b), 0);
        cli_j_add(e, "dtype", cli_j_bool((t->what & STF_DIFF_DTYPE) != 0), 0);
        cli_j_add(e, "shape", cli_j_bool((t->what & STF_DIFF_SHAPE) != 0), 0);
        cli_j_add(e, "data", cli_j_bool((t->what & STF_DIFF_BYTES) != 0), 0);
        cli_j_add(e, "first_byte",
                  t->what & STF_DIFF_BYTES ? cli_j_u64(t->first_byte) : cli_j_null(), 0);
        cli_j_push(tensors, e);
    }
    cli_j_add(doc, "tensors", tensors, CLI_J_BREAK);
    cJSON *markers = cli_j_array(CLI_J_LINES), *meta = cli_j_array(CLI_J_LINES);
    for (size_t i = 0; i < stf_diff_marker_count(d); i++)
        cli_j_push(markers, text_pair("layer", stf_diff_marker(d, i)));
    cli_j_add(doc, "markers", markers, CLI_J_BREAK);
    for (size_t i = 0; i < stf_diff_meta_count(d); i++)
        cli_j_push(meta, text_pair("key", stf_diff_meta(d, i)));
    cli_j_add(doc, "metadata", meta, CLI_J_BREAK);
    cJSON *num = numeric ? cli_j_array(CLI_J_LINES) : cli_j_null();
    for (size_t i = 0; numeric && i < stf_diff_numeric_count(d); i++) {
        const stf_diff_numeric_info *x = stf_diff_numeric(d, i);
        cJSON *e = cli_j_object(0);
        cli_j_add(e, "layer", cli_j_strn(x->prefix, x->prefix_len), 0);
        cli_j_add(e, "compared", cli_j_bool(x->compared), 0);
        if (!x->compared) {
            cli_j_add(e, "reason", cli_j_str(x->why), 0);
        } else {
            cJSON *at = cli_j_array(0);
            cli_j_add(e, "rel_l2", cli_j_num(x->m.rel_l2, 17), 0);
            cli_j_add(e, "cosine", cli_j_num(x->m.cosine, 17), 0);
            cli_j_add(e, "max_abs", cli_j_num(x->m.max_abs, 17), 0);
            cli_j_push(at, cli_j_u64(x->m.max_row));
            cli_j_push(at, cli_j_u64(x->m.max_col));
            cli_j_add(e, "max_at", at, 0);
        }
        cli_j_push(num, e);
    }
    cli_j_add(doc, "numeric", num, CLI_J_BREAK);
    cJSON *sum = cli_j_object(0);
    cli_j_add(sum, "added", cli_j_u64(added), 0);
    cli_j_add(sum, "removed", cli_j_u64(removed), 0);
    cli_j_add(sum, "changed", cli_j_u64(changed), 0);
    cli_j_add(sum, "markers", cli_j_u64(stf_diff_marker_count(d)), 0);
    cli_j_add(sum, "metadata", cli_j_u64(stf_diff_meta_count(d)), 0);
    cli_j_add(doc, "summary", sum, CLI_J_BREAK);
    cli_net_json_pair("diff", pa, ca, pb, cb, doc);
    return cli_json_print(o, doc);
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
          .help = "working set of --numeric (default 256MiB; a row too\n"
                  "wide for it goes in column pieces)" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document instead of the listing" },
        CLI_NET_OPTS
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
    cli_progress *pg = cli_progress_hook("diff", &o.progress, &o.progress_ud);
    int rc = stf_diff_run(&d, a, b, &o, &err);
    cli_progress_end(pg);
    if (rc) {
        ex = cli_report("diff", &err);
        goto done;
    }
    if (!json) {
        print_human(stdout, argv[1], argv[2], d, numeric);
    } else if (print_json(stdout, argv[1], a, argv[2], b, d, numeric)) {
        ex = cli_report_code("diff", STF_ENOMEM);
        goto done;
    }
    ex = cli_stdout_flush("diff");
    if (ex < 0) ex = stf_diff_identical(d) ? EXIT_OK_ : EXIT_FINDINGS;
done:
    stf_diff_free(d);
    stf_pool_free(pool);
    stf_ckpt_free(b);
    stf_ckpt_free(a);
    return ex;
}
