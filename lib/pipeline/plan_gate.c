/*
 * The gate of a repair recipe (stfix-rules(5), kind): a layer is changed
 * only when its consumer refuses or misloads it. The check the recipe's
 * targets name (the container profile and each target's, header and
 * markers only, as check --target runs them) says which layers: those an
 * error-severity finding names, and for a file-level error the layers its
 * message quotes, or every layer (with the tensors no layer owns and the
 * metadata) when it quotes none. The plan leaves every other layer exactly
 * as read, whatever rules select it, unless the recipe's rules ask for the
 * H1 probe and it finds the layer's codes quantized per column, an error
 * check --numeric reports. A conversion recipe has no gate.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/plan_internal.h"

/* A file-level message's quoted names ('...', as Python's repr of a list of
 * layers shows them) that are layers of m: marked in want; *hit when one is. */
static void mark_quoted(unsigned char *want, int *hit, const stf_model *m, const char *msg)
{
    *hit = 0;
    const char *s = msg;
    while (s && (s = strchr(s, '\'')) != NULL) {
        const char *e = strchr(s + 1, '\'');
        if (!e) break;
        size_t li;
        if (stf_model_find_layer(&li, m, s + 1, (size_t)(e - s - 1)) == 0) {
            want[li] = 1;
            *hit = 1;
        }
        s = e + 1;
    }
}

/* Contract in plan_internal.h. */
int stf__gate_init(stf__gate *g, const stf_ckpt *c, const stf_model *m, const stf_recipe *r,
                   stf_pool *pool, stf_err *err)
{
    memset(g, 0, sizeof *g);
    const char *kind = stf_recipe_kind(r);
    if (!kind || strcmp(kind, "repair")) return 0;
    unsigned t = stf_recipe_targets(r) & STF_CONSUMER_ALL;
    size_t nl = stf_model_layer_count(m);
    g->on = 1;
    g->want = stf__calloc(nl ? nl : 1, 1);
    if (!g->want) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    snprintf(g->targets, sizeof g->targets, "%s%s%s",
             t & STF_CONSUMER_SGLANG ? "sglang" : "",
             (t & STF_CONSUMER_SGLANG) && (t & STF_CONSUMER_COMFYUI) ? ", " : "",
             t & STF_CONSUMER_COMFYUI ? "comfyui" : t ? "" : "the container");
    stf_check_opts co;
    stf_check_opts_init(&co);
    co.profiles = STF_CHECK_CONTAINER | t;
    co.pool = pool;
    stf_check_report *cr = NULL;
    int rc = stf_check_run(&cr, c, &co, err);
    if (rc) return rc;
    size_t nd = stf_check_count(cr);
    for (size_t i = 0; i < nd; i++) {
        const stf_diag *d = stf_check_diag(cr, i);
        if (d->severity != STF_SEV_ERROR) continue;
        size_t li;
        int hit = 0;
        if (d->layer_len && stf_model_find_layer(&li, m, d->layer, d->layer_len) == 0) {
            g->want[li] = 1;
            hit = 1;
        } else if (!d->layer_len) {
            mark_quoted(g->want, &hit, m, d->message);
        }
        if (!hit) g->all = 1;
    }
    stf_check_report_free(cr);
    return 0;
}

/* Contract in plan_internal.h. */
int stf__gate_open(const stf__gate *g, size_t li)
{
    return !g->on || g->all || g->want[li];
}

/* Contract in plan_internal.h. */
int stf__gate_note(stf__player *pl, const stf__gate *g, stf_err *err)
{
    char buf[96];
    snprintf(buf, sizeof buf, "left alone: no error finding of %s (repair recipe)", g->targets);
    char *s = stf__strdup(buf);
    if (!s) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    stf__free(pl->summary_store);
    pl->summary_store = s;
    pl->pub.summary = s;
    return 0;
}

/* Contract in plan_internal.h. */
void stf__gate_free(stf__gate *g)
{
    stf__free(g->want);
    g->want = NULL;
}
