"""Checkpoints: a file, an index with its shards, or bytes a file object supplies."""
import array
import ctypes
import json
import os
import threading
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _errors, _lib
from ._lib import lib

PathLike = Union[str, "os.PathLike[str]"]


def _numpy() -> Any:
    """numpy when it is importable and not hidden (STFIX_NO_NUMPY=1), else None."""
    if os.environ.get("STFIX_NO_NUMPY") == "1":
        return None
    try:
        import numpy
    except ImportError:
        return None
    return numpy


class Tensor:
    """One tensor as the header declares it: ``name``, ``dtype`` (``"I8"``), ``shape``,
    ``begin``/``end`` (its byte range in the data section), ``nbytes`` and ``shard``."""

    __slots__ = ("name", "dtype", "shape", "begin", "end", "nbytes", "shard", "index")

    def __init__(self, index: int, ti: "_lib.TensorInfo") -> None:
        self.index = index
        self.name = _lib.text(ti.name, ti.name_len)
        self.dtype = lib.stf_dtype_name(ti.dtype).decode()
        self.shape = tuple(ti.shape[d] for d in range(ti.rank))
        self.begin, self.end, self.nbytes, self.shard = ti.begin, ti.end, ti.nbytes, ti.shard

    def __repr__(self) -> str:
        return "Tensor(%r, %s, %r, bytes %d..%d)" % (self.name, self.dtype, self.shape,
                                                     self.begin, self.end)


_STATUS = {0: "ok", 1: "not json", 2: "not an object", 3: "bad dtype", 4: "too deep"}


class Marker:
    """One quantization marker as found: ``channel`` (``"tensor"``: the ``.comfy_quant``
    tensor, or ``"metadata"``: ``_quantization_metadata``), ``status`` (``"ok"``, ``"not
    json"``, ``"not an object"``, ``"bad dtype"``, ``"too deep"``), ``value`` (the parsed
    JSON as Python's ``json.loads`` gives it, or None) and ``error`` (Python's message when
    it is not JSON)."""

    __slots__ = ("channel", "status", "value", "error", "file")

    def __init__(self, mk: "_lib.Marker") -> None:
        self.channel = "metadata" if mk.channel else "tensor"
        self.status = _STATUS.get(mk.status, str(mk.status))
        self.file = (mk.path or b"").decode("utf-8", "surrogateescape")
        self.error = mk.error.decode("utf-8", "replace") if mk.error else None
        self.value: Any = None
        if mk.value:
            out, n, err = ctypes.c_void_p(), ctypes.c_size_t(), _lib.Err()
            _errors.check(lib.stf_pyjson_dumps(ctypes.byref(out), ctypes.byref(n), mk.value,
                                               ctypes.byref(err)), err)
            try:
                self.value = json.loads(_lib.text(out.value, n.value))
            finally:
                lib.stf_model_str_free(out)

    def __repr__(self) -> str:
        return "<Marker %s %s %r>" % (self.channel, self.status, self.value)


class Layer:
    """A ComfyUI layer: every tensor sharing ``prefix`` (``tensors``: suffix to tensor
    name, e.g. ``{"weight": "blocks.0.attn.qkv.weight", ...}``), its ``markers`` from both
    channels, ``marker`` (the one ComfyUI uses, parsed, or None) and ``conflict`` (two
    markers that disagree)."""

    __slots__ = ("index", "prefix", "tensors", "markers", "marker", "conflict")

    def __init__(self, index: int, ly: "_lib.Layer", names: List[str]) -> None:
        self.index = index
        self.prefix = _lib.text(ly.prefix, ly.prefix_len)
        self.tensors: Dict[str, str] = {}
        for s in range(ly.ntensors):
            t = ly.tensors[s]
            if t >= 0:
                self.tensors[lib.stf_suffix_name(s).decode().lstrip(".")] = names[t]
        self.markers = [Marker(ly.markers[i]) for i in range(ly.nmarkers)]
        self.conflict = bool(ly.conflict)
        self.marker: Any = None
        if ly.comfy:
            self.marker = Marker(ly.comfy.contents).value

    def __repr__(self) -> str:
        return "<Layer %r %r>" % (self.prefix, self.marker)


