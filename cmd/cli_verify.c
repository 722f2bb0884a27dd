/*
 * Verifying one output against its input and recipe, for `stfix verify`
 * and `stfix batch --verify-report`: re-plan, re-run in memory, compare, and say
 * what differs (text on stdout, or one JSON document).
 */
/* Uses the experimental stf_plan_verify and stf_batch_shard_size (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int is_index(const char *p)
{
    size_t n = strlen(p);
    return n >= 11 && !strcmp(p + n - 11, ".index.json");
}

/* The verification as one document; -1 when out of memory. */
static int print_json(FILE *o, const cli_verify_args *a, const stf_recipe *rc,
                      const stf_verify_report *r)
{
    cJSON *doc = cli_j_object(0), *files = cli_j_array(CLI_J_LINES),
          *diffs = cli_j_array(CLI_J_LINES);
    cli_j_add(doc, "output", cli_j_str(a->out), 0);
    cli_j_add(doc, "input", cli_j_str(a->in), 0);
    cli_j_add(doc, "recipe", cli_j_str(a->recipe), 0);
    cli_j_add(doc, "recipe_sha256", cli_j_str(stf_recipe_sha256(rc)), 0);
    cli_j_add(doc, "stamp", cli_j_str_or_null(stf_verify_stamp(r)), 0);
    cli_j_add(doc, "stamp_ok", cli_j_bool(stf_verify_stamp_ok(r)), 0);
    cli_j_add(doc, "identical", cli_j_bool(stf_verify_ok(r)), 0);
    for (size_t i = 0; i < stf_verify_file_count(r); i++) {
        const stf_verify_file *f = stf_verify_file_at(r, i);
        cJSON *x = cli_j_object(0);
        cli_j_add(x, "path", cli_j_str(f->path), 0);
        cli_j_add(x, "expected_sha256", cli_j_str_or_null(f->expected[0] ? f->expected : NULL),
                  0);
        cli_j_add(x, "actual_sha256", cli_j_str_or_null(f->actual[0] ? f->actual : NULL), 0);
        cli_j_push(files, x);
    }
    cli_j_add(doc, "files", files, CLI_J_BREAK);
    for (size_t i = 0; i < stf_verify_diff_count(r); i++) {
        const stf_verify_diff *d = stf_verify_diff_at(r, i);
        cJSON *x = cli_j_object(0);
        cli_j_add(x, "file", cli_j_str(d->file), 0);
        cli_j_add(x, "tensor", d->tensor_len ? cli_j_strn(d->tensor, d->tensor_len) : cli_j_null(),
                  0);
        cli_j_add(x, "what", cli_j_str(d->what), 0);
        if (d->detail) cli_j_add(x, "detail", cli_j_str(d->detail), 0);
        if (d->has_offset) cli_j_add(x, "offset", cli_j_u64(d->offset), 0);
        cli_j_push(diffs, x);
    }
    cli_j_add(doc, "differences", diffs, CLI_J_BREAK);
    return cli_json_print(o, doc);
}

/* The file-level difference of `path` ("missing", "unreadable"), if any. */
static const stf_verify_diff *file_diff(const stf_verify_report *r, const char *path)
{
    for (size_t i = 0; i < stf_verify_diff_count(r); i++) {
        const stf_verify_diff *d = stf_verify_diff_at(r, i);
        if (!d->tensor_len && !strcmp(d->file, path) &&
            (!strcmp(d->what, "missing") || !strcmp(d->what, "unreadable")))
            return d;
    }
    return NULL;
}

/* A difference inside a file: a tensor's, or the header's; at `indent`. */
static void print_diff(FILE *o, const stf_verify_diff *d, const char *indent, int with_file)
{
    if (!d->tensor_len) {
        cli_textf(o, "%s%s%s%s\n", indent, with_file ? d->file : "", with_file ? ": " : "",
                  d->what);
        return;
    }
    cli_textf(o, "%stensor '", indent);
    cli_name(o, d->tensor, d->tensor_len);
    cli_textf(o, "': %s\n", d->what);
}

/* Each file the conversion makes, with its differences under it: one
 * shard's lines together. */
