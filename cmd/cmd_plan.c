/*
 * stfix plan IN -r RECIPE [--json] [--quant-mode MODE] [-j N] [--tp-profile FILE|NAME]
 *
 * Shows what `stfix fix` would do: per layer the rules that matched, their
 * actions, a summary, and every output tensor with its op, dtype, shape and
 * size; then the totals, and "unchanged" when fix would write the input's
 * bytes (stf_plan_changed). Writes nothing. The --json schema is in stfix(1).
 * Exit 0 planned; otherwise the status of the error (cli_exit.c).
 */
/* Uses the experimental stf_text_escape, stf_pool_new, stf_pool_free and
 * stf_plan_layer_peek (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Python's tuple form, as the user sees shapes in PyTorch: (4,) and (2, 3). */
static void shape_tuple(FILE *o, const stf_plan_tensor_info *t)
{
    fputc('(', o);
    for (unsigned i = 0; i < t->rank; i++)
        fprintf(o, i ? ", %" PRIu64 : "%" PRIu64, t->shape[i]);
    if (t->rank == 1) fputc(',', o);
    fputc(')', o);
}

/* The input tensor an output is made from, or NULL. */
static const stf_tensor_info *src_of(const stf_ckpt *c, const stf_plan_tensor_info *t)
{
    return t->src >= 0 ? stf_ckpt_tensor(c, (size_t)t->src) : NULL;
}

static int same_name(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && !memcmp(a, b, alen);
}

/*
 * Layer i's record, its texts in *buf (grown as needed): read one at a
 * time (stf_plan_layer_peek), so that listing a million layers keeps none
 * of their records. -1 when out of memory.
 */
static int layer_at(stf_plan_layer_info *l, const stf_plan *p, size_t i, char **buf, size_t *cap)
{
    size_t need = stf_plan_layer_peek(p, i, l, *buf, *cap);
    if (need == SIZE_MAX) return -1;
    if (need <= *cap) return 0;
    char *nb = realloc(*buf, need);
    if (!nb) return -1;
    *buf = nb;
    *cap = need;
    return stf_plan_layer_peek(p, i, l, *buf, *cap) == need ? 0 : -1;
}

static void count(const stf_plan *p, size_t *changed, size_t *copied)
{
    *changed = *copied = 0;
    for (size_t i = 0; i < stf_plan_tensor_count(p); i++) {
        if (stf_plan_tensor(p, i)->op == STF_OUT_COPY) (*copied)++;
        else (*changed)++;
    }
}

static void print_tensor_line(FILE *o, const stf_ckpt *c, const stf_plan_tensor_info *t)
{
    fprintf(o, "    %-12s ", stf_out_op_name(t->op));
    cli_name(o, t->name, t->name_len);
    fprintf(o, " %s ", stf_dtype_name(t->dtype));
    shape_tuple(o, t);
    fprintf(o, " %" PRIu64 " bytes", t->nbytes);
    const stf_tensor_info *s = src_of(c, t);
    if (s && !same_name(s->name, s->name_len, t->name, t->name_len)) {
        fputs(" (from ", o);
        cli_name(o, s->name, s->name_len);
        fputc(')', o);
    }
    fputc('\n', o);
}

/*
 * Tensor indices grouped by layer, plan order kept within a layer (a
 * counting sort): layer l's tensors are order[first[l] .. first[l + 1]).
 * One pass instead of a scan of every tensor per layer, which made plan's
 * listing quadratic. Returns -1 when out of memory; free both with free().
 */
static int by_layer(const stf_plan *p, size_t **order, size_t **first)
{
    size_t nl = stf_plan_layer_count(p), nt = stf_plan_tensor_count(p);
    size_t *o = calloc(nt ? nt : 1, sizeof *o), *f = calloc(nl + 2, sizeof *f);
    if (!o || !f) {
        free(o);
        free(f);
        return -1;
    }
    for (size_t t = 0; t < nt; t++) {
        size_t l = stf_plan_tensor(p, t)->layer;
        if (l < nl) f[l + 2]++;
    }
    for (size_t l = 0; l < nl; l++) f[l + 2] += f[l + 1];
    for (size_t t = 0; t < nt; t++) {
        size_t l = stf_plan_tensor(p, t)->layer;
        if (l < nl) o[f[l + 1]++] = t;
    }
    *order = o;
    *first = f;
    return 0;
}

