#!/bin/sh
# stfix batch --zstd: fixed checkpoints are written zstd-compressed, named
# .zst (.stz with --zstd-grouped), a single file and a sharded set alike;
# plain `zstd -d` gives back exactly the uncompressed batch output; the
# report lines name the files written, with their sha256; a compliant
# checkpoint linked with --link-compliant keeps its uncompressed name; the
# zstd options are checked as fix and rewrite check them.
. tests/cli/lib.sh
if ! command -v zstd >/dev/null 2>&1; then
    t_notok "the zstd program is installed (make deps)"
    exit 1
fi
D=$T_TMP/batch_zstd
mkdir -p "$D/zoo/sub" "$D/zoo/bset"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
F=$(pwd)/fixtures/comfy
cp rules/repair-scales.yaml "$D/recipe.yaml"
cp "$F/r15_flat_scale_square.safetensors" "$D/zoo/broken.safetensors"
cp "$F/healthy_int8_g64.safetensors" "$D/zoo/sub/healthy.safetensors"
"$S" rewrite "$F/r15_flat_scale_square.safetensors" -o "$D/zoo/bset/b.safetensors" \
    --max-shard-size 40000 >/dev/null
cd "$D" || exit 1
# The uncompressed output of both broken checkpoints (tests/cli/batch.sh).
FIXED=5052a2036b007fea260be34f41c6e85a9dd5801213a5f5c8153e0728adefcb9d
sha() { sha256sum "$1" | cut -d' ' -f1; }

t_run "batch --zstd" 0 "$S" batch -r recipe.yaml -o out zoo --zstd --link-compliant
t_absent "--zstd: no uncompressed single file" out/broken.safetensors
t_absent "--zstd: no uncompressed set" out/bset/b.safetensors
for f in out/broken.safetensors.zst out/bset/b.safetensors.zst; do
    zstd -q -d "$f" -o "$f.plain"
    t_true "$f: zstd -d gives the fixed bytes" test "$(sha "$f.plain")" = "$FIXED"
    t_true "$f: the report names it with its sha256" \
        grep -qF "\"output\":\"$f\",\"output_files\":[{\"path\":\"$f\",\"sha256\":\"$(sha "$f")\",\"autov2\":\"$(sha "$f" | cut -c1-10)\"}]" \
        out/stfix-report.jsonl
done
t_true "--zstd: the output checks clean" sh -c "'$S' check out/broken.safetensors.zst >/dev/null"
t_true "--link-compliant: the compliant one keeps its name" \
    cmp out/sub/healthy.safetensors zoo/sub/healthy.safetensors
t_absent "--link-compliant: no .zst name for it" out/sub/healthy.safetensors.zst
t_true "--zstd: three fixed-or-compliant lines" \
    test "$(grep -c '"status":"\(fixed\|compliant\)"' out/stfix-report.jsonl)" -eq 3
t_no_temp "--zstd" out

t_run "batch --zstd-grouped" 0 "$S" batch -r recipe.yaml -o outg zoo --zstd-grouped
t_true "--zstd-grouped: .stz outputs" test -f outg/broken.safetensors.stz -a -f outg/bset/b.safetensors.stz
t_absent "--zstd-grouped: no .zst" outg/broken.safetensors.zst
t_true "--zstd-grouped: the report names the .stz" \
    grep -qF '"output":"outg/broken.safetensors.stz"' outg/stfix-report.jsonl

t_run "batch --zstd=19 --zstd-verify --zstd-frame" 0 "$S" batch -r recipe.yaml -o out19 \
    zoo/broken.safetensors --zstd=19 --zstd-verify --zstd-frame 4KiB
zstd -q -d out19/broken.safetensors.zst -o out19/plain
t_true "--zstd=19: zstd -d gives the fixed bytes" test "$(sha out19/plain)" = "$FIXED"

t_run "--zstd-verify without --zstd" 3 "$S" batch -r recipe.yaml -o bad zoo --zstd-verify
t_stderr_has "--zstd-verify without --zstd: says so" "--zstd-verify needs --zstd"
t_run "--zstd=0" 3 "$S" batch -r recipe.yaml -o bad zoo --zstd=0
t_stderr_has "--zstd=0: says so" "--zstd takes a level from 1 to 22, not '0'"
t_absent "a usage error writes nothing" bad
