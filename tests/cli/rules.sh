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
rules/sglang-int8-convrot.yaml: ok (19 rules)
rules/comfyui-int8-convrot.yaml: ok (25 rules)
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
$T_TMP/broken.yaml:10:7: rules[1].match: unknown key 'dtyp' (expected one of: prefix, regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, probe, rotation, parallel, not)
$T_TMP/broken.yaml:11:22: rules[1].match.shape: invalid predicate 'K % 16 = 0': unexpected '= 0'
$T_TMP/broken.yaml:13:27: rules[1].do[0].exclude.dtype: expected one of BF16, F16, F32, source, got 'F8'
$T_TMP/broken.yaml:14:9: rules[1].do[1]: unknown action 'requant' (expected one of: reshape-scale, transpose-scale, flatten-conv, exclude, rewrite-format, set-marker, cast-scale, relabel, requantize, rename, drop, migrate-scaled-fp8, infer-marker)
EOF2
t_run "broken recipe" 2 "$STFIX" rules lint "$T_TMP/broken.yaml"
if cmp -s "$T_ERR" "$T_TMP/broken.err"; then t_ok "broken recipe: stderr"
else t_notok "broken recipe: stderr" "got: $(cat "$T_ERR")"; fi
if [ -s "$T_OUT" ]; then t_notok "broken recipe: no stdout" "stdout: $(cat "$T_OUT")"
else t_ok "broken recipe: no stdout"; fi

# The count is always written "N rules", also for one.
printf 'stfix: 1\ntarget: comfyui\nrules:\n  - {name: a, match: {}, do: cast-scale}\n' >"$T_TMP/one.yaml"
t_run "one rule" 0 "$STFIX" rules lint "$T_TMP/one.yaml"
printf '%s: ok (1 rule)\n' "$T_TMP/one.yaml" >"$T_TMP/one.txt"
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
t_stderr_is "unknown subcommand" "stfix: rules: unknown subcommand 'check' (expected: lint, show, list)"
t_run "help" 0 "$STFIX" rules --help
t_stdout_has "help" "usage: stfix rules lint FILE..."

# `stfix rules list`: the recipes -r NAME finds, from the source tree here
# (the installed directory of this build is left out when it exists).
if [ ! -d /usr/local/share/stfix/rules ]; then
cat >"$T_TMP/list.txt" <<'EOF2'
comfyui-int8-convrot         conversion  ./rules/comfyui-int8-convrot.yaml         Convert for ComfyUI to INT8 ConvRot; requantizes the layers ComfyUI cannot run (comfyui-repair only repairs).
comfyui-repair               repair      ./rules/comfyui-repair.yaml               Repair for ComfyUI; changes only what ComfyUI refuses or misloads, leaves accepted layers byte for byte.
exclude-conv-and-embeddings  conversion  ./rules/exclude-conv-and-embeddings.yaml  Dequantize conv kernels and embeddings to BF16 and drop their markers (a conversion).
migrate-scaled-fp8           conversion  ./rules/migrate-scaled-fp8.yaml           Legacy scaled FP8 (scaled_fp8, scale_weight, scale_input) to comfy_quant markers (no requantization).
quantize-int8-convrot        conversion  ./rules/quantize-int8-convrot.yaml        Convert an unquantized checkpoint to INT8 ConvRot (G = 256, 64, 16); quantizes every Linear.
repair-scales                repair      ./rules/repair-scales.yaml                Header-only fixes of scale shapes and dtypes (no requantization).
sglang-int8-convrot          conversion  ./rules/sglang-int8-convrot.yaml          Convert for SGLang to INT8 ConvRot (R1-R43); requantizes FP8, W4A4 and other formats too (sglang-repair only repairs).
sglang-int8-convrot-tp8      conversion  ./rules/sglang-int8-convrot-tp8.yaml      Convert for SGLang to INT8 ConvRot ready for TP 8 (R1-R43, T2); requantizes FP8, W4A4 and other formats too.
sglang-repair                repair      ./rules/sglang-repair.yaml                Repair for SGLang; changes only what SGLang refuses or misloads, leaves accepted layers (FP8, W4A4 too) byte for byte.
EOF2
t_run "list" 0 env -u STFIX_RULES_PATH "$STFIX" rules list
t_stdout_is "list" "$T_TMP/list.txt"
t_run "list json" 0 env -u STFIX_RULES_PATH "$STFIX" rules list --json
t_stdout_has "list json" '  {"name": "repair-scales", "kind": "repair", "path": "./rules/repair-scales.yaml", "description": "Header-only fixes of scale shapes and dtypes (no requantization)."},'
if command -v python3 >/dev/null 2>&1; then
    t_true "list json parses" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [e["name"] for e in d] == ["comfyui-int8-convrot", "comfyui-repair", "exclude-conv-and-embeddings", "migrate-scaled-fp8", "quantize-int8-convrot", "repair-scales", "sglang-int8-convrot", "sglang-int8-convrot-tp8", "sglang-repair"]' "$T_OUT"
fi
fi

# $STFIX_RULES_PATH comes first, in order; the first NAME.yaml wins; an
# empty entry adds nothing; a recipe without a description shows "-".
mkdir -p "$T_TMP/ra" "$T_TMP/rb"
printf 'stfix: 1\ntarget: comfyui\ndescription: mine\nrules:\n  - {name: a, match: {}, do: cast-scale}\n' \
    >"$T_TMP/ra/repair-scales.yaml"
