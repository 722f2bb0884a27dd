#!/bin/sh
# Markers that cannot be read and weights quantized without saying so
# (stfix-defects(7), unreadable-marker and missing-markers; rules C1, C21,
# R6, R10 and R70; the infer-marker action). The inputs come from
# tests/gen/gen_markers.py: layers blocks.0.attn.qkv, blocks.0.attn.out and
# blocks.0.mlp.fc1 (K = 256), a BF16 bias and norm.
. tests/cli/lib.sh
D=$T_TMP/markers
mkdir -p "$D"
G=tests/gen/gen_markers.py
VER=$("$STFIX" --version | cut -d' ' -f2)
OUT=blocks.0.attn.out
INT8='{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256}'

cat >"$D/mk.py" <<'PY'
import json, struct, sys


def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    return b[8:8 + n], meta, {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
                              for k, v in h.items()}


L = ["blocks.0.attn.out", "blocks.0.attn.qkv", "blocks.0.mlp.fc1"]
SHAPES = {"blocks.0.attn.qkv": 48, "blocks.0.attn.out": 32, "blocks.0.mlp.fc1": 64}


def d(rule, sev, layer, msg, effect, fix):
    return {"rule": rule, "severity": sev, "layer": layer, "message": msg, "fix": fix,
            "effect": effect}


def findings(kind):
    """What check --json says of a file without markers (listing order)."""
    dt = {"int8": "I8", "fp8": "F8_E4M3", "e5m2": "F8_E5M2", "nvfp4": "U8", "mxfp8": "F8_E4M3",
          "fp8ns": "F8_E4M3"}[kind]
    out = []
    if kind != "e5m2":
        out.append(d("R10", "error", "", "Quantized weights are missing comfy_quant metadata: %r"
                     % L, "refuses",
                     "add a comfy_quant marker to each layer, or dequantize those weights to BF16"))
    # Layers come in the order of their first tensor in the file: the F32
    # scales (by name) where there are any, else qkv's BF16 bias.
    order = ["blocks.0.attn.qkv", "blocks.0.attn.out", "blocks.0.mlp.fc1"]
    if kind in ("int8", "fp8", "e5m2", "nvfp4"):
        order = sorted(order)
    if kind == "e5m2":
        for l in order:
            out.append(d("R70", "error", l, "Comfy layer %r has an F8_E5M2 weight (%d, 256) and a "
                         "weight_scale but no comfy_quant marker: SGLang's marker check passes "
                         "F8_E5M2 weights, so it loads the codes as plain values and never reads "
                         "the scale (silently wrong)" % (l, SHAPES[l]), "silent",
                         "requantize the layer (SGLang loads no float8_e5m2 layer, R30), or "
                         "dequantize it to BF16 with exclude"))
    k = 128 if kind == "nvfp4" else 256
    for l in order:
        if kind == "fp8ns":
            out.append(d("C1", "warning", l, "Layer %s has an F8_E4M3 weight (%d, 256) with no "
                         "scale and no comfy_quant marker: ComfyUI value-casts it to the compute "
                         "dtype, which is right only if the weights were cast to FP8 without a "
                         "scale" % (l, SHAPES[l]), "note",
                         "nothing when the weights were cast to FP8 unscaled; otherwise restore "
                         "the scale and add a marker (missing-markers)"))
        else:
            out.append(d("C1", "error", l, "Layer %s has a quantized %s weight (%d, %d) but no "
                         "comfy_quant marker: ComfyUI value-casts the codes to the compute dtype "
                         "(silently garbage)" % (l, dt, SHAPES[l], k), "silent",
                         "add the comfy_quant marker the file determines (infer-marker), or "
                         "dequantize the weight to BF16 (missing-markers)"))
    # check --json lists them as the text does: file-level findings first,
    # then by layer in order of first appearance, report order within one.
    first = {}
    for x in out:
        first.setdefault(x["layer"], len(first))
    return sorted(out, key=lambda x: (x["layer"] != "", first[x["layer"]]))


cmd = sys.argv[1]
if cmd == "findings":
    got = json.load(open(sys.argv[2]))["diagnostics"]
    want = findings(sys.argv[3])
    assert got == want, json.dumps(got, indent=1)
elif cmd == "header":
    sys.stdout.write(load(sys.argv[2])[0].decode())
elif cmd == "same":
    # Every tensor of the input is in the output with the same bytes, but
    # the markers, which are MARKER (a layer that had none now has one).
    _, _, ti = load(sys.argv[2])
    _, _, to = load(sys.argv[3])
    mk = sys.argv[4].encode()
    for n, v in ti.items():
        if not n.endswith(".comfy_quant"):
            assert to[n] == v, n
    for l in L:
        assert to[l + ".comfy_quant"] == mk, (l, to[l + ".comfy_quant"])
    assert set(to) == set(ti) | {l + ".comfy_quant" for l in L}, sorted(set(to) ^ set(ti))
