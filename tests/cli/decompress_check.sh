#!/bin/sh
# stfix decompress checks the frames of a seekable .zst or a .stz against
# their seek table as every reader does (stfix(1), COMPRESSED FILES): a
# wrong checksum in the table (XXH64 low 32 bits, descriptor bit 0x80) is
# the readers' S28 with the frame and its compressed byte offset, exit 2,
# and no output or temporary file is left; an intact file restores.
. tests/cli/lib.sh
D=$T_TMP
python3 tests/gen/gen_bf16_ckpt.py "$D/b.safetensors" 1MiB 64
t_run "compress" 0 "$STFIX" compress "$D/b.safetensors" --frame 4KiB
t_run "compress --grouped" 0 "$STFIX" compress "$D/b.safetensors" --grouped --frame 4KiB

# Flip the low byte of the checksum of the table entry of frame K (the
# first grouped frame of a .stz, else frame 1) into OUT; print K, its
# compressed offset, its checksum and the flipped one.
flip() {
    python3 - "$1" "$2" <<'PY'
import struct, sys
z = bytearray(open(sys.argv[1], "rb").read())
nf, desc = struct.unpack_from("<IB", z, len(z) - 9)
assert desc & 0x80, "no checksums"
tab = 8 + nf * 12 + 9
c, pick = 0, None
for i in range(nf):
    cs, ds, ck = struct.unpack_from("<III", z, len(z) - tab + 8 + i * 12)
    if pick is None and (z[c:c + 4] == b"STZG" or (i == 1 and not sys.argv[1].endswith(".stz"))):
        pick = (i, c, len(z) - tab + 8 + i * 12 + 8, ck)
    c += cs
i, c, e, ck = pick
z[e] ^= 0xFF
open(sys.argv[2], "wb").write(z)
print(i, c, "%08x" % ck, "%08x" % (ck ^ 0xFF))
PY
}

for ext in zst stz; do
    set -- $(flip "$D/b.safetensors.$ext" "$D/k.safetensors.$ext")
    K=$1 AT=$2 CK=$3 BAD=$4
    t_true ".$ext: a frame picked" test -n "$BAD"
    MSG="$D/k.safetensors.$ext: S28 ZstdChecksum: frame $K at compressed byte $AT decodes to bytes whose checksum is 0x$CK, the seek table says 0x$BAD"
    t_run ".$ext: decompress, wrong checksum" 2 "$STFIX" decompress "$D/k.safetensors.$ext" -o "$D/k.out"
    t_stderr_is ".$ext: decompress, wrong checksum" "stfix: decompress: $MSG"
    t_absent ".$ext: decompress, wrong checksum" "$D/k.out"
    t_no_temp ".$ext: decompress, wrong checksum" "$D"
    # The reader's message is the same.
    t_run ".$ext: rewrite, wrong checksum" 2 "$STFIX" rewrite "$D/k.safetensors.$ext" -o "$D/k.out"
    t_stderr_has ".$ext: rewrite, wrong checksum" "$MSG"
    t_run ".$ext: decompress" 0 "$STFIX" decompress "$D/b.safetensors.$ext" -o "$D/ok.$ext.out"
    t_true ".$ext: decompress: the same bytes" cmp "$D/b.safetensors" "$D/ok.$ext.out"
done
