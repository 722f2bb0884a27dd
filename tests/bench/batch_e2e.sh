#!/bin/sh
# Benchmark: `stfix batch` over a generated zoo, against the same work done
# one `stfix fix` at a time and against copying the zoo. The zoo holds
# BENCH_BATCH_N checkpoints (INT8 rowwise exports with Flux-like shapes,
# repaired by rules/sglang-int8-convrot.yaml) in two directories; each
# round times, interleaved as tests/bench/fix_e2e.sh does (settled with
# tests/bench/timed.py, dirty pages written back before each command):
#   batch     stfix batch -r RECIPE -o OUT ZOO (hashes every file read and written)
#   nohash    the same with --hash none (no file read to be hashed)
#   fixes     stfix fix ZOO/x -r RECIPE -o OUT/x for every checkpoint, one after another
#   cp-r      cp -r ZOO COPY
#   cp-r+sync cp -r ZOO COPY, then sync: the copy on disk, as batch and fix
#             leave their outputs (fsync), so the durable yardstick
# and prints the medians (wall and CPU time) and the ratios batch / fixes
# (the bar: 1.05), batch / nohash (what hashing costs), nohash / fixes
# (the batch machinery alone) and batch / cp-r (+ sync). Nothing here
# asserts a time.
#
#   sh tests/bench/batch_e2e.sh [STFIX]
#   BENCH_BATCH_N=20        checkpoints in the zoo
#   BENCH_BATCH_SIZE=100MiB the generator's size of each (at the default hidden size
#                           a file is at least one block set: 114 MB)
#   BENCH_BATCH_HIDDEN=H    hidden size of the layers (default the generator's 3072;
#                           a small one, e.g. 256, makes small checkpoints possible)
#   BENCH_REPS=3            rounds
#   BENCH_JOBS=N            -j N for batch and for each fix
#   BENCH_JSON=FILE         also write the results as a JSON array
#   TMPDIR                  where the files go (about 3 x N x the file size)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "batch_e2e: $STFIX is not executable" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
n=${BENCH_BATCH_N:-20}
size=${BENCH_BATCH_SIZE:-100MiB}
case $size in *[KMG]) size=${size}iB ;; esac
reps=${BENCH_REPS:-3}
jobs=${BENCH_JOBS:+-j $BENCH_JOBS}
json=${BENCH_JSON:-}
recipe=rules/sglang-int8-convrot.yaml
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-batche2e.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
timed="python3 tests/bench/timed.py"
echo "batch_e2e: $n checkpoints of $size, median of $reps rounds, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

mkdir -p "$tmp/zoo/a" "$tmp/zoo/b"
python3 tests/gen/gen_quant_ckpt.py int8-rows "$tmp/one.safetensors" "$size" ${BENCH_BATCH_HIDDEN:-} >/dev/null ||
    exit 2
i=0
while [ "$i" -lt "$n" ]; do
    d=a
    [ $((i % 2)) -eq 1 ] && d=b
    cp "$tmp/one.safetensors" "$tmp/zoo/$d/m$i.safetensors"
    i=$((i + 1))
done
echo "batch_e2e: each checkpoint $(wc -c <"$tmp/one.safetensors") bytes"
rm -f "$tmp/one.safetensors"
list=$(cd "$tmp/zoo" && find . -name '*.safetensors' | sort | tr '\n' ' ')
insize=$(cat "$tmp"/zoo/*/*.safetensors | wc -c)

# fixes: the same checkpoints, one fix each, as a script would run them.
cat >"$tmp/fixes.sh" <<EOS
set -e
for f in $list; do
    mkdir -p "$tmp/fx/\$(dirname \$f)"
    "$STFIX" fix "$tmp/zoo/\$f" -r "$recipe" -o "$tmp/fx/\$f" $jobs >/dev/null
done
EOS

run_cmd() {
    cat "$tmp"/zoo/*/*.safetensors >/dev/null # the inputs are warm for every command alike
    case $2 in
    batch) $timed "$tmp/r" "$tmp/log" "$STFIX" batch -r "$recipe" -o "$tmp/out" "$tmp/zoo" $jobs ;;
    nohash) $timed "$tmp/r" "$tmp/log" "$STFIX" batch --hash none -r "$recipe" -o "$tmp/out" \
        "$tmp/zoo" $jobs ;;
    fixes) $timed "$tmp/r" "$tmp/log" sh "$tmp/fixes.sh" ;;
    cp-r) $timed "$tmp/r" "$tmp/log" cp -r "$tmp/zoo" "$tmp/copy" ;;
    cp-r+sync) $timed "$tmp/r" "$tmp/log" sh -c 'cp -r "$1" "$2" && sync' sh "$tmp/zoo" "$tmp/copy" ;;
    esac
    read -r wall user sys rss code settled <"$tmp/r" || return 2
    [ "$2" = batch ] && [ "$code" -eq 0 ] && outsize=$(cat "$tmp"/out/*/*.safetensors | wc -c)
    rm -rf "$tmp/out" "$tmp/fx" "$tmp/copy"
    echo "batch $1 $2 $wall $user $sys $rss $code $settled" >>"$tmp/res"
    if [ "$code" -ne 0 ]; then
        echo "batch_e2e: $2 exited $code:"
        tail -n 5 "$tmp/log"
        return 1
    fi
}

rc=0
outsize=0
cmds="batch nohash fixes cp-r cp-r+sync"
ncmds=5
r=0
while [ "$r" -lt "$reps" ]; do
    i=0
    while [ "$i" -lt "$ncmds" ]; do
        k=$(( (i + r) % ncmds + 1 ))
        run_cmd "$r" "$(echo $cmds | cut -d' ' -f$k)" || rc=1
        i=$((i + 1))
    done
    r=$((r + 1))
done
awk -v c=batch -v isz="$insize" -v osz="$outsize" -v json="${json:+$tmp/json}" -v rec="$recipe" \
    -f tests/bench/fix_e2e_summary.awk "$tmp/res" || rc=2
if [ -n "$json" ]; then
    { echo "["; sed '$!s/$/,/' "$tmp/json" 2>/dev/null; echo "]"; } >"$json" ||
        { echo "batch_e2e: cannot write $json" >&2; rc=2; }
fi
echo "batch_e2e: load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
exit $rc
