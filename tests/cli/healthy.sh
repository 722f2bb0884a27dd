#!/bin/sh
# A file that needs nothing is not touched, and repair is not conversion:
# fix of a healthy export says "unchanged" and writes its bytes (no stamp),
# --fail-if-unchanged fails, --in-place leaves even the mtime; the repair
# recipes leave accepted FP8 and W4A4 layers alone where the conversion
# recipes requantize them; batch leaves compliant files alone; the bundled
# recipes are found by name from anywhere; a recipe says its kind.
. tests/cli/lib.sh
F=fixtures/comfy
D=$T_TMP
ROOT=$(pwd)
G64=$F/healthy_int8_g64.safetensors

# ------------------------------------------------ fix: nothing to change
# (The recipe as a file without its kind, so that these lines say the same
# of a stfix that does not read kinds.)
grep -v '^kind:' rules/sglang-int8-convrot.yaml >"$D/convrot.yaml"
t_run "healthy fix" 0 "$STFIX" fix "$G64" -r "$D/convrot.yaml" -o "$D/g64.safetensors"
t_stdout_has "healthy fix" "layers: 0 changed, 2 unchanged"
t_stdout_has "healthy fix" "unchanged: the recipe changes nothing; the output is the input's bytes"
# The rules that selected the layer are listed, and say they changed nothing.
t_stdout_has "healthy fix" "  blocks.0.attn.qkv: infer-markers, normalise-markers -> marker already canonical (int8_tensorwise)"
t_true "healthy fix: nothing claimed" sh -c "! grep -q -- '-> marker canonical' '$T_OUT'"
t_stderr_is "healthy fix" "stfix: fix: the recipe changes nothing in $G64; the output is its bytes, unstamped (--fail-if-unchanged refuses this)"
t_true "healthy fix: output is the input's bytes" cmp "$G64" "$D/g64.safetensors"
t_run "healthy fix --fail-if-unchanged" 1 "$STFIX" fix "$G64" -r "$D/convrot.yaml" \
    -o "$D/g64b.safetensors" --fail-if-unchanged
t_stderr_is "healthy fix --fail-if-unchanged" "stfix: fix: the recipe changes nothing in $G64; nothing written (--fail-if-unchanged)"
t_absent "healthy fix --fail-if-unchanged" "$D/g64b.safetensors"
t_run "healthy plan" 0 "$STFIX" plan "$G64" -r "$D/convrot.yaml"
t_stdout_has "healthy plan" "  summary: marker already canonical (int8_tensorwise)"

# --in-place touches nothing: bytes, mtime, no other file beside it.
mkdir "$D/ip"
cp "$G64" "$D/ip/m.safetensors"
touch -d '2001-02-03 04:05:06' "$D/ip/m.safetensors"
before=$(stat -c %Y "$D/ip/m.safetensors")
t_run "--in-place unchanged" 0 "$STFIX" fix "$D/ip/m.safetensors" -r "$D/convrot.yaml" --in-place
t_stdout_has "--in-place unchanged" "unchanged: the recipe changes nothing; the input was not touched"
t_stdout_has "--in-place unchanged" "files: 0 (nothing written)"
t_stderr_is "--in-place unchanged" "stfix: fix: the recipe changes nothing in $D/ip/m.safetensors; it was not touched"
t_true "--in-place unchanged: bytes" cmp "$G64" "$D/ip/m.safetensors"
t_true "--in-place unchanged: mtime" test "$(stat -c %Y "$D/ip/m.safetensors")" = "$before"
t_true "--in-place unchanged: nothing beside it" test "$(ls -A "$D/ip")" = "m.safetensors"

