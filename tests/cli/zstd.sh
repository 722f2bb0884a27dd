#!/bin/sh
# zstd-compressed input (stfix(1), INPUT FORMATS): a checkpoint holding
# every dtype, compressed by the zstd program (with and without its size in
# the frame header) and in the seekable format (tests/gen/gen_zstd_seekable.py,
# with and without checksums), reads exactly like the uncompressed file
# through inspect, check, rewrite and fix; an index naming .zst shards too.
# Damage is exit 2 with the file and the compressed byte offset, and leaves
# nothing behind: no output, no spool.
. tests/cli/lib.sh
D=$T_TMP
G=tests/gen/gen_zstd_seekable.py
mkdir -p "$D/tmp" "$D/out" "$D/out2"
export TMPDIR="$D/tmp"

# One tensor per dtype, in a non-canonical order (rewrite must then read
# out of data order), with random bytes.
python3 - "$D/all.safetensors" <<'PY'
import json, random, struct, sys
random.seed(17)
dtypes = [("BOOL", 8, 1), ("F4", 4, 2), ("F6_E2M3", 6, 4), ("F6_E3M2", 6, 4), ("U8", 8, 1),
          ("I8", 8, 1), ("F8_E5M2", 8, 1), ("F8_E4M3", 8, 1), ("F8_E8M0", 8, 1),
          ("F8_E4M3FNUZ", 8, 1), ("F8_E5M2FNUZ", 8, 1), ("I16", 16, 1), ("U16", 16, 1),
          ("F16", 16, 1), ("BF16", 16, 1), ("I32", 32, 1), ("U32", 32, 1), ("F32", 32, 1),
          ("C64", 64, 1), ("F64", 64, 1), ("I64", 64, 1), ("U64", 64, 1)]
