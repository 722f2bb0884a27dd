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
. tests/bench/remote_serve.inc
n=${BENCH_INPUTS:-40}
rs_serve rbatch "$n" fixtures/demo/demo.safetensors
# "WALL CPU RC" of one batch into $tmp/out (emptied first); its report,
# the seconds taken out, in $tmp/report.J.
timed() { # timed J
    rm -rf "$tmp/out"
    rs_timed /dev/null "$STFIX" batch -q --net-jobs "$1" -o "$tmp/out" $urls
    sed 's/"seconds":[0-9.e+-]*//' "$tmp/out/stfix-report.jsonl" >"$tmp/report.$1"
}
rs_rounds remote_batch "$tmp/report.1" "$tmp/report.8"
rs_report "batch of $n URLs"
