"""stfix.Recipe, plan and fix against the program; errors, cancellation, interpreters."""
import glob
import os
import shutil
import signal
import subprocess
import sys

import pytest

import stfix
from conftest import BUILD, ROOT, STFIX, write_export

INPUTS = ["fixtures/comfy/healthy_int8_g64.safetensors",
          "fixtures/comfy/healthy_fp8.safetensors",
          "fixtures/comfy/healthy_w4a4.safetensors",
          "fixtures/comfy/r12_missing_scale.safetensors",
          "fixtures/comfy/healthy_sharded.safetensors.index.json"]
INPUTS += sorted(glob.glob("fixtures/comfy/*legacy*.safetensors"))[:2]
INPUTS += sorted(glob.glob("fixtures/comfy/*flat*.safetensors"))[:2]


def test_recipes_are_the_bundled_ones():
    assert stfix.recipes() == sorted(os.path.basename(p)[:-5]
                                     for p in glob.glob("rules/*.yaml"))
    r = stfix.Recipe("sglang-repair")
    assert r.kind == "repair" and r.targets == ["sglang"] and len(r.sha256) == 64
    assert r.lint() == []


@pytest.mark.parametrize("recipe", sorted(os.path.basename(p)[:-5]
                                          for p in glob.glob("rules/*.yaml")))
def test_fix_bytes_equal_cli(recipe, tmp_path):
    for i, src in enumerate(INPUTS):
        a, b = tmp_path / ("cli%d.safetensors" % i), tmp_path / ("py%d.safetensors" % i)
        p = subprocess.run([STFIX, "fix", src, "-r", recipe, "-o", str(a), "-j", "2"],
                           capture_output=True)
        if p.returncode:
            with pytest.raises(stfix.Error) as e:
                stfix.fix(src, recipe, b, jobs=2)
            assert e.value.exit_code == p.returncode, (src, e.value)
            assert not b.exists()
            continue
        res = stfix.fix(src, recipe, b, jobs=2)
        assert b.read_bytes() == a.read_bytes(), src
        assert res.verification is None or res.verification.ok


def test_plan():
    p = stfix.plan("fixtures/comfy/healthy_int8_g64.safetensors", "quantize-int8-convrot")
    assert p.bytes_total > 0 and p.layers


def test_plan_layer_out_of_memory(monkeypatch):
    """The library makes a layer's record when first asked and answers NULL
    when memory runs out for it: that is a MemoryError, not a crash."""
    from stfix import _recipe
    real = _recipe.lib.stf_plan_layer
    monkeypatch.setattr(_recipe.lib, "stf_plan_layer",
                        lambda p, i: type(real(p, i))() if i == 1 else real(p, i))
    with pytest.raises(MemoryError, match="layer 1 of the plan"):
        stfix.plan("fixtures/comfy/healthy_int8_g64.safetensors", "quantize-int8-convrot")


def test_error_classes(tmp_path):
    with pytest.raises(stfix.InvalidInputError) as e:
        stfix.open("fixtures/malformed/s02_header_too_large.safetensors")
    assert (e.value.exit_code, e.value.code, e.value.rule, e.value.offset) == \
        (2, "STF_EFORMAT", "S2", 0)
    assert e.value.file == "fixtures/malformed/s02_header_too_large.safetensors"
    with pytest.raises(stfix.InvalidInputError) as e:
        stfix.open(str(tmp_path / "missing.safetensors"))
    assert (e.value.exit_code, e.value.code) == (2, "STF_ENOTFOUND")
    src = "fixtures/comfy/healthy_int8_g64.safetensors"
    with pytest.raises(stfix.UsageError) as e:
        stfix.fix(src, "comfyui-repair", src)
    assert (e.value.exit_code, e.value.code) == (3, "STF_EINVAL")
    with pytest.raises(stfix.OperationError) as e:
        stfix.fix(src, "comfyui-repair", tmp_path / "no" / "dir" / "out.safetensors")
    assert (e.value.exit_code, e.value.code) == (4, "STF_EIO")
    with pytest.raises(stfix.InvalidInputError) as e:
        stfix.Recipe("no-such-recipe")
    assert e.value.exit_code == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("stfix: 1\nrules: [\n")
    with pytest.raises(stfix.InvalidInputError) as e:
        stfix.Recipe(str(bad))
    assert str(bad) + ":" in str(e.value)
    with pytest.raises(stfix.UsageError):
        stfix.check(src, target="vllm")


