#!/usr/bin/env python3
"""Helpers for tests/cli/hash.sh, Python 3 standard library only.

  hash_meta.py set IN OUT VALUE   copy IN with __metadata__
                                  modelspec.hash_sha256 = VALUE (the
                                  tensors and their bytes unchanged)
  hash_meta.py get FILE           print the file's modelspec.hash_sha256
  hash_meta.py lines FILE [NAME]  the SHA256, AUTOV2 and DATA lines of
                                  `stfix hash` for FILE, shown as NAME
  hash_meta.py data FILE          "0x" and the SHA-256 of the tensor data
"""
import hashlib
import json
import struct
import sys

KEY = "modelspec.hash_sha256"


def split(path):
    d = open(path, "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    return d, n, json.loads(d[8:8 + n])


def main():
    op = sys.argv[1]
    if op == "set":
        d, n, hdr = split(sys.argv[2])
        hdr.setdefault("__metadata__", {})[KEY] = sys.argv[4]
        h = json.dumps(hdr, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        open(sys.argv[3], "wb").write(struct.pack("<Q", len(h)) + h + d[8 + n:])
    elif op == "get":
        print(split(sys.argv[2])[2]["__metadata__"][KEY])
    elif op == "data":
        d, n, _ = split(sys.argv[2])
        print("0x" + hashlib.sha256(d[8 + n:]).hexdigest())
    elif op == "lines":
        d, n, _ = split(sys.argv[2])
        name = sys.argv[3] if len(sys.argv) > 3 else sys.argv[2]
        whole = hashlib.sha256(d).hexdigest()
        print("SHA256 %s  %s" % (whole, name))
        print("AUTOV2 %s  %s" % (whole[:10], name))
        print("DATA   %s  %s" % (hashlib.sha256(d[8 + n:]).hexdigest(), name))


main()