static int print_human(FILE *o, const char *file, const char *recipe, const stf_ckpt *c,
                       const stf_plan *p, const cli_tp *tp)
{
    size_t nt = stf_plan_tensor_count(p), *order, *first, cap = 0;
    char *buf = NULL;
    stf_plan_layer_info rec, *l = &rec;
    if (by_layer(p, &order, &first)) return -1;
    cli_textf(o, "plan: %s with %s\n", file, recipe);
    if (tp) cli_tp_describe(o, tp);
    for (size_t i = 0; i < stf_plan_layer_count(p); i++) {
        if (layer_at(l, p, i, &buf, &cap)) {
            free(buf);
            free(order);
            free(first);
            return -1;
        }
        fputs("layer ", o);
        cli_name(o, l->prefix, l->prefix_len);
        if (!same_name(l->prefix, l->prefix_len, l->out_prefix, l->out_prefix_len)) {
            fputs(" -> ", o);
            cli_name(o, l->out_prefix, l->out_prefix_len);
        }
        fputc('\n', o);
        fputs("  rules:", o);
        if (!l->nrules) fputs(" (none)", o);
        for (size_t j = 0; j < l->nrules; j++) cli_textf(o, "%s %s", j ? "," : "", l->rules[j]);
        fputs("\n  actions:", o);
        if (!l->nactions) fputs(" (none)", o);
        for (size_t j = 0; j < l->nactions; j++)
            fprintf(o, "%s %s", j ? "," : "", stf_action_name(l->actions[j]->kind));
        fputc('\n', o);
        cli_textf(o, "  summary: %s\n", l->summary);
        for (size_t k = first[i]; k < first[i + 1]; k++)
            print_tensor_line(o, c, stf_plan_tensor(p, order[k]));
    }
    free(buf);
    free(order);
    free(first);
    int any = 0;
    for (size_t t = 0; t < nt; t++) {
        const stf_plan_tensor_info *x = stf_plan_tensor(p, t);
        if (x->layer != SIZE_MAX) continue;
        if (!any++) fputs("other tensors:\n", o);
        print_tensor_line(o, c, x);
    }
    for (size_t i = 0; i < stf_plan_dropped_count(p); i++) {
        size_t len = 0;
        const char *d = stf_plan_dropped_n(p, i, &len);
        fputs("dropped: ", o);
        cli_name(o, d, len);
        fputc('\n', o);
    }
    for (size_t i = 0; i < stf_plan_meta_count(p); i++) {
        const stf_meta_entry *e = stf_plan_meta(p, i);
        fputs("metadata: ", o);
        cli_name(o, e->key, e->key_len);
        fputs(" = ", o);
        cli_put(o, stf_text_escape, e->value, e->value_len);
        fputc('\n', o);
    }
    size_t changed, copied;
    count(p, &changed, &copied);
    fprintf(o, "totals: %zu tensor(s) changed, %zu copied, %zu dropped; %" PRIu64
               " bytes to write, %" PRIu64 " bytes copied\n",
            changed, copied, stf_plan_dropped_count(p), stf_plan_bytes_total(p),
            stf_plan_bytes_copied(p));
    /* As fix says it: the output would be the input's bytes, unstamped. */
    if (!stf_plan_changed(p))
        fputs("unchanged: the recipe changes nothing; fix would write the input's bytes, "
              "unstamped\n", o);
    return 0;
}

static cJSON *layer_json(const stf_plan_layer_info *l)
{
    cJSON *x = cli_j_object(0), *acts = cli_j_array(0);
    cli_j_add(x, "prefix", cli_j_strn(l->prefix, l->prefix_len), 0);
    cli_j_add(x, "out_prefix", cli_j_strn(l->out_prefix, l->out_prefix_len), 0);
    cli_j_add(x, "rules", cli_j_strv(l->rules, l->nrules), 0);
    for (size_t k = 0; k < l->nactions; k++)
        cli_j_push(acts, cli_j_str(stf_action_name(l->actions[k]->kind)));
    cli_j_add(x, "actions", acts, 0);
    cli_j_add(x, "summary", cli_j_str(l->summary), 0);
    cli_j_add(x, "changed", cli_j_bool(l->changed), 0);
    cli_j_add(x, "requantize", cli_j_bool(l->requantize), 0);
    cli_j_add(x, "format", cli_j_str_or_null(l->format), 0);
    cli_j_add(x, "group", cli_j_u64(l->group), 0);
    cli_j_add(x, "mode", l->requantize ? cli_j_str(stf_quant_mode_name(l->mode)) : cli_j_null(), 0);
    return x;
}

