#!/bin/sh
# .safetensors.stz files (stfix(1), COMPRESSED FILES) are read by every
# command, not only restored by stfix decompress: grouped frames decode
# through the seekable reader with the decoder decompress uses. Their seek
# table carries a checksum of every frame's restored bytes; a corrupt
# grouped frame is S26 and a wrong checksum S28, naming the file and the
# compressed byte offset (exit 2).
. tests/cli/lib.sh
D=$T_TMP
if ! command -v zstd >/dev/null 2>&1; then
    t_notok "the zstd program is installed (make deps)"
    exit 0
fi
python3 tests/gen/gen_bf16_ckpt.py "$D/b.safetensors" 1MiB 64
t_run "compress --grouped" 0 "$STFIX" compress "$D/b.safetensors" --grouped --frame 4KiB
G=$D/b.safetensors.stz
# The table: checksums of the restored bytes, grouped frames among the frames.
t_run "seek table of a .stz" 0 python3 tests/cli/seek_table.py "$G" "$D/b.safetensors" 4096
printf 'ok\n' >"$D/ok"
t_stdout_is "seek table of a .stz" "$D/ok"

# Every reader: inspect, check --numeric, diff, fix.
t_run "inspect .stz" 0 "$STFIX" inspect "$G"
t_stdout_has "inspect .stz" "zstd-seekable, "
t_run "check --numeric .stz" 0 "$STFIX" check --numeric "$G"
t_run "diff .stz" 0 "$STFIX" diff "$D/b.safetensors" "$G"
t_stdout_has "diff .stz" "identical"
R=rules/quantize-int8-convrot.yaml
t_run "fix plain" 0 "$STFIX" fix "$D/b.safetensors" -r "$R" -o "$D/p.out.safetensors"
t_run "fix .stz" 0 "$STFIX" fix "$G" -r "$R" -o "$D/g.out.safetensors"
t_true "fix .stz: the bytes of the plain fix" cmp "$D/p.out.safetensors" "$D/g.out.safetensors"

# Offsets of the first grouped frame and its table entry (frame index K,
# compressed offset AT, entry offset E).
set -- $(python3 - "$G" <<'PY'
import struct, sys
z = open(sys.argv[1], "rb").read()
nf, = struct.unpack_from("<I", z, len(z) - 9)
tab = 8 + nf * 12 + 9
c = 0
for i in range(nf):
    e = len(z) - tab + 8 + i * 12
    cs, ds, ck = struct.unpack_from("<III", z, e)
    if z[c:c + 4] == b"STZG":
        print(i, c, e, cs, "%08x" % ck)
        break
    c += cs
PY
)
K=$1 AT=$2 E=$3 CS=$4 CK=$5
t_true "a grouped frame found" test -n "$CK"

# A flipped byte inside the grouped frame's low-byte stream: S26.
cp "$G" "$D/c.safetensors.stz"
python3 -c 'import sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[at] ^= 0x55; open(p, "wb").write(b)' \
    "$D/c.safetensors.stz" $((AT + CS - 6))
t_run "corrupt grouped frame" 2 "$STFIX" diff "$D/b.safetensors" "$D/c.safetensors.stz"
t_stderr_has "corrupt grouped frame" \
    "$D/c.safetensors.stz: S26 ZstdCorrupt: grouped frame at compressed byte $AT: "
# A header claiming more than the table gives the frame: S26 before any
# allocation of it.
cp "$G" "$D/h.safetensors.stz"
python3 -c 'import struct, sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); struct.pack_into("<I", b, at + 8, 0x7FFFFFFE)
open(p, "wb").write(b)' "$D/h.safetensors.stz" "$AT"
t_run "grouped frame claims too much" 2 "$STFIX" diff "$D/b.safetensors" "$D/h.safetensors.stz"
t_stderr_has "grouped frame claims too much" \
    "$D/h.safetensors.stz: S26 ZstdCorrupt: grouped frame at compressed byte $AT: decompressed size is odd or too large"
# A wrong table checksum for the grouped frame: S28.
cp "$G" "$D/k.safetensors.stz"
python3 -c 'import sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[at + 8] ^= 0xFF; open(p, "wb").write(b)' \
    "$D/k.safetensors.stz" "$E"
BAD=$(printf '%08x' $((0x$CK ^ 0xFF)))
t_run "wrong checksum of a grouped frame" 2 "$STFIX" diff "$D/b.safetensors" "$D/k.safetensors.stz"
t_stderr_has "wrong checksum of a grouped frame" \
    "$D/k.safetensors.stz: S28 ZstdChecksum: frame $K at compressed byte $AT decodes to bytes whose checksum is 0x$CK, the seek table says 0x$BAD"
t_no_temp "corrupt .stz" "$D"
