#!/bin/sh
# Legacy scaled-FP8 checkpoints (stfix-defects(7), legacy-scaled-fp8; rules
# C25, C26, C11 and R63): check names the form per file and each layer
# ComfyUI misreads, exactly; the bundled recipe migrate-scaled-fp8 rewrites
# the files in comfy_quant form, header and copies only: the exact header
# text of each output, weights byte for byte, scales as exact F32 values;
# the outputs check clean (float8_e5m2, which SGLang rejects, for ComfyUI),
# and the INT8 ConvRot recipes take them further. The inputs come from
# tests/gen/gen_legacy_fp8.py: layers blocks.0.attn.qkv and
# blocks.0.mlp.fc1 with one-element scales, a BF16 bias and norm.
. tests/cli/lib.sh
D=$T_TMP/legacy
mkdir -p "$D"
G=tests/gen/gen_legacy_fp8.py
R=rules/migrate-scaled-fp8.yaml
SHA=$(sha256sum "$R" | cut -d' ' -f1)
VER=$("$STFIX" --version | cut -d' ' -f2)
# e4: E4M3, F32 scales, input scales 1.0 (qkv) and 0.75 (fc1), no prefix,
#     an empty scaled_fp8.
# e5: E5M2 under model.diffusion_model., BF16 scales, no input scales, a
#     two-element scaled_fp8 (full_precision_matrix_mult).
# qm: as e4, with an (empty) _quantization_metadata: not converted by ComfyUI.
# f16: E4M3 under m., F16 scales, input scales 0.5, two-element scaled_fp8.
# e5in: E5M2, F16 scales, input scales 1.0 and 0.75.
python3 $G "$D/e4.st" --input one
python3 $G "$D/e5.st" --e5m2 --fpmm --prefix model.diffusion_model. --scale-dtype BF16
python3 $G "$D/qm.st" --input one --qmeta '{"format_version": "1.0", "layers": {}}'
python3 $G "$D/f16.st" --fpmm --input 0.5 --scale-dtype F16 --prefix m.
python3 $G "$D/e5in.st" --e5m2 --input one --scale-dtype F16

cat >"$D/legacy.py" <<'PY'
import json, struct, sys

R63 = ("2 layer(s) are in the legacy scaled-FP8 form, which SGLang does not read: it never "
       "loads scaled_fp8, scale_weight or scale_input")
R63_E4 = R63 + ", and refuses the F8_E4M3 weights that carry no comfy_quant marker (R10)"
R63_E5 = R63 + ", and loads the F8_E5M2 weights as plain values without their scales"
FIX = "migrate the layers to comfy_quant form on disk: stfix fix -r migrate-scaled-fp8"
R10_FIX = "add a comfy_quant marker to each layer, or dequantize those weights to BF16"
C11_FIX = FIX


def c25(path, name, fpmm):
    return ("%s is a legacy scaled-FP8 checkpoint (%s, 2 layer(s) with scale_weight): whether "
            "ComfyUI reads it depends on its version; those that convert the form as they load "
            "give each such layer a float8_e4m3fn marker%s, the others load the FP8 weights "
            "without their scales" % (path, name, " with full_precision_matrix_mult" if fpmm else ""))


def d(rule, sev, layer, msg, effect, fix=FIX):
    return {"rule": rule, "severity": sev, "layer": layer, "message": msg, "fix": fix,
            "effect": effect}


def findings(path, case):
    P = {"e5": "model.diffusion_model.", "f16": "m."}.get(case, "")
    L = [P + "blocks.0.attn.qkv", P + "blocks.0.mlp.fc1"]
    r10 = d("R10", "error", "", "Quantized weights are missing comfy_quant metadata: %r" % L,
            "refuses", R10_FIX)
    out = []
    if case in ("e4", "qm", "f16"):
        out += [r10, d("R63", "error", "", R63_E4, "refuses")]
    else:
        out += [d("R63", "error", "", R63_E5, "silent")]
    if case == "qm":
        out.append(d("C25", "warning", "", "%s is a legacy scaled-FP8 checkpoint (scaled_fp8, 2 "
                     "layer(s) with scale_weight) that also carries _quantization_metadata: "
                     "ComfyUI converts the legacy form only in files without it" % path, "note"))
        for l in L:
            out.append(d("C26", "error", l, "Layer %s is in the legacy scaled-FP8 form, but its "
                         "file also carries _quantization_metadata: ComfyUI then does not convert "
                         "it, keeps %s.scale_weight as an unexpected key and loads the F8_E4M3 "
                         "weight without its scale" % (l, l), "silent"))
        return out
    out.append(d("C25", "warning", "", c25(path, P + "scaled_fp8", case in ("e5", "f16")), "note"))
    torch = {"e5": "torch.bfloat16", "f16": "torch.float16", "e5in": "torch.float16"}
    for l in L:
        if case.startswith("e5"):
            out.append(d("C26", "error", l, "ComfyUI converts legacy layer %s as float8_e4m3fn "
                         "whatever its weight's dtype: its F8_E5M2 weight is converted value by "
                         "value to F8_E4M3 instead of read as stored (silently wrong)" % l,
                         "silent"))
        if case in torch:
            out.append(d("C11", "error", l, "No backend can handle 'dequantize_per_tensor_fp8': "
                         "eager: scale: dtype %s not in {torch.float32}" % torch[case], "silent"))
    return out