# A file that is not in canonical form is rewritten canonically: a change,
# stamped, though no layer changed.
python3 - "$G64" "$D/loose.safetensors" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.dumps(json.loads(b[8:8 + n])).encode()  # spaces: not canonical
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + b[8 + n:])
EOF
t_run "not canonical" 0 "$STFIX" fix "$D/loose.safetensors" -r sglang-repair -o "$D/canon.safetensors"
t_stdout_has "not canonical" "layers: 0 changed, 2 unchanged"
t_stderr_is "not canonical" "stfix: fix: the recipe changed no layer of $D/loose.safetensors; the output is its canonical rewrite"
t_run "not canonical: stamped" 0 "$STFIX" inspect "$D/canon.safetensors"
t_stdout_has "not canonical: stamped" "stfix.recipe_sha256: $(t_sha256 rules/sglang-repair.yaml)"
t_run "not canonical --fail-if-unchanged" 0 "$STFIX" fix "$D/loose.safetensors" -r sglang-repair \
    -o "$D/canon2.safetensors" --fail-if-unchanged

# ------------------------------------------------ repair is not conversion
for h in healthy_fp8 healthy_w4a4 healthy_mixed_int8_w4a4; do
    t_run "sglang-repair $h" 0 "$STFIX" fix "$F/$h.safetensors" -r sglang-repair \
        -o "$D/$h.safetensors"
    t_true "sglang-repair $h: the input's bytes" cmp "$F/$h.safetensors" "$D/$h.safetensors"
    t_run "comfyui-repair $h" 0 "$STFIX" fix "$F/$h.safetensors" -r comfyui-repair \
        -o "$D/$h.c.safetensors"
    t_true "comfyui-repair $h: the input's bytes" cmp "$F/$h.safetensors" "$D/$h.c.safetensors"
done
t_run "conversion requantizes FP8" 0 "$STFIX" fix "$F/healthy_fp8.safetensors" \
    -r sglang-int8-convrot -o "$D/fp8.i8.safetensors"
t_stdout_has "conversion requantizes FP8" "  blocks.0.attn.qkv: requantize-other-formats -> requantize to int8_tensorwise, G=64"

# An INT8 layer without a marker (R10): SGLang takes only ConvRot, so its
# repair requantizes; ComfyUI runs it as it is once set-marker adds the
# marker the tensors imply.
t_run "R10 sglang-repair" 0 "$STFIX" fix "$F/r10_no_marker.safetensors" -r sglang-repair \
    -o "$D/r10.s.safetensors"
t_stdout_has "R10 sglang-repair" "  blocks.0.attn.qkv: requantize-unmarked-int8 -> requantize to int8_tensorwise, G=256"
t_run "R10 sglang-repair: check" 0 "$STFIX" check "$D/r10.s.safetensors" --target sglang
t_run "R10 comfyui-repair" 0 "$STFIX" fix "$F/r10_no_marker.safetensors" -r comfyui-repair \
    -o "$D/r10.c.safetensors"
t_stdout_has "R10 comfyui-repair" "  blocks.0.attn.qkv: add-missing-markers -> marker canonical (int8_tensorwise)"
t_run "R10 comfyui-repair: check" 0 "$STFIX" check "$D/r10.c.safetensors" --target comfyui

# ------------------------------------------------ batch leaves compliant files alone
# Every file check passes is compliant and nothing is written for it.
t_run "batch sglang-repair" 1 "$STFIX" batch -r sglang-repair -o "$D/bs" "$F"
t_stderr_has "batch sglang-repair" "  fixed          33
  compliant      10
  failed         19"
t_stderr_has "batch sglang-repair" "  left alone 10: compliant, nothing written for them"
t_true "batch sglang-repair: nothing written for the healthy" \
    sh -c "! ls '$D/bs' | grep -q -e '^healthy' -e '^probe_bad' -e '^probe_syl'"
