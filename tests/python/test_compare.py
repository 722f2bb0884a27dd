"""stfix.hash and stfix.diff against the program."""
import subprocess

import pytest

import stfix
from conftest import STFIX

PAIRS = [("fixtures/comfy/healthy_int8_g64.safetensors",
          "fixtures/comfy/healthy_int8_g16.safetensors"),
         ("fixtures/comfy/healthy_int8_g64.safetensors",
          "fixtures/comfy/healthy_int8_g64.safetensors"),
         ("fixtures/comfy/healthy_fp8.safetensors", "fixtures/comfy/r12_missing_scale.safetensors")]


@pytest.mark.parametrize("path", ["fixtures/comfy/healthy_sharded.safetensors.index.json",
                                  "fixtures/demo/healthy.safetensors"])
def test_hash_equals_cli(path):
    p = subprocess.run([STFIX, "hash", path], capture_output=True, text=True, check=True)
    want = []
    for h in stfix.hash(path):
        want += ["SHA256 %s  %s" % (h["sha256"], h["file"]),
                 "AUTOV2 %s  %s" % (h["autov2"], h["file"]),
                 "DATA   %s  %s" % (h["data_sha256"], h["file"])]
    assert p.stdout.splitlines() == want


@pytest.mark.parametrize("a,b", PAIRS)
def test_diff_agrees_with_cli(a, b):
    p = subprocess.run([STFIX, "diff", a, b], capture_output=True, text=True)
    d = stfix.diff(a, b, numeric=True, jobs=2)
    assert d.identical == (p.returncode == 0)
    for name, what, _ in d.tensors:
        assert name in p.stdout
    for layer, _, _ in d.markers:
        assert layer in p.stdout
