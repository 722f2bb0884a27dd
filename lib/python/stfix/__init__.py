"""stfix: validate and repair quantized safetensors checkpoints in ComfyUI's format so
SGLang and ComfyUI load them, through libstfix itself.

    import stfix
    report = stfix.check("model.safetensors", target="sglang")
    if not report.ok:
        stfix.fix("model.safetensors", "sglang-repair", "fixed.safetensors")

Every function releases the GIL while the library works, and may be called from several
threads at once. Failures raise :class:`Error` subclasses carrying the rule id, file,
tensor, byte offset and the exit status ``stfix`` would end with.
"""
from ._version import __version__
from ._lib import lib as _lib_handle
from ._errors import (CanceledError, Error, InvalidInputError, OperationError,
                      UsageError)
from ._ckpt import Checkpoint, Layer, Marker, Tensor, open
from ._check import Diagnostic, Report, check
from ._compare import Diff, diff, hash
from ._recipe import (FixResult, Plan, PlanLayer, Recipe, Verification, VerificationError,
                      explain, fix, plan, recipes, verify)

library_version = _lib_handle.stf_version().decode()

__all__ = ["__version__", "library_version", "Error", "InvalidInputError", "UsageError",
           "OperationError", "CanceledError", "VerificationError", "Checkpoint", "Tensor",
           "Layer", "Marker",
           "open", "Diagnostic", "Report", "check", "Recipe", "recipes", "Plan", "PlanLayer",
           "plan", "FixResult", "fix", "explain", "Diff", "diff", "hash",
           "Verification", "verify"]
