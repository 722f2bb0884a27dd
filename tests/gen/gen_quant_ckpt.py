#!/usr/bin/env python3
"""Generate a quantized checkpoint with Flux-like layer shapes, fast: the
third-party exports the end-to-end bench repairs (tests/bench/fix_e2e.sh).

The layers are those of gen_bf16_ckpt.py (same blocks, same shapes, same
names); the Linear weights of the double blocks are quantized in one of
these forms, everything else (biases, norms, img_in, final_layer) stays
BF16 without a marker:

  sylvester   I8 codes, F32 [N,1] scales, marker int8_tensorwise with
              convrot and convrot_groupsize 128 (a Sylvester-ordered
              rotation: stfix-defects(7), sylvester-rotation)
  fp8         F8_E4M3 codes, one F32 scalar scale [], marker float8_e4m3fn
  int8-rows   I8 codes, F32 [N,1] scales, marker {"format":
              "int8_tensorwise"} without convrot (rowwise, no rotation)
  int8-cols   I8 codes quantized per column, F32 [1,K] scales, marker
              int8_tensorwise with convrot, G 256 (stfix-defects(7),
              column-scales)
  fp8-rows    F8_E4M3 codes quantized per row, F32 [N] scales, marker
              float8_e4m3fn_rowwise (a rowwise FP8 exporter's form)
  fp8-rows-e5m2
              F8_E5M2 codes quantized per row, F32 [N,1] scales, marker
              float8_e5m2
  fp8-rows-e4m3fn
              F8_E4M3 codes quantized per row, F32 [N] scales, marker
              float8_e4m3fn (row scales under a per-tensor format:
              stfix-checks(7), rules C24 and R62)
  fp8-input-cols
              as fp8, plus an F32 [K] input_scale per layer (one value
              per input column under a per-tensor format: rules C24 and
              R62)

Row-quantized codes reach |q| = 127 once in every row; column-quantized
ones once in every column and in only 2 of every 64 rows, so the H1 probe
(stfix-checks(7), NUMERIC PROBES) sees what the scales say. FP8 codes never
hold the NaN (or, for E5M2, Inf) encodings; row-quantized ones reach the
largest finite magnitude once in every row. Each weight repeats one block of 64 rows made from
a fixed seed, so a 2 GiB file takes seconds and never changes. The file is
canonical (lib/README.md, Canonical form).

Usage: gen_quant_ckpt.py KIND OUT SIZE [HIDDEN]
  KIND    sylvester | fp8 | int8-rows | int8-cols | fp8-rows | fp8-rows-e5m2 |
          fp8-rows-e4m3fn | fp8-input-cols
  SIZE    quantized weight bytes to reach, in bytes or with KiB/MiB/GiB
  HIDDEN  hidden size (default 3072; tests use a small one)
Python 3 standard library only.
"""
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_bf16_ckpt as bf  # noqa: E402  (shapes, sizes and the BF16 pattern)

BLOCK_ROWS = 64
# The safetensors dtype list in stfix's order; canonical files put a higher
# index first (lib/README.md, Canonical form).
DTYPES = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
          "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
          "C64", "F64", "I64", "U64"]
MARKERS = {
    "sylvester": {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 128},
    "fp8": {"format": "float8_e4m3fn"},
    "int8-rows": {"format": "int8_tensorwise"},
    "int8-cols": {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256},
    "fp8-rows": {"format": "float8_e4m3fn_rowwise"},
    "fp8-rows-e5m2": {"format": "float8_e5m2"},
    "fp8-rows-e4m3fn": {"format": "float8_e4m3fn"},
    "fp8-input-cols": {"format": "float8_e4m3fn"},
}
# Kinds with per-tensor FP8 codes and an F32 [] weight_scale.
FP8_TENSOR = ("fp8", "fp8-input-cols")
# Weight dtype and per-row maximum code of the row-quantized FP8 kinds.
FP8_ROWS = {"fp8-rows": ("F8_E4M3", 0x7E), "fp8-rows-e5m2": ("F8_E5M2", 0x7B),
            "fp8-rows-e4m3fn": ("F8_E4M3", 0x7E)}
# Codes in [-100, 100] from any byte; FP8 bytes with 0x7F/0xFF (NaN) moved off.
I8_SMALL = bytes(((v % 201) - 100) & 0xFF for v in range(256))
FP8_FINITE = bytes(v ^ 1 if v & 0x7F == 0x7F else v for v in range(256))
# E5M2 bytes with 0x7C..0x7F/0xFC..0xFF (Inf, NaN) moved four below.
E5M2_FINITE = bytes(v - 4 if v & 0x7C == 0x7C else v for v in range(256))


