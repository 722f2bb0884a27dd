#!/bin/sh
# stfix fix: options and exit codes, every action on a fixture (recipes in
# tests/recipes/), every broken fixture of fixtures/comfy/MANIFEST repaired
# with the bundled recipe for its target, determinism over -j, ENOSPC,
# --in-place. (kill -9 part-way: kill.sh; the output guard: guard.sh.)
. tests/cli/lib.sh
F=fixtures/comfy
R=tests/recipes
D=$T_TMP
TOOL="python3 tests/cli/fix_tool.py"
CANON256='{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256}'

# Bytes of tensor $2 of file $1 into $3.
tbytes() { $TOOL tensor "$1" "$2" >"$3"; }
# The inspect line of tensor $3 in $2 starts with "$3 $4" (dtype and shape)
# once the table's runs of spaces are squeezed to one.
t_tensor() {
    if "$STFIX" inspect "$2" 2>/dev/null | tr -s ' ' | grep -qF -- " $3 $4 "; then t_ok "$1: $3 $4"
    else t_notok "$1: $3 $4" "$("$STFIX" inspect "$2" 2>&1 | tr -s ' ' | grep -F -- " $3 " | head -3)"; fi
}
t_no_tensor() {
    if "$STFIX" inspect "$2" 2>/dev/null | tr -s ' ' | grep -qF -- " $3 "; then t_notok "$1: no $3"
    else t_ok "$1: no $3"; fi
}
# Same bytes of tensor $3 in $2 as in input $4 (name $5, default $3).
t_same_bytes() {
    tbytes "$2" "$3" "$D/a.bin" && tbytes "$4" "${5:-$3}" "$D/b.bin" &&
        cmp -s "$D/a.bin" "$D/b.bin" && { t_ok "$1: $3 bytes unchanged"; return; }
    t_notok "$1: $3 bytes unchanged"
}
t_marker_is() {
    printf '%s' "$4" >"$D/want.bin"
    if tbytes "$2" "$3.comfy_quant" "$D/got.bin" 2>/dev/null && cmp -s "$D/want.bin" "$D/got.bin"
    then t_ok "$1: marker bytes"
    else t_notok "$1: marker bytes" "got: $(cat "$D/got.bin" 2>/dev/null)"; fi
}
t_check() { # NAME FILE TARGET: stfix check passes (exit 0)
    "$STFIX" check "$2" --target "$3" >"$D/check.txt" 2>&1
    _c=$?
    if [ "$_c" -eq 0 ]; then t_ok "$1: check --target $3"
    else t_notok "$1: check --target $3" "exit $_c: $(grep -E 'error|summary' "$D/check.txt" | head -4)"; fi
}

# ------------------------------------------------------------- usage
t_run "--help" 0 "$STFIX" fix --help
t_stdout_has "--help" "usage: stfix fix IN -r RECIPE (-o OUT | --in-place)"
t_run "no arguments" 3 "$STFIX" fix
t_run "no recipe" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -o "$D/x.safetensors"
t_stderr_has "no recipe" "no recipe given"
t_run "no output" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml"
t_stderr_has "no output" "give exactly one of -o OUT and --in-place"
t_run "-o and --in-place" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" \
    -o "$D/x.safetensors" --in-place
t_run "bad -j" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" -o "$D/x.safetensors" -j 0
t_run "bad --quant-mode" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" \
    -o "$D/x.safetensors" --quant-mode fast
t_stderr_has "bad --quant-mode" "--quant-mode takes cuda, fp32 or eager"
t_run "bad size" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" \
    -o "$D/x.safetensors" --max-mem 12XB
t_run "unknown option" 3 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" \
    -o "$D/x.safetensors" --frobnicate
t_run "--in-place on an index" 3 "$STFIX" fix "$F/healthy_sharded.safetensors.index.json" \
    -r "$R/cast-scale.yaml" --in-place
cp "$F/r14_scale_bf16.safetensors" "$D/same.safetensors"
t_run "output is the input" 3 "$STFIX" fix "$D/same.safetensors" -r "$R/cast-scale.yaml" -o "$D/same.safetensors"
t_stderr_has "output is the input" "the output would overwrite the input file"
t_true "output is the input: untouched" cmp "$F/r14_scale_bf16.safetensors" "$D/same.safetensors"

# ------------------------------------------------------------- bad input
t_run "broken recipe" 2 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/broken.yaml" -o "$D/x.safetensors"
t_stderr_has "broken recipe" "tests/recipes/broken.yaml:6:13: rules[0].match: unknown key 'dtyp'"
t_stderr_has "broken recipe" "tests/recipes/broken.yaml:10:27: rules[1].do.exclude.dtype"
t_run "missing recipe" 2 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$D/nope.yaml" -o "$D/x.safetensors"
t_run "missing input" 2 "$STFIX" fix "$D/nope.safetensors" -r "$R/cast-scale.yaml" -o "$D/x.safetensors"
t_stderr_has "missing input" "$D/nope.safetensors"
t_run "malformed input" 2 "$STFIX" fix fixtures/malformed/s05_not_json.safetensors -r "$R/cast-scale.yaml" \
    -o "$D/x.safetensors"
t_absent "bad input" "$D/x.safetensors"

