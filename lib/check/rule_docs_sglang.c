/*
 * The R rules of the rule catalogue: what the `sglang` profile
 * (profile_sglang.c, profile_sglang_formats.c) checks, what SGLang does with
 * such a file, and how to repair it. One entry per rule id the profile can
 * report, in numeric order; titles are those of rule_titles.c.
 */
#include "check/rule_doc_internal.h"

/* SGLang raises at its first failing rule, before it reads any weight. */
#define STOPS                                                                                 \
    "The model does not load: SGLang stops at the first failing layer before reading any "    \
    "weight, so each retry reveals one more; stfix reports them all."

#define QMETA_FIX "Rebuild the entry from the tensor markers with a set-marker rule (metadata: " \
                  "mirror), or remove it (metadata: drop); SGLang needs only the tensor markers."

#define MARKER_FIX "Rewrite the marker as canonical U8 JSON bytes with set-marker, which still " \
                   "reads JSON under a trailing NUL or a BF16 label. Bytes that hold no marker " \
                   "at all, zeroed, empty or not UTF-8 (unreadable-marker), are rebuilt with " \
                   "infer-marker from what the file determines, or given a format by set-marker."

#define W4A8_NODECODE "stfix cannot decode W4A8 layers, so re-export the layer from the original " \
                      "weights, or store it unquantized."

#define NVFP4_NODECODE "stfix cannot decode NVFP4 layers, so re-export the layer from the " \
                       "original weights, or store it unquantized."

