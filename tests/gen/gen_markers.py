#!/usr/bin/env python3
"""Generate a small quantized checkpoint whose comfy_quant markers are
missing or unreadable, as files from the wild hold them (stfix-defects(7),
missing-markers and unreadable-marker).

Layers (N x K logical), each with a weight, its format's scales and a
marker unless told otherwise:
  blocks.0.attn.qkv   [48, 256], bias BF16 [48]
  blocks.0.attn.out   [32, 256]
  blocks.0.mlp.fc1    [64, 256]
  blocks.0.norm       BF16 weight [256] (never quantized)

Usage: gen_markers.py OUT [options]
  --kind K         int8 (default: I8, F32 [N, 1] scales, ConvRot G=256),
                   fp8 (F8_E4M3, F32 [] scales), e5m2 (F8_E5M2, F32 []),
                   nvfp4 (U8 [N, K/2], F8_E4M3 [N, K/16] block scales,
                   F32 [] weight_scale_2) or mxfp8 (F8_E4M3, U8 [N, K/32])
  --no-markers     no comfy_quant tensor at all
  --zero L         layer L's marker bytes are all zeros (same length)
  --empty L        layer L's marker is an empty U8 tensor
  --badutf8 L      layer L's marker starts with byte 0xFF (not UTF-8)
  --vary L         layer L's marker differs from the others' (int8: G=64;
                   other kinds: full_precision_matrix_mult)
  --qmeta          __metadata__["_quantization_metadata"] lists every
                   layer's marker (as it was before --zero/--empty/--badutf8)
  --qmeta-omit L   ... except layer L
  --no-scale       no weight_scale tensors (fp8, e5m2)
  --input-scale    an F32 [] input_scale of 0.5 per layer (fp8, e5m2)
The file is canonical (lib/README.md, Canonical form) and the same bytes
every run. Python 3 standard library only.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_comfy_fixtures import st_bytes  # noqa: E402  (the canonical file bytes)

LAYERS = [("blocks.0.attn.qkv", 48), ("blocks.0.attn.out", 32), ("blocks.0.mlp.fc1", 64)]
K = 256
FORMAT = {"int8": "int8_tensorwise", "fp8": "float8_e4m3fn", "e5m2": "float8_e5m2",
          "nvfp4": "nvfp4", "mxfp8": "mxfp8"}


def lcg(n, seed, mask=0xFF):
    out = bytearray()
    s = seed
    for _ in range(n):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(((s >> 16) & 0xFF) & mask)
    return bytes(out)


def fp8(n, seed, e5m2):
    """FP8 codes, never a NaN or Inf encoding."""
    out = bytearray(lcg(n, seed))
    for i, b in enumerate(out):
        if e5m2 and (b & 0x7C) == 0x7C:
            out[i] = b & 0xFB
        if not e5m2 and (b & 0x7F) == 0x7F:
            out[i] = b & 0xFE
    return bytes(out)


def f32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


def bf16(vals):
    return b"".join(struct.pack("<f", v)[2:] for v in vals)


def marker(kind, vary):
    m = {"format": FORMAT[kind]}
    if kind == "int8":
        m["convrot"] = True
        m["convrot_groupsize"] = 64 if vary else 256
    elif vary:
        m["full_precision_matrix_mult"] = True
    # The key order of ComfyUI's writer and of stfix's canonical form.
    if "full_precision_matrix_mult" in m:
        m = {"format": m["format"], "full_precision_matrix_mult": True}
    return m


def layer(kind, p, n, seed, opt):
    ts = []
    if kind == "int8":
        ts.append((p + ".weight", "I8", [n, K], lcg(n * K, seed)))
        ts.append((p + ".weight_scale", "F32", [n, 1], f32([0.0078125 * (1 + i % 4) for i in range(n)])))
    elif kind in ("fp8", "e5m2"):
        e5 = kind == "e5m2"
        ts.append((p + ".weight", "F8_E5M2" if e5 else "F8_E4M3", [n, K], fp8(n * K, seed, e5)))
        if not opt["no_scale"]:
            ts.append((p + ".weight_scale", "F32", [], f32([0.015625])))
        if opt["input_scale"]:
            ts.append((p + ".input_scale", "F32", [], f32([0.5])))
    elif kind == "nvfp4":
        ts.append((p + ".weight", "U8", [n, K // 2], lcg(n * K // 2, seed)))
        ts.append((p + ".weight_scale", "F8_E4M3", [n, K // 16], fp8(n * K // 16, seed + 7, False)))
        ts.append((p + ".weight_scale_2", "F32", [], f32([0.25])))
    else:
        ts.append((p + ".weight", "F8_E4M3", [n, K], fp8(n * K, seed, False)))
        ts.append((p + ".weight_scale", "U8", [n, K // 32], bytes(120 + i % 8 for i in range(n * K // 32))))
    return ts


def main():
    a = sys.argv[1:]
    out, opt_args = a[0], a[1:]
    opt = {"kind": "int8", "markers": True, "zero": [], "empty": [], "badutf8": [], "vary": [],
           "qmeta": False, "omit": [], "no_scale": False, "input_scale": False}
    i = 0
    while i < len(opt_args):
        o = opt_args[i]
        val = opt_args[i + 1] if i + 1 < len(opt_args) else None
        if o == "--kind":
            opt["kind"] = val
            i += 1
        elif o == "--no-markers":
            opt["markers"] = False
        elif o in ("--zero", "--empty", "--badutf8", "--vary"):
            opt[o[2:]].append(val)
            i += 1
        elif o == "--qmeta":
            opt["qmeta"] = True
        elif o == "--qmeta-omit":
            opt["omit"].append(val)
            i += 1
        elif o == "--no-scale":
            opt["no_scale"] = True
        elif o == "--input-scale":
            opt["input_scale"] = True
        else:
            sys.exit("unknown option " + o)
        i += 1
    kind = opt["kind"]
    if kind not in FORMAT:
        sys.exit("unknown kind " + kind)
    ts, layers = [], {}
    for seed, (p, n) in enumerate(LAYERS, 1):
        ts += layer(kind, p, n, seed, opt)
        m = marker(kind, p in opt["vary"])
        layers[p] = m
        if not opt["markers"]:
            continue
        text = json.dumps(m).encode("utf-8")
        if p in opt["zero"]:
            text = bytes(len(text))
        elif p in opt["empty"]:
            text = b""
        elif p in opt["badutf8"]:
            text = b"\xff" + text[1:]
        ts.append((p + ".comfy_quant", "U8", [len(text)], text))
    ts.append(("blocks.0.attn.qkv.bias", "BF16", [48], bf16([0.5] * 48)))
    ts.append(("blocks.0.norm.weight", "BF16", [K], bf16([1.0] * K)))
    meta = None
    if opt["qmeta"]:
        q = {"format_version": "1.0",
             "layers": {p: m for p, m in sorted(layers.items()) if p not in opt["omit"]}}
        meta = {"_quantization_metadata": json.dumps(q)}
    with open(out, "wb") as f:
        f.write(st_bytes(ts, meta))

if __name__ == "__main__":
    main()
