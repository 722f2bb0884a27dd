#!/bin/sh
# Indexes with many shards. 2,000 shards under `ulimit -n 256`: shards are
# opened one at a time and their descriptors kept in a small cache, so
# inspect, check and rewrite all work. Then the shard-count cap, L7.
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

# The shard-count cap (10,000 per index) is rule L7, checked before any shard
# is opened: an index naming 10,001 files is refused as invalid input (2).
python3 -c '
import json, sys
json.dump({"weight_map": {"t.%d" % k: "x-%05d.safetensors" % k for k in range(10001)}},
          open(sys.argv[1], "w"))' "$T_TMP/cap.safetensors.index.json"
t_run "L7" 2 "$STFIX" inspect "$T_TMP/cap.safetensors.index.json"
t_stderr_has "L7" "$T_TMP/cap.safetensors.index.json: L7 LimitExceeded: the index names 10001 shard files, more than the cap of 10000"