PY

# ---------------------------------------------------------------- unreadable
# zm: blocks.0.attn.out's marker zeroed, _quantization_metadata lists it.
# zp: the same without metadata: its peers all say INT8 ConvRot G=256.
# ze, zb: the marker empty, or starting with byte 0xFF (not UTF-8).
# zu: no metadata, and the peers differ (fc1 says G=64): nothing settles it.
python3 $G "$D/zm.st" --zero $OUT --qmeta
python3 $G "$D/zp.st" --zero $OUT
python3 $G "$D/ze.st" --empty $OUT
python3 $G "$D/zb.st" --badutf8 $OUT
python3 $G "$D/zu.st" --zero $OUT --vary blocks.0.mlp.fc1

t_run "check zp" 1 "$STFIX" check "$D/zp.st"
t_stdout_has "check zp: R6" "error   R6:  Invalid Comfy quantization marker 'blocks.0.attn.out.comfy_quant' in $D/zp.st [refuses]"
t_stdout_has "check zp: C21" "error   C21: json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0) [refuses]"
t_run "check zb" 1 "$STFIX" check --target comfyui "$D/zb.st"
t_stdout_has "check zb: C21" "error   C21: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte [refuses]"

# infer-marker from the metadata alone rebuilds the zeroed bytes.
cat >"$D/meta.yaml" <<'EOF'
stfix: 1
target: [sglang, comfyui]
rules:
  - name: from-metadata
    match: {weight_dtype: I8}
    do: {infer-marker: {from: metadata}}
EOF
SHA=$(sha256sum "$D/meta.yaml" | cut -d' ' -f1)
t_run "fix zm" 0 "$STFIX" fix "$D/zm.st" -r "$D/meta.yaml" -o "$D/zm.out"
t_stdout_has "fix zm: line" "  $OUT: from-metadata -> marker rebuilt from metadata (int8_tensorwise)"
t_true "fix zm: tensors" python3 "$D/mk.py" same "$D/zm.st" "$D/zm.out" "$INT8"
Q='"_quantization_metadata":"{\"format_version\": \"1.0\", \"layers\": {\"blocks.0.attn.out\": {\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}, \"blocks.0.attn.qkv\": {\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}, \"blocks.0.mlp.fc1\": {\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}}}",'
T='"blocks.0.attn.out.weight_scale":{"dtype":"F32","shape":[32,1],"data_offsets":[0,128]},"blocks.0.attn.qkv.weight_scale":{"dtype":"F32","shape":[48,1],"data_offsets":[128,320]},"blocks.0.mlp.fc1.weight_scale":{"dtype":"F32","shape":[64,1],"data_offsets":[320,576]},"blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[576,672]},"blocks.0.norm.weight":{"dtype":"BF16","shape":[256],"data_offsets":[672,1184]},"blocks.0.attn.out.weight":{"dtype":"I8","shape":[32,256],"data_offsets":[1184,9376]},"blocks.0.attn.qkv.weight":{"dtype":"I8","shape":[48,256],"data_offsets":[9376,21664]},"blocks.0.mlp.fc1.weight":{"dtype":"I8","shape":[64,256],"data_offsets":[21664,38048]},"blocks.0.attn.out.comfy_quant":{"dtype":"U8","shape":[72],"data_offsets":[38048,38120]},"blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[72],"data_offsets":[38120,38192]},"blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[72],"data_offsets":[38192,38264]}}'
printf '%s' '{"__metadata__":{'"$Q"'"stfix.recipe_sha256":"'$SHA'","stfix.version":"'$VER'"},'"$T"'      ' >"$D/zm.hdr"
t_run "header zm" 0 python3 "$D/mk.py" header "$D/zm.out"
t_stdout_is "header zm" "$D/zm.hdr"
t_run "clean zm" 0 "$STFIX" check "$D/zm.out"
t_stdout_has "clean zm" "summary: 0 error(s), 0 warning(s), 0 info"
# ... and without metadata it names what is missing.
t_run "fix zp metadata only" 2 "$STFIX" fix "$D/zp.st" -r "$D/meta.yaml" -o "$D/zp-meta.out"
t_stderr_is "fix zp metadata only" "stfix: fix: layer '$OUT': rule 'from-metadata' (recipe line 6): infer-marker: the marker cannot be read and the file does not determine it (_quantization_metadata does not list the layer); settle it with a rule for this layer, ahead of this one, that does set-marker: {format: int8_tensorwise}"
t_absent "fix zp metadata only" "$D/zp-meta.out"

