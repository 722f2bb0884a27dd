#!/bin/sh
# Benchmark: `stfix check` (no --numeric) on a generated 2 GiB INT8 ConvRot
# checkpoint, against the yardstick of reading the same file once
# (`cat FILE > /dev/null`) in the same run. check reads only the header and
# the marker tensors, so its time should not grow with the checkpoint size:
# the ratio check/cat is expected far below 1. Nothing here asserts a time.
#
#   sh tests/bench/check_2g.sh [STFIX]     (default $STFIX, else ./build/stfix)
#
# The weights are a sparse hole (the file is created with seek, not written),
# so generation takes well under a second and little disk.
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "check_2g: $STFIX is not executable" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-check2g.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
f="$tmp/model_2g.safetensors"

python3 - "$f" <<'EOF' || exit 2
import json, struct, sys
# 512 layers x I8 [2048, 2048] = 2 GiB of weights, F32 [2048, 1] scales and
# the canonical 72-byte markers, in canonical writer order (F32, I8, U8).
L, N, K = 512, 2048, 2048
names = ["blocks.%03d.attn.qkv" % i for i in range(L)]
mk = json.dumps({"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256}).encode()
ents, off = [], 0
for dt, sfx, shape, size in (("F32", ".weight_scale", [N, 1], N * 4),
                             ("I8", ".weight", [N, K], N * K),
                             ("U8", ".comfy_quant", [len(mk)], len(mk))):
    for p in sorted(names):
        ents.append((p + sfx, dt, shape, off, off + size))
        off += size
hdr = "{" + ",".join('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'
                     % (n, d, ",".join(map(str, s)), b, e) for n, d, s, b, e in ents) + "}"
hdr = hdr.encode()
hdr += b" " * ((8 - len(hdr) % 8) % 8)
base = 8 + len(hdr)
scale = struct.pack("<f", 0.001) * N
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(hdr)) + hdr)
    for n, d, s, b, e in ents:
        if d == "F32":
            f.seek(base + b); f.write(scale)
        elif d == "U8":
            f.seek(base + b); f.write(mk)
    f.truncate(base + off)
EOF

now() { date +%s.%N; }
size=$(wc -c <"$f")
t0=$(now)
"$STFIX" check "$f" >"$tmp/out.txt"
rc=$?
t1=$(now)
cat "$f" >/dev/null
t2=$(now)
"$STFIX" check "$f" >/dev/null
t3=$(now)
tail -n 1 "$tmp/out.txt"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v sz="$size" -v rc="$rc" 'BEGIN {
    chk = b - a; cat = c - b; chk2 = d - c;
    best = chk < chk2 ? chk : chk2;
    ratio = cat > 0 ? best / cat : 0;
    printf "check_2g: file %.2f GiB, stfix check exit %d\n", sz / 1073741824, rc;
    printf "check_2g: stfix check %.3f s (best of 2), cat > /dev/null %.3f s, ratio check/cat %.4f\n",
           best, cat, ratio;
}'
[ "$rc" -eq 0 ]
