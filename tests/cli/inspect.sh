#!/bin/sh
# stfix inspect: listing, --json, findings on stderr, exit codes 0/2/3.
. tests/cli/lib.sh
demo=fixtures/demo/healthy.safetensors

t_run "demo" 0 "$STFIX" inspect "$demo"
t_stdout_is "demo" tests/cli/expected/inspect-demo.txt

t_run "demo --json" 0 "$STFIX" inspect --json "$demo"
t_stdout_is "demo --json" tests/cli/expected/inspect-demo.json

t_run "--help" 0 "$STFIX" inspect --help
t_stdout_has "--help" "usage: stfix inspect FILE|INDEX.json [--json] [--strict]"

t_run "no file" 3 "$STFIX" inspect
t_stderr_has "no file" "stfix: inspect: missing FILE"
t_run "unknown option" 3 "$STFIX" inspect --frobnicate "$demo"
t_stderr_has "unknown option" "unknown option '--frobnicate'"
t_run "two files" 3 "$STFIX" inspect "$demo" "$demo"

t_run "missing file" 2 "$STFIX" inspect "$T_TMP/nope.safetensors"
t_stderr_has "missing file" "$T_TMP/nope.safetensors"

: >"$T_TMP/empty.safetensors"
t_run "empty file (S1)" 2 "$STFIX" inspect "$T_TMP/empty.safetensors"
t_stderr_has "empty file (S1)" "S1"

# test_whitespace_leading_padded_header: N=6, "\t\n{}\r " -> S7 warning.
printf '\006\000\000\000\000\000\000\000\011\012{}\015 ' >"$T_TMP/lead.safetensors"
t_run "leading whitespace" 0 "$STFIX" inspect "$T_TMP/lead.safetensors"
t_stderr_has "leading whitespace" "warning S7"
t_stdout_has "leading whitespace" "tensors: 0"
t_stdout_has "leading whitespace" "canonical: no"
t_run "leading whitespace --strict" 2 "$STFIX" inspect --strict "$T_TMP/lead.safetensors"
t_stderr_has "leading whitespace --strict" "S7"

# A name with a control byte is printed escaped, never raw.
printf '\074\000\000\000\000\000\000\000{"a\\u0001b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}\377' \
    >"$T_TMP/ctl.safetensors"
t_run "control byte in name" 0 "$STFIX" inspect "$T_TMP/ctl.safetensors"
t_stdout_has "control byte in name" '  a\u0001b  U8  [1]  1 bytes  [0, 1)'
t_stderr_has "control byte in name" "tensor 'a\u0001b' (byte 9): the tensor name contains a control character"
t_run "control byte in name --json" 0 "$STFIX" inspect --json "$T_TMP/ctl.safetensors"
t_stdout_has "control byte in name --json" '{"name": "a\u0001b", "dtype": "U8", "shape": [1], "data_offsets": [0, 1], "bytes": 1, "shard": 0}'

# Names are byte strings with a length: U+0000 is part of the name, shown
# as \u0000 in the listing and every message, and kept in --json.
nul=fixtures/malformed/s14_nul_in_name.safetensors
t_run "U+0000 in name" 0 "$STFIX" inspect "$nul"
t_stdout_has "U+0000 in name" '  a\u0000b  U8  [4]  4 bytes  [0, 4)'
t_stderr_has "U+0000 in name" "stfix: inspect: warning S14: $nul: InvalidTensorName: tensor 'a\u0000b' (byte 9): the tensor name contains U+0000"
t_utf8 "U+0000 in name"
t_run "U+0000 in name --json" 0 "$STFIX" inspect --json "$nul"
t_stdout_is "U+0000 in name --json" tests/cli/expected/inspect-nul-name.json
t_utf8 "U+0000 in name --json"
t_run "U+0000 in name --strict" 2 "$STFIX" inspect --strict "$nul"
t_stderr_is "U+0000 in name --strict" "stfix: inspect: $nul: S14 InvalidTensorName: tensor 'a\u0000b' (byte 9): the tensor name contains U+0000"

# "a" and "a\u0000b" are two tensors, not one name twice.
printf '\160\000\000\000\000\000\000\000{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}XY' \
    >"$T_TMP/two.safetensors"
t_run "a and a-NUL-b" 0 "$STFIX" inspect "$T_TMP/two.safetensors"
t_stdout_has "a and a-NUL-b" '  a         U8  [1]  1 bytes  [0, 1)'
t_stdout_has "a and a-NUL-b" '  a\u0000b  U8  [1]  1 bytes  [1, 2)'
t_run "a and a-NUL-b --json" 0 "$STFIX" inspect --json "$T_TMP/two.safetensors"
t_stdout_has "a and a-NUL-b --json" '{"name": "a", "dtype": "U8", "shape": [1], "data_offsets": [0, 1], "bytes": 1, "shard": 0}'
t_stdout_has "a and a-NUL-b --json" '{"name": "a\u0000b", "dtype": "U8", "shape": [1], "data_offsets": [1, 2], "bytes": 1, "shard": 0}'
t_stdout_has "a and a-NUL-b --json" '"tensor": "a\u0000b", "offset": 61'

