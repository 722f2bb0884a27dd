#!/bin/sh
# Hostile shapes in bounded time and memory. A weight with no elements
# (N or K is 0, so the other dimension is a bare number in the header) is
# copied, never planned into terabytes of scales or probed row by row; a
# row wider than --max-mem is quantized (fix) and compared (diff --numeric)
# in column pieces within the limit.
# Every command runs under t_capped (10 s, 64 MiB of address space; fix
# with -j 2, since each thread reserves a stack), so a regression fails
# here within seconds instead of running for days.
. tests/cli/lib.sh
D=$T_TMP
Q=rules/quantize-int8-convrot.yaml

# Inputs: tensors without data, one row of holes, rows of random BF16 bits.
python3 - "$D" <<'EOF'
import json, os, random, struct, sys

d = sys.argv[1]
M = b'{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256}'


def write(name, tensors, hole=0):
    hdr, off, blobs = {}, 0, []
    for t, dt, shape, data, n in tensors:
        hdr[t] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
        blobs.append(data)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
        f.truncate(8 + len(h) + off)  # data not given is a hole


write("big0.safetensors", [("x.weight", "BF16", [1 << 40, 0], b"", 0)])
write("zero_wide.safetensors", [("x.weight", "BF16", [0, 1 << 47], b"", 0)])
write("i8_big0.safetensors", [("x.comfy_quant", "U8", [len(M)], M, len(M)),
                              ("x.weight_scale", "F32", [], struct.pack("<f", 0.5), 4),
                              ("x.weight", "I8", [1 << 31, 0], b"", 0)])
# The marker without convrot: the SGLang recipe requantizes it.
mk = b'{"format": "int8_tensorwise"}'
write("i8_nc.safetensors", [("x.comfy_quant", "U8", [len(mk)], mk, len(mk)),
                            ("x.weight_scale", "F32", [], struct.pack("<f", 0.5), 4),
                            ("x.weight", "I8", [1 << 40, 0], b"", 0)])
# One row of 2^26 BF16 zeros (128 MiB), all of it a hole.
write("wide.safetensors", [("w.weight", "BF16", [1, 1 << 26], b"", 2 << 26)])
# Two rows of 2^20 finite BF16 values: clear the top exponent bit of each.
random.seed(7)
b = bytearray(random.getrandbits(8) for _ in range(4 << 20))
b[1::2] = bytes(x & 0xBF for x in b[1::2])
write("rand.safetensors", [("r.weight", "BF16", [2, 1 << 20], bytes(b), 4 << 20)])
EOF

# ---------------------------------------------- weights with no elements
t_true "the reported input is 88 bytes" test "$(wc -c <"$D/big0.safetensors")" -eq 88
t_run "plan [2^40, 0]" 0 t_capped "$STFIX" plan "$D/big0.safetensors" -r $Q
t_stdout_has "plan [2^40, 0]" "summary: weight (1099511627776, 0) has no elements: copied unchanged, not requantized"
t_stdout_has "plan [2^40, 0]" "copy         x.weight BF16 (1099511627776, 0) 0 bytes"
t_stdout_has "plan [2^40, 0]" "0 bytes to write"
t_run "fix [2^40, 0]" 0 t_capped "$STFIX" fix "$D/big0.safetensors" -r $Q -o "$D/big0.out.safetensors" -j 2
t_stdout_has "fix [2^40, 0]" "  x: quantize-linear -> weight (1099511627776, 0) has no elements: copied unchanged, not requantized"
t_stdout_has "fix [2^40, 0]" "data bytes: 0 written (0 copied unchanged, 0 computed)"
t_run "fix [2^40, 0]: output" 0 "$STFIX" inspect "$D/big0.out.safetensors"
t_stdout_has "fix [2^40, 0]: output" "  x.weight  BF16  [1099511627776, 0]  0 bytes"
t_run "fix [0, 2^47]" 0 t_capped "$STFIX" fix "$D/zero_wide.safetensors" -r $Q -o "$D/zw.out.safetensors" -j 2
t_stdout_has "fix [0, 2^47]" "  x: quantize-linear -> weight (0, 140737488355328) has no elements: copied unchanged, not requantized"
# The INT8 form: copied with its marker, which SGLang still rejects (R23).
t_run "fix I8 [2^40, 0]" 1 t_capped "$STFIX" fix "$D/i8_nc.safetensors" \
    -r rules/sglang-int8-convrot.yaml -o "$D/i8.out.safetensors" -j 2
t_stdout_has "fix I8 [2^40, 0]" "  x: requantize-without-convrot -> weight (1099511627776, 0) has no elements: copied unchanged, not requantized"
t_stdout_has "fix I8 [2^40, 0]" "error   R23: Serialized kitchen_int8 layer 'x' must set convrot=true"
t_run "check --numeric I8 [2^31, 0]" 0 t_capped "$STFIX" check --numeric --target comfyui "$D/i8_big0.safetensors"
t_stdout_has "check --numeric I8 [2^31, 0]" "warning N3:  x.weight I8 (2147483648, 0) has no elements: nothing to probe, and fix copies the layer unchanged"
t_run "check --numeric I8 [2^31, 0] --json" 0 t_capped "$STFIX" check --numeric --target comfyui --json "$D/i8_big0.safetensors"
t_stdout_has "check --numeric I8 [2^31, 0] --json" '"rule": "N3", "severity": "warning", "layer": "x"'

# ---------------------------------------------- rows wider than --max-mem
# 2^26 columns: the whole-row buffers would take 2^26 x (2 + 1 + 4) bytes
# and more; in pieces the run stays within the 64 MiB cap.
t_run "wide row, --max-mem 4MiB" 0 t_capped "$STFIX" fix "$D/wide.safetensors" -r $Q \
    -o "$D/wide.out.safetensors" --max-mem 4MiB -j 2
