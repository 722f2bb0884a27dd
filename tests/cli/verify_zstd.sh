#!/bin/sh
# stfix verify OUT.zst (or OUT.stz) --from IN -r RECIPE: the conversion is
# re-run in memory and compared with the bytes the compressed file
# restores to (sha256); a compressed file that is not the conversion's, or
# is corrupt, is named and exit 1; batch --verify re-verifies a batch
# written with --zstd.
. tests/cli/lib.sh
D=$T_TMP/verify_zstd
mkdir -p "$D/zoo"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
cp rules/repair-scales.yaml "$D/recipe.yaml"
cp fixtures/comfy/r15_flat_scale_square.safetensors "$D/zoo/in.safetensors"
cd "$D" || exit 1
# What fix writes for this input, uncompressed (tests/cli/batch.sh).
FIXED=5052a2036b007fea260be34f41c6e85a9dd5801213a5f5c8153e0728adefcb9d

"$S" fix zoo/in.safetensors -r recipe.yaml -o z.safetensors --zstd >/dev/null
t_run "verify OUT.zst" 0 "$S" verify z.safetensors.zst --from zoo/in.safetensors -r recipe.yaml
cat >expect <<OUT
verify z.safetensors.zst (from zoo/in.safetensors, recipe recipe.yaml): identical
  identical z.safetensors.zst
    expected sha256 $FIXED
OUT
t_stdout_is "verify OUT.zst" expect

"$S" fix zoo/in.safetensors -r recipe.yaml -o g.safetensors --zstd-grouped >/dev/null
t_run "verify OUT.stz" 0 "$S" verify g.safetensors.stz --from zoo/in.safetensors -r recipe.yaml
t_stdout_has "verify OUT.stz" "  identical g.safetensors.stz"

# A compressed file of other bytes (the unfixed input): the tensor that
# differs, and no stamp.
"$S" rewrite zoo/in.safetensors -o w.safetensors --zstd >/dev/null
t_run "verify another .zst" 1 "$S" verify w.safetensors.zst --from zoo/in.safetensors -r recipe.yaml
t_stdout_has "verify another .zst: differs" "  differs   w.safetensors.zst"
t_stdout_has "verify another .zst: restored sha256" \
    "    actual   sha256 b2e757e611d454516380f6089582bd6a732a0be25fc95090bedbe5e687d3eb1e"
t_stdout_has "verify another .zst: the tensor" "  tensor 'blocks.0.attn.qkv.weight_scale': shape"

# Corrupt: unreadable, exit 1.
head -c 3000 z.safetensors.zst >c.safetensors.zst
t_run "verify a corrupt .zst" 1 "$S" verify c.safetensors.zst --from zoo/in.safetensors -r recipe.yaml
cat >expect <<OUT
verify c.safetensors.zst (from zoo/in.safetensors, recipe recipe.yaml): DIFFERENT
  unreadable c.safetensors.zst: truncated zstd frame at compressed byte 0
    expected sha256 $FIXED
  stamp: none (expected stfix.recipe_sha256 $(t_sha256 recipe.yaml))
OUT
t_stdout_is "verify a corrupt .zst: unreadable, with the compressed byte" expect
t_run "verify a corrupt .zst, JSON" 1 "$S" verify c.safetensors.zst --from zoo/in.safetensors -r recipe.yaml --json
t_stdout_has "verify a corrupt .zst, JSON: where" '"what": "unreadable", "detail": "truncated zstd frame at compressed byte 0", "offset": 0}'


# batch --zstd, then batch --verify of its report.
t_run "batch --zstd" 0 "$S" batch -r recipe.yaml -o out zoo --zstd
t_run "batch --verify" 0 "$S" batch --verify out/stfix-report.jsonl
t_stdout_has "batch --verify: the .zst output" "  identical out/in.safetensors.zst"
t_stderr_has "batch --verify: summary" "stfix batch: verified 1, differ or failed 0, skipped 0"
