#!/bin/sh
# stfix verify keeps none of the bytes it makes: it compares each with the
# output's as it is made. Run under a file size limit (RLIMIT_FSIZE, which
# memory files obey too) of 2 MiB, it verifies a 17 MiB output, finds a
# flipped byte in it and names the tensor. An output whose header grew
# (its tensors all further on) differs in its header only: each tensor is
# compared with the same tensor wherever the output holds it.
. tests/cli/lib.sh
D=$T_TMP/verify_bounded
mkdir -p "$D"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
R=$(pwd)/rules/sglang-int8-convrot.yaml
python3 tests/gen/gen_quant_ckpt.py int8-rows "$D/m.safetensors" 16MiB 256 >/dev/null
cd "$D" || exit 1
"$S" fix m.safetensors -r "$R" -o o.safetensors >/dev/null
sum=$(t_sha256 o.safetensors)
size=$(wc -c <o.safetensors)
t_true "the output is over 16 MiB" test "$size" -gt 16777216
# 4096 blocks of 512 bytes (dash's unit): 2 MiB.
limited() { sh -c 'ulimit -f 4096 && exec "$@"' sh "$@"; }

t_run "identical, under the limit" 0 limited "$S" verify o.safetensors --from m.safetensors -r "$R"
cat >want <<OUT
verify o.safetensors (from m.safetensors, recipe $R): identical
  identical o.safetensors
    expected sha256 $sum
OUT
t_stdout_is "identical, under the limit" want

# One byte flipped in img_in.weight (its first data byte).
cp o.safetensors bad.safetensors
python3 - <<'PY'
import json, struct
b = bytearray(open("bad.safetensors", "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
b[8 + n + h["img_in.weight"]["data_offsets"][0]] ^= 1
open("bad.safetensors", "wb").write(b)
PY
t_run "one byte flipped, under the limit" 1 limited "$S" verify bad.safetensors --from m.safetensors -r "$R"
cat >want <<OUT
verify bad.safetensors (from m.safetensors, recipe $R): DIFFERENT
  differs   bad.safetensors
    expected sha256 unknown
    actual   sha256 $(t_sha256 bad.safetensors)
    tensor 'img_in.weight': data
OUT
t_stdout_is "one byte flipped, under the limit" want

# The header grown by one more metadata key: every tensor 64 bytes further.
python3 - <<'PY'
import json, struct
b = open("o.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h.setdefault("__metadata__", {})["x"] = "y" * 50
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * (-len(t) % 8)
open("moved.safetensors", "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
b = bytearray(open("moved.safetensors", "rb").read())
b[8 + len(t) + h["img_in.weight"]["data_offsets"][0] + 7] ^= 1
open("moved_bad.safetensors", "wb").write(b)
PY
t_run "header grown" 1 limited "$S" verify moved.safetensors --from m.safetensors -r "$R" --json
t_true "header grown: the header alone" python3 -c "
import json
d = json.load(open('$T_OUT'))
assert d['files'][0]['expected_sha256'] is None, d
assert d['differences'] == [{'file': 'moved.safetensors', 'tensor': None, 'what': 'header'}], d"
t_run "header grown, a byte flipped" 1 limited "$S" verify moved_bad.safetensors --from m.safetensors -r "$R" --json
t_true "header grown, a byte flipped: the tensor" python3 -c "
import json
d = json.load(open('$T_OUT'))
assert d['differences'] == [{'file': 'moved_bad.safetensors', 'tensor': 'img_in.weight', 'what': 'data'}], d"
