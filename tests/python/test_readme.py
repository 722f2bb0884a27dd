"""The Python examples of README.md run: each indented block after a line
"<!-- python example: NAME -->", in a scratch directory holding model.safetensors."""
import os
import re
import shutil

import pytest

from conftest import ROOT


def examples():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"<!-- python example: (\w+) -->\n\n((?:    .*\n|\n)+)", text):
        code = "\n".join(line[4:] for line in m.group(2).rstrip("\n").split("\n"))
        out[m.group(1)] = code
    return out


def run(name, fixture, tmp_path, monkeypatch):
    shutil.copy(os.path.join(ROOT, fixture), tmp_path / "model.safetensors")
    monkeypatch.chdir(tmp_path)
    exec(compile(examples()[name], "README.md:" + name, "exec"), {"__name__": "readme"})


def test_both_examples_present():
    assert sorted(examples()) == ["comfyui", "sglang"]


def test_comfyui_node_repairs(tmp_path, monkeypatch, capsys):
    run("comfyui", "fixtures/comfy/r06_marker_nul.safetensors", tmp_path, monkeypatch)
    assert capsys.readouterr().out == "('model.repaired.safetensors',)\n"
    import stfix
    assert stfix.check(str(tmp_path / "model.repaired.safetensors"), target="comfyui").ok


def test_comfyui_node_passes_a_healthy_file(tmp_path, monkeypatch, capsys):
    run("comfyui", "fixtures/comfy/healthy_int8_g64.safetensors", tmp_path, monkeypatch)
    assert capsys.readouterr().out == "('model.safetensors',)\n"


def test_sglang_preflight_refuses_with_sglang_message(tmp_path, monkeypatch):
    with pytest.raises(ValueError) as e:
        run("sglang", "fixtures/comfy/r12_missing_scale.safetensors", tmp_path, monkeypatch)
    assert str(e.value) == ("Comfy layer 'blocks.0.attn.qkv' is missing checkpoint tensors: "
                            "['blocks.0.attn.qkv.weight_scale']")


def test_sglang_preflight_passes_a_healthy_file(tmp_path, monkeypatch, capsys):
    run("sglang", "fixtures/comfy/healthy_int8_g64.safetensors", tmp_path, monkeypatch)
    assert capsys.readouterr().out == ""


def test_sglang_preflight_refuses_a_broken_container(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="model.safetensors is not a loadable checkpoint: "):
        run("sglang", "fixtures/malformed/s02_header_too_large.safetensors", tmp_path,
            monkeypatch)
