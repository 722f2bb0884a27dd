# CLI scenarios for `stfix rules lint`: every bundled recipe is valid, a broken
# recipe gives exit 2 and every problem as FILE:LINE:COL: message on stderr,
# usage errors give exit 3.
. tests/cli/lib.sh

for f in rules/*.yaml; do
    t_run "lint $f" 0 "$STFIX" rules lint "$f"
done

t_run "lint all bundled" 0 "$STFIX" rules lint rules/sglang-int8-convrot.yaml \
    rules/comfyui-int8-convrot.yaml rules/repair-scales.yaml \
    rules/exclude-conv-and-embeddings.yaml rules/quantize-int8-convrot.yaml
cat >"$T_TMP/ok.txt" <<'EOF2'
rules/sglang-int8-convrot.yaml: ok (17 rules)
rules/comfyui-int8-convrot.yaml: ok (18 rules)
rules/repair-scales.yaml: ok (4 rules)
rules/exclude-conv-and-embeddings.yaml: ok (3 rules)
rules/quantize-int8-convrot.yaml: ok (3 rules)
EOF2
t_stdout_is "lint all bundled" "$T_TMP/ok.txt"

# A broken recipe: one line per problem, in document order, exit 2.
cat >"$T_TMP/broken.yaml" <<'EOF2'
stfix: 1
target: [sglang, comfyui]
rules:
  - name: cast
    match: {scale_dtype: [BF16, F16]}
    do: cast-scale
  - name: bad
    match:
      prefix: "blocks.*.attn"
      dtyp: I8
      shape: "K % 16 = 0"
    do:
      - {exclude: {dtype: F8}}
      - requant
EOF2
cat >"$T_TMP/broken.err" <<EOF2
$T_TMP/broken.yaml:10:7: rules[1].match: unknown key 'dtyp' (expected one of: prefix, regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, probe, rotation, not)
$T_TMP/broken.yaml:11:22: rules[1].match.shape: invalid predicate 'K % 16 = 0': unexpected '= 0'
$T_TMP/broken.yaml:13:27: rules[1].do[0].exclude.dtype: expected one of BF16, F16, F32, source, got 'F8'
$T_TMP/broken.yaml:14:9: rules[1].do[1]: unknown action 'requant' (expected one of: reshape-scale, transpose-scale, flatten-conv, exclude, rewrite-format, set-marker, cast-scale, relabel, requantize, rename, drop)
EOF2
t_run "broken recipe" 2 "$STFIX" rules lint "$T_TMP/broken.yaml"
if cmp -s "$T_ERR" "$T_TMP/broken.err"; then t_ok "broken recipe: stderr"
else t_notok "broken recipe: stderr" "got: $(cat "$T_ERR")"; fi
if [ -s "$T_OUT" ]; then t_notok "broken recipe: no stdout" "stdout: $(cat "$T_OUT")"
else t_ok "broken recipe: no stdout"; fi

# The count is always written "N rules", also for one.
printf 'stfix: 1\ntarget: comfyui\nrules:\n  - {name: a, match: {}, do: cast-scale}\n' >"$T_TMP/one.yaml"
t_run "one rule" 0 "$STFIX" rules lint "$T_TMP/one.yaml"
printf '%s: ok (1 rules)\n' "$T_TMP/one.yaml" >"$T_TMP/one.txt"
t_stdout_is "one rule" "$T_TMP/one.txt"

# A valid file next to a broken one: the valid one is still reported, exit 2.
printf 'stfix: 2\ntarget: sglang\nrules: []\n' >"$T_TMP/v2.yaml"
t_run "mixed" 2 "$STFIX" rules lint rules/repair-scales.yaml "$T_TMP/v2.yaml"
t_stdout_has "mixed" "rules/repair-scales.yaml: ok (4 rules)"
t_stderr_is "mixed" "$T_TMP/v2.yaml:1:8: stfix: unsupported recipe format version 2 (this stfix reads version 1)"

# YAML syntax errors carry the position too.
printf 'stfix: 1\ntarget: [sglang\n' >"$T_TMP/syntax.yaml"
t_run "syntax" 2 "$STFIX" rules lint "$T_TMP/syntax.yaml"
t_stderr_is "syntax" "$T_TMP/syntax.yaml:3:1: YAML syntax error: did not find expected ',' or ']' while parsing a flow sequence"

# Unreadable input is exit 2; command-line mistakes are exit 3.
t_run "missing file" 2 "$STFIX" rules lint "$T_TMP/nope.yaml"
t_stderr_is "missing file" "stfix: rules: $T_TMP/nope.yaml: cannot open: No such file or directory"
t_run "no file" 3 "$STFIX" rules lint
t_stderr_is "no file" "stfix: rules: lint: no recipe file given"
t_run "unknown subcommand" 3 "$STFIX" rules check x.yaml
t_stderr_is "unknown subcommand" "stfix: rules: unknown subcommand 'check' (expected: lint)"
t_run "help" 0 "$STFIX" rules --help
t_stdout_has "help" "usage: stfix rules lint FILE..."
