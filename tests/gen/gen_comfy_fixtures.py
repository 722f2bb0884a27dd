#!/usr/bin/env python3
"""Generate the ComfyUI/SGLang check fixtures under fixtures/comfy/.

Python 3 standard library only. Every file is written in the canonical
safetensors layout (lib/README.md, Canonical form) straight from struct, so
the output is byte-for-byte deterministic. Each broken fixture is built to
trip one acceptance rule of stfix-checks(7), SGLANG RULES or COMFYUI RULES; the
MANIFEST lists "<file> <rule>" for every rule a fixture must trigger (a
file may carry a SGLang rule and its ComfyUI counterpart) and
"<file> healthy" for the ones that must pass with no error.

Usage: gen_comfy_fixtures.py [OUTDIR]   (default: fixtures/comfy)
"""
import json
import os
import struct
import sys

# Dtype index order of the reference (writer sorts by it, descending).
DTYPES = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
          "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16",
          "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
ITEMSIZE = {"U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
            "F16": 2, "BF16": 2, "F32": 4}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def json_str(s):
    """serde_json escaping (lib/README.md, Canonical form)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == '\\':
            out.append('\\\\')
        elif o < 0x20:
            out.append({8: '\\b', 12: '\\f', 10: '\\n', 13: '\\r', 9: '\\t'}.get(o, '\\u%04x' % o))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def st_bytes(tensors, meta=None):
    """tensors: list of (name, dtype, shape, data bytes). Canonical file bytes."""
    order = sorted(tensors, key=lambda t: (-DTYPES.index(t[1]), t[0].encode("utf-8")))
    parts = []
    if meta is not None:
        items = sorted(meta.items(), key=lambda kv: kv[0].encode("utf-8"))
        parts.append('"__metadata__":{' + ",".join(json_str(k) + ":" + json_str(v)
                                                     for k, v in items) + "}")
    off = 0
    blobs = []
    for name, dt, shape, data in order:
        want = numel(shape) * ITEMSIZE[dt]
        assert len(data) == want, (name, len(data), want)
        parts.append(json_str(name) + ':{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'
                     % (dt, ",".join(str(d) for d in shape), off, off + len(data)))
        off += len(data)
        blobs.append(data)
    hdr = ("{" + ",".join(parts) + "}").encode("utf-8")
    hdr += b" " * ((8 - len(hdr) % 8) % 8)
    return struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs)


# ------------------------------------------------------------ tensor data

class Rng:
    """Small LCG so the data never depends on Python's random module."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFF

    def next(self):
        self.s = (self.s * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.s >> 8

    def int_in(self, lo, hi):
        return lo + self.next() % (hi - lo + 1)


def i8_rows(n, k, seed=1, sat=127, lo=-100, hi=100):
    """Row-quantized codes: every row reaches |q| = sat once, columns rarely."""
    r = Rng(seed)
    q = [[r.int_in(lo, hi) for _ in range(k)] for _ in range(n)]
    span = min(k, 16)
    for i in range(n):
        q[i][(i * 7) % span] = sat if i % 2 == 0 else -sat
    return bytes((v & 0xFF) for row in q for v in row)


def i8_cols(n, k, seed=2):
    """Column-quantized codes: every column reaches 127 once, rows rarely."""
    r = Rng(seed)
    q = [[r.int_in(-100, 100) for _ in range(k)] for _ in range(n)]
    span = min(n, 16)
    for j in range(k):
        q[(j * 7) % span][j] = 127
    return bytes((v & 0xFF) for row in q for v in row)


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def scales(n, base=0.001):
    return f32([base * (1 + (i % 7) / 8.0) for i in range(n)])


def bf16(vals):
    out = b""
    for v in vals:
        out += struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:]
    return out


def f16(vals):
    return struct.pack("<%de" % len(vals), *vals)


def u8(n, seed=3):
    r = Rng(seed)
    return bytes(r.int_in(0, 255) for _ in range(n))


