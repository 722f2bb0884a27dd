"""Recipes, plans and fixes: what ``stfix rules``, ``plan`` and ``fix`` do."""
import ctypes
import glob
import os
import signal
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Union

from . import _errors, _lib
from ._check import Report, _Profiles
from ._ckpt import Checkpoint, PathLike, opened
from ._lib import lib
from ._rules_dir import rules_dir

Progress = Callable[[int, int], Optional[bool]]


def recipes() -> List[str]:
    """The names of the bundled recipes, sorted (``stfix rules list``'s built-in ones)."""
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(rules_dir(),
                                                                            "*.yaml")))


def _is_name(arg: str) -> bool:
    return bool(arg) and "/" not in arg and not arg.endswith((".yaml", ".yml"))


class Recipe:
    """A repair or conversion recipe (stfix-rules(5)): a file, or the NAME of a bundled
    one (see :func:`recipes`). ``name``, ``path``, ``kind`` (``"repair"``...),
    ``description``, ``sha256`` and ``targets`` (``["sglang", "comfyui"]``). A recipe
    the library refuses raises :class:`stfix.InvalidInputError` whose message holds every
    problem as ``FILE:LINE:COL: message``."""

    def __init__(self, name_or_path: PathLike) -> None:
        arg = os.fspath(name_or_path)
        self.name = arg
        path = arg
        if _is_name(arg) and not os.path.isfile(arg):
            path = os.path.join(rules_dir(), arg + ".yaml")
            if not os.path.isfile(path):
                raise _errors.InvalidInputError(
                    "recipe '%s' not found (bundled: %s)" % (arg, ", ".join(recipes())),
                    code="STF_ENOTFOUND", file=arg, exit_code=2)
        self.path = path
        self._r = ctypes.c_void_p()
        o = _lib.RecipeOpts()
        lib.stf_recipe_opts_init_version(ctypes.byref(o), _lib.RECIPE_OPTS_VERSION)
        dirs = (ctypes.c_char_p * 1)(os.fsencode(rules_dir()))
        o.search_dirs = dirs
        o.search_count = 1
        diags = ctypes.c_void_p()
        err = _lib.Err()
        rc = lib.stf_recipe_load_file_opts(ctypes.byref(self._r), ctypes.byref(diags),
                                           os.fsencode(path), ctypes.byref(o),
                                           ctypes.byref(err))
        if rc:
            if diags:
                texts = [lib.stf_recipe_diags_text(diags, i).decode("utf-8", "replace")
                         for i in range(lib.stf_recipe_diags_count(diags))]
                lib.stf_recipe_diags_free(diags)
                msg = "\n".join(texts)
                err.msg = msg.encode()[:1023]
            _errors.check(rc, err, path)

    @property
    def handle(self) -> ctypes.c_void_p:
        return self._r

    def __del__(self) -> None:
        if getattr(self, "_r", None):
            lib.stf_recipe_free(self._r)
            self._r = ctypes.c_void_p()

    @property
    def kind(self) -> str:
        return (lib.stf_recipe_kind(self._r) or b"").decode()

    @property
    def description(self) -> Optional[str]:
        d = lib.stf_recipe_description(self._r)
        return d.decode() if d else None

    @property
    def sha256(self) -> str:
        return lib.stf_recipe_sha256(self._r).decode()

    @property
    def targets(self) -> List[str]:
        t = lib.stf_recipe_targets(self._r)
        return [n for n, b in (("sglang", _lib.CONSUMER_SGLANG),
                               ("comfyui", _lib.CONSUMER_COMFYUI)) if t & b]

    def lint(self) -> List[str]:
        """The recipe's warnings (``stfix rules lint``); empty when there are none."""
        return [lib.stf_recipe_warning(self._r, i).decode("utf-8", "replace")
                for i in range(lib.stf_recipe_warning_count(self._r))]

    def __repr__(self) -> str:
        return "<stfix.Recipe %r (%s)>" % (self.name, self.kind)


def _recipe(r: Union[Recipe, PathLike]) -> Recipe:
    return r if isinstance(r, Recipe) else Recipe(r)