static cJSON *tensor_json(const stf_ckpt *c, const stf_plan_tensor_info *x,
                          const stf_plan_layer_info *l)
{
    const stf_tensor_info *s = src_of(c, x);
    cJSON *e = cli_j_object(0);
    cli_j_add(e, "name", cli_j_strn(x->name, x->name_len), 0);
    cli_j_add(e, "op", cli_j_str(stf_out_op_name(x->op)), 0);
    cli_j_add(e, "dtype", cli_j_str(stf_dtype_name(x->dtype)), 0);
    cli_j_add(e, "shape", cli_j_shape(x->shape, x->rank), 0);
    cli_j_add(e, "bytes", cli_j_u64(x->nbytes), 0);
    cli_j_add(e, "src", s ? cli_j_strn(s->name, s->name_len) : cli_j_null(), 0);
    cli_j_add(e, "layer", l ? cli_j_strn(l->prefix, l->prefix_len) : cli_j_null(), 0);
    return e;
}

/*
 * The plan as one document on one line, written as it is made: a layer or
 * tensor at a time, so that a plan of a million layers is never a tree in
 * memory. -1 when out of memory (the document is cut short there).
 */
static int print_json(FILE *o, const char *file, const char *recipe, const stf_recipe *r,
                      const stf_ckpt *c, const stf_plan *p, const cli_tp *tp)
{
    cli_jw w;
    char *buf = NULL;
    size_t cap = 0;
    stf_plan_layer_info rec;
    int oom = 0;
    cli_jw_begin(&w, o, 0);
    cli_jw_text(&w, "{");
    cli_jw_member(&w, 1, "file", cli_j_str(file));
    cli_jw_member(&w, 0, "recipe", cli_j_str(recipe));
    cli_jw_member(&w, 0, "recipe_sha256", cli_j_str(stf_recipe_sha256(r)));
    cli_jw_member(&w, 0, "targets", cli_j_targets(stf_plan_targets(p)));
    cJSON *tpo = cli_j_object(0);
    cli_tp_profile_add(tpo, tp);
    cli_jw_member(&w, 0, "tp", tpo);
    cli_jw_member(&w, 0, "changed", cli_j_bool(stf_plan_changed(p)));
    cli_jw_text(&w, ", \"layers\": [");
    for (size_t i = 0; i < stf_plan_layer_count(p) && !w.failed && !oom; i++) {
        if ((oom = layer_at(&rec, p, i, &buf, &cap))) break;
        if (i) cli_jw_text(&w, ", ");
        cli_jw_value(&w, layer_json(&rec));
    }
    cli_jw_text(&w, "], \"tensors\": [");
    for (size_t t = 0; t < stf_plan_tensor_count(p) && !w.failed && !oom; t++) {
        const stf_plan_tensor_info *x = stf_plan_tensor(p, t);
        if (x->layer != SIZE_MAX && (oom = layer_at(&rec, p, x->layer, &buf, &cap))) break;
        if (t) cli_jw_text(&w, ", ");
        cli_jw_value(&w, tensor_json(c, x, x->layer != SIZE_MAX ? &rec : NULL));
    }
    cli_jw_text(&w, "]");
    free(buf);
    cJSON *dropped = cli_j_array(0), *meta = cli_j_object(0), *tot = cli_j_object(0);
    for (size_t i = 0; i < stf_plan_dropped_count(p); i++) {
        size_t len = 0;
        const char *d = stf_plan_dropped_n(p, i, &len);
        cli_j_push(dropped, cli_j_strn(d, len));
    }
    cli_jw_member(&w, 0, "dropped", dropped);
    for (size_t i = 0; i < stf_plan_meta_count(p); i++) {
        const stf_meta_entry *e = stf_plan_meta(p, i);
        cli_j_add_raw_key(meta, e->key, e->key_len, cli_j_strn(e->value, e->value_len));
    }
    cli_jw_member(&w, 0, "metadata", meta);
    size_t changed, copied;
    count(p, &changed, &copied);
    cli_j_add(tot, "tensors", cli_j_u64(stf_plan_tensor_count(p)), 0);
    cli_j_add(tot, "changed", cli_j_u64(changed), 0);
    cli_j_add(tot, "copied", cli_j_u64(copied), 0);
    cli_j_add(tot, "dropped", cli_j_u64(stf_plan_dropped_count(p)), 0);
    cli_j_add(tot, "bytes_total", cli_j_u64(stf_plan_bytes_total(p)), 0);
    cli_j_add(tot, "bytes_copied", cli_j_u64(stf_plan_bytes_copied(p)), 0);
    cli_jw_member(&w, 0, "totals", tot);
    /* A remote input's "network" member, last. */
    cJSON *net = cli_j_object(0);
    cli_net_json("plan", file, c, net);
    for (cJSON *m; net && (m = net->child) != NULL;)
        cli_jw_member(&w, 0, m->string, cJSON_DetachItemViaPointer(net, m));
    cJSON_Delete(net);
    cli_jw_text(&w, "}");
    if (!w.failed && !oom) fputc('\n', o);
    return cli_jw_end(&w) || oom ? -1 : 0;
}