cat >"$D/compliant.txt" <<'EOF'
healthy_fp8.safetensors
healthy_int8_g16.safetensors
healthy_int8_g256.safetensors
healthy_int8_g64.safetensors
healthy_meta_only.safetensors
healthy_mixed_int8_w4a4.safetensors
healthy_sharded.safetensors.index.json
healthy_w4a4.safetensors
probe_bad_scales.safetensors
probe_sylvester_data.safetensors
EOF
compliant() { # REPORT: the inputs it reports compliant, by file name
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["status"] == "compliant" and d["output"] is None: print(d["input"].split("/")[-1])' "$1"
}
compliant "$D/bs/stfix-report.jsonl" >"$D/got.txt"
t_true "batch sglang-repair: the files check passes are compliant" cmp "$D/compliant.txt" "$D/got.txt"
t_run "batch comfyui-repair" 1 "$STFIX" batch -r comfyui-repair -o "$D/bc" "$F"
t_stderr_has "batch comfyui-repair" "  left alone 22: compliant, nothing written for them"
compliant "$D/bc/stfix-report.jsonl" | grep -e '^healthy' -e '^probe' >"$D/got.txt"
t_true "batch comfyui-repair: the files check passes are compliant" cmp "$D/compliant.txt" "$D/got.txt"
# The default recipe is sglang-repair.
t_run "batch default recipe" 0 "$STFIX" batch -o "$D/bd" "$G64"
t_true "batch default recipe: sglang-repair" grep -q '"recipe":"sglang-repair","recipe_sha256":"'"$(t_sha256 rules/sglang-repair.yaml)"'"' "$D/bd/stfix-report.jsonl"
t_true "batch default recipe: nothing written" test "$(ls "$D/bd")" = "stfix-report.jsonl"
# --copy-compliant copies (never a hard link); with --link-compliant, exit 3.
t_run "batch --copy-compliant" 0 "$STFIX" batch -r sglang-repair -o "$D/bk" "$G64" --copy-compliant
t_stderr_has "batch --copy-compliant" "  left alone 1: compliant, copied to the output (--copy-compliant)"
t_true "batch --copy-compliant: a copy" cmp "$G64" "$D/bk/healthy_int8_g64.safetensors"
t_true "batch --copy-compliant: not a link" test "$(stat -c %h "$D/bk/healthy_int8_g64.safetensors")" = 1
t_run "batch --link and --copy" 3 "$STFIX" batch -r sglang-repair -o "$D/bl" "$G64" \
    --copy-compliant --link-compliant
t_stderr_has "batch --link and --copy" "give --link-compliant or --copy-compliant, not both"

# ------------------------------------------------ recipes by name from anywhere
# Outside the tree (and without an installed copy) the built-in recipes
# answer, as NAME or NAME.yaml; a copy of the program alone finds them too.
mkdir "$D/away"
cp "$STFIX" "$D/away/stfix-alone"
if [ ! -d /usr/local/share/stfix/rules ]; then
cat >"$D/list.txt" <<'EOF'
comfyui-int8-convrot         conversion  (built-in)/comfyui-int8-convrot.yaml         Convert for ComfyUI to INT8 ConvRot; requantizes the layers ComfyUI cannot run (comfyui-repair only repairs).
comfyui-repair               repair      (built-in)/comfyui-repair.yaml               Repair for ComfyUI; changes only what ComfyUI refuses or misloads, leaves accepted layers byte for byte.
exclude-conv-and-embeddings  conversion  (built-in)/exclude-conv-and-embeddings.yaml  Dequantize conv kernels and embeddings to BF16 and drop their markers (a conversion).
migrate-scaled-fp8           conversion  (built-in)/migrate-scaled-fp8.yaml           Legacy scaled FP8 (scaled_fp8, scale_weight, scale_input) to comfy_quant markers (no requantization).
quantize-int8-convrot        conversion  (built-in)/quantize-int8-convrot.yaml        Convert an unquantized checkpoint to INT8 ConvRot (G = 256, 64, 16); quantizes every Linear.
repair-scales                repair      (built-in)/repair-scales.yaml                Header-only fixes of scale shapes and dtypes (no requantization).
sglang-int8-convrot          conversion  (built-in)/sglang-int8-convrot.yaml          Convert for SGLang to INT8 ConvRot (R1-R43); requantizes FP8, W4A4 and other formats too (sglang-repair only repairs).
sglang-int8-convrot-tp8      conversion  (built-in)/sglang-int8-convrot-tp8.yaml      Convert for SGLang to INT8 ConvRot ready for TP 8 (R1-R43, T2); requantizes FP8, W4A4 and other formats too.
sglang-repair                repair      (built-in)/sglang-repair.yaml                Repair for SGLang; changes only what SGLang refuses or misloads, leaves accepted layers (FP8, W4A4 too) byte for byte.
EOF
t_run "rules list away" 0 sh -c "cd '$D/away' && env -u STFIX_RULES_PATH ./stfix-alone rules list"
t_stdout_is "rules list away" "$D/list.txt"
t_run "rules list --json away" 0 sh -c "cd '$D/away' && env -u STFIX_RULES_PATH ./stfix-alone rules list --json"
t_stdout_has "rules list --json away" '  {"name": "sglang-repair", "kind": "repair", "path": "(built-in)/sglang-repair.yaml", "description": "Repair for SGLang; changes only what SGLang refuses or misloads, leaves accepted layers (FP8, W4A4 too) byte for byte."}'
for r in sglang-int8-convrot sglang-int8-convrot.yaml sglang-int8-convrot.yml; do
    t_run "-r $r away" 0 sh -c "cd '$D/away' && env -u STFIX_RULES_PATH ./stfix-alone plan '$ROOT/$G64' -r $r --json"
    t_stdout_has "-r $r away" '"recipe_sha256": "'"$(t_sha256 rules/sglang-int8-convrot.yaml)"'"'
