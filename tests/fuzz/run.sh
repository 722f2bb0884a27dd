#!/bin/sh
# Runs libFuzzer harnesses one after the other and prints a summary:
#   sh tests/fuzz/run.sh SECONDS build/fuzz/fuzz_x ...
# Each harness runs SECONDS seconds (0: once over its corpus; FUZZ_RUNS=N
# in the environment: N executions instead) on
# tests/fuzz/corpus/<harness>/ plus build/fuzz/corpus/<harness>/, where it
# keeps what it finds; the fixtures seed the harnesses that read whole
# checkpoints. A crash, leak, timeout or out-of-memory input is saved under
# build/fuzz/artifacts/<harness>/ and the next harness still runs.
# The harnesses that read recipes get tests/fuzz/recipe.dict as -dict.
# FUZZ_MERGE=1 then minimizes tests/fuzz/corpus/<harness>/ with -merge=1
# over both corpora: files with names of their own (seeds, reproducers of
# past findings) always stay; the rest (named by SHA-1) are replaced by
# what adds coverage edges (hit counts ignored, to keep the corpus small).
# Exit status 1 when any harness crashed.
secs=${1:-0}
shift
work=build/fuzz
crashed=0
summary=""
for bin in "$@"; do
    name=$(basename "$bin")
    corpus=tests/fuzz/corpus/$name
    found=$work/corpus/$name
    art=$work/artifacts/$name
    log=$work/$name.log
    mkdir -p "$corpus" "$found" "$art"
    seeds=""
    set -- -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$art/"
    case $name in
    fuzz_reader | fuzz_check | fuzz_file) seeds="fixtures/malformed fixtures/comfy fixtures/demo" ;;
    fuzz_recipe | fuzz_write) set -- "$@" -dict=tests/fuzz/recipe.dict ;;
    esac
    before=$(ls "$art" | wc -l)
    if [ -n "${FUZZ_RUNS:-}" ]; then
        echo "fuzz: $name for $FUZZ_RUNS executions"
        "$bin" "$@" -runs="$FUZZ_RUNS" "$found" "$corpus" $seeds >"$log" 2>&1
    elif [ "$secs" -gt 0 ]; then
        echo "fuzz: $name for ${secs}s"
        "$bin" "$@" -max_total_time="$secs" "$found" "$corpus" $seeds >"$log" 2>&1
    else
        echo "fuzz: $name over its corpus"
        "$bin" "$@" -runs=0 "$corpus" >"$log" 2>&1
    fi
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' "$log" | tail -n 1)
    new=$(($(ls "$art" | wc -l) - before))
    [ "$rc" -ne 0 ] && [ "$new" -eq 0 ] && new=1
    if [ "$new" -ne 0 ]; then
        crashed=1
        echo "fuzz: $name FAILED (exit $rc), see $log and $art/"
        grep -A 12 '^==[0-9]*==ERROR\|^SUMMARY\|deadly signal\|ERROR: libFuzzer' "$log" | head -n 40
    fi
    if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$new" -eq 0 ]; then
        rm -rf "$work/merge" && mkdir -p "$work/merge"
        for f in "$corpus"/*; do
            b=$(basename "$f")
            [ ${#b} -eq 40 ] && [ -z "$(printf %s "$b" | tr -d 0-9a-f)" ] && continue
            cp "$f" "$work/merge/"
        done
        if "$bin" -merge=1 -use_counters=0 -timeout=10 -rss_limit_mb=2048 "$work/merge" \
            "$corpus" "$found" >"$work/$name.merge.log" 2>&1; then
            rm -f "$corpus"/* && cp "$work/merge"/* "$corpus"/
        else
            echo "fuzz: $name: merge failed, see $work/$name.merge.log"
            crashed=1
        fi
    fi
    files=$(ls "$corpus" | wc -l)
    summary="$summary$(printf '%-18s %12s %8s %8s %8s' "$name" "${execs:-?}" "${corp:-?}" \
        "$files" "$new")
"
done
echo
printf '%-18s %12s %8s %8s %8s\n' harness executions corpus files crashes
printf '%s' "$summary"
exit $crashed
