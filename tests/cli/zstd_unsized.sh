#!/bin/sh
# zstd streams whose frames do not record their size (what `zstd < FILE`
# writes; stfix(1), INPUT FORMATS): stfix takes the size the header
# declares instead of decompressing the stream to learn it. A stream that
# decodes to more or less than that is refused at once (S19) by inspect
# and check, with nothing spooled and nothing decompressed past the header;
# a small file claiming 100 GiB opens at once; a legitimate one inspects,
# checks, rewrites and fixes like the plain file; a spool over --max-spool
# is L11. Each hostile input runs under t_capped, with files capped at
# 1 MiB (ulimit -f), so a spool would kill the run.
. tests/cli/lib.sh
D=$T_TMP
mkdir -p "$D/tmp" "$D/out"
export TMPDIR="$D/tmp"
capped() { (ulimit -f 2048 && t_capped "$@"); }

# A header declaring one U8 tensor of $1 bytes.
header() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
n = int(sys.argv[1])
h = json.dumps({"w": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}},
               separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h)
PY
}
header 1048576 "$D/h1m"
header 107374182400 "$D/h100g"
H1=$(wc -c <"$D/h1m" | tr -d ' ')
H100=$(wc -c <"$D/h100g" | tr -d ' ')

# Claims 1 MiB, decodes to 256 MiB more: zeros, compressed to a few KB.
(cat "$D/h1m"; head -c 268435456 /dev/zero) | zstd -q -c >"$D/more.safetensors.zst"
t_true "more: a small file" test "$(wc -c <"$D/more.safetensors.zst")" -lt 65536
for c in inspect check; do
    t_run "more: $c" 2 capped "$STFIX" $c "$D/more.safetensors.zst"
    t_stderr_has "more: $c" "stfix: $c: $D/more.safetensors.zst: S19 MetadataIncompleteBuffer (byte $H1): the tensors cover 1048576 data bytes, so the file should be $((H1 + 1048576)) bytes, but its zstd stream, whose frames do not record their size, decodes to at least "
done
t_true "more: nothing left in TMPDIR" test -z "$(ls -A "$D/tmp")"

# Claims 100 GiB, decodes to 256 MiB.
(cat "$D/h100g"; head -c 268435456 /dev/zero) | zstd -q -c >"$D/less.safetensors.zst"
for c in inspect check; do
    t_run "less: $c" 2 capped "$STFIX" $c "$D/less.safetensors.zst"
    t_stderr_has "less: $c" "stfix: $c: $D/less.safetensors.zst: S19 MetadataIncompleteBuffer (byte $H100): the tensors cover 107374182400 data bytes, so the file should be $((H100 + 107374182400)) bytes, but its zstd stream, whose frames do not record their size, decodes to at most "
done

# Claims 100 GiB and holds it: a frame without content size, the header in
# a raw block, then 819200 RLE blocks of 128 KiB (3.2 MB in all). Opening
# it reads the header; nothing is decompressed or spooled.
python3 - "$D/h100g" "$D/claim.safetensors.zst" <<'PY'
import struct, sys
h = open(sys.argv[1], "rb").read()
out = open(sys.argv[2], "wb")
out.write(b"\x28\xb5\x2f\xfd\x00\x50")
out.write(struct.pack("<I", len(h) << 3)[:3] + h)
rle = struct.pack("<I", 131072 << 3 | 2)[:3] + b"\0"
last = struct.pack("<I", 131072 << 3 | 3)[:3] + b"\0"
out.write(rle * 819199 + last)
PY
t_run "claim: inspect" 0 capped "$STFIX" inspect "$D/claim.safetensors.zst"
sz=$(wc -c <"$D/claim.safetensors.zst" | tr -d ' ')
t_stdout_has "claim: inspect" "file $((H100 + 107374182400)) bytes; zstd-stream, 1 frame, $sz bytes stored)"
t_run "claim: check" 0 capped "$STFIX" check "$D/claim.safetensors.zst"
t_true "claim: nothing left in TMPDIR" test -z "$(ls -A "$D/tmp")"

# A legitimate stream without its size reads as the plain file.
bf=$D/bf16.safetensors
python3 tests/gen/gen_bf16_ckpt.py "$bf" 1MiB 128
zstd -q -c <"$bf" >"$D/bf16p.safetensors.zst"
"$STFIX" inspect "$bf" | tail -n +2 >"$D/inspect.want"
"$STFIX" check "$bf" 2>&1 | tail -n +2 >"$D/check.want"
t_run "plain stream: inspect" 0 "$STFIX" inspect "$D/bf16p.safetensors.zst"
tail -n +2 "$T_OUT" >"$D/inspect.got"
t_true "plain stream: inspect lists what the plain file lists" cmp "$D/inspect.got" "$D/inspect.want"
t_run "plain stream: check" 0 "$STFIX" check "$D/bf16p.safetensors.zst"
tail -n +2 "$T_OUT" >"$D/check.got"
t_true "plain stream: check finds what it finds in the plain file" cmp "$D/check.got" "$D/check.want"
t_run "plain stream: rewrite" 0 "$STFIX" rewrite "$D/bf16p.safetensors.zst" -o "$D/out/rw.safetensors"
"$STFIX" rewrite "$bf" -o "$D/rw.want" >/dev/null
t_true "plain stream: rewrite writes the plain file's bytes" cmp "$D/out/rw.safetensors" "$D/rw.want"
"$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$D/q.want" -j 2 >/dev/null
t_run "plain stream: fix" 0 "$STFIX" fix "$D/bf16p.safetensors.zst" -r rules/quantize-int8-convrot.yaml \
    -o "$D/out/q.safetensors" -j 2
t_true "plain stream: fix writes the plain file's output" cmp "$D/out/q.safetensors" "$D/q.want"

# --max-spool: a rewrite that reads out of data order (tensors stored in
# reverse name order) needs the spool; over the cap it is L11, nothing
# written; with room it is the plain file's rewrite.
python3 - "$D/rev.safetensors" <<'PY'
import json, struct, sys
hdr, blobs, off = {}, [], 0
for i, name in enumerate(["z", "y", "x", "w"]):
    data = bytes((j * 7 + i) % 251 for j in range(200000))
    hdr[name] = {"dtype": "U8", "shape": [len(data)], "data_offsets": [off, off + len(data)]}
    blobs.append(data)
    off += len(data)
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
zstd -q -c <"$D/rev.safetensors" >"$D/rev.safetensors.zst"
t_run "--max-spool: over" 2 "$STFIX" rewrite "$D/rev.safetensors.zst" -o "$D/out/rev.safetensors" \
    --max-spool 100KiB
t_stderr_has "--max-spool: over" "$D/rev.safetensors.zst: L11 LimitExceeded: reading the stream out of order at decompressed byte "
t_stderr_has "--max-spool: over" " bytes, more than the 102400 allowed"
t_absent "--max-spool: over" "$D/out/rev.safetensors"
t_no_temp "--max-spool: over" "$D/out"
t_run "--max-spool: room" 0 "$STFIX" rewrite "$D/rev.safetensors.zst" -o "$D/out/rev.safetensors" \
    --max-spool 1MiB
"$STFIX" rewrite "$D/rev.safetensors" -o "$D/rev.want" >/dev/null
t_true "--max-spool: room: the plain file's rewrite" cmp "$D/out/rev.safetensors" "$D/rev.want"
t_run "--max-spool 0" 3 "$STFIX" rewrite "$D/rev.safetensors.zst" -o "$D/out/r0.safetensors" --max-spool 0