# ------------------------------------------------------------- actions
# reshape-scale: [N] -> [N,1] once H1 says rows; header only.
o=$D/reshape.safetensors
t_run "reshape-scale" 0 "$STFIX" fix "$F/probe_rowquant_flat.safetensors" -r "$R/reshape-scale.yaml" -o "$o"
t_stdout_has "reshape-scale" "layers: 1 changed, 0 unchanged"
# The copied are among the written, and said so: the counts part it.
t_stdout_has "reshape-scale" "tensors: 3 written (2 copied unchanged, 1 changed or new), 0 dropped"
t_stdout_has "reshape-scale" "data bytes: 4423 written (4423 copied unchanged, 0 computed)"
t_tensor "reshape-scale" "$o" blocks.0.attn.qkv.weight_scale F32 "[64, 1]"
t_same_bytes "reshape-scale" "$o" blocks.0.attn.qkv.weight_scale "$F/probe_rowquant_flat.safetensors"
t_same_bytes "reshape-scale" "$o" blocks.0.attn.qkv.weight "$F/probe_rowquant_flat.safetensors"
t_check "reshape-scale" "$o" sglang

# reshape-scale: [1] -> [] (a scalar scale ComfyUI accepts).
$TOOL edit "$F/r40_scalar_scale_convrot.safetensors" "$D/s1.safetensors" blocks.0.attn.qkv.weight_scale '[1]'
o=$D/scalar.safetensors
t_run "reshape-scale scalar" 0 "$STFIX" fix "$D/s1.safetensors" -r "$R/reshape-scale-scalar.yaml" -o "$o"
t_tensor "reshape-scale scalar" "$o" blocks.0.attn.qkv.weight_scale F32 "[]"
t_same_bytes "reshape-scale scalar" "$o" blocks.0.attn.qkv.weight_scale "$D/s1.safetensors"
t_check "reshape-scale scalar" "$o" comfyui

# transpose-scale: a [1,N] scale holding per-output values becomes [N,1]
# (header only); a true per-input-column scale is requantized rowwise.
$TOOL edit "$F/probe_rowquant_flat.safetensors" "$D/row1n.safetensors" blocks.0.attn.qkv.weight_scale '[1, 64]'
$TOOL edit "$F/probe_colquant_square.safetensors" "$D/col1n.safetensors" blocks.0.attn.qkv.weight_scale '[1, 64]'
o=$D/transpose-rows.safetensors
t_run "transpose-scale rows" 0 "$STFIX" fix "$D/row1n.safetensors" -r "$R/transpose-scale-rows.yaml" -o "$o"
t_tensor "transpose-scale rows" "$o" blocks.0.attn.qkv.weight_scale F32 "[64, 1]"
t_same_bytes "transpose-scale rows" "$o" blocks.0.attn.qkv.weight_scale "$D/row1n.safetensors"
t_same_bytes "transpose-scale rows" "$o" blocks.0.attn.qkv.weight "$D/row1n.safetensors"
t_check "transpose-scale rows" "$o" sglang
o=$D/transpose.safetensors
t_run "transpose-scale" 0 "$STFIX" fix "$D/col1n.safetensors" -r "$R/transpose-scale.yaml" -o "$o"
t_tensor "transpose-scale" "$o" blocks.0.attn.qkv.weight I8 "[64, 64]"
t_tensor "transpose-scale" "$o" blocks.0.attn.qkv.weight_scale F32 "[64, 1]"
t_check "transpose-scale" "$o" sglang
t_run "transpose-scale: H1 on the output" 0 "$STFIX" check --numeric --target sglang "$o"
t_stdout_has "transpose-scale: H1 on the output" "ROW quantization"

# flatten-conv: header only. G = 256 does not divide K = 36, so SGLang
# rejects the result (R27): without --allow-noncompliant nothing is written.
o=$D/flat.safetensors
t_run "flatten-conv rejected" 1 "$STFIX" fix "$F/r25_conv_marker.safetensors" -r "$R/flatten-conv.yaml" -o "$o"
t_stderr_has "flatten-conv rejected" "nothing was written"
# Said once, in one line naming the file, profile, rule and layer.
t_stderr_is "flatten-conv rejected" "stfix: fix: $o: the output would not pass the sglang profile: R27 (layer 'blocks.0.conv'): Serialized kitchen_int8 layer 'blocks.0.conv' has input size 36, which is not divisible by its ConvRot group size 256; fix: requantize with a group size that divides the input size, or keep the layer in BF16 (nothing was written; --allow-noncompliant keeps it)"
t_true "flatten-conv rejected: verification grouped by layer" \
    test "$(grep -A1 -x '  layer blocks.0.conv:' "$T_OUT" | sed -n 2p | cut -d: -f1)" = "    error   R27"
t_stdout_has "flatten-conv rejected" "verification (sglang): FAILED"
t_absent "flatten-conv rejected" "$o"
t_no_temp "flatten-conv rejected" "$D"
t_run "flatten-conv rejected --json" 1 "$STFIX" fix "$F/r25_conv_marker.safetensors" -r "$R/flatten-conv.yaml" \
    -o "$o" --json
t_stdout_has "flatten-conv rejected --json" '"status": "rejected"'
t_stdout_has "flatten-conv rejected --json" '"files": []'
t_stdout_has "flatten-conv rejected --json" '{"rule": "R27", "severity": "error"'
t_absent "flatten-conv rejected --json" "$o"
t_run "flatten-conv kept" 0 "$STFIX" fix "$F/r25_conv_marker.safetensors" -r "$R/flatten-conv.yaml" -o "$o" \
    --allow-noncompliant
t_stderr_has "flatten-conv kept" "was kept"
t_tensor "flatten-conv kept" "$o" blocks.0.conv.weight I8 "[8, 36]"
t_same_bytes "flatten-conv kept" "$o" blocks.0.conv.weight "$F/r25_conv_marker.safetensors"
t_run "flatten-conv on a Linear" 2 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/flatten-conv.yaml" \
    -o "$D/flat2.safetensors"
