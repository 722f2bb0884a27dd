#!/usr/bin/env python3
"""Generate a checkpoint with very many layers, for the tests that keep the
human listings of `check` and `plan` linear in the number of layers.

Usage: gen_many_layers.py OUT KIND N
  meta    N layers named only in _quantization_metadata (no tensors): every
          one gives `check` four findings
  int8    N INT8 layers, each a [1, 16] I8 weight and a [1, 1] F32 scale
Python 3 standard library only; the output is the same for the same arguments.
"""
import json
import struct
import sys


def write(path, hdr, data_len):
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"\0" * data_len)


def main():
    path, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if kind == "meta":
        layers = {f"blocks.{i}.attn.qkv": {"format": "int8_tensorwise"} for i in range(n)}
        meta = {"_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers})}
        write(path, {"__metadata__": meta,
                     "x": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, 1)
    elif kind == "int8":
        hdr, off = {}, 0
        for i in range(n):
            for suf, dt, shape, nb in ((".weight", "I8", [1, 16], 16),
                                       (".weight_scale", "F32", [1, 1], 4)):
                hdr[f"blocks.{i}.lin{suf}"] = {"dtype": dt, "shape": shape,
                                               "data_offsets": [off, off + nb]}
                off += nb
        write(path, hdr, off)
    else:
        sys.exit("kind must be meta or int8")


if __name__ == "__main__":
    main()
