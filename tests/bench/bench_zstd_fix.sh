#!/bin/sh
# Benchmark: `stfix fix` BF16 -> INT8 ConvRot (rules/quantize-int8-convrot.yaml)
# from compressed inputs and to a compressed output, each against the same
# fix of the uncompressed file timed alongside (stfix(1), COMPRESSED FILES):
#
#   plain      fix IN.safetensors -o OUT
#   seekable   fix IN.safetensors.zst -o OUT   (stfix compress, level 3:
#              the seekable format, frames decoded on the -j threads)
#   stream     fix IN.zst -o OUT               (zstd -3: one frame, read as a
#              stream by one thread; a zstd frame cannot be split)
#   zout       fix IN.safetensors -o OUT --zstd (level 3, compressed at commit)
#   zstd-d     zstd -d IN.zst -o /dev/null      (one thread's decompression,
#              the stream case's floor)
#
# Every command starts settled (tests/bench/timed.py: sync, dirty pages
# drained) with its input warm; rounds are interleaved, each round starting
# one command later. Each line gives the median wall and CPU (user + sys)
# seconds over the rounds and the ratio of the medians to plain's, wall and
# CPU, with the range of the per-round wall ratios.
#
#   sh tests/bench/bench_zstd_fix.sh [STFIX]
#   BENCH_SIZE=256MiB   weight bytes (the issue's figure: 1GiB)
#   BENCH_REPS=3        rounds
#   BENCH_JOBS=2        fix -j
#   TMPDIR              where the files go (about 4x BENCH_SIZE)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "bench_zstd_fix: $STFIX is not executable" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
command -v zstd >/dev/null 2>&1 || { echo "bench_zstd_fix: no zstd program; skipped"; exit 0; }
size=${BENCH_SIZE:-256MiB}
case $size in *[KMG]) size=${size}iB ;; esac
reps=${BENCH_REPS:-3}
jobs=${BENCH_JOBS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-zfix.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
timed="python3 tests/bench/timed.py"
recipe=rules/quantize-int8-convrot.yaml
in=$tmp/in.safetensors
python3 tests/gen/gen_bf16_ckpt.py "$in" "$size" >/dev/null || exit 2
"$STFIX" compress "$in" -o "$tmp/seek.safetensors.zst" -l 3 -j "$jobs" >/dev/null || exit 2
zstd -q -3 "$in" -o "$tmp/stream.safetensors.zst" || exit 2
echo "bench_zstd_fix: ${size} BF16 -> INT8 ConvRot, -j $jobs, median of $reps, load average $(cut -d' ' -f1-3 /proc/loadavg)"

run_cmd() { # ROUND NAME
    case $2 in
    plain) src=$in ;;
    seekable) src=$tmp/seek.safetensors.zst ;;
    stream | zstd-d) src=$tmp/stream.safetensors.zst ;;
    zout) src=$in ;;
    esac
    cat "$src" >/dev/null
    case $2 in
    zout) $timed "$tmp/r" "$tmp/log" "$STFIX" fix "$src" -r "$recipe" -o "$tmp/out.safetensors" \
        -j "$jobs" --zstd ;;
    zstd-d) $timed "$tmp/r" "$tmp/log" zstd -q -d "$src" -o /dev/null -f ;;
    *) $timed "$tmp/r" "$tmp/log" "$STFIX" fix "$src" -r "$recipe" -o "$tmp/out.safetensors" \
        -j "$jobs" ;;
    esac
    read -r wall user sys rss code settled <"$tmp/r" || return 2
    rm -f "$tmp/out.safetensors" "$tmp/out.safetensors.zst"
    echo "$1 $2 $wall $user $sys $code" >>"$tmp/res"
    [ "$code" -eq 0 ] || { echo "bench_zstd_fix: $2 exited $code:"; tail -n 5 "$tmp/log"; return 1; }
}

cmds="plain seekable stream zout zstd-d"
n=5
rc=0
r=0
while [ "$r" -lt "$reps" ]; do
    i=0
    while [ "$i" -lt "$n" ]; do
        run_cmd "$r" "$(echo $cmds | cut -d' ' -f$(( (i + r) % n + 1 )))" || rc=1
        i=$((i + 1))
    done
    r=$((r + 1))
done
awk -v cmds="$cmds" '
function median(a, k,   i, j, t) {
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ w[$2, $1] = $3; c[$2, $1] = $4 + $5; rounds[$1] = 1 }
END {
    k = split(cmds, names, " ")
    nr = 0; for (x in rounds) nr++
    for (q = 1; q <= k; q++) {
        m = names[q]
        for (r = 0; r < nr; r++) { ww[r + 1] = w[m, r]; cc[r + 1] = c[m, r] }
        mw[m] = median(ww, nr); mc[m] = median(cc, nr)
        lo[m] = 1e9; hi[m] = 0
        for (r = 0; r < nr; r++) { x = w[m, r] / w["plain", r]; if (x < lo[m]) lo[m] = x; if (x > hi[m]) hi[m] = x }
    }
    for (q = 1; q <= k; q++) {
        m = names[q]
        printf "  %-9s %7.2f s wall %7.2f cpu-s   x%.2f wall (%.2f-%.2f)  x%.2f cpu\n", m, mw[m], mc[m], mw[m] / mw["plain"], lo[m], hi[m], mc[m] / mc["plain"]
    }
}' "$tmp/res"
echo "  sizes: in $(wc -c <"$in"), seekable $(wc -c <"$tmp/seek.safetensors.zst"), stream $(wc -c <"$tmp/stream.safetensors.zst") bytes"
echo "bench_zstd_fix: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
