#!/bin/sh
# fix --in-place keeps the file's name, so a compressed input keeps
# compressed bytes: a .zst file is rewritten in place only with --zstd (a
# .stz one only with --zstd-grouped), and without it the fix is refused
# (exit 3) before anything is written, instead of leaving uncompressed
# bytes under the .zst name (stfix(1), fix).
. tests/cli/lib.sh
if ! command -v zstd >/dev/null 2>&1; then
    t_notok "the zstd program is installed (make deps)"
    exit 1
fi
D=$T_TMP/fix_inplace_zstd
mkdir -p "$D"
R=rules/repair-scales.yaml
# What fix writes for this input (tests/cli/batch.sh): restored from either.
FIXED=5052a2036b007fea260be34f41c6e85a9dd5801213a5f5c8153e0728adefcb9d
sha() { sha256sum "$1" | cut -d' ' -f1; }
zstd -q fixtures/comfy/r15_flat_scale_square.safetensors -o "$D/b.safetensors.zst"
cp "$D/b.safetensors.zst" "$D/orig.zst"

t_run ".zst --in-place" 3 "$STFIX" fix "$D/b.safetensors.zst" -r "$R" --in-place
t_stderr_is ".zst --in-place" \
    "stfix: fix: $D/b.safetensors.zst: --in-place would write it uncompressed under its .zst name; give --zstd, or -o OUT"
t_true ".zst --in-place: the file is untouched" cmp "$D/b.safetensors.zst" "$D/orig.zst"
t_run ".zst --in-place --zstd-grouped" 3 "$STFIX" fix "$D/b.safetensors.zst" -r "$R" \
    --in-place --zstd-grouped
t_stderr_is ".zst --in-place --zstd-grouped" \
    "stfix: fix: $D/b.safetensors.zst: --in-place keeps its .zst name; --zstd-grouped writes a .stz file"
t_true ".zst --in-place --zstd-grouped: untouched" cmp "$D/b.safetensors.zst" "$D/orig.zst"

t_run ".zst --in-place --zstd" 0 "$STFIX" fix "$D/b.safetensors.zst" -r "$R" --in-place --zstd
t_stdout_has ".zst --in-place --zstd: names the file" "fix $D/b.safetensors.zst -> $D/b.safetensors.zst"
zstd -q -d "$D/b.safetensors.zst" -o "$D/b.plain"
t_true ".zst --in-place --zstd: zstd -d gives the fixed bytes" test "$(sha "$D/b.plain")" = "$FIXED"
t_absent ".zst --in-place --zstd: no uncompressed file beside it" "$D/b.safetensors"
t_no_temp ".zst --in-place --zstd" "$D"

# .stz: --zstd-grouped only.
t_run "make a .stz" 0 "$STFIX" compress fixtures/comfy/r15_flat_scale_square.safetensors \
    -o "$D/g.safetensors.stz" --grouped
cp "$D/g.safetensors.stz" "$D/orig.stz"
t_run ".stz --in-place" 3 "$STFIX" fix "$D/g.safetensors.stz" -r "$R" --in-place
t_stderr_is ".stz --in-place" \
    "stfix: fix: $D/g.safetensors.stz: --in-place would write it uncompressed under its .stz name; give --zstd-grouped, or -o OUT"
t_run ".stz --in-place --zstd" 3 "$STFIX" fix "$D/g.safetensors.stz" -r "$R" --in-place --zstd
t_stderr_is ".stz --in-place --zstd" \
    "stfix: fix: $D/g.safetensors.stz: --in-place keeps its .stz name; a .stz file needs --zstd-grouped"
t_true ".stz refused: untouched" cmp "$D/g.safetensors.stz" "$D/orig.stz"
t_run ".stz --in-place --zstd-grouped" 0 "$STFIX" fix "$D/g.safetensors.stz" -r "$R" --in-place \
    --zstd-grouped
t_run ".stz: decompress" 0 "$STFIX" decompress "$D/g.safetensors.stz" -o "$D/g.plain"
t_true ".stz --in-place --zstd-grouped: the fixed bytes" test "$(sha "$D/g.plain")" = "$FIXED"

# An uncompressed file still keeps its bytes uncompressed.
cp fixtures/comfy/r15_flat_scale_square.safetensors "$D/u.safetensors"
t_run "uncompressed --in-place --zstd" 3 "$STFIX" fix "$D/u.safetensors" -r "$R" --in-place --zstd
t_stderr_has "uncompressed --in-place --zstd" "--in-place keeps the file's name; it cannot be combined with --zstd"
