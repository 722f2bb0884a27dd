#!/usr/bin/env python3
"""Generate the demo checkpoint fixtures/demo/demo.safetensors.

A small INT8 ConvRot checkpoint as real exporters get it wrong
(stfix-defects(7), DEFECTS), so that `stfix check --target sglang`
fails on it and `stfix fix -r rules/sglang-int8-convrot.yaml` repairs it:

  blocks.0.attn.qkv   I8 [48,256], F32 scale flattened to [48] (flattened-scales,
                      R15);
                      the codes are row-quantized, so the H1 probe says ROW
                      and the repair is a header-only reshape to [48,1]
  blocks.0.attn.out   marker without "format" and with "per_row" (missing-format,
                      R30),
                      as old INT8ModelSave wrote it, in both channels
  blocks.0.mlp.fc1    BF16 scale (low-precision-scales, R14): widened to F32 exactly
  blocks.0.mlp.fc2    healthy tensor marker, but _quantization_metadata
                      carries "per_row" for it, so the channels disagree (R5)
  blocks.0.conv_in    a 4-D conv kernel I8 [8,4,3,3] with an int8 marker
                      (quantized-conv, R25): dequantized to BF16, marker dropped
  blocks.0.norm       BF16 norm weight, and a BF16 bias on qkv: untouched

plus __metadata__ "format": "pt". Python 3 standard library only; the bytes
are written directly in the canonical layout (lib/README.md, Canonical
form), and the values come from a fixed linear congruential generator,
so the output never changes.

It also writes healthy.safetensors, the earlier canonical demo file (three
INT8 ConvRot layers and a BF16 norm), which passes every profile.

Usage: gen_demo.py [OUTDIR]   (default: fixtures/demo)
"""
import json
import os
import struct
import sys

# Reference dtype index order; the canonical writer sorts by it, descending.
DTYPE_INDEX = {"U8": 4, "I8": 5, "BF16": 14, "F32": 17}
K = 256
CANON = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256}
NO_FORMAT = {"convrot": True, "convrot_groupsize": 256, "per_row": True}
CONV = {"format": "int8_tensorwise"}


class Lcg:
    """Numerical Recipes LCG: deterministic on every platform."""

    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s = (self.s * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.s

    def gauss(self):
        """Roughly normal in (-1.5, 1.5): the sum of three uniforms, centred."""
        return sum(self.next() / 4294967296.0 for _ in range(3)) - 1.5


def serde_str(s):
    """A JSON string literal with serde_json escaping (lib/README.md, Canonical form)."""
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


def row_quantized(rng, n, k):
    """I8 codes quantized per row by absmax (every row reaches +-127, as a
    rowwise quantizer leaves them) and the F32 row scales."""
    codes, scales = bytearray(), []
    for _ in range(n):
        row = [rng.gauss() * 0.02 for _ in range(k)]
        amax = max(abs(v) for v in row)
        s = struct.unpack("<f", struct.pack("<f", amax / 127.0))[0]
        for v in row:
            q = max(-127, min(127, int(round(v / s))))
            codes.append(q & 0xFF)
        scales.append(s)
    return bytes(codes), scales


def f32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


def bf16_exact(vals):
    """BF16 bits of values rounded to BF16 (round to nearest even)."""
    out = []
    for v in vals:
        b = struct.unpack("<I", struct.pack("<f", v))[0]
        b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
        out.append(struct.pack("<H", b))
    return b"".join(out)


def marker_bytes(m):
    return json.dumps(m).encode("utf-8")


def build():
    rng = Lcg(20260501)
    tensors = []

    def linear(prefix, n, marker, scale_kind):
        w, s = row_quantized(rng, n, K)
        tensors.append((prefix + ".weight", "I8", [n, K], w))
        if scale_kind == "flat":
            tensors.append((prefix + ".weight_scale", "F32", [n], f32(s)))
        elif scale_kind == "bf16":
            tensors.append((prefix + ".weight_scale", "BF16", [n, 1], bf16_exact(s)))
        else:
            tensors.append((prefix + ".weight_scale", "F32", [n, 1], f32(s)))
        mb = marker_bytes(marker)
        tensors.append((prefix + ".comfy_quant", "U8", [len(mb)], mb))

    linear("blocks.0.attn.qkv", 48, CANON, "flat")
    linear("blocks.0.attn.out", 64, NO_FORMAT, "rows")
    linear("blocks.0.mlp.fc1", 32, CANON, "bf16")
    linear("blocks.0.mlp.fc2", 16, CANON, "rows")
    # A 4-D conv kernel [out, in, kh, kw] quantized per output channel.
    w, s = row_quantized(rng, 8, 4 * 3 * 3)
    tensors.append(("blocks.0.conv_in.weight", "I8", [8, 4, 3, 3], w))
    tensors.append(("blocks.0.conv_in.weight_scale", "F32", [8, 1], f32(s)))
    mb = marker_bytes(CONV)
    tensors.append(("blocks.0.conv_in.comfy_quant", "U8", [len(mb)], mb))
    # BF16 bias and norm: plain high-precision tensors.
    tensors.append(("blocks.0.attn.qkv.bias", "BF16", [48],
                    bf16_exact([rng.gauss() * 0.01 for _ in range(48)])))
    tensors.append(("blocks.0.norm.weight", "BF16", [K],
                    bf16_exact([1.0 + rng.gauss() * 0.05 for _ in range(K)])))

    layers = {
        "blocks.0.attn.qkv": CANON,
        "blocks.0.attn.out": NO_FORMAT,
        "blocks.0.mlp.fc1": CANON,
        "blocks.0.mlp.fc2": dict(CANON, per_row=True),
        "blocks.0.conv_in": CONV,
    }
    layers = {p: layers[p] for p in sorted(layers, key=lambda p: p.encode("utf-8"))}
    meta = {
        "format": "pt",
        "_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers}),
    }
    return canonical_file(tensors, meta)


def build_healthy():
    """The healthy twin (healthy.safetensors): three canonical INT8 ConvRot
    layers and a BF16 norm, with a matching _quantization_metadata. The CLI
    tests of inspect and rewrite compare against its listing."""
    rng = Lcg(20260501)
    marker = marker_bytes(CANON)
    tensors = []
    shapes = [("blocks.0.attn.qkv", 24), ("blocks.0.attn.out", 8), ("blocks.0.mlp.fc1", 16)]
    for prefix, n in shapes:
        w = bytes(((rng.next() >> 16) % 255 + 129) & 0xFF for _ in range(n * K))  # -127..127
        scales = f32((1 + (rng.next() >> 24) % 64) / 4096.0 for _ in range(n))
        tensors.append((prefix + ".weight", "I8", [n, K], w))
        tensors.append((prefix + ".weight_scale", "F32", [n, 1], scales))
        tensors.append((prefix + ".comfy_quant", "U8", [len(marker)], marker))
    # BF16 values near 1.0: 0x3F80 plus a small mantissa offset.
    norm = b"".join(struct.pack("<H", 0x3F80 + (rng.next() >> 28)) for _ in range(K))
    tensors.append(("blocks.0.norm.weight", "BF16", [K], norm))
    layers = {p: CANON for p, _ in sorted(shapes, key=lambda l: l[0].encode("utf-8"))}
    meta = {
        "format": "pt",
        "_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers}),
    }
    return canonical_file(tensors, meta)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "fixtures/demo"
    os.makedirs(outdir, exist_ok=True)
    for name, fn in (("demo.safetensors", build), ("healthy.safetensors", build_healthy)):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(fn())


if __name__ == "__main__":
    main()
