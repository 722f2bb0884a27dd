#!/bin/sh
# stfix rewrite: canonical output, shard/join round trips, refusals, exit codes.
. tests/cli/lib.sh
demo=fixtures/demo/healthy.safetensors

t_run "--help" 0 "$STFIX" rewrite --help
t_stdout_has "--help" "usage: stfix rewrite IN -o OUT [--max-shard-size SIZE] [--strict]"
t_run "no args" 3 "$STFIX" rewrite
t_run "no output" 3 "$STFIX" rewrite "$demo"
t_stderr_has "no output" "missing -o OUT"
t_run "-o without value" 3 "$STFIX" rewrite "$demo" -o
t_run "bad size" 3 "$STFIX" rewrite "$demo" -o "$T_TMP/x.safetensors" --max-shard-size 5XB
t_stderr_has "bad size" "--max-shard-size: '5XB' is not a size"
t_run "sharded output name" 3 "$STFIX" rewrite "$demo" -o "$T_TMP/x.bin" --max-shard-size 1MB
t_true "nothing written on usage errors" test ! -e "$T_TMP/x.safetensors" -a ! -e "$T_TMP/x.bin"

# A canonical file comes back byte for byte.
t_run "canonical identity" 0 "$STFIX" rewrite "$demo" -o "$T_TMP/same.safetensors"
t_stdout_has "canonical identity" "wrote $T_TMP/same.safetensors: 10 tensors in 1 file"
t_true "canonical identity: bytes" cmp "$demo" "$T_TMP/same.safetensors"

# test_deserialization (N=60, unpadded) becomes the padded canonical form.
printf '\074\000\000\000\000\000\000\000{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' \
    >"$T_TMP/d.safetensors"
printf '\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >>"$T_TMP/d.safetensors"
printf '\100\000\000\000\000\000\000\000{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}    ' \
    >"$T_TMP/d.want"
printf '\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >>"$T_TMP/d.want"
t_run "unpadded input" 0 "$STFIX" rewrite "$T_TMP/d.safetensors" -o "$T_TMP/d.out"
t_true "unpadded input: canonical bytes" cmp "$T_TMP/d.want" "$T_TMP/d.out"

# Shard, then join: the index text is Python's, the join restores the bytes.
t_run "shard" 0 "$STFIX" rewrite "$demo" -o "$T_TMP/s.safetensors" --max-shard-size 8KB
t_stdout_has "shard" "wrote $T_TMP/s.safetensors.index.json: 10 tensors in 3 files"
t_true "shard: index text" cmp tests/cli/expected/rewrite-demo-8KB.index.json "$T_TMP/s.safetensors.index.json"
t_true "shard: shard files" test -f "$T_TMP/s-00001-of-00003.safetensors" -a -f "$T_TMP/s-00003-of-00003.safetensors"
t_true "shard: no single file" test ! -e "$T_TMP/s.safetensors"
t_run "join" 0 "$STFIX" rewrite "$T_TMP/s.safetensors.index.json" -o "$T_TMP/j.safetensors"
t_true "join: bytes" cmp "$demo" "$T_TMP/j.safetensors"

# Never onto an input: the file itself, or an input shard.
cp "$demo" "$T_TMP/in.safetensors"
t_run "onto input" 3 "$STFIX" rewrite "$T_TMP/in.safetensors" -o "$T_TMP/in.safetensors"
t_stderr_has "onto input" "would overwrite the input file '$T_TMP/in.safetensors'"
t_run "onto input shards" 3 "$STFIX" rewrite "$T_TMP/s.safetensors.index.json" -o "$T_TMP/s.safetensors" --max-shard-size 4KB
t_stderr_has "onto input shards" "would overwrite the input file"
t_true "onto input: untouched" cmp "$demo" "$T_TMP/in.safetensors"

# Invalid input: exit 2, nothing written.
: >"$T_TMP/empty.safetensors"
t_run "invalid input" 2 "$STFIX" rewrite "$T_TMP/empty.safetensors" -o "$T_TMP/e.out"
t_stderr_has "invalid input" "S1"
t_true "invalid input: no output" test ! -e "$T_TMP/e.out"
printf '\006\000\000\000\000\000\000\000\011\012{}\015 ' >"$T_TMP/lead.safetensors"
t_run "strict" 2 "$STFIX" rewrite --strict "$T_TMP/lead.safetensors" -o "$T_TMP/l.out"
t_run "not strict" 0 "$STFIX" rewrite "$T_TMP/lead.safetensors" -o "$T_TMP/l.out"
t_stderr_has "not strict" "warning S7"

