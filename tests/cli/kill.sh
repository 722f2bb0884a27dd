#!/bin/sh
# kill -9 at several moments of `fix -o`, `fix --in-place` and a sharded
# `fix`, each over an older output already in place. Whatever the moment:
#   - the input's sha256 never changes (in place: it is the old file or the
#     complete output, nothing in between);
#   - no temporary file (.NAME.stfix-XXXXXX) is left;
#   - the output path holds the old file, or the complete output of an
#     uninterrupted run; a sharded output's index is absent, or names a set
#     whose shards are all old or all new, never a mix.
. tests/cli/lib.sh
D=$T_TMP/kill
mkdir -p "$D"
Q=rules/quantize-int8-convrot.yaml

big=$D/big.safetensors
python3 tests/gen/gen_bf16_ckpt.py "$big" 192MiB 1024
in_sum=$(t_sha256 "$big")
# The complete outputs, and the older outputs each trial starts from.
# A set-up run that fails (a full disk, say) is named here, not later as a
# missing file.
setup() {
    name=$1
    shift
    if "$STFIX" fix "$big" -r "$Q" -j 2 "$@" >/dev/null 2>"$D/setup.err"; then t_ok "set-up: $name"
    else t_notok "set-up: $name" "stderr: $(head -c 400 "$D/setup.err")"; fi
}
setup "reference output" -o "$T_TMP/ref.safetensors"
setup "older output" -o "$T_TMP/old.safetensors" --quant-mode fp32
mkdir -p "$T_TMP/ref-sh" "$T_TMP/old-sh"
setup "sharded reference" -o "$T_TMP/ref-sh/s.safetensors" --max-shard-size 32MiB
setup "older sharded output" -o "$T_TMP/old-sh/s.safetensors" --max-shard-size 32MiB --quant-mode fp32
t_true "references differ from the old outputs" sh -c "! cmp -s '$T_TMP/ref.safetensors' '$T_TMP/old.safetensors'"

# Every shard named by the index in $1 equals the one in directory $2.
set_is() {
    for s in $(sed -n 's/.*"\(s-[0-9]*-of-[0-9]*\.safetensors\)".*/\1/p' "$1" | sort -u); do
        cmp -s "$(dirname "$1")/$s" "$2/$s" || return 1
    done
    cmp -s "$1" "$2/s.safetensors.index.json"
}

for mode in out in-place sharded; do
    killed=0
    for delay in 0.01 0.03 0.06 0.1 0.2 0.4; do
        rm -rf "$D/w"
        mkdir -p "$D/w"
        case $mode in
        out)
            cp "$T_TMP/old.safetensors" "$D/w/out.safetensors"
            set -- "$big" -o "$D/w/out.safetensors" ;;
        in-place)
            cp "$big" "$D/w/out.safetensors"
            set -- "$D/w/out.safetensors" --in-place ;;
        sharded)
            cp "$T_TMP/old-sh/"* "$D/w/"
            set -- "$big" -o "$D/w/s.safetensors" --max-shard-size 32MiB ;;
        esac
        "$STFIX" fix "$@" -r "$Q" -j 2 >/dev/null 2>&1 &
        pid=$!
        sleep "$delay"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        [ $? -eq 137 ] && killed=$((killed + 1))
        n="$mode: SIGKILL after ${delay}s"
        case $mode in
        out)
            o=$D/w/out.safetensors
            if cmp -s "$o" "$T_TMP/ref.safetensors" || cmp -s "$o" "$T_TMP/old.safetensors"; then
                t_ok "$n: OUT is the old file or the complete output"
            else t_notok "$n: OUT is the old file or the complete output"; fi ;;
        in-place)
            o=$D/w/out.safetensors
            if cmp -s "$o" "$big" || cmp -s "$o" "$T_TMP/ref.safetensors"; then
                t_ok "$n: the input is the old file or the complete output"
            else t_notok "$n: the input is the old file or the complete output"; fi ;;
        sharded)
            ix=$D/w/s.safetensors.index.json
            if [ ! -e "$ix" ] || set_is "$ix" "$T_TMP/old-sh" || set_is "$ix" "$T_TMP/ref-sh"; then
                t_ok "$n: no index, or the index with all old or all new shards"
            else t_notok "$n: no index, or the index with all old or all new shards"; fi ;;
        esac
        t_no_temp "$n" "$D/w"
        t_no_temp "$n (input's directory)" "$D"
        t_true "$n: input sha256 unchanged" test "$(t_sha256 "$big")" = "$in_sum"
    done
    t_true "$mode: at least one run killed ($killed)" test "$killed" -gt 0
done
rm -rf "$D" "$T_TMP"/ref* "$T_TMP"/old*
