/*
 * libFuzzer harness for everything that reads a valid container: the Comfy
 * model (marker JSON in both channels, layer grouping), every acceptance
 * profile with the numeric probes, and a plan with the bundled SGLang recipe.
 * Any byte string is tried; files the reader refuses stop there. Findings are
 * never failures; a crash, a leak or an unterminated message is.
 * Build and run: make fuzz FUZZ_SECONDS=60.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "stfix.h"

static stf_recipe *g_recipe;

static void load_recipe(void)
{
    static const char text[] =
        "stfix: 1\n"
        "target: [sglang, comfyui]\n"
        "rules:\n"
        "  - name: reshape\n"
        "    match: {format: int8_tensorwise, scale_shape: [[N]]}\n"
        "    do: reshape-scale\n"
        "  - name: markers\n"
        "    match: {marker: present}\n"
        "    do: set-marker\n"
        "  - name: requant\n"
        "    match: {format: int8_tensorwise, not: {marker: {convrot: true}}}\n"
        "    do: requantize\n";
    stf_err e;
    if (stf_recipe_load_mem(&g_recipe, NULL, text, sizeof text - 1, "fuzz.yaml", &e))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_recipe) load_recipe();
    stf_ckpt *c = NULL;
    stf_err e;
    stf_err_clear(&e);
    if (stf_ckpt_open_mem(&c, data, size, "fuzz.safetensors", NULL, &e)) {
        CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
        return 0;
    }
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.profiles = STF_CHECK_ALL | STF_CHECK_NUMERIC;
    stf_check_report *r = NULL;
    if (stf_check_run(&r, c, &o, &e) == 0) {
        for (size_t i = 0; i < stf_check_count(r); i++) {
            const stf_diag *d = stf_check_diag(r, i);
            CHECK(d && d->message && d->layer && d->fix);
        }
        stf_check_report_free(r);
    }
    stf_plan *p = NULL;
    if (stf_plan_build(&p, c, g_recipe, NULL, &e) == 0) {
        for (size_t i = 0; i < stf_plan_tensor_count(p); i++)
            CHECK(stf_plan_tensor(p, i)->name != NULL);
        stf_plan_free(p);
    } else {
        CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
    }
    stf_ckpt_free(c);
    return 0;
}
