# CLI scenarios for the progress line and the verbosity options of every
# command (stfix(1), DESCRIPTION): progress on stderr only when it is a
# terminal (run under a pseudo-terminal by tests/cli/pty_run.py), never with
# --no-progress or -q, never on stdout; -q keeps errors only, -v adds detail.
. tests/cli/lib.sh
PTY="python3 tests/cli/pty_run.py"
IN=fixtures/comfy/r24_g128.safetensors
ESC=$(printf '\033')
CR=$(printf '\r')

has_progress() { grep -q "${CR}${ESC}\[Kstfix: $1: " "$T_ERR"; }

# fix on a terminal: the line counts the output's bytes up to 100% and names
# the layer at work, then is cleared; stdout is what a pipe gets.
"$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$T_TMP/piped.safetensors" >"$T_TMP/piped.out" 2>"$T_TMP/piped.err"
t_pty "fix on a tty" 0 "$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$T_TMP/tty.safetensors"
t_true "fix on a tty: progress" has_progress fix
t_true "fix on a tty: 100%" grep -qF "stfix: fix: 4.1 KiB of 4.1 KiB (100%)  blocks.0.attn.qkv" "$T_ERR"
t_true "fix on a tty: line cleared at the end" sh -c "tail -c 4 '$T_ERR' | od -c | grep -q '033   \['"
sed "s|$T_TMP/piped.safetensors|$T_TMP/tty.safetensors|" "$T_TMP/piped.out" >"$T_TMP/want.out"
t_stdout_is "fix on a tty: stdout as when piped" "$T_TMP/want.out"
t_true "fix on a tty: same output bytes" cmp "$T_TMP/piped.safetensors" "$T_TMP/tty.safetensors"
if grep -q "$CR" "$T_TMP/piped.err" "$T_TMP/piped.out"; then t_notok "fix piped: no progress"
else t_ok "fix piped: no progress"; fi
t_true "fix piped: nothing on stderr" test ! -s "$T_TMP/piped.err"

# fix's own plan probes the weights first where it does not leave the
# verdict to the run (--fail-if-unchanged decides on the plan): the probes'
# line (the 4096-byte weight) comes before the run's (the output's bytes).
t_pty "fix plan probes on a tty" 0 "$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$T_TMP/p.safetensors" --fail-if-unchanged
t_true "fix plan probes on a tty: the probes' line" grep -qF \
    "${CR}${ESC}[Kstfix: fix: 4.0 KiB of 4.0 KiB (100%)  blocks.0.attn.qkv" "$T_ERR"
t_true "fix plan probes on a tty: then the run's" sh -c "grep -aoF -e '4.0 KiB of 4.0 KiB' -e '4.1 KiB of 4.1 KiB' '$T_ERR' | uniq | tr '\n' ' ' | grep -qx '4.0 KiB of 4.0 KiB 4.1 KiB of 4.1 KiB '"

# --no-progress and -q: no line, also on a terminal.
t_pty "fix --no-progress" 0 "$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$T_TMP/a.safetensors" --no-progress
if grep -q "$CR" "$T_ERR"; then t_notok "fix --no-progress: no progress" "$(od -c "$T_ERR" | head -3)"
else t_ok "fix --no-progress: no progress"; fi
t_pty "fix -q" 0 "$STFIX" fix "$IN" -r comfyui-int8-convrot -o "$T_TMP/b.safetensors" -q
t_true "fix -q: nothing on the terminal" test ! -s "$T_ERR"

# rewrite and diff show theirs too.
t_pty "rewrite on a tty" 0 "$STFIX" rewrite "$IN" -o "$T_TMP/c.safetensors"
t_true "rewrite on a tty: progress" has_progress rewrite
t_pty "diff on a tty" 1 "$STFIX" diff "$IN" "$T_TMP/tty.safetensors" --numeric
t_true "diff on a tty: progress" has_progress diff
t_true "diff on a tty: 100%" grep -qF "(100%)" "$T_ERR"
"$STFIX" diff "$IN" "$T_TMP/tty.safetensors" --numeric >"$T_TMP/diff.out" 2>/dev/null
t_stdout_is "diff on a tty: stdout as when piped" "$T_TMP/diff.out"

# check --numeric and plan read the weights for their probes: the line
# counts the weight bytes probed (the 4096-byte INT8 weight) and names the
# layer, then is cleared; stdout is what a pipe gets. check without
# --numeric reads no weight and shows none.
for c in "check --numeric" "plan -r comfyui-int8-convrot"; do
    v=${c%% *}
    # shellcheck disable=SC2086
    "$STFIX" $c "$IN" >"$T_TMP/$v.out" 2>/dev/null
    # shellcheck disable=SC2086
    t_pty "$v on a tty" "$([ "$v" = check ] && echo 1 || echo 0)" "$STFIX" $c "$IN"
    t_true "$v on a tty: the layer at 100%" grep -qF \
        "${CR}${ESC}[Kstfix: $v: 4.0 KiB of 4.0 KiB (100%)  blocks.0.attn.qkv" "$T_ERR"
    t_true "$v on a tty: line cleared at the end" sh -c "tail -c 4 '$T_ERR' | od -c | grep -q '033   \['"
    t_stdout_is "$v on a tty: stdout as when piped" "$T_TMP/$v.out"
    # shellcheck disable=SC2086
    t_pty "$v --no-progress" "$([ "$v" = check ] && echo 1 || echo 0)" "$STFIX" $c "$IN" --no-progress
    t_true "$v --no-progress: nothing on the terminal" test ! -s "$T_ERR"