t_stderr_has "flatten-conv on a Linear" "exclude"
t_absent "flatten-conv on a Linear" "$D/flat2.safetensors"

# exclude: dequantize to BF16 (default) / F32, drop scale and marker. The
# conv kernel of r25 claims convrot with G = 256 over K = 36, which cannot
# be undone (see refusal() below); without it the codes are plain rowwise.
o=$D/exclude.safetensors
$TOOL marker "$F/r25_conv_marker.safetensors" "$D/conv.safetensors" blocks.0.conv '{"format": "int8_tensorwise"}'
t_run "exclude" 0 "$STFIX" fix "$D/conv.safetensors" -r "$R/exclude-bf16.yaml" -o "$o"
t_true "exclude: values are codes x scale, rounded to BF16" $TOOL dequant "$o" "$D/conv.safetensors" blocks.0.conv
t_tensor "exclude" "$o" blocks.0.conv.weight BF16 "[8, 4, 3, 3]"
t_no_tensor "exclude" "$o" blocks.0.conv.weight_scale
t_no_tensor "exclude" "$o" blocks.0.conv.comfy_quant
t_check "exclude" "$o" sglang
# Values: without a rotation the result is codes x row scale, rounded to
# the output dtype.
o=$D/exclude32.safetensors
nr=$D/norot.safetensors
$TOOL marker "$F/healthy_int8_g256.safetensors" "$D/norot1.safetensors" blocks.0.attn.qkv '{"format": "int8_tensorwise"}'
$TOOL marker "$D/norot1.safetensors" "$nr" blocks.0.mlp.fc1 '{"format": "int8_tensorwise"}'
t_run "exclude F32" 0 "$STFIX" fix "$nr" -r "$R/exclude-f32.yaml" -o "$o"
t_tensor "exclude F32" "$o" blocks.0.attn.qkv.weight F32 "[16, 256]"
t_true "exclude F32: values are codes x scale" $TOOL dequant "$o" "$nr" blocks.0.attn.qkv
t_run "exclude BF16 values" 0 "$STFIX" fix "$nr" -r "$R/exclude-bf16.yaml" -o "$D/ex16.safetensors"
t_true "exclude BF16: values are codes x scale, rounded" $TOOL dequant "$D/ex16.safetensors" "$nr" blocks.0.attn.qkv
t_check "exclude F32" "$o" comfyui
# A W4A4 weight (N, K/2) packs two codes per byte: it unpacks to (N, K).
o=$D/exclude_w4a4.safetensors
t_run "exclude W4A4" 0 "$STFIX" fix "$F/healthy_w4a4.safetensors" -r "$R/exclude-f32.yaml" -o "$o"
t_tensor "exclude W4A4" "$o" blocks.0.attn.qkv.weight F32 "[16, 256]"
t_no_tensor "exclude W4A4" "$o" blocks.0.attn.qkv.weight_scale
t_check "exclude W4A4" "$o" sglang

# set-marker: add a missing format and drop per_row (missing-format); hoist
# params (nested-params).
o=$D/setm.safetensors
t_run "set-marker missing-format" 0 "$STFIX" fix "$F/r30_missing_format.safetensors" -r "$R/set-marker.yaml" -o "$o"
t_marker_is "set-marker missing-format" "$o" blocks.0.attn.qkv "$CANON256"
t_same_bytes "set-marker missing-format" "$o" blocks.0.attn.qkv.weight "$F/r30_missing_format.safetensors"
t_check "set-marker missing-format" "$o" sglang
t_check "set-marker missing-format" "$o" comfyui
t_run "set-marker nested-params" 0 "$STFIX" fix "$F/r23_params_nested.safetensors" -r "$R/set-marker.yaml" -o "$o"
t_marker_is "set-marker nested-params" "$o" blocks.0.attn.qkv "$CANON256"
t_check "set-marker nested-params" "$o" sglang
# _quantization_metadata mirrors the canonical tensor markers; the rest of
# __metadata__ is kept and gains stfix.version and stfix.recipe_sha256.
o=$D/demo-markers.safetensors
t_run "set-marker mirror" 0 "$STFIX" fix fixtures/demo/demo.safetensors -r "$R/set-marker.yaml" -o "$o" \
    --allow-noncompliant
want='{"format_version": "1.0", "layers": {"blocks.0.attn.out": '"$CANON256"', "blocks.0.attn.qkv": '"$CANON256"', "blocks.0.conv_in": {"format": "int8_tensorwise"}, "blocks.0.mlp.fc1": '"$CANON256"', "blocks.0.mlp.fc2": '"$CANON256"'}}'
t_true "set-marker mirror: _quantization_metadata" test "$($TOOL meta "$o" _quantization_metadata)" = "$want"
t_true "set-marker mirror: format kept" test "$($TOOL meta "$o" format)" = pt
t_true "set-marker mirror: stfix.version" test "$($TOOL meta "$o" stfix.version)" = "$("$STFIX" --version | cut -d' ' -f2)"
t_true "set-marker mirror: stfix.recipe_sha256" test "$($TOOL meta "$o" stfix.recipe_sha256)" = \
    "$(sha256sum "$R/set-marker.yaml" | cut -d' ' -f1)"
t_marker_is "set-marker mirror" "$o" blocks.0.attn.out "$CANON256"
t_run "set-marker drop metadata" 0 "$STFIX" fix fixtures/demo/demo.safetensors -r "$R/set-marker-drop-meta.yaml" \
    -o "$o" --allow-noncompliant
