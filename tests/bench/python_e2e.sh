#!/bin/sh
# Benchmark: the Python package against the program on the same work, in
# the same run, interleaved, median of BENCH_REPS (default 3) rounds, wall
# and CPU (user + sys) time of each whole process (tests/bench/timed.py):
#   check  `stfix check --json` of the largest fixture, against
#          stfix.check(...).to_json() (the interpreter's start and the
#          import included: the check itself takes milliseconds; the time
#          of the call alone, measured inside, is printed beside it)
#   fix    `stfix fix -r quantize-int8-convrot` of a generated BF16 export
#          of BENCH_PY_MIB MiB (default 256), against stfix.fix(...)
# and prints each ratio python/program. Nothing here asserts a time.
#
#   sh tests/bench/python_e2e.sh [STFIX]   (default $STFIX, else ./build/stfix)
#   BENCH_PYTHON  the interpreter (default: the one python3 resolves to)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "python_e2e: $STFIX is not executable" >&2; exit 2; }
reps=${BENCH_REPS:-3}
mib=${BENCH_PY_MIB:-256}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
so=$(ls "$(dirname "$STFIX")"/libstfix.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$so" ] || { echo "python_e2e: no libstfix.so.X.Y.Z beside $STFIX" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-pybench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
export PYTHONPATH="$root/lib/python" STFIX_LIBRARY="$so"
# The interpreter itself, not a launcher in front of it (a pyenv shim costs
# more than the check): BENCH_PYTHON, else what python3 resolves to.
py=${BENCH_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}

big=$(ls -S "$root"/fixtures/*/*.safetensors | head -n 1)
python3 - "$tmp/export.safetensors" "$mib" <<'PY' || exit 2
import json, struct, sys
path, mib = sys.argv[1], int(sys.argv[2])
n, k = 1024, 1024
layers = max(1, mib * 2**20 // (n * k * 2))
hdr, off = {}, 0
for i in range(layers):
    hdr["blocks.%03d.mlp.weight" % i] = {"dtype": "BF16", "shape": [n, k],
                                         "data_offsets": [off, off + n * k * 2]}
    off += n * k * 2
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * ((8 - len(h) % 8) % 8)
row = b"".join(struct.pack("<H", 0x3c00 + (j * 37) % 512) for j in range(k))
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for _ in range(layers * n):
        f.write(row)
PY

# One measured run: NAME ROUND COMMAND...; its line goes to $tmp/NAME.times.
run() {
    name=$1 round=$2
    shift 2
    python3 "$here/timed.py" "$tmp/res" "$tmp/$name.log" "$@"
    read -r wall user sys rss code settled <"$tmp/res"
    [ "$code" -eq 0 ] || { echo "python_e2e: $name failed (exit $code):"; cat "$tmp/$name.log"; exit 1; }
    call=$(sed -n 's/^call_s //p' "$tmp/$name.log")
    echo "$wall $(echo "$user $sys" | awk '{print $1 + $2}') ${call:-0}" >>"$tmp/$name.times"
    rm -f "$tmp"/out-*.safetensors
}

i=1
while [ "$i" -le "$reps" ]; do
    run check_cli "$i" "$STFIX" check --json "$big"
    run check_py "$i" "$py" -c 'import stfix, sys, time; t = time.perf_counter()
sys.stdout.write(stfix.check(sys.argv[1]).to_json())
sys.stderr.write("call_s %.6f\n" % (time.perf_counter() - t))' "$big"
    run fix_cli "$i" "$STFIX" fix "$tmp/export.safetensors" -r quantize-int8-convrot -o "$tmp/out-cli.safetensors"
    run fix_py "$i" "$py" -c 'import stfix, sys, time; t = time.perf_counter()
stfix.fix(sys.argv[1], "quantize-int8-convrot", sys.argv[2])
sys.stderr.write("call_s %.6f\n" % (time.perf_counter() - t))' \
        "$tmp/export.safetensors" "$tmp/out-py.safetensors"
    i=$((i + 1))
done

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for case in check fix; do
    cw=$(cut -d' ' -f1 "$tmp/${case}_cli.times" | median)
    cc=$(cut -d' ' -f2 "$tmp/${case}_cli.times" | median)
    pw=$(cut -d' ' -f1 "$tmp/${case}_py.times" | median)
    pc=$(cut -d' ' -f2 "$tmp/${case}_py.times" | median)
    pk=$(cut -d' ' -f3 "$tmp/${case}_py.times" | median)
    echo "$case $cw $cc $pw $pc $pk" | awk '{printf "%-6s program %.3f s wall %.3f s cpu; python %.3f s wall %.3f s cpu (the call alone %.3f s); ratio %.2f wall %.2f cpu, call alone / program %.2f\n", $1, $2, $3, $4, $5, $6, $4 / $2, $5 / $3, $6 / $2}'
done
echo "python_e2e: check of $(basename "$big"), fix of a $mib MiB BF16 export; median of $reps"