done
t_pty "check (no probes) on a tty" 1 "$STFIX" check "$IN"
t_true "check (no probes) on a tty: no progress" test ! -s "$T_ERR"

# -q keeps errors, drops notes; -v adds what was read.
printf 'stfix: 1\ntarget: comfyui\nrules: []\n' >"$T_TMP/none.yaml"
OK=fixtures/comfy/healthy_int8_g64.safetensors
t_run "note" 0 "$STFIX" fix "$OK" -r "$T_TMP/none.yaml" -o "$T_TMP/d.safetensors"
t_stderr_is "note" "stfix: fix: the recipe changes nothing in $OK; the output is its bytes, unstamped (--fail-if-unchanged refuses this)"
t_run "note -q" 0 "$STFIX" fix "$OK" -r "$T_TMP/none.yaml" -o "$T_TMP/e.safetensors" -q
t_true "note -q: stderr empty" test ! -s "$T_ERR"
t_run "error -q" 2 "$STFIX" check "$T_TMP/nope.safetensors" -q
t_stderr_is "error -q" "stfix: check: $T_TMP/nope.safetensors: cannot open: No such file or directory"
t_run "-v" 0 "$STFIX" inspect "$IN" -v
t_stderr_is "-v" "stfix: inspect: $IN: 3 tensors in 1 file(s), 4536 bytes"
t_run "-q -v: the last wins" 0 "$STFIX" inspect "$IN" -q -v
t_stderr_is "-q -v: the last wins" "stfix: inspect: $IN: 3 tensors in 1 file(s), 4536 bytes"
t_run "-v -q: the last wins" 0 "$STFIX" inspect "$IN" -v -q
t_true "-v -q: stderr empty" test ! -s "$T_ERR"
for c in inspect check rewrite plan fix rules diff explain; do
    t_run "$c --help lists -q, -v, --no-progress" 0 "$STFIX" $c --help
    t_stdout_has "$c --help lists -q, -v, --no-progress" "  -q, --quiet"
    t_stdout_has "$c --help lists -q, -v, --no-progress" "  -v, --verbose"
    t_stdout_has "$c --help lists -q, -v, --no-progress" "  --no-progress"
done

# batch on a terminal: checkpoints done of all and the bytes of their inputs
# (66936 + 67289 + 1647 = 132.7 KiB), cleared before the summary; a recipe
# that cannot be loaded clears the line before its error. Piped, or with
# --no-progress: no line.
B=$T_TMP/pbatch
mkdir -p "$B/zoo/sub" "$B/zoo/bset"
cp rules/repair-scales.yaml "$B/recipe.yaml"
cp fixtures/comfy/r15_flat_scale_square.safetensors "$B/zoo/broken.safetensors"
cp fixtures/comfy/healthy_int8_g64.safetensors "$B/zoo/sub/healthy.safetensors"
"$STFIX" rewrite fixtures/comfy/r15_flat_scale_square.safetensors -o "$B/zoo/bset/b.safetensors" \
    --max-shard-size 40000 >/dev/null
# In $B, so the paths fit the terminal's 80 columns.
PTY="python3 $(pwd)/tests/cli/pty_run.py"
HERE=$(pwd)
cd "$B" || exit 1
t_pty "batch on a tty" 0 "$STFIX" batch -r recipe.yaml -o out zoo
t_true "batch on a tty: the first checkpoint" grep -qF \
    "${CR}${ESC}[Kstfix: batch: 0 of 3 checkpoints, 0 B of 132.7 KiB (0%)  zoo/broken" "$T_ERR"
t_true "batch on a tty: all done" grep -qF \
    "${CR}${ESC}[Kstfix: batch: 3 of 3 checkpoints, 132.7 KiB of 132.7 KiB (100%)${CR}${ESC}[Kstfix batch: 3 checkpoint(s)" "$T_ERR"
t_true "batch on a tty: nothing on stdout" test ! -s "$T_OUT"
t_run "batch piped" 0 "$STFIX" batch -r recipe.yaml -o out2 zoo
if grep -q "$CR" "$T_ERR"; then t_notok "batch piped: no progress"; else t_ok "batch piped: no progress"; fi
t_pty "batch --no-progress" 0 "$STFIX" batch -r recipe.yaml -o out3 zoo --no-progress
if grep -q "${ESC}\[K" "$T_ERR"; then t_notok "batch --no-progress: no progress"
else t_ok "batch --no-progress: no progress"; fi
printf '{"input": "zoo/broken.safetensors", "recipe": "nope.yaml"}\n{"input": "zoo/sub/healthy.safetensors"}\n' \
    >m.jsonl
t_pty "batch on a tty, a bad recipe" 2 "$STFIX" batch -r recipe.yaml -o out4 --manifest m.jsonl
t_true "batch on a tty, a bad recipe: the line cleared before the error" grep -qF \
    "broken.safetensors${CR}${ESC}[Kstfix: batch: recipe 'nope.yaml' not found" "$T_ERR"
cd "$HERE" || exit 1
