#!/bin/sh
# An index with far more shards than the open-file limit: 2,000 shards under
# `ulimit -n 256`. Shards are opened one at a time and their descriptors
# kept in a small cache, so inspect, check and rewrite all work.
. tests/cli/lib.sh
d="$T_TMP/many"
idx="$d/m.safetensors.index.json"
mkdir -p "$d"
python3 tests/gen/gen_many_shards.py "$d" 2000

# Run stfix with at most 256 open files.
low() { sh -c 'ulimit -n 256 && exec "$@"' low "$@"; }

t_run "inspect" 0 low "$STFIX" inspect "$idx"
t_stdout_has "inspect" "index: $idx (2000 shards)"
t_stdout_has "inspect" "  shard 1999: $d/m-02000-of-02000.safetensors (header 64 bytes, file 76 bytes)"
t_stdout_has "inspect" "  t.2000  U8  [4]  4 bytes  [0, 4)  shard 1999"
t_stdout_has "inspect" "summary: 2000 tensors, 8000 bytes of tensor data"
t_stdout_has "inspect" "canonical: 2000 of 2000 shards"

t_run "check" 0 low "$STFIX" check "$idx"
t_stdout_has "check" "summary: 0 error(s), 0 warning(s), 0 info"

t_run "check --numeric" 0 low "$STFIX" check --numeric "$idx"

t_run "rewrite" 0 low "$STFIX" rewrite "$idx" -o "$T_TMP/one.safetensors"
printf 'wrote %s: 2000 tensors in 1 file\n' "$T_TMP/one.safetensors" >"$T_TMP/rewrite.want"
t_stdout_is "rewrite" "$T_TMP/rewrite.want"
t_true "rewrite: every tensor's bytes" python3 tests/gen/gen_many_shards.py --check "$T_TMP/one.safetensors" 2000

