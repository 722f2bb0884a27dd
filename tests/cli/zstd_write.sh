#!/bin/sh
# Compressed outputs (stfix(1), COMPRESSED FILES): rewrite and fix with
# --zstd restore with plain `zstd -d` to the uncompressed output; -j does
# not change the bytes; grouped .stz files restore with stfix decompress
# only; sharded outputs name their .zst shards; compress and decompress
# keep a file's bytes and refuse corrupt input with its offset.
. tests/cli/lib.sh
demo=fixtures/demo/healthy.safetensors
R=rules
D=$T_TMP

if ! command -v zstd >/dev/null 2>&1; then
    t_notok "the zstd program is installed (make deps)"
    exit 0
fi
python3 tests/gen/gen_bf16_ckpt.py "$D/bf16.safetensors" 1MiB 64

# rewrite --zstd: plain zstd -d gives the uncompressed rewrite.
t_run "rewrite plain" 0 "$STFIX" rewrite "$demo" -o "$D/p.safetensors"
t_run "rewrite --zstd" 0 "$STFIX" rewrite "$demo" -o "$D/z.safetensors" --zstd
t_stdout_is_text() { printf '%s\n' "$2" >"$D/want"; t_stdout_is "$1" "$D/want"; }
t_stdout_is_text "rewrite --zstd: read back" "wrote $D/z.safetensors.zst: 10 tensors in 1 file"
t_absent "rewrite --zstd: only the .zst" "$D/z.safetensors"
t_true "rewrite --zstd: zstd -d" zstd -q -d "$D/z.safetensors.zst" -o "$D/z.out"
t_true "rewrite --zstd: the same bytes" cmp "$D/p.safetensors" "$D/z.out"
t_no_temp "rewrite --zstd" "$D"
t_run "rewrite --zstd=19 OUT.zst" 0 "$STFIX" rewrite "$demo" -o "$D/z19.safetensors.zst" \
    --zstd=19 --zstd-verify
t_stdout_is_text "rewrite --zstd=19 OUT.zst" "wrote $D/z19.safetensors.zst: 10 tensors in 1 file"
t_true "--zstd=19: zstd -d" zstd -q -d "$D/z19.safetensors.zst" -o "$D/z19.out"
t_true "--zstd=19: the same bytes" cmp "$D/p.safetensors" "$D/z19.out"

# -j 1 and -j 2, many frames: the same bytes.
t_run "-j 1" 0 "$STFIX" rewrite "$D/bf16.safetensors" -o "$D/j1.safetensors" --zstd \
    --zstd-frame 4KiB -j 1
t_run "-j 2" 0 "$STFIX" rewrite "$D/bf16.safetensors" -o "$D/j2.safetensors" --zstd \
    --zstd-frame 4KiB -j 2
t_true "-j 1 and -j 2: the same bytes" cmp "$D/j1.safetensors.zst" "$D/j2.safetensors.zst"
# The seek table, checked by an XXH64 of its own against the plain rewrite.
t_run "bf16 plain rewrite" 0 "$STFIX" rewrite "$D/bf16.safetensors" -o "$D/b.safetensors"
t_run "seek table" 0 python3 tests/cli/seek_table.py "$D/j1.safetensors.zst" "$D/b.safetensors" 4096
t_stdout_is_text "seek table" "ok"
t_run "seek table of the demo" 0 python3 tests/cli/seek_table.py "$D/z.safetensors.zst" \
    "$D/p.safetensors" 4194304
t_run "grouped -j 1" 0 "$STFIX" rewrite "$D/bf16.safetensors" -o "$D/g1.safetensors" \
    --zstd-grouped --zstd-frame 4KiB -j 1
t_run "grouped -j 2" 0 "$STFIX" rewrite "$D/bf16.safetensors" -o "$D/g2.safetensors" \
    --zstd-grouped --zstd-frame 4KiB -j 2
t_stdout_is_text "grouped -j 2" "wrote $D/g2.safetensors.stz: 158 tensors, zstd level 3"
t_true "grouped -j 1 and -j 2: the same bytes" cmp "$D/g1.safetensors.stz" "$D/g2.safetensors.stz"

# Grouped: smaller than plain on BF16, zstd refuses it, stfix decompress restores it.
t_true "grouped is smaller" test "$(wc -c <"$D/g1.safetensors.stz")" -lt \
    "$(wc -c <"$D/j1.safetensors.zst")"
t_run "zstd -d refuses .stz" 1 zstd -q -d "$D/g1.safetensors.stz" -o "$D/g.out"
t_run "decompress .stz" 0 "$STFIX" decompress "$D/g1.safetensors.stz" -o "$D/g1.out"
t_stdout_is_text "decompress .stz" "wrote $D/g1.out"
t_true "decompress .stz: the same bytes" cmp "$D/b.safetensors" "$D/g1.out"
t_run "decompress default name" 0 "$STFIX" decompress "$D/j1.safetensors.zst"
t_true "decompress default name: the same bytes" cmp "$D/b.safetensors" "$D/j1.safetensors"

# Sharded: STEM-0000i-of-0000N.safetensors.zst, named by the index.
t_run "shard --zstd" 0 "$STFIX" rewrite "$demo" -o "$D/s.safetensors" --max-shard-size 8KB --zstd
t_stdout_is_text "shard --zstd: read back" "wrote $D/s.safetensors.index.json: 10 tensors in 3 files"
t_run "shard plain" 0 "$STFIX" rewrite "$demo" -o "$D/sp.safetensors" --max-shard-size 8KB
sed 's/\.safetensors\.zst"/.safetensors"/; s/"s-0000/"sp-0000/' "$D/s.safetensors.index.json" \
    >"$D/s.index.plain"
