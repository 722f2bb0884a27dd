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

# Each timed command starts settled (tests/bench/timed.py: dirty pages written
# back); check and cat alternate for BENCH_REPS rounds (default 3), and the
# figures are medians, with CPU time (user + sys) beside wall time.
cd "$(dirname "$0")/../.." || exit 2
size=$(wc -c <"$f")
reps=${BENCH_REPS:-3}
r=0
rc=0
while [ "$r" -lt "$reps" ]; do
    python3 tests/bench/timed.py "$tmp/r" "$tmp/out.txt" "$STFIX" check "$f" || exit 2
    read -r wall user sys rss code settled <"$tmp/r"
    echo "check $wall $user $sys $code" >>"$tmp/res"
    [ "$code" -eq 0 ] || rc=$code
    python3 tests/bench/timed.py "$tmp/r" /dev/null cat "$f" || exit 2
    read -r wall user sys rss code settled <"$tmp/r"
    echo "cat $wall $user $sys $code" >>"$tmp/res"
    r=$((r + 1))
done
tail -n 1 "$tmp/out.txt"
awk -v sz="$size" -v rc="$rc" '
function med(a, n,    i, j, t) {
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = ++n[$1]; w[$1, k] = $2; c[$1, k] = $3 + $4 }
END {
    for (i = 1; i <= n["check"]; i++) { cw[i] = w["check", i]; cc[i] = c["check", i] }
    for (i = 1; i <= n["cat"]; i++) { aw[i] = w["cat", i]; ac[i] = c["cat", i] }
    chk = med(cw, n["check"]); cat = med(aw, n["cat"])
    printf "check_2g: file %.2f GiB, stfix check exit %d\n", sz / 1073741824, rc;
    printf "check_2g: stfix check %.3f s (cpu %.3f s), cat > /dev/null %.3f s (cpu %.3f s), " \
           "medians of %d; ratio check/cat %.4f\n",
           chk, med(cc, n["check"]), cat, med(ac, n["cat"]), n["check"], (cat > 0 ? chk / cat : 0);
}' "$tmp/res"
[ "$rc" -eq 0 ]
