# CLI scenarios for `stfix plan`: the human listing byte for byte, the JSON
# document, "unchanged" when the recipe changes nothing, --quant-mode, refusals naming layer and rule (exit 2), usage
# errors (exit 3), and that nothing is written. Fixtures: fixtures/comfy/.
. tests/cli/lib.sh
F=fixtures/comfy

cat >"$T_TMP/r14.txt" <<'EOF2'
plan: fixtures/comfy/r14_scale_bf16.safetensors with rules/repair-scales.yaml
layer blocks.0.attn.qkv
  rules: cast-scales
  actions: cast-scale
  summary: scale BF16 -> F32
    cast         blocks.0.attn.qkv.weight_scale F32 (16, 1) 64 bytes
    copy         blocks.0.attn.qkv.weight I8 (16, 256) 4096 bytes
    copy         blocks.0.attn.qkv.comfy_quant U8 (72,) 72 bytes
metadata: format = pt
metadata: stfix.recipe_sha256 = 097bf6a107fd5fabb3e39d051f0707b43d37e7d7ef7889a9af422f71516658cd
metadata: stfix.version = 0.1.0
totals: 1 tensor(s) changed, 2 copied, 0 dropped; 4232 bytes to write, 4168 bytes copied
EOF2
t_run "human" 0 "$STFIX" plan $F/r14_scale_bf16.safetensors -r rules/repair-scales.yaml
t_stdout_is "human" "$T_TMP/r14.txt"

# Requantization of a Sylvester-rotated layer, with the mode from the command line.
t_run "requantize" 0 "$STFIX" plan $F/r24_g128.safetensors -r rules/sglang-int8-convrot.yaml \
    --quant-mode fp32 --json
t_stdout_has "requantize" '"rules": ["requantize-sylvester"], "actions": ["requantize"], "summary": "requantize to int8_tensorwise, G=256", "changed": true, "requantize": true, "format": "int8_tensorwise", "group": 256, "mode": "fp32"}'
t_stdout_has "requantize" '"linear": 1}, "changed": true, "layers": ['
t_stdout_has "requantize" '{"name": "blocks.0.attn.qkv.comfy_quant", "op": "new", "dtype": "U8", "shape": [72], "bytes": 72, "src": null, "layer": "blocks.0.attn.qkv"}'
t_stdout_has "requantize" '"totals": {"tensors": 3, "changed": 3, "copied": 0, "dropped": 0, "bytes_total": 4232, "bytes_copied": 0}}'
if command -v python3 >/dev/null 2>&1; then
    t_true "json parses" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["targets"] == ["sglang"]' "$T_OUT"
fi

# A recipe that changes nothing says so after the totals, as fix does, and
# --json has "changed": false for the file and for each layer; a file that
# is not in canonical form (a header with leading blanks) is a change,
# though it has no layer.
cat >"$T_TMP/healthy.txt" <<'EOF2'
plan: fixtures/comfy/healthy_int8_g64.safetensors with rules/exclude-conv-and-embeddings.yaml
layer blocks.0.attn.qkv
  rules: (none)
  actions: (none)
  summary: unchanged
    copy         blocks.0.attn.qkv.weight_scale F32 (8, 1) 32 bytes
    copy         blocks.0.attn.qkv.weight I8 (8, 128) 1024 bytes
    copy         blocks.0.attn.qkv.comfy_quant U8 (71,) 71 bytes
layer norm_out
  rules: (none)
  actions: (none)
  summary: unchanged
    copy         norm_out.bias F32 (4,) 16 bytes
    copy         norm_out.weight BF16 (4, 8) 64 bytes