static void print_text(FILE *o, const cli_verify_args *a, const stf_recipe *rc,
                       const stf_plan *p, const stf_verify_report *r)
{
    int ok = stf_verify_ok(r);
    cli_textf(o, "verify %s (from %s, recipe %s): %s\n", a->out, a->in, a->recipe,
              ok ? "identical" : "DIFFERENT");
    for (size_t i = 0; i < stf_verify_file_count(r); i++) {
        const stf_verify_file *f = stf_verify_file_at(r, i);
        const stf_verify_diff *fd = f->actual[0] ? NULL : file_diff(r, f->path);
        if (fd && !strcmp(fd->what, "unreadable")) {
            cli_textf(o, "  unreadable %s", f->path);
            if (fd->detail) cli_textf(o, ": %s", fd->detail);
            else if (fd->has_offset) fprintf(o, " at byte %llu", (unsigned long long)fd->offset);
            fputc('\n', o);
        } else {
            cli_textf(o, "  %s %s\n",
                      !f->actual[0] ? "missing  " : strcmp(f->expected, f->actual) ? "differs  "
                                                                                  : "identical",
                      f->path);
        }
        /* Unknown where the output differs: verify keeps no made bytes. */
        fprintf(o, "    expected sha256 %s\n", f->expected[0] ? f->expected : "unknown");
        if (f->actual[0] && strcmp(f->expected, f->actual))
            fprintf(o, "    actual   sha256 %s\n", f->actual);
        for (size_t k = 0; k < stf_verify_diff_count(r); k++) {
            const stf_verify_diff *d = stf_verify_diff_at(r, k);
            if (d != fd && !strcmp(d->file, f->path)) print_diff(o, d, "    ", 0);
        }
    }
    /* A difference in no file of the conversion's (none is expected). */
    for (size_t k = 0; k < stf_verify_diff_count(r); k++) {
        const stf_verify_diff *d = stf_verify_diff_at(r, k);
        size_t i = 0;
        while (i < stf_verify_file_count(r) && strcmp(d->file, stf_verify_file_at(r, i)->path)) i++;
        if (i == stf_verify_file_count(r)) print_diff(o, d, "  ", 1);
    }
    const char *st = stf_verify_stamp(r);
    if (!stf_plan_changed(p))
        cli_textf(o, "  stamp: %s (the recipe changes nothing: the output is the input's bytes)\n",
                  st ? "the input's" : "none");
    else if (!st)
        cli_textf(o, "  stamp: none (expected stfix.recipe_sha256 %s)\n", stf_recipe_sha256(rc));
    else if (!stf_verify_stamp_ok(r))
        cli_textf(o, "  stamp: stfix.recipe_sha256 %s, but the recipe's is %s\n", st,
                  stf_recipe_sha256(rc));
}

/* One verification (contract in cli.h). */
int cli_verify_one(const char *verb, const cli_verify_args *a, stf_pool *pool, FILE *o)
{
    stf_recipe *rc = NULL;
    stf_ckpt *c = NULL;
    stf_plan *p = NULL;
    stf_verify_report *r = NULL;
    char *stem = NULL;
    stf_err err;
    stf_err_clear(&err);
    int ex;
    /* The JSON error names the file that failed: the recipe, then IN (every
     * later error is the conversion's; what is wrong with OUT is a
     * difference, not an error). */
    cli_run_input(a->recipe);
    if ((ex = cli_recipe_load_arg(&rc, verb, a->recipe)) >= 0) goto done;
    cli_run_input(a->in);
    if ((ex = cli_ckpt_open(&c, verb, a->in, NULL, NULL)) >= 0) goto done;
    stf_plan_opts po;
    stf_plan_opts_init(&po);
    po.pool = pool;
    if (stf_plan_build(&p, c, rc, &po, &err)) {
        ex = cli_report(verb, &err);
        goto done;
    }
    stf_run_opts ro;
    stf_run_opts_init(&ro);
    ro.pool = pool;
    const char *out = a->out;
    if (is_index(a->out)) {
        /* The writer's STEM path: it adds the index and the shards. */
        if (!(stem = strdup(a->out))) {
            ex = cli_report_code(verb, STF_ENOMEM);
            goto done;
        }
        stem[strlen(stem) - 11] = '\0';
        out = stem;
    }
    /* batch splits a sharded input at its largest shard, whatever it made. */
    if (a->max_shard_size) ro.max_shard_size = a->max_shard_size;
    else if (a->batch_layout || stem) ro.max_shard_size = stf_batch_shard_size(c);
    if (stf_plan_verify(&r, p, out, &ro, &err)) {
        ex = cli_report(verb, &err);
        goto done;
    }
    if (a->json) {
        if (print_json(o, a, rc, r)) {
            ex = cli_report_code(verb, STF_ENOMEM);
            goto done;
        }
    } else {
        print_text(o, a, rc, p, r);
    }
    ex = stf_verify_ok(r) ? EXIT_OK_ : EXIT_FINDINGS;
done:
    free(stem);
    stf_verify_report_free(r);
    stf_plan_free(p);
    stf_ckpt_free(c);
    stf_recipe_free(rc);
    return ex;
}
