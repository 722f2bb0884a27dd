#!/bin/sh
# Benchmark: peak memory of `stfix check` and `stfix plan` (each as text
# and --json: rows check, json, plan, pjson) on a header whose
# _quantization_metadata names BENCH_META_LAYERS layers (default
# 1,000,000; no tensors, tests/gen/gen_many_layers.py meta), as a
# ratio of the peak resident set to the header's size. Nothing here asserts a value.
#
#   sh tests/bench/meta_mem.sh [STFIX]     (default $STFIX, else ./build/stfix)
set -u
STFIX=${1:-${STFIX:-$(pwd)/build/stfix}}
N=${BENCH_META_LAYERS:-1000000}
[ -x "$STFIX" ] || { echo "meta_mem: $STFIX is not executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "meta_mem: /usr/bin/time is needed" >&2; exit 2; }
here=$(dirname "$0")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-metamem.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
f="$tmp/meta.safetensors"
python3 "$here/../gen/gen_many_layers.py" "$f" meta "$N" || exit 2
hdr=$(python3 -c 'import struct,sys; print(struct.unpack("<Q", open(sys.argv[1],"rb").read(8))[0])' "$f")
rc=0
for cmd in check json plan pjson; do
    case $cmd in
    check) set -- check "$f" -j 1 ;;
    json) set -- check "$f" -j 1 --json ;;
    plan) set -- plan "$f" -r "$here/../../rules/comfyui-int8-convrot.yaml" -j 1 ;;
    *) set -- plan "$f" -r "$here/../../rules/comfyui-int8-convrot.yaml" -j 1 --json ;;
    esac
    /usr/bin/time -f %M -o "$tmp/rss" "$STFIX" "$@" >/dev/null 2>&1
    st=$?
    # check exits 1 for the findings.
    if [ "$st" -gt 1 ]; then echo "meta_mem: $cmd exited $st" >&2; rc=1; continue; fi
    kb=$(tail -n 1 "$tmp/rss")
    awk -v c="$cmd" -v n="$N" -v kb="$kb" -v h="$hdr" 'BEGIN {
        printf "%-6s %8d layers  header %6.1f MB  peak RSS %7.1f MB  ratio %5.1f\n",
               c, n, h / 1e6, kb * 1024 / 1e6, kb * 1024 / h }'
done
exit $rc
