#!/usr/bin/env python3
"""Write the malformed-checkpoint fixtures: one file per reader rule (S1-S20,
plus variants and the L caps a small file can hit) and one directory with an
index per index rule (I1-I6), and fixtures/malformed/MANIFEST listing
`<path> <rule> <error|warning>` for each (paths relative to that directory).

Python 3 standard library only; every byte is written here with struct, so
the fixtures do not depend on any safetensors implementation.

    python3 tests/gen/gen_malformed.py [OUTDIR]   (default fixtures/malformed)

The output is deterministic; re-running it must leave `git status` clean.
Files whose names start with `fuzz_` are regression inputs found by the fuzzer
and are kept as they are (their manifest lines live in FUZZ_LINES below).
"""
import os
import shutil
import struct
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fixtures", "malformed")

# Manifest lines of committed fuzzer finds (file, rule, severity).
FUZZ_LINES = []


def st(header, data=b"", n=None):
    """8-byte little-endian N, header bytes, data bytes."""
    if isinstance(header, str):
        header = header.encode("utf-8")
    return struct.pack("<Q", len(header) if n is None else n) + header + data


def tensor(name, dtype, shape, begin, end):
    return '"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}' % (
        name, dtype, ",".join(str(d) for d in shape), begin, end)


def obj(*members):
    return "{" + ",".join(members) + "}"


ONE_U8 = tensor("t", "U8", [4], 0, 4)
# The reference's reader fixture test_deserialization, N = 60.
DEMO_I32 = '{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}'

FILES = []  # (name, bytes, rule, severity)


def add(name, data, rule, sev):
    FILES.append((name, data, rule, sev))


# ---- framing
add("s01_empty.safetensors", b"", "S1", "error")
add("s01_header_too_small.safetensors", b"\x05\x00\x00", "S1", "error")
add("s02_header_too_large.safetensors",
    bytes([0x3C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF]) + DEMO_I32.encode() + b"\0" * 16, "S2", "error")
add("s02_just_over_1e8.safetensors", struct.pack("<Q", 100000001) + b"{}", "S2", "error")
add("s03_invalid_header_length.safetensors", struct.pack("<Q", 60), "S3", "error")
add("s03_n_past_end.safetensors", struct.pack("<Q", 9) + b"{}      ", "S3", "error")

# ---- lexical
add("s04_non_utf8.safetensors", st(b"\xff"), "S4", "error")
add("s04_encoded_surrogate.safetensors", st(b'{"a\xed\xa0\x80":1}'), "S4", "error")
add("s04_overlong.safetensors", st(b'{"\xc0\xaf":1}'), "S4", "error")
add("s05_not_json.safetensors", st("{"), "S5", "error")
add("s05_bom.safetensors", st(b"\xef\xbb\xbf{}"), "S5", "error")
add("s05_form_feed.safetensors", st(b"\x0c{}"), "S5", "error")
add("s05_raw_newline_in_name.safetensors",
    st(obj(tensor("a\nb", "U8", [4], 0, 4)), b"\0" * 4), "S5", "error")
add("s05_trailing_comma.safetensors", st("{" + ONE_U8 + ",}", b"\0" * 4), "S5", "error")
add("s05_lone_surrogate_escape.safetensors",
    st(obj(tensor("a\\ud800", "U8", [4], 0, 4)), b"\0" * 4), "S5", "error")
add("s05_comment.safetensors", st("{/*x*/}"), "S5", "error")
add("s06_array.safetensors", st("[]"), "S6", "error")
add("s07_leading_whitespace.safetensors", st(b"\x09\x0a{}\x0d\x20"), "S7", "warning")

# ---- JSON content
add("s08_metadata_number.safetensors", st('{"__metadata__":{"format":1}}'), "S8", "error")
add("s08_metadata_null.safetensors", st('{"__metadata__":null}'), "S8", "warning")
add("s09_missing_field.safetensors", st('{"t":{"dtype":"U8","shape":[4]}}', b"\0" * 4), "S9", "error")
add("s09_extra_field.safetensors",
    st('{"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"crc":1}}', b"\0" * 4), "S9", "warning")
add("s10_bad_dtype.safetensors", st(obj(tensor("t", "f32", [1], 0, 4)), b"\0" * 4), "S10", "error")
add("s11_leading_zero.safetensors", st('{"t":{"dtype":"U8","shape":[04],"data_offsets":[0,4]}}',
                                       b"\0" * 4), "S11", "error")
add("s11_fraction.safetensors", st('{"t":{"dtype":"U8","shape":[4.0],"data_offsets":[0,4]}}',
                                   b"\0" * 4), "S11", "error")
add("s11_exponent.safetensors", st('{"t":{"dtype":"U8","shape":[4e0],"data_offsets":[0,4]}}',
                                   b"\0" * 4), "S11", "error")
add("s11_offsets_three.safetensors", st('{"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4,4]}}',
                                        b"\0" * 4), "S11", "error")
add("s11_minus_zero.safetensors", st('{"t":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}}'),
    "S11", "error")
