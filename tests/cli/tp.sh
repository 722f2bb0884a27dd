# CLI scenarios for tensor parallelism: `stfix check --tp` (rules T1-T5, the
# per-degree summary in human and JSON form, the profile detected or given),
# --tp-profile list and its errors, and the TP-8 repair (requantize tp: 8 and
# rules/sglang-int8-convrot-tp8.yaml): a repaired file passes check --tp 8
# and --target sglang, and the layers that already shard keep their bytes.
# Fixtures: fixtures/tp/ (see its MANIFEST, tests/gen/gen_tp_fixtures.py).
. tests/cli/lib.sh
F=fixtures/tp
TOOL=tests/cli/fix_tool.py

# --tp-profile list: the bundled profiles, by name.
cat >"$T_TMP/list.txt" <<'EOF'
flux         Flux and Flux 2 DiTs in ComfyUI naming (qkv, *_mlp, linear1/2, modulation)
qwen-llama   Qwen/Llama-style encoders (q/k/v/gate/up_proj column, o/down_proj row)
wan          Wan DiTs (self_attn/cross_attn q/k/v and ffn.0 column, .o and ffn.2 row)
EOF
if [ ! -d /usr/local/share/stfix/rules/tp ]; then
t_run "profile list" 0 env -u STFIX_RULES_PATH "$STFIX" check --tp-profile list
t_stdout_is "profile list" "$T_TMP/list.txt"
fi

# Every line of the MANIFEST: the rule fires at that degree, or the degree
# has no T finding at all.
grep -v '^#' "$F/MANIFEST" | while read -r file degree rule; do
    "$STFIX" check "$F/$file" --tp "$degree" --json >"$T_TMP/m.json" 2>"$T_TMP/m.err"
    if [ "$rule" = clean ]; then
        if grep -q '"rule": "T[0-9]' "$T_TMP/m.json"; then t_notok "$file TP $degree: clean"
        else t_ok "$file TP $degree: clean"; fi
    elif grep -q "\"rule\": \"$rule\"" "$T_TMP/m.json"; then t_ok "$file TP $degree: $rule"
    else t_notok "$file TP $degree: $rule" "$(head -c 300 "$T_TMP/m.json")"; fi
done

# The whole human report of the encoder: a Qwen3-style down projection with
# G=256 shards at TP 2 and 4 and is replicated at TP 8 (K/8 = 128); the
# profile is detected from the names.
cat >"$T_TMP/enc.txt" <<'EOF'
check fixtures/tp/encoder_tp8.safetensors (target sglang)
layer model.layers.0.mlp.down_proj:
  warning T2:  row-parallel layer model.layers.0.mlp.down_proj: at TP 8 each shard holds K/8=128 input columns, not a multiple of its ConvRot group size G=256, so rotation groups would straddle shards; SGLang replicates the layer on every GPU: 8224 bytes per GPU instead of 1028 [degraded]
layer model.layers.0.self_attn.o_proj:
  warning T2:  row-parallel layer model.layers.0.self_attn.o_proj: at TP 8 each shard holds K/8=96 input columns, not a multiple of its ConvRot group size G=64, so rotation groups would straddle shards; SGLang replicates the layer on every GPU: 24704 bytes per GPU instead of 3088 [degraded]
suggested fixes:
  T2   requantize with a group size that divides K/T (requantize tp: T, e.g. stfix fix -r sglang-int8-convrot-tp8 for T = 8)
tp profile: qwen-llama (detected: it classifies 7 of 7 Linear layers)
  TP 2: clean; 7 sharded, 0 replicated by style, 0 replicated, 0 cannot load, 0 unknown
  TP 4: clean; 7 sharded, 0 replicated by style, 0 replicated, 0 cannot load, 0 unknown
  TP 8: replicated; 5 sharded, 0 replicated by style, 2 replicated (32928 bytes per GPU instead of 4116), 0 cannot load, 0 unknown
