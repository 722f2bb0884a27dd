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

# A name with a control byte is printed JSON-quoted, never raw.
printf '\074\000\000\000\000\000\000\000{"a\\u0001b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}\377' \
    >"$T_TMP/ctl.safetensors"
t_run "control byte in name" 0 "$STFIX" inspect "$T_TMP/ctl.safetensors"
t_stdout_has "control byte in name" '  "a\u0001b"  U8  [1]  1 bytes  [0, 1)'
t_run "control byte in name --json" 0 "$STFIX" inspect --json "$T_TMP/ctl.safetensors"
t_stdout_has "control byte in name --json" '{"name": "a\u0001b", "dtype": "U8", "shape": [1], "data_offsets": [0, 1], "bytes": 1, "shard": 0}'

# A sharded checkpoint through its index.
"$STFIX" rewrite "$demo" -o "$T_TMP/sh.safetensors" --max-shard-size 8KB >/dev/null
t_run "index" 0 "$STFIX" inspect "$T_TMP/sh.safetensors.index.json"
t_stdout_has "index" "index: $T_TMP/sh.safetensors.index.json (3 shards)"
t_stdout_has "index" "  blocks.0.mlp.fc1.weight  I8  [16, 256]  4096 bytes  [0, 4096)  shard 2"
t_stdout_has "index" "canonical: 3 of 3 shards"
t_run "index --json" 0 "$STFIX" inspect --json "$T_TMP/sh.safetensors.index.json"
t_stdout_has "index --json" '"index_metadata": {}'

# Canonical-form notes (S21-S25) are reported by inspect as info, never as errors.
t_run canon-notes 0 "$STFIX" inspect fixtures/malformed/s07_leading_whitespace.safetensors
t_stderr_has canon-notes "info S21: fixtures/malformed/s07_leading_whitespace.safetensors: S21 not canonical"
t_stdout_has canon-notes "canonical: no"