def fp8(n, seed=4):
    # E4M3 bytes, avoiding the NaN encodings 0x7F/0xFF.
    r = Rng(seed)
    return bytes(r.int_in(0, 0x7E) | (0x80 if r.next() & 1 else 0) for _ in range(n))


def marker(p, obj=None, raw=None, dtype="U8"):
    data = raw if raw is not None else json.dumps(obj).encode("utf-8")
    if dtype == "BF16":  # two bytes per element: pad to an even length
        if len(data) % 2:
            data += b" "
        return (p + ".comfy_quant", "BF16", [len(data) // 2], data)
    return (p + ".comfy_quant", dtype, [len(data)], data)


INT8_256 = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256}


def int8_layer(p, n, k, g=256, mk=None, seed=1, scale=None, weight=None, with_marker=True):
    m = mk if mk is not None else {"format": "int8_tensorwise", "convrot": True,
                                   "convrot_groupsize": g}
    ts = [(p + ".weight", "I8", [n, k], weight if weight is not None else i8_rows(n, k, seed)),
          scale if scale is not None else (p + ".weight_scale", "F32", [n, 1], scales(n))]
    if with_marker:
        ts.append(marker(p, m))
    return ts


def w4a4_layer(p, n, k, g=256, mk=None, seed=5, scale=None):
    m = mk if mk is not None else {"format": "convrot_w4a4", "convrot_groupsize": g}
    r = Rng(seed)
    packed = bytes(((r.int_in(-7, 7) & 0xF) | ((r.int_in(-7, 7) & 0xF) << 4))
                   for _ in range(n * k // 2))
    return [(p + ".weight", "I8", [n, k // 2], packed),
            scale if scale is not None else (p + ".weight_scale", "F32", [n], scales(n)),
            marker(p, m)]


def w4a8_layer(p, n, k, gs=16, mk=None, drop=(), over=None):
    m = mk if mk is not None else {"format": "asym_w4a8_int8", "group_size": gs,
                                   "convrot": True, "convrot_groupsize": 256}
    t = {
        "weight": (p + ".weight", "I8", [n, k // 2], u8(n * k // 2, 6)),
        "weight_s_rel": (p + ".weight_s_rel", "F8_E4M3", [n, k // gs], fp8(n * (k // gs), 7)),
        "weight_s_channel": (p + ".weight_s_channel", "F32", [n], scales(n)),
    }
    for key, val in (over or {}).items():
        t[key] = val
    out = [v for key, v in t.items() if key not in drop]
    out.append(marker(p, m))
    return out


def nvfp4_layer(p, n, k, over=None, extra=()):
    t = {
        "weight": (p + ".weight", "U8", [n, k // 2], u8(n * k // 2, 8)),
        "weight_scale": (p + ".weight_scale", "F8_E4M3", [n, k // 16], fp8(n * (k // 16), 9)),
        "weight_scale_2": (p + ".weight_scale_2", "F32", [], f32([0.5])),
    }
    for key, val in (over or {}).items():
        t[key] = val
    return list(t.values()) + list(extra) + [marker(p, {"format": "nvfp4"})]


def plain(p, n, k):
    """A BF16 Linear plus bias, unquantized (R26): realistic filler."""
    return [(p + ".weight", "BF16", [n, k], bf16([((i * 13) % 17 - 8) / 64.0 for i in range(n * k)])),
            (p + ".bias", "F32", [n], f32([0.0] * n))]


def qmeta(layers):
    return json.dumps({"format_version": "1.0", "layers": layers})


# ---------------------------------------------------------------- fixtures

def fixtures():
    """Yield (file name, tensors, metadata, [rules] or None for healthy)."""
    A = "blocks.0.attn.qkv"
    F = "blocks.0.mlp.fc1"
    fmt_pt = {"format": "pt"}

    # --- healthy
    yield "healthy_int8_g16.safetensors", int8_layer(A, 8, 64, 16) + plain("norm_out", 4, 8), fmt_pt, None
    yield "healthy_int8_g64.safetensors", int8_layer(A, 8, 128, 64) + plain("norm_out", 4, 8), fmt_pt, None
    yield "healthy_int8_g256.safetensors", int8_layer(A, 16, 256, 256) + int8_layer(F, 8, 256, 256, seed=9), fmt_pt, None
    yield "healthy_w4a4.safetensors", w4a4_layer(A, 16, 256, 256), fmt_pt, None
    yield "healthy_mixed_int8_w4a4.safetensors", w4a4_layer(A, 16, 256, 64) + int8_layer(F, 8, 256, 256), fmt_pt, None
    md = dict(fmt_pt)
    md["_quantization_metadata"] = qmeta({A: INT8_256})
    yield "healthy_meta_only.safetensors", int8_layer(A, 16, 256, with_marker=False), md, None
    yield "healthy_fp8.safetensors", [(A + ".weight", "F8_E4M3", [16, 64], fp8(16 * 64)),
                                      (A + ".weight_scale", "F32", [], f32([0.02])),
                                      (A + ".input_scale", "F32", [], f32([0.5])),
                                      marker(A, {"format": "float8_e4m3fn"})], fmt_pt, None
    # Sharded: written separately (see main); listed here for the manifest.

    # --- SGLang inspection R1-R10
    def bad_meta(v):
        md2 = dict(fmt_pt)
        md2["_quantization_metadata"] = v
        return md2
    yield "r01_meta_not_json.safetensors", int8_layer(A, 16, 256), bad_meta('{"layers": '), ["R1", "C20"]
    yield "r02_meta_not_object.safetensors", int8_layer(A, 16, 256), bad_meta("[1, 2]"), ["R2", "C20"]
    yield "r03_meta_no_layers.safetensors", int8_layer(A, 16, 256), bad_meta('{"format_version": "1.0"}'), ["R3", "C20"]
    yield ("r04_meta_layer_string.safetensors", int8_layer(A, 16, 256),
           bad_meta(json.dumps({"format_version": "1.0", "layers": {A: "int8_tensorwise"}})), ["R4", "C21"])
    yield ("r05_conflict.safetensors", int8_layer(A, 16, 256),
           bad_meta(qmeta({A: {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 64}})), ["R5"])
    ts = int8_layer(A, 16, 256, with_marker=False)
    ts.append(marker(A, raw=json.dumps(INT8_256).encode() + b"\x00"))
    yield "r06_marker_nul.safetensors", ts, fmt_pt, ["R6", "C21"]
    ts = int8_layer(A, 16, 256, with_marker=False)
    ts.append(marker(A, raw=b'["int8_tensorwise"]'))
    yield "r07_marker_not_object.safetensors", ts, fmt_pt, ["R7", "C21"]
    ts = int8_layer(A, 16, 256, with_marker=False)
    ts.append(marker(A, INT8_256, dtype="BF16"))
    yield "r08_marker_bf16.safetensors", ts, fmt_pt, ["R8", "C21"]
    md = dict(fmt_pt)
    md["quant_format"] = "MXFP8"
    yield "r09_mxfp8_shape.safetensors", [(A + ".weight", "F8_E4M3", [8, 64], fp8(8 * 64)),
                                          (A + ".weight_scale", "U8", [8, 4], u8(32))], md, ["R9", "C1"]
    yield "r10_no_marker.safetensors", int8_layer(A, 16, 256, with_marker=False), fmt_pt, ["R10", "C1"]

    # --- R12-R20
    yield ("r12_missing_scale.safetensors", [t for t in int8_layer(A, 16, 256) if not t[0].endswith("_scale")],
           fmt_pt, ["R12", "C4"])
    yield ("r12_missing_weight.safetensors", [t for t in int8_layer(A, 16, 256) if not t[0].endswith(".weight")],
           fmt_pt, ["R12", "C5"])
    yield ("r13_tensorwise_3d.safetensors",
           int8_layer(A, 4, 64, 16, weight=i8_rows(4 * 2, 64), scale=(A + ".weight_scale", "F32", [], f32([0.01])))
           [1:] + [(A + ".weight", "I8", [2, 4, 64], i8_rows(8, 64))], fmt_pt, ["R13"])
    yield ("r14_scale_bf16.safetensors", int8_layer(A, 16, 256, scale=(A + ".weight_scale", "BF16", [16, 1],
                                                                       bf16([0.001] * 16))), fmt_pt, ["R14", "C11"])
    yield ("r14_weight_u8.safetensors", [(A + ".weight", "U8", [16, 256], i8_rows(16, 256))] + int8_layer(A, 16, 256)[1:],
           fmt_pt, ["R14", "C10"])
    yield ("r15_flat_scale_square.safetensors", int8_layer(A, 256, 256, scale=(A + ".weight_scale", "F32", [256],
                                                                               scales(256))), fmt_pt, ["R15", "C9"])
    yield ("r15_grouped_scale.safetensors", int8_layer(A, 16, 256, scale=(A + ".weight_scale", "F32", [16, 2],
                                                                          scales(32))), fmt_pt, ["R15", "C8"])
    yield ("r16_w4a4_scale_f16.safetensors", w4a4_layer(A, 16, 256, scale=(A + ".weight_scale", "F16", [16],
                                                                           f16([0.001] * 16))), fmt_pt, ["R16", "C11"])
    yield ("r17_w4a4_scale_2d.safetensors", w4a4_layer(A, 16, 256, scale=(A + ".weight_scale", "F32", [16, 1],
                                                                          scales(16))), fmt_pt, ["R17", "C9"])
    yield "r18_w4a4_g128.safetensors", w4a4_layer(A, 16, 256, 128), fmt_pt, ["R18", "C6"]
    yield "r19_w4a4_k96.safetensors", w4a4_layer(A, 16, 96, 16), fmt_pt, ["R19", "C16"]
    yield ("r20_collision.safetensors", int8_layer(A, 16, 256) + int8_layer("model.diffusion_model." + A, 16, 256),
           fmt_pt, ["R20"])

    # --- config construction and per-layer selection
    yield ("r23_no_convrot.safetensors", int8_layer(A, 16, 256, mk={"format": "int8_tensorwise"}), fmt_pt, ["R23"])
    yield ("r23_convrot_int.safetensors",
           int8_layer(A, 16, 256, mk={"format": "int8_tensorwise", "convrot": 1, "convrot_groupsize": 256}),
           fmt_pt, ["R23", "C19"])
    yield ("r23_params_nested.safetensors",
           int8_layer(A, 16, 256, mk={"format": "int8_tensorwise",
                                      "params": {"convrot": True, "convrot_groupsize": 256}}),
           fmt_pt, ["R23", "C14"])
    yield "r24_g128.safetensors", int8_layer(A, 16, 256, 128), fmt_pt, ["R24", "C6", "H2"]
    yield ("r24_g_string.safetensors",
           int8_layer(A, 16, 256, mk={"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": "256"}),
           fmt_pt, ["R24"])
    yield ("r25_conv_marker.safetensors",
           [("blocks.0.conv.weight", "I8", [8, 4, 3, 3], i8_rows(8, 36)),
            ("blocks.0.conv.weight_scale", "F32", [8, 1], scales(8)),
            marker("blocks.0.conv", INT8_256)], fmt_pt, ["R25", "C12"])
    yield "r27_k_not_multiple.safetensors", int8_layer(A, 16, 96, 64), fmt_pt, ["R27", "C7"]
    yield ("r30_unknown_format.safetensors",
           int8_layer(A, 16, 256, mk={"format": "int8_blockwise", "convrot": True, "convrot_groupsize": 256}),
           fmt_pt, ["R30", "C3"])
    yield ("r30_missing_format.safetensors",
           int8_layer(A, 16, 256, mk={"convrot": True, "convrot_groupsize": 256, "per_row": True}),
           fmt_pt, ["R30", "C2"])
    yield ("r30_int8_plus_fp8.safetensors",
           int8_layer(A, 16, 256) + [(F + ".weight", "F8_E4M3", [8, 64], fp8(8 * 64)),
                                     (F + ".weight_scale", "F32", [], f32([0.02])),
                                     marker(F, {"format": "float8_e4m3fn"})], fmt_pt, ["R30"])
    yield ("r40_scalar_scale_convrot.safetensors",
           int8_layer(A, 16, 256, scale=(A + ".weight_scale", "F32", [], f32([0.01]))), fmt_pt, ["R40"])

    # --- W4A8
    yield "r44_w4a8_group2.safetensors", w4a8_layer(A, 8, 64, gs=16, mk={
        "format": "asym_w4a8_int8", "group_size": 2, "convrot": True, "convrot_groupsize": 256}), fmt_pt, ["R44", "C22"]
    yield ("r45_w4a8_srel_u8.safetensors",
           w4a8_layer(A, 8, 64, over={"weight_s_rel": (A + ".weight_s_rel", "U8", [8, 4], u8(32))}), fmt_pt, ["R45", "C22"])
    yield ("r46_w4a8_schan_f16.safetensors",
           w4a8_layer(A, 8, 64, over={"weight_s_channel": (A + ".weight_s_channel", "F16", [8], f16([0.01] * 8))}),
           fmt_pt, ["R46", "C22"])
    yield ("r47_w4a8_3d.safetensors",
           w4a8_layer(A, 8, 64, over={"weight": (A + ".weight", "I8", [2, 4, 32], u8(256))}), fmt_pt, ["R47", "C22"])
    yield ("r48_w4a8_srel_shape.safetensors",
           w4a8_layer(A, 8, 64, over={"weight_s_rel": (A + ".weight_s_rel", "F8_E4M3", [8, 2], fp8(16))}),
           fmt_pt, ["R48", "C22"])
    yield ("r49_w4a8_codebook.safetensors",
           w4a8_layer(A, 8, 64) + [(A + ".weight_codebook", "F32", [8], f32([0.0] * 8))], fmt_pt, ["R49", "C22"])
    yield ("r49_w4a8_correction.safetensors",
           w4a8_layer(A, 8, 64) + [(A + ".weight_correction", "F32", [8, 4], f32([0.0] * 32))], fmt_pt, ["R49", "C22"])
    yield ("r60_w4a8_int8_companion.safetensors", w4a8_layer(A, 8, 64) + int8_layer(F, 8, 256), fmt_pt, ["R60", "C22"])
    yield ("r61_w4a8_no_convrot.safetensors",
           w4a8_layer(A, 8, 64, mk={"format": "asym_w4a8_int8", "group_size": 16}), fmt_pt, ["R61", "C22"])

    # --- NVFP4
    yield ("r50_nvfp4_weight_i8.safetensors",
           nvfp4_layer(A, 16, 64, over={"weight": (A + ".weight", "I8", [16, 32], u8(512))}), fmt_pt, ["R50", "C10"])
    yield ("r51_nvfp4_scale2_bf16.safetensors",
           nvfp4_layer(A, 16, 64, over={"weight_scale_2": (A + ".weight_scale_2", "BF16", [], bf16([0.5]))}),
           fmt_pt, ["R51", "C11"])
    yield ("r52_nvfp4_3d.safetensors",
           nvfp4_layer(A, 16, 64, over={"weight": (A + ".weight", "U8", [2, 8, 32], u8(512))}), fmt_pt, ["R52"])
    yield ("r53_nvfp4_scale_shape.safetensors",
           nvfp4_layer(A, 16, 64, over={"weight_scale": (A + ".weight_scale", "F8_E4M3", [16, 2], fp8(32))}),
           fmt_pt, ["R53"])
    yield ("r54_nvfp4_prequant.safetensors",
           nvfp4_layer(A, 16, 64, extra=[(A + ".pre_quant_scale", "F32", [32], f32([1.0] * 32))]), fmt_pt, ["R54"])

    # --- W4A4 config
    yield ("r57_w4a4_linear_dtype.safetensors",
           w4a4_layer(A, 16, 256, mk={"format": "convrot_w4a4", "convrot_groupsize": 256, "linear_dtype": "fp4"}),
           fmt_pt, ["R57", "C23"])

    # --- ComfyUI-only
    md = dict(fmt_pt)
    md["_quantization_metadata"] = qmeta({"model.diffusion_model." + A: INT8_256})
    yield "c15_meta_prefix.safetensors", int8_layer(A, 16, 256, with_marker=False), md, ["C15", "R10"]
    # ... and the other way: bare metadata keys, all-in-one (prefixed) tensors.
    md = dict(fmt_pt)
    md["_quantization_metadata"] = qmeta({A: INT8_256})
    yield ("c15_meta_bare.safetensors", int8_layer("model.diffusion_model." + A, 16, 256, with_marker=False),
           md, ["C15", "R10"])

    # --- numeric probes (stfix check --numeric)
    bad = [0.001] * 16
    bad[3] = float("nan")
    bad[5] = -0.5
    yield ("probe_bad_scales.safetensors", int8_layer(A, 16, 256, scale=(A + ".weight_scale", "F32", [16, 1], f32(bad))),
           fmt_pt, ["N1", "N2"])
    yield ("probe_colquant_square.safetensors",
           int8_layer(A, 64, 64, 64, weight=i8_cols(64, 64), scale=(A + ".weight_scale", "F32", [64], scales(64))),
           fmt_pt, ["H1", "R15", "C9"])
    yield ("probe_rowquant_flat.safetensors",
           int8_layer(A, 64, 64, 64, scale=(A + ".weight_scale", "F32", [64], scales(64))), fmt_pt, ["H1", "R15"])
    r = Rng(11)
    q = []
    for i in range(16):
        for j in range(128):
            q.append((127 if i % 2 else -127) if j % 64 == 0 else r.int_in(-20, 20))
    yield ("probe_sylvester_data.safetensors", int8_layer(A, 16, 128, 64, weight=bytes(v & 0xFF for v in q)),
           fmt_pt, ["H2"])


def sharded():
    """A healthy two-shard checkpoint: (index name, index text, [(shard name, bytes)])."""
    A = "blocks.0.attn.qkv"
    F = "blocks.0.mlp.fc1"
    s1 = int8_layer(A, 16, 256)
    s2 = int8_layer(F, 8, 256, seed=9) + plain("norm_out", 4, 8)
    names = ["healthy_sharded-00001-of-00002.safetensors", "healthy_sharded-00002-of-00002.safetensors"]
    wm = {}
    total = 0
    for nm, ts in zip(names, (s1, s2)):
        for t in ts:
            wm[t[0]] = nm
            total += len(t[3])
    index = json.dumps({"metadata": {"total_size": total}, "weight_map": wm}, indent=2, sort_keys=True) + "\n"
    return ("healthy_sharded.safetensors.index.json", index,
            [(names[0], st_bytes(s1, {"format": "pt"})), (names[1], st_bytes(s2, {"format": "pt"}))])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("fixtures", "comfy")
    os.makedirs(out, exist_ok=True)
    manifest = []
    for name, ts, meta, rules in fixtures():
        with open(os.path.join(out, name), "wb") as f:
            f.write(st_bytes(ts, meta))
        if rules is None:
            manifest.append("%s healthy" % name)
        else:
            manifest.extend("%s %s" % (name, r) for r in rules)
    iname, itext, shards = sharded()
    for sn, data in shards:
        with open(os.path.join(out, sn), "wb") as f:
            f.write(data)
    with open(os.path.join(out, iname), "w", newline="\n") as f:
        f.write(itext)
    manifest.append("%s healthy" % iname)
    with open(os.path.join(out, "MANIFEST"), "w", newline="\n") as f:
        f.write("# <file> <rule id> per broken fixture; <file> healthy. Generated by\n"
                "# tests/gen/gen_comfy_fixtures.py; do not edit by hand.\n")
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