t_true "set-marker drop metadata: gone" sh -c "! $TOOL meta '$o' _quantization_metadata"
t_marker_is "set-marker drop metadata" "$o" blocks.0.mlp.fc2 "$CANON256"

# rewrite-format: a non-upstream name with the int8_tensorwise layout
# (nonstandard-format-name).
o=$D/rename-fmt.safetensors
t_run "rewrite-format" 0 "$STFIX" fix "$F/r30_unknown_format.safetensors" -r "$R/rewrite-format.yaml" -o "$o"
t_marker_is "rewrite-format" "$o" blocks.0.attn.qkv "$CANON256"
t_same_bytes "rewrite-format" "$o" blocks.0.attn.qkv.weight "$F/r30_unknown_format.safetensors"
t_check "rewrite-format" "$o" sglang

# cast-scale: BF16 -> F32, exact.
o=$D/cast.safetensors
t_run "cast-scale" 0 "$STFIX" fix "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" -o "$o"
t_tensor "cast-scale" "$o" blocks.0.attn.qkv.weight_scale F32 "[16, 1]"
t_true "cast-scale: exact widening" $TOOL widened "$o" "$F/r14_scale_bf16.safetensors" blocks.0.attn.qkv.weight_scale
t_check "cast-scale" "$o" sglang

# relabel: U8 weights holding two's complement -> I8, same bytes.
o=$D/relabel.safetensors
t_run "relabel" 0 "$STFIX" fix "$F/r14_weight_u8.safetensors" -r "$R/relabel.yaml" -o "$o"
t_tensor "relabel" "$o" blocks.0.attn.qkv.weight I8 "[16, 256]"
t_same_bytes "relabel" "$o" blocks.0.attn.qkv.weight "$F/r14_weight_u8.safetensors"
t_check "relabel" "$o" sglang

# requantize: scalar-scale ConvRot (scalar-scale-convrot) and Sylvester G=128
# (sylvester-rotation).
o=$D/requant.safetensors
t_run "requantize scalar" 0 "$STFIX" fix "$F/r40_scalar_scale_convrot.safetensors" -r "$R/requantize.yaml" \
    -o "$o" --error-report
t_tensor "requantize scalar" "$o" blocks.0.attn.qkv.weight_scale F32 "[16, 1]"
t_marker_is "requantize scalar" "$o" blocks.0.attn.qkv "$CANON256"
t_stdout_has "requantize scalar" "error report (1 layer(s) requantized or dequantized):"
t_stdout_has "requantize scalar" "worst 1 by SNR:"
t_check "requantize scalar" "$o" sglang
t_run "requantize sylvester" 0 "$STFIX" fix "$F/r24_g128.safetensors" -r "$R/requantize.yaml" -o "$o" --json \
    --error-report
t_stdout_has "requantize sylvester" '"status": "ok"'
t_stdout_has "requantize sylvester" '"metrics": ['
t_marker_is "requantize sylvester" "$o" blocks.0.attn.qkv "$CANON256"
t_check "requantize sylvester" "$o" sglang

# requantize of an unquantized BF16 checkpoint (rules/quantize-int8-convrot.yaml).
bf=$D/bf16.safetensors
python3 tests/gen/gen_bf16_ckpt.py "$bf" 4MiB 256
o=$D/q.safetensors
t_run "quantize BF16" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$o"
t_tensor "quantize BF16" "$o" double_blocks.0.mlp.0.weight I8 "[1024, 256]"
t_tensor "quantize BF16" "$o" double_blocks.0.mlp.0.weight_scale F32 "[1024, 1]"
t_tensor "quantize BF16" "$o" double_blocks.0.norm1.weight BF16 "[256]"
t_same_bytes "quantize BF16" "$o" double_blocks.0.attn.q.bias "$bf"
t_marker_is "quantize BF16" "$o" double_blocks.0.mlp.2 "$CANON256"
t_marker_is "quantize BF16 (K = 64)" "$o" img_in \
    '{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 64}'
t_check "quantize BF16" "$o" sglang
t_check "quantize BF16" "$o" comfyui
for m in cuda fp32 eager; do
    t_run "quantize BF16 --quant-mode $m" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml \
        -o "$D/q-$m.safetensors" --quant-mode "$m"
done
t_true "--quant-mode cuda is the recipe's mode" cmp "$o" "$D/q-cuda.safetensors"

# --quant-mode into convrot_w4a4 (G = 16) on one BF16 [2, 64] weight: row 0
# is W4A4-1, w[k] = 0.5 * ((37k mod 11) - 5); row 1 the BF16 row derived by
# hand in tests/unit/test_w4a4.c (w[17g] = 4, 183/128, -255/128, 201/64).
# eager computes each scale in BF16 and rounds each quotient to BF16 before
# rint; cuda keeps fp32 scales and multiplies by their reciprocal.
t_hex() { # NAME FILE TENSOR HEX: the tensor's bytes are HEX
    _h=$($TOOL tensor "$2" "$3" | od -An -v -tx1 | tr -d ' \n')
    if [ "$_h" = "$4" ]; then t_ok "$1: $3 bytes"; else t_notok "$1: $3 bytes" "got $_h"; fi
}
w4in=$D/w4a4-in.safetensors
$TOOL new "$w4in" blk.lin.weight BF16 "[2, 64]" "$(python3 -c '
w = [0.5 * ((37 * k) % 11 - 5) for k in range(64)] + [0.0] * 64
for g, c in enumerate((4, 183 / 128, -255 / 128, 201 / 64)): w[64 + 17 * g] = c
print(w)')"
W4ROW0=d3f01e3bc2ef51ef4cd3f11ef017f01d3f019f012ff1d34c12fb12e45d2f01d3
for m in eager cuda; do
    t_run "w4a4 --quant-mode $m" 0 "$STFIX" fix "$w4in" -r "$R/requantize-w4a4.yaml" \
        -o "$D/w4-$m.safetensors" --quant-mode "$m"
    t_tensor "w4a4 --quant-mode $m" "$D/w4-$m.safetensors" blk.lin.weight I8 "[2, 32]"
    t_tensor "w4a4 --quant-mode $m" "$D/w4-$m.safetensors" blk.lin.weight_scale F32 "[2]"