/* stfix plan: parse options, load the recipe, open, plan, print; returns
 * the exit status (0 planned, else the error's, cli_exit.c). */
int cmd_plan(int argc, char **argv)
{
    const char *recipe = NULL, *profile = NULL;
    int json = 0, nargs = 0, threads = 0;
    cli_tp tp;
    memset(&tp, 0, sizeof tp);
    stf_plan_opts po;
    stf_plan_opts_init(&po);
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE|INDEX.json",
          .help = "a .safetensors file or a *.safetensors.index.json" },
        { .name = "recipe", .letter = 'r', .metavar = "RECIPE", .kind = CLI_STR,
          .target = &recipe,
          .help = "a recipe file (stfix-rules(5)), or the NAME of one on\n"
                  "the search path (see `stfix rules list`)" },
        CLI_REGEX_STEPS_OPT,
        { .name = "quant-mode", .metavar = "MODE", .kind = CLI_CALL,
          .call = cli_opt_quant_mode, .target = &po,
          .help = "cuda, fp32 or eager: overrides the recipe's mode" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &threads,
          .min = 1, .max = 1024,
          .help = "threads for the probes (default: one per online core);\n"
                  "the plan does not depend on N" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document instead of the listing" },
        { .name = "tp-profile", .metavar = "NAME", .kind = CLI_STR, .target = &profile,
          .help = "parallel styles for requantize's tp: a bundled profile\n"
                  "NAME or a profile file (default: detected from the\n"
                  "layer names)" },
        CLI_NET_OPTS
    };
    const cli_cmd cmd = {
        .verb = "plan",
        .synopsis = "plan FILE|INDEX.json -r RECIPE [--json] [--quant-mode MODE] [-j N]",
        .opts = opts, .nopts = sizeof opts / sizeof opts[0], .input_arg = 1
    };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs > 1) return cli_usage_error(&cmd, "only one checkpoint per run");
    if (!nargs) return cli_usage_error(&cmd, "missing FILE");
    if (!recipe) return cli_usage_error(&cmd, "no recipe given (-r RECIPE)");
    const char *file = argv[1];
    stf_err err;
    stf_err_clear(&err);
    stf_recipe *r = NULL;
    stf_ckpt *c = NULL;
    stf_plan *p = NULL;
    stf_pool *pool = NULL;
    ex = cli_recipe_load_arg(&r, "plan", recipe);
    if (ex >= 0) return ex;
    if ((ex = cli_ckpt_open(&c, "plan", file, NULL, NULL)) >= 0) goto done;
    if ((ex = cli_tp_attach(&tp, "plan", profile, c, r)) >= 0) goto done;
    if (stf_pool_new(&pool, (unsigned)threads, &err)) {
        ex = cli_report("plan", &err);
        goto done;
    }
    po.pool = pool;
    /* The probes read the weights they judge: a progress line meanwhile. */
    cli_progress *pg = cli_progress_hook("plan", &po.progress, &po.progress_ud);
    int failed = stf_plan_build(&p, c, r, &po, &err);
    cli_progress_end(pg);
    if (failed) {
        ex = cli_report("plan", &err);
        goto done;
    }
    if (!json) cli_net_report("plan", file, c, NULL, NULL);
    if (json ? print_json(stdout, file, recipe, r, c, p, &tp)
             : print_human(stdout, file, recipe, c, p,
                           profile || cli_recipe_uses_tp(r) ? &tp : NULL)) {
        ex = cli_report_code("plan", STF_ENOMEM);
        goto done;
    }
    ex = cli_stdout_flush("plan");
    if (ex < 0) ex = EXIT_OK_;
done:
    stf_plan_free(p);
    stf_pool_free(pool);
    stf_ckpt_free(c);
    stf_recipe_free(r);
    cli_tp_free(&tp);
    return ex;
}
