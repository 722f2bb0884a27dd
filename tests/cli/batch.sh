#!/bin/sh
# stfix batch over a zoo holding a broken single file, one the recipe
# cannot make compliant, a healthy one, a broken sharded set, a healthy
# sharded set and an unreadable checkpoint (a dangling link): the exact report lines (seconds masked), the outputs, the
# summary, exit codes, --dry-run, --link-compliant, --shard splits and
# manifests. The kill-and-resume scenario is tests/cli/batch_resume.sh.
. tests/cli/lib.sh
D=$T_TMP/batch
mkdir -p "$D/zoo/sub" "$D/zoo/set" "$D/zoo/bset"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
F=$(pwd)/fixtures/comfy
cp rules/repair-scales.yaml "$D/recipe.yaml"
cp "$F/r15_flat_scale_square.safetensors" "$D/zoo/broken.safetensors"
cp "$F/r10_no_marker.safetensors" "$D/zoo/nomarker.safetensors"
cp "$F/healthy_int8_g64.safetensors" "$D/zoo/sub/healthy.safetensors"
cp "$F"/healthy_sharded* "$D/zoo/set/"
"$S" rewrite "$F/r15_flat_scale_square.safetensors" -o "$D/zoo/bset/b.safetensors" \
    --max-shard-size 40000 >/dev/null
ln -s "$D/nowhere" "$D/zoo/gone.safetensors"
VER=$("$S" -V | sed 's/^stfix //')
mask() { sed 's/"seconds":[0-9.]*/"seconds":S/' "$1"; }