def code_block(kind, k, rng):
    """BLOCK_ROWS rows of k code bytes."""
    raw = bytes(rng.getrandbits(8) for _ in range(BLOCK_ROWS * k))
    if kind in FP8_TENSOR:
        return raw.translate(FP8_FINITE)
    if kind in FP8_ROWS:
        e4 = FP8_ROWS[kind][0] == "F8_E4M3"
        b = bytearray(raw.translate(FP8_FINITE if e4 else E5M2_FINITE))
        top = FP8_ROWS[kind][1]
        for r in range(BLOCK_ROWS):  # one maximum per row
            b[r * k + (r * 131 + 17) % k] = top | (0x80 if r % 2 else 0)
        return bytes(b)
    b = bytearray(raw.translate(I8_SMALL))
    if kind == "int8-cols":
        for c in range(k):  # rows 0 and 1 hold every column's maximum
            b[(c % 2) * k + c] = 127 if c % 4 < 2 else 0x81
    else:
        for r in range(BLOCK_ROWS):  # one maximum per row
            b[r * k + (r * 131 + 17) % k] = 127 if r % 2 else 0x81
    return bytes(b)


class Repeated:
    """n rows of k bytes: a block of BLOCK_ROWS rows again and again, written lazily."""

    def __init__(self, block, n, k):
        self.block, self.n, self.k = block, n, k

    def __len__(self):
        return self.n * self.k

    def write(self, f):
        whole, rest = divmod(self.n, BLOCK_ROWS)
        for _ in range(whole):
            f.write(self.block)
        f.write(self.block[: rest * self.k])


def tensors(kind, size):
    """(name, dtype, shape, bytes or Repeated) in canonical order."""
    rng = random.Random(20260503)
    pattern = bf.pattern()
    blocks, out = {}, []
    mk = json.dumps(MARKERS[kind]).encode()
    f32 = lambda vals: b"".join(struct.pack("<f", v) for v in vals)  # noqa: E731
    for name, shape in bf.tensors_for(2 * size):
        base = name[: -len(".weight")] if name.endswith(".weight") else None
        if not (name.startswith("double_blocks.") and base and len(shape) == 2):
            n = 2 * shape[0] * (shape[1] if len(shape) > 1 else 1)
            out.append((name, "BF16", shape, (pattern * (n // len(pattern) + 1))[:n]))
            continue
        n, k = shape
        if k not in blocks:
            blocks[k] = code_block(kind, k, rng)
        wdt = "F8_E4M3" if kind in FP8_TENSOR else FP8_ROWS[kind][0] if kind in FP8_ROWS else "I8"
        out.append((name, wdt, shape, Repeated(blocks[k], n, k)))
        if kind in FP8_TENSOR:
            out.append((base + ".weight_scale", "F32", [], f32([0.002])))
            if kind == "fp8-input-cols":
                out.append((base + ".input_scale", "F32", [k],
                            f32(0.01 + 0.001 * (c % 5) for c in range(k))))
        elif kind in FP8_ROWS:
            out.append((base + ".weight_scale", "F32", [n, 1] if kind == "fp8-rows-e5m2" else [n],
                        f32(0.001 + 0.0001 * (r % 7) for r in range(n))))
        elif kind == "int8-cols":
            out.append((base + ".weight_scale", "F32", [1, k],
                        f32(0.001 + 0.0001 * (c % 7) for c in range(k))))
        else:
            out.append((base + ".weight_scale", "F32", [n, 1],
                        f32(0.001 + 0.0001 * (r % 7) for r in range(n))))
        out.append((base + ".comfy_quant", "U8", [len(mk)], mk))
    return sorted(out, key=lambda t: (-DTYPES.index(t[1]), t[0].encode("utf-8")))


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in MARKERS:
        sys.exit("usage: gen_quant_ckpt.py sylvester|fp8|int8-rows|int8-cols|fp8-rows|"
                 "fp8-rows-e5m2|fp8-rows-e4m3fn|fp8-input-cols OUT SIZE [HIDDEN]")
    if len(sys.argv) == 5:
        bf.HIDDEN = int(sys.argv[4])
    kind, path, size = sys.argv[1], sys.argv[2], bf.parse_size(sys.argv[3])
    ts = tensors(kind, size)
    parts, off = [], 0
    for name, dt, shape, data in ts:
        parts.append('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'
                     % (name, dt, ",".join(map(str, shape)), off, off + len(data)))
        off += len(data)
    header = ("{" + ",".join(parts) + "}").encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        for _, _, _, data in ts:
            if isinstance(data, Repeated):
                data.write(f)
            else:
                f.write(data)


if __name__ == "__main__":
    main()
