#!/bin/sh
# stfix batch hashes what it writes by reading it back from the page cache
# (a fixed checkpoint's files are written through it, not with O_DIRECT as
# fix writes them): on checkpoints large enough for several direct-I/O
# blocks (tests/gen/gen_quant_ckpt.py), a single file and a sharded set,
# every sha256 in the report is that of the file on disk, with its first 10
# digits (AutoV2) beside it, and the files are byte for byte those fix
# writes. With --hash none nothing is hashed: both are null, the files the
# same.
. tests/cli/lib.sh
D=$T_TMP/batch_hash
mkdir -p "$D/zoo/set"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
R=$(pwd)/rules/sglang-int8-convrot.yaml
python3 tests/gen/gen_quant_ckpt.py int8-rows "$D/zoo/m.safetensors" 12MiB 256 >/dev/null
"$S" rewrite "$D/zoo/m.safetensors" -o "$D/zoo/set/s.safetensors" --max-shard-size 5MB >/dev/null
mkdir -p "$D/fxs"
cd "$D" || exit 1

t_run "batch" 0 "$S" batch -r "$R" -o out zoo
t_run "fix, single file" 0 "$S" fix zoo/m.safetensors -r "$R" -o fx.safetensors
t_true "the single file as fix writes it" cmp out/m.safetensors fx.safetensors
t_run "fix, sharded" 0 "$S" fix zoo/set/s.safetensors.index.json -r "$R" -o fxs/s.safetensors \
    --max-shard-size 5MB
n=0
for f in out/m.safetensors out/set/s.safetensors.index.json out/set/s-0000*-of-0000*.safetensors; do
    t_true "$f: the report names it with the sha256 of its bytes" \
        grep -qF "{\"path\":\"$f\",\"sha256\":\"$(t_sha256 "$f")\",\"autov2\":\"$(t_sha256 "$f" | cut -c1-10)\"}" out/stfix-report.jsonl
    n=$((n + 1))
done
t_true "the set has three shards" test "$n" -eq 5
for f in out/set/*; do
    t_true "$f as fix writes it" cmp "$f" "fxs/$(basename "$f")"
done
for f in zoo/m.safetensors zoo/set/s.safetensors.index.json; do
    t_true "$f: the report names it with the sha256 of its bytes" \
        grep -qF "{\"path\":\"$f\",\"sha256\":\"$(t_sha256 "$f")\",\"autov2\":\"$(t_sha256 "$f" | cut -c1-10)\"}" out/stfix-report.jsonl
done
cd "$D" || exit 1
t_run "batch --hash none" 0 "$S" batch --hash none -r "$R" -o none zoo
for f in none/m.safetensors none/set/s.safetensors.index.json zoo/m.safetensors; do
    t_true "$f: --hash none: null sha256 and autov2" \
        grep -qF "{\"path\":\"$f\",\"sha256\":null,\"autov2\":null}" none/stfix-report.jsonl
done
t_true "--hash none: the single file as fix writes it" cmp none/m.safetensors fx.safetensors
for f in none/set/*; do
    t_true "$f: --hash none, as fix writes it" cmp "$f" "fxs/$(basename "$f")"
done
t_true "--hash none: the sizes still counted" grep -qF "\"bytes_read\":$(wc -c <zoo/m.safetensors | tr -d ' ')," none/stfix-report.jsonl
t_run "batch --hash md5" 3 "$S" batch --hash md5 -r "$R" -o bad zoo
t_stderr_has "batch --hash md5" "stfix: batch: --hash takes sha256 or none"