# The empty name is a tensor too (an S14 warning, an error with --strict).
t_run "empty name" 0 "$STFIX" inspect fixtures/malformed/s14_empty_name.safetensors
t_stdout_has "empty name" "tensors: 1"
t_stderr_has "empty name" "tensor '' (byte 9): the tensor name is empty"
t_run "empty name --json" 0 "$STFIX" inspect --json fixtures/malformed/s14_empty_name.safetensors
t_stdout_has "empty name --json" '{"name": "", "dtype": "U8", "shape": [4], "data_offsets": [0, 4], "bytes": 4, "shard": 0}'
t_stdout_has "empty name --json" '"tensor": "", "offset": 9'

# Printed text is UTF-8 whatever the input: a path with ESC and a byte
# that is not UTF-8, names and metadata with controls and format characters.
odd=$(printf '%s/e\033[31mx\377.safetensors' "$T_TMP")
cp "$T_TMP/two.safetensors" "$odd"
t_run "odd path" 0 "$STFIX" inspect "$odd"
t_stdout_has "odd path" "file: $T_TMP/e\u001b[31mx\udcff.safetensors (header 112 bytes, file 122 bytes)"
t_utf8 "odd path"
t_run "odd path --json" 0 "$STFIX" inspect --json "$odd"
t_stdout_has "odd path --json" "{\"file\": \"$T_TMP/e\u001b[31mx\udcff.safetensors\", \"index\": null,"
t_utf8 "odd path --json"
printf '\150\000\000\000\000\000\000\000{"__metadata__":{"k\\u0000":"v\\n\\u202e"},"x\\u202e\\\\y":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}   Z' \
    >"$T_TMP/fmt.safetensors"
t_run "format characters" 0 "$STFIX" inspect "$T_TMP/fmt.safetensors"
t_stdout_has "format characters" '  k\u0000: v\u000a\u202e'
t_stdout_has "format characters" '  x\u202e\\y  U8  [1]  1 bytes  [0, 1)'
t_utf8 "format characters"

# A sharded checkpoint through its index.
"$STFIX" rewrite "$demo" -o "$T_TMP/sh.safetensors" --max-shard-size 8KB >/dev/null
t_run "index" 0 "$STFIX" inspect "$T_TMP/sh.safetensors.index.json"
t_stdout_has "index" "index: $T_TMP/sh.safetensors.index.json (3 shards)"
t_stdout_has "index" "  blocks.0.mlp.fc1.weight         I8    [16, 256]  4096 bytes  [0, 4096)     shard 2"
t_stdout_has "index" "canonical: 3 of 3 shards"
t_run "index --json" 0 "$STFIX" inspect --json "$T_TMP/sh.safetensors.index.json"
t_stdout_has "index --json" '"index_metadata": {}'

# Canonical-form notes (S21-S25) are reported by inspect as info, never as errors.
t_run canon-notes 0 "$STFIX" inspect fixtures/malformed/s07_leading_whitespace.safetensors
t_stderr_has canon-notes "info S21: fixtures/malformed/s07_leading_whitespace.safetensors: not canonical"
t_stdout_has canon-notes "canonical: no"
t_stderr_has canon-notes "stfix: inspect: info S21: fixtures/malformed/s07_leading_whitespace.safetensors: not canonical: padding must be trailing spaces up to a multiple of 8 (byte 8)"

# The tensor table is in columns whose widths come from the data: names as
# escaped (U+0000 as \u0000, six columns), "été" three columns for its five
# bytes, the byte counts right-aligned. A name over 60 columns is printed
# whole on its own line and does not widen the column for the others.
python3 -c 'import json,struct,sys
long = "blocks.0." + "x" * 61 + ".weight"
t = {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
     long: {"dtype": "F32", "shape": [1], "data_offsets": [1, 5]},
     "c\0d.weight_scale": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [5, 17]},
     "bb": {"dtype": "I8", "shape": [100], "data_offsets": [17, 117]},
     "\u00e9t\u00e9": {"dtype": "U8", "shape": [1], "data_offsets": [117, 118]}}
h = json.dumps(t, separators=(",", ":"), ensure_ascii=False).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(118))' "$T_TMP/cols.safetensors"
cat >"$T_TMP/cols.txt" <<'EOF2'
tensors: 5
  a                      U8    [1]       1 bytes  [0, 1)
  blocks.0.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.weight  F32   [1]       4 bytes  [1, 5)
  c\u0000d.weight_scale  BF16  [2, 3]   12 bytes  [5, 17)
  bb                     I8    [100]   100 bytes  [17, 117)
  été                    U8    [1]       1 bytes  [117, 118)
EOF2
t_run "columns" 0 "$STFIX" inspect "$T_TMP/cols.safetensors"
sed -n '/^tensors: /,/^summary: /p' "$T_OUT" | sed '$d' >"$T_TMP/cols.got"
t_true "columns: the table, line for line" cmp "$T_TMP/cols.txt" "$T_TMP/cols.got"
t_true "columns: no line ends in a space" test "$(grep -c ' $' "$T_OUT")" -eq 0
# The reader's findings name their rule once: "info S23: FILE: not
# canonical", not "info S23: FILE: S23 not canonical".
t_stderr_has "columns" "stfix: inspect: info S23: $T_TMP/cols.safetensors: not canonical: data order is not dtype descending, then name (byte 9)"
t_true "columns: no repeated rule id" test "$(grep -c ': S[0-9]* ' "$T_ERR")" -eq 0
