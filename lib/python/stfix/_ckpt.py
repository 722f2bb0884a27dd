"""Checkpoints: a file, an index with its shards, or bytes a file object supplies."""
import ctypes
import os
import threading
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _errors, _lib
from ._lib import lib

PathLike = Union[str, "os.PathLike[str]"]


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

    @property
    def handle(self) -> ctypes.c_void_p:
        if not self._c:
            raise _errors.UsageError("stfix: the checkpoint is closed", code="STF_EINVAL",
                                     exit_code=3)
        return self._c

    def close(self) -> None:
        """Free the checkpoint (also done when it is collected)."""
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