class _HostFile:
    """A file object read through the library's host-supplied source: the callbacks,
    kept alive as long as the checkpoint, and the first exception a read raised."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.lock = threading.Lock()
        self.exc: Optional[BaseException] = None
        self.read_cb = _lib.HOST_READ(self._read)
        self.size_cb = _lib.HOST_SIZE(self._size)
        self.close_cb = _lib.HOST_CLOSE(self._close)
        self.io = _lib.HostIO(None, self.read_cb, self.size_cb, self.close_cb)

    def _read(self, ctx: Any, off: int, dst: int, n: int) -> int:
        try:
            view = (ctypes.c_char * n).from_address(dst)
            with self.lock:
                self.f.seek(off)
                got = self.f.readinto(memoryview(view).cast("B"))
            return int(got or 0)
        except BaseException as e:  # re-raised once the library returns
            if self.exc is None:
                self.exc = e
            return -1

    def _size(self, ctx: Any) -> int:
        try:
            with self.lock:
                return int(self.f.seek(0, os.SEEK_END))
        except BaseException as e:
            if self.exc is None:
                self.exc = e
            return -1

    def _close(self, ctx: Any) -> None:
        pass

    def reraise(self) -> None:
        e, self.exc = self.exc, None
        if e is not None:
            raise e


class Checkpoint:
    """An opened checkpoint (a context manager). Read-only; its methods may be called
    from several threads at once.

    ``metadata``: the ``__metadata__`` of the first file, as a dict of str;
    ``tensors``: every tensor in file order (:class:`Tensor`); ``name``: the path or name
    it was opened by.
    """

    def __init__(self, source: Union[PathLike, Any], name: Optional[str] = None) -> None:
        self._c = ctypes.c_void_p()
        self._host: Optional[_HostFile] = None
        err = _lib.Err()
        if hasattr(source, "readinto") and hasattr(source, "seek"):
            nm = name or getattr(source, "name", None)
            self.name = nm if isinstance(nm, str) else "<file object>"
            self._host = _HostFile(source)
            rc = lib.stf_ckpt_open_host(ctypes.byref(self._c), self.name.encode(),
                                        ctypes.byref(self._host.io), _lib.HOST_OPEN(), None,
                                        None, ctypes.byref(err))
            self._host.reraise()
        else:
            self.name = os.fspath(source)
            rc = lib.stf_ckpt_open(ctypes.byref(self._c), os.fsencode(self.name), None,
                                   ctypes.byref(err))
        _errors.check(rc, err, self.name)
        self._tensors: Optional[List[Tensor]] = None
        self._model = ctypes.c_void_p()
        self._layers: Optional[List[Layer]] = None
        self._lock = threading.Lock()

    @property
    def handle(self) -> ctypes.c_void_p:
        if not self._c:
            raise _errors.UsageError("stfix: the checkpoint is closed", code="STF_EINVAL",
                                     exit_code=3)
        return self._c

    def close(self) -> None:
        """Free the checkpoint (also done when it is collected)."""
        if getattr(self, "_model", None):
            lib.stf_model_free(self._model)
            self._model = ctypes.c_void_p()
        if self._c:
            lib.stf_ckpt_free(self._c)
            self._c = ctypes.c_void_p()

    def __enter__(self) -> "Checkpoint":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @property
    def shards(self) -> List[str]:
        """The paths (or names) of the files, in order."""
        c = self.handle
        return [lib.stf_ckpt_shard_path(c, i).decode("utf-8", "surrogateescape")
                for i in range(lib.stf_ckpt_shard_count(c))]

    @property
    def metadata(self) -> Dict[str, str]:
        """The first file's ``__metadata__`` (file order)."""
        c, out = self.handle, {}
        for i in range(lib.stf_ckpt_meta_count(c, 0)):
            e = lib.stf_ckpt_meta(c, 0, i).contents
            out[_lib.text(e.key, e.key_len)] = _lib.text(e.value, e.value_len)
        return out

    @property
    def tensors(self) -> List[Tensor]:
        """Every tensor of every shard, in file order."""
        if self._tensors is None:
            c = self.handle
            self._tensors = [Tensor(i, lib.stf_ckpt_tensor(c, i).contents)
                             for i in range(lib.stf_ckpt_tensor_count(c))]
        return self._tensors

    def tensor(self, name: str) -> Tensor:
        """The tensor called `name` (KeyError when there is none)."""
        b = name.encode("utf-8", "surrogateescape")
        idx = ctypes.c_size_t()
        if lib.stf_ckpt_find_n(ctypes.byref(idx), self.handle, b, len(b)):
            raise KeyError(name)
        return self.tensors[idx.value]

    def tensor_bytes(self, name: str) -> memoryview:
        """The bytes of tensor `name`, read now, as a read-only memoryview."""
        t = self.tensor(name)
        buf = bytearray(t.nbytes)
        err = _lib.Err()
        dst = (ctypes.c_char * len(buf)).from_buffer(buf) if buf else None
        rc = lib.stf_ckpt_read(dst, self.handle, t.index, 0, t.nbytes, ctypes.byref(err))
        if self._host:
            self._host.reraise()
        _errors.check(rc, err, self.name)
        return memoryview(bytes(buf))

    def _model_handle(self) -> ctypes.c_void_p:
        with self._lock:
            if not self._model:
                err = _lib.Err()
                m = ctypes.c_void_p()
                rc = lib.stf_model_build(ctypes.byref(m), self.handle, ctypes.byref(err))
                if self._host:
                    self._host.reraise()
                _errors.check(rc, err, self.name)
                self._model = m
            return self._model

    @property
    def layers(self) -> List[Layer]:
        """The ComfyUI layers (prefix, tensors by suffix, parsed markers), in order of
        first appearance."""
        if self._layers is None:
            m = self._model_handle()
            names = [t.name for t in self.tensors]
            self._layers = [Layer(i, lib.stf_model_layer(m, i).contents, names)
                            for i in range(lib.stf_model_layer_count(m))]
        return self._layers

    def layer(self, prefix: str) -> Layer:
        """The layer with this prefix (KeyError when there is none)."""
        for ly in self.layers:
            if ly.prefix == prefix:
                return ly
        raise KeyError(prefix)

    def dequantize(self, layer: Union[str, Layer]) -> Any:
        """The layer's weight as float32, decoded by the library as stored (INT8 codes
        times their scales with the rotation undone, FP8 times its scale, W4A4 unpacked,
        float weights widened): a numpy array of shape (N, K) when numpy is present, else
        a tuple ``(array('f'), (N, K))``."""
        ly = layer if isinstance(layer, Layer) else self.layer(layer)
        m = self._model_handle()
        n, k, err = ctypes.c_uint64(), ctypes.c_uint64(), _lib.Err()
        rc = lib.stf_layer_dequant_shape(ctypes.byref(n), ctypes.byref(k), m, ly.index,
                                         ctypes.byref(err))
        _errors.check(rc, err, self.name)
        count = n.value * k.value
        np = _numpy()
        if np is not None:
            out = np.empty((n.value, k.value), dtype=np.float32)
            dst = out.ctypes.data_as(ctypes.c_void_p)
        else:
            out = array.array("f", bytes(4 * count))
            dst = out.buffer_info()[0] if count else None
        rc = lib.stf_layer_dequantize(dst, count, m, ly.index, None, ctypes.byref(err))
        if self._host:
            self._host.reraise()
        _errors.check(rc, err, self.name)
        return out if np is not None else (out, (n.value, k.value))

    def __repr__(self) -> str:
        return "<stfix.Checkpoint %r, %d tensors>" % (self.name, len(self.tensors))


def open(source: Union[PathLike, Any], name: Optional[str] = None) -> Checkpoint:
    """Open a checkpoint: a path (a .safetensors file, a .zst one, or an index ending in
    ``.index.json``, passed to the library as given), or a file object with ``readinto``
    and ``seek`` (e.g. ``io.BytesIO``), read through the library's host-supplied source;
    `name` is then what messages call it. Raises :class:`stfix.Error` subclasses."""
    return Checkpoint(source, name)


def opened(source: Union[PathLike, "Checkpoint", Any]) -> Tuple[Checkpoint, bool]:
    """`source` as a checkpoint, and whether it was opened here (the caller closes it)."""
    if isinstance(source, Checkpoint):
        return source, False
    return Checkpoint(source), True
