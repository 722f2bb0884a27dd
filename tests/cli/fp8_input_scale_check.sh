#!/bin/sh
# FP8 input scales of one value per input column under float8_e4m3fn
# (stfix-checks(7), rules C24 and R62): check reports every such layer for
# both consumers, exit 1 and nothing on stderr, with the exact messages and
# fixes in --json; the bundled recipes requantize those layers to INT8
# ConvRot, which drops input_scale, and their outputs check clean. The file
# (tests/gen/gen_quant_ckpt.py fp8-input-cols, one double block of hidden
# size 64: four square attention layers, mlp.0 with N > K, mlp.2 with
# N < K) has F32 [] weight scales and F32 [K] input scales.
. tests/cli/lib.sh
D=$T_TMP/fp8in
mkdir -p "$D"
IN=$D/in.safetensors
python3 tests/gen/gen_quant_ckpt.py fp8-input-cols "$IN" 48KiB 64

t_run "check" 1 "$STFIX" check "$IN"
t_true "check: no stderr" test ! -s "$T_ERR"
t_stdout_has "check: mlp.2" "layer double_blocks.0.mlp.2:
  error   R62: Tried to load weights of size torch.Size([256])to a parameter of size torch.Size([1]) [refuses]
  error   C24: FP8 input scale of layer double_blocks.0.mlp.2 has shape (256,) for weight (64, 256), but float8_e4m3fn takes one scale per tensor: comfy-kitchen's CUDA quantize divides the input by its first element and, when torch's FP8 matmul then refuses the scale, its CUDA dequantize raises \"Scale must be a scalar tensor\"; its eager quantize divides the input by the scale as stored, one value per input column, and the layer then runs the matmul dequantized [silent]"
t_stdout_has "check: summary" "summary: 12 error(s), 0 warning(s), 0 info"

# --json: every finding, exactly, in the order of the text listing: by
# layer, each layer's sglang R62 before its comfyui C24.
t_run "check --json" 1 "$STFIX" check --json "$IN"
t_true "check --json: no stderr" test ! -s "$T_ERR"
t_true "check --json: exact findings" python3 -c '
import json, sys
got = json.load(open(sys.argv[1]))
r62, c24 = [], []
for layer, n, k in [("attn.k", 64, 64), ("attn.proj", 64, 64), ("attn.q", 64, 64),
                    ("attn.v", 64, 64), ("mlp.0", 256, 64), ("mlp.2", 64, 256)]:
    p = "double_blocks.0." + layer
    r62.append({"rule": "R62", "severity": "error", "layer": p,
                "message": "Tried to load weights of size torch.Size([%d])to a parameter of "
                           "size torch.Size([1])" % k,
                "fix": "requantize the layer: float8_e4m3fn takes one input_scale per tensor",
                "effect": "refuses"})
    c24.append({"rule": "C24", "severity": "error", "layer": p,
                "message": "FP8 input scale of layer %s has shape (%d,) for weight (%d, %d), but "
                           "float8_e4m3fn takes one scale per tensor: comfy-kitchen\x27s CUDA "
                           "quantize divides the input by its first element and, when torch\x27s "
                           "FP8 matmul then refuses the scale, its CUDA dequantize raises "
                           "\"Scale must be a scalar tensor\"; its eager quantize divides the "
                           "input by the scale as stored, one value per input column, and the "
                           "layer then runs the matmul dequantized" % (p, k, n, k),
                "fix": "requantize the layer: an FP8 format takes one input_scale per tensor",
                "effect": "silent"})
assert got == {"file": sys.argv[2], "target": "all", "diagnostics": [d for pair in zip(r62, c24) for d in pair],
               "summary": {"errors": 12, "warnings": 0, "info": 0, "total": 12}}, got
' "$T_OUT" "$IN"

# The repairs: each bundled recipe requantizes the layers; INT8 ConvRot
# takes no input scale, so the six input_scale tensors are dropped and the
# output checks clean for its target.
for r in comfyui sglang; do
    OUT=$D/out.$r.safetensors
    t_run "fix $r" 0 "$STFIX" fix "$IN" -r "rules/$r-int8-convrot.yaml" -o "$OUT"
    if [ $r = comfyui ]; then rule=requantize-fp8-input-scales; else rule=requantize-other-formats; fi
    t_stdout_has "fix $r: mlp.2" \
        "double_blocks.0.mlp.2: $rule -> requantize to int8_tensorwise, G=256"
    t_stdout_has "fix $r: input scales dropped" "tensors: 30 written (12 copied unchanged, 18 changed or new), 6 dropped"
    t_stdout_has "fix $r: verified" "verification ($r): passed, 0 error(s), 0 warning(s), 0 info"
    t_run "fix $r: check" 0 "$STFIX" check --target $r "$OUT"
    t_stdout_has "fix $r: clean" "summary: 0 error(s), 0 warning(s), 0 info"
    t_true "fix $r: no input_scale" python3 -c '
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
names = [n for n in h if n.endswith(".input_scale")]
assert names == [], names
assert h["double_blocks.0.mlp.2.weight"]["dtype"] == "I8", h
' "$OUT"
done
