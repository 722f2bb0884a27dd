"""Exceptions: each library error becomes one, classed as stfix(1) classes
its exit status (the library's table, stf_err_exit_status)."""
from typing import Optional

from . import _lib


class Error(Exception):
    """A call into libstfix failed.

    ``rule`` is the rule id (``"S15"``) or None, ``file`` the file the
    message names (None when none), ``tensor`` the tensor or layer named (None
    when none), ``offset`` the absolute byte offset in that file (None when
    none), ``code`` the library's name for the error (``"STF_EFORMAT"``) and
    ``exit_code`` the exit status ``stfix`` ends with for it (2 invalid input,
    3 usage, 4 the operation failed).
    """

    def __init__(self, message: str, code: Optional[str] = None, rule: Optional[str] = None,
                 file: Optional[str] = None, tensor: Optional[str] = None,
                 offset: Optional[int] = None, exit_code: int = 4) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.rule = rule
        self.file = file
        self.tensor = tensor
        self.offset = offset
        self.exit_code = exit_code


class InvalidInputError(Error):
    """The input or the recipe is malformed, over a cap, missing, unsupported or holds
    unusable numbers (exit status 2)."""


class UsageError(Error, ValueError):
    """An argument the library refused, such as an output path that would replace an
    input (exit status 3)."""


class OperationError(Error, OSError):
    """The operation failed: I/O, memory, an output locked by another writer (exit
    status 4)."""


class CanceledError(OperationError):
    """The call was canceled by its progress callback (exit status 4)."""


_BY_STATUS = {2: InvalidInputError, 3: UsageError, 4: OperationError}


def _quoted(msg: str, after: str) -> Optional[str]:
    """The name in quotes after `after` in the message ("tensor 'x'"), or None."""
    at = msg.find(after + " '")
    if at < 0:
        return None
    start = at + len(after) + 2
    end = msg.find("'", start)
    return msg[start:end] if end > start else None


def from_err(err: "_lib.Err", file: Optional[str] = None) -> Error:
    """The exception for a filled stf_err."""
    code = err.code
    msg = err.msg.decode("utf-8", "surrogateescape") or _lib.lib.stf_strerror(code).decode()
    status = _lib.lib.stf_err_exit_status(code)
    name = _lib.lib.stf_err_code_name(code)
    cls = CanceledError if code == _lib.ECANCELED else _BY_STATUS.get(status, OperationError)
    rule = err.rule.decode() or None
    tensor = _quoted(msg, "tensor") or _quoted(msg, "layer")
    return cls(msg, code=name.decode() if name else None, rule=rule, file=file, tensor=tensor,
               offset=err.offset if err.has_offset else None, exit_code=status)


def check(rc: int, err: "_lib.Err", file: Optional[str] = None) -> None:
    """Raise the exception for a failed call (rc < 0)."""
    if rc:
        if not err.code:
            err.code = rc
        raise from_err(err, file)