done
t_hex "w4a4 eager" "$D/w4-eager.safetensors" blk.lin.weight \
    ${W4ROW0}7797779777979979222e222e222eeee24ccc4ccc4cccc4446a666a666a66a6aa
t_hex "w4a4 eager" "$D/w4-eager.safetensors" blk.lin.weight_scale 0000173f0000123e
t_hex "w4a4 cuda" "$D/w4-cuda.safetensors" blk.lin.weight \
    ${W4ROW0}7797779777979979333d333d333dddd33ddd3ddd3dddd3335b555b555b55b5bb
t_hex "w4a4 cuda" "$D/w4-cuda.safetensors" blk.lin.weight_scale 6edb163f2549123e
t_check "w4a4 eager" "$D/w4-eager.safetensors" comfyui
t_run "requantize on_indivisible: fail" 2 "$STFIX" fix "$bf" -r "$R/requantize-fail-indivisible.yaml" \
    -o "$D/nodiv.safetensors"
t_stderr_has "requantize on_indivisible: fail" "img_in"
t_absent "requantize on_indivisible: fail" "$D/nodiv.safetensors"

# rename: tensors and _quantization_metadata together; collisions are errors.
o=$D/renamed.safetensors
t_run "rename" 0 "$STFIX" fix fixtures/demo/healthy.safetensors -r "$R/rename.yaml" -o "$o"
t_tensor "rename" "$o" model.diffusion_model.blocks.0.attn.qkv.weight I8 "[24, 256]"
t_no_tensor "rename" "$o" blocks.0.attn.qkv.weight
t_same_bytes "rename" "$o" model.diffusion_model.blocks.0.attn.qkv.weight fixtures/demo/healthy.safetensors \
    blocks.0.attn.qkv.weight
t_true "rename: metadata keys" sh -c "$TOOL meta '$o' _quantization_metadata | grep -qF '\"model.diffusion_model.blocks.0.attn.qkv\": '"
t_check "rename" "$o" sglang
t_check "rename" "$o" comfyui
t_run "rename collision" 2 "$STFIX" fix fixtures/demo/healthy.safetensors -r "$R/rename-collision.yaml" \
    -o "$D/collide.safetensors"
t_stderr_has "rename collision" "blocks.0.attn.out"
t_absent "rename collision" "$D/collide.safetensors"

# Names are byte strings with a length: a rename keeps what follows a
# U+0000, "blocks.a\u0000b" and "other\u0000" stay apart from "blocks.a" and
# "other", and a quantized layer keeps its name in the tensors and in the
# rebuilt _quantization_metadata.
python3 -c 'import struct,sys
parts = []
for i, n in enumerate(["blocks.a\\u0000b.weight", "blocks.a.weight", "other\\u0000", "other"]):
    parts.append("\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}" % (n, 4 * i, 4 * i + 4))
h = ("{" + ",".join(parts) + "}").encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(range(16)))' "$D/nul.safetensors"
o=$D/nul-renamed.safetensors
t_run "rename U+0000" 0 "$STFIX" fix "$D/nul.safetensors" -r "$R/rename.yaml" -o "$o"
t_stdout_has "rename U+0000" "  blocks.a\u0000b -> model.diffusion_model.blocks.a\u0000b: prefix -> rename -> 'model.diffusion_model.blocks.a\u0000b'"
t_utf8 "rename U+0000"
t_run "rename U+0000: names" 0 "$STFIX" inspect --json "$o"
for n in 'model.diffusion_model.blocks.a\u0000b.weight' model.diffusion_model.blocks.a.weight 'other\u0000' other; do
    t_stdout_has "rename U+0000: names" "{\"name\": \"$n\", \"dtype\": \"F32\""
done
t_run "plan U+0000 --json" 0 "$STFIX" plan --json "$D/nul.safetensors" -r "$R/rename.yaml"
t_stdout_has "plan U+0000 --json" '{"name": "other\u0000", "op": "copy", "dtype": "F32", "shape": [1], "bytes": 4, "src": "other\u0000", "layer": null}'
t_stdout_has "plan U+0000 --json" '{"prefix": "blocks.a\u0000b", "out_prefix": "model.diffusion_model.blocks.a\u0000b", "rules": ["prefix"]'
python3 -c 'import json,struct,sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
old, new = "blocks.0.attn.qkv", "blocks.0.attn\0qkv"
m = h["__metadata__"]
q = json.loads(m["_quantization_metadata"])
q["layers"] = {new if k == old else k: v for k, v in q["layers"].items()}
m["_quantization_metadata"] = json.dumps(q)
h = {k.replace(old, new): v for k, v in h.items()}
t = json.dumps(h, separators=(",", ":")).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])' \
    fixtures/demo/healthy.safetensors "$D/nul-layer.safetensors"
