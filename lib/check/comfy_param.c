/*
 * How ComfyUI reads the parameters of a layer's marker, for the comfyui
 * profile (profile_comfyui.c) and the checks of what ComfyUI raises
 * (profile_comfyui_raises.c) alike.
 */
#include "check/check_internal.h"

/* ComfyUI reads a key at the top level, then under `params` (Linear). */
const stf_pyval *stf__comfy_param(const stf_pyval *mk, const char *key)
{
    const stf_pyval *v = stf_pyval_find(mk, key);
    if (v) return v;
    const stf_pyval *p = stf_pyval_find(mk, "params");
    return (p && stf_pyval_type(p) == STF_PY_DICT) ? stf_pyval_find(p, key) : NULL;
}

/* int(get(key, 256)) as ComfyUI reads convrot_groupsize; -1 where int() raises. */
int64_t stf__comfy_groupsize(const stf_pyval *mk)
{
    const stf_pyval *v = stf__comfy_param(mk, "convrot_groupsize");
    int64_t g = 256;
    if (v && stf_pyval_pyint(&g, v, NULL)) return -1;
    return g;
}
