/*
 * libFuzzer harness for recipe loading: any byte string goes through
 * stf_recipe_load_mem. A valid recipe must expose well-formed rules, and its
 * selectors are evaluated against a few layer views (every selector key and
 * predicate runs); an invalid one must come with positioned problems.
 * Build and run: make fuzz FUZZ_SECONDS=60.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "stfix.h"

static const uint64_t w2[2] = { 64, 256 }, w4[4] = { 8, 4, 3, 3 }, s2[2] = { 64, 1 };
static const stf_marker_field fields[3] = {
    { "format", "\"int8_tensorwise\"" }, { "convrot", "true" }, { "convrot_groupsize", "256" }
};

static void views(stf_layer_view v[3])
{
    memset(v, 0, 3 * sizeof v[0]);
    v[0].prefix = "model.blocks.0.attn.qkv";
    v[0].has_weight = 1;
    v[0].weight_dtype = STF_I8;
    v[0].weight_rank = 2;
    v[0].weight_shape = w2;
    v[0].n = 64;
    v[0].k = 256;
    v[0].has_scale = 1;
    v[0].scale_dtype = STF_F32;
    v[0].scale_rank = 2;
    v[0].scale_shape = s2;
    v[0].has_marker = 1;
    v[0].format = "int8_tensorwise";
    v[0].marker_fields = fields;
    v[0].marker_field_count = 3;
    v[0].probe = STF_PROBE_ROW;
    v[0].rotation = STF_ROTATION_REGULAR;
    v[1] = v[0];
    v[1].prefix = "x_embedder.proj";
    v[1].weight_rank = 4;
    v[1].weight_shape = w4;
    v[1].n = 8;
    v[1].k = 36;
    v[1].probe = STF_PROBE_COLUMN;
    v[2].prefix = "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    int rc = stf_recipe_load_mem(&r, &d, data, size, "fuzz.yaml", &err);
    CHECK(memchr(err.msg, '\0', sizeof err.msg) != NULL);
    if (rc == 0) {
        CHECK(r && !d);
        CHECK(strlen(stf_recipe_sha256(r)) == 64);
        CHECK(stf_recipe_targets(r) != 0 && !(stf_recipe_targets(r) & ~STF_CONSUMER_ALL));
        stf_layer_view v[3];
        views(v);
        for (size_t i = 0; i < stf_recipe_rule_count(r); i++) {
            const stf_rule *ru = stf_recipe_rule(r, i);
            CHECK(ru && stf_rule_name(ru) && stf_rule_name(ru)[0]);
            CHECK(stf_rule_action_count(ru) >= 1);
            for (size_t j = 0; j < stf_rule_action_count(ru); j++)
                CHECK(stf_action_name(stf_rule_action(ru, j)->kind) != NULL);
            for (int k = 0; k < 3; k++) {
                int m = 2;
                stf_err merr;
                int mrc = stf_rules_match(&m, ru, &v[k], &merr);
                /* Only a regex search can fail, at its limits, and then selects nothing. */
                CHECK(mrc ? (mrc == STF_ELIMIT || mrc == STF_EFORMAT) && m == 0 &&
                                !strncmp(merr.msg, "fuzz.yaml:", 10)
                          : m == 0 || m == 1);
            }
        }
    } else if (rc == STF_EFORMAT) {
        CHECK(!r && d && stf_recipe_diags_count(d) >= 1);
        for (size_t i = 0; i < stf_recipe_diags_count(d); i++) {
            const char *t = stf_recipe_diags_text(d, i);
            CHECK(!strncmp(t, "fuzz.yaml:", 10));
            /* A problem of the file as a whole (not a recipe at all) has no
             * position, and is the only problem. */
            if (stf_recipe_diags_line(d, i) == 0)
                CHECK(stf_recipe_diags_column(d, i) == 0 &&
                      !strncmp(t, "fuzz.yaml: not a recipe (", 25) &&
                      stf_recipe_diags_count(d) == 1);
            else
                CHECK(stf_recipe_diags_line(d, i) >= 1 && stf_recipe_diags_column(d, i) >= 1);
        }
        /* err.msg holds the first problem, truncated to its buffer. */
        CHECK(!strncmp(err.msg, stf_recipe_diags_text(d, 0), sizeof err.msg - 1));
        for (size_t i = 0; i < stf_recipe_diags_count(d); i++)
            CHECK(!strchr(stf_recipe_diags_text(d, i), '\n'));
    } else {
        CHECK(!r && !d);
        CHECK(rc == STF_ELIMIT || rc == STF_ENOMEM);
    }
    stf_recipe_free(r);
    stf_recipe_diags_free(d);
    return 0;
}
