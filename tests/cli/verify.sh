#!/bin/sh
# stfix verify OUT --from IN -r RECIPE: a good output is identical (exit
# 0); one flipped byte is found and its tensor named (exit 1), the
# expected sha256 then unknown (verify compares the bytes it makes and
# keeps none of them); an output
# stamped by another recipe fails the stamp check; a missing output is
# named; a sharded output gets each shard's lines, its differences under
# it; nothing is ever written; usage errors exit 3.
. tests/cli/lib.sh
D=$T_TMP/verify
mkdir -p "$D"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
HERE=$(pwd)
cp rules/repair-scales.yaml "$D/recipe.yaml"
cp fixtures/comfy/r15_flat_scale_square.safetensors "$D/in.safetensors"
cd "$D" || exit 1
"$S" fix in.safetensors -r recipe.yaml -o out.safetensors >/dev/null
sum=$(t_sha256 out.safetensors)
rsum=$(t_sha256 recipe.yaml)

ls -a >"$T_TMP/before"
t_run "good output" 0 "$S" verify out.safetensors --from in.safetensors -r recipe.yaml
t_stdout_has "good output" "verify out.safetensors (from in.safetensors, recipe recipe.yaml): identical"
t_stdout_has "good output: sha256" "    expected sha256 $sum"
ls -a >"$T_TMP/after"
t_true "nothing written" cmp -s "$T_TMP/before" "$T_TMP/after"

# One byte of a tensor flipped (the last byte of the data section).
cp out.safetensors bad.safetensors
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-1]^=1; open(p,"wb").write(b)' bad.safetensors
t_run "tampered output" 1 "$S" verify bad.safetensors --from in.safetensors -r recipe.yaml
t_stdout_has "tampered output: verdict" "recipe recipe.yaml): DIFFERENT"
t_stdout_has "tampered output: expected" "    expected sha256 unknown"
t_stdout_has "tampered output: actual" "    actual   sha256 $(t_sha256 bad.safetensors)"
last=$("$S" inspect --json bad.safetensors | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(max(d["tensors"], key=lambda t: t["data_offsets"][1])["name"])')
t_stdout_has "tampered output: the tensor" "  tensor '$last': data"
t_run "tampered output, JSON" 1 "$S" verify bad.safetensors --from in.safetensors -r recipe.yaml --json
t_true "tampered output, JSON: fields" python3 -c "
import json, sys
d = json.load(open('$T_OUT'))
assert d['identical'] is False and d['stamp_ok'] is True, d
assert d['stamp'] == '$rsum', d
assert d['files'] == [{'path': 'bad.safetensors', 'expected_sha256': None, 'actual_sha256': '$(t_sha256 bad.safetensors)'}], d
assert d['differences'] == [{'file': 'bad.safetensors', 'tensor': '$last', 'what': 'data'}], d"

# Made by another recipe (same rules, one more comment): the stamp differs.
{ cat recipe.yaml; echo "# another revision"; } >other.yaml
"$S" fix in.safetensors -r other.yaml -o other.safetensors >/dev/null
t_run "other recipe's output" 1 "$S" verify other.safetensors --from in.safetensors -r recipe.yaml
t_stdout_has "other recipe's output: stamp" "  stamp: stfix.recipe_sha256 $(t_sha256 other.yaml), but the recipe's is $rsum"
t_stdout_has "other recipe's output: header" "  differs   other.safetensors
    expected sha256 unknown
    actual   sha256 $(t_sha256 other.safetensors)
    header
"

t_run "missing output" 1 "$S" verify none.safetensors --from in.safetensors -r recipe.yaml
t_stdout_has "missing output" "  missing   none.safetensors"
if grep -q "none.safetensors: missing\|(missing)" "$T_OUT"; then t_notok "missing output: said once"
else t_ok "missing output: said once"; fi
t_absent "missing output: not created" none.safetensors

t_run "no --from" 3 "$S" verify out.safetensors -r recipe.yaml
t_stderr_has "no --from" "no input given (--from IN)"
t_run "no recipe" 3 "$S" verify out.safetensors --from in.safetensors
t_run "unreadable input" 2 "$S" verify out.safetensors --from out.safetensors.nope -r recipe.yaml

# A sharded output: each shard its status and sha256, a shard's differences
# under it; one shard missing, one with a flipped byte in img_in.weight.
python3 "$HERE/tests/gen/gen_quant_ckpt.py" int8-rows m.safetensors 1MiB 256 >/dev/null
R=$HERE/rules/sglang-int8-convrot.yaml
"$S" fix m.safetensors -r "$R" -o sh.safetensors --max-shard-size 600KB >/dev/null
for i in 1 2 3 4; do eval "s$i=\$(t_sha256 sh-0000$i-of-00004.safetensors)"; done
six=$(t_sha256 sh.safetensors.index.json)
t_run "sharded output" 0 "$S" verify sh.safetensors.index.json --from m.safetensors -r "$R" --max-shard-size 600KB
rm sh-00002-of-00004.safetensors
printf 'x' | dd of=sh-00004-of-00004.safetensors bs=1 seek=5000 conv=notrunc 2>/dev/null
t_run "sharded output, two shards bad" 1 "$S" verify sh.safetensors.index.json --from m.safetensors -r "$R" --max-shard-size 600KB
cat >want <<EOF
verify sh.safetensors.index.json (from m.safetensors, recipe $R): DIFFERENT
  identical sh-00001-of-00004.safetensors
    expected sha256 $s1
  missing   sh-00002-of-00004.safetensors
    expected sha256 unknown
  identical sh-00003-of-00004.safetensors
    expected sha256 $s3
  differs   sh-00004-of-00004.safetensors
    expected sha256 unknown
    actual   sha256 $(t_sha256 sh-00004-of-00004.safetensors)
    tensor 'img_in.weight': data
  identical sh.safetensors.index.json
    expected sha256 $six
EOF
t_stdout_is "sharded output, two shards bad" want