summary: 0 error(s), 2 warning(s), 0 info
hint: stfix explain T2 shows what a rule checks and how to fix it
EOF
t_run "encoder 2,4,8" 0 "$STFIX" check $F/encoder_tp8.safetensors --target sglang --tp 2,4,8
t_stdout_is "encoder 2,4,8" "$T_TMP/enc.txt"

# T1, T3 and their summary: a Flux checkpoint that cannot load at TP 8.
t_run "unsplittable" 1 "$STFIX" check $F/flux_tp_unsplittable.safetensors --target sglang --tp 8
t_stdout_has "unsplittable" "  error   T1:  row-parallel layer single_blocks.0.linear2: K=100 input columns do not split into 8 equal shards; SGLang's RowParallelLinear refuses the layer and the model does not load at TP 8"
t_stdout_has "unsplittable" "  error   T3:  column-parallel layer double_blocks.0.txt_mlp.0: N=100 output rows do not split into 8 equal shards; SGLang's ColumnParallelLinear refuses the layer and the model does not load at TP 8"
t_stdout_has "unsplittable" "  TP 8: cannot load; 1 sharded, 0 replicated by style, 0 replicated, 2 cannot load, 0 unknown"
# T4: NVFP4 scale blocks of 16 columns cut by 8 shards of K=64.
t_run "nvfp4" 1 "$STFIX" check $F/encoder_tp_nvfp4.safetensors --target sglang --tp 8
t_stdout_has "nvfp4" "  error   T4:  row-parallel layer model.layers.0.mlp.down_proj (nvfp4): at TP 8 each shard holds K/8=8 input columns, which splits its scale blocks of 16 columns; SGLang cannot load the shard's scales and the model does not load at TP 8"
# T5 once per layer, whatever the degrees; replicated-by-style layers counted.
t_run "flux" 0 "$STFIX" check $F/flux_tp8.safetensors --target sglang --tp 4,8
t_stdout_has "flux" "  info    T5:  layer img_in (64x64) has no parallel style in profile flux: not checked for tensor parallelism"
t_true "flux: T5 once" test "$(grep -c 'T5: ' "$T_OUT")" -eq 1
t_stdout_has "flux" "tp profile: flux (detected: it classifies 8 of 9 Linear layers)"
t_stdout_has "flux" "  TP 8: replicated; 4 sharded, 2 replicated by style, 2 replicated (20672 bytes per GPU instead of 2584), 0 cannot load, 1 unknown"

# JSON: the "tp" member, one object per degree.
t_run "json" 0 "$STFIX" check $F/encoder_tp8.safetensors --tp 4,8 --json
t_stdout_has "json" '"tp": {"profile": "qwen-llama", "detected": true, "classified": 7, "linear": 7, "degrees": [{"tp": 4, "verdict": "clean", "sharded": 7, "replicated_by_style": 0, "replicated": 0, "replicated_bytes_per_gpu": 0, "cannot_load": 0, "unknown": 0}, {"tp": 8, "verdict": "replicated", "sharded": 5, "replicated_by_style": 0, "replicated": 2, "replicated_bytes_per_gpu": 32928, "cannot_load": 0, "unknown": 0}]}'
if command -v python3 >/dev/null 2>&1; then
    t_true "json parses" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [x["tp"] for x in d["tp"]["degrees"]] == [4, 8]' "$T_OUT"
fi
# Without --tp nothing about tensor parallelism is said.
t_run "no tp" 0 "$STFIX" check $F/encoder_tp8.safetensors --json
t_true "no tp: no tp member" sh -c "! grep -q '\"tp\"' '$T_OUT'"

# A profile given by name or as a file: a file's styles are its own.
t_run "named profile" 0 "$STFIX" check $F/flux_tp8.safetensors --target sglang --tp 8 --tp-profile flux
t_stdout_has "named profile" "tp profile: flux (given: it classifies 8 of 9 Linear layers)"
cat >"$T_TMP/mine.yaml" <<'EOF'
stfix: 1
profile: mine
styles:
  - match: {prefix: img_in}
    style: row
  - match: {regex: 'qkv$'}
    style: column
