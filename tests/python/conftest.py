"""The stfix package under test: the source tree's lib/python with the library of this
build (STFIX_LIBRARY, set by tests/run.sh), and the program to compare with (STFIX)."""
import glob
import json
import os
import struct
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "lib", "python"))
if not os.environ.get("STFIX_LIBRARY"):
    found = sorted(glob.glob(os.path.join(BUILD, "libstfix.so.*.*.*")))
    if found:
        os.environ["STFIX_LIBRARY"] = found[0]
STFIX = os.environ.get("STFIX", os.path.join(BUILD, "stfix"))


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    """Paths in the tests are relative to the source tree, as the program's are."""
    monkeypatch.chdir(ROOT)


def write_export(path, layers=16, nbytes=1 << 20):
    """A plain BF16 export of `layers` Linear weights of `nbytes` each."""
    hdr, off = {}, 0
    cols = nbytes // 2 // 512
    for i in range(layers):
        hdr["blocks.%d.mlp.weight" % i] = {"dtype": "BF16", "shape": [512, cols],
                                            "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.write(b"\x80\x3f" * (off // 2))  # BF16 1.0
    return path