metadata: format = pt
totals: 0 tensor(s) changed, 5 copied, 0 dropped; 1207 bytes to write, 1207 bytes copied
unchanged: the recipe changes nothing; fix would write the input's bytes, unstamped
EOF2
# A conversion recipe none of whose rules selects a layer (a repair recipe
# would leave them alone before any rule, tests/cli/repair_gate.sh).
t_run "unchanged" 0 "$STFIX" plan $F/healthy_int8_g64.safetensors -r rules/exclude-conv-and-embeddings.yaml
t_stdout_is "unchanged" "$T_TMP/healthy.txt"
t_run "unchanged --json" 0 "$STFIX" plan $F/healthy_int8_g64.safetensors -r rules/sglang-int8-convrot.yaml --json
t_stdout_has "unchanged --json" '"linear": 2}, "changed": false, "layers": ['
t_stdout_has "unchanged --json" '{"prefix": "blocks.0.attn.qkv", "out_prefix": "blocks.0.attn.qkv", "rules": ["infer-markers", "normalise-markers"], "actions": ["infer-marker", "set-marker"], "summary": "marker already canonical (int8_tensorwise)", "changed": false, "requantize": false, "format": "int8_tensorwise", "group": 0, "mode": null}'
if grep -q '"changed": true' "$T_OUT"; then t_notok "unchanged --json: nothing changed"
else t_ok "unchanged --json: nothing changed"; fi
S07=fixtures/malformed/s07_leading_whitespace.safetensors
t_run "not canonical" 0 "$STFIX" plan $S07 -r rules/repair-scales.yaml
if grep -q '^unchanged' "$T_OUT"; then t_notok "not canonical: no unchanged line"
else t_ok "not canonical: no unchanged line"; fi
t_run "not canonical --json" 0 "$STFIX" plan $S07 -r rules/repair-scales.yaml --json
t_stdout_has "not canonical --json" '"linear": 0}, "changed": true, "layers": [], '
# A changed plan has no such line.
if grep -q '^unchanged' "$T_TMP/r14.txt"; then t_notok "changed: no unchanged line"
else t_ok "changed: no unchanged line"; fi

# Conv layer excluded: dequantized, scale and marker dropped.
t_run "exclude" 0 "$STFIX" plan $F/r25_conv_marker.safetensors -r rules/exclude-conv-and-embeddings.yaml
t_stdout_has "exclude" "    dequant      blocks.0.conv.weight BF16 (8, 4, 3, 3) 576 bytes"
t_stdout_has "exclude" "dropped: blocks.0.conv.weight_scale"
t_stdout_has "exclude" "dropped: blocks.0.conv.comfy_quant"

# A layer stfix cannot decode: exit 2, the layer, rule and recipe line named.
t_run "refusal" 2 "$STFIX" plan $F/r44_w4a8_group2.safetensors -r rules/sglang-int8-convrot.yaml
t_stderr_is "refusal" "stfix: plan: layer 'blocks.0.attn.qkv': rule 'requantize-other-formats' (recipe line 100): requantize: format 'asym_w4a8_int8' cannot be decoded (stfix reads float, FP8, INT8 and convrot_w4a4 layers); exclude needs the original weights"

# Invalid recipe and unreadable input: exit 2.
printf 'stfix: 1\ntarget: nowhere\nrules: []\n' >"$T_TMP/bad.yaml"
t_run "bad recipe" 2 "$STFIX" plan $F/r14_scale_bf16.safetensors -r "$T_TMP/bad.yaml"
t_run "missing input" 2 "$STFIX" plan "$T_TMP/none.safetensors" -r rules/repair-scales.yaml

# Usage errors: exit 3.
t_run "no recipe" 3 "$STFIX" plan $F/r14_scale_bf16.safetensors
t_stderr_has "no recipe" "stfix: plan: no recipe given (-r RECIPE)"
t_run "bad mode" 3 "$STFIX" plan $F/r14_scale_bf16.safetensors -r rules/repair-scales.yaml --quant-mode fast
t_run "unknown option" 3 "$STFIX" plan --frobnicate
t_run "help" 0 "$STFIX" plan --help
t_stdout_has "help" "usage: stfix plan FILE|INDEX.json -r RECIPE [--json] [--quant-mode MODE]"

# Planning writes nothing next to the input.
mkdir -p "$T_TMP/ro"
cp $F/r14_scale_bf16.safetensors "$T_TMP/ro/in.safetensors"
t_run "writes nothing" 0 "$STFIX" plan "$T_TMP/ro/in.safetensors" -r rules/sglang-int8-convrot.yaml
t_true "writes nothing: one file" test "$(ls "$T_TMP/ro" | wc -l)" -eq 1
t_true "writes nothing: input unchanged" cmp -s $F/r14_scale_bf16.safetensors "$T_TMP/ro/in.safetensors"
