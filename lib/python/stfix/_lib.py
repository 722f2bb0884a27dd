"""The C library and every prototype the package calls, declared once.

The library is found through the environment variable STFIX_LIBRARY (a
development build), else the copy bundled beside this file when the package
was built. Its version must be the one the package was made for.
"""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,
                    c_int64, c_size_t, c_uint, c_uint64, c_void_p)

from ._version import __version__

_HERE = os.path.dirname(os.path.abspath(__file__))


def _find():
    env = os.environ.get("STFIX_LIBRARY")
    if env:
        return env
    for name in sorted(os.listdir(_HERE)):
        if name.startswith("libstfix.so"):
            return os.path.join(_HERE, name)
    raise ImportError("stfix: no libstfix.so bundled in %s and STFIX_LIBRARY is not set "
                      "(build the package with `make python`)" % _HERE)


_path = _find()
try:
    lib = ctypes.CDLL(_path)
except OSError as e:
    raise ImportError("stfix: cannot load %s: %s" % (_path, e)) from None

lib.stf_version.restype = c_char_p
lib.stf_version.argtypes = []
_have = lib.stf_version().decode()
if _have != __version__:
    raise ImportError("stfix: the package is version %s but %s is libstfix %s; rebuild the "
                      "package (`make python`) or point STFIX_LIBRARY at a matching library"
                      % (__version__, _path, _have))

PROGRESS = CFUNCTYPE(None, c_void_p, c_uint64, c_uint64, c_void_p, c_size_t)
TEXT = CFUNCTYPE(c_int, c_void_p, POINTER(c_char), c_size_t)
HOST_READ = CFUNCTYPE(c_int64, c_void_p, c_uint64, c_void_p, c_size_t)
HOST_SIZE = CFUNCTYPE(c_int64, c_void_p)
HOST_CLOSE = CFUNCTYPE(None, c_void_p)


class Err(Structure):
    _fields_ = [("code", c_int), ("rule", c_char * 8), ("has_offset", c_int),
                ("offset", c_uint64), ("msg", c_char * 1024)]


class TensorInfo(Structure):
    _fields_ = [("name", c_void_p), ("name_len", c_size_t), ("dtype", c_int), ("rank", c_uint),
                ("shape", POINTER(c_uint64)), ("nelem", c_uint64), ("begin", c_uint64),
                ("end", c_uint64), ("nbytes", c_uint64), ("header_offset", c_uint64),
                ("shard", c_uint)]


class MetaEntry(Structure):
    _fields_ = [("key", c_void_p), ("key_len", c_size_t), ("value", c_void_p),
                ("value_len", c_size_t)]


class Diag(Structure):
    _fields_ = [("rule", c_char * 8), ("severity", c_int), ("profile", c_char_p),
                ("layer", c_void_p), ("layer_len", c_size_t), ("message", c_void_p),
                ("fix", c_char_p), ("effect", c_int)]


class CheckOpts(Structure):
    _fields_ = [("version", c_uint), ("profiles", c_uint), ("tau", c_double), ("pool", c_void_p),
                ("progress", PROGRESS), ("progress_ud", c_void_p)]


class TpOpts(Structure):
    _fields_ = [("version", c_uint), ("count", c_size_t), ("degrees", c_uint * 16),
                ("style", c_void_p), ("style_ctx", c_void_p), ("profile", c_char_p)]


class CheckJsonTp(Structure):
    _fields_ = [("profile", c_char_p), ("detected", c_int), ("classified", c_size_t),
                ("linear", c_size_t)]


class CheckJsonNet(Structure):
    _fields_ = [("bytes", c_uint64), ("requests", c_uint64)]


class PlanOpts(Structure):
    _fields_ = [("version", c_uint), ("quant_mode_set", c_int), ("quant_mode", c_int),
                ("tau", c_double), ("pool", c_void_p), ("max_mem", c_uint64),
                ("progress", PROGRESS), ("progress_ud", c_void_p), ("speculate", c_int)]


class WriteOpts(Structure):
    _fields_ = [("version", c_uint), ("max_shard_size", c_uint64), ("input", c_void_p),
                ("replace_input", c_int), ("no_wait", c_int), ("progress", PROGRESS),
                ("progress_ud", c_void_p), ("zstd_level", c_int), ("zstd_frame", c_uint64),
                ("zstd_grouped", c_int), ("zstd_verify", c_int), ("pool", c_void_p)]


