# CLI scenarios for `stfix check`: human and JSON output, target selection,
# --numeric, and the exit codes (0 clean, 1 error findings, 2 unreadable or
# invalid container, 3 usage). Fixtures: fixtures/comfy/ (see its MANIFEST).
. tests/cli/lib.sh
F=fixtures/comfy

# Healthy files: exit 0 and a zero summary.
t_run "healthy int8" 0 "$STFIX" check $F/healthy_int8_g256.safetensors
t_stdout_has "healthy int8" "summary: 0 error(s), 0 warning(s), 0 info"
t_run "healthy sharded index" 0 "$STFIX" check $F/healthy_sharded.safetensors.index.json
t_run "healthy meta-only" 0 "$STFIX" check $F/healthy_meta_only.safetensors --target all

# The human listing, byte for byte: grouped by layer (named once, in the
# group's header), one "SEVERITY RULE: MESSAGE" line per finding, fixes,
# summary, and the hint naming the first rule listed.
cat >"$T_TMP/r23.txt" <<'EOF'
check fixtures/comfy/r23_no_convrot.safetensors (target sglang)
layer blocks.0.attn.qkv:
  error   R23: Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must set convrot=true [refuses]
  error   R24: Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must declare convrot_groupsize in (16, 64, 256), got None [refuses]
suggested fixes:
  R23  requantize with ConvRot (stfix fix with a requantize rule), or store the layer in BF16 without a marker
  R24  write the group size actually used as a JSON integer; requantize when it is not 16, 64 or 256
summary: 2 error(s), 0 warning(s), 0 info
hint: stfix explain R23 shows what a rule checks and how to fix it
EOF
t_run "human sglang" 1 "$STFIX" check $F/r23_no_convrot.safetensors --target sglang
t_stdout_is "human sglang" "$T_TMP/r23.txt"

# ComfyUI accepts an unrotated rowwise INT8 layer: clean for that target.
t_run "comfyui accepts unrotated" 0 "$STFIX" check --target comfyui $F/r23_no_convrot.safetensors

# File-level findings come first, under "file-level:"; the hint names the
# first rule listed, R30.
t_run "file-level" 1 "$STFIX" check $F/r30_int8_plus_fp8.safetensors
t_true "file-level: header, then its line" test "$(sed -n 2,3p "$T_OUT")" = "file-level:
  error   R30: Unsupported Comfy quantization format(s): float8_e4m3fn, int8_tensorwise [refuses]"
t_true "file-level: ends with the hint" test "$(tail -n 1 "$T_OUT")" = \
    "hint: stfix explain R30 shows what a rule checks and how to fix it"
t_true "file-level: one hint" test "$(grep -c '^hint: ' "$T_OUT")" -eq 1

# What ComfyUI raises, as Python prints it, with the effect last; the same
# in JSON.
t_run "comfyui refuses" 1 "$STFIX" check --target comfyui $F/r01_meta_not_json.safetensors
t_true "comfyui refuses: file-level line" test "$(sed -n 2,3p "$T_OUT")" = "file-level:
  error   C20: json.decoder.JSONDecodeError: Expecting value: line 1 column 12 (char 11) [refuses]"
t_run "comfyui refuses json" 1 "$STFIX" check --json --target comfyui $F/r06_marker_nul.safetensors
t_stdout_has "comfyui refuses json" '{"rule": "C21", "severity": "error", "layer": "blocks.0.attn.qkv", "message": "json.decoder.JSONDecodeError: Extra data: line 1 column 73 (char 72)", "fix": "rewrite the marker as U8 bytes of one canonical JSON object (no NUL, no padding)", "effect": "refuses"}'
t_run "comfyui silent" 1 "$STFIX" check --target comfyui $F/r12_missing_weight.safetensors
t_stdout_has "comfyui silent" '  error   C5:  Layer blocks.0.attn.qkv has a comfy_quant marker but no blocks.0.attn.qkv.weight: ComfyUI only logs "Missing weight for layer blocks.0.attn.qkv" and loads the model without it [silent]'

