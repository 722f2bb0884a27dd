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

# A wrong checksum in a frame of tensor data, found while the tensor is
# copied: the reader's message names the tensor once, in front of the file
# and frame, whether the tensor goes to a plain output, to a compressed one
# or is filled in after the others (fix).
cp fixtures/comfy/r14_scale_bf16.safetensors "$D/r.safetensors"
t_run "compress r" 0 "$STFIX" compress "$D/r.safetensors" --zstd-frame 1KiB
python3 - "$D/r.safetensors.zst" "$D/rk.safetensors.zst" >"$D/rk" <<'PY'
import struct, sys
z = bytearray(open(sys.argv[1], "rb").read())
nf = struct.unpack_from("<I", z, len(z) - 9)[0]
e = len(z) - 9 - nf * 12 + 12 + 8    # frame 1's checksum
c = struct.unpack_from("<I", z, len(z) - 9 - nf * 12)[0]    # frame 0's compressed size
ck = struct.unpack_from("<I", z, e)[0]
z[e] ^= 0xFF
open(sys.argv[2], "wb").write(z)
print(c, "%08x" % ck, "%08x" % (ck ^ 0xFF))
PY
read -r AT CK BAD <"$D/rk"
MSG="tensor 'blocks.0.attn.qkv.weight': $D/rk.safetensors.zst: S28 ZstdChecksum: frame 1 at compressed byte $AT decodes to bytes whose checksum is 0x$CK, the seek table says 0x$BAD"
t_run "rewrite, a tensor's frame" 2 "$STFIX" rewrite "$D/rk.safetensors.zst" -o "$D/rk.out"
t_stderr_is "rewrite, a tensor's frame" "stfix: rewrite: $MSG"
t_run "rewrite --zstd, a tensor's frame" 2 "$STFIX" rewrite "$D/rk.safetensors.zst" \
    -o "$D/rk.out" --zstd
t_stderr_is "rewrite --zstd, a tensor's frame" "stfix: rewrite: $MSG"
t_run "fix, a tensor's frame" 2 "$STFIX" fix "$D/rk.safetensors.zst" \
    -r tests/recipes/cast-scale.yaml -o "$D/rk.out"
t_stderr_is "fix, a tensor's frame" "stfix: fix: $MSG"
t_absent "a tensor's frame: no output" "$D/rk.out"
t_absent "a tensor's frame: no .zst output" "$D/rk.out.zst"
t_no_temp "a tensor's frame: no temporary" "$D"