class RunOpts(Structure):
    _fields_ = [("version", c_uint), ("pool", c_void_p), ("max_mem", c_uint64),
                ("max_shard_size", c_uint64), ("allow_noncompliant", c_int),
                ("error_metrics", c_int), ("write", WriteOpts), ("progress", PROGRESS),
                ("progress_ud", c_void_p), ("cancel", POINTER(c_int))]


class PlanLayer(Structure):
    _fields_ = [("prefix", c_void_p), ("out_prefix", c_void_p), ("prefix_len", c_size_t),
                ("out_prefix_len", c_size_t), ("nrules", c_size_t), ("rules", POINTER(c_char_p)),
                ("nactions", c_size_t), ("actions", c_void_p), ("summary", c_char_p),
                ("requantize", c_int), ("format", c_char_p), ("group", c_uint),
                ("mode", c_int), ("changed", c_int)]


class RuleDoc(Structure):
    _fields_ = [(n, c_char_p) for n in ("id", "severity", "title", "checks", "why", "ignored",
                                        "fix", "action", "effect")]


class HostIO(Structure):
    _fields_ = [("ctx", c_void_p), ("read", HOST_READ), ("size", HOST_SIZE),
                ("close", HOST_CLOSE)]


HOST_OPEN = CFUNCTYPE(c_int, c_void_p, c_char_p, POINTER(HostIO))


class Marker(Structure):
    _fields_ = [("channel", c_int), ("status", c_int), ("shard", c_size_t), ("path", c_char_p),
                ("key", c_void_p), ("key_len", c_size_t), ("tensor", c_int64),
                ("value", c_void_p), ("error", c_char_p), ("error_offset", c_uint64)]


class Layer(Structure):
    _fields_ = [("prefix", c_void_p), ("prefix_len", c_size_t), ("tensors", POINTER(c_int64)),
                ("ntensors", c_size_t), ("markers", POINTER(Marker)), ("nmarkers", c_size_t),
                ("conflict", c_int), ("comfy", POINTER(Marker))]


class FileHash(Structure):
    _fields_ = [("sha256", c_char * 65), ("autov2", c_char * 11), ("data_sha256", c_char * 65),
                ("size", c_uint64), ("data_start", c_uint64)]


class Metrics(Structure):
    _fields_ = [("rel_l2", c_double), ("cosine", c_double), ("snr_db", c_double),
                ("max_abs", c_double), ("max_row", c_uint64), ("max_col", c_uint64),
                ("kitchen", c_double)]


class DiffOpts(Structure):
    _fields_ = [("version", c_uint), ("numeric", c_int), ("max_mem", c_uint64),
                ("pool", c_void_p), ("progress", PROGRESS), ("progress_ud", c_void_p)]


class DiffTensor(Structure):
    _fields_ = [("name", c_void_p), ("name_len", c_size_t), ("what", c_uint), ("a", c_void_p),
                ("b", c_void_p), ("first_byte", c_uint64)]


class DiffText(Structure):
    _fields_ = [("key", c_void_p), ("key_len", c_size_t), ("a", c_void_p), ("b", c_void_p),
                ("a_len", c_size_t), ("b_len", c_size_t)]


class DiffNumeric(Structure):
    _fields_ = [("prefix", c_void_p), ("prefix_len", c_size_t), ("compared", c_int),
                ("why", c_char_p), ("m", Metrics)]


class VerifyFile(Structure):
    _fields_ = [("path", c_char_p), ("expected", c_char * 65), ("actual", c_char * 65)]


class VerifyDiff(Structure):
    _fields_ = [("file", c_char_p), ("tensor", c_void_p), ("tensor_len", c_size_t),
                ("what", c_char_p), ("detail", c_char_p), ("has_offset", c_int),
                ("offset", c_uint64)]


class RecipeBuiltin(Structure):
    _fields_ = [("name", c_char_p), ("path", c_char_p), ("bytes", c_void_p), ("len", c_size_t)]


class RecipeOpts(Structure):
    _fields_ = [("version", c_uint), ("search_dirs", POINTER(c_char_p)),
                ("search_count", c_size_t), ("max_regex_steps", c_uint64),
                ("builtins", POINTER(RecipeBuiltin)), ("builtin_count", c_size_t)]