t_true "shard --zstd: the index names the .zst shards" \
    cmp "$D/s.index.plain" "$D/sp.safetensors.index.json"
for i in 1 2 3; do
    zstd -q -d "$D/s-0000$i-of-00003.safetensors.zst" -o "$D/s$i.out"
    t_true "shard $i: zstd -d gives the plain shard" cmp "$D/s$i.out" "$D/sp-0000$i-of-00003.safetensors"
done
t_absent "shard --zstd: no uncompressed shard" "$D/s-00001-of-00003.safetensors"

# fix --zstd: the same bytes as the uncompressed fix.
t_run "fix" 0 "$STFIX" fix "$D/bf16.safetensors" -r $R/quantize-int8-convrot.yaml -o "$D/f.safetensors" -j 2
t_run "fix --zstd" 0 "$STFIX" fix "$D/bf16.safetensors" -r $R/quantize-int8-convrot.yaml \
    -o "$D/fz.safetensors" -j 2 --zstd --zstd-verify
t_stdout_has "fix --zstd" "  $D/fz.safetensors.zst ("
t_true "fix --zstd: zstd -d" zstd -q -d "$D/fz.safetensors.zst" -o "$D/fz.out"
t_true "fix --zstd: the same bytes" cmp "$D/f.safetensors" "$D/fz.out"
t_run "fix --in-place --zstd" 3 "$STFIX" fix "$D/bf16.safetensors" -r $R/quantize-int8-convrot.yaml \
    --in-place --zstd
t_stderr_has "fix --in-place --zstd" "--in-place keeps the file's name; it cannot be combined with --zstd"

# Usage errors.
t_run "--zstd=0" 3 "$STFIX" rewrite "$demo" -o "$D/u.safetensors" --zstd=0
t_stderr_has "--zstd=0" "--zstd takes a level from 1 to 22, not '0'"
t_run "--zstd=x" 3 "$STFIX" rewrite "$demo" -o "$D/u.safetensors" --zstd=x
t_run "--zstd-frame alone" 3 "$STFIX" rewrite "$demo" -o "$D/u.safetensors" --zstd-frame 1MiB
t_stderr_has "--zstd-frame alone" "--zstd-frame needs --zstd"
t_run "--zstd-verify alone" 3 "$STFIX" rewrite "$demo" -o "$D/u.safetensors" --zstd-verify
t_run "--zstd-frame too small" 3 "$STFIX" rewrite "$demo" -o "$D/u.safetensors" --zstd --zstd-frame 100
t_absent "usage errors write nothing" "$D/u.safetensors.zst"

# compress / decompress: a file's exact bytes, an index's shards.
cp "$demo" "$D/c.safetensors"
t_run "compress" 0 "$STFIX" compress "$D/c.safetensors" --verify -j 2
t_stdout_is_text "compress" "wrote $D/c.safetensors.zst"
t_true "compress: zstd -d" zstd -q -d "$D/c.safetensors.zst" -o "$D/c.out"
t_true "compress: the same bytes" cmp "$demo" "$D/c.out"
t_run "compress --grouped" 0 "$STFIX" compress "$D/c.safetensors" --grouped -l 19
t_true "compress --grouped: .stz" test -f "$D/c.safetensors.stz"
t_run "compress an index" 0 "$STFIX" compress "$D/sp.safetensors.index.json" -o "$D/ci.safetensors.index.json"
t_true "compress an index: shards" test -f "$D/sp-00002-of-00003.safetensors.zst"
t_run "decompress onto its index" 3 "$STFIX" decompress "$D/ci.safetensors.index.json" -o "$D/ci.safetensors.index.json"
t_stderr_has "decompress onto its index" "would overwrite an input file"
t_run "decompress an index elsewhere" 0 sh -c "mkdir -p '$D/di' && '$STFIX' decompress '$D/ci.safetensors.index.json' -o '$D/di/x.safetensors.index.json'"
t_true "decompress an index: the shards" cmp "$D/di/sp-00003-of-00003.safetensors" "$D/sp-00003-of-00003.safetensors"
t_run "inspect the restored index" 0 "$STFIX" inspect "$D/di/x.safetensors.index.json"
t_run "compress an index: -o needed" 3 "$STFIX" compress "$D/sp.safetensors.index.json"

# A file the zstd program made (one frame) restores too.
zstd -q -19 "$demo" -o "$D/cli.safetensors.zst"
t_run "decompress zstd's own file" 0 "$STFIX" decompress "$D/cli.safetensors.zst"
t_true "decompress zstd's own file: bytes" cmp "$demo" "$D/cli.safetensors"

# Corrupt and truncated input: exit 2 with the offset, nothing left behind.
head -c 100 "$D/cli.safetensors.zst" >"$D/t.safetensors.zst"
t_run "truncated" 2 "$STFIX" decompress "$D/t.safetensors.zst"
t_stderr_has "truncated" "$D/t.safetensors.zst: truncated zstd frame at compressed byte 0"
t_absent "truncated: no output" "$D/t.safetensors"
printf 'JUNKJUNK' >"$D/j.safetensors.zst"
t_run "not zstd" 2 "$STFIX" decompress "$D/j.safetensors.zst"
t_stderr_has "not zstd" "$D/j.safetensors.zst: not a zstd frame at compressed byte 0"
t_absent "not zstd: no output" "$D/j.safetensors"
t_no_temp "corrupt input" "$D"
