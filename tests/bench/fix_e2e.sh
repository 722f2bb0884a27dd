#!/bin/sh
# Benchmark: `stfix fix` end to end. A generated BF16 checkpoint with
# Flux-like layer shapes (tests/gen/gen_bf16_ckpt.py) is converted with
# rules/quantize-int8-convrot.yaml, against the yardstick of `cp` of the
# same file, both with a warm page cache, in the same run:
#   1. 2 GiB input: wall time of stfix fix / cp (target <= 1.0: stfix writes
#      about half the bytes cp writes). stfix fsyncs its output before the
#      rename; cp does not, so cp followed by `sync FILE` is shown as well.
#   2. 4 GiB input: peak RSS of stfix fix (target <= 256 MiB).
# Nothing here asserts a time; the exit status is that of the stfix runs.
#
#   sh tests/bench/fix_e2e.sh [STFIX]    (default $STFIX, else ./build/stfix)
#   FIX_E2E_GIB=2 FIX_E2E_RSS_GIB=4      input sizes (smaller for a quick try)
#   TMPDIR                               where the inputs go (needs ~3x the size)
# Peak RSS comes from GNU time (/usr/bin/time -v) when it is installed (Debian
# package "time": apt-get install time), else from getrusage(RUSAGE_CHILDREN)
# in a small python3 wrapper. The script says which one it used.
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "fix_e2e: $STFIX is not executable" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
gib=${FIX_E2E_GIB:-2}
rss_gib=${FIX_E2E_RSS_GIB:-4}
recipe=rules/quantize-int8-convrot.yaml
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-fixe2e.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

now() { date +%s.%N; }
# Run "$@" and leave its peak RSS (KiB) in $tmp/rss.
peak_rss() {
    if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
        /usr/bin/time -v -o "$tmp/time.txt" "$@"
        _rc=$?
        sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$tmp/time.txt" >"$tmp/rss"
        return $_rc
    fi
    python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$tmp/rss" "$@"
}
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
    rss_how="GNU time -v"
else
    rss_how="python3 getrusage(RUSAGE_CHILDREN) (GNU time not installed: apt-get install time)"
fi

in="$tmp/flux_bf16.safetensors"
echo "fix_e2e: generating a ${gib} GiB BF16 checkpoint (Flux-like shapes) in $tmp"
python3 tests/gen/gen_bf16_ckpt.py "$in" "${gib}GiB" || exit 2
size=$(wc -c <"$in")
cat "$in" >/dev/null # warm the page cache

t0=$(now)
cp "$in" "$tmp/copy.safetensors"
t1=$(now)
sync "$tmp/copy.safetensors" 2>/dev/null || sync
t2=$(now)
rm -f "$tmp/copy.safetensors"
cat "$in" >/dev/null
t3=$(now)
peak_rss "$STFIX" fix "$in" -r "$recipe" -o "$tmp/out.safetensors" >"$tmp/fix.txt" 2>&1
rc=$?
t4=$(now)
[ "$rc" -eq 0 ] || { echo "fix_e2e: stfix fix exited $rc:"; tail -n 5 "$tmp/fix.txt"; }
outsize=$(wc -c <"$tmp/out.safetensors" 2>/dev/null || echo 0)
rss1=$(cat "$tmp/rss" 2>/dev/null || echo 0)
rm -f "$tmp/out.safetensors"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v sz="$size" -v osz="$outsize" \
    -v rss="$rss1" 'BEGIN {
    cp = b - a; cps = c - a; fix = e - d;
    printf "fix_e2e: input %.2f GiB BF16, output %.2f GiB INT8 ConvRot\n", sz / 1073741824, osz / 1073741824;
    printf "fix_e2e: cp %.3f s, cp + sync %.3f s, stfix fix %.3f s (peak RSS %.1f MiB)\n",
           cp, cps, fix, rss / 1024;
    printf "fix_e2e: ratio fix/cp %.3f (target <= 1.0), fix/(cp + sync) %.3f\n",
           (cp > 0 ? fix / cp : 0), (cps > 0 ? fix / cps : 0);
}'
rm -f "$in"

rc2=0
if [ "$rss_gib" != 0 ]; then
    in="$tmp/flux_bf16_rss.safetensors"
    echo "fix_e2e: generating a ${rss_gib} GiB BF16 checkpoint for the memory measurement"
    python3 tests/gen/gen_bf16_ckpt.py "$in" "${rss_gib}GiB" || exit 2
    size=$(wc -c <"$in")
    t0=$(now)
    peak_rss "$STFIX" fix "$in" -r "$recipe" -o "$tmp/out.safetensors" >"$tmp/fix.txt" 2>&1
    rc2=$?
    t1=$(now)
    [ "$rc2" -eq 0 ] || { echo "fix_e2e: stfix fix exited $rc2:"; tail -n 5 "$tmp/fix.txt"; }
    awk -v a="$t0" -v b="$t1" -v sz="$size" -v rss="$(cat "$tmp/rss" 2>/dev/null || echo 0)" \
        -v how="$rss_how" 'BEGIN {
        printf "fix_e2e: input %.2f GiB: stfix fix %.3f s, peak RSS %.1f MiB (target <= 256 MiB; %s)\n",
               sz / 1073741824, b - a, rss / 1024, how;
    }'
    rm -f "$in" "$tmp/out.safetensors"
fi
[ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ]