P = c_void_p
E = POINTER(Err)
_PROTOS = {
    # util
    "stf_version_number": (c_uint, []),
    "stf_strerror": (c_char_p, [c_int]),
    "stf_err_exit_status": (c_int, [c_int]),
    "stf_err_code_name": (c_char_p, [c_int]),
    "stf_severity_name": (c_char_p, [c_int]),
    "stf_pool_new": (c_int, [POINTER(P), c_uint, E]),
    "stf_pool_free": (None, [P]),
    # container
    "stf_dtype_name": (c_char_p, [c_int]),
    "stf_ckpt_open": (c_int, [POINTER(P), c_char_p, P, E]),
    "stf_ckpt_open_host": (c_int, [POINTER(P), c_char_p, POINTER(HostIO), HOST_OPEN, P, P, E]),
    "stf_ckpt_network": (c_int, [P, POINTER(c_uint64), POINTER(c_uint64)]),
    "stf_ckpt_free": (None, [P]),
    "stf_ckpt_shard_count": (c_size_t, [P]),
    "stf_ckpt_shard_path": (c_char_p, [P, c_size_t]),
    "stf_ckpt_meta_count": (c_size_t, [P, c_size_t]),
    "stf_ckpt_meta": (POINTER(MetaEntry), [P, c_size_t, c_size_t]),
    "stf_ckpt_tensor_count": (c_size_t, [P]),
    "stf_ckpt_tensor": (POINTER(TensorInfo), [P, c_size_t]),
    "stf_ckpt_find_n": (c_int, [POINTER(c_size_t), P, c_char_p, c_size_t]),
    "stf_ckpt_read": (c_int, [P, P, c_size_t, c_uint64, c_size_t, E]),
    "stf_ckpt_check_hashes": (c_int, [P, PROGRESS, P, E]),
    "stf_output_check": (c_int, [c_char_p, POINTER(WriteOpts), E]),
    # model
    "stf_model_build": (c_int, [POINTER(P), P, E]),
    "stf_model_free": (None, [P]),
    "stf_model_layer_count": (c_size_t, [P]),
    "stf_model_layer": (POINTER(Layer), [P, c_size_t]),
    "stf_suffix_name": (c_char_p, [c_int]),
    "stf_pyjson_dumps": (c_int, [POINTER(c_void_p), POINTER(c_size_t), P, E]),
    "stf_model_str_free": (None, [c_void_p]),
    "stf_layer_dequant_shape": (c_int, [POINTER(c_uint64), POINTER(c_uint64), P, c_size_t, E]),
    "stf_layer_dequantize": (c_int, [P, c_size_t, P, c_size_t, P, E]),
    # check
    "stf_check_opts_init_version": (None, [POINTER(CheckOpts), c_uint]),
    "stf_tp_opts_init_version": (None, [POINTER(TpOpts), c_uint]),
    "stf_check_run_tp": (c_int, [POINTER(P), P, POINTER(CheckOpts), POINTER(TpOpts), E]),
    "stf_check_report_free": (None, [P]),
    "stf_check_count": (c_size_t, [P]),
    "stf_check_count_severity": (c_size_t, [P, c_int]),
    "stf_check_diag_peek": (c_size_t, [P, c_size_t, POINTER(Diag), P, c_size_t]),
    "stf_check_diag_order": (c_int, [POINTER(c_size_t), P, E]),
    "stf_check_report_json_net": (c_int, [TEXT, P, P, c_char_p, c_char_p,
                                          POINTER(CheckJsonTp), POINTER(CheckJsonNet), c_uint,
                                          E]),
    "stf_effect_name": (c_char_p, [c_int]),
    "stf_rule_doc_find": (POINTER(RuleDoc), [c_char_p]),
    "stf_rule_doc_count": (c_size_t, []),
    "stf_rule_doc_at": (POINTER(RuleDoc), [c_size_t]),
    # rules
    "stf_recipe_opts_init_version": (None, [POINTER(RecipeOpts), c_uint]),
    "stf_recipe_load_file_opts": (c_int, [POINTER(P), POINTER(P), c_char_p,
                                          POINTER(RecipeOpts), E]),
    "stf_recipe_free": (None, [P]),
    "stf_recipe_diags_count": (c_size_t, [P]),
    "stf_recipe_diags_text": (c_char_p, [P, c_size_t]),
    "stf_recipe_diags_free": (None, [P]),
    "stf_recipe_targets": (c_uint, [P]),
    "stf_recipe_kind": (c_char_p, [P]),
    "stf_recipe_description": (c_char_p, [P]),
    "stf_recipe_sha256": (c_char_p, [P]),
    "stf_recipe_warning_count": (c_size_t, [P]),
    "stf_recipe_warning": (c_char_p, [P, c_size_t]),
    "stf_recipe_set_tp_profile": (None, [P, P]),
    "stf_tp_profile_load_file": (c_int, [POINTER(P), POINTER(P), c_char_p, E]),
    "stf_tp_profile_free": (None, [P]),
    "stf_tp_profile_name": (c_char_p, [P]),
    "stf_tp_profile_detect": (c_int, [POINTER(c_size_t), POINTER(c_size_t), POINTER(c_size_t),
                                      POINTER(P), c_size_t, P, E]),
    # pipeline
    "stf_ckpt_shard_hash": (c_int, [POINTER(FileHash), P, c_size_t, PROGRESS, P, E]),
    "stf_plan_verify": (c_int, [POINTER(P), P, c_char_p, POINTER(RunOpts), E]),
    "stf_verify_report_free": (None, [P]),
    "stf_verify_ok": (c_int, [P]),
    "stf_verify_file_count": (c_size_t, [P]),
    "stf_verify_file_at": (POINTER(VerifyFile), [P, c_size_t]),
    "stf_verify_diff_count": (c_size_t, [P]),
    "stf_verify_diff_at": (POINTER(VerifyDiff), [P, c_size_t]),
    "stf_verify_stamp": (c_char_p, [P]),
    "stf_verify_stamp_ok": (c_int, [P]),
    "stf_batch_shard_size": (c_uint64, [P]),
    "stf_diff_opts_init_version": (None, [POINTER(DiffOpts), c_uint]),
    "stf_diff_run": (c_int, [POINTER(P), P, P, POINTER(DiffOpts), E]),
    "stf_diff_free": (None, [P]),
    "stf_diff_identical": (c_int, [P]),
    "stf_diff_tensor_count": (c_size_t, [P]),
    "stf_diff_tensor": (POINTER(DiffTensor), [P, c_size_t]),
    "stf_diff_marker_count": (c_size_t, [P]),
    "stf_diff_marker": (POINTER(DiffText), [P, c_size_t]),
    "stf_diff_meta_count": (c_size_t, [P]),
    "stf_diff_meta": (POINTER(DiffText), [P, c_size_t]),
    "stf_diff_numeric_count": (c_size_t, [P]),
    "stf_diff_numeric": (POINTER(DiffNumeric), [P, c_size_t]),
    "stf_plan_opts_init_version": (None, [POINTER(PlanOpts), c_uint]),
    "stf_plan_build": (c_int, [POINTER(P), P, P, POINTER(PlanOpts), E]),
    "stf_plan_free": (None, [P]),
    "stf_plan_changed": (c_int, [P]),
    "stf_plan_layer_count": (c_size_t, [P]),
    "stf_plan_layer": (POINTER(PlanLayer), [P, c_size_t]),
    "stf_plan_tensor_count": (c_size_t, [P]),
    "stf_plan_dropped_count": (c_size_t, [P]),
    "stf_plan_bytes_total": (c_uint64, [P]),
    "stf_plan_bytes_copied": (c_uint64, [P]),
    "stf_plan_targets": (c_uint, [P]),
    "stf_run_opts_init_version": (None, [POINTER(RunOpts), c_uint]),
    "stf_plan_run": (c_int, [POINTER(P), P, c_char_p, POINTER(RunOpts), E]),
    "stf_run_report_free": (None, [P]),
    "stf_run_report_check": (P, [P]),
    "stf_run_report_file_count": (c_size_t, [P]),
    "stf_run_report_file": (c_char_p, [P, c_size_t]),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# Layout versions of the option structs declared above.
CHECK_OPTS_VERSION = 2
TP_OPTS_VERSION = 1
PLAN_OPTS_VERSION = 3
RUN_OPTS_VERSION = 3
RECIPE_OPTS_VERSION = 3
DIFF_OPTS_VERSION = 1

# Bits and codes of the headers.
CONSUMER_SGLANG = 2
CONSUMER_COMFYUI = 4
CHECK_CONTAINER = 1
CHECK_NUMERIC = 8
CHECK_JSON_ONELINE = 1
ECANCELED = -10

tp_layer_style = ctypes.cast(lib.stf_tp_layer_style, c_void_p)


def text(p, n):
    """The n bytes at address p, as str (bytes that are not UTF-8 escaped)."""
    if not p:
        return ""
    return ctypes.string_at(p, n).decode("utf-8", "surrogateescape")
