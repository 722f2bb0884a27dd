"""stfix.check and stfix.open against the program: the same documents, byte for byte."""
import concurrent.futures
import glob
import io
import os
import subprocess
import tracemalloc

import pytest

import stfix
from conftest import STFIX

FIXTURES = sorted(glob.glob("fixtures/comfy/*.safetensors") +
                  glob.glob("fixtures/comfy/*.index.json") +
                  glob.glob("fixtures/tp/*.safetensors") +
                  glob.glob("fixtures/demo/*.safetensors"))


def cli(*args):
    return subprocess.run([STFIX] + list(args), capture_output=True, text=True)


def test_fixtures_found():
    assert len(FIXTURES) > 40


@pytest.mark.parametrize("path", FIXTURES)
def test_to_json_equals_cli(path):
    p = cli("check", "--json", path)
    if p.returncode not in (0, 1):
        with pytest.raises(stfix.Error) as e:
            stfix.check(path)
        assert e.value.exit_code == p.returncode
        return
    r = stfix.check(path)
    assert r.to_json() == p.stdout
    assert r.ok == (p.returncode == 0)


@pytest.mark.parametrize("target", ["sglang", "comfyui", "sglang,comfyui"])
def test_targets_and_tp_equal_cli(target):
    for path in glob.glob("fixtures/tp/*.safetensors")[:4]:
        p = cli("check", "--json", "--target", target, "--tp", "2,8", path)
        r = stfix.check(path, target=target, tp=[2, 8])
        assert r.to_json() == p.stdout


def test_numeric_and_json_lines_equal_cli():
    paths = [p for p in FIXTURES if "probe_" in p]
    p = cli("check", "--json", "--numeric", "-j", "2", *paths)
    reports = stfix.check(paths, numeric=True, jobs=2)
    assert "".join(r.to_json(oneline=True) for r in reports) == p.stdout


def test_report_fields():
    r = stfix.check("fixtures/comfy/r12_missing_scale.safetensors", target="sglang")
    assert not r.ok
    d = r.errors[0]
    assert (d.rule, d.severity, d.effect, d.layer) == ("R12", "error", "refuses",
                                                        "blocks.0.attn.qkv")
    assert d.file == "fixtures/comfy/r12_missing_scale.safetensors"
    assert d.message == ("Comfy layer 'blocks.0.attn.qkv' is missing checkpoint tensors: "
                         "['blocks.0.attn.qkv.weight_scale']")


def test_open_path_and_file_object():
    path = "fixtures/comfy/healthy_int8_g64.safetensors"
    with stfix.open(path) as c:
        names = [t.name for t in c.tensors]
        data = {n: bytes(c.tensor_bytes(n)) for n in names}
        meta = c.metadata
    with open(path, "rb") as f:
        raw = f.read()
    with stfix.open(io.BytesIO(raw), name="mem.safetensors") as c:
        assert [t.name for t in c.tensors] == names
        assert {n: bytes(c.tensor_bytes(n)) for n in names} == data
        assert c.metadata == meta
        doc = stfix.check(c).to_json()
    assert doc == cli("check", "--json", path).stdout.replace(path, "mem.safetensors")


def test_file_object_errors_are_raised():
    class Broken(io.BytesIO):
        def readinto(self, b):
            raise ValueError("the host cannot read")

    with open("fixtures/comfy/healthy_int8_g64.safetensors", "rb") as f:
        raw = f.read()
    with pytest.raises(ValueError, match="the host cannot read"):
        stfix.open(Broken(raw))
    with pytest.raises(stfix.InvalidInputError) as e:
        stfix.open(io.BytesIO(raw[:100]), name="cut.safetensors")
    assert e.value.file == "cut.safetensors"


def test_eight_threads_at_once():
    paths = FIXTURES[:24]
    want = {}
    for p in paths:
        try:
            want[p] = stfix.check(p).to_json()
        except stfix.Error as e:
            want[p] = e.exit_code

    def one(p):
        try:
            return p, stfix.check(p).to_json()
        except stfix.Error as e:
            return p, e.exit_code

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        for _ in range(4):
            for p, got in ex.map(one, paths):
                assert got == want[p]


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_leak_over_10000_checks():
    path = "fixtures/comfy/r12_missing_scale.safetensors"
    for _ in range(1000):
        stfix.check(path).to_json()
    tracemalloc.start()
    before_py = tracemalloc.get_traced_memory()[0]
    before = rss_kib()
    for _ in range(10000):
        r = stfix.check(path)
        r.to_json()
    del r
    grown_py = tracemalloc.get_traced_memory()[0] - before_py
    tracemalloc.stop()
    grown = rss_kib() - before
    assert grown_py < 256 * 1024, grown_py
    # AddressSanitizer keeps freed memory in quarantine: resident memory grows there.
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert grown < 4096, grown


def test_explain_and_version():
    d = stfix.explain("R12")
    assert d["id"] == "R12" and d["title"]
    with pytest.raises(KeyError):
        stfix.explain("Z99")
    assert stfix.library_version == stfix.__version__