o=$D/nul-layer-renamed.safetensors
t_run "rename U+0000 layer" 0 "$STFIX" fix "$D/nul-layer.safetensors" -r "$R/rename.yaml" -o "$o"
t_tensor "rename U+0000 layer" "$o" 'model.diffusion_model.blocks.0.attn\u0000qkv.weight' I8 "[24, 256]"
t_tensor "rename U+0000 layer" "$o" 'model.diffusion_model.blocks.0.attn\u0000qkv.comfy_quant' U8 "[72]"
t_no_tensor "rename U+0000 layer" "$o" model.diffusion_model.blocks.0.attn.weight
t_true "rename U+0000 layer: metadata keys" sh -c "$TOOL meta '$o' _quantization_metadata | grep -qF '\"model.diffusion_model.blocks.0.attn\\u0000qkv\": '"
t_check "rename U+0000 layer" "$o" sglang
t_check "rename U+0000 layer" "$o" comfyui

# drop: a marker and scale without a weight (orphan-tensors).
o=$D/drop.safetensors
t_run "drop" 0 "$STFIX" fix "$F/r12_missing_weight.safetensors" -r "$R/drop.yaml" -o "$o"
t_no_tensor "drop" "$o" blocks.0.attn.qkv.comfy_quant
t_no_tensor "drop" "$o" blocks.0.attn.qkv.weight_scale
t_check "drop" "$o" sglang

# ------------------------------------------------------------- bundled recipes
# Every broken fixture, fixed with the bundled recipe for the target of its
# rule (R: sglang, C: comfyui; probes and healthy files: both), passes check
# for that target -- except the defects that cannot be repaired by design,
# for which the specific refusal is asserted (see refusal() below).
refusal() { # FILE TARGET -> "RC TEXT" when the fix must refuse, else nothing
    case "$1:$2" in
    # Tensors that are not there cannot be made up: a missing scale (R12/C4);
    # an I8 weight without any marker (R10/C1: its rotation and group size
    # are unknown, and infer-marker names the layer).
    r12_missing_scale*:sglang) echo "1 R12" ;;
    r12_missing_scale*:comfyui) echo "1 C4" ;;
    r10_no_marker*:*) echo "2 infer-marker: the layer has no marker and the file does not determine it" ;;
    # An F8_E4M3 weight with a U8 scale of the wrong shape for MXFP8: its
    # tensors fit no format.
    r09_mxfp8_shape*:comfyui) echo "2 its tensors fit no format" ;;
    # U8 weights become I8 only on an explicit recipe assertion (storage-dtype-mismatch, relabel).
    r14_weight_u8*:sglang) echo "1 R14" ;;
    r14_weight_u8*:comfyui) echo "1 C10" ;;
    # A marker whose JSON is not an object gives no format to normalise, and
    # the file holds no other marker: the recipe would have to name one.
    r07_marker_not_object*:*) echo "2 infer-marker: the marker cannot be read and the file does not determine it" ;;
    # MXFP8 synthesised from quant_format with a scale of the wrong shape:
    # nothing tells the block layout, so nothing is decoded (R9).
    # quant_format=mxfp8 is never written (stfix-defects(7), MARKER CHANNELS), so its synthesised
    # markers go with it and the incompatible F8 weight is left unmarked.
    r09_mxfp8_shape*:sglang) echo "2 its tensors fit no format" ;;
    # Two spellings of one layer need model-specific fusion (split-qkv, R20).
    r20_collision*:sglang) echo "1 R20" ;;
    # W4A8 and NVFP4 payloads are not among the formats requantize decodes
    # (float, FP8 x scale, INT8 tensor/row/column, ConvRot, Sylvester, W4A4).
    r4[4-9]_w4a8*:sglang | r6[01]_w4a8*:sglang) echo "2 cannot be decoded" ;;
    r5[0-4]_nvfp4*:sglang) echo "2 cannot be decoded" ;;
    # ComfyUI keeps W4A8 layers, and comfy-kitchen's layout refuses these:
    # K = 64 is not a multiple of convrot_groupsize 256 (C22); the rotation
    # the codes were made with cannot be changed without decoding them. The
    # 3-D one is excluded as a non-Linear layer, which needs a decode too.
    r47_w4a8*:comfyui) echo "2 cannot be decoded" ;;
    r4[4-9]_w4a8*:comfyui | r6[01]_w4a8*:comfyui) echo "1 C22" ;;
    esac
}
pairs=$D/pairs
grep -v '^#' "$F/MANIFEST" | while read -r file rule; do
    case "$rule" in
    R*) echo "$file sglang" ;;
    C*) echo "$file comfyui" ;;
    *) echo "$file sglang"; echo "$file comfyui" ;;
    esac
done | sort -u >"$pairs"
while read -r file target; do
    n="bundled $target: $file"
    base=${file%.safetensors}
    base=${base%.index.json}
    o="$D/fixed-$target-$base.safetensors"
    ref=$(refusal "$file" "$target")
    if [ -n "$ref" ]; then
        t_run "$n" "${ref%% *}" "$STFIX" fix "$F/$file" -r "rules/$target-int8-convrot.yaml" -o "$o"
        t_stderr_has "$n" "${ref#* }"
        t_absent "$n" "$o"
    else
        t_run "$n" 0 "$STFIX" fix "$F/$file" -r "rules/$target-int8-convrot.yaml" -o "$o"
        t_check "$n" "$o" "$target"
    fi
