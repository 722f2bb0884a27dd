#!/bin/sh
# The table of stfix(1) EXIT STATUS, row by row: for every command, each
# status the table says it can exit with, reached and asserted exactly. A
# path that exists but cannot be read as a file (a directory, a FIFO) is 4
# wherever it is named: as the input, as a shard of an index, as a recipe.
# Hostile inputs run under t_capped: a FIFO must be refused, never waited on.
. tests/cli/lib.sh
F=fixtures/comfy
M=fixtures/malformed
R=tests/recipes
D=$T_TMP
HOLD="python3 tests/cli/hold_lock.py"

ok=$F/r14_scale_bf16.safetensors
good=$F/healthy_int8_g256.safetensors
s5=$M/s05_not_json.safetensors
cast=$R/cast-scale.yaml
mkdir -p "$D/adir"
mkfifo "$D/fifo.safetensors"
# An index whose second shard is a FIFO, and one whose second shard is missing.
mkdir -p "$D/fs" "$D/ms"
cp $F/healthy_sharded.safetensors.index.json $F/healthy_sharded-00001-of-00002.safetensors "$D/fs/"
cp $F/healthy_sharded.safetensors.index.json $F/healthy_sharded-00001-of-00002.safetensors "$D/ms/"
mkfifo "$D/fs/healthy_sharded-00002-of-00002.safetensors"
fs=$D/fs/healthy_sharded.safetensors.index.json
ms=$D/ms/healthy_sharded.safetensors.index.json
# The status and the one message of a run (t_run, then t_stderr_is).
t_is() {
    _n=$1 _rc=$2 _msg=$3
    shift 3
    t_run "$_n" "$_rc" "$@"
    t_stderr_is "$_n" "$_msg"
}

# ------------------------------------------------------------- inspect
t_run "inspect 0" 0 "$STFIX" inspect "$ok"
t_run "inspect 2 (malformed)" 2 "$STFIX" inspect "$s5"
t_run "inspect 2 (missing shard, I3)" 2 "$STFIX" inspect "$ms"
t_run "inspect 3" 3 "$STFIX" inspect --frobnicate "$ok"
t_is "inspect 4 (a FIFO)" 4 "stfix: inspect: $D/fifo.safetensors: cannot read: not a regular file" \
    t_capped "$STFIX" inspect "$D/fifo.safetensors"
t_run "inspect 4 (a FIFO as a shard, I3)" 4 t_capped "$STFIX" inspect "$fs"
t_stderr_has "inspect 4 (a FIFO as a shard, I3)" "I3 MissingShard: shard 'healthy_sharded-00002-of-00002.safetensors' (holding 'blocks.0.mlp.fc1.comfy_quant' per weight_map) cannot be read: $D/fs/healthy_sharded-00002-of-00002.safetensors: cannot read: not a regular file"

# ------------------------------------------------------------- check
t_run "check 0" 0 "$STFIX" check "$good"
t_run "check 1" 1 "$STFIX" check $F/r23_no_convrot.safetensors
t_run "check 2" 2 "$STFIX" check "$s5"
t_run "check 3" 3 "$STFIX" check
t_run "check 4 (a FIFO)" 4 t_capped "$STFIX" check "$D/fifo.safetensors"
t_run "check 4 (a FIFO as a shard)" 4 t_capped "$STFIX" check "$fs"

# ------------------------------------------------------------- rewrite
t_run "rewrite 0" 0 "$STFIX" rewrite "$ok" -o "$D/rw.safetensors"
t_run "rewrite 2" 2 "$STFIX" rewrite "$s5" -o "$D/rw2.safetensors"
t_run "rewrite 3" 3 "$STFIX" rewrite "$ok"
t_run "rewrite 4 (a FIFO as a shard)" 4 t_capped "$STFIX" rewrite "$fs" -o "$D/rw2.safetensors"
t_run "rewrite 4 (output locked)" 4 $HOLD "$D/rw2.safetensors" \
    "$STFIX" rewrite "$ok" -o "$D/rw2.safetensors" --no-wait