# The bundled recipes rebuild a zeroed, empty or non-UTF-8 marker from the
# file's other markers, and one from the metadata.
for c in zm zp ze zb; do
    for target in sglang comfyui; do
        o=$D/$c-$target.out
        t_run "bundled $target $c" 0 "$STFIX" fix "$D/$c.st" -r "rules/$target-int8-convrot.yaml" -o "$o"
        t_true "bundled $target $c: tensors" python3 "$D/mk.py" same "$D/$c.st" "$o" "$INT8"
        t_run "bundled $target $c: clean" 0 "$STFIX" check "$o"
    done
done
t_run "bundled zp: line" 0 "$STFIX" plan "$D/zp.st" -r rules/sglang-int8-convrot.yaml
t_stdout_has "bundled zp: line" "  summary: marker rebuilt from peers (int8_tensorwise); marker canonical"
SHA=$(sha256sum rules/sglang-int8-convrot.yaml | cut -d' ' -f1)
printf '%s' '{"__metadata__":{"stfix.recipe_sha256":"'$SHA'","stfix.version":"'$VER'"},'"$T"'       ' >"$D/zp.hdr"
t_run "header zp" 0 python3 "$D/mk.py" header "$D/zp-sglang.out"
t_stdout_is "header zp" "$D/zp.hdr"

# Undetermined: the plan refuses the layer by name and says what would settle it.
for target in sglang comfyui; do
    line=$(grep -n 'name: infer-markers' "rules/$target-int8-convrot.yaml" | cut -d: -f1)
    line=$((line + 2))
    t_run "undetermined $target" 2 "$STFIX" fix "$D/zu.st" -r "rules/$target-int8-convrot.yaml" -o "$D/zu.out"
    t_stderr_is "undetermined $target" "stfix: fix: layer '$OUT': rule 'infer-markers' (recipe line $line): infer-marker: the marker cannot be read and the file does not determine it (_quantization_metadata does not list the layer; the file's readable int8_tensorwise markers differ (layers 'blocks.0.attn.qkv' and 'blocks.0.mlp.fc1'); its tensors fit int8_tensorwise but do not tell its rotation or group size); settle it with a rule for this layer, ahead of this one, that does set-marker: {format: int8_tensorwise}"
    t_absent "undetermined $target" "$D/zu.out"
done
# The rule it names settles it.
cat >"$D/settle.yaml" <<'EOF'
stfix: 1
target: comfyui
rules:
  - name: settle-out
    match: {prefix: blocks.0.attn.out}
    do: {set-marker: {format: int8_tensorwise}}
  - name: infer-markers
    match: {weight_dtype: [I8, U8, F8_E4M3, F8_E5M2], not: {scale: absent, marker: absent}}
    do: infer-marker
EOF
t_run "settled" 0 "$STFIX" fix "$D/zu.st" -r "$D/settle.yaml" -o "$D/zu-settled.out"
t_stdout_has "settled: line" "  $OUT: settle-out, infer-markers -> marker canonical (int8_tensorwise)"

# ---------------------------------------------------------------- no markers
for kind in int8 fp8 e5m2 nvfp4 mxfp8; do
    python3 $G "$D/n-$kind.st" --kind $kind --no-markers
    t_run "check n-$kind" 1 "$STFIX" check --json "$D/n-$kind.st"
    t_true "check n-$kind: findings" python3 "$D/mk.py" findings "$T_OUT" $kind
done
python3 $G "$D/n-fp8ns.st" --kind fp8 --no-markers --no-scale
t_run "check n-fp8ns" 1 "$STFIX" check --json "$D/n-fp8ns.st"
t_true "check n-fp8ns: findings" python3 "$D/mk.py" findings "$T_OUT" fp8ns
t_run "check n-fp8ns comfyui" 0 "$STFIX" check --target comfyui "$D/n-fp8ns.st"

# The bundled ComfyUI recipe adds the marker the tensors spell out.
for kind in fp8 e5m2 nvfp4 mxfp8; do
    case $kind in fp8) f=float8_e4m3fn ;; e5m2) f=float8_e5m2 ;; *) f=$kind ;; esac
    o=$D/n-$kind-comfyui.out
    t_run "infer $kind" 0 "$STFIX" fix "$D/n-$kind.st" -r rules/comfyui-int8-convrot.yaml -o "$o"
    t_stdout_has "infer $kind: line" "  $OUT: infer-markers -> marker inferred from tensors ($f)"
    t_true "infer $kind: tensors" python3 "$D/mk.py" same "$D/n-$kind.st" "$o" "{\"format\": \"$f\"}"
    t_run "infer $kind: clean" 0 "$STFIX" check --target comfyui "$o"
