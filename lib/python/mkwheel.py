"""Build the stfix wheel: the package of lib/python/stfix with the libstfix.so it was
built with and the bundled recipes copied in. Standard library only, so any CPython
>= 3.9 with pip installs it, setuptools or not (make python runs it).

    python3 lib/python/mkwheel.py VERSION LIBSTFIX_SO RULES_DIR OUT_DIR
"""
import base64
import hashlib
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def main(argv: list) -> int:
    if len(argv) != 5:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    version, so, rules, out_dir = argv[1:]
    files = {}
    pkg = os.path.join(HERE, "stfix")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(pkg, name), "rb") as f:
                files["stfix/" + name] = f.read()
    files["stfix/_version.py"] = (
        '"""The version of libstfix this package binds (include/stfix/base.h)."""\n'
        '__version__ = "%s"\n' % version).encode()
    with open(so, "rb") as f:
        files["stfix/libstfix.so.%s" % version] = f.read()
    for sub in ("", "tp"):
        d = os.path.join(rules, sub)
        for name in sorted(os.listdir(d)):
            if name.endswith(".yaml"):
                with open(os.path.join(d, name), "rb") as f:
                    files["stfix/rules/%s%s" % (sub + "/" if sub else "", name)] = f.read()
    info = "stfix-%s.dist-info" % version
    files[info + "/METADATA"] = (
        "Metadata-Version: 2.1\nName: stfix\nVersion: %s\nSummary: validate and repair "
        "quantized safetensors checkpoints for SGLang and ComfyUI (libstfix)\n"
        "Requires-Python: >=3.9\n" % version).encode()
    files[info + "/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: stfix mkwheel\n"
                              b"Root-Is-Purelib: false\nTag: py3-none-linux_x86_64\n")
    files[info + "/top_level.txt"] = b"stfix\n"
    record = [record_line(n, d) for n, d in files.items()] + [info + "/RECORD,,"]
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "stfix-%s-py3-none-linux_x86_64.whl" % version)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
