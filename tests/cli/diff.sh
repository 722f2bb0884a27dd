# CLI scenarios for `stfix diff A B`: a broken export against its repair by
# `stfix fix` (exact lines, with and without --numeric, and --json), the
# same checkpoint twice (exit 0), a sharded set against its single-file
# rewrite, and the errors (exit 2 and 3).
. tests/cli/lib.sh
V=$("$STFIX" -V | cut -d' ' -f2)
SHA=$(t_sha256 rules/comfyui-int8-convrot.yaml)

# quantized-conv: the repair dequantizes the conv layer to BF16.
IN=fixtures/comfy/r25_conv_marker.safetensors
OUT="$T_TMP/r25.safetensors"
t_run "fix r25" 0 "$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$OUT"
cat >"$T_TMP/r25.txt" <<EOF2
--- $IN
+++ $OUT
removed blocks.0.conv.weight_scale  F32 [8, 1] (32 bytes)
changed blocks.0.conv.weight  dtype I8 -> BF16; bytes 288 -> 576
removed blocks.0.conv.comfy_quant  U8 [72] (72 bytes)
marker  blocks.0.conv  {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256} -> -
meta    stfix.recipe_sha256  - -> $SHA
meta    stfix.version  - -> $V
numeric blocks.0.conv  rel-l2 1.569293e-03  cosine 0.999998785  max-abs 4.531294e-04 at (3, 28)
differ: 0 added, 2 removed, 1 changed, 1 marker(s), 2 metadata
EOF2
t_run "diff r25 --numeric" 1 "$STFIX" diff "$IN" "$OUT" --numeric
t_stdout_is "diff r25 --numeric" "$T_TMP/r25.txt"
grep -v '^numeric ' "$T_TMP/r25.txt" >"$T_TMP/r25-plain.txt"
t_run "diff r25" 1 "$STFIX" diff "$IN" "$OUT"
t_stdout_is "diff r25" "$T_TMP/r25-plain.txt"
if [ -s "$T_ERR" ]; then t_notok "diff r25: no stderr" "$(cat "$T_ERR")"; else t_ok "diff r25: no stderr"; fi

# G=128 requantized to 256: every byte of the layer changes; the numeric
# error is the requantization's.
IN=fixtures/comfy/r24_g128.safetensors
OUT="$T_TMP/r24.safetensors"
t_run "fix r24" 0 "$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$OUT"
cat >"$T_TMP/r24.txt" <<EOF2
--- $IN
+++ $OUT
changed blocks.0.attn.qkv.weight_scale  data differs from byte 0
changed blocks.0.attn.qkv.weight  data differs from byte 0
changed blocks.0.attn.qkv.comfy_quant  data differs from byte 68
marker  blocks.0.attn.qkv  {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 128} -> {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256}
meta    stfix.recipe_sha256  - -> $SHA
meta    stfix.version  - -> $V
numeric blocks.0.attn.qkv  rel-l2 7.640837e-03  cosine 0.999970809  max-abs 2.697736e-03 at (5, 251)
differ: 0 added, 0 removed, 3 changed, 1 marker(s), 2 metadata
EOF2
t_run "diff r24 --numeric" 1 "$STFIX" diff "$IN" "$OUT" --numeric -j 3
t_stdout_is "diff r24 --numeric" "$T_TMP/r24.txt"
t_run "diff r24 --numeric, one row at a time" 1 "$STFIX" diff "$IN" "$OUT" --numeric --max-mem 1
t_stdout_is "diff r24 --numeric, one row at a time" "$T_TMP/r24.txt"
t_run "diff r24 --json" 1 "$STFIX" diff "$IN" "$OUT" --numeric --json
t_stdout_has "diff r24 --json" '{"name": "blocks.0.attn.qkv.weight", "change": "changed", "a": {"dtype": "I8", "shape": [16, 256], "bytes": 4096}, "b": {"dtype": "I8", "shape": [16, 256], "bytes": 4096}, "dtype": false, "shape": false, "data": true, "first_byte": 0}'
t_stdout_has "diff r24 --json" '{"layer": "blocks.0.attn.qkv", "a": "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 128}", "b": "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}"}'
t_stdout_has "diff r24 --json" '{"key": "stfix.version", "a": null, "b": "'"$V"'"}'
t_stdout_has "diff r24 --json" '"max_at": [5, 251]}'
t_stdout_has "diff r24 --json" '"summary": {"added": 0, "removed": 0, "changed": 3, "markers": 1, "metadata": 2}}'
t_true "diff r24 --json: valid JSON" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['identical'] is False and len(d['tensors']) == 3" "$T_OUT"

# The same file twice, and a sharded set against its single-file rewrite.
F=fixtures/comfy/healthy_int8_g64.safetensors
printf -- '--- %s\n+++ %s\nidentical\n' "$F" "$F" >"$T_TMP/same.txt"
t_run "identical" 0 "$STFIX" diff "$F" "$F"
t_stdout_is "identical" "$T_TMP/same.txt"
t_run "identical --json" 0 "$STFIX" diff "$F" "$F" --json
t_stdout_has "identical --json" '"identical": true,'
IDX=fixtures/comfy/healthy_sharded.safetensors.index.json
t_run "rewrite sharded" 0 "$STFIX" rewrite "$IDX" -o "$T_TMP/one.safetensors"
t_run "sharded vs single" 0 "$STFIX" diff "$IDX" "$T_TMP/one.safetensors" --numeric
t_stdout_has "sharded vs single" "identical"

# Errors: B missing (exit 2, named), usage (exit 3).
t_run "missing B" 2 "$STFIX" diff "$F" "$T_TMP/nope.safetensors"
t_stderr_is "missing B" "stfix: diff: $T_TMP/nope.safetensors: cannot open: No such file or directory"
t_run "missing B --json" 2 "$STFIX" diff "$F" "$T_TMP/nope.safetensors" --json
t_stdout_has "missing B --json" "{\"file\": \"$T_TMP/nope.safetensors\", \"command\": \"diff\", \"exit\": 2,"
t_run "one argument" 3 "$STFIX" diff "$F"
t_run "three arguments" 3 "$STFIX" diff "$F" "$F" "$F"