def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return b, n, {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] + b""
                  for k, v in h.items()}, h


def value(dt, raw):
    if dt == "F32":
        return struct.unpack("<f", raw)[0]
    if dt == "F16":
        return struct.unpack("<e", raw)[0]
    return struct.unpack("<f", b"\0\0" + raw)[0]


def tensors(inp, out, case):
    """Weights, biases and norms byte for byte; scales exact F32; markers."""
    _, _, ti, hi = load(inp)
    _, _, to, ho = load(out)
    P = {"e5": "model.diffusion_model.", "f16": "m."}.get(case, "")
    fmt = "float8_e5m2" if case.startswith("e5") else "float8_e4m3fn"
    fp = ', "full_precision_matrix_mult": true' if case in ("e5", "f16") else ""
    want = set()
    for l in ("blocks.0.attn.qkv", "blocks.0.mlp.fc1"):
        p = P + l
        assert to[p + ".weight"] == ti[p + ".weight"], p
        ws = to[p + ".weight_scale"]
        assert ho[p + ".weight_scale"]["dtype"] == "F32"
        assert struct.unpack("<f", ws)[0] == value(hi[p + ".scale_weight"]["dtype"],
                                                   ti[p + ".scale_weight"]), p
        assert to[p + ".comfy_quant"] == ('{"format": "%s"%s}' % (fmt, fp)).encode(), p
        want |= {p + ".weight", p + ".weight_scale", p + ".comfy_quant"}
        if p + ".scale_input" in ti:
            v = value(hi[p + ".scale_input"]["dtype"], ti[p + ".scale_input"])
            if v == 1.0:
                assert p + ".input_scale" not in to, p
            else:
                assert struct.unpack("<f", to[p + ".input_scale"])[0] == v, p
                want.add(p + ".input_scale")
    for n in (P + "blocks.0.attn.qkv.bias", P + "blocks.0.norm.weight"):
        assert to[n] == ti[n], n
        want.add(n)
    assert set(to) == want, sorted(set(to) ^ want)


cmd = sys.argv[1]
if cmd == "findings":
    got = json.load(open(sys.argv[2]))["diagnostics"]
    want = findings(sys.argv[3], sys.argv[4])
    assert got == want, json.dumps(got, indent=1)
elif cmd == "tensors":
    tensors(sys.argv[2], sys.argv[3], sys.argv[4])
