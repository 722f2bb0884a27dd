/*
 * Rule catalogue entries of the ComfyUI profile (C rules,
 * profile_comfyui.c) and of the numeric probes (N and H rules, probes.c),
 * in catalogue order; see rule_doc_internal.h. Each title is the one
 * stf_check_rule_title gives; the defect names are those of
 * stfix-defects(7), DEFECTS, the actions those of stfix-rules(5), ACTIONS AND PARAMETERS.
 */
#include "check/rule_doc_internal.h"

const stf_rule_doc stf__rule_docs_comfyui[] = {
    {
        .id = "C1",
        .severity = "error",
        .title = "ComfyUI: quantized weight without a marker (silently value-cast)",
        .checks = "A layer whose weight has a quantized dtype (I8, U8, F8_E4M3 or F8_E5M2) has no "
                  "comfy_quant marker in either channel. A layer with a legacy scale_weight "
                  "tensor is left out: ComfyUI converts those itself. An FP8 weight with no "
                  "scale at all (weight_scale, weight_scale_2, input_scale) is a warning: its "
                  "codes are values, right as they are when the weights were cast to FP8 "
                  "unscaled.",
        .why = "Without a marker ComfyUI loads the weight as a plain tensor and value-casts the "
               "codes to the compute dtype, so integer codes become large floats. The model "
               "loads and runs, and its output is silently garbage.",
        .ignored = "No error is ever raised: images or text come out wrong, and only the outputs "
                   "show it. stfix check exits 1.",
        .fix = "The markers were never written (missing-markers): infer-marker adds the one the "
               "file determines (the layer's _quantization_metadata entry, the file's other "
               "markers when they agree and fit the layer, or the FP8, NVFP4 or MXFP8 format its "
               "tensors alone spell out) and names the layers it cannot settle; set-marker with "
               "a format writes one by hand; exclude dequantizes the weight to BF16.",
        .action = "infer-marker, set-marker, exclude",
        .effect = "silent",
    },
    {
        .id = "C2",
        .severity = "error",
        .title = "ComfyUI: marker without format",
        .checks = "The layer's marker, once parsed, is an object without a format key (the top "
                  "level only).",
        .why = "ComfyUI cannot pick a loader and raises \"Unknown quantization format for layer "
               "L\" while loading the checkpoint.",
        .ignored = "The checkpoint does not load in ComfyUI at all.",
        .fix = "The format was never written (missing-format): set-marker adds int8_tensorwise "
               "when the weight is I8 and its scale F32; for any other layout give set-marker "
               "the format explicitly.",
        .action = "set-marker",
        .effect = "refuses",
    },
    {
        .id = "C3",
        .severity = "error",
        .title = "ComfyUI: unknown format",
        .checks = "The marker's format is not a string naming one of the formats ComfyUI loads: "
                  "int8_tensorwise, convrot_w4a4, asym_w4a8_int8, float8_e4m3fn, float8_e5m2, "
                  "nvfp4, mxfp8 and awq_w4a16.",
        .why = "The lookup fails with a KeyError or \"Unsupported quantization format: F\" while "
               "the checkpoint loads.",
        .ignored = "The checkpoint does not load in ComfyUI.",
        .fix = "The exporter used a private name (nonstandard-format-name): rename it with "
               "rewrite-format when the tensors already have the upstream layout, otherwise "
               "dequantize and requantize with requantize.",
        .action = "rewrite-format, requantize",
        .effect = "refuses",
    },
    {
        .id = "C4",
        .severity = "error",
        .title = "ComfyUI: required scales missing",
        .checks = "A tensor the layer's format requires beside the weight is absent: "
                  "weight_scale (int8_tensorwise, convrot_w4a4, the float8 formats, mxfp8), "
                  "weight_scale and weight_scale_2 (nvfp4), weight_s_rel and weight_s_channel "
                  "(asym_w4a8_int8), weight_scale and weight_zeros (awq_w4a16).",
        .why = "ComfyUI raises \"Missing INT8 weight scale for layer L\" (or the NVFP4, MXFP8 or "
               "W4A4 variant) while loading.",
        .ignored = "The checkpoint does not load in ComfyUI; the codes cannot be dequantized by "
                   "anyone, stfix included.",
        .fix = "Re-export the layer with its scales. If the weight is really a float weight "
               "carrying a stray marker (orphan-tensors), drop the marker with drop.",
        .action = "drop",
        .effect = "refuses",
    },
    {
        .id = "C5",
        .severity = "error",
        .title = "ComfyUI: marker without weight",
        .checks = "A layer has a marker and other tensors (such as its scales) but no P.weight.",
        .why = "ComfyUI leaves the module's weight None, silently; when the marker was meant "
               "for a layer under another name it reports \"Missing weight for layer L\". The "
               "layer fails when it is first used.",
        .ignored = "The model loads with a layer that has no weight and breaks at its first "
                   "forward; stfix check exits 1.",
        .fix = "The marker and scales are leftovers (orphan-tensors): drop them with drop, or "
               "add the missing weight. A marker keyed under the wrong prefix "
               "(metadata-prefix-mismatch) is moved with rename.",
        .action = "drop, rename",
        .effect = "silent",
    },
    {
        .id = "C6",
        .severity = "error",
        .title = "ComfyUI: ConvRot group size not a power of 4 (fails at first forward)",
        .checks = "A ConvRot layer (int8_tensorwise with a truthy convrot, or convrot_w4a4) "
                  "declares a convrot_groupsize that is not a power of 4 (4, 16, 64, 256, ...), "
                  "or an int8_tensorwise one that Python's int() cannot convert. A missing "
                  "group size counts as 256, as ComfyUI reads it.",
        .why = "A non-integer group size raises in int() while the checkpoint loads. A "
               "non-power-of-4 size loads, then the first forward or dequantization raises "
               "\"Regular Hadamard size must be a power of 4, got G\".",
        .ignored = "The model appears to load and then fails at its first use of the layer.",
        .fix = "Group sizes such as 128 or 512 come from exporters that fell back to a "
               "Sylvester matrix (sylvester-rotation): requantize undoes that rotation and "
               "quantizes again with a regular G from 256, 64 and 16. A group size written as "
               "a string must be rewritten as the integer the producer used.",
        .action = "requantize",
        .effect = "silent",
    },
    {
        .id = "C7",
        .severity = "error",
        .title = "ComfyUI: ConvRot group size does not divide the input size",
        .checks = "An int8_tensorwise layer with a truthy convrot has an input size K (the "
                  "weight's last dimension) that its power-of-4 convrot_groupsize G does not "
                  "divide.",
        .why = "comfy-kitchen cannot rotate the activations in whole groups and raises "
               "\"ConvRot group size G does not divide input features K\" when the layer runs.",
        .ignored = "ComfyUI fails as soon as the layer is used.",
        .fix = "The group is too large for the layer (indivisible-group): requantize picks the "
               "largest of 256, 64 and 16 that divides K and keeps the layer in BF16 when none "
               "does.",
        .action = "requantize",
        .effect = "silent",
    },
    {
        .id = "C8",
        .severity = "error",
        .title = "ComfyUI: INT8 scale neither scalar nor per output channel",
        .checks = "An int8_tensorwise weight_scale holds neither one element nor N elements, N "
                  "being the number of output rows (the first dimension, or the first two of a "
                  "3-D experts weight): grouped, blockwise or input-axis scales.",
        .why = "ComfyUI refuses the layer with \"INT8 weight scale must be scalar or "
               "per-output-channel\".",
        .ignored = "The checkpoint does not load in ComfyUI.",
        .fix = "Such scales cannot be reshaped into the per-row form: requantize decodes "
               "per-column (column-scales) and (N, g) grouped scales exactly and quantizes "
               "rowwise. Blockwise scales cannot be decoded and need the original weights.",
        .action = "requantize",
        .effect = "silent",
    },
    {
        .id = "C9",
        .severity = "error",
        .title = "ComfyUI: scale shape breaks the dequantize paths",
        .checks = "An int8_tensorwise scale with N elements is not shaped (N, 1) (or (E, N, 1) "
                  "for experts) nor scalar, for instance (N) or (1, N); a convrot_w4a4 scale "
                  "with N elements is not shaped (N).",
        .why = "The int8 GEMM accepts the shape, but the dequantize paths (LoRA, "
               "full_precision_matrix_mult, the fallback without int8 support) broadcast the "
               "scale over columns: an error when N differs from K, silently wrong output on a "
               "square layer such as an attention projection.",
        .ignored = "Generation works on the fast path and breaks, or silently goes wrong, as "
                   "soon as a LoRA is applied or the fallback is taken.",
        .fix = "The scales were flattened (flattened-scales): once the H1 probe says ROW, "
               "reshape-scale to rows is a header-only repair, and W4A4 scales reshape to a "
               "vector. When H1 says COLUMN the scales run along the input axis "
               "(column-scales) and the layer must be requantized.",
        .action = "reshape-scale, requantize",
        .effect = "silent",
    },
    {
        .id = "C10",
        .severity = "error",
        .title = "ComfyUI: weight dtype differs from the format's storage dtype",
        .checks = "The weight's dtype is not the one its format stores: I8 for int8_tensorwise, "
                  "convrot_w4a4, asym_w4a8_int8 and awq_w4a16, F8_E4M3 for float8_e4m3fn and "
                  "mxfp8, F8_E5M2 for float8_e5m2, U8 for nvfp4.",
        .why = "ComfyUI converts the weight to the storage dtype with .to() instead of viewing "
               "its bits. A float8 code becomes a different number; between U8 and I8 the "
               "conversion wraps, so the bytes survive, but as the format's codes only if the "
               "producer stored them that way. Nothing is raised.",
        .ignored = "Wrong output without any error.",
        .fix = "The dtype label does not match the data (storage-dtype-mismatch): when the "
               "bytes are already the right codes, relabel the weight (U8 to I8, or I8 to U8) "
               "in a recipe rule that asserts it; otherwise re-export the layer. The bundled "
               "comfyui recipe asserts it for nvfp4 only, whose bytes hold two packed codes "
               "whatever their label.",
        .action = "relabel",
        .effect = "silent",
    },
    {
        .id = "C11",
        .severity = "error",
        .title = "ComfyUI: scale not F32",
        .checks = "A weight_scale, input_scale, weight_scale_2 or weight_s_channel tensor is "
                  "not F32. The fp8 and e8m0 block scales of nvfp4 and mxfp8 and the awq_w4a16 "
                  "scales are exempt.",
        .why = "ComfyUI never checks scale dtypes: it hands the scale to the kernels as "
               "stored (NVFP4's layout alone casts weight_scale_2 to F32 at load), and older "
               "comfy-kitchen backends refuse a BF16 or F16 scale at the first "
               "dequantization, for example \"No backend can handle "
               "'dequantize_per_tensor_fp8': eager: scale: dtype torch.bfloat16 not in "
               "{torch.float32}\".",
        .ignored = "The layer fails on older ComfyUI installations and works on newer ones.",
        .fix = "The scales were stored in half precision (low-precision-scales): cast-scale "
               "widens them to F32, which is exact; with tensors: all it also widens "
               "weight_scale_2, input_scale and weight_s_channel.",
        .action = "cast-scale",
        .effect = "silent",
    },
    {
        .id = "C12",
        .severity = "error",
        .title = "ComfyUI: marker on a non-Linear (conv) layer",
        .checks = "A marked layer whose format ComfyUI knows has a weight of rank other than 2 "
                  "or 3: a conv kernel of rank 4 or 5, or a 1-D weight.",
        .why = "Only Linear, MoEExperts and Embedding modules understand markers; Conv1d, "
               "Conv2d and Conv3d have no quantized path. The marker and scales become "
               "unexpected keys and the raw codes are fed to the conv: silently wrong output.",
        .ignored = "The model loads, with the marker and scales left over as unexpected keys, "
                   "and produces garbage.",
        .fix = "A conv layer was quantized (quantized-conv): exclude dequantizes it to BF16 "
               "and drops its marker and scales. Use flatten-conv only when a recipe rule "
               "declares the consumer a Linear over unfolded patches.",
        .action = "exclude, flatten-conv",
        .effect = "silent",
    },
    {
        .id = "C14",
        .severity = "warning",
        .title = "ComfyUI: keys nested under params",
        .checks = "The marker holds a params object, with keys such as convrot or "
                  "convrot_groupsize nested inside it instead of at the top level.",
        .why = "ComfyUI's Linear reads params as a fallback, but its Embedding does not, nor "
               "does the AWQ loader for group_size, and SGLang ignores params: the same marker "
               "then means different things to different modules, silently.",
        .ignored = "Linear layers load correctly; an Embedding or an SGLang load reads the "
                   "layer without the nested settings and computes wrong values.",
        .fix = "The exporter nested the keys (nested-params): set-marker hoists them to the "
               "top level and writes the canonical marker.",
        .action = "set-marker",
        .effect = "note",
    },
    {
        .id = "C15",
        .severity = "error; warning when the metadata entry only differs from the tensor marker",
        .title = "ComfyUI: metadata entries misplaced, or overriding tensor markers",
        .checks = "A _quantization_metadata entry names a layer that has no tensors, or differs "
                  "from the layer's comfy_quant tensor marker (a warning). An entry that is not "
                  "an object is C21.",
        .why = "ComfyUI writes every entry over the tensor marker of the same name, using the "
               "names as written. An entry under a name with no tensors attaches the marker to "
               "missing keys, so the real layer loads unquantized with its codes value-cast; "
               "when both channels exist ComfyUI silently uses the metadata entry.",
        .ignored = "Silently garbage output, or a layer read with settings other than its tensor "
                   "marker states.",
        .fix = "Re-key entries whose prefix differs from the tensors' with rename "
               "(metadata-prefix-mismatch), or drop the metadata and keep the tensor markers "
               "(set-marker with metadata: drop); regenerate both channels from one marker with "
               "set-marker.",
        .action = "set-marker, rename",
        .effect = "silent",
    },
    {
        .id = "C16",
        .severity = "error",
        .title = "ComfyUI: W4A4 input size the kernels cannot tile",
        .checks = "A convrot_w4a4 layer's input size K (twice the packed weight's last "
                  "dimension) is a multiple of 64 and of its convrot_groupsize.",
        .why = "comfy-kitchen's W4A4 layout does not check the input size when ComfyUI loads "
               "the layer: it loads, and the kernels raise at the first forward pass or "
               "dequantization.",
        .ignored = "The checkpoint loads, and the first image or text generation fails.",
        .fix = "An input size that the kernel cannot tile (indivisible-group) needs requantize "
               "to int8_tensorwise, or BF16 through exclude.",
        .action = "requantize, exclude",
        .effect = "silent",
    },
    {
        .id = "C19",
        .severity = "warning",
        .title = "ComfyUI accepts what SGLang rejects (truthy convrot, default G)",
        .checks = "An int8_tensorwise marker sets convrot to a truthy value other than the "
                  "literal true (1, \"yes\"), or sets convrot without a convrot_groupsize.",
        .why = "ComfyUI takes convrot by Python truthiness and assumes a group size of 256, so "
               "it loads the layer; SGLang requires the literal true and an explicit group size "
               "and rejects it. If the producer used another group size, ComfyUI's output is "
               "silently wrong.",
        .ignored = "The file works in ComfyUI (given a group size of 256) and fails to load in "
                   "SGLang.",
        .fix = "set-marker writes convrot as true and spells out convrot_groupsize (256 when "
               "absent); state the group size the producer actually used if it was not 256.",
        .action = "set-marker",
        .effect = "note",
    },
    {
        .id = "C20",
        .severity = "error",
        .title = "ComfyUI: _quantization_metadata unusable (JSONDecodeError, TypeError, KeyError, "
                 "AttributeError)",
        .checks = "Each file's __metadata__ entry _quantization_metadata, when present, parses "
                  "as JSON the way Python's json.loads parses it, is an object, and holds a "
                  "layers object.",
        .why = "ComfyUI's metadata conversion (convert_old_quants) runs json.loads on the entry, "
               "indexes the result with [\"layers\"] and calls .items() on that, before it "
               "builds the model, and catches nothing: a JSONDecodeError (\"Expecting value: "
               "line 1 column 12 (char 11)\"), a TypeError for a list or other non-object, a "
               "KeyError: 'layers', or an AttributeError for a layers value that is not an "
               "object. The message is that exception as Python prints it.",
        .ignored = "The checkpoint does not load in ComfyUI.",
        .fix = "Rebuild the entry from the tensor markers with a set-marker rule (metadata: "
               "mirror), or remove it (metadata: drop); ComfyUI needs only the tensor markers.",
        .action = "set-marker",
        .effect = "refuses",
    },
    {
        .id = "C21",
        .severity = "error",
        .title = "ComfyUI: marker unreadable (JSONDecodeError, TypeError, AttributeError)",
        .checks = "The marker ComfyUI uses for a layer is readable: a comfy_quant tensor (when "
                  "no metadata entry replaces it) has a dtype numpy can convert and bytes that "
                  "decode with json.loads to an object; a _quantization_metadata entry is an "
                  "object.",
        .why = "ComfyUI's layer loader (_load_quantized_module) reads the marker with "
               "json.loads(tensor.numpy().tobytes()) and calls .get on the result. A BF16 or "
               "FP8 marker raises TypeError in numpy (\"Got unsupported ScalarType BFloat16\"), "
               "bytes that are not one JSON value raise JSONDecodeError (a trailing NUL: \"Extra "
               "data\"), and a JSON array or string raises AttributeError. A metadata entry "
               "that is not an object comes back from ComfyUI's json.dumps and json.loads round "
               "trip as the same value and fails the same way. The message is that exception "
               "as Python prints it.",
        .ignored = "The checkpoint does not load in ComfyUI.",
        .fix = "Rewrite the marker as canonical U8 JSON bytes with set-marker. Bytes that hold "
               "no marker at all, zeroed, empty or not UTF-8 (unreadable-marker), are rebuilt "
               "with infer-marker from what the file determines: the layer's "
               "_quantization_metadata entry, the file's other markers when they agree and fit "
               "the layer, or the FP8, NVFP4 or MXFP8 format its tensors spell out; a layer it "
               "cannot settle is named, and set-marker with a format settles it. A string "
               "metadata entry is wrapped as {\"format\": value} (string-metadata-value).",
        .action = "set-marker, infer-marker",
        .effect = "refuses",
    },
    {
        .id = "C22",
        .severity = "error",
        .title = "ComfyUI: W4A8 layout parameters rejected (ValueError)",
        .checks = "An asym_w4a8_int8 layer's input size K (twice the packed weight's last "
                  "dimension) is a multiple of 16, of its group_size (default 16) and of its "
                  "convrot_groupsize (default 256, also when convrot is absent); group_size is at "
                  "least 4 and divides 16 or is a multiple of 16; weight_s_rel is (N, K / "
                  "group_size), weight_s_channel (N,), weight_correction, when present, (K / "
                  "group_size, N) and weight_codebook (16,). The checks run in this order and "
                  "the first that fails is reported.",
        .why = "comfy-kitchen's W4A8 layout validates these when ComfyUI builds the layer's "
               "parameters and raises ValueError (\"K=64 must be divisible by 16, "
               "group_size=16, and convrot_groupsize=256; ...\"). The message is that exception "
               "as Python prints it.",
        .ignored = "The checkpoint does not load in ComfyUI.",
        .fix = "stfix cannot decode W4A8 layers, so re-export the layer from the original "
               "weights with sizes that fit, or store it unquantized.",
        .action = NULL,
        .effect = "refuses",
    },
    {
        .id = "C23",
        .severity = "error",
        .title = "ComfyUI: W4A4 linear_dtype rejected (ValueError)",
        .checks = "A convrot_w4a4 layer's linear_dtype, when present, is int4 or int8.",
        .why = "comfy-kitchen's W4A4 layout checks linear_dtype when ComfyUI builds the layer's "
               "parameters and raises ValueError (\"ConvRot W4A4 linear_dtype must be 'int4' or "
               "'int8', got 'fp4'\"). The message is that exception as Python prints it.",
        .ignored = "The checkpoint does not load in ComfyUI.",
        .fix = "The bundled comfyui recipe requantizes the layer as int8_tensorwise, which "
               "decodes the W4A4 weights exactly. To keep W4A4, set-marker with drop_keys "
               "[linear_dtype] leaves int4; write int8 only when the producer meant int8 "
               "activations.",
        .action = "requantize, set-marker",
        .effect = "refuses",
    },
    {
        .id = "C24",
        .severity = "error",
        .title = "ComfyUI: FP8 weight or input scale not a single value",
        .checks = "A float8_e4m3fn or float8_e5m2 layer's weight_scale holds more than one "
                  "element: per-row (N), (N, 1) or (1, N), per-column (K) or (1, K), or any "
                  "other shape. Likewise its input_scale, such as one value per input column, "
                  "(K) or (1, K), unless the marker sets full_precision_matrix_mult. (), (1,) "
                  "and (1, 1) pass.",
        .why = "Both formats are per-tensor. ComfyUI checks no scale shape and hands the scale "
               "to comfy-kitchen as stored. Its CUDA dequantize then raises AssertionError "
               "\"Scale must be a scalar tensor\"; its eager one, which ComfyUI uses when the "
               "CUDA backend is off, multiplies the weight by the scale with broadcasting: an "
               "(N, 1) scale happens to scale the rows, but an (N) or (1, N) one lines up with "
               "the K columns, a RuntimeError when N differs from K and silently wrong output "
               "on a square layer such as an attention projection, where each column is scaled "
               "by a row's scale. A Linear registers input_scale as stored too and, where it "
               "runs FP8 matmuls (a device with FP8 compute), quantizes each input with it: "
               "comfy-kitchen's CUDA quantize divides by the first element, torch's FP8 matmul "
               "refuses a longer scale, and the dequantizing fallback raises the same "
               "assertion; the eager quantize divides the input columns by a (K) or (1, K) "
               "scale, and the layer then runs dequantized, and fails on other lengths.",
        .ignored = "The model loads; the layer then fails at its first forward, or on a square "
                   "layer computes garbage without any error.",
        .fix = "The exporter kept its per-row scales, or per-column input scales, but wrote a "
               "per-tensor format name. requantize decodes each row (or column) with its own "
               "scale exactly and writes INT8 ConvRot, which takes no input scale; the bundled "
               "comfyui and sglang recipes do so for every such layer. A rowwise FP8 format "
               "that ComfyUI loads does not exist.",
        .action = "requantize",
        .effect = "silent",
    },
    {
        .id = "C25",
        .severity = "warning",
        .title = "ComfyUI: legacy scaled-FP8 checkpoint, read only by some versions",
        .checks = "The checkpoint holds a tensor named PREFIX scaled_fp8 (PREFIX empty or ending "
                  "in a dot): the legacy scaled-FP8 form, written before comfy_quant markers, "
                  "with each FP8 layer's scale in scale_weight and its activation scale in "
                  "scale_input. One finding per scaled_fp8 tensor, naming its file and how many "
                  "layers under its prefix have a scale_weight.",
        .why = "No current exporter writes the form. The ComfyUI versions that read it convert "
               "it as they load, and only for a file without _quantization_metadata: every "
               "layer under the prefix with a scale_weight gets a float8_e4m3fn marker (with "
               "full_precision_matrix_mult when scaled_fp8 holds two elements), scale_weight "
               "becomes weight_scale, scale_input becomes input_scale unless its one value is "
               "exactly 1.0, and scaled_fp8 is dropped. A version without that conversion "
               "reports scaled_fp8 and the scales as unexpected keys and loads the FP8 weights "
               "without their scales. SGLang does not read the form at all (R63).",
        .ignored = "The file works or not depending on the ComfyUI version, and any update can "
                   "change that; the per-layer misreads are C26.",
        .fix = "The file predates comfy_quant markers (legacy-scaled-fp8): the bundled recipe "
               "migrate-scaled-fp8 rewrites it in comfy_quant form, header and copies only: "
               "markers of the weight's own FP8 format, weight_scale and input_scale in F32, "
               "no scaled_fp8.",
        .action = "migrate-scaled-fp8",
        .effect = "note",
    },
    {
        .id = "C26",
        .severity = "error",
        .title = "ComfyUI: legacy scaled-FP8 layer misread",
        .checks = "A layer with a legacy scale_weight or scale_input that ComfyUI's load-time "
                  "conversion gets wrong: it is not converted at all, because no scaled_fp8 "
                  "tensor's prefix covers it or its file also carries _quantization_metadata; "
                  "or it is converted as float8_e4m3fn while its weight is not F8_E4M3 (an "
                  "F8_E5M2 weight); or its scale_input holds more than one element.",
        .why = "The conversion marks every such layer float8_e4m3fn whatever its weight's "
               "dtype, and ComfyUI converts the weight value by value to its storage dtype, "
               "so an F8_E5M2 weight (range up to 57344) is squeezed into E4M3 (range up to "
               "448). A layer the conversion skips keeps its scales under names nothing reads "
               "and its weight loads without them. The conversion compares scale_input with "
               "1.0 through Tensor.item(), which raises for more than one element.",
        .ignored = "A skipped or E5M2 layer computes wrong values without any error; a "
                   "scale_input of several elements stops the load with \"RuntimeError: a "
                   "Tensor with N elements cannot be converted to Scalar\".",
        .fix = "The file predates comfy_quant markers (legacy-scaled-fp8): migrate-scaled-fp8 "
               "gives each layer the marker of its weight's own format (float8_e5m2 for an "
               "E5M2 weight), renames the scales and drops scaled_fp8, whatever "
               "_quantization_metadata says; the result is rebuilt from the new markers.",
        .action = "migrate-scaled-fp8",
        .effect = "silent",
    },
    {
        .id = "N1",
        .severity = "error",
        .title = "numeric: non-finite scale values",
        .checks = "With --numeric, every F32, F16 or BF16 weight_scale, input_scale, "
                  "weight_scale_2 and weight_s_channel tensor is read; a NaN or infinite value "
                  "is reported with its count, first element and byte offset.",
        .why = "Every value dequantized or computed with such a scale becomes NaN or infinite; "
               "ComfyUI raises nothing and the output is black or noise.",
        .ignored = "Silently broken output wherever the layer contributes.",
        .fix = "The scales are corrupt and cannot be repaired from the file: requantize the "
               "layer from its source weights with the producer, or re-export it.",
        .action = NULL,
        .effect = "silent",
    },
    {
        .id = "N2",
        .severity = "error",
        .title = "numeric: zero or negative scale values",
        .checks = "With --numeric, the same scale tensors as N1 are read; a finite value that "
                  "is zero or negative is reported with its count, first element and byte "
                  "offset.",
        .why = "Absmax quantization never writes such a scale (comfy-kitchen clamps its "
               "scales to at least 1e-10). A zero scale erases the values it scales and a "
               "negative one flips their sign; ComfyUI raises nothing.",
        .ignored = "Silently wrong output from the affected rows.",
        .fix = "Requantize the layer from its source weights with the producer; stfix cannot "
               "recover the lost magnitudes from the codes.",
        .action = NULL,
        .effect = "silent",
    },
    {
        .id = "N3",
        .severity = "warning",
        .title = "numeric: weight with no elements (not probed; fix copies the layer unchanged)",
        .checks = "With --numeric, a layer's weight has a zero dimension, so it has no "
                  "elements; H1 and H2 skip the layer (its scales are still probed by N1 and "
                  "N2).",
        .why = "There is nothing to quantize or compute, and the other dimension is only a "
               "number in the header; such a layer is usually an export accident.",
        .ignored = "stfix fix copies the layer unchanged where a recipe would requantize or "
                   "exclude it, so its marker and scales stay as they are.",
        .fix = "Re-export the layer with its weights, or remove it from the checkpoint.",
        .action = NULL,
        .effect = "note",
    },
    {
        .id = "H1",
        .severity = "info for rows with canonical scales, FP8 rows and tensorwise layers; "
                    "warning for rows needing a reshape, blocks, ambiguous and unknown verdicts; "
                    "error for columns",
        .title = "numeric: row versus column quantization (max|q| test)",
        .checks = "With --numeric, the codes of each int8_tensorwise and convrot_w4a4 layer are "
                  "scanned: a row or column is saturated when its largest |q| reaches 126 (7 "
                  "for W4A4). Nearly all rows saturated means ROW, nearly all columns COLUMN "
                  "(threshold tau, 0.99 by default), otherwise TENSOR, BLOCK, AMBIGUOUS or "
                  "UNKNOWN. A square FP8 layer (N equal to K) with N scales is scanned the same "
                  "way, a slice being saturated when it holds the format's largest code (0x7E "
                  "for E4M3, 0x7B for E5M2; NaN and Inf codes count as 0). Every row is read, "
                  "not a sample, so a file gets the same verdict on every run and with any -j.",
        .why = "Scale shapes cannot tell rows from columns on a square layer, and ComfyUI "
               "applies scales along the output axis: column-quantized codes there give "
               "silently wrong output, and a flattened scale can only be reshaped safely when "
               "the rows are confirmed.",
        .ignored = "A column-quantized layer keeps producing wrong output without any error; a "
                   "flattened row scale is left for the dequantize paths to misread.",
        .fix = "ROW with a flattened scale (flattened-scales): reshape-scale, header-only. "
               "COLUMN (column-scales): requantize rowwise. A square FP8 layer's N scales are "
               "read per column by requantize and exclude only on COLUMN, else per row. Other "
               "verdicts are reported only; "
               "a recipe rule can match them with probe. Clamped or learned-rounding codes "
               "(clamped-codes) are tolerated.",
        .action = "reshape-scale, requantize",
        .effect = "silent",
    },
    {
        .id = "H2",
        .severity = "warning",
        .title = "numeric: Sylvester rather than regular ConvRot rotation",
        .checks = "With --numeric, an int8_tensorwise ConvRot layer declares a group size that "
                  "is a power of 2 but not of 4, or, for a power-of-4 group size, position 0 of "
                  "each group holds at least 8 times the mean energy of the other positions "
                  "over 4 or more rows. The energy is summed over every row, not a sample, in "
                  "the same read of the weight as H1.",
        .why = "Some exporters fall back to a Sylvester matrix for group sizes such as 128; "
               "ComfyUI only implements the regular matrix, so it fails at the first forward "
               "or, when the declared size is a power of 4, silently un-rotates with the wrong "
               "matrix.",
        .ignored = "A declared Sylvester size fails at the first forward (C6); a mislabelled "
                   "rotation gives silently wrong output.",
        .fix = "Sylvester-rotated weights (sylvester-rotation): requantize undoes the rotation "
               "when the declared size says Sylvester. The energy evidence alone is a report: "
               "confirm with the producer before writing a rule for it.",
        .action = "requantize",
        .effect = "silent",
    },
};
const size_t stf__rule_docs_comfyui_n =
    sizeof stf__rule_docs_comfyui / sizeof stf__rule_docs_comfyui[0];
