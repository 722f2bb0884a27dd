#!/usr/bin/env python3
"""Generate an unquantized BF16 checkpoint with Flux-like layer shapes, fast.

Each transformer block holds the Linear weights of a Flux double block at
hidden size 3072 (attention q/k/v/out [3072, 3072], MLP up [12288, 3072] and
down [3072, 12288]) with BF16 biases, plus two BF16 norm weights [3072].
Blocks are added until the weights reach the requested size; an input
embedder img_in [3072, 64] (K = 64, so G = 64) and a final projection
[64, 3072] come first and last.

The tensor bytes repeat one 1 MiB block of finite BF16 values (|x| between
about 2^-9 and 0.5, both signs), made from a fixed seed, so a 2 GiB file
takes seconds and never changes. The file is written canonically (dtype
index descending, then name bytes; lib/README.md, Canonical form).

Usage: gen_bf16_ckpt.py OUT SIZE [HIDDEN]
  SIZE    weight bytes to reach, in bytes or with KiB/MiB/GiB
  HIDDEN  hidden size (default 3072; tests use a small one for small files)
Python 3 standard library only.
"""
import random
import struct
import sys

HIDDEN = 3072
BLOCK = 1 << 20


def parse_size(s):
    for suffix, mul in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s.endswith(suffix):
            return int(s[: -len(suffix)]) * mul
    return int(s)


def tensors_for(size):
    """(name, shape) of every BF16 tensor, in no particular order."""
    MLP = 4 * HIDDEN
    out = [("img_in.weight", [HIDDEN, 64]), ("img_in.bias", [HIDDEN])]
    total = HIDDEN * 64 * 2
    i = 0
    while total < size:
        p = "double_blocks.%d." % i
        for name, shape in (("attn.q", [HIDDEN, HIDDEN]), ("attn.k", [HIDDEN, HIDDEN]),
                            ("attn.v", [HIDDEN, HIDDEN]), ("attn.proj", [HIDDEN, HIDDEN]),
                            ("mlp.0", [MLP, HIDDEN]), ("mlp.2", [HIDDEN, MLP])):
            out.append((p + name + ".weight", shape))
            out.append((p + name + ".bias", [shape[0]]))
            total += shape[0] * shape[1] * 2
        out.append((p + "norm1.weight", [HIDDEN]))
        out.append((p + "norm2.weight", [HIDDEN]))
        i += 1
    out.append(("final_layer.linear.weight", [64, HIDDEN]))
    out.append(("final_layer.linear.bias", [64]))
    return out


def pattern():
    rng = random.Random(20260502)
    vals = bytearray(BLOCK)
    for j in range(0, BLOCK, 2):
        # exponent byte 0x3B..0x3E: |x| in [2^-9, 0.5); random mantissa and sign
        hi = 0x3B + rng.randrange(4) | (0x80 if rng.getrandbits(1) else 0)
        vals[j] = rng.getrandbits(8)
        vals[j + 1] = hi
    return bytes(vals)


def main():
    global HIDDEN
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: gen_bf16_ckpt.py OUT SIZE [HIDDEN]")
    if len(sys.argv) == 4:
        HIDDEN = int(sys.argv[3])
    path, size = sys.argv[1], parse_size(sys.argv[2])
    ts = sorted(tensors_for(size), key=lambda t: t[0].encode("utf-8"))
    parts, off = [], 0
    for name, shape in ts:
        n = 2
        for d in shape:
            n *= d
        parts.append('"%s":{"dtype":"BF16","shape":[%s],"data_offsets":[%d,%d]}'
                     % (name, ",".join(map(str, shape)), off, off + n))
        off += n
    header = ("{" + ",".join(parts) + "}").encode()
    header += b" " * (-len(header) % 8)
    block = pattern()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        left = off
        while left:
            n = min(left, BLOCK)
            f.write(block[:n])
            left -= n


if __name__ == "__main__":
    main()
