/*
 * One line per rule id the check layer can report, for listings, the JSON
 * consumer's lookups and the man page (which documents the same table).
 */
#include <string.h>

#include "check/check_internal.h"

static const struct { const char *id, *title; } TITLES[] = {
    { "R1", "SGLang: _quantization_metadata is not JSON, or nests too deep for json.loads" },
    { "R2", "SGLang: _quantization_metadata is not an object" },
    { "R3", "SGLang: _quantization_metadata lacks a layers object" },
    { "R4", "SGLang: a metadata layers value is not an object" },
    { "R5", "SGLang: markers for one prefix differ across channels or shards" },
    { "R6", "SGLang: marker bytes are not JSON, or nest too deep for json.loads" },
    { "R7", "SGLang: marker JSON is not an object" },
    { "R8", "SGLang: marker dtype numpy cannot convert (uncaught TypeError)" },
    { "R9", "SGLang: quant_format=mxfp8 with incompatible weight/scale" },
    { "R10", "SGLang: quantized weights without a marker" },
    { "R12", "SGLang: a marked layer misses required tensors" },
    { "R13", "SGLang: tensorwise INT8 layer with a non-2-D weight" },
    { "R14", "SGLang: INT8 layer needs I8 weights and F32 scales" },
    { "R15", "SGLang: INT8 weight/scale shapes are not (N, K) and (N, 1)" },
    { "R16", "SGLang: W4A4 layer needs I8 packed weights and F32 scales" },
    { "R17", "SGLang: W4A4 weight/scale shapes are not (N, K/2) and (N,)" },
    { "R18", "SGLang: W4A4 convrot_groupsize not in (16, 64, 256)" },
    { "R19", "SGLang: W4A4 input size not a multiple of 64 and of G" },
    { "R20", "SGLang: two prefixes collide after parameter-name mapping" },
    { "R23", "SGLang: INT8 layer does not set convrot=true" },
    { "R24", "SGLang: INT8 convrot_groupsize missing or not in (16, 64, 256)" },
    { "R25", "SGLang: marked layer is not a Linear (silent corruption)" },
    { "R27", "SGLang: INT8 input size not divisible by the ConvRot group" },
    { "R28", "SGLang (newer trees): no sgl_kernel backend for the ConvRot group/outputs (info)" },
    { "R30", "SGLang: unsupported set of formats" },
    { "R40", "SGLang: weight_scale cannot be loaded into the (N, 1) parameter" },
    { "R44", "SGLang: W4A8 group_size invalid" },
    { "R45", "SGLang: W4A8 needs I8 weights and F8_E4M3 group scales" },
    { "R46", "SGLang: W4A8 needs F32 channel scales" },
    { "R47", "SGLang: W4A8 weight is not 2-D" },
    { "R48", "SGLang: W4A8 weight/scale shapes" },
    { "R49", "SGLang: W4A8 codebook or correction tensor" },
    { "R50", "SGLang: NVFP4 needs U8 weights and F8_E4M3 block scales" },
    { "R51", "SGLang: NVFP4 weight_scale_2 is not a scalar F32" },
    { "R52", "SGLang: NVFP4 weight is not 2-D" },
    { "R53", "SGLang: NVFP4 weight/scale shapes" },
    { "R54", "SGLang: NVFP4 pre_quant_scale" },
    { "R57", "SGLang: W4A4 linear_dtype not int4 or int8" },
    { "R60", "SGLang: W4A8 checkpoint with a non-companion INT8 layer" },
    { "R61", "SGLang: W4A8 layer does not set convrot=true" },
    { "C1", "ComfyUI: quantized weight without a marker (silently value-cast)" },
    { "C2", "ComfyUI: marker without format" },
    { "C3", "ComfyUI: unknown format" },
    { "C4", "ComfyUI: required scales missing" },
    { "C5", "ComfyUI: marker without weight" },
    { "C6", "ComfyUI: ConvRot group size not a power of 4 (fails at first forward)" },
    { "C7", "ComfyUI: ConvRot group size does not divide the input size" },
    { "C8", "ComfyUI: INT8 scale neither scalar nor per output channel" },
    { "C9", "ComfyUI: scale shape breaks the dequantize paths" },
    { "C10", "ComfyUI: weight dtype differs from the format's storage dtype" },
    { "C11", "ComfyUI: scale not F32" },
    { "C12", "ComfyUI: marker on a non-Linear (conv) layer" },
    { "C14", "ComfyUI: keys nested under params" },
    { "C15", "ComfyUI: metadata keys or values misplaced, or overriding tensor markers" },
    { "C16", "ComfyUI: W4A4 layout constraints" },
    { "C19", "ComfyUI accepts what SGLang rejects (truthy convrot, default G)" },
    { "N1", "numeric: non-finite scale values" },
    { "N2", "numeric: zero or negative scale values" },
    { "N3", "numeric: weight with no elements (not probed; fix copies the layer unchanged)" },
    { "H1", "numeric: row versus column quantization (max|q| test)" },
    { "H2", "numeric: Sylvester rather than regular ConvRot rotation" },
};

/* Contract in check.h: static one-line title of a rule id, NULL if unknown. */
const char *stf_check_rule_title(const char *rule)
{
    if (!rule) return NULL;
    for (size_t i = 0; i < sizeof TITLES / sizeof TITLES[0]; i++)
        if (!strcmp(TITLES[i].id, rule)) return TITLES[i].title;
    if (rule[0] == 'S') return "container: safetensors reader rule (safetensors.md §3)";
    if (rule[0] == 'I') return "container: sharded index rule (safetensors.md §6)";
    return NULL;
}
