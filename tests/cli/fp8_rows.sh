#!/bin/sh
# FP8 weights with per-row scales, end to end (stfix-rules(5), requantize;
# stfix-convrot(7), DEQUANTIZATION): the generated rowwise FP8 exports
# (tests/gen/gen_quant_ckpt.py fp8-rows: F8_E4M3 with [N] scales under
# float8_e4m3fn_rowwise; fp8-rows-e5m2: F8_E5M2 with [N, 1] scales under
# float8_e5m2; square attention layers included) are repaired by the
# bundled SGLang recipe into files that pass check --numeric and verify,
# with the same bytes for any -j and every kernel variant; diff --numeric
# compares every layer; exclude to F32 writes fl32(fp8(code) x s_row),
# checked against a decode written here in Python.
. tests/cli/lib.sh
D=$T_TMP/fp8rows
mkdir -p "$D"
RQ=rules/sglang-int8-convrot.yaml

variants=scalar
for v in avx2 avx512; do
    if STFIX_SIMD=$v "$STFIX" inspect fixtures/comfy/healthy_fp8.safetensors >/dev/null 2>&1; then
        variants="$variants $v"
    else
        echo "# skipped: STFIX_SIMD=$v (not usable on this CPU)"
    fi
done

printf 'stfix: 1\ntarget: comfyui\nrules:\n  - name: x\n    match: {marker: present}\n    do: {exclude: {dtype: F32}}\n' \
    >"$D/exclude.yaml"

for kind in fp8-rows fp8-rows-e5m2; do
    in=$D/$kind.safetensors
    python3 tests/gen/gen_quant_ckpt.py "$kind" "$in" 256KiB 64
    t_run "$kind: fix" 0 "$STFIX" fix "$in" -r "$RQ" -o "$D/$kind.j1.safetensors" -j 1
    # The square attention layers and the two MLP layers (N != K, either way).
    t_stdout_has "$kind: square layer" \
        "double_blocks.0.attn.q: requantize-other-formats -> requantize to int8_tensorwise, G=64"
    t_stdout_has "$kind: N > K" \
        "double_blocks.0.mlp.0: requantize-other-formats -> requantize to int8_tensorwise, G=64"
    t_stdout_has "$kind: N < K" \
        "double_blocks.0.mlp.2: requantize-other-formats -> requantize to int8_tensorwise, G=256"
    t_stdout_has "$kind: verified" "verification (sglang): passed, 0 error(s), 0 warning(s), 0 info"
    t_run "$kind: -j 2" 0 "$STFIX" fix "$in" -r "$RQ" -o "$D/$kind.j2.safetensors" -j 2
    t_true "$kind: -j 1 and -j 2 identical" cmp "$D/$kind.j1.safetensors" "$D/$kind.j2.safetensors"
    t_run "$kind: --max-mem 64KiB" 0 "$STFIX" fix "$in" -r "$RQ" -o "$D/$kind.mm.safetensors" \
        --max-mem 64KiB
    t_true "$kind: --max-mem does not change the bytes" \
        cmp "$D/$kind.j1.safetensors" "$D/$kind.mm.safetensors"
    for v in $variants; do
        t_run "$kind: $v" 0 env STFIX_SIMD=$v "$STFIX" fix "$in" -r "$RQ" -o "$D/$kind.$v.safetensors"
        t_true "$kind: $v bytes are -j 1's" cmp "$D/$kind.j1.safetensors" "$D/$kind.$v.safetensors"
    done
    t_run "$kind: check --numeric" 0 "$STFIX" check --numeric --target sglang "$D/$kind.j1.safetensors"
    t_run "$kind: verify" 0 "$STFIX" verify "$D/$kind.j1.safetensors" --from "$in" -r "$RQ"
    t_stdout_has "$kind: verify" "identical"
    # Every quantized layer is decoded on both sides and close.
    t_run "$kind: diff --numeric" 1 "$STFIX" diff "$in" "$D/$kind.j1.safetensors" --numeric
    t_true "$kind: diff --numeric compares every layer" python3 -c '
import sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("numeric ")]
assert len(lines) == 36, len(lines)
for l in lines:
    assert l[2] == "rel-l2" and l[4] == "cosine", l
    assert float(l[3]) < 0.02 and float(l[5]) > 0.999, l
' "$T_OUT"
    # Dequantized exactly: every element is fl32(fp8(code) x its row's scale).
    t_run "$kind: exclude" 0 "$STFIX" fix "$in" -r "$D/exclude.yaml" -o "$D/$kind.f32.safetensors"
    t_true "$kind: exclude is fl32(fp8(code) x s_row)" python3 -c '
import json, math, struct, sys

def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: (v, b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}

def fp8(c, e5):
    s = -1.0 if c & 0x80 else 1.0
    if e5:
        e, m = (c >> 2) & 31, c & 3
        assert e != 31
        return s * (m * 2.0 ** -16 if e == 0 else (1 + m / 4) * 2.0 ** (e - 15))
    e, m = (c >> 3) & 15, c & 7
    assert c & 0x7F != 0x7F
    return s * (m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))

a, b = load(sys.argv[1]), load(sys.argv[2])
seen = 0
for name, (info, raw) in a.items():
    if info["dtype"] not in ("F8_E4M3", "F8_E5M2"):
        continue
    e5 = info["dtype"] == "F8_E5M2"
    n, k = info["shape"]
    sinfo, sraw = a[name[:-len("weight")] + "weight_scale"]
    assert sinfo["shape"] in ([n], [n, 1]), sinfo
    s = struct.unpack("<%df" % n, sraw)
    oinfo, oraw = b[name]
    assert oinfo["dtype"] == "F32" and oinfo["shape"] == [n, k], oinfo
    got = struct.unpack("<%df" % (n * k), oraw)
    # The product of a 4-bit and a 24-bit significand is exact in a double:
    # packing it as F32 is the one rounding.
    want = [struct.unpack("<f", struct.pack("<f", fp8(c, e5) * s[i // k]))[0]
            for i, c in enumerate(raw)]
    assert list(got) == want, name
    seen += 1
assert seen == 36, seen
' "$in" "$D/$kind.f32.safetensors"
done