EOF
t_run "profile file" 0 "$STFIX" check $F/flux_tp8.safetensors --target sglang --tp 8 --tp-profile "$T_TMP/mine.yaml"
t_stdout_has "profile file" "  warning T2:  row-parallel layer img_in: at TP 8 each shard holds K/8=8 input columns, not a multiple of its ConvRot group size G=64, so rotation groups would straddle shards; SGLang replicates the layer on every GPU: 4352 bytes per GPU instead of 544"
t_stdout_has "profile file" "tp profile: mine (given: it classifies 2 of 9 Linear layers)"
t_stdout_has "profile file" "  info    T5:  layer double_blocks.0.img_attn.proj (32x384) has no parallel style in profile mine: not checked for tensor parallelism"

# A bad selector in a profile: FILE:LINE:COL, exit 2, nothing checked.
cat >"$T_TMP/bad.yaml" <<'EOF'
stfix: 1
profile: bad
styles:
  - match: {prefix: "**.qkv"}
    style: column
  - match: {prefx: "**.proj"}
    style: row
  - match: {shape: "K % 8 = 0"}
    style: sideways
EOF
t_run "bad profile" 2 "$STFIX" check $F/flux_tp8.safetensors --tp 8 --tp-profile "$T_TMP/bad.yaml"
printf '%s\n' \
    "$T_TMP/bad.yaml:6:13: styles[1].match: unknown key 'prefx' (expected one of: prefix, regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, probe, rotation, parallel, not)" \
    "$T_TMP/bad.yaml:8:27: styles[2].match.shape: invalid predicate 'K % 8 = 0': unexpected '= 0'" \
    "$T_TMP/bad.yaml:9:12: styles[2].style: expected one of column, row, replicated, got 'sideways'" \
    >"$T_TMP/bad.err"
if cmp -s "$T_ERR" "$T_TMP/bad.err"; then t_ok "bad profile: stderr"
else t_notok "bad profile: stderr" "$(cat "$T_ERR")"; fi
t_true "bad profile: no report" test ! -s "$T_OUT"

# Usage errors.
t_run "tp 0" 3 "$STFIX" check $F/flux_tp8.safetensors --tp 0
t_stderr_has "tp 0" "--tp takes one to 16 degrees from 1 to 65536, comma-separated (e.g. 8 or 2,4,8), not '0'"
t_run "tp twice" 3 "$STFIX" check $F/flux_tp8.safetensors --tp 8,8
t_stderr_has "tp twice" "--tp lists degree 8 twice"
t_run "profile without tp" 3 "$STFIX" check $F/flux_tp8.safetensors --tp-profile flux
t_stderr_has "profile without tp" "--tp-profile needs --tp"
t_run "unknown profile" 2 "$STFIX" check $F/flux_tp8.safetensors --tp 8 --tp-profile nope
t_stderr_is "unknown profile" "stfix: check: parallel-style profile 'nope' not found (stfix check --tp-profile list shows the bundled ones)"

# plan: per requantized layer the new G, the old G and why.
t_run "plan tp8" 0 "$STFIX" plan $F/flux_tp8.safetensors -r rules/sglang-int8-convrot-tp8.yaml
t_stdout_has "plan tp8" "tp profile: flux (detected: it classifies 8 of 9 Linear layers)"
t_stdout_has "plan tp8" "  summary: requantize to int8_tensorwise, G=16 (was 64; largest allowed G dividing K/8=48, row-parallel)"
t_stdout_has "plan tp8" "  summary: requantize to int8_tensorwise, G=64 (was 256; largest allowed G dividing K/8=64, row-parallel)"
t_true "plan tp8: two requantized" test "$(grep -c 'rules: requantize-tp8-row-groups' "$T_OUT")" -eq 2

