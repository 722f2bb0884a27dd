#!/bin/sh
# Benchmark: `stfix fix` end to end, like with like. Each case generates a
# checkpoint with Flux-like layer shapes and times, in the same run:
#   cp IN COPY                    the plain yardstick (its bytes may stay dirty)
#   cp IN COPY && sync COPY       the durable yardstick: fix fsyncs its output
#   stfix fix IN -r RECIPE -o OUT
#   disk: dd of fix's output size, O_DIRECT in 4 MiB blocks, then fsync:
#                                 the disk's floor for writing those bytes
#                                 durably (of the input's bytes, so at most its size)
#   cat IN > /dev/null            the yardstick of reading the file once
#   stfix check --numeric IN      the probes (quantized inputs only)
#   stfix plan IN -r RECIPE       the probes again, as plan runs them
# Every timed command starts with the input in the page cache and with dirty
# pages written back (tests/bench/timed.py: sync, then wait until Dirty +
# Writeback drain). The commands are interleaved, one round after another,
# each round starting one command later, and each figure is the median of
# the rounds. Wall time is printed beside CPU time (user + sys) and peak RSS,
# because wall time on a small shared machine swings 2x from run to run;
# the load average is printed too. Ratios are of the medians, with their
# range over the rounds; fix's CPU time is also given as a ratio to that of
# cp + sync, which a busy machine distorts less than wall time. Nothing
# here asserts a time; the exit status says whether every stfix run
# succeeded.
#
# Cases (BENCH_CASES, default all, in this order):
#   bf16       BF16 -> INT8 ConvRot, rules/quantize-int8-convrot.yaml
#   sylvester  INT8 ConvRot with a Sylvester G=128 marker, rules/sglang-int8-convrot.yaml
#   fp8        FP8 E4M3 with a scalar scale, a one-rule recipe: requantize
#   int8-rows  INT8 rowwise without rotation, rules/sglang-int8-convrot.yaml
#   int8-cols  INT8 with per-column [1,K] scales, rules/sglang-int8-convrot.yaml
#
#   sh tests/bench/fix_e2e.sh [STFIX]    (default $STFIX, else ./build/stfix)
#   BENCH_SIZE=256MiB   weight bytes of each input (e.g. 2G or 2GiB: the size
#                       the figures in stfix's notes are quoted at)
#   BENCH_REPS=3        rounds (the median of at least 3 is meaningful)
#   BENCH_JOBS=N        stfix fix -j N (default: stfix's own, a thread per core)
#   BENCH_CMDS="cat check plan"  time only these of a case's commands (e.g.
#                       the probes against cat, without fix)
#   BENCH_JSON=FILE     also write the results as a JSON array
#   TMPDIR              where the files go (needs about 3x BENCH_SIZE)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
[ -x "$STFIX" ] || { echo "fix_e2e: $STFIX is not executable" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
size=${BENCH_SIZE:-256MiB}
case $size in *[KMG]) size=${size}iB ;; esac
reps=${BENCH_REPS:-3}
cases=${BENCH_CASES:-bf16 sylvester fp8 int8-rows int8-cols}
jobs=${BENCH_JOBS:+-j $BENCH_JOBS}
json=${BENCH_JSON:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-fixe2e.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
timed="python3 tests/bench/timed.py"

printf 'stfix: 1\ntarget: sglang\nrules:\n  - name: requantize-fp8\n    match: {format: float8_e4m3fn}\n    do: requantize\n' \
    >"$tmp/fp8.yaml"
echo "fix_e2e: ${size} per input, median of $reps rounds, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

# run_cmd CASE ROUND NAME: one settled, timed command; appends its line to $tmp/res.
run_cmd() {
    in=$tmp/in.safetensors
    cat "$in" >/dev/null # the input is warm for every command alike
    case $3 in
    cp) $timed "$tmp/r" "$tmp/log" cp "$in" "$tmp/copy" ;;
    cp+sync) $timed "$tmp/r" "$tmp/log" sh -c 'cp "$1" "$2" && sync "$2"' sh "$in" "$tmp/copy" ;;
    fix) $timed "$tmp/r" "$tmp/log" "$STFIX" fix "$in" -r "$recipe" -o "$tmp/out" $jobs ;;
    disk) $timed "$tmp/r" "$tmp/log" dd if="$in" of="$tmp/copy" bs=4M count="$outsize" iflag=count_bytes \
        oflag=direct conv=fsync status=none ;;
    cat) $timed "$tmp/r" /dev/null cat "$in" ;;
    check) $timed "$tmp/r" "$tmp/log" "$STFIX" check --numeric "$in" ;;
    plan) $timed "$tmp/r" "$tmp/log" "$STFIX" plan "$in" -r "$recipe" ;;
    esac
    read -r wall user sys rss code settled <"$tmp/r" || return 2
    rm -f "$tmp/copy" "$tmp/out"
    echo "$1 $2 $3 $wall $user $sys $rss $code $settled" >>"$tmp/res"
    # check exits 1 for findings at error severity: the inputs are broken on purpose.
    if [ "$code" -ne 0 ] && { [ "$3" != check ] || [ "$code" -ne 1 ]; }; then
        echo "fix_e2e: $1: $3 exited $code:"
        tail -n 5 "$tmp/log"
        return 1
    fi
}