hdr, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
for i, (dt, bits, unit) in enumerate(dtypes):
    n = unit * (1000 + 97 * i)
    nb = n * bits // 8
    data = bytes(random.getrandbits(8) if (j // 512) % 2 else (j * 7 + i) % 256 for j in range(nb))
    hdr["t%02d.%s" % (i, dt.lower())] = {"dtype": dt, "shape": [n], "data_offsets": [off, off + nb]}
    blobs.append(data)
    off += nb
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
A=$D/all.safetensors
zstd -q -f "$A" -o "$D/cli.safetensors.zst"
zstd -q -c <"$A" >"$D/pipe.safetensors.zst"
python3 $G "$A" "$D/seek.safetensors.zst" --frame 8192
python3 $G "$A" "$D/seeknc.safetensors.zst" --frame 5000 --no-checksum
t_true "zstd -d restores the seekable file" sh -c "zstd -q -d -c '$D/seek.safetensors.zst' | cmp - '$A'"

"$STFIX" inspect "$A" 2>/dev/null | tail -n +2 >"$D/inspect.want"
"$STFIX" check "$A" 2>&1 | tail -n +2 >"$D/check.want"
"$STFIX" rewrite "$A" -o "$D/rw.want" >/dev/null
for z in cli pipe seek seeknc; do
    f=$D/$z.safetensors.zst
    t_run "$z: inspect" 0 "$STFIX" inspect "$f"
    tail -n +2 "$T_OUT" >"$D/inspect.got"
    t_true "$z: inspect lists what the plain file lists" cmp "$D/inspect.got" "$D/inspect.want"
    t_run "$z: check" 0 "$STFIX" check "$f"
    tail -n +2 "$T_OUT" >"$D/check.got"
    t_true "$z: check finds what it finds in the plain file" cmp "$D/check.got" "$D/check.want"
    t_run "$z: rewrite" 0 "$STFIX" rewrite "$f" -o "$D/out/$z.safetensors"
    t_true "$z: rewrite writes the plain file's bytes" cmp "$D/out/$z.safetensors" "$D/rw.want"
done
t_run "cli: rewrite (out of data order)" 0 "$STFIX" rewrite "$D/cli.safetensors.zst" -o "$D/out2/x.safetensors"
t_true "the spool left nothing beside the output" test "$(ls -A "$D/out2")" = "x.safetensors"
t_true "nor in TMPDIR" test -z "$(ls -A "$D/tmp")"

t_run "inspect: how it is stored" 0 "$STFIX" inspect "$D/seek.safetensors.zst"
sz=$(wc -c <"$D/seek.safetensors.zst" | tr -d ' ')
fs=$(wc -c <"$A" | tr -d ' ')
fr=$(( (fs + 8191) / 8192 ))
t_stdout_has "inspect: how it is stored" "file: $D/seek.safetensors.zst (header"
t_stdout_has "inspect: how it is stored" "file $fs bytes; zstd-seekable, $fr frames, $sz bytes stored)"
t_run "inspect --json: storage" 0 "$STFIX" inspect --json "$D/cli.safetensors.zst"
t_stdout_has "inspect --json: storage" "\"file_size\": $fs, \"has_metadata\": true, \"canonical\": false, \"storage\": \"zstd-stream\""

# fix from .zst: the same output as from the plain file.
bf=$D/bf16.safetensors
python3 tests/gen/gen_bf16_ckpt.py "$bf" 1MiB 128
python3 $G "$bf" "$D/bf16s.safetensors.zst" --frame 65536
zstd -q -f "$bf" -o "$D/bf16p.safetensors.zst"
"$STFIX" fix "$bf" -r rules/quantize-int8-convrot.yaml -o "$D/q.want" -j 2 >/dev/null
for z in bf16s bf16p; do
    t_run "$z: fix" 0 "$STFIX" fix "$D/$z.safetensors.zst" -r rules/quantize-int8-convrot.yaml \
        -o "$D/q-$z.safetensors" -j 2
    t_true "$z: fix writes the plain file's output" cmp "$D/q-$z.safetensors" "$D/q.want"
done

# An index naming .zst shards: one seekable, one plain stream.
S=fixtures/comfy/healthy_sharded
mkdir -p "$D/ix"
python3 $G $S-00001-of-00002.safetensors "$D/ix/m-00001-of-00002.safetensors.zst" --frame 1024
zstd -q -c $S-00002-of-00002.safetensors >"$D/ix/m-00002-of-00002.safetensors.zst"
sed 's/healthy_sharded-\(0000.-of-00002\).safetensors/m-\1.safetensors.zst/' \
    $S.safetensors.index.json >"$D/ix/m.safetensors.index.json"
"$STFIX" rewrite $S.safetensors.index.json -o "$D/ix.want" >/dev/null
t_run "index of .zst shards: rewrite" 0 "$STFIX" rewrite "$D/ix/m.safetensors.index.json" -o "$D/ix.got"
t_true "index of .zst shards: the plain shards' bytes" cmp "$D/ix.got" "$D/ix.want"
t_run "index of .zst shards: inspect" 0 "$STFIX" inspect "$D/ix/m.safetensors.index.json"
t_stdout_has "index of .zst shards: inspect" "zstd-seekable, "
t_stdout_has "index of .zst shards: inspect" "zstd-stream, 1 frame, "

# Damage: exit 2, the file and the compressed offset, nothing written.
n=$(wc -c <"$D/cli.safetensors.zst" | tr -d ' ')
head -c $((n - 3)) "$D/cli.safetensors.zst" >"$D/trunc.safetensors.zst"
t_run "truncated stream" 2 "$STFIX" rewrite "$D/trunc.safetensors.zst" -o "$D/bad.safetensors"
t_stderr_has "truncated stream" "$D/trunc.safetensors.zst: S26 ZstdCorrupt: the file ends inside"
t_stderr_has "truncated stream" "(truncated) at compressed byte "
t_absent "truncated stream: no output" "$D/bad.safetensors"
t_run "truncated stream: check" 2 "$STFIX" check "$D/trunc.safetensors.zst"
t_stderr_has "truncated stream: check" "S26 ZstdCorrupt"

# A flipped checksum in the seek table: named with its frame.
cp "$D/seek.safetensors.zst" "$D/ck.safetensors.zst"
python3 - "$D/ck.safetensors.zst" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<I", b[-9:-5])[0]
t = len(b) - 9 - 12 * n          # first entry
b[t + 12 + 8] ^= 0xFF            # entry 1's checksum
open(p, "wb").write(b)
PY
t_run "wrong checksum" 2 "$STFIX" rewrite "$D/ck.safetensors.zst" -o "$D/bad.safetensors"
t_stderr_has "wrong checksum" "$D/ck.safetensors.zst: S28 ZstdChecksum: frame 1 at compressed byte "
t_absent "wrong checksum: no output" "$D/bad.safetensors"
t_no_temp "wrong checksum: no temporary" "$D"
t_true "nothing left in TMPDIR" test -z "$(ls -A "$D/tmp")"

# A frame over 128 MiB of window (zstd --long=31 would need one).
printf '\050\265\057\375\000\250\001\000\000' >"$D/win.safetensors.zst"
t_run "window too large" 2 "$STFIX" inspect "$D/win.safetensors.zst"
t_stderr_has "window too large" "$D/win.safetensors.zst: L9 LimitExceeded: the frame at compressed byte 0 needs a 2147483648-byte window to decode, more than the 134217728 bytes allowed"

# Within 64 MiB of address space: frames and stream buffers are bounded.
t_run "seekable under t_capped" 0 t_capped "$STFIX" rewrite "$D/seek.safetensors.zst" -o "$D/out2/c1.safetensors"
t_run "stream under t_capped" 0 t_capped "$STFIX" rewrite "$D/cli.safetensors.zst" -o "$D/out2/c2.safetensors"
t_true "capped outputs are the plain file's bytes" sh -c "cmp '$D/out2/c1.safetensors' '$D/rw.want' && cmp '$D/out2/c2.safetensors' '$D/rw.want'"
