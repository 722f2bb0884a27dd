#!/bin/sh
# Runs each benchmark binary given as an argument (make bench passes them),
# in order, and prints their tables. Each binary reports ratios to its own
# yardstick measured in the same run; nothing here asserts a time.
#   BENCH_JSON=FILE  also write every result as one JSON array to FILE
#                    (each binary writes its own array; they are merged here)
#   STFIX            the stfix program, for end-to-end cases
#   BENCH_ZSTD_MIB, BENCH_ZSTD_FRAME_KIB  the seekable zstd file of bench_zstd_seek
#                    (default 2048 MiB in 4096 KiB frames; small values run fast)
#   BENCH_SIZE, BENCH_REPS, BENCH_CASES, BENCH_JOBS  the end-to-end
#                    cases' size, rounds, cases and -j (tests/bench/fix_e2e.sh;
#                    size, rounds and -j of tests/bench/bench_zstd_fix.sh too)
#   BENCH_PY_MIB     the BF16 export tests/bench/python_e2e.sh fixes (default 256)
#   BENCH_META_LAYERS  layers of the metadata-only header whose check and
#                    plan peak memory tests/bench/meta_mem.sh measures
#   BENCH_BATCH_N, BENCH_BATCH_SIZE  the batch case's zoo: checkpoints and
#                    the size of each (tests/bench/batch_e2e.sh)
#   BENCH_ZSTD_MIB, BENCH_ZSTD_LEVELS, BENCH_ZSTD_DATA  the compressed
#                    outputs' size, levels and data (tests/bench/bench_zstd.c;
#                    BENCH_JOBS is its -j too)
# Load on the machine distorts the figures, so the load average is printed.
set -u
json=${BENCH_JSON:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-bench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "bench: $(uname -m), $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') cores online, load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
rc=0
i=0
for b in "$@"; do
    [ -x "$b" ] || { echo "bench: $b is not executable" >&2; rc=2; continue; }
    i=$((i + 1))
    echo "== $(basename "$b")"
    if [ -n "$json" ]; then
        BENCH_JSON="$tmp/part$i.json" "$b" || rc=$?
    else
        BENCH_JSON= "$b" || rc=$?
    fi
done
# End-to-end scripts (they time the stfix program against cat/cp in the same run).
if [ -n "${STFIX:-}" ]; then
    i=$((i + 1))
    echo "== check_2g"
    sh "$(dirname "$0")/check_2g.sh" "$STFIX" || rc=$?
    echo "== remote_check"
    sh "$(dirname "$0")/remote_check.sh" "$STFIX" || rc=$?
    echo "== remote_batch"
    sh "$(dirname "$0")/remote_batch.sh" "$STFIX" || rc=$?
    echo "== meta_mem"
    sh "$(dirname "$0")/meta_mem.sh" "$STFIX" || rc=$?
    echo "== fix_e2e"
    if [ -n "$json" ]; then
        BENCH_JSON="$tmp/part$i.json" sh "$(dirname "$0")/fix_e2e.sh" "$STFIX" || rc=$?
    else
        BENCH_JSON= sh "$(dirname "$0")/fix_e2e.sh" "$STFIX" || rc=$?
    fi
    echo "== python_e2e"
    sh "$(dirname "$0")/python_e2e.sh" "$STFIX" || rc=$?
    echo "== bench_zstd_fix"
    sh "$(dirname "$0")/bench_zstd_fix.sh" "$STFIX" || rc=$?
    i=$((i + 1))
    echo "== batch_e2e"
    if [ -n "$json" ]; then
        BENCH_JSON="$tmp/part$i.json" sh "$(dirname "$0")/batch_e2e.sh" "$STFIX" || rc=$?
    else
        BENCH_JSON= sh "$(dirname "$0")/batch_e2e.sh" "$STFIX" || rc=$?
    fi
fi

if [ -n "$json" ]; then
    # Each part is "[", one object per line (comma-terminated but the last), "]".
    {
        echo "["
        cat "$tmp"/part*.json 2>/dev/null | grep '^{' | sed 's/},*[[:space:]]*$/}/' |
            awk 'NR > 1 { print prev "," } { prev = $0 } END { if (NR) print prev }'
        echo "]"
    } >"$json.tmp" && mv "$json.tmp" "$json" || { echo "bench: cannot write $json" >&2; rc=2; }
    echo "bench: results written to $json"
fi
echo "bench: load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
exit $rc
