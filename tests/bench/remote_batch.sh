#!/bin/sh
# Benchmark: `stfix batch` of 40 remote checkpoints (fixtures/demo, each
# needing a repair) named on one command line, served by
# tests/cli/fault_server.py with 20 ms (DELAY_MS) added to every answer:
# URL inputs opened ahead 8 at once (--net-jobs 8, the default) against
# the same batch with --net-jobs 1, each input opened in its turn, as the
# yardstick. Prints the median wall and CPU seconds (user + system) of
# each and their ratios, runs interleaved (BENCH_REPS, default 3). Both
# runs must write the same report, the times in it aside. Nothing here
# asserts a time.
#
#   sh tests/bench/remote_batch.sh [STFIX]   (default $STFIX, else ./build/stfix)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "remote_batch: $STFIX is not executable" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-rbatch.XXXXXX") || exit 2
pid=
trap '[ -n "$pid" ] && kill "$pid"; rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/srv"
n=${BENCH_INPUTS:-40}
i=1
while [ "$i" -le "$n" ]; do
    cp fixtures/demo/demo.safetensors "$tmp/srv/m$i.safetensors"
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
# "WALL CPU RC" of one batch into $tmp/out (emptied first); its report,
# the seconds taken out, in $tmp/report.J.
timed() { # timed J ARGS...
    _j=$1
    shift
    rm -rf "$tmp/out"
    python3 -c 'import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t = time.monotonic()
rc = subprocess.call(sys.argv[1:], stderr=subprocess.DEVNULL)
w = time.monotonic() - t
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print("%.3f %.3f %d" % (w, cpu, rc))' "$STFIX" batch -q --net-jobs "$_j" -o "$tmp/out" "$@"
    sed 's/"seconds":[0-9.e+-]*//' "$tmp/out/stfix-report.jsonl" >"$tmp/report.$_j"
}
reps=${BENCH_REPS:-3}
r=0
while [ "$r" -lt "$reps" ]; do
    timed 1 "$@" >>"$tmp/one"
    timed 8 "$@" >>"$tmp/eight"
    r=$((r + 1))
done
if ! cmp -s "$tmp/report.1" "$tmp/report.8"; then
    echo "remote_batch: the reports differ between --net-jobs 1 and 8" >&2
    exit 1
fi
med() { awk -v c="$2" '{ print $c }' "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
w1=$(med "$tmp/one" 1)
w8=$(med "$tmp/eight" 1)
c1=$(med "$tmp/one" 2)
c8=$(med "$tmp/eight" 2)
echo "batch of $n URLs, ${DELAY_MS:-20} ms a request: one at a time $w1 s wall $c1 s CPU," \
    "8 at once $w8 s wall $c8 s CPU, ratio wall $(awk -v a="$w8" -v b="$w1" 'BEGIN { printf "%.3f", a / b }')" \
    "CPU $(awk -v a="$c8" -v b="$c1" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
