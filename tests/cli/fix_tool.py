#!/usr/bin/env python3
"""Small safetensors helpers for tests/cli/fix.sh (Python 3 stdlib only).

  fix_tool.py tensor FILE NAME            raw bytes of tensor NAME on stdout
  fix_tool.py meta FILE KEY               __metadata__[KEY] on stdout (exit 1 if absent)
  fix_tool.py names FILE                  tensor names, one per line, sorted
  fix_tool.py edit IN OUT NAME SHAPE      copy IN with NAME's shape set to the JSON
                                          list SHAPE (same bytes)
  fix_tool.py marker IN OUT PREFIX TEXT   copy IN with PREFIX.comfy_quant set to TEXT
  fix_tool.py widened OUT IN NAME         exit 0 iff F32 tensor NAME of OUT holds the
                                          BF16/F16 tensor NAME of IN, widened exactly
  fix_tool.py dequant OUT IN PREFIX       exit 0 iff OUT's PREFIX.weight (F32 or BF16)
                                          equals IN's I8 codes x F32 row scale (no
                                          rotation), rounded to that dtype (RNE)
  fix_tool.py new OUT NAME DTYPE SHAPE V  write a file holding one tensor NAME of
                                          DTYPE (BF16, F16 or F32) and JSON list
                                          SHAPE, from the JSON list of numbers V
                                          (rounded to DTYPE, RNE)
Output files are written canonically (dtype index descending, then name).
"""
import json
import struct
import sys

ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
         "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
         "C64", "F64", "I64", "U64"]


def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", None)
    ts = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        ts[k] = [v["dtype"], v["shape"], b[8 + n + s:8 + n + e]]
    return meta, ts


def save(path, meta, ts):
    order = sorted(ts, key=lambda k: (-ORDER.index(ts[k][0]), k.encode("utf-8")))
    hdr = {}
    if meta is not None:
        hdr["__metadata__"] = meta
    off = 0
    for k in order:
        d, s, data = ts[k]
        hdr[k] = {"dtype": d, "shape": s, "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(ts[k][2] for k in order))


def f32_round(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bf16_bits(x):
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def widen(dtype, raw):
    n = len(raw) // 2
    hs = struct.unpack("<%dH" % n, raw)
    if dtype == "BF16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in hs]
    return list(struct.unpack("<%de" % n, raw))


def main():
    a = sys.argv[1:]
    cmd = a[0]
    if cmd == "tensor":
        sys.stdout.buffer.write(load(a[1])[1][a[2]][2])
    elif cmd == "meta":
        meta = load(a[1])[0] or {}
        if a[2] not in meta:
            sys.exit(1)
        sys.stdout.write(meta[a[2]])
    elif cmd == "names":
        print("\n".join(sorted(load(a[1])[1])))
    elif cmd == "edit":
        meta, ts = load(a[1])
        ts[a[3]][1] = json.loads(a[4])
        save(a[2], meta, ts)
    elif cmd == "marker":
        meta, ts = load(a[1])
        mb = a[4].encode("utf-8")
        ts[a[3] + ".comfy_quant"] = ["U8", [len(mb)], mb]
        save(a[2], meta, ts)
    elif cmd == "widened":
        out, inp = load(a[1])[1][a[3]], load(a[2])[1][a[3]]
        want = widen(inp[0], inp[2])
        got = list(struct.unpack("<%df" % len(want), out[2])) if out[0] == "F32" else None
        if got != want or out[1] != inp[1]:
            sys.exit("widened: %s differs" % a[3])
    elif cmd == "dequant":
        p = a[3]
        out = load(a[1])[1][p + ".weight"]
        ti = load(a[2])[1]
        q = struct.unpack("<%db" % len(ti[p + ".weight"][2]), ti[p + ".weight"][2])
        s = ti[p + ".weight_scale"][2]
        s = struct.unpack("<%df" % (len(s) // 4), s)
        k = len(q) // len(s)
        vals = [f32_round(q[i] * s[i // k]) for i in range(len(q))]
        if out[0] == "F32":
            want = struct.pack("<%df" % len(vals), *vals)
        elif out[0] == "BF16":
            want = struct.pack("<%dH" % len(vals), *[bf16_bits(v) for v in vals])
        else:
            sys.exit("dequant: unexpected dtype %s" % out[0])
        if out[2] != want:
            sys.exit("dequant: %s.weight differs from codes x scale" % p)
    elif cmd == "new":
        vals = json.loads(a[5])
        if a[3] == "BF16":
            raw = struct.pack("<%dH" % len(vals), *[bf16_bits(f32_round(v)) for v in vals])
        else:
            raw = struct.pack("<%d%s" % (len(vals), {"F16": "e", "F32": "f"}[a[3]]), *vals)
        save(a[1], None, {a[2]: [a[3], json.loads(a[4]), raw]})
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