done
SHA=$(sha256sum rules/comfyui-int8-convrot.yaml | cut -d' ' -f1)
M='{"__metadata__":{"stfix.recipe_sha256":"'$SHA'","stfix.version":"'$VER'"},'
printf '%s' "$M"'"blocks.0.attn.out.weight_scale_2":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"blocks.0.attn.qkv.weight_scale_2":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"blocks.0.mlp.fc1.weight_scale_2":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[12,108]},"blocks.0.norm.weight":{"dtype":"BF16","shape":[256],"data_offsets":[108,620]},"blocks.0.attn.out.weight_scale":{"dtype":"F8_E4M3","shape":[32,16],"data_offsets":[620,1132]},"blocks.0.attn.qkv.weight_scale":{"dtype":"F8_E4M3","shape":[48,16],"data_offsets":[1132,1900]},"blocks.0.mlp.fc1.weight_scale":{"dtype":"F8_E4M3","shape":[64,16],"data_offsets":[1900,2924]},"blocks.0.attn.out.comfy_quant":{"dtype":"U8","shape":[19],"data_offsets":[2924,2943]},"blocks.0.attn.out.weight":{"dtype":"U8","shape":[32,128],"data_offsets":[2943,7039]},"blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[19],"data_offsets":[7039,7058]},"blocks.0.attn.qkv.weight":{"dtype":"U8","shape":[48,128],"data_offsets":[7058,13202]},"blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[19],"data_offsets":[13202,13221]},"blocks.0.mlp.fc1.weight":{"dtype":"U8","shape":[64,128],"data_offsets":[13221,21413]}}      ' >"$D/n-nvfp4.hdr"
printf '%s' "$M"'"blocks.0.attn.out.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"blocks.0.attn.qkv.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"blocks.0.mlp.fc1.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[12,108]},"blocks.0.norm.weight":{"dtype":"BF16","shape":[256],"data_offsets":[108,620]},"blocks.0.attn.out.weight":{"dtype":"F8_E4M3","shape":[32,256],"data_offsets":[620,8812]},"blocks.0.attn.qkv.weight":{"dtype":"F8_E4M3","shape":[48,256],"data_offsets":[8812,21100]},"blocks.0.mlp.fc1.weight":{"dtype":"F8_E4M3","shape":[64,256],"data_offsets":[21100,37484]},"blocks.0.attn.out.comfy_quant":{"dtype":"U8","shape":[27],"data_offsets":[37484,37511]},"blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[27],"data_offsets":[37511,37538]},"blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[27],"data_offsets":[37538,37565]}}' >"$D/n-fp8.hdr"
for kind in nvfp4 fp8; do
    t_run "header n-$kind" 0 python3 "$D/mk.py" header "$D/n-$kind-comfyui.out"
    t_stdout_is "header n-$kind" "$D/n-$kind.hdr"
done
# The bundled SGLang recipe requantizes unmarked FP8 layers with a scale
# (R10, R70) and marks NVFP4 and MXFP8 ones.
for kind in fp8 e5m2 nvfp4 mxfp8; do
    t_run "sglang n-$kind" 0 "$STFIX" fix "$D/n-$kind.st" -r rules/sglang-int8-convrot.yaml -o "$D/n-$kind-sglang.out"
    t_run "sglang n-$kind: clean" 0 "$STFIX" check --target sglang "$D/n-$kind-sglang.out"
done
t_run "sglang n-e5m2: line" 0 "$STFIX" plan "$D/n-e5m2.st" -r rules/sglang-int8-convrot.yaml
t_stdout_has "sglang n-e5m2: line" "  summary: requantize to int8_tensorwise, G=256"
# INT8 codes without any marker: the rotation and group size are nobody's guess.
t_run "infer n-int8" 2 "$STFIX" fix "$D/n-int8.st" -r rules/comfyui-int8-convrot.yaml -o "$D/n-int8.out"
line=$(($(grep -n 'name: infer-markers' rules/comfyui-int8-convrot.yaml | cut -d: -f1) + 2))
t_stderr_is "infer n-int8" "stfix: fix: layer '$OUT': rule 'infer-markers' (recipe line $line): infer-marker: the layer has no marker and the file does not determine it (_quantization_metadata does not list the layer; no readable marker of the file fits its tensors; its tensors fit int8_tensorwise but do not tell its rotation or group size); settle it with a rule for this layer, ahead of this one, that does set-marker: {format: int8_tensorwise}"
t_absent "infer n-int8" "$D/n-int8.out"
# FP8 weights with no scale at all are left as they are for ComfyUI.
t_run "n-fp8ns comfyui" 0 "$STFIX" fix "$D/n-fp8ns.st" -r rules/comfyui-int8-convrot.yaml -o "$D/n-fp8ns.out"
t_stdout_has "n-fp8ns comfyui" "layers: 0 changed, 4 unchanged"
