#!/usr/bin/env python3
"""Check a seekable .zst file against the uncompressed file it restores to,
independently of stfix's code (stfix(1), COMPRESSED FILES):

  seek_table.py FILE.zst PLAIN.safetensors FRAME

- the footer: seekable magic, a descriptor with only bit 7 possibly set,
  and a skippable frame of magic 0x184D2A5E whose size matches;
- the compressed sizes add up to the file less the table, each entry's
  frame starts with the zstd magic (in a .stz file, or the grouped-frame
  magic "STZG"), and the uncompressed sizes add up to PLAIN's size, none
  above FRAME;
- the table has checksums, each the low 32 bits of XXH64 (seed 0) of its
  slice of PLAIN (grouped frames included);
- every frame ends at a tensor boundary (or the header's end) unless it is
  a full FRAME bytes long.
Prints "ok" or the first problem, and exits 1 on a problem.
Python 3 standard library only.
"""
import json
import struct
import sys

P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
M = (1 << 64) - 1


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, lane):
    return (rotl((acc + lane * P2) & M, 31) * P1) & M


def merge(acc, v):
    return ((acc ^ rnd(0, v)) * P1 + P4) & M


def xxh64(b):
    n, i = len(b), 0
    if n >= 32:
        v = [(P1 + P2) & M, P2, 0, (-P1) & M]
        while i + 32 <= n:
            lanes = struct.unpack_from("<4Q", b, i)
            v = [rnd(v[k], lanes[k]) for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = P5
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", b, i)[0]), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", b, i)[0] * P1 & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (b[i] * P5 & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = h * P2 & M
    h ^= h >> 29
    h = h * P3 & M
    return h ^ (h >> 32)


def main():
    z = open(sys.argv[1], "rb").read()
    plain = open(sys.argv[2], "rb").read()
    frame = int(sys.argv[3])
    assert xxh64(b"") == 0xEF46DB3751D8E999, "xxh64 self-test"
    magic, = struct.unpack_from("<I", z, len(z) - 4)
    nf, desc = struct.unpack_from("<IB", z, len(z) - 9)
    if magic != 0x8F92EAB1 or desc & 0x7F:
        return "bad footer"
    if not desc & 0x80:
        return "no checksums in the seek table"
    magics = (0xFD2FB528, 0x475A5453) if sys.argv[1].endswith(".stz") else (0xFD2FB528,)
    per = 12 if desc & 0x80 else 8
    tab = 8 + nf * per + 9
    sm, size = struct.unpack_from("<II", z, len(z) - tab)
    if sm != 0x184D2A5E or size != tab - 8:
        return "bad skippable frame"
    hn, = struct.unpack_from("<Q", plain, 0)
    hdr = json.loads(plain[8:8 + hn])
    cuts = {8 + hn, len(plain)}
    for k, t in hdr.items():
        if k != "__metadata__":
            cuts.update(8 + hn + o for o in t["data_offsets"])
    c = d = 0
    for i in range(nf):
        e = struct.unpack_from("<III" if per == 12 else "<II", z, len(z) - tab + 8 + i * per)
        if struct.unpack_from("<I", z, c)[0] not in magics:
            return "frame %d is not a zstd frame" % i
        if e[1] > frame:
            return "frame %d holds %d bytes" % (i, e[1])
        if per == 12 and e[2] != xxh64(plain[d:d + e[1]]) & 0xFFFFFFFF:
            return "frame %d: checksum" % i
        c += e[0]
        d += e[1]
        if d not in cuts and e[1] != frame:
            return "frame %d ends at %d, not at a tensor boundary" % (i, d)
    if c != len(z) - tab or d != len(plain):
        return "sizes do not add up"
    return None


if __name__ == "__main__":
    err = main()
    print(err or "ok")
    sys.exit(1 if err else 0)
