"""Checkpoint.layers and dequantize: the library's model and decoders, with numpy and
without it (STFIX_NO_NUMPY=1 hides it)."""
import array
import glob

import pytest

import stfix
from conftest import write_export

QUANTIZED = ["fixtures/comfy/healthy_int8_g64.safetensors",
             "fixtures/comfy/healthy_fp8.safetensors",
             "fixtures/comfy/healthy_w4a4.safetensors"]


def test_layers_and_markers():
    with stfix.open("fixtures/comfy/healthy_int8_g64.safetensors") as c:
        ly = c.layer("blocks.0.attn.qkv")
        assert ly.marker == {"format": "int8_tensorwise", "convrot": True,
                             "convrot_groupsize": 64}
        assert ly.tensors["weight"] == "blocks.0.attn.qkv.weight"
        assert [m.channel for m in ly.markers] == ["tensor"]
    with stfix.open("fixtures/comfy/r07_marker_not_object.safetensors") as c:
        m = c.layers[0].markers[0]
        assert (m.status, m.value, c.layers[0].marker) == ("not an object",
                                                           ["int8_tensorwise"], ["int8_tensorwise"])


@pytest.mark.parametrize("path", QUANTIZED)
def test_dequantize_with_and_without_numpy(path, monkeypatch):
    np = pytest.importorskip("numpy")
    with stfix.open(path) as c:
        ly = [x for x in c.layers if x.marker][0]
        w = c.dequantize(ly)
        assert w.dtype == np.float32 and w.ndim == 2 and np.isfinite(w).all()
        monkeypatch.setenv("STFIX_NO_NUMPY", "1")
        a, shape = c.dequantize(ly.prefix)
        assert isinstance(a, array.array) and a.typecode == "f" and shape == w.shape
        assert a.tobytes() == w.tobytes()


def test_dequantize_float_weight_exact(tmp_path, monkeypatch):
    monkeypatch.setenv("STFIX_NO_NUMPY", "1")
    big = write_export(str(tmp_path / "e.safetensors"), layers=1, nbytes=4096)
    with stfix.open(big) as c:
        a, shape = c.dequantize("blocks.0.mlp")
    assert shape == (512, 4) and set(a) == {1.0}


def test_dequantize_refuses_a_layer_without_weight():
    with stfix.open("fixtures/comfy/r12_missing_weight.safetensors") as c:
        with pytest.raises(stfix.InvalidInputError) as e:
            c.dequantize(c.layers[0])
        assert e.value.exit_code == 2
        with pytest.raises(KeyError):
            c.dequantize("nothing")