def test_cancel_from_callback(tmp_path):
    big = write_export(str(tmp_path / "big.safetensors"))
    seen = []

    def progress(done, total):
        seen.append(done)
        return False

    with pytest.raises(stfix.CanceledError) as e:
        stfix.fix(big, "comfyui-repair", tmp_path / "out.safetensors", progress=progress)
    assert e.value.exit_code == 4 and e.value.code == "STF_ECANCELED"
    assert len(seen) == 1
    assert sorted(os.listdir(tmp_path)) == ["big.safetensors"]


def test_sigint_cancels_and_raises_keyboardinterrupt(tmp_path):
    big = write_export(str(tmp_path / "big.safetensors"))

    def progress(done, total):
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        stfix.fix(big, "quantize-int8-convrot", tmp_path / "out.safetensors", progress=progress)
    assert sorted(os.listdir(tmp_path)) == ["big.safetensors"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_progress_reaches_total(tmp_path):
    big = write_export(str(tmp_path / "big.safetensors"), layers=4)
    seen = []
    stfix.fix(big, "quantize-int8-convrot", tmp_path / "out.safetensors",
              progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


OTHER = "/root/.pyenv/versions/3.9.18/bin/python3"


@pytest.mark.skipif(not os.access(OTHER, os.X_OK), reason="no CPython 3.9 at " + OTHER)
def test_install_with_another_interpreter(tmp_path):
    so = sorted(glob.glob(os.path.join(BUILD, "libstfix.so.*.*.*")))[0]
    version = so.rsplit("libstfix.so.", 1)[1]
    subprocess.run([sys.executable, os.path.join(ROOT, "lib/python/mkwheel.py"), version, so,
                    os.path.join(ROOT, "rules"), str(tmp_path / "dist")], check=True,
                   capture_output=True)
    wheel = glob.glob(str(tmp_path / "dist" / "*.whl"))[0]
    subprocess.run([OTHER, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(tmp_path / "site"), wheel],
                   check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k != "STFIX_LIBRARY"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    p = subprocess.run([OTHER, "-c", "import stfix, sys; r = stfix.check(sys.argv[1]); "
                        "print(stfix.__file__.startswith(sys.argv[2]), r.errors[0].rule)",
                        os.path.join(ROOT, "fixtures/comfy/r12_missing_scale.safetensors"),
                        str(tmp_path / "site")], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (0, "True R12\n"), p.stderr


def test_version_mismatch_is_an_importerror(tmp_path):
    pkg = tmp_path / "stfix"
    shutil.copytree(os.path.join(ROOT, "lib/python/stfix"), pkg)
    (pkg / "_version.py").write_text('__version__ = "9.9.9"\n')
    p = subprocess.run([sys.executable, "-c", "import stfix"], capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert "ImportError: stfix: the package is version 9.9.9 but" in p.stderr
    assert "is libstfix %s" % stfix.library_version in p.stderr


def test_verify_agrees_with_cli(tmp_path):
    src = "fixtures/comfy/r06_marker_nul.safetensors"
    out = tmp_path / "out.safetensors"
    assert stfix.fix(src, "comfyui-repair", out).changed
    v = stfix.verify(out, src, "comfyui-repair")
    assert v.ok and v.stamp_ok and v.differences == []
    cmd = [STFIX, "verify", str(out), "--from", src, "-r", "comfyui-repair"]
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    data = bytearray(out.read_bytes())
    data[-1] ^= 1
    out.write_bytes(bytes(data))
    v = stfix.verify(out, src, "comfyui-repair")
    assert not v.ok and v.differences
    assert subprocess.run(cmd, capture_output=True).returncode == 1


def test_sigint_from_outside_during_a_fix(tmp_path):
    """Another process interrupts a running fix: KeyboardInterrupt once the library has
    removed its temporary files, and nothing at the output."""
    big = write_export(str(tmp_path / "big.safetensors"), layers=64)
    code = ("import sys, stfix\n"
            "def progress(done, total):\n"
            "    if done and not progress.said:\n"
            "        progress.said = True\n"
            "        print('started', flush=True)\n"
            "        sys.stdin.readline()\n"  # the parent's SIGINT comes meanwhile
            "progress.said = False\n"
            "try:\n"
            "    stfix.fix(sys.argv[1], 'quantize-int8-convrot', sys.argv[2], progress=progress,"
            " jobs=1)\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "lib", "python"))
    p = subprocess.Popen([sys.executable, "-c", code, big, str(tmp_path / "out.safetensors")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline() == "started\n"
    p.send_signal(signal.SIGINT)
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.stdout.read() == "interrupted\n"
    assert p.wait(timeout=60) == 0
    assert sorted(os.listdir(tmp_path)) == ["big.safetensors"]