# JSON: one document with the stable field names; valid JSON.
t_run "json" 1 "$STFIX" check --json $F/r15_flat_scale_square.safetensors
t_stdout_has "json" '{"file": "fixtures/comfy/r15_flat_scale_square.safetensors", "target": "all", "diagnostics": ['
t_stdout_has "json" '{"rule": "R15", "severity": "error", "layer": "blocks.0.attn.qkv", "message": "Comfy INT8 layer '"'"'blocks.0.attn.qkv'"'"' has incompatible weight/scale shapes: (256, 256) and (256,)", "fix": '
t_stdout_has "json" '"summary": {"errors": 2, "warnings": 0, "info": 0, "total": 2}}'
if command -v python3 >/dev/null 2>&1; then
    t_true "json parses" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [x["rule"] for x in d["diagnostics"]] == ["R15", "C9"], d' "$T_OUT"
fi
t_run "json healthy" 0 "$STFIX" check --json --target sglang $F/healthy_w4a4.safetensors
t_stdout_has "json healthy" '"target": "sglang", "diagnostics": [], "summary": {"errors": 0, "warnings": 0, "info": 0, "total": 0}}'

# --numeric reads the data: H1 says the square layer is column-quantized.
t_run "numeric" 1 "$STFIX" check --numeric --target comfyui $F/probe_colquant_square.safetensors
t_stdout_has "numeric" "error   H1:  COLUMN quantization in blocks.0.attn.qkv.weight"
t_run "numeric healthy" 0 "$STFIX" check --numeric $F/healthy_int8_g64.safetensors
t_stdout_has "numeric healthy" "info    H1:  ROW quantization in"

# Names are shown escaped and the output is UTF-8 whatever the input: a
# tensor name with U+0000, and a _quantization_metadata layer that is a lone
# surrogate (Python's json accepts "\ud800"; its UTF-8 bytes are not valid).
python3 -c 'import struct,sys
h=(r"""{"__metadata__":{"_quantization_metadata":"{\"format_version\":\"1.0\",\"layers\":{\"\\ud800\":{\"format\":\"float8_e4m3fn\"}}}"},"x\u0000y.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}""").encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(4))' "$T_TMP/names.safetensors"
t_run "escaped names" 1 "$STFIX" check "$T_TMP/names.safetensors"
t_stdout_has "escaped names" 'layer x\u0000y.weight:'
t_stdout_has "escaped names" "  warning S14: $T_TMP/names.safetensors: InvalidTensorName: tensor 'x\u0000y.weight' (byte 138): the tensor name contains U+0000"
t_stdout_has "escaped names" 'layer \ud800:'
t_stdout_has "escaped names" "  error   R12: Comfy layer '\ud800' is missing checkpoint tensors: ['\ud800.weight', '\ud800.weight_scale']"
t_stdout_has "escaped names" "  error   C15: _quantization_metadata names layer \ud800, which has no tensors"
t_utf8 "escaped names"
t_run "escaped names --json" 1 "$STFIX" check --json "$T_TMP/names.safetensors"
t_utf8 "escaped names --json"
t_true "escaped names --json: layers" python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); assert [x["layer"] for x in d["diagnostics"]] == ["x\0y.weight", "\ud800", "\ud800"], d' "$T_OUT"

# Exit 2: unreadable or invalid container.
t_run "missing file" 2 "$STFIX" check "$T_TMP/does-not-exist.safetensors"
printf 'not a safetensors file' >"$T_TMP/garbage.safetensors"
t_run "invalid container" 2 "$STFIX" check "$T_TMP/garbage.safetensors"
t_stderr_has "invalid container" "stfix: check: "

# The JSON lists the findings in the human listing's order: file-level
# first, then layer by layer (C15 of blocks.0.attn.qkv beside its R12, not
# after the C1 of another layer), and the suggested fixes follow it.
c15=$F/c15_meta_bare.safetensors
t_run "order: text" 1 "$STFIX" check $c15
sed -n 's/^  *\(error\|warning\|info\) *\([A-Z][0-9]*\):.*/\2/p' "$T_OUT" >"$T_TMP/order_text"
sed -n '/^suggested fixes:/,/^summary/s/^  \([A-Z][0-9]*\) .*/\1/p' "$T_OUT" >"$T_TMP/order_fixes"
printf '%s\n' R10 R12 C15 C1 >"$T_TMP/order_want"
t_true "order: text listing" cmp "$T_TMP/order_want" "$T_TMP/order_text"
t_true "order: suggested fixes" cmp "$T_TMP/order_want" "$T_TMP/order_fixes"
t_run "order: JSON" 1 "$STFIX" check --json $c15
python3 -c 'import json, sys
for d in json.load(open(sys.argv[1]))["diagnostics"]: print(d["rule"])' "$T_OUT" >"$T_TMP/order_json"
t_true "order: JSON as the text" cmp "$T_TMP/order_want" "$T_TMP/order_json"