# The repair: check --tp 8 and --target sglang pass, compatible layers keep
# their bytes, repaired layers carry the new group size; the error report
# names the requantized layers.
for f in flux_tp8 encoder_tp8; do
    out="$T_TMP/$f.fixed.safetensors"
    t_run "fix $f" 0 "$STFIX" fix $F/$f.safetensors -r sglang-int8-convrot-tp8 -o "$out" --error-report
    t_stdout_has "fix $f" "error report (2 layer(s) requantized or dequantized):"
    t_run "fixed $f: tp 8" 0 "$STFIX" check "$out" --target sglang --tp 8
    t_true "fixed $f: no T2" sh -c "! grep -q 'T2:' '$T_OUT'"
    t_stdout_has "fixed $f: tp 8" "summary: 0 error(s), 0 warning(s)"
    t_run "fixed $f: sglang" 0 "$STFIX" check "$out" --target sglang
done
fixed="$T_TMP/flux_tp8.fixed.safetensors"
for l in double_blocks.0.txt_attn.proj double_blocks.0.img_attn.qkv double_blocks.0.img_mlp.0 \
         double_blocks.0.img_mod.lin single_blocks.0.linear1 single_blocks.0.modulation.lin img_in; do
    for s in weight weight_scale; do
        python3 "$TOOL" tensor $F/flux_tp8.safetensors "$l.$s" >"$T_TMP/a.bin"
        python3 "$TOOL" tensor "$fixed" "$l.$s" >"$T_TMP/b.bin"
        t_true "kept $l.$s" cmp -s "$T_TMP/a.bin" "$T_TMP/b.bin"
    done
done
python3 "$TOOL" tensor "$fixed" double_blocks.0.img_attn.proj.comfy_quant >"$T_TMP/mk"
t_true "img_attn.proj: G=16" grep -q '"convrot_groupsize": 16' "$T_TMP/mk"
python3 "$TOOL" tensor "$fixed" double_blocks.0.img_mlp.2.comfy_quant >"$T_TMP/mk"
t_true "img_mlp.2: G=64" grep -q '"convrot_groupsize": 64' "$T_TMP/mk"
python3 "$TOOL" tensor "$T_TMP/encoder_tp8.fixed.safetensors" model.layers.0.mlp.down_proj.comfy_quant >"$T_TMP/mk"
t_true "down_proj: G=64" grep -q '"convrot_groupsize": 64' "$T_TMP/mk"

# The recipe's parallel list overrides the detected profile: img_in as row.
cat >"$T_TMP/over.yaml" <<'EOF'
stfix: 1
target: sglang
parallel:
  - {match: {prefix: img_in}, style: row}
rules:
  - name: tp8
    match: {format: int8_tensorwise, parallel: row, shape: "K % 8 == 0 && (K / 8) % G != 0"}
    do: {requantize: {tp: 8}}
EOF
t_run "override" 0 "$STFIX" plan $F/flux_tp8.safetensors -r "$T_TMP/over.yaml"
t_stdout_has "override" "  summary: no group size divides K (K/8=8); exclude: weight dequantized to BF16, marker and scales dropped"

# An INT8 alias whose data lacks the int8_tensorwise layout (a BF16 weight
# under an int8_perrow marker, G=256) reaches requantize through the TP-8
# recipe's rewrite-format (mismatch: requantize): it gets the TP-8 group
# size too, 64 dividing K/8=128, not requantize's default 256.
L=model.layers.0.mlp.down_proj
python3 "$TOOL" new "$T_TMP/alias0.safetensors" $L.weight BF16 '[8, 1024]' \
    "$(python3 -c 'print([((i * 37) % 101 - 50) / 64 for i in range(8192)])')"
python3 "$TOOL" marker "$T_TMP/alias0.safetensors" "$T_TMP/alias.safetensors" $L \
    '{"format": "int8_perrow", "convrot": true, "convrot_groupsize": 256}'