elif cmd == "header":
    b = open(sys.argv[2], "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    sys.stdout.write(b[8:8 + n].decode())
PY

# check: the exact findings of both profiles, in report order.
for c in e4 e5 qm f16 e5in; do
    t_run "check $c" 1 "$STFIX" check --json "$D/$c.st"
    t_true "check $c: no stderr" test ! -s "$T_ERR"
    t_true "check $c: findings" python3 "$D/legacy.py" findings "$T_OUT" "$D/$c.st" $c
done
# The human listing of the form ComfyUI converts right, for ComfyUI alone.
cat >"$D/e4.txt" <<EOF
check $D/e4.st (target comfyui)
file-level:
  warning C25: $D/e4.st is a legacy scaled-FP8 checkpoint (scaled_fp8, 2 layer(s) with scale_weight): whether ComfyUI reads it depends on its version; those that convert the form as they load give each such layer a float8_e4m3fn marker, the others load the FP8 weights without their scales [note]
suggested fixes:
  C25  migrate the layers to comfy_quant form on disk: stfix fix -r migrate-scaled-fp8
summary: 0 error(s), 1 warning(s), 0 info
hint: stfix explain C25 shows what a rule checks and how to fix it
EOF
t_run "check e4 comfyui" 0 "$STFIX" check --target comfyui "$D/e4.st"
t_stdout_is "check e4 comfyui" "$D/e4.txt"

# The migration: one line per layer, the exact header, the tensors.
t_run "fix e4" 0 "$STFIX" fix "$D/e4.st" -r migrate-scaled-fp8 -o "$D/e4.out"
t_stdout_has "fix e4: qkv" "  blocks.0.attn.qkv: migrate-layers -> scale_weight -> weight_scale F32; marker float8_e4m3fn; scale_input dropped (1.0)"
t_stdout_has "fix e4: fc1" "  blocks.0.mlp.fc1: migrate-layers -> scale_weight -> weight_scale F32; marker float8_e4m3fn; scale_input -> input_scale F32"
t_stdout_has "fix e4: counts" "tensors: 9 written (7 copied unchanged, 2 changed or new), 2 dropped"
for c in e5 qm f16 e5in; do
    t_run "fix $c" 0 "$STFIX" fix "$D/$c.st" -r "$R" -o "$D/$c.out"
done
t_stdout_has "fix e5in: qkv" "  blocks.0.attn.qkv: migrate-layers -> scale_weight -> weight_scale F32; marker float8_e5m2; scale_input dropped (1.0)"
M='{"stfix.recipe_sha256":"'$SHA'","stfix.version":"'$VER'"}'
E4='"blocks.0.attn.qkv.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"blocks.0.mlp.fc1.input_scale":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"blocks.0.mlp.fc1.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[12,108]},"blocks.0.norm.weight":{"dtype":"BF16","shape":[64],"data_offsets":[108,236]},"blocks.0.attn.qkv.weight":{"dtype":"F8_E4M3","shape":[48,64],"data_offsets":[236,3308]},"blocks.0.mlp.fc1.weight":{"dtype":"F8_E4M3","shape":[32,64],"data_offsets":[3308,5356]},"blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[27],"data_offsets":[5356,5383]},"blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[27],"data_offsets":[5383,5410]}}'
printf '%s' '{"__metadata__":'"$M,$E4" >"$D/e4.hdr"
printf '%s' '{"__metadata__":'"$M"',"model.diffusion_model.blocks.0.attn.qkv.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"model.diffusion_model.blocks.0.mlp.fc1.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"model.diffusion_model.blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[8,104]},"model.diffusion_model.blocks.0.norm.weight":{"dtype":"BF16","shape":[64],"data_offsets":[104,232]},"model.diffusion_model.blocks.0.attn.qkv.weight":{"dtype":"F8_E5M2","shape":[48,64],"data_offsets":[232,3304]},"model.diffusion_model.blocks.0.mlp.fc1.weight":{"dtype":"F8_E5M2","shape":[32,64],"data_offsets":[3304,5352]},"model.diffusion_model.blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[61],"data_offsets":[5352,5413]},"model.diffusion_model.blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[61],"data_offsets":[5413,5474]}} ' >"$D/e5.hdr"
printf '%s' '{"__metadata__":{"_quantization_metadata":"{\"format_version\": \"1.0\", \"layers\": {\"blocks.0.attn.qkv\": {\"format\": \"float8_e4m3fn\"}, \"blocks.0.mlp.fc1\": {\"format\": \"float8_e4m3fn\"}}}","stfix.recipe_sha256":"'$SHA'","stfix.version":"'$VER'"},'"$E4"'  ' >"$D/qm.hdr"
printf '%s' '{"__metadata__":'"$M"',"m.blocks.0.attn.qkv.input_scale":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"m.blocks.0.attn.qkv.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"m.blocks.0.mlp.fc1.input_scale":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"m.blocks.0.mlp.fc1.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[12,16]},"m.blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[16,112]},"m.blocks.0.norm.weight":{"dtype":"BF16","shape":[64],"data_offsets":[112,240]},"m.blocks.0.attn.qkv.weight":{"dtype":"F8_E4M3","shape":[48,64],"data_offsets":[240,3312]},"m.blocks.0.mlp.fc1.weight":{"dtype":"F8_E4M3","shape":[32,64],"data_offsets":[3312,5360]},"m.blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[63],"data_offsets":[5360,5423]},"m.blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[63],"data_offsets":[5423,5486]}}  ' >"$D/f16.hdr"
printf '%s' '{"__metadata__":'"$M"',"blocks.0.attn.qkv.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"blocks.0.mlp.fc1.input_scale":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"blocks.0.mlp.fc1.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"blocks.0.attn.qkv.bias":{"dtype":"BF16","shape":[48],"data_offsets":[12,108]},"blocks.0.norm.weight":{"dtype":"BF16","shape":[64],"data_offsets":[108,236]},"blocks.0.attn.qkv.weight":{"dtype":"F8_E5M2","shape":[48,64],"data_offsets":[236,3308]},"blocks.0.mlp.fc1.weight":{"dtype":"F8_E5M2","shape":[32,64],"data_offsets":[3308,5356]},"blocks.0.attn.qkv.comfy_quant":{"dtype":"U8","shape":[25],"data_offsets":[5356,5381]},"blocks.0.mlp.fc1.comfy_quant":{"dtype":"U8","shape":[25],"data_offsets":[5381,5406]}}' >"$D/e5in.hdr"
for c in e4 e5 qm f16 e5in; do
    t_run "header $c" 0 python3 "$D/legacy.py" header "$D/$c.out"
    t_stdout_is "header $c" "$D/$c.hdr"
    t_true "tensors $c" python3 "$D/legacy.py" tensors "$D/$c.st" "$D/$c.out" $c
done

# The outputs check clean: E4M3 for both consumers, E5M2 for ComfyUI;
# SGLang rejects float8_e5m2, and its INT8 ConvRot recipe takes the file on.
for c in e4 qm f16; do
    t_run "clean $c" 0 "$STFIX" check "$D/$c.out"
    t_stdout_has "clean $c" "summary: 0 error(s), 0 warning(s), 0 info"
done
for c in e5 e5in; do
    t_run "clean $c comfyui" 0 "$STFIX" check --target comfyui "$D/$c.out"
    t_stdout_has "clean $c comfyui" "summary: 0 error(s), 0 warning(s), 0 info"
    t_run "e5m2 $c sglang" 1 "$STFIX" check --target sglang "$D/$c.out"
    t_stdout_has "e5m2 $c sglang" "error   R30: Unsupported Comfy quantization format(s): float8_e5m2 [refuses]"
done
for c in e4 e5; do
    t_run "sglang on $c" 0 "$STFIX" fix "$D/$c.out" -r sglang-int8-convrot -o "$D/$c.sglang"
    t_stdout_has "sglang on $c" "verification (sglang): passed, 0 error(s), 0 warning(s), 0 info"
    t_run "sglang on $c: check" 0 "$STFIX" check --target sglang "$D/$c.sglang"
    t_run "comfyui on $c" 0 "$STFIX" fix "$D/$c.out" -r comfyui-int8-convrot -o "$D/$c.comfyui"
    t_stdout_has "comfyui on $c" "verification (comfyui): passed, 0 error(s), 0 warning(s), 0 info"
done
# Migrated twice: nothing legacy is left, so nothing changes.
t_run "again" 0 "$STFIX" fix "$D/e4.out" -r "$R" -o "$D/e4.again"
t_true "again: same tensors" python3 "$D/legacy.py" tensors "$D/e4.st" "$D/e4.again" e4

# A weight the migration cannot mark: refused, naming the layer and rule,
# nothing written.
python3 - "$D/e4.st" "$D/bf16.st" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
# blocks.0.norm (a BF16 weight) gets a legacy scale_weight: a 4-byte F32
# tensor appended to the data.
d = json.loads(b[8:8 + n])
end = max(v["data_offsets"][1] for k, v in d.items() if k != "__metadata__")
d["blocks.0.norm.scale_weight"] = {"dtype": "F32", "shape": [], "data_offsets": [end, end + 4]}
t = json.dumps(d, separators=(",", ":")).encode()
t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:] + struct.pack("<f", 0.5))
PY
sed 's/weight_dtype: \[F8_E4M3, F8_E5M2\]/weight: present/' "$R" >"$D/all.yaml"
t_run "refused" 2 "$STFIX" fix "$D/bf16.st" -r "$D/all.yaml" -o "$D/bf16.out"
t_stderr_has "refused" "layer 'blocks.0.norm': rule 'migrate-layers' (recipe line "
t_stderr_has "refused" "migrate-scaled-fp8: the weight is BF16, not F8_E4M3 or F8_E5M2"
t_absent "refused" "$D/bf16.out"