# Output directory missing: the operation fails (4) and leaves nothing.
t_run "missing output dir" 4 "$STFIX" rewrite "$demo" -o "$T_TMP/no/such/dir/o.safetensors"
t_stderr_has "missing output dir" "cannot be used: No such file or directory"

# --strict refuses input $2 with an S14 message holding $3; nothing written.
t_strict_s14() {
    t_run "$1 --strict" 2 "$STFIX" rewrite --strict "$2" -o "$T_TMP/strict.out"
    t_stderr_has "$1 --strict" "S14 InvalidTensorName: tensor '$3' (byte 9)"
    t_true "$1 --strict: no output" test ! -e "$T_TMP/strict.out"
}

# Names are byte strings with a length and go through unchanged, as the
# reference reads and writes them: "a\u0000b" is not renamed "a", and next
# to "a" it is a second tensor, not a duplicate.
nul=fixtures/malformed/s14_nul_in_name.safetensors
printf '\100\000\000\000\000\000\000\000{"a\\u0000b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}    ' \
    >"$T_TMP/nul.want"
printf '\000\000\000\000' >>"$T_TMP/nul.want"
t_run "U+0000 in name" 0 "$STFIX" rewrite "$nul" -o "$T_TMP/nul.out"
t_stdout_has "U+0000 in name" "wrote $T_TMP/nul.out: 1 tensor in 1 file"
t_stderr_is "U+0000 in name" "stfix: rewrite: warning S14: $nul: InvalidTensorName: tensor 'a\\u0000b' (byte 9): the tensor name contains U+0000"
t_true "U+0000 in name: canonical bytes" cmp "$T_TMP/nul.want" "$T_TMP/nul.out"
t_run "U+0000 in name: read back" 0 "$STFIX" inspect --json "$T_TMP/nul.out"
t_stdout_has "U+0000 in name: read back" '{"name": "a\u0000b", "dtype": "U8", "shape": [4], "data_offsets": [0, 4], "bytes": 4, "shard": 0}'
t_strict_s14 "U+0000 in name" "$nul" 'a\u0000b'

printf '\160\000\000\000\000\000\000\000{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}XY' \
    >"$T_TMP/two.safetensors"
t_run "a and a-NUL-b" 0 "$STFIX" rewrite "$T_TMP/two.safetensors" -o "$T_TMP/two.out"
t_stdout_has "a and a-NUL-b" "wrote $T_TMP/two.out: 2 tensors in 1 file"
t_true "a and a-NUL-b: canonical input, same bytes" cmp "$T_TMP/two.safetensors" "$T_TMP/two.out"
t_run "a and a-NUL-b: sharded" 0 "$STFIX" rewrite "$T_TMP/two.safetensors" -o "$T_TMP/two-s.safetensors" --max-shard-size 1
t_true "a and a-NUL-b: index keys" grep -qF '"a\u0000b": "two-s-00002-of-00002.safetensors"' "$T_TMP/two-s.safetensors.index.json"
t_run "a and a-NUL-b: join" 0 "$STFIX" rewrite "$T_TMP/two-s.safetensors.index.json" -o "$T_TMP/two-j.safetensors"
t_true "a and a-NUL-b: join bytes" cmp "$T_TMP/two.safetensors" "$T_TMP/two-j.safetensors"

# The empty name is written faithfully too (the reference writes and reads
# it); only --strict refuses it, as invalid input.
empty=fixtures/malformed/s14_empty_name.safetensors
printf '\070\000\000\000\000\000\000\000{"":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}    ' \
    >"$T_TMP/empty.want"
printf '\000\000\000\000' >>"$T_TMP/empty.want"
t_run "empty name" 0 "$STFIX" rewrite "$empty" -o "$T_TMP/empty.out"
t_stderr_has "empty name" "warning S14: $empty: InvalidTensorName: tensor '' (byte 9): the tensor name is empty"
t_true "empty name: canonical bytes" cmp "$T_TMP/empty.want" "$T_TMP/empty.out"
t_strict_s14 "empty name" "$empty" ''