t_run "alias plan" 0 "$STFIX" plan "$T_TMP/alias.safetensors" -r sglang-int8-convrot-tp8
t_stdout_has "alias plan" "  rules: rename-int8-aliases, normalise-markers"
t_stdout_has "alias plan" "  summary: requantize to int8_tensorwise, G=64 (was none; largest allowed G dividing K/8=128, row-parallel)"
t_run "alias fix" 0 "$STFIX" fix "$T_TMP/alias.safetensors" -r sglang-int8-convrot-tp8 -o "$T_TMP/alias.fixed.safetensors"
python3 "$TOOL" tensor "$T_TMP/alias.fixed.safetensors" $L.comfy_quant >"$T_TMP/mk"
t_true "alias: G=64" grep -q '"convrot_groupsize": 64' "$T_TMP/mk"
t_run "alias fixed: tp 8" 0 "$STFIX" check "$T_TMP/alias.fixed.safetensors" --target sglang --tp 8
t_stdout_has "alias fixed: tp 8" "  TP 8: clean; 1 sharded, 0 replicated by style, 0 replicated, 0 cannot load, 0 unknown"
# rewrite-format's tp belongs to its requantize: with mismatch: fail it is refused.
cat >"$T_TMP/rwfail.yaml" <<'EOF'
stfix: 1
target: sglang
rules:
  - name: r
    match: {format: int8_perrow}
    do: {rewrite-format: {from: [int8_perrow], to: int8_tensorwise, mismatch: fail, tp: 8}}
EOF
t_run "rewrite tp fail" 2 "$STFIX" plan "$T_TMP/alias.safetensors" -r "$T_TMP/rwfail.yaml"
t_stderr_has "rewrite tp fail" "rwfail.yaml:6:10: rules[0].do.rewrite-format.tp: applies only with mismatch: requantize"

# plan and fix --json say which profile was used, whether it was detected
# and how many of the Linear layers it classifies; a given profile too.
t_run "alias plan json" 0 "$STFIX" plan "$T_TMP/alias.safetensors" -r sglang-int8-convrot-tp8 --json
t_stdout_has "alias plan json" '"targets": ["sglang"], "tp": {"profile": "qwen-llama", "detected": true, "classified": 1, "linear": 1}, "changed": true, "layers": ['
t_stdout_has "alias plan json" '"changed": true, "requantize": true, "format": "int8_tensorwise", "group": 64, "mode": "cuda"}'
t_run "plan json given" 0 "$STFIX" plan $F/flux_tp8.safetensors -r sglang-int8-convrot-tp8 --json --tp-profile "$T_TMP/mine.yaml"
t_stdout_has "plan json given" '"tp": {"profile": "mine", "detected": false, "classified": 2, "linear": 9}, "changed": true, "layers": ['
t_run "plan json none" 0 "$STFIX" plan $F/flux_tp8.safetensors -r sglang-int8-convrot --json --tp-profile wan
t_stdout_has "plan json none" '"tp": {"profile": "wan", "detected": false, "classified": 0, "linear": 9}, "changed": false, "layers": ['
t_run "fix json" 0 "$STFIX" fix "$T_TMP/alias.safetensors" -r sglang-int8-convrot-tp8 -o "$T_TMP/alias.fixed2.safetensors" --json
t_stdout_has "fix json" '"targets": ["sglang"], "tp": {"profile": "qwen-llama", "detected": true, "classified": 1, "linear": 1}, "status": "ok"'

# Only the profile a run needs is read: with a broken bundled profile on the
# search path, --tp-profile FILE and another bundled NAME still work, and
# detection, which reads them all, reports the broken one.
if [ ! -d /usr/local/share/stfix/rules/tp ]; then
mkdir -p "$T_TMP/broken/tp"
cp rules/tp/wan.yaml rules/tp/qwen-llama.yaml "$T_TMP/broken/tp/"
printf 'stfix: 1\nprofile: flux\nstyles: {}\n' >"$T_TMP/broken/tp/flux.yaml"
t_run "broken: file" 0 env STFIX_RULES_PATH="$T_TMP/broken" "$STFIX" check $F/flux_tp8.safetensors --tp 8 --tp-profile "$T_TMP/mine.yaml"
t_stdout_has "broken: file" "tp profile: mine (given: it classifies 2 of 9 Linear layers)"
t_run "broken: name" 0 env STFIX_RULES_PATH="$T_TMP/broken" "$STFIX" check $F/encoder_tp8.safetensors --tp 4 --tp-profile qwen-llama
t_stdout_has "broken: name" "tp profile: qwen-llama (given: it classifies 7 of 7 Linear layers)"
t_run "broken: detect" 2 env STFIX_RULES_PATH="$T_TMP/broken" "$STFIX" check $F/encoder_tp8.safetensors --tp 4
t_stderr_is "broken: detect" "$T_TMP/broken/tp/flux.yaml:3:9: styles: expected a sequence of {match, style} mappings, got a mapping"
t_run "broken: list" 2 env STFIX_RULES_PATH="$T_TMP/broken" "$STFIX" check --tp-profile list
fi

