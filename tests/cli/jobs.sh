# CLI scenarios for -j/--jobs on the commands that read tensor data: the
# numeric probes of `check --numeric` and `plan` run across layers on the
# worker pool, and `fix` probes and requantizes on it. Every report, plan
# and output must be byte-identical to the one thread's, for every input
# with probes (fixtures/comfy/probe_*, fixtures/demo/) and every bundled
# recipe. Fixtures: fixtures/comfy/, fixtures/demo/.
. tests/cli/lib.sh
F=fixtures/comfy
INPUTS="$F/probe_bad_scales.safetensors $F/probe_colquant_square.safetensors
$F/probe_rowquant_flat.safetensors $F/probe_sylvester_data.safetensors
$F/healthy_mixed_int8_w4a4.safetensors $F/healthy_sharded.safetensors.index.json
$F/r24_g128.safetensors fixtures/demo/demo.safetensors fixtures/demo/healthy.safetensors"

# check --numeric: human and JSON, one and several threads.
for in in $INPUTS; do
    b=$(basename "$in")
    for form in human json; do
        flag=; [ $form = json ] && flag=--json
        "$STFIX" check "$in" --numeric $flag -j 1 >"$T_TMP/c1" 2>&1
        rc1=$?
        for j in 2 5; do
            t_run "check $b $form -j $j" $rc1 "$STFIX" check "$in" --numeric $flag --jobs $j
            t_stdout_is "check $b $form -j $j" "$T_TMP/c1"
        done
    done
done

# The findings themselves with several threads, exactly (H1, H2, N1).
t_run "H1 -j 4" 1 "$STFIX" check $F/probe_colquant_square.safetensors --numeric -j 4
t_stdout_has "H1 -j 4" "COLUMN quantization in blocks.0.attn.qkv.weight: 25.0% of 64 non-empty rows and 100.0% of 64 non-empty columns reach |q| >= 126; weight (64, 64), scale (64,)"
t_run "H2 -j 4" 0 "$STFIX" check $F/probe_sylvester_data.safetensors --numeric -j 4 --json
t_stdout_has "H2 -j 4" '"rule": "H2", "severity": "warning", "layer": "blocks.0.attn.qkv"'

# plan: every bundled recipe, human and JSON.
for in in $INPUTS; do
    b=$(basename "$in")
    for r in rules/*.yaml; do
        rb=$(basename "$r" .yaml)
        "$STFIX" plan "$in" -r "$r" --json -j 1 >"$T_TMP/p1" 2>&1
        rc1=$?
        t_run "plan $b $rb -j 3" $rc1 "$STFIX" plan "$in" -r "$r" --json -j 3
        t_stdout_is "plan $b $rb -j 3" "$T_TMP/p1"
    done
done
t_run "plan human -j 2" 0 "$STFIX" plan $F/probe_rowquant_flat.safetensors \
    -r rules/repair-scales.yaml -j 2
"$STFIX" plan $F/probe_rowquant_flat.safetensors -r rules/repair-scales.yaml -j 1 >"$T_TMP/p1"
t_stdout_is "plan human -j 2" "$T_TMP/p1"

# fix: the same bytes and summary for -j 1 and -j 3.
for pair in "$F/probe_rowquant_flat.safetensors rules/repair-scales.yaml" \
            "$F/probe_colquant_square.safetensors rules/sglang-int8-convrot.yaml" \
            "$F/probe_sylvester_data.safetensors rules/comfyui-int8-convrot.yaml" \
            "$F/r24_g128.safetensors rules/sglang-int8-convrot.yaml" \
            "fixtures/demo/demo.safetensors rules/sglang-int8-convrot.yaml"; do
    set -- $pair
    b=$(basename "$1")-$(basename "$2" .yaml)
    t_run "fix $b -j 1" 0 "$STFIX" fix "$1" -r "$2" -o "$T_TMP/f1.safetensors" -j 1 --json
    sed "s|$T_TMP/f1|OUT|g" "$T_OUT" >"$T_TMP/f1.json"
    t_run "fix $b -j 3" 0 "$STFIX" fix "$1" -r "$2" -o "$T_TMP/f3.safetensors" -j 3 --json
    sed "s|$T_TMP/f3|OUT|g" "$T_OUT" >"$T_OUT.x" && mv "$T_OUT.x" "$T_OUT"
    t_stdout_is "fix $b -j 3" "$T_TMP/f1.json"
    t_true "fix $b: same bytes" cmp -s "$T_TMP/f1.safetensors" "$T_TMP/f3.safetensors"
    rm -f "$T_TMP/f1.safetensors" "$T_TMP/f3.safetensors"
done

# -j is checked like fix's.
t_run "check -j 0" 3 "$STFIX" check $F/probe_bad_scales.safetensors --numeric -j 0
t_run "plan -j x" 3 "$STFIX" plan $F/probe_bad_scales.safetensors -r rules/repair-scales.yaml -j x