done <"$pairs"
# metadata-prefix-mismatch (c15): the metadata marker keyed
# model.diffusion_model.P is merged into the bare layer P (which has none), then
# normalised: a canonical tensor marker and _quantization_metadata keyed P.
for tg in sglang comfyui; do
    o="$D/m5-$tg.safetensors"
    t_run "prefix re-key $tg" 0 "$STFIX" fix "$F/c15_meta_prefix.safetensors" \
        -r "rules/$tg-int8-convrot.yaml" -o "$o"
    t_stdout_has "prefix re-key $tg" "  model.diffusion_model.blocks.0.attn.qkv -> blocks.0.attn.qkv: rekey-metadata-prefix -> rename -> 'blocks.0.attn.qkv'; marker merged into that layer"
    t_check "prefix re-key $tg" "$o" "$tg"
    t_true "prefix re-key $tg: metadata and marker" python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
mk = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256}
q = json.loads(h["__metadata__"]["_quantization_metadata"])
t = h["blocks.0.attn.qkv.comfy_quant"]
raw = b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]]
sys.exit(0 if q["layers"] == {"blocks.0.attn.qkv": mk} and json.loads(raw) == mk else 1)' "$o"
done
# metadata-prefix-mismatch the other way (c15_meta_bare): the bare metadata key
# P is merged into the all-in-one layer model.diffusion_model.P; the output's
# marker and _quantization_metadata are keyed by the tensor prefix.
for tg in sglang comfyui; do
    o="$D/m5b-$tg.safetensors"
    t_run "prefix bare re-key $tg" 0 "$STFIX" fix "$F/c15_meta_bare.safetensors" \
        -r "rules/$tg-int8-convrot.yaml" -o "$o"
    t_stdout_has "prefix bare re-key $tg" "  blocks.0.attn.qkv -> model.diffusion_model.blocks.0.attn.qkv: rekey-metadata-bare -> rename -> 'model.diffusion_model.blocks.0.attn.qkv'; marker merged into that layer"
    t_check "prefix bare re-key $tg" "$o" "$tg"
    t_true "prefix bare re-key $tg: metadata and marker" python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
P = "model.diffusion_model.blocks.0.attn.qkv"
mk = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256}
q = json.loads(h["__metadata__"]["_quantization_metadata"])
t = h[P + ".comfy_quant"]
raw = b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]]
names = sorted(k for k in h if k != "__metadata__")
sys.exit(0 if q["layers"] == {P: mk} and json.loads(raw) == mk and
         names == [P + ".comfy_quant", P + ".weight", P + ".weight_scale"] else 1)' "$o"
done
# Grouped [N,g] scales (stfix-defects(7), SCALE SHAPES) are requantized by their
# own rule for both targets (the exact values: test_job's
# test_grouped_requant_equals_kernels).
for tg in sglang comfyui; do
    t_run "grouped scales $tg" 0 "$STFIX" fix "$F/r15_grouped_scale.safetensors" \
        -r "rules/$tg-int8-convrot.yaml" -o "$D/grouped-$tg.safetensors"
    t_stdout_has "grouped scales $tg" "blocks.0.attn.qkv: requantize-grouped-scales -> requantize to int8_tensorwise, G=256"
    t_check "grouped scales $tg" "$D/grouped-$tg.safetensors" "$tg"
done

# ------------------------------------------------------------- determinism
t_run "determinism -j 1" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$D/j1.safetensors" -j 1
t_run "determinism -j 2" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$D/j2.safetensors" -j 2
t_run "determinism -j 2 again" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$D/j2b.safetensors" -j 2
t_true "determinism: -j 1 and -j 2 identical" cmp "$D/j1.safetensors" "$D/j2.safetensors"
t_true "determinism: two runs identical" cmp "$D/j2.safetensors" "$D/j2b.safetensors"
"$STFIX" fix "$F/r24_g128.safetensors" -r "$R/requantize.yaml" -o "$D/r1.safetensors" -j 1 >/dev/null 2>&1
"$STFIX" fix "$F/r24_g128.safetensors" -r "$R/requantize.yaml" -o "$D/r2.safetensors" -j 2 >/dev/null 2>&1
t_true "determinism: INT8 requantize -j 1 and -j 2 identical" cmp "$D/r1.safetensors" "$D/r2.safetensors"
t_run "determinism: --max-mem 1MiB" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml \
    -o "$D/mm.safetensors" --max-mem 1MiB -j 2
t_true "determinism: --max-mem does not change the bytes" cmp "$D/j1.safetensors" "$D/mm.safetensors"
# The demo: broken for both consumers before, clean for each after its recipe.
for tg in sglang comfyui; do
    t_run "demo $tg: broken before" 1 "$STFIX" check fixtures/demo/demo.safetensors --target "$tg"
    t_run "demo $tg" 0 "$STFIX" fix fixtures/demo/demo.safetensors -r "rules/$tg-int8-convrot.yaml" \
        -o "$D/demo-$tg.safetensors"
    t_run "demo $tg: clean after, with the probes" 0 "$STFIX" check --numeric "$D/demo-$tg.safetensors"
done
# The four third-party exports the end-to-end bench repairs
# (tests/gen/gen_quant_ckpt.py): the bytes do not depend on -j.
printf 'stfix: 1\ntarget: sglang\nrules:\n  - name: requantize-fp8\n    match: {format: float8_e4m3fn}\n    do: requantize\n' \
    >"$D/fp8.yaml"
for kind in sylvester fp8 int8-rows int8-cols; do
    python3 tests/gen/gen_quant_ckpt.py "$kind" "$D/$kind.safetensors" 2MiB 256
    rq=rules/sglang-int8-convrot.yaml
    [ "$kind" = fp8 ] && rq=$D/fp8.yaml
    for j in 1 2 4; do
        t_run "determinism: $kind -j $j" 0 "$STFIX" fix "$D/$kind.safetensors" -r "$rq" \
            -o "$D/$kind.j$j.safetensors" -j "$j"
    done
    t_stdout_has "determinism: $kind" "double_blocks.0.mlp.0: requantize"
    t_check "determinism: $kind" "$D/$kind.j1.safetensors" sglang
    t_true "determinism: $kind -j 1 and -j 2 identical" cmp "$D/$kind.j1.safetensors" "$D/$kind.j2.safetensors"
    t_true "determinism: $kind -j 1 and -j 4 identical" cmp "$D/$kind.j1.safetensors" "$D/$kind.j4.safetensors"
    rm -f "$D/$kind".*
