#!/usr/bin/env python3
"""Generate the demo checkpoint fixtures/demo/demo.safetensors.

A small quantized checkpoint in ComfyUI's INT8 ConvRot format: three Linear
layers (I8 weight [N,256], F32 weight_scale [N,1], U8 comfy_quant marker with
the canonical bytes of spec/comfy-quant.md section 4) and a BF16 norm weight,
plus __metadata__ with "format" and a matching _quantization_metadata.

Python 3 standard library only; the bytes are written directly in the
canonical layout of spec/safetensors.md section 5, and the values come from a
fixed linear congruential generator, so the output never changes.

Usage: gen_demo.py [OUTDIR]   (default: fixtures/demo)
"""
import json
import os
import struct
import sys

# Reference dtype index order; the canonical writer sorts by it, descending.
DTYPE_INDEX = {"U8": 4, "I8": 5, "BF16": 14, "F32": 17}
GROUP = 256
MARKER = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": GROUP}
LAYERS = [("blocks.0.attn.qkv", 24), ("blocks.0.attn.out", 8), ("blocks.0.mlp.fc1", 16)]
K = 256


class Lcg:
    """Numerical Recipes LCG: deterministic on every platform."""

    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s = (self.s * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.s


def serde_str(s):
    """A JSON string literal with serde_json escaping (spec 5.2)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20:
            short = {8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t"}
            out.append(short.get(o, "\\u%04x" % o))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canonical_file(tensors, meta):
    """tensors: (name, dtype, shape, bytes). Returns the file's bytes."""
    order = sorted(tensors, key=lambda t: (-DTYPE_INDEX[t[1]], t[0].encode("utf-8")))
    items = sorted(meta.items(), key=lambda kv: kv[0].encode("utf-8"))
    parts = ['"__metadata__":{' + ",".join(serde_str(k) + ":" + serde_str(v) for k, v in items)
             + "}"]
    off = 0
    for name, dtype, shape, data in order:
        parts.append("%s:{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%d,%d]}"
                     % (serde_str(name), dtype, ",".join(str(d) for d in shape), off,
                        off + len(data)))
        off += len(data)
    header = ("{" + ",".join(parts) + "}").encode("utf-8")
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + b"".join(t[3] for t in order)


def build():
    rng = Lcg(20260501)
    marker = json.dumps(MARKER).encode("utf-8")
    assert len(marker) == 72, marker
    tensors = []
    for prefix, n in LAYERS:
        w = bytes(((rng.next() >> 16) % 255 + 129) & 0xFF for _ in range(n * K))  # -127..127
        scales = b"".join(struct.pack("<f", (1 + (rng.next() >> 24) % 64) / 4096.0)
                          for _ in range(n))
        tensors.append((prefix + ".weight", "I8", [n, K], w))
        tensors.append((prefix + ".weight_scale", "F32", [n, 1], scales))
        tensors.append((prefix + ".comfy_quant", "U8", [len(marker)], marker))
    # BF16 values near 1.0: 0x3F80 plus a small mantissa offset.
    norm = b"".join(struct.pack("<H", 0x3F80 + (rng.next() >> 28)) for _ in range(K))
    tensors.append(("blocks.0.norm.weight", "BF16", [K], norm))
    layers = {p: MARKER for p, _ in sorted(LAYERS, key=lambda l: l[0].encode("utf-8"))}
    meta = {
        "format": "pt",
        "_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers}),
    }
    return canonical_file(tensors, meta)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "fixtures/demo"
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "demo.safetensors"), "wb") as f:
        f.write(build())


if __name__ == "__main__":
    main()