# No bundled profile knows the names: every Linear layer is unknown (T5).
python3 "$TOOL" new "$T_TMP/odd.safetensors" blocks.0.zzz.weight BF16 '[8, 16]' "[$(seq -s, 1 128)]"
t_run "none detected" 0 "$STFIX" check "$T_TMP/odd.safetensors" --tp 8 --target sglang
t_stdout_has "none detected" "tp profile: none (no bundled profile classifies any of 1 Linear layers: every layer is unknown)"
t_stdout_has "none detected" "  info    T5:  layer blocks.0.zzz (8x16) has no parallel style in profile none: not checked for tensor parallelism"

# The bundled profiles are built into the program: a copy of it alone, in
# a directory with no rules/ and with no installed ones, lists them, finds
# one by name, detects one for the TP-8 recipe (by NAME or NAME.yaml) and
# repairs as the source tree's profiles do.
if [ ! -d /usr/local/share/stfix/rules/tp ]; then
ROOT=$(pwd)
mkdir "$T_TMP/away"
cp "$STFIX" "$T_TMP/away/stfix-alone"
away() { (cd "$T_TMP/away" && env -u STFIX_RULES_PATH ./stfix-alone "$@"); }
t_run "away: profile list" 0 away check --tp-profile list
t_stdout_is "away: profile list" "$T_TMP/list.txt"
t_run "away: --tp-profile flux" 0 away check "$ROOT/$F/flux_tp8.safetensors" --tp 8 --tp-profile flux --target sglang
t_stdout_has "away: --tp-profile flux" "tp profile: flux (given: it classifies 8 of 9 Linear layers)"
t_stdout_has "away: --tp-profile flux" "  TP 8: replicated; 4 sharded, 2 replicated by style, 2 replicated (20672 bytes per GPU instead of 2584), 0 cannot load, 1 unknown"
t_run "away: detected" 0 away check "$ROOT/$F/encoder_tp8.safetensors" --tp 4
t_stdout_has "away: detected" "tp profile: qwen-llama (detected: it classifies 7 of 7 Linear layers)"
"$STFIX" fix $F/flux_tp8.safetensors -r rules/sglang-int8-convrot-tp8.yaml -o "$T_TMP/tree.safetensors" >/dev/null 2>&1
for r in sglang-int8-convrot-tp8 sglang-int8-convrot-tp8.yaml; do
    t_run "away: fix -r $r" 0 away fix "$ROOT/$F/flux_tp8.safetensors" -r $r -o "$r.safetensors"
    t_stdout_has "away: fix -r $r" "tp profile: flux (detected: it classifies 8 of 9 Linear layers)"
    t_stdout_has "away: fix -r $r" "layers: 2 changed, 7 unchanged"
    t_true "away: fix -r $r: the source tree's bytes" cmp "$T_TMP/tree.safetensors" "$T_TMP/away/$r.safetensors"
done
# A profile on the search path comes before the built-in one of its name.
mkdir -p "$T_TMP/mine/tp"
sed 's/^description: .*/description: mine/' rules/tp/flux.yaml >"$T_TMP/mine/tp/flux.yaml"
t_run "away: search path first" 0 sh -c "cd '$T_TMP/away' && STFIX_RULES_PATH='$T_TMP/mine' ./stfix-alone check --tp-profile list"
t_stdout_has "away: search path first" "flux         mine"
fi