class PlanLayer:
    """One layer of a plan: ``prefix``, ``out_prefix``, ``rules`` applied, ``summary``,
    ``changed``."""

    __slots__ = ("prefix", "out_prefix", "rules", "summary", "changed")

    def __init__(self, li: "_lib.PlanLayer") -> None:
        self.prefix = _lib.text(li.prefix, li.prefix_len)
        self.out_prefix = (_lib.text(li.out_prefix, li.out_prefix_len) if li.out_prefix
                           else self.prefix)
        self.rules = [li.rules[k].decode() for k in range(li.nrules)]
        self.summary = (li.summary or b"").decode("utf-8", "surrogateescape")
        self.changed = bool(li.changed)

    def __repr__(self) -> str:
        return "<PlanLayer %r: %s>" % (self.prefix, self.summary)


def _plan_layer(p: ctypes.c_void_p, i: int) -> Any:
    """Layer i's record; the library makes it when first asked, and says NULL
    when memory ran out for it."""
    li = lib.stf_plan_layer(p, i)
    if not li:
        raise MemoryError("stfix: out of memory for layer %d of the plan" % i)
    return li.contents


class Plan:
    """What a recipe would do to a checkpoint (``stfix plan``): ``layers``, ``changed``
    (whether the output would differ), ``tensors``, ``dropped``, ``bytes_total`` and
    ``bytes_copied``."""

    def __init__(self, p: ctypes.c_void_p) -> None:
        self.layers = [PlanLayer(_plan_layer(p, i)) for i in range(lib.stf_plan_layer_count(p))]
        self.changed = bool(lib.stf_plan_changed(p))
        self.tensors = int(lib.stf_plan_tensor_count(p))
        self.dropped = int(lib.stf_plan_dropped_count(p))
        self.bytes_total = int(lib.stf_plan_bytes_total(p))
        self.bytes_copied = int(lib.stf_plan_bytes_copied(p))

    @property
    def changed_layers(self) -> List[PlanLayer]:
        return [x for x in self.layers if x.changed]


class _Job:
    """The objects one plan or fix holds, freed together."""

    def __init__(self, source: Any, recipe: Union[Recipe, PathLike], jobs: Optional[int]):
        self.recipe = _recipe(recipe)
        self.c, self.mine = opened(source)
        self.pool = ctypes.c_void_p()
        self.plan = ctypes.c_void_p()
        self.prof: Optional[_Profiles] = None
        try:
            self.prof = _Profiles(self.c)
            lib.stf_recipe_set_tp_profile(self.recipe.handle, self.prof.use)
            err = _lib.Err()
            _errors.check(lib.stf_pool_new(ctypes.byref(self.pool), jobs or 0,
                                           ctypes.byref(err)), err)
        except BaseException:
            self.close()
            raise

    def build(self, speculate: bool, max_mem: int) -> None:
        po = _lib.PlanOpts()
        lib.stf_plan_opts_init_version(ctypes.byref(po), _lib.PLAN_OPTS_VERSION)
        po.pool = self.pool
        po.max_mem = max_mem
        po.speculate = int(speculate)
        err = _lib.Err()
        rc = lib.stf_plan_build(ctypes.byref(self.plan), self.c.handle, self.recipe.handle,
                                ctypes.byref(po), ctypes.byref(err))
        if self.c._host:
            self.c._host.reraise()
        _errors.check(rc, err, self.c.name)

    def close(self) -> None:
        lib.stf_plan_free(self.plan)
        self.plan = ctypes.c_void_p()
        lib.stf_pool_free(self.pool)
        self.pool = ctypes.c_void_p()
        if self.recipe.handle:
            lib.stf_recipe_set_tp_profile(self.recipe.handle, None)
        if self.prof:
            self.prof.free()
            self.prof = None
        if self.mine:
            self.c.close()


def plan(source: Union[PathLike, Checkpoint, Any], recipe: Union[Recipe, PathLike],
         jobs: Optional[int] = None) -> Plan:
    """Plan what `recipe` does to `source` without writing anything (``stfix plan``)."""
    j = _Job(source, recipe, jobs)
    try:
        j.build(False, 0)
        return Plan(j.plan)
    finally:
        j.close()


