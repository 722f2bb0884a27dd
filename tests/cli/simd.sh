#!/bin/sh
# stfix fix writes the same bytes under every kernel variant (STFIX_SIMD
# scalar, avx2, avx512; stfix-convrot(7), KERNELS), NaN included: every
# decode stores a NaN as 0x7FC00000 (stfix-convrot(7), DEQUANTIZATION).
# Variants this CPU lacks are skipped.
. tests/cli/lib.sh
F=fixtures/comfy
R=tests/recipes
D=$T_TMP
TOOL="python3 tests/cli/fix_tool.py"

variants=scalar
for v in avx2 avx512; do
    if STFIX_SIMD=$v "$STFIX" inspect "$F/healthy_int8_g16.safetensors" >/dev/null 2>&1; then
        variants="$variants $v"
    else
        echo "# skipped: STFIX_SIMD=$v (not usable on this CPU)"
    fi
done

# Fix $1 with recipe $2 under every variant; the outputs' sha256 equal the
# scalar one. The scalar output is left in $D/$3.scalar.safetensors.
same_bytes() {
    for v in $variants; do
        t_run "$3 $v" 0 env STFIX_SIMD=$v "$STFIX" fix "$1" -r "$2" -o "$D/$3.$v.safetensors"
        [ "$v" = scalar ] && continue
        want=$(t_sha256 "$D/$3.scalar.safetensors")
        got=$(t_sha256 "$D/$3.$v.safetensors")
        if [ "$got" = "$want" ]; then t_ok "$3: $v sha256 is scalar's"
        else t_notok "$3: $v sha256 is scalar's" "scalar $want, $v $got"; fi
    done
}

# Row 3 of probe_bad_scales has a NaN scale, row 5 a negative one; through
# the G = 256 inverse transform the NaN row used to come out as 0xFFC00000
# in half its values under avx2 (the vector butterflies negate a NaN).
same_bytes "$F/probe_bad_scales.safetensors" "$R/exclude-f32.yaml" bad_f32
$TOOL tensor "$D/bad_f32.scalar.safetensors" blocks.0.attn.qkv.weight >"$D/w.bin"
nan_row=$(od -An -v -tx4 -j 3072 -N 1024 "$D/w.bin" | tr -s ' ' '\n' | grep -v '^$' | sort -u)
t_true "bad_f32: the NaN row is 256 x 0x7fc00000" test "$nan_row" = 7fc00000
t_true "bad_f32: 1024 bytes of row 3" test "$(od -An -v -tx4 -j 3072 -N 1024 "$D/w.bin" | wc -w)" = 256
same_bytes "$F/probe_bad_scales.safetensors" "$R/exclude-bf16.yaml" bad_bf16
same_bytes "$F/probe_sylvester_data.safetensors" "$R/exclude-f32.yaml" syl_f32
same_bytes "$F/healthy_w4a4.safetensors" "$R/exclude-f32.yaml" w4a4_f32
same_bytes "$F/healthy_fp8.safetensors" "$R/exclude-f32.yaml" fp8_f32
same_bytes "$F/healthy_int8_g64.safetensors" "$R/requantize.yaml" requant
