#!/usr/bin/env python3
"""Generate a small legacy scaled-FP8 checkpoint (stfix-defects(7),
legacy-scaled-fp8): a PREFIX "scaled_fp8" tensor, and per FP8 layer a
weight, a one-element scale_weight and optionally a scale_input, as files
written before comfy_quant markers existed hold them.

Layers (N x K), all under PREFIX:
  blocks.0.attn.qkv   FP8 [48, 64], bias BF16 [48]
  blocks.0.mlp.fc1    FP8 [32, 64]
  blocks.0.norm       BF16 weight [64] (no scale: never converted)

Usage: gen_legacy_fp8.py OUT [options]
  --prefix P        model key prefix (default empty; e.g. model.diffusion_model.)
  --e5m2            F8_E5M2 weights and scaled_fp8 (default F8_E4M3)
  --fpmm            scaled_fp8 holds 2 elements (full_precision_matrix_mult);
                    default: 0 elements
  --input VALUE     a scale_input of VALUE for every FP8 layer; "one" gives
                    qkv exactly 1.0 and fc1 0.75
  --scale-dtype DT  dtype of scale_weight and scale_input: F32 (default),
                    BF16 or F16
  --input-rows      fc1's scale_input holds K values instead of one
  --qmeta TEXT      __metadata__["_quantization_metadata"] = TEXT
The file is canonical (lib/README.md, Canonical form) and the same bytes
every run. Python 3 standard library only.
"""
import json
import struct
import sys

DTYPES = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
          "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
          "C64", "F64", "I64", "U64"]
LAYERS = [("blocks.0.attn.qkv", 48, 64), ("blocks.0.mlp.fc1", 32, 64)]
# Scale values exact in BF16, F16 and F32.
SCALES = {"blocks.0.attn.qkv": 0.015625, "blocks.0.mlp.fc1": 0.0234375}


def codes(n, k, seed, e5m2):
    """FP8 codes from a small LCG, never a NaN or Inf encoding."""
    out = bytearray()
    s = seed
    for _ in range(n * k):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
        b = (s >> 16) & 0xFF
        if e5m2 and (b & 0x7C) == 0x7C:
            b &= 0xFB
        if not e5m2 and (b & 0x7F) == 0x7F:
            b &= 0xFE
        out.append(b)
    return bytes(out)


def scalar(dt, v):
    if dt == "F32":
        return struct.pack("<f", v)
    if dt == "F16":
        return struct.pack("<e", v)
    return struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:]


def bf16(vals):
    return b"".join(scalar("BF16", v) for v in vals)


def main():
    a = sys.argv[1:]
    out, opt = a[0], a[1:]
    prefix, e5m2, fpmm, inp, sdt, rows, qmeta = "", False, False, None, "F32", False, None
    i = 0
    while i < len(opt):
        o = opt[i]
        if o == "--prefix":
            prefix = opt[i + 1]
            i += 1
        elif o == "--e5m2":
            e5m2 = True
        elif o == "--fpmm":
            fpmm = True
        elif o == "--input":
            inp = opt[i + 1]
            i += 1
        elif o == "--scale-dtype":
            sdt = opt[i + 1]
            i += 1
        elif o == "--input-rows":
            rows = True
        elif o == "--qmeta":
            qmeta = opt[i + 1]
            i += 1
        else:
            sys.exit("unknown option " + o)
        i += 1
    wdt = "F8_E5M2" if e5m2 else "F8_E4M3"
    ts = [(prefix + "scaled_fp8", wdt, [2] if fpmm else [0], b"\0\0" if fpmm else b"")]
    for seed, (p, n, k) in enumerate(LAYERS, 1):
        P = prefix + p
        ts.append((P + ".weight", wdt, [n, k], codes(n, k, seed, e5m2)))
        ts.append((P + ".scale_weight", sdt, [], scalar(sdt, SCALES[p])))
        if inp is not None:
            v = (1.0 if p.endswith("qkv") else 0.75) if inp == "one" else float(inp)
            if rows and p.endswith("fc1"):
                ts.append((P + ".scale_input", sdt, [k], b"".join(scalar(sdt, v) for _ in range(k))))
            else:
                ts.append((P + ".scale_input", sdt, [], scalar(sdt, v)))
    ts.append((prefix + "blocks.0.attn.qkv.bias", "BF16", [48], bf16([0.5] * 48)))
    ts.append((prefix + "blocks.0.norm.weight", "BF16", [64], bf16([1.0] * 64)))
    ts.sort(key=lambda t: (-DTYPES.index(t[1]), t[0].encode("utf-8")))
    hdr = {}
    if qmeta is not None:
        hdr["__metadata__"] = {"_quantization_metadata": qmeta}
    off = 0
    for name, dt, shape, data in ts:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in ts))


if __name__ == "__main__":
    main()
