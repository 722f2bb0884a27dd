#!/bin/sh
# compress and decompress never replace a file silently (stfix(1),
# COMPRESSED FILES): an existing output, at the implied name or at -o,
# even one with the very bytes they would write, is refused with exit 3,
# its name and --force, and is left as it was; for an index, every shard
# name counts. With --force it is replaced through a temporary file, and
# what the output guard refuses (an input, a directory) stays refused.
. tests/cli/lib.sh
D=$T_TMP
demo=fixtures/demo/healthy.safetensors
t_out_is() { printf '%s\n' "$2" >"$D/want"; t_stdout_is "$1" "$D/want"; }
t_same() { t_true "$1: $2 kept" cmp "$2" "$3"; }

cp "$demo" "$D/m.safetensors"
t_run "compress" 0 "$STFIX" compress "$D/m.safetensors"
cp "$D/m.safetensors.zst" "$D/m.zst.want"

# decompress onto a different file at the implied name.
echo different >"$D/m.safetensors"
cp "$D/m.safetensors" "$D/old"
t_run "decompress, implied name exists" 3 "$STFIX" decompress "$D/m.safetensors.zst"
t_stderr_is "decompress, implied name exists" \
    "stfix: decompress: $D/m.safetensors: the output exists; give --force to replace it"
t_same "decompress, implied name exists" "$D/m.safetensors" "$D/old"
t_no_temp "decompress, implied name exists" "$D"
t_run "decompress -f" 0 "$STFIX" decompress -f "$D/m.safetensors.zst"
t_out_is "decompress -f" "wrote $D/m.safetensors"
t_true "decompress -f: the original bytes" cmp "$D/m.safetensors" "$demo"

# The same bytes are refused too: the rule does not read the file.
t_run "decompress, identical file exists" 3 "$STFIX" decompress "$D/m.safetensors.zst"
t_stderr_is "decompress, identical file exists" \
    "stfix: decompress: $D/m.safetensors: the output exists; give --force to replace it"

# -o names an existing file.
echo other >"$D/x.safetensors"
t_run "decompress -o, exists" 3 "$STFIX" decompress "$D/m.safetensors.zst" -o "$D/x.safetensors"
t_stderr_is "decompress -o, exists" \
    "stfix: decompress: $D/x.safetensors: the output exists; give --force to replace it"
t_true "decompress -o, exists: kept" test "$(cat "$D/x.safetensors")" = other
t_run "decompress -o --force" 0 "$STFIX" decompress "$D/m.safetensors.zst" -o "$D/x.safetensors" --force
t_true "decompress -o --force: replaced" cmp "$D/x.safetensors" "$demo"

# A symlink, even a dangling one, is something there.
ln -s "$D/nowhere" "$D/l.safetensors"
t_run "decompress -o, dangling link" 3 "$STFIX" decompress "$D/m.safetensors.zst" -o "$D/l.safetensors"
t_stderr_is "decompress -o, dangling link" \
    "stfix: decompress: $D/l.safetensors: the output exists; give --force to replace it"
t_absent "decompress -o, dangling link: its target" "$D/nowhere"

# compress onto an existing .zst (implied name and -o).
echo junk >"$D/m.safetensors.zst"
cp "$D/m.safetensors.zst" "$D/old"
t_run "compress, implied name exists" 3 "$STFIX" compress "$D/m.safetensors"
t_stderr_is "compress, implied name exists" \
    "stfix: compress: $D/m.safetensors.zst: the output exists; give --force to replace it"
t_same "compress, implied name exists" "$D/m.safetensors.zst" "$D/old"
echo junk >"$D/g.stz"
t_run "compress --grouped -o, exists" 3 "$STFIX" compress "$D/m.safetensors" --grouped -o "$D/g.stz"
t_stderr_is "compress --grouped -o, exists" \
    "stfix: compress: $D/g.stz: the output exists; give --force to replace it"
t_run "compress -f" 0 "$STFIX" compress -f "$D/m.safetensors"
t_true "compress -f: the same bytes as a fresh compress" cmp "$D/m.safetensors.zst" "$D/m.zst.want"
t_no_temp "compress -f" "$D"

# --force does not lift the guard's refusals.
mkdir "$D/dir.safetensors"
t_run "decompress --force onto a directory" 3 "$STFIX" decompress "$D/m.safetensors.zst" -o "$D/dir.safetensors" --force
t_stderr_has "decompress --force onto a directory" "$D/dir.safetensors: "
t_true "decompress --force onto a directory: still a directory" test -d "$D/dir.safetensors"
cp "$D/m.safetensors.zst" "$D/old"
t_run "decompress --force onto its input" 3 "$STFIX" decompress "$D/m.safetensors.zst" -o "$D/m.safetensors.zst" --force
t_stderr_is "decompress --force onto its input" \
    "stfix: decompress: $D/m.safetensors.zst: the output would overwrite an input file; choose another output path"
t_same "decompress --force onto its input" "$D/m.safetensors.zst" "$D/old"

# An index: an existing shard is refused before anything is written.
S=fixtures/comfy/healthy_sharded
mkdir "$D/ix"
cp $S-0000?-of-00002.safetensors $S.safetensors.index.json "$D/ix/"
t_run "compress an index" 0 "$STFIX" compress "$D/ix/healthy_sharded.safetensors.index.json" -o "$D/ix/z.safetensors.index.json"
t_run "compress an index again" 3 "$STFIX" compress "$D/ix/healthy_sharded.safetensors.index.json" -o "$D/ix/y.safetensors.index.json"
t_stderr_is "compress an index again" \
    "stfix: compress: $D/ix/healthy_sharded-00001-of-00002.safetensors.zst: the output exists; give --force to replace it"
t_absent "compress an index again: no new index" "$D/ix/y.safetensors.index.json"
mkdir "$D/back"
cp "$D/ix/healthy_sharded-00002-of-00002.safetensors" "$D/back/"
t_run "decompress an index, a shard exists" 3 "$STFIX" decompress "$D/ix/z.safetensors.index.json" -o "$D/back/b.safetensors.index.json"
t_stderr_is "decompress an index, a shard exists" \
    "stfix: decompress: $D/back/healthy_sharded-00002-of-00002.safetensors: the output exists; give --force to replace it"
t_absent "decompress an index, a shard exists: no index" "$D/back/b.safetensors.index.json"
t_absent "decompress an index, a shard exists: no other shard" "$D/back/healthy_sharded-00001-of-00002.safetensors"
t_run "decompress an index --force" 0 "$STFIX" decompress "$D/ix/z.safetensors.index.json" -o "$D/back/b.safetensors.index.json" --force
for k in 1 2; do
    f=healthy_sharded-0000$k-of-00002.safetensors
    t_true "decompress an index --force: shard $k" cmp "$D/back/$f" "$S-0000$k-of-00002.safetensors"
done
t_no_temp "decompress an index --force" "$D/back"