cd "$D" || exit 1
t_run "batch over the zoo" 1 "$S" batch -r recipe.yaml -o out zoo
sed "s/@VER@/$VER/g" >"$D/expect" <<'LINES'
{"input":"zoo/broken.safetensors","input_files":[{"path":"zoo/broken.safetensors","sha256":"b2e757e611d454516380f6089582bd6a732a0be25fc95090bedbe5e687d3eb1e"}],"output":"out/broken.safetensors","output_files":[{"path":"out/broken.safetensors","sha256":"2bed70c7864c8bf3735aab15b1d5bfa2f781d7afa3fe5a81bab62802bd1680a4"}],"recipe":"recipe.yaml","recipe_sha256":"eed183aab9dc32337e90e0ae950c8f34a4695dc4a738b6f0a1e747946f83eb21","stfix_version":"@VER@","status":"fixed","error":null,"findings_before":{"C9":1,"R15":1},"findings_after":{},"actions":[{"layer":"blocks.0.attn.qkv","actions":["reshape-scale"]}],"bytes_read":66936,"bytes_written":67056,"seconds":S}
{"input":"zoo/bset/b.safetensors.index.json","input_files":[{"path":"zoo/bset/b.safetensors.index.json","sha256":"fc6227d56b113b09746c27ec4b782fb6eb1a7ba583072a0db0e1203ea6a3973f"},{"path":"zoo/bset/b-00001-of-00003.safetensors","sha256":"56cd1ded2ddc3277281853e8e764d66154babb63934a7c61f195d3fa6eb42bd2"},{"path":"zoo/bset/b-00002-of-00003.safetensors","sha256":"793f431af0ca3b2f978dfac405431736af5310006808d99b88b7324fbfc3dc2d"},{"path":"zoo/bset/b-00003-of-00003.safetensors","sha256":"c8b71d2bf9dbb4192cbec78cd1d9de989178e4d50c35b21560d30c5f1e69c172"}],"output":"out/bset/b.safetensors","output_files":[{"path":"out/bset/b.safetensors","sha256":"2bed70c7864c8bf3735aab15b1d5bfa2f781d7afa3fe5a81bab62802bd1680a4"}],"recipe":"recipe.yaml","recipe_sha256":"eed183aab9dc32337e90e0ae950c8f34a4695dc4a738b6f0a1e747946f83eb21","stfix_version":"@VER@","status":"fixed","error":null,"findings_before":{"C9":1,"R15":1},"findings_after":{},"actions":[{"layer":"blocks.0.attn.qkv","actions":["reshape-scale"]}],"bytes_read":67289,"bytes_written":67056,"seconds":S}
{"input":"zoo/gone.safetensors","input_files":[{"path":"zoo/gone.safetensors","sha256":null}],"output":null,"output_files":[],"recipe":"recipe.yaml","recipe_sha256":"eed183aab9dc32337e90e0ae950c8f34a4695dc4a738b6f0a1e747946f83eb21","stfix_version":"@VER@","status":"failed","error":{"rule":null,"message":"zoo/gone.safetensors: cannot open: No such file or directory"},"findings_before":{},"findings_after":{},"actions":[],"bytes_read":0,"bytes_written":0,"seconds":S}
{"input":"zoo/nomarker.safetensors","input_files":[{"path":"zoo/nomarker.safetensors","sha256":"dfcc8566f3a38a702e35ece4d3d6038b68c6b661bd21a5f6ebcfc8a8b0c24202"}],"output":null,"output_files":[],"recipe":"recipe.yaml","recipe_sha256":"eed183aab9dc32337e90e0ae950c8f34a4695dc4a738b6f0a1e747946f83eb21","stfix_version":"@VER@","status":"failed","error":{"rule":"R10","message":"out/nomarker.safetensors: the output would not pass the sglang profile: R10: Quantized weights are missing comfy_quant metadata: ['blocks.0.attn.qkv']; fix: add a comfy_quant marker to each layer, or dequantize those weights to BF16 (nothing was written; --allow-noncompliant keeps it)"},"findings_before":{"C1":1,"R10":1},"findings_after":{"C1":1,"R10":1},"actions":[],"bytes_read":4376,"bytes_written":0,"seconds":S}
{"input":"zoo/set/healthy_sharded.safetensors.index.json","input_files":[{"path":"zoo/set/healthy_sharded.safetensors.index.json","sha256":"36db23eed2ec2334a034d13672fcd795e6b62a345b8e16196c93f4d77211a598"},{"path":"zoo/set/healthy_sharded-00001-of-00002.safetensors","sha256":"66d878e64ffb05432ca53674ab4ba760238e19662aa299b1c003a7c93dc72172"},{"path":"zoo/set/healthy_sharded-00002-of-00002.safetensors","sha256":"762aa9369a9e47d0c95e366157092063de15d754beffe67c3ebec237dfb94c89"}],"output":null,"output_files":[],"recipe":"recipe.yaml","recipe_sha256":"eed183aab9dc32337e90e0ae950c8f34a4695dc4a738b6f0a1e747946f83eb21","stfix_version":"@VER@","status":"compliant","error":null,"findings_before":{},"findings_after":{},"actions":[],"bytes_read":7900,"bytes_written":0,"seconds":S}
{"input":"zoo/sub/healthy.safetensors","input_files":[{"path":"zoo/sub/healthy.safetensors","sha256":"645407efa83e70900637971b77344f6b5fc0a3150990b9e1ade2f4be274b11ef"}],"output":null,"output_files":[],"recipe":"recipe.yaml","recipe_sha256":"eed183aab9dc32337e90e0ae950c8f34a4695dc4a738b6f0a1e747946f83eb21","stfix_version":"@VER@","status":"compliant","error":null,"findings_before":{},"findings_after":{},"actions":[],"bytes_read":1647,"bytes_written":0,"seconds":S}
LINES
mask out/stfix-report.jsonl >"$D/got"
t_true "report lines, exactly" cmp -s "$D/got" "$D/expect"
cmp -s "$D/got" "$D/expect" || diff "$D/expect" "$D/got" | head -20 | sed 's/^/#   /'
t_stderr_has "summary" "stfix batch: 6 checkpoint(s)"
t_stderr_has "summary: fixed" "  fixed           2"
t_stderr_has "summary: compliant" "  compliant       2"
t_stderr_has "summary: failed" "  failed          2"
t_stderr_has "summary: the failure" "  failed zoo/gone.safetensors: zoo/gone.safetensors: cannot open"
t_true "outputs mirror the tree" test -f out/broken.safetensors -a -f out/bset/b.safetensors
t_absent "no output for a compliant checkpoint" out/sub/healthy.safetensors
t_absent "no output for the unreadable one" out/gone.safetensors
t_absent "no output for the non-compliant one" out/nomarker.safetensors
t_stderr_has "summary: still non-compliant" "  failed zoo/nomarker.safetensors: R10: out/nomarker.safetensors: the output would not pass the sglang profile"
t_no_temp "no temp file in out" out
t_true "the fixed output checks clean" sh -c "'$S' check out/broken.safetensors >/dev/null"
t_true "the fixed output is fix's output" sh -c \
    "'$S' fix zoo/broken.safetensors -r recipe.yaml -o ref.safetensors >/dev/null && cmp ref.safetensors out/broken.safetensors"

# Nothing failing: exit 0; a file root counts as one checkpoint.
t_run "healthy and broken files" 0 "$S" batch -r recipe.yaml -o out2 zoo/broken.safetensors zoo/sub/healthy.safetensors
t_true "two report lines" test "$(wc -l <out2/stfix-report.jsonl)" -eq 2

# --dry-run writes nothing; the lines go to stdout, a needed repair as skipped.
t_run "dry run" 1 "$S" batch -r recipe.yaml --dry-run zoo
t_absent "dry run: no output directory" out3
t_true "dry run: skipped lines" test "$(grep -c '"status":"skipped"' "$T_OUT")" -eq 3
t_stdout_has "dry run: planned actions" '"actions":[{"layer":"blocks.0.attn.qkv","actions":["reshape-scale"]}]'

