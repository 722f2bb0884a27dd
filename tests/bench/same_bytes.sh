#!/bin/sh
# Whether two builds of stfix write the same bytes: every output of
# rewrite, fix (every bundled recipe), compress and decompress, made by OLD
# and by NEW from the same inputs, compared with cmp, with their exit
# statuses and their stdout and stderr. For a change that must not change
# what stfix writes (a move of code, a new way to read the same bytes).
#
# usage: sh tests/bench/same_bytes.sh OLD NEW [WORK]
#   OLD, NEW  the two stfix programs
#   WORK      a scratch directory (default: a new one under $TMPDIR, removed
#             at the end); it needs a few hundred MiB
#
# Inputs: every .safetensors file and .index.json of fixtures/, and three
# generated exports (tests/gen/gen_quant_ckpt.py: sylvester, fp8, int8-cols,
# 16 MiB each), each also as OLD's .zst and .stz. What runs, on each:
#   rewrite IN, and rewrite IN --max-shard-size 4MiB (exports);
#   fix IN -r R for each recipe R in rules/ (-j 2); the exports also at
#     -j 1 and -j 3, and from and to .zst and .stz;
#   compress IN, compress IN --zstd-grouped, decompress of each.
# The commands run in a directory of their own per build with the same
# relative names, so messages that name files compare too.
# Prints one line per difference and a count of the comparisons; exits 0
# when there is none, 1 when there is one, 2 on a usage error.
[ $# -ge 2 ] || { echo "usage: sh tests/bench/same_bytes.sh OLD NEW [WORK]" >&2; exit 2; }
OLD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
NEW=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
for b in "$OLD" "$NEW"; do
    [ -x "$b" ] || { echo "same_bytes: $b is not a program" >&2; exit 2; }
done
SRC=$(pwd)
if [ -n "${3:-}" ]; then
    W=$3
    mkdir -p "$W" || exit 2
else
    W=$(mktemp -d "${TMPDIR:-/tmp}/stfix-same.XXXXXX") || exit 2
    trap 'rm -rf "$W"' EXIT INT TERM
fi
W=$(cd "$W" && pwd)

# ---------------------------------------------------------------- inputs
mkdir -p "$W/in"
find fixtures -name '*.safetensors' -o -name '*.index.json' | sort >"$W/fixtures.txt"
# An index's shards are named beside it: fixtures keep their directories.
while read -r f; do
    mkdir -p "$W/in/${f%/*}"
    cp "$f" "$W/in/$f"
done <"$W/fixtures.txt"
for c in sylvester fp8 int8-cols; do
    python3 tests/gen/gen_quant_ckpt.py "$c" "$W/in/gen-$c.safetensors" 16MiB 256 >/dev/null ||
        { echo "same_bytes: cannot generate $c" >&2; exit 2; }
done
ls "$W"/in/gen-*.safetensors | sed "s|^$W/in/||" >"$W/exports.txt"
# Compressed inputs, made once by OLD (both builds read the same bytes).
for f in $(cat "$W/exports.txt") fixtures/comfy/healthy_int8_g64.safetensors; do
    "$OLD" compress "$W/in/$f" -o "$W/in/$f.zst" -q >/dev/null 2>&1
    "$OLD" compress "$W/in/$f" --zstd-grouped -o "$W/in/$f.stz" -q >/dev/null 2>&1
done

n=0
bad=0
runs=0
ok=0
# run ID ARGS...: run ARGS with each build in $W/old/ID and $W/new/ID (the
# inputs linked in as in/), then compare status, stdout, stderr and every
# file written. Its variables are the shell's globals: none of the callers'
# loop variables (f, i, r, rn, j, z) is used here.
run() {
    id=$1
    shift
    for side in old new; do
        d="$W/$side/$id"
        rm -rf "$d"
        mkdir -p "$d"
        ln -s "$W/in" "$d/in"
        if [ "$side" = old ]; then bin=$OLD; else bin=$NEW; fi
        (cd "$d" && "$bin" "$@" >"$d.stdout" 2>"$d.stderr"; echo $? >"$d.rc")
    done
    n=$((n + 1))
    runs=$((runs + 1))
    o="$W/old/$id"
    [ "$(cat "$o.rc")" = 0 ] && ok=$((ok + 1))
    m="$W/new/$id"
    for x in rc stdout stderr; do
        if ! cmp -s "$o.$x" "$m.$x"; then
            echo "same_bytes: $id: the $x differs"
            bad=$((bad + 1))
        fi
    done
    (cd "$o" && find . -path ./in -prune -o -type f -print | sort) >"$o.files"
    (cd "$m" && find . -path ./in -prune -o -type f -print | sort) >"$m.files"
    if ! cmp -s "$o.files" "$m.files"; then
        echo "same_bytes: $id: not the same files written"
        bad=$((bad + 1))
    fi
    while read -r wf; do
        [ -f "$m/$wf" ] || continue
        n=$((n + 1))
        if ! cmp -s "$o/$wf" "$m/$wf"; then
            echo "same_bytes: $id: $wf differs"
            bad=$((bad + 1))
        fi
    done <"$o.files"
    rm -rf "$o" "$m"
}

# The exports first: they carry the real work (requantization, -j, zstd).
for f in $(cat "$W/exports.txt"); do
    run "rws-$f" rewrite "in/$f" -o out.safetensors --max-shard-size 4MiB
    for r in rules/*.yaml; do
        rn=$(basename "$r" .yaml)
        for j in 1 3; do
            run "fx-$f-$rn-j$j" fix "in/$f" -r "$SRC/$r" -o out.safetensors -j "$j"
        done
        for z in zst stz; do
            run "fx-$f.$z-$rn" fix "in/$f.$z" -r "$SRC/$r" -o out.safetensors -j 2
        done
        run "fx-$f-$rn-zst" fix "in/$f" -r "$SRC/$r" -o out.safetensors -j 2 --zstd
        run "fx-$f-$rn-stz" fix "in/$f" -r "$SRC/$r" -o out.safetensors -j 3 --zstd-grouped
        run "fx-$f.zst-$rn-stz" fix "in/$f.zst" -r "$SRC/$r" -o out.safetensors -j 1 \
            --zstd-grouped
    done
done
echo "same_bytes: the exports: $runs runs ($ok of them exit 0), $n comparisons, $bad differences"
i=0
for f in $(cat "$W/fixtures.txt") $(cat "$W/exports.txt"); do
    i=$((i + 1))
    run "rw$i" rewrite "in/$f" -o out.safetensors
    run "cz$i" compress "in/$f" -o out.zst
    run "cs$i" compress "in/$f" --zstd-grouped -o out.stz
    case $f in
    *.index.json) ;;
    *)
        "$OLD" compress "$W/in/$f" -o "$W/tmp.zst" -q >/dev/null 2>&1 &&
            mv "$W/tmp.zst" "$W/in/d$i.safetensors.zst" &&
            run "dz$i" decompress "in/d$i.safetensors.zst" -o out.safetensors
        "$OLD" compress "$W/in/$f" --zstd-grouped -o "$W/tmp.stz" -q >/dev/null 2>&1 &&
            mv "$W/tmp.stz" "$W/in/d$i.safetensors.stz" &&
            run "ds$i" decompress "in/d$i.safetensors.stz" -o out.safetensors
        ;;
    esac
    for r in rules/*.yaml; do
        rn=$(basename "$r" .yaml)
        run "fx$i-$rn" fix "in/$f" -r "$SRC/$r" -o out.safetensors -j 2
    done
done
echo "same_bytes: $runs runs ($ok of them exit 0), $n comparisons, $bad differences"
[ "$bad" -eq 0 ]