class FixResult:
    """A finished fix: ``files`` written (shards, then the index), ``changed`` (whether
    the output differs from the input), ``plan`` and ``verification`` (the check of the
    output against the recipe's targets, a :class:`Report`, or None)."""

    def __init__(self, files: List[str], changed: bool, plan_: Plan,
                 verification: Optional[Report]) -> None:
        self.files = files
        self.changed = changed
        self.plan = plan_
        self.verification = verification


class VerificationError(_errors.Error):
    """The output failed verification for the recipe's targets; nothing was written
    (``stfix fix`` exits 1). ``report`` holds the findings."""

    report: Optional[Report] = None


def fix(source: Union[PathLike, Checkpoint, Any], recipe: Union[Recipe, PathLike],
        output: Optional[PathLike] = None, *, in_place: bool = False,
        progress: Optional[Progress] = None, jobs: Optional[int] = None,
        allow_noncompliant: bool = False, max_shard_size: int = 0, max_mem: int = 0,
        no_wait: bool = False) -> FixResult:
    """Repair or convert `source` with `recipe` into `output` (or `in_place`), as
    ``stfix fix`` does: the output is verified against the recipe's targets before it
    becomes visible, and nothing is left at `output` on any failure.

    `progress(done, total)` is called with the output's bytes written so far; returning
    False cancels the fix (:class:`stfix.CanceledError`). Ctrl-C (SIGINT) during a fix
    called from the main thread cancels it too, and KeyboardInterrupt is raised once the
    library has removed its temporary files. The GIL is released while the library works.
    """
    if (output is None) == (not in_place):
        raise _errors.UsageError("give exactly one of output and in_place=True",
                                 code="STF_EINVAL", exit_code=3)
    j = _Job(source, recipe, jobs)
    try:
        err = _lib.Err()
        ro = _lib.RunOpts()
        lib.stf_run_opts_init_version(ctypes.byref(ro), _lib.RUN_OPTS_VERSION)
        out = os.path.realpath(j.c.name) if in_place else os.fspath(output)  # type: ignore
        ro.write.input = j.c.handle
        ro.write.replace_input = int(in_place)
        ro.write.no_wait = int(no_wait)
        ro.write.max_shard_size = max_shard_size
        _errors.check(lib.stf_output_check(os.fsencode(out), ctypes.byref(ro.write),
                                           ctypes.byref(err)), err, out)
        j.build(True, max_mem or ro.max_mem)
        ro.pool = j.pool
        if max_mem:
            ro.max_mem = max_mem
        ro.max_shard_size = max_shard_size
        ro.allow_noncompliant = int(allow_noncompliant)
        stop = ctypes.c_int(0)
        ro.cancel = ctypes.pointer(stop)
        state: Dict[str, Any] = {"exc": None, "signal": False}

        def on_progress(ud: Any, done: int, total: int, what: Any, n: int) -> None:
            try:
                if progress is not None and progress(done, total) is False:
                    stop.value = 1
            except BaseException as e:
                if state["exc"] is None:
                    state["exc"] = e
                stop.value = 1

        cb = _lib.PROGRESS(on_progress)
        ro.progress = cb
        installed, old = False, None
        if threading.current_thread() is threading.main_thread():
            def on_sigint(signum: int, frame: Any) -> None:
                state["signal"] = True
                stop.value = 1
            old = signal.signal(signal.SIGINT, on_sigint)
            installed = True
        rep = ctypes.c_void_p()
        try:
            rc = lib.stf_plan_run(ctypes.byref(rep), j.plan, os.fsencode(out), ctypes.byref(ro),
                                  ctypes.byref(err))
        finally:
            if installed:  # a handler set outside Python reads as None: restore the default
                signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)
        try:
            if j.c._host:
                j.c._host.reraise()
            if state["signal"]:
                raise KeyboardInterrupt
            if state["exc"] is not None:
                raise state["exc"]
            cr = lib.stf_run_report_check(rep) if rep else None
            verification = None
            if cr:
                holder = _RunReport(rep)
                rep = ctypes.c_void_p()  # the holder frees it
                targets = lib.stf_plan_targets(j.plan)
                word = {_lib.CONSUMER_SGLANG: "sglang", _lib.CONSUMER_COMFYUI: "comfyui"}.get(
                    targets & (_lib.CONSUMER_SGLANG | _lib.CONSUMER_COMFYUI), "all")
                verification = Report(cr, out, word, None, owner=holder)
            if rc and verification is not None and not verification.ok:
                e = _errors.from_err(err, out)
                ve = VerificationError(e.message, code=e.code, rule=e.rule, file=out,
                                       tensor=e.tensor, offset=e.offset, exit_code=1)
                ve.report = verification
                raise ve
            _errors.check(rc, err, out)
            files = [lib.stf_run_report_file(rep, i).decode("utf-8", "surrogateescape")
                     for i in range(lib.stf_run_report_file_count(rep))]
            return FixResult(files, bool(lib.stf_plan_changed(j.plan)), Plan(j.plan),
                             verification)
        finally:
            lib.stf_run_report_free(rep)
    finally:
        j.close()


