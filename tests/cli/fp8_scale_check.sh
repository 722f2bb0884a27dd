#!/bin/sh
# Per-row FP8 scales under a per-tensor format name (stfix-checks(7), rules
# C24 and R62; stfix-defects(7), SCALE SHAPES): check reports every such
# layer for both consumers, exit 1 and nothing on stderr, with the exact
# messages in text and --json; the bundled recipes requantize those layers
# and their outputs check clean. The generated files (tests/gen/
# gen_quant_ckpt.py, one double block of hidden size 64: four square
# attention layers, mlp.0 with N > K, mlp.2 with N < K) are fp8-rows-e4m3fn
# (float8_e4m3fn, F32 [N] scales), fp8-rows-e5m2 (float8_e5m2, [N, 1]) and
# fp8-rows (float8_e4m3fn_rowwise, a format neither consumer knows: C3 and
# R30 only).
. tests/cli/lib.sh
D=$T_TMP/fp8scale
mkdir -p "$D"
for kind in fp8-rows-e4m3fn fp8-rows-e5m2 fp8-rows; do
    python3 tests/gen/gen_quant_ckpt.py "$kind" "$D/$kind.safetensors" 48KiB 64
done
E4=$D/fp8-rows-e4m3fn.safetensors
E5=$D/fp8-rows-e5m2.safetensors

CK="takes one scale per tensor: comfy-kitchen's CUDA dequantize raises \"Scale must be a scalar tensor\", its eager one multiplies the weight by the scale as stored"

t_run "e4m3fn: check" 1 "$STFIX" check "$E4"
t_true "e4m3fn: check: no stderr" test ! -s "$T_ERR"
t_stdout_has "e4m3fn: R62 square" "layer double_blocks.0.attn.q:
  error   R62: Tried to load weights of size torch.Size([64])to a parameter of size torch.Size([1]) [refuses]
  error   C24: FP8 weight scale of layer double_blocks.0.attn.q has shape (64,) for weight (64, 64), but float8_e4m3fn $CK, which scales columns instead of rows: silently wrong on this square layer [silent]"
t_stdout_has "e4m3fn: N > K" "layer double_blocks.0.mlp.0:
  error   R62: Tried to load weights of size torch.Size([256])to a parameter of size torch.Size([1]) [refuses]
  error   C24: FP8 weight scale of layer double_blocks.0.mlp.0 has shape (256,) for weight (256, 64), but float8_e4m3fn $CK, which fails to broadcast it over the K columns [silent]"
t_stdout_has "e4m3fn: summary" "summary: 12 error(s), 0 warning(s), 0 info"

# --json: every finding, exactly, in the order of the text listing: by
# layer, each layer's sglang R62 before its comfyui C24.
t_run "e4m3fn: check --json" 1 "$STFIX" check --json "$E4"
t_true "e4m3fn: check --json: no stderr" test ! -s "$T_ERR"
t_true "e4m3fn: check --json: exact findings" python3 -c '
import json, sys
got = json.load(open(sys.argv[1]))
ck = sys.argv[3]
r62, c24 = [], []
for layer, n, k in [("attn.k", 64, 64), ("attn.proj", 64, 64), ("attn.q", 64, 64),
                    ("attn.v", 64, 64), ("mlp.0", 256, 64), ("mlp.2", 64, 256)]:
    p = "double_blocks.0." + layer
    tail = (", which scales columns instead of rows: silently wrong on this square layer"
            if n == k else ", which fails to broadcast it over the K columns")
    r62.append({"rule": "R62", "severity": "error", "layer": p,
                 "message": "Tried to load weights of size torch.Size([%d])to a parameter of "
                            "size torch.Size([1])" % n,
                 "fix": "requantize the layer: float8_e4m3fn takes one scale per tensor",
                 "effect": "refuses"})
    c24.append({"rule": "C24", "severity": "error", "layer": p,
                 "message": "FP8 weight scale of layer %s has shape (%d,) for weight (%d, %d), "
                            "but float8_e4m3fn %s%s" % (p, n, n, k, ck, tail),
                 "fix": "requantize the layer: an FP8 format takes one scale per tensor",
                 "effect": "silent"})
assert got == {"file": sys.argv[2], "target": "all", "diagnostics": [d for pair in zip(r62, c24) for d in pair],
               "summary": {"errors": 12, "warnings": 0, "info": 0, "total": 12}}, got
' "$T_OUT" "$E4" "$CK"

# float8_e5m2 with (N, 1) scales: ComfyUI's eager path happens to get the
# rows right, its CUDA path refuses; SGLang rejects the format set anyway.
t_run "e5m2: check comfyui" 1 "$STFIX" check --target comfyui "$E5"
t_stdout_has "e5m2: C24 rows" "  error   C24: FP8 weight scale of layer double_blocks.0.mlp.2 has shape (64, 1) for weight (64, 256), but float8_e5m2 $CK, which happens to scale the rows here [silent]"
t_stdout_has "e5m2: summary" "summary: 6 error(s), 0 warning(s), 0 info"

# An unknown format stops at C3 and R30 before any scale rule.
t_run "rowwise: check" 1 "$STFIX" check --json "$D/fp8-rows.safetensors"
t_true "rowwise: C3 and R30 only" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["diagnostics"]
assert sorted({x["rule"] for x in d}) == ["C3", "R30"], d
assert [x["message"] for x in d if x["rule"] == "R30"] == [
    "Unsupported Comfy quantization format(s): float8_e4m3fn_rowwise"], d
' "$T_OUT"

# The repairs: each bundled recipe requantizes the layers (each row
# decoded with its own scale) and the output checks clean for its target.
for r in comfyui sglang; do
    t_run "e4m3fn: fix $r" 0 "$STFIX" fix "$E4" -r "rules/$r-int8-convrot.yaml" -o "$D/e4.$r.safetensors"
    if [ $r = comfyui ]; then rule=requantize-fp8-row-scales; else rule=requantize-other-formats; fi
    t_stdout_has "e4m3fn: fix $r: square layer" \
        "double_blocks.0.attn.q: $rule -> requantize to int8_tensorwise, G=64"
    t_stdout_has "e4m3fn: fix $r: verified" "verification ($r): passed, 0 error(s), 0 warning(s), 0 info"
    t_run "e4m3fn: fix $r: check" 0 "$STFIX" check --target $r "$D/e4.$r.safetensors"
    t_stdout_has "e4m3fn: fix $r: clean" "summary: 0 error(s), 0 warning(s), 0 info"
done
t_run "e5m2: fix comfyui" 0 "$STFIX" fix "$E5" -r rules/comfyui-int8-convrot.yaml -o "$D/e5.safetensors"
t_stdout_has "e5m2: fix comfyui: requantized" \
    "double_blocks.0.mlp.2: requantize-fp8-row-scales -> requantize to int8_tensorwise, G=256"
t_run "e5m2: fix comfyui: check" 0 "$STFIX" check --target comfyui "$D/e5.safetensors"
t_stdout_has "e5m2: fix comfyui: clean" "summary: 0 error(s), 0 warning(s), 0 info"