done
t_run "determinism: sharded" 0 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$D/sh.safetensors" \
    --max-shard-size 1MB -j 2
t_true "determinism: sharded index" test -f "$D/sh.safetensors.index.json"
t_check "determinism: sharded" "$D/sh.safetensors.index.json" sglang

# ------------------------------------------------------------- ENOSPC
mnt=$D/full
mkdir -p "$mnt"
if mount -t tmpfs -o size=1m tmpfs "$mnt" 2>/dev/null; then
    cp "$bf" "$D/bf.copy"
    t_run "ENOSPC" 4 "$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$mnt/out.safetensors"
    t_stderr_has "ENOSPC" "No space left on device"
    t_absent "ENOSPC" "$mnt/out.safetensors"
    t_no_temp "ENOSPC" "$mnt"
    t_true "ENOSPC: input byte-identical" cmp "$bf" "$D/bf.copy"
    umount "$mnt"
else
    echo "# ENOSPC: skipped: cannot mount a 1 MiB tmpfs here (needs root); the writer's"
    echo "#   library test covers ENOSPC through the write hook"
fi

# ------------------------------------------------------------- --in-place
ip=$D/inplace.safetensors
cp "$F/r14_scale_bf16.safetensors" "$ip"
t_run "--in-place" 0 "$STFIX" fix "$ip" -r "$R/cast-scale.yaml" --in-place
t_tensor "--in-place" "$ip" blocks.0.attn.qkv.weight_scale F32 "[16, 1]"
t_true "--in-place: same as -o" cmp "$ip" "$D/cast.safetensors"
t_no_temp "--in-place" "$D"
# A failing fix (verification rejects the output) leaves the input as it was.
cp "$F/r25_conv_marker.safetensors" "$ip"
t_run "--in-place rejected" 1 "$STFIX" fix "$ip" -r "$R/flatten-conv.yaml" --in-place
t_true "--in-place rejected: input unchanged" cmp "$ip" "$F/r25_conv_marker.safetensors"
cp fixtures/demo/healthy.safetensors "$ip"
t_run "--in-place refused" 2 "$STFIX" fix "$ip" -r "$R/rename-collision.yaml" --in-place
t_true "--in-place refused: input unchanged" cmp "$ip" fixtures/demo/healthy.safetensors
t_no_temp "--in-place rejected" "$D"

# ------------------------------------------------------------- nothing to change
# A recipe that changes nothing: the output is the input's bytes (no stamp),
# stdout and stderr say so in one line each, the JSON says "unchanged" with
# "changed_layers": 0; --fail-if-unchanged writes nothing and exits 1.
h=$F/healthy_int8_g256.safetensors
t_run "unchanged" 0 "$STFIX" fix "$h" -r "$R/cast-scale.yaml" -o "$D/same.safetensors"
t_stdout_has "unchanged" "layers: 0 changed, 2 unchanged"
t_stdout_has "unchanged" "unchanged: the recipe changes nothing; the output is the input's bytes"
t_stderr_is "unchanged" "stfix: fix: the recipe changes nothing in $h; the output is its bytes, unstamped (--fail-if-unchanged refuses this)"
t_true "unchanged: the input's bytes" cmp "$h" "$D/same.safetensors"
t_run "unchanged --json" 0 "$STFIX" fix --json "$h" -r "$R/cast-scale.yaml" -o "$D/same2.safetensors"
t_true "unchanged --json: changed_layers 0" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["changed_layers"] == 0 and d["status"] == "unchanged" and d["files"], d' "$T_OUT"
t_run "--fail-if-unchanged" 1 "$STFIX" fix "$h" -r "$R/cast-scale.yaml" -o "$D/same3.safetensors" \
    --fail-if-unchanged
t_stderr_is "--fail-if-unchanged" "stfix: fix: the recipe changes nothing in $h; nothing written (--fail-if-unchanged)"
t_stdout_has "--fail-if-unchanged" "unchanged: the recipe changes nothing; nothing written"
t_stdout_has "--fail-if-unchanged" "files: 0 (nothing written)"
t_absent "--fail-if-unchanged" "$D/same3.safetensors"
t_no_temp "--fail-if-unchanged" "$D"
t_run "--fail-if-unchanged --json" 1 "$STFIX" fix --json --fail-if-unchanged "$h" \
    -r "$R/cast-scale.yaml" -o "$D/same3.safetensors"
t_true "--fail-if-unchanged --json" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["changed_layers"] == 0 and d["status"] == "unchanged" and d["files"] == [], d' "$T_OUT"
t_absent "--fail-if-unchanged --json" "$D/same3.safetensors"
# A recipe that changes something: changed_layers counts, and the flag is quiet.
t_run "changed --fail-if-unchanged" 0 "$STFIX" fix --json --fail-if-unchanged \
    "$F/r14_scale_bf16.safetensors" -r "$R/cast-scale.yaml" -o "$D/cast2.safetensors"
t_true "changed: changed_layers" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["changed_layers"] == d["layers"]["changed"] > 0, d' "$T_OUT"
t_true "changed --fail-if-unchanged: stderr empty" test ! -s "$T_ERR"
