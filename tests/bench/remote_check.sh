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
. tests/bench/remote_serve.inc
n=200
rs_serve remote "$n" fixtures/comfy/healthy_int8_g64.safetensors
# "WALL CPU RC" of one run, its reports in $tmp/out.J.
timed() { rs_timed "$tmp/out.$1" "$STFIX" check --net-jobs "$1" $urls; }
rs_rounds remote_check "$tmp/out.1" "$tmp/out.8"
rs_report "check of $n URLs"