done
# A ./rules of another project, without the recipe, does not hide the built-in one.
mkdir "$D/other" "$D/other/rules"
cp "$STFIX" "$D/other/stfix-alone"
t_run "-r NAME.yaml, another ./rules" 0 sh -c "cd '$D/other' && env -u STFIX_RULES_PATH ./stfix-alone plan '$ROOT/$G64' -r sglang-int8-convrot.yaml --json"
t_stdout_has "-r NAME.yaml, another ./rules" '"recipe_sha256": "'"$(t_sha256 rules/sglang-int8-convrot.yaml)"'"'
t_run "fix -r sglang-repair away" 0 sh -c "cd '$D/away' && env -u STFIX_RULES_PATH ./stfix-alone fix '$ROOT/$G64' -r sglang-repair -o out.safetensors"
t_true "fix -r sglang-repair away: the input's bytes" cmp "$G64" "$D/away/out.safetensors"
t_run "miss away" 2 sh -c "cd '$D/away' && env -u STFIX_RULES_PATH ./stfix-alone plan '$ROOT/$G64' -r nope.yaml"
t_stderr_is "miss away" "stfix: plan: recipe 'nope.yaml' not found (searched nope.yaml in: /usr/local/share/stfix/rules, ./rules; and the built-in recipes)"
fi
# A file on the search path comes before the built-in recipe of its name.
mkdir "$D/mine"
printf 'stfix: 1\nkind: repair\ntarget: comfyui\ndescription: mine\nrules: []\n' >"$D/mine/sglang-repair.yaml"
t_run "search path first" 0 env STFIX_RULES_PATH="$D/mine" "$STFIX" rules list
t_stdout_has "search path first" "sglang-repair                repair      $D/mine/sglang-repair.yaml"

# ------------------------------------------------ kind
printf 'stfix: 1\nkind: fix\ntarget: sglang\nrules: []\n' >"$D/bad-kind.yaml"
t_run "kind: fix" 2 "$STFIX" rules lint "$D/bad-kind.yaml"
t_stderr_has "kind: fix" "$D/bad-kind.yaml:2:7: kind: expected repair or conversion, got 'fix'"
printf 'stfix: 1\ntarget: sglang\nrules: []\n' >"$D/no-kind.yaml"
t_run "no kind" 0 env STFIX_RULES_PATH="$D" "$STFIX" rules list
t_true "no kind: shown as -" grep -q '^no-kind  *-  ' "$T_OUT"