add("s11_minus_zero_offset.safetensors",
    st('{"t":{"dtype":"U8","shape":[0],"data_offsets":[0,-0]}}'), "S11", "error")
add("s12_dim_over_2p48.safetensors", st(obj(tensor("t", "U8", [281474976710656, 0], 0, 0))),
    "S12", "warning")
add("s13_duplicate_name.safetensors",
    st(obj(tensor("w", "U8", [4], 0, 4), tensor("w", "F32", [1], 0, 4)), b"\1\2\3\4"), "S13", "warning")
add("s13_duplicate_metadata_key.safetensors", st('{"__metadata__":{"a":"1","a":"2"}}'), "S13", "warning")
add("s14_nul_in_name.safetensors", st(obj(tensor("a\\u0000b", "U8", [4], 0, 4)), b"\0" * 4),
    "S14", "warning")
add("s14_empty_name.safetensors", st(obj(tensor("", "U8", [4], 0, 4)), b"\0" * 4), "S14", "warning")

# ---- geometry
add("s15_json_attack.safetensors",
    st(obj(*[tensor("weight_%d" % i, "F32", [2, 2], 0, 16) for i in range(10)]), b"\0" * 16),
    "S15", "error")
add("s15_gap.safetensors", st(obj(tensor("a", "U8", [4], 0, 4), tensor("b", "U8", [4], 8, 12)),
                              b"\0" * 12), "S15", "error")
add("s15_end_before_begin.safetensors", st(obj(tensor("a", "U8", [0], 0, 0),
                                               tensor("b", "U8", [0], 4, 2))), "S15", "error")
add("s16_overflow_elements.safetensors",
    st('{"test":{"dtype":"I32","shape":[2,18446744073709551614],"data_offsets":[0,16]}}', b"\0" * 16),
    "S16", "error")
add("s16_overflow_bits.safetensors",
    st('{"test":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}}', b"\0" * 16),
    "S16", "error")
add("s17_misaligned_f4.safetensors", st(obj(tensor("t", "F4", [1, 3], 0, 2)), b"\0" * 2), "S17", "error")
add("s18_invalid_info.safetensors",
    st('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}}'), "S18", "error")
add("s19_polyglot.safetensors",
    st(DEMO_I32, b"\0" * 16 + b"extra_bogus_data_for_polyglot_file"), "S19", "error")
add("s19_truncated.safetensors", st(DEMO_I32, b"\0" * 14), "S19", "error")
add("s19_data_without_tensors.safetensors", st("{}", b"\0"), "S19", "error")
add("s20_zero_size_alias.safetensors",
    st(obj(tensor("z", "U8", [0], 0, 0), tensor("w", "U8", [16], 0, 16)), b"\0" * 16), "S20", "warning")

# ---- resource caps a small file can reach (defaults: rank 8, name 4096, depth 3)
add("l3_rank_9.safetensors", st(obj(tensor("t", "U8", [1] * 9, 0, 1)), b"\0"), "L3", "error")
add("l4_name_4097.safetensors", st(obj(tensor("n" * 4097, "U8", [1], 0, 1)), b"\0"), "L4", "error")
add("l6_nesting.safetensors", st('{"t":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}}', b"\0"),
    "L6", "error")

# ---- sharded checkpoints (a directory per case, opened through the index)
S1 = "model-00001-of-00002.safetensors"
S2 = "model-00002-of-00002.safetensors"
SHARD1 = st(obj(tensor("a", "U8", [2], 0, 2), tensor("c", "U8", [3], 2, 5)), b"abcde")
SHARD2 = st(obj(tensor("b", "U8", [4], 0, 4)), b"wxyz")


def wmap(pairs):
    return ", ".join('"%s": "%s"' % (k, v) for k, v in pairs)


def index(pairs, total=9):
    return ('{"metadata": {"total_size": %d}, "weight_map": {%s}}\n' % (total, wmap(pairs))).encode()


GOOD = [("a", S1), ("b", S2), ("c", S1)]
DIRS = []  # (dir, {file: bytes}, rule, severity)


def add_dir(name, files, rule, sev):
    DIRS.append((name, files, rule, sev))


def two(idx, s1=SHARD1, s2=SHARD2):
    return {"model.safetensors.index.json": idx, S1: s1, S2: s2}


add_dir("i1_truncated_json", two(b'{"weight_map": {"a": "' + S1.encode() + b'"'), "I1", "error")
add_dir("i1_weight_map_array", two(b'{"weight_map": ["' + S1.encode() + b'"]}'), "I1", "error")
add_dir("i1_value_not_string", two(b'{"weight_map": {"a": 1}}'), "I1", "error")
add_dir("i1_duplicate_key", two(('{"weight_map": {%s, "a": "%s"}}' % (wmap(GOOD), S2)).encode()),
        "I1", "error")