rc=0
for c in $cases; do
    in=$tmp/in.safetensors
    recipe=rules/sglang-int8-convrot.yaml
    label=
    cmds="cp cp+sync fix disk cat check plan"
    case $c in
    bf16)
        recipe=rules/quantize-int8-convrot.yaml
        cmds="cp cp+sync fix disk cat"
        python3 tests/gen/gen_bf16_ckpt.py "$in" "$size" || exit 2 ;;
    fp8)
        recipe=$tmp/fp8.yaml
        label="a one-rule recipe: match {format: float8_e4m3fn}, requantize"
        python3 tests/gen/gen_quant_ckpt.py "$c" "$in" "$size" || exit 2 ;;
    sylvester | int8-rows | int8-cols)
        python3 tests/gen/gen_quant_ckpt.py "$c" "$in" "$size" || exit 2 ;;
    *) echo "fix_e2e: unknown case '$c'" >&2; exit 2 ;;
    esac
    if [ -n "${BENCH_CMDS:-}" ]; then
        keep=
        for x in $cmds; do
            case " $BENCH_CMDS " in *" $x "*) keep="$keep $x" ;; esac
        done
        cmds=$keep
        [ -n "$cmds" ] || { rm -f "$in"; continue; }
    fi
    insize=$(wc -c <"$in")
    outsize=0
    # One untimed fix first: the disk floor writes as many bytes as fix does.
    case " $cmds " in
    *" fix "* | *" disk "*)
        if "$STFIX" fix "$in" -r "$recipe" -o "$tmp/out" $jobs >"$tmp/log" 2>&1; then
            outsize=$(wc -c <"$tmp/out")
        else
            echo "fix_e2e: $c: fix exited $?:"
            tail -n 5 "$tmp/log"
            rc=1
        fi
        rm -f "$tmp/out" ;;
    esac
    ncmd=$(echo $cmds | wc -w)
    r=0
    while [ "$r" -lt "$reps" ]; do
        # Round r starts at command r (mod the count): no command always
        # runs first, or always right after the same one.
        i=0
        while [ "$i" -lt "$ncmd" ]; do
            k=$(( (i + r) % ncmd + 1 ))
            run_cmd "$c" "$r" "$(echo $cmds | cut -d' ' -f$k)" || rc=1
            i=$((i + 1))
        done
        r=$((r + 1))
    done
    awk -v c="$c" -v isz="$insize" -v osz="$outsize" -v json="${json:+$tmp/json}" -v rec="${label:-$recipe}" \
        -f tests/bench/fix_e2e_summary.awk "$tmp/res" || rc=2
    rm -f "$in" "$tmp/res"
done
if [ -n "$json" ]; then
    { echo "["; sed '$!s/$/,/' "$tmp/json" 2>/dev/null; echo "]"; } >"$json" ||
        { echo "fix_e2e: cannot write $json" >&2; rc=2; }
fi
echo "fix_e2e: load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
exit $rc
