#!/bin/sh
# Benchmark: `stfix check` of 200 remote checkpoints named on one command
# line, served by tests/cli/fault_server.py with 20 ms (DELAY_MS) added to
# every answer, read ahead 8 at once (the default) against the same run with
# --net-jobs 1, the inputs read one after the other, as the yardstick. The
# requests of different files overlap, so the ratio is expected near 1/8,
# as long as the server's own work per answer stays well under the added
# latency (the Python server takes a few ms of CPU per answer, more on a
# busy machine). Both runs must print the same reports. Nothing here
# asserts a time.
#
#   sh tests/bench/remote_check.sh [STFIX]   (default $STFIX, else ./build/stfix)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "remote_check: $STFIX is not executable" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-remote.XXXXXX") || exit 2
pid=
trap '[ -n "$pid" ] && kill "$pid"; rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/srv"
n=200
i=1
while [ "$i" -le "$n" ]; do
    cp fixtures/comfy/healthy_int8_g64.safetensors "$tmp/srv/m$i.safetensors"
    i=$((i + 1))
done
python3 tests/cli/fault_server.py "$tmp/srv" "$tmp/port" "$tmp/log" &
pid=$!
k=0
while [ ! -s "$tmp/port" ] && [ "$k" -lt 200 ]; do sleep 0.05; k=$((k + 1)); done
url=http://127.0.0.1:$(cat "$tmp/port")/delay-${DELAY_MS:-20}
set --
i=1
while [ "$i" -le "$n" ]; do
    set -- "$@" "$url/m$i.safetensors"
    i=$((i + 1))
done
# Wall seconds of one run, its reports in $tmp/out.J.
timed() { # timed J ARGS...
    _j=$1
    shift
    python3 -c 'import subprocess, sys, time
t = time.monotonic()
with open(sys.argv[1], "wb") as f:
    rc = subprocess.call(sys.argv[2:], stdout=f)
print("%.3f %d" % (time.monotonic() - t, rc))' "$tmp/out.$_j" "$STFIX" check --net-jobs "$_j" "$@"
}
reps=${BENCH_REPS:-3}
r=0
while [ "$r" -lt "$reps" ]; do
    timed 1 "$@" >>"$tmp/one"
    timed 8 "$@" >>"$tmp/eight"
    r=$((r + 1))
done
if ! cmp -s "$tmp/out.1" "$tmp/out.8"; then
    echo "remote_check: the reports differ between --net-jobs 1 and 8" >&2
    exit 1
fi
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
one=$(med "$tmp/one")
eight=$(med "$tmp/eight")
echo "check of $n URLs, ${DELAY_MS:-20} ms a request: one at a time $one s, 8 at once $eight s," \
    "ratio $(awk -v a="$eight" -v b="$one" 'BEGIN { printf "%.3f", a / b }')"
