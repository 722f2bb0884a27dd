"""Checking checkpoints against the consumers' acceptance rules."""
import ctypes
import glob
import os
import weakref
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _errors, _lib
from ._ckpt import Checkpoint, PathLike, opened
from ._lib import lib
from ._rules_dir import rules_dir

_TARGETS = {"sglang": _lib.CONSUMER_SGLANG, "comfyui": _lib.CONSUMER_COMFYUI,
            "all": _lib.CONSUMER_SGLANG | _lib.CONSUMER_COMFYUI}


class Diagnostic:
    """One finding: ``rule`` (``"R15"``), ``severity`` (``"error"``, ``"warning"``,
    ``"info"``), ``effect`` (what the consumer does: ``"refuses"``, ``"silent"``,
    ``"degraded"``, ``"note"``), ``profile``, ``file``, ``layer`` (``""`` for a file-level
    finding), ``message`` (the consumer's own text where it refuses) and ``fix``."""

    __slots__ = ("rule", "severity", "effect", "profile", "file", "layer", "message", "fix")

    def __init__(self, d: "_lib.Diag", message: str, file: str) -> None:
        self.rule = d.rule.decode()
        self.severity = lib.stf_severity_name(d.severity).decode()
        fx = lib.stf_effect_name(d.effect)
        self.effect = fx.decode() if fx else "note"
        self.profile = (d.profile or b"").decode()
        self.file = file
        self.layer = _lib.text(d.layer, d.layer_len)
        self.message = message
        self.fix = (d.fix or b"").decode("utf-8", "surrogateescape")

    def __repr__(self) -> str:
        return "<%s %s %s: %s>" % (self.severity, self.rule, self.layer or "file", self.message)