const stf_rule_doc stf__rule_docs_sglang[] = {
    {
        "R1", "error",
        "SGLang: _quantization_metadata is not JSON, or nests too deep for json.loads",
        "Each file's __metadata__ entry _quantization_metadata, when present, must parse as JSON "
        "the way Python's json.loads parses it, with arrays and objects nested at most 995 deep.",
        "SGLang parses the entry while inspecting the checkpoint and turns a JSONDecodeError into "
        "ValueError 'Invalid _quantization_metadata in PATH'. Deeper nesting makes json.loads "
        "raise RecursionError, which SGLang does not catch.",
        "The model does not load; SGLang names the file, or dies with a RecursionError traceback.",
        QMETA_FIX,
        "set-marker",
        "refuses",
    },
    {
        "R2", "error",
        "SGLang: _quantization_metadata is not an object",
        "The parsed _quantization_metadata must be a JSON object, not an array, string, number "
        "or null.",
        "SGLang raises ValueError '_quantization_metadata in PATH must contain an object' while "
        "inspecting the checkpoint.",
        "The model does not load; SGLang names the file.",
        QMETA_FIX,
        "set-marker",
        "refuses",
    },
    {
        "R3", "error",
        "SGLang: _quantization_metadata lacks a layers object",
        "The _quantization_metadata object must hold a key layers whose value is an object "
        "mapping layer prefixes to markers.",
        "SGLang raises ValueError '_quantization_metadata in PATH must contain a layers object' "
        "while inspecting the checkpoint.",
        "The model does not load; SGLang names the file.",
        QMETA_FIX,
        "set-marker",
        "refuses",
    },
    {
        "R4", "error",
        "SGLang: a metadata layers value is not an object",
        "Every value under _quantization_metadata.layers must be a marker object; a bare string "
        "such as \"int8_tensorwise\" is not one.",
        "SGLang raises ValueError 'Comfy quantization metadata for PREFIX must be an object'.",
        "The model does not load. ComfyUI also fails on such an entry.",
        "A string value (string-metadata-value) is wrapped as {\"format\": value} by set-marker, "
        "which mirrors the result into both channels; or remove the metadata entry with "
        "metadata: drop.",
        "set-marker",
        "refuses",
    },
    {
        "R5", "error",
        "SGLang: markers for one prefix differ across channels or shards",
        "All markers for one layer prefix must be equal as Python dicts: the metadata entry, the "
        "P.comfy_quant tensor and copies in other shards. Key order does not matter; any extra key "
        "or different value does.",
        "SGLang compares each marker with the one already seen for the prefix and raises "
        "ValueError 'Conflicting Comfy quantization markers for PREFIX'.",
        "The model does not load in SGLang, while ComfyUI silently takes the metadata channel's "
        "marker, so the file may seem fine there.",
        "Regenerate both channels from one canonical marker with set-marker; prefer chooses the "
        "channel that wins. Underscore keys copied from SGLang's in-memory markers "
        "(underscore-keys) are deleted on the way.",
        "set-marker",
        "refuses",
    },
    {
        "R6", "error",
        "SGLang: marker bytes are not JSON, or nest too deep for json.loads",
        "The bytes of every P.comfy_quant tensor must decode as UTF-8 JSON with at most 995 levels "
        "of nesting; NUL padding, truncated text or invalid UTF-8 fail.",
        "SGLang runs json.loads on the tensor's bytes and turns JSONDecodeError or "
        "UnicodeDecodeError into ValueError 'Invalid Comfy quantization marker KEY in PATH'; too "
        "deep nesting raises a RecursionError it does not catch.",
        "The model does not load; SGLang names the marker tensor, or dies with a traceback.",
        MARKER_FIX,
        "set-marker, infer-marker",
        "refuses",
    },
    {
        "R7", "error",
        "SGLang: marker JSON is not an object",
        "The JSON decoded from a P.comfy_quant tensor must be an object, not a string, number, "
        "array or null.",
        "SGLang raises ValueError 'Comfy quantization marker KEY must contain a JSON object'.",
        "The model does not load; SGLang names the marker tensor.",
        MARKER_FIX,
        "set-marker, infer-marker",
        "refuses",
    },
    {
        "R8", "error",
        "SGLang: marker dtype numpy cannot convert (uncaught TypeError)",
        "Every P.comfy_quant tensor must have a dtype numpy can represent, U8 in practice; BF16, "
        "the F8 types and the sub-byte float types are not.",
        "SGLang reads the marker with get_tensor(key).numpy(), which raises TypeError for such a "
        "dtype; SGLang does not catch it.",
        "Loading ends in a TypeError traceback that names neither the marker nor the layer.",
        MARKER_FIX,
        "set-marker",
        "refuses",
    },
    {
        "R9", "error",
        "SGLang: quant_format=mxfp8 with incompatible weight/scale",
        "Only when the quant_format metadata entry of the files says mxfp8 (any case): every "
        "weight stored as F8_E4M3, I8 or U8 must be a 2-D F8_E4M3 (N, K) tensor with K divisible "
        "by 32 and a U8 (N, K/32) weight_scale.",
        "SGLang then treats every such weight as MXFP8 and synthesises a marker for it; any other "
        "layout raises ValueError 'MXFP8 layer PREFIX has incompatible weight/scale metadata: "
        "WEIGHT and SCALE'.",
        "The model does not load; in a file that also holds INT8 layers every one of them fails.",
        "Do not write quant_format: stfix fix never copies it to its output. Give each MXFP8 layer "
        "a comfy_quant marker instead, with set-marker and format mxfp8.",
        "set-marker",
        "refuses",
    },
    {
        "R10", "error",
        "SGLang: quantized weights without a marker",
        "Every layer whose P.weight is stored as F8_E4M3, I8 or U8 must have a marker in either "
        "channel; F8_E5M2 weights are exempt. The message lists the first five prefixes in sorted "
        "order, as SGLang does.",
        "SGLang refuses quantized codes it has no format for and raises ValueError 'Quantized "
        "weights are missing comfy_quant metadata: [...]'.",
        "The model does not load in SGLang; ComfyUI instead value-casts the codes into a float "
        "weight and runs a silently broken model.",
        "Add the markers the file determines (missing-markers): infer-marker takes the layer's "
        "_quantization_metadata entry, the file's other markers when they agree and fit the "
        "layer, or the format its tensors alone spell out (FP8, NVFP4, MXFP8), and refuses the "
        "layer otherwise; set-marker infers int8_tensorwise for an I8 weight with an F32 scale "
        "and takes an explicit format otherwise. SGLang's INT8 path runs ConvRot layers only "
        "(R23), so for SGLang requantize such a layer instead (sglang-repair does). Or dequantize "
        "the layer with exclude.",
        "infer-marker, set-marker, requantize, exclude",
        "refuses",
    },
    {
        "R12", "error",
        "SGLang: a marked layer misses required tensors",
        "A layer marked int8_tensorwise, convrot_w4a4 or float8_e4m3fn needs P.weight and "
        "P.weight_scale; asym_w4a8_int8 needs P.weight, P.weight_s_rel and P.weight_s_channel; "
        "nvfp4 needs P.weight, P.weight_scale and P.weight_scale_2, in any shard.",
        "SGLang raises ValueError 'Comfy layer PREFIX is missing checkpoint tensors: [...]' with "
        "the absent names.",
        STOPS,
        "A marker on a layer without a weight, or on a bias or norm, is an orphan "
        "(orphan-tensors): remove it with drop. A quantized weight without its scales cannot be "
        "recovered; re-export the layer.",
        "drop",
        "refuses",
    },
    {
        "R13", "error",
        "SGLang: tensorwise INT8 layer with a non-2-D weight",
        "An int8_tensorwise layer with an I8 weight and a scalar F32 scale (shape ()) must have a "
        "2-D weight.",
        "SGLang accepts a scalar scale as tensorwise only on a matrix and raises ValueError 'Comfy "
        "tensorwise INT8 layer PREFIX needs a 2D weight, got SHAPE'.",
        STOPS,
        "A conv or other non-matrix weight cannot be an SGLang INT8 layer (quantized-conv): "
        "dequantize it with exclude, which also drops its marker and scale.",
        "exclude",
        "refuses",
    },
    {
        "R14", "error",
        "SGLang: INT8 layer needs I8 weights and F32 scales",
        "An int8_tensorwise layer, other than the scalar-scale case of R13, must store P.weight as "
        "I8 and P.weight_scale as F32.",
        "SGLang's INT8 kernels take int8 codes and float32 scales; it raises ValueError 'Comfy "
        "INT8 layer PREFIX needs I8 weights and F32 scales, got WDTYPE and SDTYPE'.",
        STOPS,
        "BF16 or F16 scales (low-precision-scales) widen exactly with cast-scale. A U8 weight "
        "holding int8 codes (storage-dtype-mismatch) is relabelled as I8 with relabel, which the "
        "recipe asserts is right; any other weight dtype needs re-export.",
        "cast-scale, relabel",
        "refuses",
    },
    {
        "R15", "error",
        "SGLang: INT8 weight/scale shapes are not (N, K) and (N, 1)",
        "An int8_tensorwise layer with a non-scalar scale must have a 2-D (N, K) weight and an "
        "(N, 1) weight_scale: one scale per output row, stored as a column.",
        "SGLang allocates weight_scale as an (N, 1) parameter and raises ValueError 'Comfy INT8 "
        "layer PREFIX has incompatible weight/scale shapes: WSHAPE and SSHAPE' for any other "
        "shape.",
        "The model does not load in SGLang. ComfyUI loads an (N,) or (1, N) scale, but its "
        "dequantizing paths (LoRA, fallbacks) apply it along the wrong axis, silently when N "
        "equals K.",
        "An (N,) or (1, N) scale (flattened-scales) becomes (N, 1) with a header-only "
        "reshape-scale once the row/column probe confirms rows. Input-axis scales "
        "(column-scales) and grouped scales need requantize.",
        "reshape-scale, requantize",
        "refuses",
    },
    {
        "R16", "error",
        "SGLang: W4A4 layer needs I8 packed weights and F32 scales",
        "A convrot_w4a4 layer must store P.weight, two int4 codes per byte, as I8 and "
        "P.weight_scale as F32.",
        "SGLang raises ValueError 'Comfy W4A4 layer PREFIX needs I8 packed weights and F32 "
        "scales, got WDTYPE and SDTYPE'.",
        STOPS,
        "Widen BF16 or F16 scales with cast-scale (low-precision-scales); relabel a U8 weight "
        "holding the same packed bytes as I8 (storage-dtype-mismatch).",
        "cast-scale, relabel",
        "refuses",
    },
    {
        "R17", "error",
        "SGLang: W4A4 weight/scale shapes are not (N, K/2) and (N,)",
        "A convrot_w4a4 layer must have a 2-D packed (N, K/2) weight and a 1-D (N,) "
        "weight_scale.",
        "SGLang's W4A4 path takes one scale per output as a vector and raises ValueError 'Comfy "
        "W4A4 layer PREFIX has incompatible weight/scale shapes: WSHAPE and SSHAPE'.",
        STOPS,
        "An (N, 1) scale becomes (N,) with a header-only reshape-scale (to: vector); any other "
        "shape needs requantize.",
        "reshape-scale, requantize",
        "refuses",
    },
    {
        "R18", "error",
        "SGLang: W4A4 convrot_groupsize not in (16, 64, 256)",
        "A convrot_w4a4 marker's convrot_groupsize (256 when absent) must convert with Python's "
        "int() and be 16, 64 or 256.",
        "SGLang's W4A4 kernels exist for those group sizes only; it raises ValueError 'Comfy W4A4 "
        "layer PREFIX has unsupported convrot_groupsize=G', or int()'s own ValueError for a "
        "non-numeric string.",
        STOPS,
        "Write the group size as a JSON integer. Weights rotated with another size "
        "(sylvester-rotation, G of 128 or 512) must be requantized with format convrot_w4a4.",
        "requantize",
        "refuses",
    },
    {
        "R19", "error",
        "SGLang: W4A4 input size not a multiple of 64 and of G",
        "For a convrot_w4a4 layer with a valid group size G, the input size K, twice the packed "
        "weight's second dimension, must be a multiple of 64 (the activation group) and of G.",
        "SGLang raises ValueError 'Comfy W4A4 layer PREFIX has input size K, incompatible with "
        "quant_group_size=64 and convrot_groupsize=G'.",
        STOPS,
        "W4A4 cannot serve such a layer (indivisible-group). Requantize it as int8_tensorwise, "
        "which a W4A4 file accepts and which needs only a group size dividing K, or keep it in "
        "BF16 with exclude.",
        "requantize, exclude",
        "refuses",
    },
    {
        "R20", "error",
        "SGLang: two prefixes collide after parameter-name mapping",
        "No two marked layer prefixes may become equal once a leading model.diffusion_model. is "
        "removed, as SGLang's parameter-name mapping does for ComfyUI all-in-one files.",
        "SGLang maps every marker prefix to its module name and raises ValueError 'Comfy markers "
        "collide after parameter mapping at NAME' on the second one.",
        STOPS,
        "Keep one spelling per layer. Metadata keyed by the other spelling "
        "(metadata-prefix-mismatch) is merged onto the tensors' prefix with rename; a file that "
        "stores a layer twice must be re-exported with one copy.",
        "rename",
        "refuses",
    },
    {
        "R23", "error",
        "SGLang: INT8 layer does not set convrot=true",
        "Every int8_tensorwise layer of an INT8 or W4A4 checkpoint must set convrot to JSON true "
        "at the top level of its marker; 1, \"true\" or a value nested under params do not count.",
        "SGLang's serialized INT8 path (kitchen_int8, convrot_int8 in newer trees) has only "
        "ConvRot kernels and raises ValueError 'Serialized kitchen_int8 layer PREFIX must set "
        "convrot=true' while building its config.",
        "The model does not load in SGLang, though ComfyUI runs the same layer unrotated, so a "
        "file can work there and fail here.",
        "Requantize the layer with ConvRot, or dequantize it with exclude. Hoisting a nested "
        "params (nested-params) with set-marker is right only when the weights really are "
        "rotated.",
        "requantize, exclude",
        "refuses",
    },
    {
        "R24", "error",
        "SGLang: INT8 convrot_groupsize missing or not in (16, 64, 256)",
        "Every int8_tensorwise layer of an INT8 or W4A4 checkpoint must declare convrot_groupsize "
        "as a number equal to 16, 64 or 256 (256.0 passes; a string, a boolean or no value does "
        "not).",
        "This path has no default group size: SGLang raises ValueError 'Serialized kitchen_int8 "
        "layer PREFIX must declare convrot_groupsize in (16, 64, 256), got VALUE' while building "
        "its config.",
        STOPS,
        "Write the group size the weights were rotated with, as an integer. Weights rotated "
        "with 128 or 512 (sylvester-rotation) must be requantized.",
        "requantize",
        "refuses",
    },
    {
        "R25", "error",
        "SGLang: marked layer is not a Linear (silent corruption)",
        "A marked layer whose weight has three or more dimensions (a conv kernel) is not a "
        "Linear. stfix sees only the file, so a quantized 2-D embedding passes this rule.",
        "SGLang gives modules that are not LinearBase no quant method; the DiT loader then "
        "copy_-casts the quantized codes into the float parameter without any check.",
        "The model loads and produces wrong output with no error: the codes are used as "
        "weights, unscaled.",
        "Dequantize the layer with exclude, which also drops its marker and scales "
        "(quantized-conv, quantized-high-precision-layer). flatten-conv is right only where the "
        "model runs the layer as a Linear over unfolded patches.",
        "exclude, flatten-conv",
        "silent",
    },
    {
        "R27", "error",
        "SGLang: INT8 input size not divisible by the ConvRot group",
        "For an int8_tensorwise layer with a valid group size G and a 2-D weight, the input size "
        "K (the weight's second dimension) must be divisible by G.",
        "ConvRot rotates activations in blocks of G; SGLang raises 'Serialized kitchen_int8 layer "
        "PREFIX has input size K, which is not divisible by its ConvRot group size G' when it "
        "creates the layer.",
        "The model does not load; SGLang fails while building the model, before weights load.",
        "Requantize with a group size that divides K (indivisible-group): requantize tries its "
        "group_sizes in order, and on_indivisible: exclude keeps a layer none divides in BF16.",
        "requantize",
        "refuses",
    },
    {
        "R28", "info",
        "SGLang (newer trees): no sgl_kernel backend for the ConvRot group/outputs (info)",
        "For an int8_tensorwise layer with a valid group size G and a 2-D weight: G is 16, or "
        "the output size N is not divisible by 8.",
        "Newer SGLang trees pick a ConvRot INT8 backend per layer: sgl_kernel serves G of 64, "
        "128, 256 or 512 with N divisible by 8, comfy_kitchen serves 16, 64 and 256.",
        "The layer loads and computes correctly, but only on comfy_kitchen: without "
        "comfy-kitchen installed newer SGLang reports that the layer has no kernel, and it may "
        "run slower than on sgl_kernel.",
        "Prefer G of 64 or 256: requantize with group_sizes [256, 64]. An output size not "
        "divisible by 8 cannot be changed.",
        "requantize",
        "note",
    },
    {
        "R30", "error",
        "SGLang: unsupported set of formats",
        "The sorted set of format values over all markers must be one SGLang resolves: "
        "int8_tensorwise; asym_w4a8_int8 or convrot_w4a4, each alone or with int8_tensorwise; "
        "float8_e4m3fn; nvfp4, alone or with int8_tensorwise; or mxfp8. A marker without format "
        "counts as None.",
        "SGLang builds one quantization config per checkpoint from that set and raises "
        "NotImplementedError 'Unsupported Comfy quantization format(s): LIST' for any other, "
        "such as INT8 mixed with FP8 or a format name it does not know.",
        "The model does not load; the message lists the formats, not the layers.",
        "Add a missing format with set-marker (missing-format); rename an alias with an identical "
        "layout with rewrite-format (nonstandard-format-name); convert the rest to one supported "
        "set, e.g. all INT8 ConvRot with requantize.",
        "set-marker, rewrite-format, requantize",
        "refuses",
    },
    {
        "R40", "error",
        "SGLang: weight_scale cannot be loaded into the (N, 1) parameter",
        "An int8_tensorwise layer of an INT8 or W4A4 checkpoint with a 2-D weight and a scalar "
        "weight_scale (shape ()).",
        "SGLang allocates weight_scale as an (N, 1) parameter; the loader reshapes the scalar to "
        "(1,) and its size assertion fails: 'Tried to load weights of size torch.Size([1])to a "
        "parameter of size torch.Size([N, 1])'.",
        "Inspection passes (R13 accepts the scalar), and loading then stops with an "
        "AssertionError that does not name the layer.",
        "A scalar scale on a ConvRot layer (scalar-scale-convrot) does not fit the per-row "
        "parameter: requantize the layer rowwise.",
        "requantize",
        "refuses",
    },
    {
        "R44", "error",
        "SGLang: W4A8 group_size invalid",
        "An asym_w4a8_int8 marker's group_size (16 when absent) must convert with Python's int() "
        "and be at least 4.",
        "SGLang raises ValueError 'Comfy W4A8 layer PREFIX has invalid group_size=G', or int()'s "
        "own ValueError for a non-numeric string.",
        STOPS,
        "Write the group size the weights were quantized with, as a JSON integer. " W4A8_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R45", "error",
        "SGLang: W4A8 needs I8 weights and F8_E4M3 group scales",
        "An asym_w4a8_int8 layer must store P.weight, two int4 codes per byte, as I8 and "
        "P.weight_s_rel, its group scales, as F8_E4M3.",
        "SGLang raises ValueError 'Comfy W4A8 layer PREFIX needs I8 weights and FP8 group scales, "
        "got WDTYPE and SDTYPE'.",
        STOPS,
        "A U8 weight holding the same packed bytes is relabelled as I8 with relabel "
        "(storage-dtype-mismatch). relabel does not label weight_s_rel, so FP8 group scales "
        "stored as U8 must be re-exported.",
        "relabel",
        "refuses",
    },
    {
        "R46", "error",
        "SGLang: W4A8 needs F32 channel scales",
        "P.weight_s_channel, the per-output scales of an asym_w4a8_int8 layer, must be F32.",
        "SGLang raises ValueError 'Comfy W4A8 layer PREFIX needs F32 channel scales, got DTYPE'.",
        STOPS,
        "Store the channel scales as F32; cast-scale widens only weight_scale. " W4A8_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R47", "error",
        "SGLang: W4A8 weight is not 2-D",
        "The packed weight of an asym_w4a8_int8 layer must be 2-D.",
        "SGLang raises ValueError 'Comfy W4A8 layer PREFIX needs a 2D packed weight, got SHAPE'.",
        STOPS,
        "A conv or other non-matrix layer cannot be W4A8 in SGLang (quantized-conv). "
        W4A8_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R48", "error",
        "SGLang: W4A8 weight/scale shapes",
        "With a packed (N, K/2) weight and group size g, P.weight_s_rel must be (N, K/g) and "
        "P.weight_s_channel (N,).",
        "SGLang raises ValueError 'Comfy W4A8 layer PREFIX has incompatible weight/scale shapes: "
        "WSHAPE, SSHAPE, and CSHAPE'.",
        STOPS,
        "The scales must run along the input axis in groups of g, with one channel scale per "
        "output. " W4A8_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R49", "error",
        "SGLang: W4A8 codebook or correction tensor",
        "When present, P.weight_codebook of an asym_w4a8_int8 layer must be F32 (16,) and "
        "P.weight_correction F32 (K/g, N).",
        "SGLang raises ValueError 'Comfy W4A8 layer PREFIX needs an F32[16] codebook' or 'Comfy "
        "W4A8 layer PREFIX has an incompatible correction tensor'.",
        STOPS,
        "Store the codebook as 16 F32 values and the correction as F32 (K/g, N). " W4A8_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R50", "error",
        "SGLang: NVFP4 needs U8 weights and F8_E4M3 block scales",
        "An nvfp4 layer must store P.weight, two FP4 codes per byte, as U8 and P.weight_scale, "
        "its block scales, as F8_E4M3.",
        "SGLang raises ValueError 'Comfy NVFP4 layer PREFIX needs U8 packed weights and FP8 block "
        "scales, got WDTYPE and SDTYPE'.",
        STOPS,
        "relabel produces neither label for an NVFP4 layer. " NVFP4_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R51", "error",
        "SGLang: NVFP4 weight_scale_2 is not a scalar F32",
        "P.weight_scale_2, the global scale of an nvfp4 layer, must be F32 with shape () or (1,).",
        "SGLang raises ValueError 'Comfy NVFP4 layer PREFIX needs a scalar F32 weight_scale_2, "
        "got DTYPESHAPE'.",
        STOPS,
        "Store the global scale as one F32 value; cast-scale widens only weight_scale. "
        NVFP4_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R52", "error",
        "SGLang: NVFP4 weight is not 2-D",
        "The packed weight of an nvfp4 layer must be 2-D.",
        "SGLang raises ValueError 'Comfy NVFP4 layer PREFIX needs a 2D packed weight, got "
        "SHAPE'.",
        STOPS,
        "A conv or other non-matrix layer cannot be NVFP4 in SGLang (quantized-conv). "
        NVFP4_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R53", "error",
        "SGLang: NVFP4 weight/scale shapes",
        "With a packed (N, K/2) weight, K must be divisible by 16 and P.weight_scale must be "
        "(N, K/16): one scale per 16 inputs in plain row-major order.",
        "SGLang reads unswizzled block scales and raises ValueError 'Comfy NVFP4 layer PREFIX has "
        "incompatible weight/scale shapes: WSHAPE and SSHAPE'.",
        STOPS,
        "Export the block scales unswizzled and unpadded as (N, K/16). " NVFP4_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R54", "error",
        "SGLang: NVFP4 pre_quant_scale",
        "When present, P.pre_quant_scale of an nvfp4 layer must be BF16, F16 or F32 of shape "
        "(K,).",
        "SGLang raises ValueError 'Comfy NVFP4 layer PREFIX has an incompatible pre_quant_scale: "
        "DTYPESHAPE'.",
        STOPS,
        "Store one input scale per input, as BF16, F16 or F32. " NVFP4_NODECODE,
        NULL,
        "refuses",
    },
    {
        "R57", "error",
        "SGLang: W4A4 linear_dtype not int4 or int8",
        "In a W4A4 checkpoint, a convrot_w4a4 marker's linear_dtype, when present, must be int4 "
        "or int8 (compared as Python's str() of the value).",
        "linear_dtype picks the activation precision of the W4A4 kernels; SGLang raises "
        "ValueError 'Serialized W4A4 layer PREFIX has unsupported linear_dtype=VALUE; expected "
        "one of ('int4', 'int8')' while building its config.",
        STOPS,
        "The packed weights do not depend on it: remove the key with set-marker (drop_keys: "
        "[linear_dtype]), which means int4, or write int8.",
        "set-marker",
        "refuses",
    },
    {
        "R60", "error",
        "SGLang: W4A8 checkpoint with a non-companion INT8 layer",
        "In a W4A8 checkpoint, every int8_tensorwise layer must have a single-element "
        "weight_scale: SGLang takes INT8 layers there only as scalar-scale companions.",
        "SGLang's W4A8 config raises ValueError 'Unsupported Comfy W4A8 format for PREFIX: "
        "'int8_tensorwise'' for any other INT8 layer.",
        STOPS,
        "Dequantize the INT8 layer with exclude; stfix does not write W4A8 layers.",
        "exclude",
        "refuses",
    },
    {
        "R61", "error",
        "SGLang: W4A8 layer does not set convrot=true",
        "Every asym_w4a8_int8 layer of a W4A8 checkpoint must set convrot to JSON true.",
        "SGLang's W4A8 kernels expect ConvRot-rotated weights; it raises ValueError 'Serialized "
        "W4A8 layer PREFIX must set convrot=true' while building its config.",
        STOPS,
        "A W4A8 marker written without the key (w4a8-without-convrot) is repaired by set-marker, "
        "which adds convrot: true to every asym_w4a8_int8 marker.",
        "set-marker",
        "refuses",
    },
    {
        "R62", "error",
        "SGLang: FP8 weight_scale or input_scale cannot be loaded into the (1,) parameter",
        "A float8_e4m3fn layer of an FP8 checkpoint with a 2-D weight has a weight_scale, or an "
        "input_scale, of any shape other than () or (1,): per-row (N), (N, 1) or (1, N), "
        "per-column, or even (1, 1). A layer whose marker sets full_precision_matrix_mult is "
        "not checked for its input_scale.",
        "Inspection requires only that the weight and its scale exist, and picks the static "
        "activation scheme when the layer has an input_scale. ComfyFp8Config's linear methods "
        "then allocate weight_scale, and under that scheme input_scale, as a per-tensor (1,) "
        "parameter; the loader reshapes a scalar to (1,), and its size assertion fails on "
        "anything else: 'Tried to load weights of size torch.Size([N])to a parameter of size "
        "torch.Size([1])'. The message is that of an unfused layer; a fused or "
        "tensor-parallel one fails a different assertion. The full-precision method allocates "
        "no input_scale.",
        "Inspection passes, and loading then stops with an AssertionError that does not name "
        "the layer.",
        "The exporter kept its per-row scales, or per-column input scales, but wrote a "
        "per-tensor format name: requantize decodes each row with its own scale exactly and "
        "writes INT8 ConvRot, which takes no input scale, as the bundled sglang recipe does for "
        "every FP8 layer, a (1, 1) scale included.",
        "requantize",
        "refuses",
    },
    {
        "R63", "error",
        "SGLang: legacy scaled-FP8 layers, which SGLang does not read",
        "A layer keeps its scale in the legacy scale_weight or scale_input tensor (stfix "
        "checks the form itself under the comfyui profile, C25). One finding per checkpoint, "
        "counting such layers.",
        "SGLang's loader knows only comfy_quant markers and the tensor names they govern: it "
        "never reads scaled_fp8, scale_weight or scale_input. An F8_E4M3 weight without a "
        "marker fails its inspection (R10); an F8_E5M2 weight, which it does not count as "
        "quantized, is loaded as plain values without its scale.",
        "With F8_E4M3 weights the model does not load; with F8_E5M2 weights it loads and "
        "computes wrong values without any error.",
        "The file predates comfy_quant markers (legacy-scaled-fp8): migrate-scaled-fp8 "
        "rewrites it in comfy_quant form. SGLang then loads float8_e4m3fn layers; for "
        "float8_e5m2 ones, which it rejects (R30), follow with the bundled sglang recipe, "
        "which requantizes them to INT8 ConvRot.",
        "migrate-scaled-fp8",
        "refuses",
    },
    {
        "R70", "error",
        "SGLang: F8_E5M2 weights with a scale but no marker (silently unscaled)",
        "A layer whose P.weight is F8_E5M2 has a weight_scale, weight_scale_2 or input_scale "
        "but no marker in either channel (legacy scale_weight layers are R63's).",
        "SGLang counts only F8_E4M3, I8 and U8 weights as quantized (R10), so it loads an "
        "unmarked F8_E5M2 weight through the unquantized method: the codes are copied into the "
        "float parameter as values, and the scale is an unexpected key the loader skips.",
        "The model loads and computes with weights off by their scale, without any error.",
        "The markers were never written (missing-markers), and SGLang loads no float8_e5m2 "
        "layer (R30) even with one: requantize decodes the codes with their scale and writes "
        "INT8 ConvRot, as the bundled sglang recipe does; or dequantize the layer with exclude.",
        "requantize, exclude",
        "silent",
    },
};
const size_t stf__rule_docs_sglang_n =
    sizeof stf__rule_docs_sglang / sizeof stf__rule_docs_sglang[0];
