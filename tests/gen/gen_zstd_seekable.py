#!/usr/bin/env python3
"""Compress a file into the zstd seekable format, with the zstd CLI.

The input is cut into frames of FRAME bytes (the last may be shorter); each
is compressed on its own by `zstd` (so every frame is an independent zstd
frame with its content size and checksum), and the seek table is appended
as a skippable frame: magic 0x184D2A5E, its size, one entry per frame
(compressed size, decompressed size, and with checksums the low 32 bits of
the XXH64 of the decompressed bytes, from the system's libxxhash), then the
footer (number of frames, descriptor, magic 0x8F92EAB1). `zstd -d` restores
the input, since it skips the table.

Usage: gen_zstd_seekable.py IN OUT [--frame BYTES] [--level N] [--no-checksum]
                                   [--cut-at OFF,OFF,...]
  --cut-at  also end a frame at each of these offsets (tensor boundaries)
Python 3 standard library and the zstd program.
"""
import ctypes
import ctypes.util
import struct
import subprocess
import sys


def xxh64_low32(data):
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib.XXH64(data, len(data), 0) & 0xFFFFFFFF


def compress(chunk, level):
    return subprocess.run(["zstd", "-q", "-c", "-%d" % level, "--stream-size=%d" % len(chunk)],
                          input=chunk, stdout=subprocess.PIPE, check=True).stdout


def main(argv):
    args = argv[1:]
    frame, level, checksum, cuts = 1 << 20, 3, True, []
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--frame":
            frame = int(args[i + 1]); i += 2
        elif a == "--level":
            level = int(args[i + 1]); i += 2
        elif a == "--no-checksum":
            checksum = False; i += 1
        elif a == "--cut-at":
            cuts = sorted(int(x) for x in args[i + 1].split(",") if x); i += 2
        else:
            pos.append(a); i += 1
    if len(pos) != 2 or frame <= 0:
        sys.exit(__doc__)
    src, dst = pos
    entries = []
    with open(src, "rb") as f, open(dst, "wb") as out:
        data_pos = 0
        while True:
            want = frame
            nxt = [c for c in cuts if c > data_pos]
            if nxt and nxt[0] - data_pos < want:
                want = nxt[0] - data_pos
            chunk = f.read(want)
            if not chunk:
                break
            z = compress(chunk, level)
            out.write(z)
            entries.append((len(z), len(chunk), xxh64_low32(chunk) if checksum else None))
            data_pos += len(chunk)
        body = b""
        for c, d, h in entries:
            body += struct.pack("<II", c, d)
            if checksum:
                body += struct.pack("<I", h)
        body += struct.pack("<IBI", len(entries), 0x80 if checksum else 0, 0x8F92EAB1)
        out.write(struct.pack("<II", 0x184D2A5E, len(body)) + body)


if __name__ == "__main__":
    main(sys.argv)