# ------------------------------------------------------------- plan
t_run "plan 0" 0 "$STFIX" plan "$ok" -r "$cast"
t_run "plan 2" 2 "$STFIX" plan "$ok" -r $R/broken.yaml
t_run "plan 3" 3 "$STFIX" plan "$ok"
t_is "plan 4 (recipe a FIFO)" 4 "stfix: plan: $D/fifo.safetensors: not a recipe (a FIFO, not a regular file)" \
    t_capped "$STFIX" plan "$ok" -r "$D/fifo.safetensors"
t_run "plan 4 (a FIFO as a shard)" 4 t_capped "$STFIX" plan "$fs" -r "$cast"

# ------------------------------------------------------------- fix
t_run "fix 0" 0 "$STFIX" fix "$ok" -r "$cast" -o "$D/fix.safetensors"
t_run "fix 1" 1 "$STFIX" fix $F/r25_conv_marker.safetensors -r $R/flatten-conv.yaml -o "$D/f1.safetensors"
t_run "fix 2" 2 "$STFIX" fix "$s5" -r "$cast" -o "$D/f2.safetensors"
t_run "fix 3" 3 "$STFIX" fix "$ok" -r "$cast"
t_run "fix 4 (a FIFO)" 4 t_capped "$STFIX" fix "$D/fifo.safetensors" -r "$cast" -o "$D/f2.safetensors"
t_run "fix 4 (output locked)" 4 $HOLD "$D/f2.safetensors" \
    "$STFIX" fix "$ok" -r "$cast" -o "$D/f2.safetensors" --no-wait

# ------------------------------------------------------------- diff
t_run "diff 0" 0 "$STFIX" diff "$ok" "$ok"
t_run "diff 1" 1 "$STFIX" diff "$ok" "$good"
t_run "diff 2" 2 "$STFIX" diff "$ok" "$D/none.safetensors"
t_run "diff 3" 3 "$STFIX" diff "$ok"
t_run "diff 4 (a FIFO)" 4 t_capped "$STFIX" diff "$ok" "$D/fifo.safetensors"

# ------------------------------------------------------------- batch
mkdir -p "$D/zoo" "$D/bad"
cp "$good" "$D/zoo/"
cp "$s5" "$D/bad/"
t_run "batch 0" 0 "$STFIX" batch -r "$cast" -o "$D/bo0" "$D/zoo"
t_run "batch 1" 1 "$STFIX" batch -r "$cast" -o "$D/bo1" "$D/bad"
t_run "batch 2 (missing input)" 2 "$STFIX" batch -r "$cast" -o "$D/bo2" "$D/none"
t_is "batch 2 (missing input)" 2 "stfix: batch: $D/none: No such file or directory" \
    "$STFIX" batch -r "$cast" -o "$D/bo2" "$D/none"
t_run "batch 2 (invalid recipe)" 2 "$STFIX" batch -r $R/broken.yaml -o "$D/bo2" "$D/zoo"
t_run "batch 3" 3 "$STFIX" batch -r "$cast" "$D/zoo"
t_run "batch 4 (output directory cannot be made)" 4 "$STFIX" batch -r "$cast" -o "$ok/out" "$D/zoo"
# A FIFO among the inputs fails that checkpoint (1), at once.
t_run "batch 1 (a FIFO input)" 1 t_capped "$STFIX" batch -r "$cast" -o "$D/bo3" "$D/fifo.safetensors"
t_stderr_has "batch 1 (a FIFO input)" "failed $D/fifo.safetensors: $D/fifo.safetensors: cannot read: not a regular file"

