#!/bin/sh
# The human listings stay linear in the number of layers: `check` on 100,000
# metadata-only layers and `plan` on 64,000 layers finish well inside the
# time limit below (they took minutes when the listing rescanned the report
# for each layer), and say the same as the JSON documents. check and plan
# of the 100,000 layers, and their JSON documents, also fit an
# address-space cap.
. tests/cli/lib.sh
# The address-space cap, left out under AddressSanitizer, which reserves
# far more than any of them (as t_capped does).
vcap() { if [ -n "$T_ASAN" ]; then echo :; else echo "ulimit -v $1"; fi; }
D=$T_TMP
LIMIT=120
python3 tests/gen/gen_many_layers.py "$D/meta.safetensors" meta 100000
python3 tests/gen/gen_many_layers.py "$D/int8.safetensors" int8 64000

t_run "check, 100,000 layers" 1 timeout "$LIMIT" "$STFIX" check "$D/meta.safetensors"
t_stdout_has "check, 100,000 layers" "summary: 400000 error(s), 0 warning(s), 0 info"
t_true "check, 100,000 layers: one group per layer" \
    test "$(grep -c '^layer blocks\.[0-9]*\.attn\.qkv:$' "$T_OUT")" -eq 100000
t_true "check, 100,000 layers: in order of first appearance" \
    test "$(grep -m 3 '^layer blocks' "$T_OUT" | tr '\n' ' ')" = "layer blocks.0.attn.qkv: layer blocks.1.attn.qkv: layer blocks.2.attn.qkv: "
cp "$T_OUT" "$D/check.txt"
# Memory follows the header (6 MB) too: under an address-space cap a
# fifth above what the run needs when the report keeps each finding as
# an 8-byte record of its kind and its layer, each kind, distinct message
# and layer name once, the JSON values of the metadata are 16-byte nodes
# with each container's entries and strings in one block, equal small
# containers of scalars (each layer's {"format": ...}) one block, and a
# layer only a metadata entry names is that entry's place rather than a
# layer struct and a marker of its own (with a 16-byte record per finding,
# a copy of each layer's name and a block per marker it needed 50 MiB, and
# some 10 MiB more since the program maps libcurl and its libraries; it
# now needs 45 MiB with them), the same listing comes out. One thread, so no thread
# stacks count against the cap.
t_run "check, 100,000 layers, 55 MiB" 1 sh -c "$(vcap 56320) && exec timeout $LIMIT \"\$0\" check \"\$1\" -j 1" \
    "$STFIX" "$D/meta.safetensors"
t_stdout_is "check, 100,000 layers, 55 MiB" "$D/check.txt"
t_run "plan, 100,000 metadata layers" 0 timeout "$LIMIT" "$STFIX" plan "$D/meta.safetensors" \
    -r rules/comfyui-int8-convrot.yaml -j 1
cp "$T_OUT" "$D/plan.txt"
# Those layers, and one copy of the rule and action lists for a run of
# layer records the same rules apply to, one block for the markers' equal
# JSON values, and each layer's record 8 bytes: the kind of record it
# shares with the layers that read alike (one summary for all that say
# the same, the output prefix cut out of it), and its output prefix only
# where its renames do not make it; the listing reads one record at a
# time. It needs 45 MiB, as check does (with a public record, a summary
# and an output prefix kept per layer it needed 66 MiB; with the structs
# and a copy of the lists per layer 84 MiB).
t_run "plan, 100,000 metadata layers, 55 MiB" 0 sh -c "$(vcap 56320) && exec timeout $LIMIT \"\$0\" plan \"\$1\" -r rules/comfyui-int8-convrot.yaml -j 1" \
    "$STFIX" "$D/meta.safetensors"
t_stdout_is "plan, 100,000 metadata layers, 55 MiB" "$D/plan.txt"
t_run "plan --json, 100,000 metadata layers" 0 timeout "$LIMIT" "$STFIX" plan "$D/meta.safetensors" \
    -r rules/comfyui-int8-convrot.yaml -j 1 --json
t_true "plan --json, 100,000 metadata layers: every layer" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["layers"]) != 100000 or d["layers"][99999]["out_prefix"] != "model.diffusion_model.blocks.99999.attn.qkv")' "$T_OUT"
cp "$T_OUT" "$D/plan.json"
# The document is written as it goes, a layer at a time, so it fits the
# listing's cap (a tree of every layer needed 195 MiB).
t_run "plan --json, 100,000 metadata layers, 55 MiB" 0 sh -c "$(vcap 56320) && exec timeout $LIMIT \"\$0\" plan \"\$1\" -r rules/comfyui-int8-convrot.yaml -j 1 --json" \
    "$STFIX" "$D/meta.safetensors"
t_stdout_is "plan --json, 100,000 metadata layers, 55 MiB" "$D/plan.json"
t_run "check --json, 100,000 layers" 1 timeout "$LIMIT" "$STFIX" check "$D/meta.safetensors" --json
t_true "check --json, 100,000 layers: same count" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["summary"]["errors"] != 400000)' "$T_OUT"
cp "$T_OUT" "$D/check.json"
# The document is written as it goes, a message at a time, so it fits the
# text listing's cap (a tree of every diagnostic needed four times that).
t_run "check --json, 100,000 layers, 55 MiB" 1 sh -c "$(vcap 56320) && exec timeout $LIMIT \"\$0\" check \"\$1\" -j 1 --json" \
    "$STFIX" "$D/meta.safetensors"
t_stdout_is "check --json, 100,000 layers, 55 MiB" "$D/check.json"

# comfyui-repair gives each marker-less layer the marker its tensors imply
# (the SGLang recipes refuse such a layer: its rotation is unknown).
t_run "plan, 64,000 layers" 0 timeout "$LIMIT" "$STFIX" plan "$D/int8.safetensors" -r rules/comfyui-repair.yaml
t_true "plan, 64,000 layers: every layer listed" test "$(grep -c '^layer ' "$T_OUT")" -eq 64000
t_true "plan, 64,000 layers: every tensor under its layer" \
    test "$(grep -c '^    [a-z-]* *blocks\.' "$T_OUT")" -ge 128000
t_true "plan, 64,000 layers: the last layer's tensors follow it" \
    sh -c "grep -A6 '^layer blocks.63999.lin\$' '$T_OUT' | grep -q 'blocks.63999.lin.weight '"