# --link-compliant: hard links of the compliant files, sharded sets whole.
t_run "link compliant" 1 "$S" batch -r recipe.yaml -o out4 --link-compliant zoo
t_true "linked single file" test out4/sub/healthy.safetensors -ef zoo/sub/healthy.safetensors
t_true "linked index" test out4/set/healthy_sharded.safetensors.index.json -ef zoo/set/healthy_sharded.safetensors.index.json
t_true "linked shard" test out4/set/healthy_sharded-00002-of-00002.safetensors -ef zoo/set/healthy_sharded-00002-of-00002.safetensors
t_true "report names the link" grep -qF '"output":"out4/sub/healthy.safetensors"' out4/stfix-report.jsonl

# --shard K/N: 2 and 3 runs cover the set exactly once.
for n in 2 3; do
    k=1
    : >"$D/union$n"
    while [ $k -le $n ]; do
        "$S" batch -r recipe.yaml -o "sh$n" --shard $k/$n --report "sh$n-$k.jsonl" zoo 2>/dev/null
        sed 's/^{"input":"\([^"]*\)".*/\1/' "sh$n-$k.jsonl" >>"$D/union$n"
        k=$((k + 1))
    done
    sort "$D/union$n" >"$D/union$n.s"
    sed 's/^{"input":"\([^"]*\)".*/\1/' out/stfix-report.jsonl | sort >"$D/all"
    t_true "--shard K/$n: union is the set, once each" cmp -s "$D/union$n.s" "$D/all"
done
t_true "--shard 1/2 is not everything" test "$(wc -l <sh2-1.jsonl)" -lt 6
t_run "--shard 3/2" 3 "$S" batch -r recipe.yaml -o x --shard 3/2 zoo
t_stderr_has "--shard 3/2" "--shard '3/2': expected K/N with 1 <= K <= N"

# Manifests: JSON Lines, relative paths from the manifest's directory.
printf '%s\n' '{"input": "zoo/broken.safetensors", "output": "m/fixed.safetensors"}' '' \
    '{"input": "zoo/sub/healthy.safetensors", "recipe": "recipe.yaml"}' >manifest.jsonl
t_run "manifest" 0 "$S" batch -r recipe.yaml -o out5 --manifest manifest.jsonl
t_true "manifest output path" test -f out5/m/fixed.safetensors
printf '%s\n' '{"input": "a.safetensors"}' '{"input": 3}' >bad.jsonl
t_run "bad manifest" 2 "$S" batch -r recipe.yaml -o out6 --manifest bad.jsonl
t_stderr_is "bad manifest" "stfix: batch: bad.jsonl:2: \"input\" is not a non-empty string"
printf '%s\n' '{"input": "a.safetensors", "model": "x"}' >bad2.jsonl
t_run "unknown manifest key" 2 "$S" batch -r recipe.yaml -o out6 --manifest bad2.jsonl
t_stderr_is "unknown manifest key" "stfix: batch: bad2.jsonl:1: unknown key \"model\" (input, output, recipe)"
t_absent "bad manifest: nothing written" out6

# Usage errors.
t_run "no -o" 3 "$S" batch -r recipe.yaml zoo
t_run "inputs and a manifest" 3 "$S" batch -r recipe.yaml -o x --manifest manifest.jsonl zoo
t_run "no recipe" 3 "$S" batch -o x zoo
# A missing input is the user's to correct (2), as for every command.
t_run "missing input" 2 "$S" batch -r recipe.yaml -o x nothere

# batch --verify re-checks every fixed line of a report.
t_run "batch --verify" 0 "$S" batch --verify out/stfix-report.jsonl
t_stdout_has "batch --verify: identical" "verify out/bset/b.safetensors (from zoo/bset/b.safetensors.index.json, recipe recipe.yaml): identical"
t_stdout_has "batch --verify: skips" "skip zoo/gone.safetensors (failed)"
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-3]^=1; open(p,"wb").write(b)' out/broken.safetensors
t_run "batch --verify, tampered" 1 "$S" batch --verify out/stfix-report.jsonl
t_stdout_has "batch --verify, tampered" "verify out/broken.safetensors (from zoo/broken.safetensors, recipe recipe.yaml): DIFFERENT"

# zstd-compressed inputs: found, repaired into uncompressed outputs; linked
# as they are (with their .zst) when compliant.
if command -v zstd >/dev/null 2>&1; then
    mkdir -p zz
    zstd -q "$F/r15_flat_scale_square.safetensors" -o zz/c.safetensors.zst
    zstd -q "$F/healthy_int8_g64.safetensors" -o zz/h.safetensors.zst
    t_run "compressed inputs" 0 "$S" batch -r recipe.yaml -o outz --link-compliant zz
    t_true "compressed: the output is fix's, uncompressed" cmp -s outz/c.safetensors ref.safetensors
    t_true "compressed: compliant one linked with its .zst" test outz/h.safetensors.zst -ef zz/h.safetensors.zst
fi