t_stdout_has "wide row, --max-mem 4MiB" "  w: quantize-linear -> requantize to int8_tensorwise, G=256"
python3 - "$D/wide.out.safetensors" <<'EOF' >"$D/wide.check"
import json, struct, sys
f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
h = json.loads(f.read(n))
w, s = h["w.weight"], h["w.weight_scale"]
f.seek(8 + n + s["data_offsets"][0])
scale = f.read(4).hex()
f.seek(8 + n + w["data_offsets"][0])
zero = all(not any(f.read(1 << 20)) for _ in range(64))
print(w["dtype"], w["shape"], s["shape"], scale, zero)
EOF
t_true "wide row: zero codes, the floor scale" grep -qx "I8 \[1, 67108864\] \[1, 1\] 6042a20d True" "$D/wide.check"
if [ -z "$T_ASAN" ] && [ -x /usr/bin/time ]; then
    # No ulimit here: the peak itself is the measure.
    timeout 120 /usr/bin/time -f %M -o "$D/rss" "$STFIX" fix "$D/wide.safetensors" -r $Q \
        -o "$D/wide2.out.safetensors" --max-mem 4MiB -j 2 >/dev/null 2>&1
    t_true "wide row: peak RSS under 64 MiB" test "$(tail -n 1 "$D/rss")" -lt 65536
fi
rm -f "$D/wide.out.safetensors" "$D/wide2.out.safetensors"
# The pieces give the bytes and error metrics of whole rows (under the
# default --max-mem a row of 2^20 columns goes whole; under 1 MiB in pieces).
t_run "pieces = rows: whole" 0 "$STFIX" fix "$D/rand.safetensors" -r $Q -o "$D/r1.safetensors" -j 2 --error-report
grep -A1 'rel-L2' "$T_OUT" >"$D/r1.err"
t_run "pieces = rows: pieces" 0 "$STFIX" fix "$D/rand.safetensors" -r $Q -o "$D/r2.safetensors" -j 2 --error-report --max-mem 1MiB
grep -A1 'rel-L2' "$T_OUT" >"$D/r2.err"
t_true "pieces = rows: same bytes" cmp "$D/r1.safetensors" "$D/r2.safetensors"
t_true "pieces = rows: same metrics" cmp "$D/r1.err" "$D/r2.err"

# ------------------------------------- diff --numeric of rows wider than --max-mem
# Whole rows and column pieces give the same numbers, rotations undone in
# pieces included.
t_run "diff pieces = rows: whole" 1 "$STFIX" diff "$D/rand.safetensors" "$D/r1.safetensors" --numeric -j 2
grep '^numeric ' "$T_OUT" >"$D/d1.txt"
t_true "diff pieces = rows: one numeric line" test "$(wc -l <"$D/d1.txt")" -eq 1
t_run "diff pieces = rows: pieces" 1 t_capped "$STFIX" diff "$D/rand.safetensors" "$D/r1.safetensors" \
    --numeric -j 2 --max-mem 1MiB
grep '^numeric ' "$T_OUT" >"$D/d2.txt"
t_true "diff pieces = rows: same numbers" cmp "$D/d1.txt" "$D/d2.txt"
# One row of 2^24 columns, BF16 against INT8 codes with a tensor scale,
# zero but for four columns (the rest holes): whole rows would take
# 2^24 x (4 + 4 + 2 + 1) bytes, over the 64 MiB cap. The two largest
# differences are equal and lie in different pieces: the first is named.
python3 - "$D" <<'EOF2'
import json, os, struct, sys
d = sys.argv[1]
K = 1 << 24
# column: (A, B's code); B's scale is 0.75
COLS = {5: (1.0, 2), 4096 * 5 + 3: (2.0, 4), 4096 * 3000 + 1: (2.0, 4), K - 1: (-1.0, -1)}


def write(name, tensors, cells):
    hdr, off = {}, 0
    for t, dt, shape, n in tensors:
        hdr[t] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        f.truncate(8 + len(h) + off)
        for t, at, b in cells:
            f.seek(8 + len(h) + hdr[t]["data_offsets"][0] + at)
            f.write(b)


write("wa.safetensors", [("w.weight", "BF16", [1, K], 2 * K)],
      [("w.weight", 2 * c, struct.pack("<f", v)[2:]) for c, (v, q) in COLS.items()])
M = b'{"format": "int8_tensorwise"}'
write("wb.safetensors", [("w.comfy_quant", "U8", [len(M)], len(M)),
                         ("w.weight_scale", "F32", [], 4), ("w.weight", "I8", [1, K], K)],
      [("w.comfy_quant", 0, M), ("w.weight_scale", 0, struct.pack("<f", 0.75))] +
      [("w.weight", c, struct.pack("<b", q)) for c, (v, q) in COLS.items()])
EOF2
t_run "diff wide row: whole" 1 "$STFIX" diff "$D/wa.safetensors" "$D/wb.safetensors" --numeric -j 2
grep '^numeric ' "$T_OUT" >"$D/w1.txt"
echo 'numeric w  rel-l2 4.808846e-01  cosine 0.987762965  max-abs 1.000000e+00 at (0, 20483)' >"$D/w0.txt"
t_true "diff wide row: the numbers" cmp "$D/w0.txt" "$D/w1.txt"
t_run "diff wide row, --max-mem 4MiB" 1 t_capped "$STFIX" diff "$D/wa.safetensors" \
    "$D/wb.safetensors" --numeric -j 2 --max-mem 4MiB
grep '^numeric ' "$T_OUT" >"$D/w2.txt"
t_true "diff wide row: same numbers" cmp "$D/w1.txt" "$D/w2.txt"