# ------------------------------------------------------------- verify
t_run "verify 0" 0 "$STFIX" verify "$D/fix.safetensors" --from "$ok" -r "$cast"
t_run "verify 1" 1 "$STFIX" verify "$D/rw.safetensors" --from "$ok" -r "$cast"
t_run "verify 2" 2 "$STFIX" verify "$D/fix.safetensors" --from "$D/none.safetensors" -r "$cast"
t_run "verify 3" 3 "$STFIX" verify "$D/fix.safetensors" --from "$ok"
t_run "verify 4 (a FIFO)" 4 t_capped "$STFIX" verify "$D/fix.safetensors" --from "$D/fifo.safetensors" -r "$cast"

# ------------------------------------------------------------- compress
t_run "compress 0" 0 "$STFIX" compress "$ok" -o "$D/c.safetensors.zst"
t_run "compress 2" 2 "$STFIX" compress "$s5" -o "$D/c2.safetensors.zst"
t_run "compress 3" 3 "$STFIX" compress
t_run "compress 4 (a FIFO)" 4 t_capped "$STFIX" compress "$D/fifo.safetensors" -o "$D/c2.safetensors.zst"
t_run "compress 4 (output locked)" 4 $HOLD "$D/c2.safetensors.zst" \
    "$STFIX" compress "$ok" -o "$D/c2.safetensors.zst" --no-wait

# ------------------------------------------------------------- decompress
printf 'not zstd' >"$D/junk.safetensors.zst"
t_run "decompress 0" 0 "$STFIX" decompress "$D/c.safetensors.zst" -o "$D/d.safetensors"
t_run "decompress 2" 2 "$STFIX" decompress "$D/junk.safetensors.zst" -o "$D/d2.safetensors"
t_is "decompress 2 (missing)" 2 "stfix: decompress: $D/none.safetensors.zst: cannot open: No such file or directory" \
    "$STFIX" decompress "$D/none.safetensors.zst"
t_run "decompress 3" 3 "$STFIX" decompress "$ok"
mkfifo "$D/fifo.safetensors.zst"
t_is "decompress 4 (a FIFO)" 4 "stfix: decompress: $D/fifo.safetensors.zst: cannot read: not a regular file" \
    t_capped "$STFIX" decompress "$D/fifo.safetensors.zst" -o "$D/d3.safetensors"
t_run "decompress 4 (output locked)" 4 $HOLD "$D/d2.safetensors" \
    "$STFIX" decompress "$D/c.safetensors.zst" -o "$D/d2.safetensors" --no-wait

# ------------------------------------------------------------- rules
t_run "rules 0" 0 "$STFIX" rules lint "$cast"
t_run "rules 2" 2 "$STFIX" rules lint $R/broken.yaml
t_run "rules 3" 3 "$STFIX" rules lint
t_run "rules 4 (a FIFO)" 4 t_capped "$STFIX" rules lint "$D/fifo.safetensors"
t_run "rules list 4 (stdout full)" 4 sh -c '"$1" rules list >/dev/full' - "$STFIX"

# ------------------------------------------------------------- explain
t_run "explain 0" 0 "$STFIX" explain R15
t_run "explain 3" 3 "$STFIX" explain ZZ9
t_run "explain 4 (stdout full)" 4 sh -c '"$1" explain R15 >/dev/full' - "$STFIX"
t_stderr_is "explain 4 (stdout full)" "stfix: explain: cannot write to standard output: No space left on device"

# ------------------------------------------------------------- hash
t_run "hash 0" 0 "$STFIX" hash "$ok"
t_run "hash 2 (malformed)" 2 "$STFIX" hash "$s5"
t_is "hash 2 (missing)" 2 "stfix: hash: $D/none: cannot open: No such file or directory" \
    "$STFIX" hash "$D/none"
t_run "hash 3" 3 "$STFIX" hash --frobnicate "$ok"
t_is "hash 4 (a FIFO)" 4 "stfix: hash: $D/fifo.safetensors: cannot read: not a regular file" \
    t_capped "$STFIX" hash "$D/fifo.safetensors"