class Verification:
    """What :func:`verify` found: ``ok`` (every file identical and stamped with the
    recipe's sha256), ``files`` as ``(path, expected_sha256, actual_sha256)`` ("" when
    unknown or missing), ``differences`` as ``(file, tensor, what, detail)``, ``stamp``."""

    def __init__(self, r: ctypes.c_void_p) -> None:
        self.ok = bool(lib.stf_verify_ok(r))
        self.files = []
        for i in range(lib.stf_verify_file_count(r)):
            f = lib.stf_verify_file_at(r, i).contents
            self.files.append((f.path.decode("utf-8", "surrogateescape"), f.expected.decode(),
                               f.actual.decode()))
        self.differences = []
        for i in range(lib.stf_verify_diff_count(r)):
            d = lib.stf_verify_diff_at(r, i).contents
            self.differences.append((d.file.decode("utf-8", "surrogateescape"),
                                     _lib.text(d.tensor, d.tensor_len), d.what.decode(),
                                     d.detail.decode("utf-8", "replace") if d.detail else None))
        st = lib.stf_verify_stamp(r)
        self.stamp = st.decode() if st else None
        self.stamp_ok = bool(lib.stf_verify_stamp_ok(r))


def verify(output: PathLike, source: Union[PathLike, Checkpoint, Any],
           recipe: Union[Recipe, PathLike], max_shard_size: int = 0,
           jobs: Optional[int] = None) -> Verification:
    """Re-run the conversion of `source` by `recipe` in memory, writing nothing, and
    compare it with `output` (``stfix verify``): a :class:`Verification`."""
    j = _Job(source, recipe, jobs)
    r = ctypes.c_void_p()
    try:
        j.build(False, 0)
        ro = _lib.RunOpts()
        lib.stf_run_opts_init_version(ctypes.byref(ro), _lib.RUN_OPTS_VERSION)
        ro.pool = j.pool
        out = os.fspath(output)
        index = out.endswith(".index.json")
        if index:
            out = out[:-len(".index.json")]  # the writer's STEM: it adds index and shards
        ro.max_shard_size = max_shard_size or (lib.stf_batch_shard_size(j.c.handle)
                                               if index else 0)
        err = _lib.Err()
        rc = lib.stf_plan_verify(ctypes.byref(r), j.plan, os.fsencode(out), ctypes.byref(ro),
                                 ctypes.byref(err))
        if j.c._host:
            j.c._host.reraise()
        _errors.check(rc, err, out)
        return Verification(r)
    finally:
        lib.stf_verify_report_free(r)
        j.close()


class _RunReport:
    """A run report, freed when the last object that reads it goes."""

    def __init__(self, rep: ctypes.c_void_p) -> None:
        self.rep = rep
        weakref.finalize(self, lib.stf_run_report_free, rep)


def explain(rule: str) -> Dict[str, Optional[str]]:
    """The catalogue entry of a rule id (``stfix explain``): id, severity, title, checks,
    why, ignored, fix, action and effect. KeyError for an id the catalogue lacks."""
    d = lib.stf_rule_doc_find(rule.encode())
    if not d:
        raise KeyError(rule)
    e = d.contents
    return {f: (getattr(e, f).decode() if getattr(e, f) else None) for f, _ in e._fields_}
