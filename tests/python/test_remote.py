"""Remote inputs from the package: a URL checked by stfix.check gives the document
`stfix check --json URL` prints, its "network" member included, from lighttpd serving
files on a loopback port (skipped where lighttpd is not installed, as tests/cli/remote.sh
is)."""
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

import stfix
from conftest import STFIX

LIGHTTPD = shutil.which("lighttpd") or next(
    (p for p in ("/usr/sbin/lighttpd", "/sbin/lighttpd") if os.access(p, os.X_OK)), None)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base URL, served directory, the long export's offsets, lighttpd's process and
    access log): lighttpd serving a copy of fixtures/demo and fixtures/comfy, an export
    whose header ends past the first 64 KiB, and a 17 MB sylvester export."""
    if not LIGHTTPD:
        pytest.skip("lighttpd is not installed (make deps installs it)")
    root = tmp_path_factory.mktemp("srv")
    shutil.copytree("fixtures/demo", root / "demo")
    shutil.copytree("fixtures/comfy", root / "comfy")
    ends = subprocess.run(["python3", "tests/gen/gen_remote_export.py",
                           str(root / "long.safetensors"), "200", "8", "256", "65544"],
                          check=True, capture_output=True, text=True).stdout.split()
    subprocess.run(["python3", "tests/gen/gen_quant_ckpt.py", "sylvester",
                    str(root / "syl.safetensors"), "16MiB", "256"], check=True,
                   capture_output=True)
    port = _free_port()
    conf = root / "lighttpd.conf"
    conf.write_text('server.document-root = "%s"\nserver.bind = "127.0.0.1"\n'
                    "server.port = %d\nserver.errorlog = \"%s\"\n"
                    'server.modules = ("mod_accesslog")\n'
                    'accesslog.filename = "%s"\naccesslog.format = "%%r %%s %%b"\n'
                    'mimetype.assign = ("" => "application/octet-stream")\n'
                    % (root, port, root / "err.log", root / "access.log"))
    proc = subprocess.Popen([LIGHTTPD, "-D", "-f", str(conf)])
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("lighttpd did not start")
        yield ("http://127.0.0.1:%d" % port, root, [int(x) for x in ends], proc,
               root / "access.log")
    finally:
        proc.terminate()
        proc.wait()


def cli_json(url):
    p = subprocess.run([STFIX, "check", "--json", url], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    return p.stdout


def test_to_json_of_url_equals_cli(served):
    # The demo (44841 bytes) is one request of the first 64 KiB.
    base, root = served[:2]
    url = base + "/demo/demo.safetensors"
    size = os.path.getsize(root / "demo" / "demo.safetensors")
    doc = stfix.check(url).to_json()
    assert doc == cli_json(url)
    assert doc.endswith(', "network": {"bytes": %d, "requests": 1}}\n' % size)


def test_to_json_of_url_counts_every_request(served):
    # A header 8 bytes past the first 64 KiB takes a second request for them, and
    # the markers, together at the end, a third.
    base, _, (hdr_end, mk_begin, mk_end) = served[:3]
    url = base + "/long.safetensors"
    r = stfix.check(url)
    doc = r.to_json()
    assert hdr_end == 65544
    assert doc == cli_json(url)
    assert doc.endswith(', "network": {"bytes": %d, "requests": 3}}\n'
                        % (hdr_end + mk_end - mk_begin))
    assert r.to_json(oneline=True) == doc.replace("\n", "") + "\n"


def test_to_json_of_index_url_and_local_file(served):
    # An index and its two shards: three requests; a local file: no member.
    base, root = served[:2]
    index = "comfy/healthy_sharded.safetensors.index.json"
    url = base + "/" + index
    total = sum(os.path.getsize(root / "comfy" / f) for f in (
        "healthy_sharded.safetensors.index.json",
        "healthy_sharded-00001-of-00002.safetensors",
        "healthy_sharded-00002-of-00002.safetensors"))
    doc = stfix.check(url).to_json()
    assert doc == cli_json(url)
    assert doc.endswith(', "network": {"bytes": %d, "requests": 3}}\n' % total)
    local = stfix.check("fixtures/" + index).to_json()
    assert '"network"' not in local
    assert local == cli_json("fixtures/" + index)


def logged(proc, log, path):
    """(bytes, requests) lighttpd's access log holds for /path, once the requests ended.
    lighttpd keeps the log in a buffer, which SIGHUP writes out, and logs a request once
    it has sent the answer, which can be after the client has it: ask for the buffer
    every 50 ms until the count of path's lines has held for 200 ms (at most 10 s)."""
    last, held = None, 0
    for _ in range(200):
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.05)
        text = log.read_text() if log.exists() else ""
        lines = [ln for ln in text.splitlines() if ln.startswith("GET /%s " % path)]
        whole = bool(lines) and text.endswith("\n")
        held = held + 1 if whole and len(lines) == last else 0
        last = len(lines)
        if held >= 4:
            return sum(int(ln.split()[-1]) for ln in lines), len(lines)
    pytest.fail("no settled request count of /%s in lighttpd's log" % path)


def test_numeric_check_counts_the_pools_requests(served):
    # The probes read the weights on the pool's two threads: every request lighttpd
    # logged for the file is in the member, whichever thread made it.
    base, _, _, proc, log = served
    doc = stfix.check(base + "/syl.safetensors", numeric=True, jobs=2).to_json()
    got, n = logged(proc, log, "syl.safetensors")
    assert n > 3
    assert doc.endswith(', "network": {"bytes": %d, "requests": %d}}\n' % (got, n))


def test_checkpoints_read_at_once_count_their_own_requests(served):
    # Two exports checked at the same time on two threads, each reading on a pool of
    # its own: each member holds exactly its file's requests as lighttpd logged them,
    # none of the other's, although both were in flight together.
    base, root, _, proc, log = served
    names = ("syl_a.safetensors", "syl_b.safetensors")
    for n in names:
        shutil.copyfile(root / "syl.safetensors", root / n)
    start = threading.Barrier(len(names))

    def one(name):
        start.wait()
        return stfix.check(base + "/" + name, numeric=True, jobs=2).to_json()

    with concurrent.futures.ThreadPoolExecutor(len(names)) as ex:
        docs = list(ex.map(one, names))
    for name, doc in zip(names, docs):
        got, n = logged(proc, log, name)
        assert n > 3
        assert doc.endswith(', "network": {"bytes": %d, "requests": %d}}\n' % (got, n))
