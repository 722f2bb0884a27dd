#!/bin/sh
# The exit-status contract of stfix(1), command by command: every status a
# command can reach (0 ok, 1 findings / failed verification, 2 invalid
# input or recipe, 3 usage, 4 the operation failed), exactly; the same
# exit-status lines at the end of every --help; and with --json, the one
# JSON error document on stdout when a command fails.
. tests/cli/lib.sh
F=fixtures/comfy
M=fixtures/malformed
R=tests/recipes
D=$T_TMP

ok_in=$F/r14_scale_bf16.safetensors
s5=$M/s05_not_json.safetensors
s5_msg="$s5: S5 InvalidHeaderDeserialization (byte 9): EOF while parsing an object"

# A directory where a file should be: open works, reading does not (an I/O
# failure, also for root, who reads mode-000 files anyway).
mkdir -p "$D/adir"
# An index whose shard exists but is no file: I3, with the status that
# path has as a direct input (4, as for $D/adir), not that of a malformed
# index.
mkdir -p "$D/us"
cp $F/healthy_sharded.safetensors.index.json $F/healthy_sharded-00001-of-00002.safetensors "$D/us/"
mkdir -p "$D/us/healthy_sharded-00002-of-00002.safetensors"
us=$D/us/healthy_sharded.safetensors.index.json
us_msg="$us: I3 MissingShard: shard 'healthy_sharded-00002-of-00002.safetensors' (holding 'blocks.0.mlp.fc1.comfy_quant' per weight_map) cannot be read: $D/us/healthy_sharded-00002-of-00002.safetensors: cannot read: Is a directory"
# Runs a command while holding the output lock of $1, as another run would.
HOLD="python3 tests/cli/hold_lock.py"
# A recipe over the 1 MiB cap (STF_ELIMIT).
{ printf 'stfix: 1\ntarget: sglang\n'; head -c 1048577 /dev/zero | tr '\0' '#'; } >"$D/big.yaml"
# A BF16 weight holding a NaN: requantizing it fails (STF_ENUMERIC).
python3 - "$D/nan.safetensors" <<'EOF'
import json, struct, sys
n, k = 16, 64
vals = [0x3C00] * (n * k)
vals[5 * k + 7] = 0x7FC0
data = struct.pack("<%dH" % len(vals), *vals)
h = json.dumps({"blocks.0.attn.qkv.weight": {"dtype": "BF16", "shape": [n, k],
                "data_offsets": [0, len(data)]}}, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
EOF

# The last t_run printed the exit-status lines last, as every --help does.
t_help_ends() {
    "$STFIX" --help | sed -n '/^Exit status:$/,$p' >"$D/exit_lines"
    if [ "$(wc -l <"$D/exit_lines")" -eq 12 ] && tail -n 12 "$T_OUT" | cmp -s - "$D/exit_lines"
    then t_ok "$1: ends with the exit-status lines"
    else t_notok "$1: ends with the exit-status lines" "$(tail -n 3 "$T_OUT")"; fi
}

# The last t_run printed exactly one JSON document on stdout (json.load
# refuses anything after it), and it is the error document:
#   t_json_error NAME FILE COMMAND EXIT RULE OFFSET CODE MESSAGE
# with "null" for a JSON null.
t_json_error() {
    _n=$1; shift
    if python3 - "$T_OUT" "$@" >"$D/json_diff" 2>&1 <<'EOF'
import json, sys
out, file, command, status, rule, offset, code, message = sys.argv[1:]
n = lambda s: None if s == "null" else s
want = {"file": n(file), "command": command, "exit": int(status),
        "error": {"rule": n(rule), "message": message,
                  "offset": None if offset == "null" else int(offset), "code": n(code)}}
got = json.load(open(out))
if got != want:
    sys.exit("got  %s\nwant %s" % (json.dumps(got), json.dumps(want)))
EOF
    then t_ok "$_n: JSON error"
    else t_notok "$_n: JSON error" "$(cat "$D/json_diff")"; fi
}

# stdout of the last t_run is one JSON document with KEY (its own output).
t_json_doc() {
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert sys.argv[2] in d, d' \
        "$T_OUT" "$2" >/dev/null 2>&1
    then t_ok "$1: one JSON document with '$2'"
    else t_notok "$1: one JSON document with '$2'" "$(head -c 300 "$T_OUT")"; fi
}

# ------------------------------------------------------------- --help
t_run "stfix --help" 0 "$STFIX" --help
t_stdout_has "stfix --help" "  4  the operation failed: I/O, memory, output locked by another writer"
for c in inspect check rewrite plan fix; do
    t_run "$c --help" 0 "$STFIX" $c --help
    t_help_ends "$c --help"
done
t_run "rules --help" 0 "$STFIX" rules --help
t_help_ends "rules --help"
t_run "rules lint --help" 0 "$STFIX" rules lint --help
t_help_ends "rules lint --help"

# ------------------------------------------------------------- inspect
t_run "inspect ok" 0 "$STFIX" inspect "$ok_in"
t_run "inspect malformed" 2 "$STFIX" inspect "$s5"
t_stderr_is "inspect malformed" "stfix: inspect: $s5_msg"
t_run "inspect over a cap (L3)" 2 "$STFIX" inspect $M/l3_rank_9.safetensors
t_run "inspect missing file" 2 "$STFIX" inspect "$D/none.safetensors"
t_stderr_is "inspect missing file" "stfix: inspect: $D/none.safetensors: cannot open: No such file or directory"
t_run "inspect missing shard (I3)" 2 "$STFIX" inspect $M/i3_missing_shard/model.safetensors.index.json
t_run "inspect bad flag" 3 "$STFIX" inspect --frobnicate "$ok_in"
t_run "inspect unreadable input" 4 "$STFIX" inspect "$D/adir"
t_stderr_is "inspect unreadable input" "stfix: inspect: $D/adir: cannot read: Is a directory"
t_run "inspect shard not a file (I3)" 4 "$STFIX" inspect "$us"
t_stderr_is "inspect shard not a file (I3)" "stfix: inspect: $us_msg"

# ------------------------------------------------------------- check
t_run "check ok" 0 "$STFIX" check $F/healthy_int8_g256.safetensors
t_run "check findings" 1 "$STFIX" check $F/r23_no_convrot.safetensors
t_run "check malformed" 2 "$STFIX" check "$s5"
t_run "check over a cap (L3)" 2 "$STFIX" check $M/l3_rank_9.safetensors
t_run "check missing file" 2 "$STFIX" check "$D/none.safetensors"
t_run "check bad flag" 3 "$STFIX" check --fast "$ok_in"
t_run "check no file" 3 "$STFIX" check
t_stderr_has "check no file" "stfix: check: missing FILE"
t_run "check unreadable input" 4 "$STFIX" check "$D/adir"
t_run "check shard not a file (I3)" 4 "$STFIX" check "$us"

# ------------------------------------------------------------- rewrite
t_run "rewrite ok" 0 "$STFIX" rewrite "$ok_in" -o "$D/rw.safetensors"
t_run "rewrite malformed" 2 "$STFIX" rewrite "$s5" -o "$D/rw2.safetensors"
t_run "rewrite over a cap (L3)" 2 "$STFIX" rewrite $M/l3_rank_9.safetensors -o "$D/rw2.safetensors"
# An empty tensor name is read and written as the reference does (S14 is a
# warning); --strict refuses it, and that is the input's problem, not the
# command line's.
t_run "rewrite empty tensor name (S14)" 0 "$STFIX" rewrite $M/s14_empty_name.safetensors -o "$D/rw3.safetensors"
t_run "rewrite --strict empty tensor name (S14)" 2 "$STFIX" rewrite --strict $M/s14_empty_name.safetensors -o "$D/rw2.safetensors"
t_stderr_has "rewrite --strict empty tensor name (S14)" "S14 InvalidTensorName: tensor '' (byte 9): the tensor name is empty"
t_run "rewrite bad flag" 3 "$STFIX" rewrite "$ok_in" -o "$D/rw2.safetensors" --frobnicate
t_run "rewrite onto the input" 3 "$STFIX" rewrite "$D/rw.safetensors" -o "$D/rw.safetensors"
# An output path the library refuses (STF_EINVAL) is a usage error.
t_run "rewrite output names a directory" 3 "$STFIX" rewrite "$ok_in" -o "$D/outdir/"
t_stderr_is "rewrite output names a directory" "stfix: rewrite: $D/outdir/: the output path names a directory"
t_run "rewrite unwritable output directory" 4 "$STFIX" rewrite "$ok_in" -o "$D/no/such/dir/o.safetensors"
t_run "rewrite output locked" 4 $HOLD "$D/rw2.safetensors" \
    "$STFIX" rewrite "$ok_in" -o "$D/rw2.safetensors" --no-wait
t_stderr_has "rewrite output locked" "another stfix run is writing this output"
t_true "rewrite failures wrote nothing" test ! -e "$D/rw2.safetensors"

# ------------------------------------------------------------- rules
t_run "rules ok" 0 "$STFIX" rules lint rules/repair-scales.yaml
t_run "rules invalid recipe" 2 "$STFIX" rules lint $R/broken.yaml
t_run "rules recipe over the cap" 2 "$STFIX" rules lint "$D/big.yaml"
t_stderr_is "rules recipe over the cap" "stfix: rules: $D/big.yaml: recipe is larger than 1048576 bytes"
t_run "rules missing recipe" 2 "$STFIX" rules lint "$D/none.yaml"
t_stderr_is "rules missing recipe" "stfix: rules: $D/none.yaml: cannot open: No such file or directory"
t_run "rules bad subcommand" 3 "$STFIX" rules check rules/repair-scales.yaml
t_run "rules bad flag" 3 "$STFIX" rules lint --frobnicate
t_run "rules unreadable recipe" 4 "$STFIX" rules lint "$D/adir"
t_stderr_is "rules unreadable recipe" "stfix: rules: $D/adir: not a recipe (a directory, not a regular file)"
# One invalid file among valid ones decides; the worse status wins.
t_run "rules worst status" 4 "$STFIX" rules lint rules/repair-scales.yaml $R/broken.yaml "$D/adir"

# ------------------------------------------------------------- plan
t_run "plan ok" 0 "$STFIX" plan "$ok_in" -r rules/repair-scales.yaml
t_run "plan malformed" 2 "$STFIX" plan "$s5" -r rules/repair-scales.yaml
t_run "plan over a cap (L3)" 2 "$STFIX" plan $M/l3_rank_9.safetensors -r rules/repair-scales.yaml
t_run "plan invalid recipe" 2 "$STFIX" plan "$ok_in" -r $R/broken.yaml
t_run "plan recipe over the cap" 2 "$STFIX" plan "$ok_in" -r "$D/big.yaml"
t_run "plan recipe cannot apply" 2 "$STFIX" plan $F/r44_w4a8_group2.safetensors -r rules/sglang-int8-convrot.yaml
t_run "plan missing recipe" 2 "$STFIX" plan "$ok_in" -r "$D/none.yaml"
t_run "plan bad flag" 3 "$STFIX" plan "$ok_in" -r rules/repair-scales.yaml --frobnicate
t_run "plan unreadable input" 4 "$STFIX" plan "$D/adir" -r rules/repair-scales.yaml
t_run "plan shard not a file (I3)" 4 "$STFIX" plan "$us" -r rules/repair-scales.yaml
t_run "plan unreadable recipe" 4 "$STFIX" plan "$ok_in" -r "$D/adir"

# ------------------------------------------------------------- fix
o=$D/fix.safetensors
t_run "fix ok" 0 "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$o"
t_run "fix fails verification" 1 "$STFIX" fix $F/r25_conv_marker.safetensors -r $R/flatten-conv.yaml -o "$D/f1.safetensors"
t_run "fix malformed" 2 "$STFIX" fix "$s5" -r $R/cast-scale.yaml -o "$D/f2.safetensors"
t_run "fix over a cap (L3)" 2 "$STFIX" fix $M/l3_rank_9.safetensors -r $R/cast-scale.yaml -o "$D/f2.safetensors"
t_run "fix recipe over the cap" 2 "$STFIX" fix "$ok_in" -r "$D/big.yaml" -o "$D/f2.safetensors"
t_run "fix recipe cannot apply" 2 "$STFIX" fix $F/r44_w4a8_group2.safetensors -r rules/sglang-int8-convrot.yaml -o "$D/f2.safetensors"
t_run "fix non-finite weights" 2 "$STFIX" fix "$D/nan.safetensors" -r rules/quantize-int8-convrot.yaml -o "$D/f2.safetensors"
t_stderr_is "fix non-finite weights" "stfix: fix: requantize 'blocks.0.attn.qkv.weight': row 5, column 7: non-finite value (NaN or Inf) cannot be quantized"
t_run "fix empty tensor name (S14)" 0 "$STFIX" fix $M/s14_empty_name.safetensors -r $R/cast-scale.yaml -o "$D/f3.safetensors"
t_run "fix missing input" 2 "$STFIX" fix "$D/none.safetensors" -r $R/cast-scale.yaml -o "$D/f2.safetensors"
t_run "fix bad flag" 3 "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/f2.safetensors" --frobnicate
t_run "fix onto the input" 3 "$STFIX" fix "$o" -r $R/cast-scale.yaml -o "$o"
t_run "fix output names a directory" 3 "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/outdir/"
t_run "fix unwritable output directory" 4 "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/no/such/dir/o.safetensors"
t_stderr_is "fix unwritable output directory" "stfix: fix: $D/no/such/dir/o.safetensors: the output directory '$D/no/such/dir' cannot be used: No such file or directory"
t_run "fix output locked" 4 $HOLD "$D/f2.safetensors" \
    "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/f2.safetensors" --no-wait
t_run "fix shard not a file (I3)" 4 "$STFIX" fix "$us" -r $R/cast-scale.yaml -o "$D/f2.safetensors"
t_true "fix failures wrote nothing" test ! -e "$D/f2.safetensors"

# ------------------------------------------------------------- environment
t_run "bad STFIX_SIMD" 3 env STFIX_SIMD=mmx "$STFIX" inspect "$ok_in"

# ------------------------------------------------------------- --json
# A fatal error still prints one JSON document: the error, with its rule and
# byte offset when the library gave them, the exit status and the code.
t_run "check --json malformed" 2 "$STFIX" check "$s5" --json
t_json_error "check --json malformed" "$s5" check 2 S5 9 STF_EFORMAT "$s5_msg"
t_stderr_is "check --json malformed" "stfix: check: $s5_msg"
t_run "inspect --json malformed" 2 "$STFIX" inspect --json "$s5"
t_json_error "inspect --json malformed" "$s5" inspect 2 S5 9 STF_EFORMAT "$s5_msg"
t_run "plan --json malformed" 2 "$STFIX" plan "$s5" -r rules/repair-scales.yaml --json
t_json_error "plan --json malformed" "$s5" plan 2 S5 9 STF_EFORMAT "$s5_msg"
t_run "fix --json malformed" 2 "$STFIX" fix "$s5" -r $R/cast-scale.yaml -o "$D/f2.safetensors" --json
t_json_error "fix --json malformed" "$s5" fix 2 S5 9 STF_EFORMAT "$s5_msg"

l3=$M/l3_rank_9.safetensors
t_run "check --json over a cap" 2 "$STFIX" check --json $l3
t_json_error "check --json over a cap" $l3 check 2 L3 52 STF_ELIMIT \
    "$l3: L3 LimitExceeded: tensor 't' (byte 52): shape has more than 8 dimensions"
t_run "inspect --json missing file" 2 "$STFIX" inspect --json "$D/none.safetensors"
t_json_error "inspect --json missing file" "$D/none.safetensors" inspect 2 null null STF_ENOTFOUND \
    "$D/none.safetensors: cannot open: No such file or directory"
t_run "plan --json recipe" 2 "$STFIX" plan "$ok_in" -r $R/broken.yaml --json
t_json_error "plan --json recipe" "$ok_in" plan 2 null null STF_EFORMAT \
    "tests/recipes/broken.yaml:6:13: rules[0].match: unknown key 'dtyp' (expected one of: prefix, regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, probe, rotation, parallel, not)"
t_run "plan --json cannot apply" 2 "$STFIX" plan --json $F/r44_w4a8_group2.safetensors -r rules/sglang-int8-convrot.yaml
t_json_error "plan --json cannot apply" $F/r44_w4a8_group2.safetensors plan 2 null null STF_EFORMAT \
    "layer 'blocks.0.attn.qkv': rule 'requantize-other-formats' (recipe line 100): requantize: format 'asym_w4a8_int8' cannot be decoded (stfix reads float, FP8, INT8 and convrot_w4a4 layers); exclude needs the original weights"
t_run "fix --json non-finite" 2 "$STFIX" fix --json "$D/nan.safetensors" -r rules/quantize-int8-convrot.yaml -o "$D/f2.safetensors"
t_json_error "fix --json non-finite" "$D/nan.safetensors" fix 2 null null STF_ENUMERIC \
    "requantize 'blocks.0.attn.qkv.weight': row 5, column 7: non-finite value (NaN or Inf) cannot be quantized"
t_run "check --json shard not a file" 4 "$STFIX" check "$us" --json
t_json_error "check --json shard not a file" "$us" check 4 I3 null STF_EIO "$us_msg"
t_run "inspect --json unreadable input" 4 "$STFIX" inspect --json "$D/adir"
t_json_error "inspect --json unreadable input" "$D/adir" inspect 4 null null STF_EIO \
    "$D/adir: cannot read: Is a directory"
t_run "fix --json unwritable output directory" 4 "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/no/dir/o.safetensors" --json
t_json_error "fix --json unwritable output directory" "$ok_in" fix 4 null null STF_EIO \
    "$D/no/dir/o.safetensors: the output directory '$D/no/dir' cannot be used: No such file or directory"
t_run "fix --json output locked" 4 $HOLD "$D/f2.safetensors" \
    "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/f2.safetensors" --no-wait --json
t_json_error "fix --json output locked" "$ok_in" fix 4 null null STF_EBUSY \
    "$D/f2.safetensors: another stfix run is writing this output; try again when it has finished (or leave out --no-wait to wait for it)"
t_run "fix --json output names a directory" 3 "$STFIX" fix "$ok_in" -r $R/cast-scale.yaml -o "$D/outdir/" --json
t_json_error "fix --json output names a directory" "$ok_in" fix 3 null null STF_EINVAL \
    "$D/outdir/: the output path names a directory"
t_run "fix --json output is the input" 3 "$STFIX" fix "$o" -r $R/cast-scale.yaml -o "$o" --json
t_json_error "fix --json output is the input" "$o" fix 3 null null STF_EINVAL \
    "$o: the output would overwrite the input file '$o'; choose another output path"
# verify reads a recipe and an input besides its OUT: "file" names the one
# that failed, not OUT.
t_run "verify --json missing input" 2 "$STFIX" verify --json "$D/v.safetensors" --from "$D/none.safetensors" -r $R/cast-scale.yaml
t_json_error "verify --json missing input" "$D/none.safetensors" verify 2 null null STF_ENOTFOUND \
    "$D/none.safetensors: cannot open: No such file or directory"
t_run "verify --json missing recipe" 2 "$STFIX" verify "$D/v.safetensors" --from "$ok_in" -r "$D/none.yaml" --json
t_json_error "verify --json missing recipe" "$D/none.yaml" verify 2 null null STF_ENOTFOUND \
    "$D/none.yaml: cannot open: No such file or directory"
t_run "verify --json unreadable input" 4 "$STFIX" verify "$D/v.safetensors" --from "$D/adir" -r $R/cast-scale.yaml --json
t_json_error "verify --json unreadable input" "$D/adir" verify 4 null null STF_EIO \
    "$D/adir: cannot read: Is a directory"
# Usage errors too, also when --json comes after the bad option.
t_run "fix --json bad flag" 3 "$STFIX" fix "$ok_in" --frobnicate --json
t_json_error "fix --json bad flag" "$ok_in" fix 3 null null null "unknown option '--frobnicate'"
t_run "check --json no file" 3 "$STFIX" check --json
t_json_error "check --json no file" null check 3 null null null "missing FILE"
# (The environment is checked before the command reads its arguments.)
t_run "inspect --json bad STFIX_SIMD" 3 env STFIX_SIMD=mmx "$STFIX" inspect --json "$ok_in"
t_json_error "inspect --json bad STFIX_SIMD" null inspect 3 null null null \
    "STFIX_SIMD=mmx: not a usable kernel variant on this CPU (scalar, avx2, avx512)"
# "--" ends the options: a file named --json is an input, not the flag.
t_run "inspect -- --json" 2 "$STFIX" inspect -- --json
t_stdout_is "inspect -- --json" /dev/null

# Success and findings keep their own single document.
t_run "check --json findings" 1 "$STFIX" check --json $F/r23_no_convrot.safetensors
t_json_doc "check --json findings" summary
t_run "fix --json rejected" 1 "$STFIX" fix $F/r25_conv_marker.safetensors -r $R/flatten-conv.yaml -o "$D/f1.safetensors" --json
t_json_doc "fix --json rejected" status
t_run "plan --json ok" 0 "$STFIX" plan --json "$ok_in" -r rules/repair-scales.yaml
t_json_doc "plan --json ok" totals
# Without --json a failure prints nothing on stdout.
t_run "check malformed, no --json" 2 "$STFIX" check "$s5"
t_stdout_is "check malformed, no --json" /dev/null
