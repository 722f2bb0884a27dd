#!/bin/sh
# A repair recipe changes only what its consumer refuses: batch with each
# repair recipe over the fixtures reports every checkpoint that check
# --target passes as compliant and writes nothing for it, and the others
# with their exact statuses; fix of a file with warnings only says
# unchanged and writes its bytes; plan says which layers it leaves alone
# and why; a layer left alone keeps its bytes and its metadata entry while
# another is repaired; the H1 probe's column verdict still opens a layer
# whose rules ask for it; quant_format is kept.
. tests/cli/lib.sh
F=fixtures/comfy
D=$T_TMP
TOOL="python3 tests/cli/fix_tool.py"

# ------------------------------------------------ batch: compliant is what check passes
# REPORT TARGET: "STATUS NAME CHECK-EXIT OUTPUT-WRITTEN" per report line, sorted by name.
statuses() {
    python3 -c 'import json, os, subprocess, sys
rows = []
for l in open(sys.argv[1]):
    d = json.loads(l)
    rc = subprocess.run([sys.argv[3], "check", "--target", sys.argv[2], d["input"]],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    out = d["output"] is not None and os.path.exists(d["output"])
    rows.append("%s %s %d %s" % (d["status"], os.path.basename(d["input"]), rc,
                                 "written" if out else "-"))
print("\n".join(sorted(rows, key=lambda r: r.split()[1])))' "$1" "$2" "$STFIX"
}

t_run "batch comfyui-repair" 1 "$STFIX" batch -r comfyui-repair -o "$D/bc" "$F"
t_stderr_has "batch comfyui-repair" "  fixed          27
  compliant      22
  failed         13"
t_stderr_has "batch comfyui-repair" "  left alone 22: compliant, nothing written for them"
statuses "$D/bc/stfix-report.jsonl" comfyui >"$D/bc.txt"
cat >"$D/bc.want" <<'EOF'
fixed c15_meta_bare.safetensors 1 written
fixed c15_meta_prefix.safetensors 1 written
compliant healthy_fp8.safetensors 0 -
compliant healthy_int8_g16.safetensors 0 -
compliant healthy_int8_g256.safetensors 0 -
compliant healthy_int8_g64.safetensors 0 -
compliant healthy_meta_only.safetensors 0 -
compliant healthy_mixed_int8_w4a4.safetensors 0 -
compliant healthy_sharded.safetensors.index.json 0 -
compliant healthy_w4a4.safetensors 0 -
compliant probe_bad_scales.safetensors 0 -
fixed probe_colquant_square.safetensors 1 written
fixed probe_rowquant_flat.safetensors 1 written
compliant probe_sylvester_data.safetensors 0 -
fixed r01_meta_not_json.safetensors 1 written
fixed r02_meta_not_object.safetensors 1 written
fixed r03_meta_no_layers.safetensors 1 written
fixed r04_meta_layer_string.safetensors 1 written
compliant r05_conflict.safetensors 0 -
fixed r06_marker_nul.safetensors 1 written
failed r07_marker_not_object.safetensors 1 -
fixed r08_marker_bf16.safetensors 1 written
failed r09_mxfp8_shape.safetensors 1 -
fixed r10_no_marker.safetensors 1 written
failed r12_missing_scale.safetensors 1 -
fixed r12_missing_weight.safetensors 1 written
compliant r13_tensorwise_3d.safetensors 0 -
fixed r14_scale_bf16.safetensors 1 written
failed r14_weight_u8.safetensors 1 -
fixed r15_flat_scale_square.safetensors 1 written
fixed r15_grouped_scale.safetensors 1 written
fixed r16_w4a4_scale_f16.safetensors 1 written
fixed r17_w4a4_scale_2d.safetensors 1 written
fixed r18_w4a4_g128.safetensors 1 written
fixed r19_w4a4_k96.safetensors 1 written
compliant r20_collision.safetensors 0 -
compliant r23_convrot_int.safetensors 0 -
compliant r23_no_convrot.safetensors 0 -
compliant r23_params_nested.safetensors 0 -
fixed r24_g128.safetensors 1 written
compliant r24_g_string.safetensors 0 -
fixed r25_conv_marker.safetensors 1 written
fixed r27_k_not_multiple.safetensors 1 written
compliant r30_int8_plus_fp8.safetensors 0 -
fixed r30_missing_format.safetensors 1 written
fixed r30_unknown_format.safetensors 1 written
compliant r40_scalar_scale_convrot.safetensors 0 -
failed r44_w4a8_group2.safetensors 1 -
failed r45_w4a8_srel_u8.safetensors 1 -
failed r46_w4a8_schan_f16.safetensors 1 -
failed r47_w4a8_3d.safetensors 1 -
failed r48_w4a8_srel_shape.safetensors 1 -
failed r49_w4a8_codebook.safetensors 1 -
failed r49_w4a8_correction.safetensors 1 -
fixed r50_nvfp4_weight_i8.safetensors 1 written
fixed r51_nvfp4_scale2_bf16.safetensors 1 written
compliant r52_nvfp4_3d.safetensors 0 -
compliant r53_nvfp4_scale_shape.safetensors 0 -
compliant r54_nvfp4_prequant.safetensors 0 -
fixed r57_w4a4_linear_dtype.safetensors 1 written
failed r60_w4a8_int8_companion.safetensors 1 -
failed r61_w4a8_no_convrot.safetensors 1 -
EOF
t_true "batch comfyui-repair: statuses" cmp "$D/bc.want" "$D/bc.txt"
t_true "batch comfyui-repair: every file check passes is compliant" \
    sh -c "! grep -q -e '^compliant .* 1 ' -e ' 0 written' -e '^fixed .* 0 ' -e '^failed .* 0 ' '$D/bc.txt'"
t_true "batch comfyui-repair: nothing written for them" \
    sh -c "! ls '$D/bc' | grep -q -e '^healthy' -e '^r05' -e '^r13' -e '^r23' -e '^r24_g_string' -e '^r52'"

t_run "batch sglang-repair" 1 "$STFIX" batch -r sglang-repair -o "$D/bs" "$F"
statuses "$D/bs/stfix-report.jsonl" sglang >"$D/bs.txt"
t_true "batch sglang-repair: compliant exactly where check passes" \
    sh -c "! grep -q -e '^compliant .* 1 ' -e ' 0 written' -e '^fixed .* 0 ' -e '^failed .* 0 ' '$D/bs.txt'"
t_true "batch sglang-repair: ten compliant" test "$(grep -c '^compliant ' "$D/bs.txt")" = 10
t_true "batch sglang-repair: 33 fixed" test "$(grep -c '^fixed .* written$' "$D/bs.txt")" = 33

t_run "batch repair-scales" 1 "$STFIX" batch -r repair-scales -o "$D/br" "$F"
statuses "$D/br/stfix-report.jsonl" all >"$D/br.txt"
t_true "batch repair-scales: compliant exactly where check passes" \
    sh -c "! grep -q -e '^compliant .* 1 ' -e ' 0 written' -e '^fixed .* 0 ' -e '^failed .* 0 ' '$D/br.txt'"

# ------------------------------------------------ fix: warnings only, unchanged
N=$F/r23_params_nested.safetensors
t_run "fix warnings only" 0 "$STFIX" fix "$N" -r comfyui-repair -o "$D/nested.safetensors"
t_stdout_has "fix warnings only" "unchanged: the recipe changes nothing; the output is the input's bytes"
t_stderr_is "fix warnings only" "stfix: fix: the recipe changes nothing in $N; the output is its bytes, unstamped (--fail-if-unchanged refuses this)"
t_true "fix warnings only: the input's bytes" cmp "$N" "$D/nested.safetensors"

# ------------------------------------------------ plan: the layers left alone
t_run "plan left alone" 0 "$STFIX" plan "$N" -r comfyui-repair
cat >"$D/plan.want" <<EOF
plan: $N with comfyui-repair
layer blocks.0.attn.qkv
  rules: (none)
  actions: (none)
  summary: left alone: no error finding of comfyui (repair recipe)
    copy         blocks.0.attn.qkv.weight_scale F32 (16, 1) 64 bytes
    copy         blocks.0.attn.qkv.weight I8 (16, 256) 4096 bytes
    copy         blocks.0.attn.qkv.comfy_quant U8 (84,) 84 bytes
metadata: format = pt
totals: 0 tensor(s) changed, 3 copied, 0 dropped; 4244 bytes to write, 4244 bytes copied
unchanged: the recipe changes nothing; fix would write the input's bytes, unstamped
EOF
t_stdout_is "plan left alone" "$D/plan.want"
# The same file through a conversion recipe is rewritten as before.
t_run "plan conversion" 0 "$STFIX" plan "$N" -r comfyui-int8-convrot
t_stdout_has "plan conversion" "  rules: "
t_true "plan conversion: nothing left alone" sh -c "! grep -q 'left alone' '$T_OUT'"

# One layer refused, one accepted, both in _quantization_metadata: the
# refused one is repaired, the other keeps its tensors and its entry.
M=$F/healthy_mixed_int8_w4a4.safetensors
$TOOL marker "$M" "$D/two0.safetensors" blocks.0.mlp.fc1 '{"format": "int8_perrow"}'
python3 - "$D/two0.safetensors" "$D/two.safetensors" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
q = {"format_version": "1.0", "layers": {
    "blocks.0.attn.qkv": {"format": "convrot_w4a4", "convrot_groupsize": 64},
    "blocks.0.mlp.fc1": {"format": "int8_perrow"}}}
h["__metadata__"]["_quantization_metadata"] = json.dumps(q)
h = json.dumps(h, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + b[8 + n:])
EOF
t_run "two layers: plan" 0 "$STFIX" plan "$D/two.safetensors" -r comfyui-repair
t_stdout_has "two layers: plan" "layer blocks.0.attn.qkv
  rules: (none)
  actions: (none)
  summary: left alone: no error finding of comfyui (repair recipe)"
t_stdout_has "two layers: plan" "layer blocks.0.mlp.fc1
  rules: rename-int8-aliases, infer-int8-markers, normalise-markers"
t_run "two layers: fix" 0 "$STFIX" fix "$D/two.safetensors" -r comfyui-repair -o "$D/two.out.safetensors"
t_stdout_has "two layers: fix" "layers: 1 changed, 1 unchanged"
for x in weight weight_scale comfy_quant; do
    $TOOL tensor "$D/two.safetensors" blocks.0.attn.qkv.$x >"$D/in.$x"
    $TOOL tensor "$D/two.out.safetensors" blocks.0.attn.qkv.$x >"$D/out.$x"
    t_true "two layers: qkv.$x kept" cmp "$D/in.$x" "$D/out.$x"
done
t_run "two layers: metadata entry kept" 0 $TOOL meta "$D/two.out.safetensors" _quantization_metadata
t_true "two layers: metadata entry kept" python3 -c 'import json, sys
q = json.loads(open(sys.argv[1]).read())["layers"]
assert q["blocks.0.attn.qkv"] == {"format": "convrot_w4a4", "convrot_groupsize": 64}, q
assert q["blocks.0.mlp.fc1"]["format"] == "int8_tensorwise", q' "$T_OUT"
t_run "two layers: check" 0 "$STFIX" check --target comfyui "$D/two.out.safetensors"

# ------------------------------------------------ the H1 probe still opens a layer
# A square INT8 weight with (N, 1) scales passes the header checks; H1 tells
# codes quantized per column (requantized) from codes quantized per row
# (left alone).
$TOOL edit "$F/probe_colquant_square.safetensors" "$D/colsq.safetensors" blocks.0.attn.qkv.weight_scale '[64, 1]'
$TOOL edit "$F/probe_rowquant_flat.safetensors" "$D/rowsq.safetensors" blocks.0.attn.qkv.weight_scale '[64, 1]'
t_run "H1 column: check passes" 0 "$STFIX" check --target comfyui "$D/colsq.safetensors"
t_run "H1 column: plan" 0 "$STFIX" plan "$D/colsq.safetensors" -r comfyui-repair
t_stdout_has "H1 column: plan" "layer blocks.0.attn.qkv
  rules: requantize-columnwise
  actions: requantize
  summary: requantize to int8_tensorwise, G=64"
t_run "H1 row: plan" 0 "$STFIX" plan "$D/rowsq.safetensors" -r comfyui-repair
t_stdout_has "H1 row: plan" "  summary: left alone: no error finding of comfyui (repair recipe)"
t_run "H1 column: batch" 0 "$STFIX" batch -r comfyui-repair -o "$D/bh" "$D/colsq.safetensors" "$D/rowsq.safetensors"
t_stderr_has "H1 column: batch" "  fixed           1
  compliant       1"

# ------------------------------------------------ quant_format
# A repair recipe that changes no layer keeps SGLang's quant_format key, as
# every other byte of the file.
G64=$F/healthy_int8_g64.safetensors
python3 - "$G64" "$D/qf.safetensors" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"]["quant_format"] = "comfy_quant"
h = json.dumps(h, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + b[8 + n:])
EOF
t_run "quant_format: sglang-repair" 0 "$STFIX" fix "$D/qf.safetensors" -r sglang-repair -o "$D/qf.out.safetensors"
t_stderr_is "quant_format: sglang-repair" "stfix: fix: the recipe changes nothing in $D/qf.safetensors; the output is its bytes, unstamped (--fail-if-unchanged refuses this)"
t_true "quant_format: sglang-repair: the input's bytes" cmp "$D/qf.safetensors" "$D/qf.out.safetensors"
