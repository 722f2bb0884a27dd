"""Comparing and hashing checkpoints: what ``stfix diff`` and ``stfix hash`` do."""
import ctypes
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _errors, _lib
from ._ckpt import Checkpoint, PathLike, opened
from ._lib import lib

_WHAT = ((1, "added"), (2, "removed"), (4, "dtype"), (8, "shape"), (16, "bytes"))


def _texts(d: ctypes.c_void_p, count: Any, item: Any) -> List[Tuple[str, Optional[str],
                                                                      Optional[str]]]:
    out = []
    for i in range(count(d)):
        t = item(d, i).contents
        out.append((_lib.text(t.key, t.key_len),
                    _lib.text(t.a, t.a_len) if t.a else None,
                    _lib.text(t.b, t.b_len) if t.b else None))
    return out


class Diff:
    """How checkpoint B differs from A (``stfix diff``): ``identical``; ``tensors`` as
    ``(name, {"added", "removed", "dtype", "shape", "bytes"}, first_differing_byte)``;
    ``markers`` (by layer) and ``metadata`` (by key) as ``(key, a, b)``, None on the side
    that has none; with numeric, ``numeric`` as ``(layer, metrics or None, why)``."""

    def __init__(self, d: ctypes.c_void_p) -> None:
        self.identical = bool(lib.stf_diff_identical(d))
        self.tensors = []
        for i in range(lib.stf_diff_tensor_count(d)):
            t = lib.stf_diff_tensor(d, i).contents
            self.tensors.append((_lib.text(t.name, t.name_len),
                                 {w for bit, w in _WHAT if t.what & bit}, t.first_byte))
        self.markers = _texts(d, lib.stf_diff_marker_count, lib.stf_diff_marker)
        self.metadata = _texts(d, lib.stf_diff_meta_count, lib.stf_diff_meta)
        self.numeric: List[Tuple[str, Optional[Dict[str, float]], Optional[str]]] = []
        for i in range(lib.stf_diff_numeric_count(d)):
            n = lib.stf_diff_numeric(d, i).contents
            m = None
            if n.compared:
                m = {f: getattr(n.m, f) for f in ("rel_l2", "cosine", "snr_db", "max_abs")}
            self.numeric.append((_lib.text(n.prefix, n.prefix_len), m,
                                 n.why.decode("utf-8", "replace") if n.why else None))


def diff(a: Union[PathLike, Checkpoint, Any], b: Union[PathLike, Checkpoint, Any],
         numeric: bool = False, jobs: Optional[int] = None) -> Diff:
    """Compare checkpoint `b` with `a`: tensors, markers and metadata; with `numeric`, the
    dequantized weights of the quantized layers both hold (on `jobs` threads)."""
    ca, mine_a = opened(a)
    pool = ctypes.c_void_p()
    d = ctypes.c_void_p()
    try:
        cb, mine_b = opened(b)
        try:
            err = _lib.Err()
            o = _lib.DiffOpts()
            lib.stf_diff_opts_init_version(ctypes.byref(o), _lib.DIFF_OPTS_VERSION)
            o.numeric = int(numeric)
            if numeric:
                _errors.check(lib.stf_pool_new(ctypes.byref(pool), jobs or 0,
                                               ctypes.byref(err)), err)
                o.pool = pool
            rc = lib.stf_diff_run(ctypes.byref(d), ca.handle, cb.handle, ctypes.byref(o),
                                  ctypes.byref(err))
            _errors.check(rc, err, cb.name)
            return Diff(d)
        finally:
            lib.stf_diff_free(d)
            if mine_b:
                cb.close()
    finally:
        lib.stf_pool_free(pool)
        if mine_a:
            ca.close()


def hash(source: Union[PathLike, Checkpoint, Any]) -> List[Dict[str, Any]]:
    """The hashes of each file of a checkpoint (``stfix hash``): ``file``, ``sha256`` of
    the whole file, ``autov2`` (its first 10 digits), ``data_sha256`` (of the tensor data:
    ModelSpec's ``hash_sha256`` is ``"0x"`` and these digits) and ``size``. A compressed
    file is hashed as the bytes it restores to."""
    c, mine = opened(source)
    try:
        out = []
        for i, path in enumerate(c.shards):
            h, err = _lib.FileHash(), _lib.Err()
            rc = lib.stf_ckpt_shard_hash(ctypes.byref(h), c.handle, i, _lib.PROGRESS(), None,
                                         ctypes.byref(err))
            if c._host:
                c._host.reraise()
            _errors.check(rc, err, path)
            out.append({"file": path, "sha256": h.sha256.decode(), "autov2": h.autov2.decode(),
                        "data_sha256": h.data_sha256.decode(), "size": h.size})
        return out
    finally:
        if mine:
            c.close()
