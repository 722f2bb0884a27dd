#!/usr/bin/env python3
"""Generate a healthy INT8 ConvRot export in canonical writer order (every
F32 scale, then every I8 weight, then every U8 marker, each group sorted by
name), for the tests that count what a remote check reads: the markers lie
together at the end, so they are one range.

Usage: gen_remote_export.py OUT LAYERS ROWS COLS [HEADER_END]
HEADER_END (a multiple of 8, at least what the header needs): the header is
padded with spaces to end there, so that tests can put the end of the
header on either side of a byte boundary.
The weights are a hole (the file is extended with truncate, not written), so
a 2 GiB export takes a moment and little disk. Prints one line:
"HEADER_END MARKERS_BEGIN MARKERS_END", absolute byte offsets in the file.
Python 3 standard library only; the output is the same for the same arguments.
"""
import json
import struct
import sys


def main():
    path, layers, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    names = sorted("blocks.%04d.attn.qkv" % i for i in range(layers))
    mk = json.dumps({"format": "int8_tensorwise", "convrot": True,
                     "convrot_groupsize": 256}).encode()
    ents, off = [], 0
    for dt, sfx, shape, size in (("F32", ".weight_scale", [rows, 1], rows * 4),
                                 ("I8", ".weight", [rows, cols], rows * cols),
                                 ("U8", ".comfy_quant", [len(mk)], len(mk))):
        for p in names:
            ents.append((p + sfx, dt, shape, off, off + size))
            off += size
    hdr = "{" + ",".join('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'
                         % (n, d, ",".join(map(str, s)), b, e)
                         for n, d, s, b, e in ents) + "}"
    hdr = hdr.encode()
    hdr += b" " * (-len(hdr) % 8)
    if len(sys.argv) > 5:
        want = int(sys.argv[5]) - 8
        if want < len(hdr) or want % 8:
            sys.exit("HEADER_END must be a multiple of 8 and at least %d" % (len(hdr) + 8))
        hdr += b" " * (want - len(hdr))
    base = 8 + len(hdr)
    scale = struct.pack("<f", 0.001) * rows
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        for n, d, s, b, e in ents:
            if d == "F32":
                f.seek(base + b)
                f.write(scale)
            elif d == "U8":
                f.seek(base + b)
                f.write(mk)
        f.truncate(base + off)
    mk_begin = base + off - layers * len(mk)
    print(base, mk_begin, base + off)


if __name__ == "__main__":
    main()