# Exit 3: usage.
t_run "no file" 3 "$STFIX" check
t_run "bad target" 3 "$STFIX" check --target vllm $F/healthy_fp8.safetensors
t_stderr_is "bad target" \
    "stfix: check: --target takes sglang, comfyui or all, or a list such as sglang,comfyui; not 'vllm'"
# A list, as --tp takes: both profiles are all, and so named.
"$STFIX" check --json $F/healthy_fp8.safetensors >"$T_TMP/target_all"
"$STFIX" check --json --target sglang $F/healthy_fp8.safetensors >"$T_TMP/target_sglang"
for t in sglang,comfyui comfyui,sglang all,sglang sglang,all comfyui,comfyui,sglang; do
    t_run "--target $t" 0 "$STFIX" check --json --target $t $F/healthy_fp8.safetensors
    t_stdout_is "--target $t: as all" "$T_TMP/target_all"
done
t_run "--target sglang,sglang" 0 "$STFIX" check --json --target sglang,sglang $F/healthy_fp8.safetensors
t_stdout_is "--target sglang,sglang: as sglang" "$T_TMP/target_sglang"
t_run "--target sglang,comfyui (text)" 0 "$STFIX" check --target=sglang,comfyui $F/healthy_fp8.safetensors
t_stdout_has "--target sglang,comfyui (text)" "check $F/healthy_fp8.safetensors (target all)"
for t in "sglang," ",comfyui" "sglang,,comfyui" "sglang comfyui" "SGLang" "sglang,vllm" ""; do
    t_run "--target '$t'" 3 "$STFIX" check --target "$t" $F/healthy_fp8.safetensors
    t_stderr_is "--target '$t'" \
        "stfix: check: --target takes sglang, comfyui or all, or a list such as sglang,comfyui; not '$t'"
done
t_run "unknown option" 3 "$STFIX" check --fast $F/healthy_fp8.safetensors
t_run "help" 0 "$STFIX" check --help
t_stdout_has "help" "usage: stfix check FILE|INDEX.json"

# Several inputs: one report each, in the order given; the exit status is the
# worst of theirs (4 > 3 > 2 > 1 > 0); an unreadable input reports its error
# and the others are still checked.
t_run "multi healthy" 0 "$STFIX" check $F/healthy_int8_g256.safetensors $F/healthy_fp8.safetensors
t_run "multi findings" 1 "$STFIX" check $F/healthy_int8_g256.safetensors \
    $F/r23_no_convrot.safetensors --target sglang
{
    "$STFIX" check $F/healthy_int8_g256.safetensors --target sglang
    echo
    cat "$T_TMP/r23.txt"
} >"$T_TMP/multi.txt" 2>/dev/null
t_stdout_is "multi findings" "$T_TMP/multi.txt"
t_run "multi mixed" 2 "$STFIX" check $F/healthy_int8_g256.safetensors "$T_TMP/garbage.safetensors" \
    $F/r23_no_convrot.safetensors --target sglang
{
    "$STFIX" check $F/healthy_int8_g256.safetensors --target sglang
    echo
    echo "check $T_TMP/garbage.safetensors (target sglang)"
    "$STFIX" check "$T_TMP/garbage.safetensors" 2>&1 | sed 's/^stfix: check: /failed (exit 2): /'
    echo
    cat "$T_TMP/r23.txt"
} >"$T_TMP/mixed.txt" 2>/dev/null
t_stdout_is "multi mixed" "$T_TMP/mixed.txt"
t_stderr_is "multi mixed" "$("$STFIX" check "$T_TMP/garbage.safetensors" 2>&1)"
# The order given, and the worst status whichever input has it.
t_run "multi mixed, missing last" 2 "$STFIX" check $F/r23_no_convrot.safetensors \
    "$T_TMP/does-not-exist.safetensors"
t_stdout_has "multi mixed, missing last" "failed (exit 2): $T_TMP/does-not-exist.safetensors: cannot open"
t_run "multi usage still refuses" 3 "$STFIX" check --fast $F/healthy_fp8.safetensors $F/healthy_fp8.safetensors

# --json with several inputs: JSON Lines, one complete document a line: the
# report, or the error document of an input that failed.
t_run "multi json" 2 "$STFIX" check --json $F/healthy_int8_g256.safetensors \
    "$T_TMP/garbage.safetensors" $F/r15_flat_scale_square.safetensors "$T_TMP/does-not-exist.safetensors"
