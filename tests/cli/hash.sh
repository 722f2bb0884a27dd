#!/bin/sh
# stfix hash: each file's SHA-256, AutoV2 (its first 10 digits) and the
# SHA-256 of its tensor data, the expected values computed by Python's
# hashlib from the bytes (tests/cli/hash_meta.py); S29, a stale
# modelspec.hash_sha256, from check --hash, check --numeric and inspect
# --hash; rewrite and fix write the value their output's data have.
. tests/cli/lib.sh
D=$T_TMP/hash
mkdir -p "$D"
H="python3 tests/cli/hash_meta.py"
F=fixtures/comfy/healthy_int8_g64.safetensors
R=rules/sglang-int8-convrot.yaml

# One file: three lines, as sha256sum and hashlib give them.
t_run "one file" 0 "$STFIX" hash "$F"
$H lines "$F" >"$D/want"
t_stdout_is "one file" "$D/want"
cut -c8-71 "$T_OUT" | head -1 >"$D/got_sha"
sha256sum "$F" | cut -c1-64 >"$D/want_sha"
t_true "one file: SHA256 is sha256sum's" cmp -s "$D/got_sha" "$D/want_sha"

# An index: each shard's lines, in shard order; no line for the set.
I=fixtures/comfy/healthy_sharded.safetensors.index.json
t_run "index" 0 "$STFIX" hash "$I"
{ $H lines fixtures/comfy/healthy_sharded-00001-of-00002.safetensors
  $H lines fixtures/comfy/healthy_sharded-00002-of-00002.safetensors; } >"$D/want"
t_stdout_is "index" "$D/want"

# A compressed file: the hashes of the .safetensors it restores to.
"$STFIX" compress "$F" -o "$D/c.safetensors.zst" >/dev/null
t_run "zst" 0 "$STFIX" hash "$D/c.safetensors.zst"
$H lines "$F" "$D/c.safetensors.zst" >"$D/want"
t_stdout_is "zst" "$D/want"

# --json: one document a line per input; a missing input gives its error
# document and exit 2, the others still hashed.
$H set "$F" "$D/stale.safetensors" 0xdead
t_run "json" 2 "$STFIX" hash --json "$D/stale.safetensors" "$D/none.safetensors"
sum=$(t_sha256 "$D/stale.safetensors")
data=$($H data "$D/stale.safetensors" | cut -c3-)
size=$(wc -c <"$D/stale.safetensors" | tr -d ' ')
start=$(python3 -c 'import struct,sys; print(8 + struct.unpack("<Q", open(sys.argv[1], "rb").read(8))[0])' "$D/stale.safetensors")
cat >"$D/want" <<END
{"file": "$D/stale.safetensors", "files": [{"path": "$D/stale.safetensors", "size": $size, "data_start": $start, "sha256": "$sum", "autov2": "$(echo "$sum" | cut -c1-10)", "data_sha256": "$data", "modelspec_hash_sha256": "0xdead"}]}
{"file": "$D/none.safetensors", "command": "hash", "exit": 2, "error": {"rule": null, "message": "$D/none.safetensors: cannot open: No such file or directory", "offset": null, "code": "STF_ENOTFOUND"}}
END
t_stdout_is "json" "$D/want"

# Not a checkpoint: the reader's error, exit 2, nothing on stdout.
printf 'not a safetensors file at all' >"$D/junk"
t_run "junk" 2 t_capped "$STFIX" hash "$D/junk"
t_stderr_has "junk" "stfix: hash: "
if [ -s "$T_OUT" ]; then t_notok "junk: no stdout" "$(head -3 "$T_OUT")"; else t_ok "junk: no stdout"; fi
t_run "no file" 3 "$STFIX" hash
t_stderr_has "no file" "stfix: hash: missing FILE"