printf 'stfix: 1\ntarget: comfyui\nrules:\n  - {name: a, match: {}, do: cast-scale}\n' >"$T_TMP/rb/repair-scales.yaml"
cp "$T_TMP/rb/repair-scales.yaml" "$T_TMP/rb/aaa.yaml"
t_run "list path" 0 env STFIX_RULES_PATH="$T_TMP/ra::$T_TMP/rb" "$STFIX" rules list
t_stdout_has "list path" "repair-scales                -           $T_TMP/ra/repair-scales.yaml"
t_stdout_has "list path" "  mine"
t_true "list path: aaa first, no description" sh -c "head -n 1 '$T_OUT' | grep -q '^aaa  *-  *$T_TMP/rb/aaa.yaml  *-\$'"
t_true "list path: sglang from the source tree" grep -qF "./rules/sglang-int8-convrot.yaml" "$T_OUT"
t_run "plan -r NAME from STFIX_RULES_PATH" 0 env STFIX_RULES_PATH="$T_TMP/rb:$T_TMP/ra" \
    "$STFIX" plan fixtures/comfy/r14_scale_bf16.safetensors -r aaa --json
t_stdout_has "plan -r NAME from STFIX_RULES_PATH" '"recipe_sha256": "'"$(sha256sum "$T_TMP/rb/aaa.yaml" | cut -c1-64)"'"'

# From the source tree: -r NAME is ./rules/NAME.yaml.
t_run "plan -r NAME from the source tree" 0 env -u STFIX_RULES_PATH \
    "$STFIX" plan fixtures/comfy/r14_scale_bf16.safetensors -r repair-scales --json
t_stdout_has "plan -r NAME from the source tree" '"recipe_sha256": "'"$(sha256sum rules/repair-scales.yaml | cut -c1-64)"'"'
t_run "fix -r NAME from the source tree" 0 env -u STFIX_RULES_PATH \
    "$STFIX" fix fixtures/comfy/r14_scale_bf16.safetensors -r repair-scales -o "$T_TMP/fixed.safetensors"

# A miss names every directory searched, exit 2; a path (a '/', or a
# .yaml file that is there) is never looked up; NAME.yaml that is no file
# here is the recipe NAME.
t_run "miss" 2 env STFIX_RULES_PATH="$T_TMP/ra:$T_TMP/rb" \
    "$STFIX" plan fixtures/comfy/r14_scale_bf16.safetensors -r nope
t_stderr_is "miss" "stfix: plan: recipe 'nope' not found (searched nope.yaml in: $T_TMP/ra, $T_TMP/rb, /usr/local/share/stfix/rules, ./rules; and the built-in recipes)"
t_run "miss (fix, json)" 2 env -u STFIX_RULES_PATH \
    "$STFIX" fix fixtures/comfy/r14_scale_bf16.safetensors -r nope -o "$T_TMP/x.safetensors" --json
t_stdout_has "miss (fix, json)" '"code": "STF_ENOTFOUND"'
t_run "a .yaml is a name" 2 env STFIX_RULES_PATH="$T_TMP/ra" \
    "$STFIX" plan fixtures/comfy/r14_scale_bf16.safetensors -r aaa.yaml
t_stderr_is "a .yaml is a name" "stfix: plan: recipe 'aaa.yaml' not found (searched aaa.yaml in: $T_TMP/ra, /usr/local/share/stfix/rules, ./rules; and the built-in recipes)"
t_run "a .yaml is a name: found" 0 env STFIX_RULES_PATH="$T_TMP/rb" \
    "$STFIX" plan fixtures/comfy/r14_scale_bf16.safetensors -r aaa.yaml --json
t_stdout_has "a .yaml is a name: found" '"recipe_sha256": "'"$(sha256sum "$T_TMP/rb/aaa.yaml" | cut -c1-64)"'"'
t_run "a ./x.yaml is a path" 2 env STFIX_RULES_PATH="$T_TMP/rb" \
    "$STFIX" plan fixtures/comfy/r14_scale_bf16.safetensors -r ./aaa.yaml
t_stderr_is "a ./x.yaml is a path" "stfix: plan: ./aaa.yaml: cannot open: No such file or directory"
t_run "list: extra argument" 3 "$STFIX" rules list x
t_run "help lists list" 0 "$STFIX" rules --help
t_stdout_has "help lists list" "stfix rules list [--json]"

# lint warns about a regex that repeats a group holding a repeat, at the
# group; the recipe stays valid (exit 0), and -q leaves the warning out.
printf 'stfix: 1\ntarget: comfyui\nrules:\n  - name: r\n    match: {regex: "^x(a+)+$"}\n    do: cast-scale\n  - {name: s, match: {regex: "(a++)+|(a*)?"}, do: cast-scale}\n' >"$T_TMP/nested.yaml"
t_run "lint nested repeat" 0 "$STFIX" rules lint "$T_TMP/nested.yaml"
t_stderr_is "lint nested repeat" "$T_TMP/nested.yaml:5:23: rules[0].match.regex: warning: '^x(a+)+\$' repeats a group that holds a repeat: a search may try exponentially many ways to split a name it does not match; remove one of the repeats, or make the inner one possessive (a++)"
printf '%s: ok (2 rules)\n' "$T_TMP/nested.yaml" >"$T_TMP/nested.txt"
t_stdout_is "lint nested repeat" "$T_TMP/nested.txt"
t_run "lint nested repeat -q" 0 "$STFIX" rules lint -q "$T_TMP/nested.yaml"
t_true "lint nested repeat -q: nothing on stderr" test ! -s "$T_ERR"