t_true "multi json: JSON Lines" python3 - "$T_OUT" "$T_TMP" <<'PY'
import json, sys
out, tmp = sys.argv[1:]
lines = open(out, encoding="utf-8").read().split("\n")
assert lines[-1] == "", lines[-1]
docs = [json.loads(l) for l in lines[:-1]]
assert len(docs) == 4, docs
a, b, c, d = docs
assert a["file"] == "fixtures/comfy/healthy_int8_g256.safetensors" and a["summary"]["total"] == 0, a
assert b == {"file": tmp + "/garbage.safetensors", "command": "check", "exit": 2,
             "error": {"rule": "S2", "message": b["error"]["message"], "offset": 0,
                       "code": "STF_EFORMAT"}}, b
assert c["file"] == "fixtures/comfy/r15_flat_scale_square.safetensors", c
assert [x["rule"] for x in c["diagnostics"]] == ["R15", "C9"], c
assert c["summary"] == {"errors": 2, "warnings": 0, "info": 0, "total": 2}, c
assert d["exit"] == 2 and d["error"]["code"] == "STF_ENOTFOUND", d
assert d["file"] == tmp + "/does-not-exist.safetensors", d
PY
t_run "multi json findings" 1 "$STFIX" check --json $F/r15_flat_scale_square.safetensors \
    $F/healthy_int8_g256.safetensors
t_true "multi json findings: two lines" python3 -c 'import json,sys; l=open(sys.argv[1]).read().splitlines(); assert len(l) == 2 and [json.loads(x)["summary"]["errors"] for x in l] == [2, 0], l' "$T_OUT"
# One input keeps its one (multi-line) document, error or report, as before.
t_run "single json error" 2 "$STFIX" check --json "$T_TMP/garbage.safetensors"
t_true "single json error: one document" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["exit"] == 2 and d["command"] == "check", d' "$T_OUT"

# The hint ends the output once, after every report, naming the first rule
# of the first report with findings; none without findings, none in JSON.
t_run "hint after all reports" 1 "$STFIX" check --target sglang $F/r23_no_convrot.safetensors \
    $F/r15_flat_scale_square.safetensors $F/healthy_int8_g256.safetensors
t_true "hint after all reports: last line" test "$(tail -n 1 "$T_OUT")" = \
    "hint: stfix explain R23 shows what a rule checks and how to fix it"
t_true "hint after all reports: once" test "$(grep -c '^hint: ' "$T_OUT")" -eq 1
t_run "no finding, no hint" 0 "$STFIX" check $F/healthy_int8_g256.safetensors
t_true "no finding, no hint: last line" test "$(tail -n 1 "$T_OUT")" = "summary: 0 error(s), 0 warning(s), 0 info"
t_run "json, no hint" 1 "$STFIX" check --json $F/r23_no_convrot.safetensors
t_true "json, no hint" test "$(grep -c 'hint' "$T_OUT")" -eq 0

# A layer is named once per line: in its group's header, never again as a
# line's prefix; file-level findings have no "-" in its place; the rule id
# is said once on a line (the reader's "FILE: S7 LeadingWhitespace" is shown
# as "FILE: LeadingWhitespace").
t_run "layer once" 1 "$STFIX" check fixtures/demo/demo.safetensors
t_true "layer once: no finding line starts with its layer" \
    test "$(grep -c '^  [a-z]* *[A-Z][0-9]*: *blocks\.' "$T_OUT")" -eq 0
t_true "layer once: no '-' layer" test "$(grep -c ' -: ' "$T_OUT")" -eq 0
t_true "layer once: every finding line is SEVERITY RULE: MESSAGE" test \
    "$(sed -n '/^  \(error\|warning\|info\) /p' "$T_OUT" | grep -cv '^  \(error  \|warning\|info   \) [A-Z][0-9]\{1,2\}: \{1,2\}[^ ]')" -eq 0
t_true "layer once: headers" test "$(grep -c '^\(file-level\|layer .*\):$' "$T_OUT")" -eq 6
t_run "rule once" 0 "$STFIX" check fixtures/malformed/s07_leading_whitespace.safetensors
t_stdout_has "rule once" "  warning S7:  fixtures/malformed/s07_leading_whitespace.safetensors: LeadingWhitespace (byte 8): the header starts with whitespace, not '{'"
t_true "rule once: S7 said once on its line" test "$(grep -c 'S7.*S7' "$T_OUT")" -eq 0
