#!/usr/bin/env python3
"""Generate a sharded checkpoint with many tiny shards, or check a join of one.

  gen_many_shards.py DIR N      write DIR/m-00001-of-0000N.safetensors ... and
                                DIR/m.safetensors.index.json: shard k (1-based)
                                holds one U8 tensor "t.k" of shape [4] whose
                                bytes are k's four little-endian bytes.
  gen_many_shards.py --check FILE N
                                exit 0 when FILE is one safetensors file holding
                                exactly those N tensors with those bytes.

Each shard is a canonical safetensors file (header padded with spaces to a
multiple of 8). For tests of indexes with more shards than the open-file
limit allows at once. Python 3 standard library only.
"""
import json
import os
import struct
import sys


def shard_name(k, n):
    w = max(5, len(str(n)))
    return "m-%0*d-of-%0*d.safetensors" % (w, k, w, n)


def tensor_bytes(k):
    return struct.pack("<I", k)


def write(dirname, n):
    weight_map = {}
    for k in range(1, n + 1):
        name = "t.%d" % k
        header = json.dumps(
            {name: {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}},
            separators=(",", ":"),
        ).encode()
        header += b" " * (-len(header) % 8)
        with open(os.path.join(dirname, shard_name(k, n)), "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + tensor_bytes(k))
        weight_map[name] = shard_name(k, n)
    index = {"metadata": {"total_size": 4 * n}, "weight_map": weight_map}
    with open(os.path.join(dirname, "m.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)


def check(path, n):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        print("%s: %s" % (path, e.strerror), file=sys.stderr)
        return 1
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + hlen])
    header.pop("__metadata__", None)
    body = data[8 + hlen :]
    if sorted(header) != sorted("t.%d" % k for k in range(1, n + 1)):
        print("%s: %d tensors, want t.1 .. t.%d" % (path, len(header), n), file=sys.stderr)
        return 1
    for name, info in header.items():
        b, e = info["data_offsets"]
        if body[b:e] != tensor_bytes(int(name[2:])):
            print("%s: tensor %s holds %r" % (path, name, body[b:e]), file=sys.stderr)
            return 1
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--check":
        return check(argv[2], int(argv[3]))
    if len(argv) == 3:
        write(argv[1], int(argv[2]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