add_dir("i1_no_weight_map", two(b'{"metadata": {"total_size": 9}}'), "I1", "error")
add_dir("i2_parent_dir", two(index([("a", S1), ("b", "../" + S2), ("c", S1)])), "I2", "error")
add_dir("i2_absolute", two(index([("a", S1), ("b", "/etc/passwd"), ("c", S1)])), "I2", "error")
add_dir("i2_backslash", two(index([("a", S1), ("b", "sub\\\\" + S2), ("c", S1)])), "I2", "error")
add_dir("i3_missing_shard", {"model.safetensors.index.json": index(GOOD), S1: SHARD1}, "I3", "error")
add_dir("i3_invalid_shard", two(index(GOOD), s2=st(obj(tensor("b", "U8", [4], 0, 4)), b"wx")),
        "S19", "error")
add_dir("i4_unlisted_tensor", two(index([("a", S1), ("b", S2)], total=6)), "I4", "error")
add_dir("i4_missing_tensor", two(index(GOOD + [("d", S2)])), "I4", "error")
add_dir("i4_wrong_shard", two(index([("a", S1), ("b", S1), ("c", S2)])), "I4", "error")
add_dir("i5_cross_shard_duplicate",
        two(index(GOOD), s2=st(obj(tensor("b", "U8", [4], 0, 4), tensor("c", "U8", [3], 4, 7)),
                               b"wxyzabc")), "I5", "error")
add_dir("i6_total_size_mismatch", two(index(GOOD, total=10)), "I6", "warning")


# Seed corpus for tests/fuzz/fuzz_reader.c: valid files (the safetensors
# reference's writer and reader fixtures).
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_reader")
F32_0_5 = struct.pack("<6f", 0, 1, 2, 3, 4, 5)


def padded(text):
    return text + " " * (-len(text) % 8)


SEEDS = [
    ("serialization.safetensors", st(obj(tensor("attn.0", "F32", [1, 2, 3], 0, 24)), F32_0_5)),
    ("forced_alignment.safetensors", st(padded(obj(tensor("attn0", "F32", [1, 1, 2, 3], 0, 24))), F32_0_5)),
    ("fp4.safetensors", st(padded(obj(tensor("attn.0", "F4", [1, 2], 0, 1))), b"\0")),
    ("empty.safetensors", st(padded("{}"))),
    ("empty_meta.safetensors", st(padded('{"__metadata__":{"framework":"pt"}}'))),
    ("scalar.safetensors", st('{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}', b"\0" * 4)),
    ("zero_sized.safetensors", st('{"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}}')),
    ("whitespace.safetensors", st(b"{}\x0d\x20\x09\x0a")),
    ("mixed.safetensors",
     st(padded('{"__metadata__":{"_quantization_metadata":"{\\"format_version\\":\\"1.0\\"}","format":"pt"},'
               + ",".join([tensor("a.weight", "F32", [2], 0, 8), tensor("a.weight_scale", "BF16", [1], 8, 10),
                           tensor("a.comfy_quant", "U8", [3], 10, 13), tensor("b.weight", "I8", [2, 2], 13, 17)])
               + "}"), bytes(range(17)))),
]


# Seed corpus for tests/fuzz/fuzz_index.c: well-formed indexes.
CORPUS_INDEX = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_index")
INDEX_SEEDS = [
    ("good.index.json", index(GOOD)),
    ("meta.index.json", b'{"metadata": {"total_size": 3, "format": "pt", "q": {"layers": [1, 2.5e3, null, true]}},'
                        b' "weight_map": {"a\\u00e9": "x.safetensors", "b": "y.safetensors"}, "extra": "\\ud83d\\ude00"}'),
]


def main():
    os.makedirs(CORPUS_INDEX, exist_ok=True)
    for name, data in INDEX_SEEDS:
        with open(os.path.join(CORPUS_INDEX, name), "wb") as f:
            f.write(data)
    os.makedirs(CORPUS, exist_ok=True)
    for name, data in SEEDS:
        with open(os.path.join(CORPUS, name), "wb") as f:
            f.write(data)
    os.makedirs(OUT, exist_ok=True)
    # Remove what an earlier run wrote, keeping fuzzer finds.
    for entry in os.listdir(OUT):
        p = os.path.join(OUT, entry)
        if entry.startswith("fuzz_"):
            continue
        if os.path.isdir(p) and entry.startswith("i"):
            shutil.rmtree(p)
        elif entry.endswith(".safetensors") or entry == "MANIFEST":
            os.remove(p)
    lines = ["# <path relative to fixtures/malformed> <rule> <error|warning>",
             "# generated by tests/gen/gen_malformed.py; checked by tests/unit/test_malformed.c"]
    for name, data, rule, sev in FILES:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        lines.append("%s %s %s" % (name, rule, sev))
    for name, files, rule, sev in DIRS:
        d = os.path.join(OUT, name)
        os.makedirs(d)
        for fname in sorted(files):
            with open(os.path.join(d, fname), "wb") as f:
                f.write(files[fname])
        lines.append("%s/model.safetensors.index.json %s %s" % (name, rule, sev))
    for name, rule, sev in FUZZ_LINES:
        lines.append("%s %s %s" % (name, rule, sev))
    with open(os.path.join(OUT, "MANIFEST"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