class Report:
    """What a check found in one input: ``diagnostics`` in the listing's order (file-level
    first, then by layer), ``ok`` (no finding at error severity), ``errors``, ``warnings``
    and ``info`` (the findings at each severity), and :meth:`to_json`."""

    def __init__(self, r: Any, file: str, target: str, tp: Optional["_lib.CheckJsonTp"],
                 owner: Any = None, net: Optional["_lib.CheckJsonNet"] = None) -> None:
        # owner: what holds the report when it is not this object's to free (a fix's
        # run report, which is freed when the owner goes). net: what crossed the network
        # for a remote input (stf_ckpt_network), the document's "network" member.
        self._r = r
        self._owner = owner
        self.file = file
        self.target = target
        self._tp = tp
        self._net = net
        if owner is None:
            weakref.finalize(self, lib.stf_check_report_free, r)
        n = lib.stf_check_count(r)
        order = (ctypes.c_size_t * max(n, 1))()
        err = _lib.Err()
        _errors.check(lib.stf_check_diag_order(order, r, ctypes.byref(err)), err, file)
        out = []
        buf = ctypes.create_string_buffer(256)
        for k in range(n):
            d = _lib.Diag()
            need = lib.stf_check_diag_peek(r, order[k], ctypes.byref(d), buf, len(buf))
            if need >= len(buf):
                buf = ctypes.create_string_buffer(need + 1)
                lib.stf_check_diag_peek(r, order[k], ctypes.byref(d), buf, len(buf))
            out.append(Diagnostic(d, buf.raw[:need].decode("utf-8", "surrogateescape"), file))
        self.diagnostics: List[Diagnostic] = out

    def _count(self, sev: int) -> int:
        return int(lib.stf_check_count_severity(self._r, sev))

    @property
    def errors(self) -> List[Diagnostic]:
        """The findings at error severity."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> List[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    @property
    def info(self) -> List[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "info"]

    @property
    def ok(self) -> bool:
        """True when nothing is at error severity (``stfix check`` exits 0)."""
        return self._count(2) == 0

    def to_json(self, oneline: bool = False) -> str:
        """The document ``stfix check --json`` prints for this input, byte for byte, its
        closing newline included (`oneline`: as one line of JSON Lines, as the command
        writes each of several inputs). Rendered by the library."""
        parts: List[bytes] = []

        def put(ud: Any, t: Any, n: int) -> int:
            parts.append(ctypes.string_at(t, n))
            return 0

        err = _lib.Err()
        rc = lib.stf_check_report_json_net(_lib.TEXT(put), None, self._r,
                                           os.fsencode(self.file), self.target.encode(),
                                           ctypes.byref(self._tp) if self._tp else None,
                                           ctypes.byref(self._net) if self._net else None,
                                           _lib.CHECK_JSON_ONELINE if oneline else 0,
                                           ctypes.byref(err))
        _errors.check(rc, err, self.file)
        return b"".join(parts).decode("utf-8")

    def __repr__(self) -> str:
        return "<stfix.Report %r: %d error(s), %d warning(s), %d info>" % (
            self.file, self._count(2), self._count(1), self._count(0))


def _target_bits(target: str) -> Tuple[str, int]:
    bits = 0
    for part in target.split(","):
        if part not in _TARGETS:
            raise _errors.UsageError("target takes sglang, comfyui or all, or a list such as "
                                     "sglang,comfyui; not '%s'" % target, code="STF_EINVAL",
                                     exit_code=3)
        bits |= _TARGETS[part]
    word = {_TARGETS["all"]: "all", _TARGETS["sglang"]: "sglang"}.get(bits, "comfyui")
    return word, bits


class _Profiles:
    """The bundled parallel-style profiles, the one in effect for a checkpoint (detected
    from the layer names), and the counts the report names."""

    def __init__(self, c: Checkpoint) -> None:
        self.handles: List[ctypes.c_void_p] = []
        self.use: Optional[ctypes.c_void_p] = None
        err = _lib.Err()
        try:
            for path in sorted(glob.glob(os.path.join(rules_dir(), "tp", "*.yaml"))):
                h, diags = ctypes.c_void_p(), ctypes.c_void_p()
                rc = lib.stf_tp_profile_load_file(ctypes.byref(h), ctypes.byref(diags),
                                                  os.fsencode(path), ctypes.byref(err))
                lib.stf_recipe_diags_free(diags)
                _errors.check(rc, err, path)
                self.handles.append(h)
            m = ctypes.c_void_p()
            _errors.check(lib.stf_model_build(ctypes.byref(m), c.handle, ctypes.byref(err)),
                          err, c.name)
            best, cl, lin = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
            arr = (ctypes.c_void_p * max(len(self.handles), 1))(*self.handles)
            rc = lib.stf_tp_profile_detect(ctypes.byref(best), ctypes.byref(cl),
                                           ctypes.byref(lin), arr, len(self.handles), m,
                                           ctypes.byref(err))
            lib.stf_model_free(m)
            _errors.check(rc, err, c.name)
        except BaseException:
            self.free()
            raise
        if best.value < len(self.handles):
            self.use = self.handles[best.value]
        self.classified, self.linear = cl.value, lin.value

    def json_tp(self) -> "_lib.CheckJsonTp":
        name = lib.stf_tp_profile_name(self.use) if self.use else None
        return _lib.CheckJsonTp(name, 1, self.classified, self.linear)

    def free(self) -> None:
        for h in self.handles:
            lib.stf_tp_profile_free(h)
        self.handles = []


def _check_one(source: Union[PathLike, Checkpoint, Any], word: str, bits: int, numeric: bool,
               tp: Optional[Sequence[int]], jobs: Optional[int]) -> Report:
    c, mine = opened(source)
    pool = ctypes.c_void_p()
    prof = None
    try:
        err = _lib.Err()
        o = _lib.CheckOpts()
        lib.stf_check_opts_init_version(ctypes.byref(o), _lib.CHECK_OPTS_VERSION)
        o.profiles = _lib.CHECK_CONTAINER | bits | (_lib.CHECK_NUMERIC if numeric else 0)
        if numeric:
            _errors.check(lib.stf_pool_new(ctypes.byref(pool), jobs or 0, ctypes.byref(err)),
                          err)
            o.pool = pool
        t = _lib.TpOpts()
        lib.stf_tp_opts_init_version(ctypes.byref(t), _lib.TP_OPTS_VERSION)
        jtp = None
        if tp:
            degrees = list(tp)
            if not 1 <= len(degrees) <= 16 or len(set(degrees)) != len(degrees):
                raise _errors.UsageError("tp takes one to 16 distinct degrees from 1 to 65536",
                                         code="STF_EINVAL", exit_code=3)
            t.count = len(degrees)
            for i, d in enumerate(degrees):
                t.degrees[i] = int(d)
            prof = _Profiles(c)
            t.style = _lib.tp_layer_style
            t.style_ctx = prof.use
            t.profile = lib.stf_tp_profile_name(prof.use) if prof.use else None
            jtp = prof.json_tp()
        r = ctypes.c_void_p()
        rc = lib.stf_check_run_tp(ctypes.byref(r), c.handle, ctypes.byref(o), ctypes.byref(t),
                                  ctypes.byref(err))
        if c._host:
            c._host.reraise()
        _errors.check(rc, err, c.name)
        nb, nr = ctypes.c_uint64(), ctypes.c_uint64()
        remote = lib.stf_ckpt_network(c.handle, ctypes.byref(nb), ctypes.byref(nr))
        return Report(r, c.name, word, jtp,
                      net=_lib.CheckJsonNet(nb.value, nr.value) if remote else None)
    finally:
        if prof:
            prof.free()
        lib.stf_pool_free(pool)
        if mine:
            c.close()


def check(paths: Union[PathLike, Checkpoint, Any, Sequence[Union[PathLike, Checkpoint]]],
          target: str = "all", numeric: bool = False, tp: Optional[Sequence[int]] = None,
          jobs: Optional[int] = None) -> Any:
    """Check one input (a path, a :class:`Checkpoint` or a file object) and return its
    :class:`Report`, or a list of inputs and return a list of reports, as ``stfix check``
    does: `target` ``"sglang"``, ``"comfyui"`` or ``"all"`` (or ``"sglang,comfyui"``);
    `numeric` also reads the tensor data (N and H rules) on `jobs` threads (default one
    per core); `tp`, a list of tensor-parallel degrees, adds the T rules with the bundled
    parallel-style profile detected from the layer names. An input that cannot be checked
    raises :class:`stfix.Error`."""
    word, bits = _target_bits(target)
    if isinstance(paths, (list, tuple)):
        return [_check_one(p, word, bits, numeric, tp, jobs) for p in paths]
    return _check_one(paths, word, bits, numeric, tp, jobs)