# S29: a stale value is a note of check --hash (and --numeric) and of
# inspect --hash, never of check alone, which reads headers only.
msg="info    S29: $D/stale.safetensors: stale modelspec.hash_sha256: the metadata says \"0xdead\", the tensor data (bytes $start to $size) hash to 0x$data [note]"
t_run "check --hash" 0 "$STFIX" check --hash "$D/stale.safetensors"
t_stdout_has "check --hash" "$msg"
t_stdout_has "check --hash" "  S29  rewrite with \`stfix rewrite\`, which writes the hash of the data it writes"
t_run "check --numeric" 0 "$STFIX" check --numeric "$D/stale.safetensors"
t_stdout_has "check --numeric" "$msg"
t_run "check" 0 "$STFIX" check "$D/stale.safetensors"
if grep -q S29 "$T_OUT"; then t_notok "check: no S29" "$(cat "$T_OUT")"; else t_ok "check: no S29"; fi
t_run "inspect --hash" 0 "$STFIX" inspect --hash "$D/stale.safetensors"
t_stderr_has "inspect --hash" "stfix: inspect: info S29: $D/stale.safetensors: stale modelspec.hash_sha256: the metadata says \"0xdead\", the tensor data (bytes $start to $size) hash to 0x$data"
t_run "inspect" 0 "$STFIX" inspect "$D/stale.safetensors"
if grep -q S29 "$T_ERR"; then t_notok "inspect: no S29"; else t_ok "inspect: no S29"; fi
# The right value, in either case of hex digit, is no finding.
$H set "$F" "$D/good.safetensors" "0x$data"
$H set "$F" "$D/upper.safetensors" "0X$(echo "$data" | tr a-f A-F)"
t_run "check --hash, true" 0 "$STFIX" check --hash "$D/good.safetensors" "$D/upper.safetensors"
if grep -q S29 "$T_OUT"; then t_notok "true: no S29" "$(cat "$T_OUT")"; else t_ok "true: no S29"; fi

# rewrite: the stale value becomes the output's; a compressed output's
# restored bytes carry it too.
t_run "rewrite" 0 "$STFIX" rewrite "$D/stale.safetensors" -o "$D/rw.safetensors"
t_true "rewrite: the value is the data's" test "$($H get "$D/rw.safetensors")" = "$($H data "$D/rw.safetensors")"
t_run "rewrite, checked" 0 "$STFIX" check --hash "$D/rw.safetensors"
t_stdout_has "rewrite, checked" "summary: 0 error(s), 0 warning(s), 0 info"
t_run "rewrite --zstd" 0 "$STFIX" rewrite "$D/stale.safetensors" -o "$D/rw.safetensors.zst" --zstd
"$STFIX" decompress "$D/rw.safetensors.zst" -o "$D/rwz.safetensors" >/dev/null
t_true "rewrite --zstd: the restored file is rewrite's" cmp "$D/rwz.safetensors" "$D/rw.safetensors"
# Without the key, none is added.
t_run "rewrite, no key" 0 "$STFIX" rewrite "$F" -o "$D/plain.safetensors"
t_true "rewrite, no key: the input's bytes" cmp "$F" "$D/plain.safetensors"

# fix changes the data: the value is recomputed from what it writes, also
# sharded and compressed, and verify accepts the output.
python3 tests/gen/gen_quant_ckpt.py int8-rows "$D/q0.safetensors" 3MiB 256 >/dev/null
$H set "$D/q0.safetensors" "$D/q.safetensors" 0x0123
t_run "fix" 0 "$STFIX" fix "$D/q.safetensors" -r "$R" -o "$D/fx.safetensors"
t_true "fix: the value is the data's" test "$($H get "$D/fx.safetensors")" = "$($H data "$D/fx.safetensors")"
t_true "fix: the data changed" test "$($H data "$D/fx.safetensors")" != "$($H data "$D/q.safetensors")"
t_run "fix, verified" 0 "$STFIX" verify "$D/fx.safetensors" --from "$D/q.safetensors" -r "$R"
t_run "fix, sharded" 0 "$STFIX" fix "$D/q.safetensors" -r "$R" -o "$D/fs.safetensors" \
    --max-shard-size 1MB
n=0
for f in "$D"/fs-0000*-of-0000*.safetensors; do
    t_true "$f: the value is its data's" test "$($H get "$f")" = "$($H data "$f")"
    n=$((n + 1))
done
t_true "fix, sharded: several shards" test "$n" -gt 1
t_run "fix --zstd" 0 "$STFIX" fix "$D/q.safetensors" -r "$R" -o "$D/fz.safetensors" --zstd
"$STFIX" decompress "$D/fz.safetensors.zst" -o "$D/fzd.safetensors" >/dev/null
t_true "fix --zstd: the restored file is fix's" cmp "$D/fzd.safetensors" "$D/fx.safetensors"
t_run "fix --zstd, verified" 0 "$STFIX" verify "$D/fz.safetensors.zst" --from "$D/q.safetensors" -r "$R"
