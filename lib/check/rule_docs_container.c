/*
 * Rule catalogue, container part (see rule_doc_internal.h): the strict
 * reader's S rules, the sharded index's I rules and the resource caps' L
 * rules, in that order. `stfix explain`, stfix-checks(7) and the rule list of stfix(1)
 * are generated from these entries (man/mkchecks.py), so the text here is
 * what users read: plain ASCII, one paragraph per field, no final newline,
 * sentences that end in a period and no abbreviations ending in one.
 */
#include "check/rule_doc_internal.h"

/* Paragraphs several rules share. */
static const char REF_IGNORED[] =
    "Nothing can load the file: SGLang, ComfyUI, transformers and diffusers all read "
    "safetensors files through the reference library. stfix refuses it too (exit 2), naming "
    "the file, the tensor where one applies and the byte offset, and writes no output.";
static const char REEXPORT[] =
    "The header cannot be repaired from what is left of it: export the checkpoint again, or "
    "obtain an intact copy (compare its size and checksum with the source).";
static const char STRICT_REWRITE[] =
    "stfix rewrite writes the canonical form, which does not have this problem; stfix fix "
    "writes it too.";
static const char CANON_WHY[] =
    "The canonical form is what the safetensors reference writer emits (with metadata keys "
    "sorted): the same tensors always give the same bytes, so outputs can be compared by "
    "checksum. It is never a load error: MLX's writer does not pad, and unaligned files load "
    "everywhere. Only stfix inspect reports it, as an info finding, and prints canonical: no.";
static const char CANON_IGNORED[] = "Nothing: the file loads everywhere.";
static const char CANON_FIX[] =
    "stfix rewrite writes the canonical form, and every file stfix writes is in it; a "
    "canonical input comes back byte for byte.";
static const char INDEX_FIX[] =
    "Regenerate the index with the tool that wrote the shards, or correct weight_map by hand. "
    "Whenever stfix writes sharded output (--max-shard-size) it writes a consistent index.";
static const char CAP_WHY[] =
    "Caps bound the memory and time stfix spends on a damaged or hostile file: exceeding one "
    "is an error with its own rule id, never a crash or a runaway allocation. The defaults are "
    "far above what real checkpoints need.";
static const char NET_WHY[] =
    "A remote input is read in pieces, each a separate answer of the server; stfix trusts one "
    "only when it is the range asked for, of the file first seen, so that what it checks or "
    "converts is one consistent file, never a splice of two.";
static const char NET_IGNORED[] =
    "It cannot be ignored: the command stops (exit 4) and writes nothing.";
static const char CAP_IGNORED[] =
    "It cannot be ignored: stfix refuses the input (exit 2) and writes no output.";
static const char CAP_FIX[] =
    "A file over a default cap is almost always damaged or hostile: obtain an intact copy. A "
    "program using libstfix can change the cap in stf_open_opts; the stfix command uses the "
    "defaults.";

const stf_rule_doc stf__rule_docs_container[] = {
    /* id, severity, title, checks, why, ignored, fix, action, effect */
    { "S1", "error", "File shorter than the 8-byte header length",
      "The file holds at least 8 bytes: the little-endian unsigned 64-bit header length N that "
      "every safetensors file starts with.",
      "The safetensors reference reader refuses a shorter file with HeaderTooSmall. The usual "
      "causes are a truncated download or copy, or a file that is not safetensors at all.",
      REF_IGNORED, REEXPORT, NULL, "refuses" },
    { "S2", "error", "Header length above 100,000,000 bytes",
      "The header length N is at most 100,000,000 bytes (decimal, not 100 MiB). An N too large "
      "for the machine's size_t is refused the same way. stfix's writer refuses to write a "
      "larger header as well.",
      "The reference reader refuses a larger N with HeaderTooLarge before it allocates anything. "
      "A huge N is usually garbage in the first 8 bytes: the file is damaged at its start or not "
      "safetensors.",
      REF_IGNORED,
      "Obtain an intact copy. A genuine checkpoint whose header would exceed the limit has too "
      "many tensors for one file and must be written as shards.",
      NULL, "refuses" },
    { "S3", "error", "Header runs past the end of the file",
      "8 + N does not exceed the file size, compared so that the sum cannot overflow.",
      "The reference reader refuses it with InvalidHeaderLength. The file is truncated inside its "
      "header, or its first 8 bytes are not a header length.",
      REF_IGNORED, REEXPORT, NULL, "refuses" },
    { "S4", "error", "Header is not valid UTF-8",
      "All N header bytes, the padding included, are valid UTF-8 in Rust's strict sense: no "
      "overlong forms, no encoded surrogates, nothing above U+10FFFF and no truncated sequences.",
      "The reference reader refuses it with InvalidHeader. Lenient JSON parsers accept such "
      "bytes, so tools built on them would disagree with the loaders about tensor names.",
      REF_IGNORED,
      "Export again with a writer that encodes names as UTF-8, as every mainstream writer does; "
      "a header with invalid UTF-8 is usually corrupted or edited by hand.",
      NULL, "refuses" },
    { "S5", "error", "Header is not exactly one strict JSON value",
      "The header is one JSON value with only JSON whitespace (space, tab, newline, carriage "
      "return) around it, in serde_json's grammar: no byte order mark, comments, trailing commas, "
      "single quotes, NaN or Infinity, no raw control characters inside strings, only valid "
      "escapes, no lone surrogate \\u escapes and no numbers with a leading zero.",
      "The reference reader refuses it with InvalidHeaderDeserialization. Python's json module "
      "and cJSON accept some of these forms, so a file that one tool reads may still fail to "
      "load in SGLang or ComfyUI.",
      REF_IGNORED,
      "Export again with the safetensors library or stfix. A header edited by hand must be made "
      "strict JSON again before anything can read it.",
      NULL, "refuses" },
    { "S6", "error", "Header is not a JSON object",
      "The header's JSON value is an object, not an array, string, number, true, false or null.",
      "The reference reader refuses anything else with InvalidHeaderDeserialization: the tensors "
      "are the members of that object.",
      REF_IGNORED, REEXPORT, NULL, "refuses" },
    { "S7", "warning; error with --strict", "Header starts with whitespace",
      "Byte 0 of the header is an opening brace, as the format's description requires.",
      "The reference reader has accepted leading whitespace only since version 0.8.0-rc.0, and "
      "has a test that asserts it; older releases of the safetensors library, which SGLang and "
      "ComfyUI installations may still use, and other strict readers refuse the file.",
      "The file loads with current safetensors releases and fails with older ones. With --strict "
      "stfix refuses it (exit 2).",
      STRICT_REWRITE, NULL, "note" },
    { "S8", "error; a null __metadata__: warning, error with --strict",
      "__metadata__ is not an object of strings",
      "__metadata__, when present, is an object whose values are all strings. A number, boolean, "
      "null, array or object value is refused, and so is a __metadata__ that is not an object. A "
      "null __metadata__ is a strict finding only: the reference accepts it because the field is "
      "optional, while the format's schema does not.",
      "The reference reader refuses a non-string value with InvalidHeaderDeserialization; number "
      "values from hand-written exporters are a known source of unloadable files. Structured data "
      "such as ComfyUI's _quantization_metadata must be stored as a string that holds JSON.",
      "A non-string value: nothing can load the file, and stfix refuses it (exit 2). A null "
      "__metadata__: the file loads with the safetensors library, but readers that follow the "
      "schema refuse it.",
      "Store structured values as JSON text inside a string, in the exporter. stfix rewrite drops "
      "a null __metadata__, which means the same as none.",
      NULL, "refuses" },
    { "S9", "error; unknown fields: warning, error with --strict",
      "Tensor entry lacks a field, repeats one or has an unknown one",
      "Every top-level member other than __metadata__ is an object with the fields dtype, shape "
      "and data_offsets. A missing or repeated field is refused. An unknown extra field is a "
      "strict finding: the format's JSON schema forbids it, while the reference reader ignores it.",
      "The reference reader refuses a missing or repeated field with "
      "InvalidHeaderDeserialization. An extra field is data that no loader sees, so it can carry "
      "information that differs between tools.",
      "A missing or repeated field: nothing can load the file. An extra field: the file loads, "
      "and the field is lost whenever the file is rewritten.",
      "stfix rewrite writes only the three fields, dropping extra ones. A missing field cannot be "
      "recovered: export the checkpoint again.",
      NULL, "refuses" },
    { "S10", "error", "Unknown dtype",
      "dtype is a string naming one of the 22 safetensors dtypes in exact case: BOOL, F4, "
      "F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, I16, U16, "
      "F16, BF16, I32, U32, F32, C64, F64, I64 and U64.",
      "The reference reader refuses other names, and releases older than the one that added a "
      "dtype refuse that dtype too. ComfyUI's own reader knows fewer: not F8_E8M0, F4, the F6 "
      "types or the FNUZ types, which is why stfix never writes them for ComfyUI.",
      REF_IGNORED,
      "Export again with a supported dtype; a name in the wrong case, such as f16 or bf16, must "
      "be written in upper case.",
      NULL, "refuses" },
    { "S11", "error", "Shape or offset is not a plain unsigned integer",
      "shape is an array of non-negative integers and data_offsets an array of exactly two, each "
      "written as plain decimal digits that fit in 64 bits: no fraction, no exponent, no leading "
      "zero and no minus sign, -0 included.",
      "The reference reader's JSON parser reads -0, 1e3 or 16.0 as floating-point numbers and "
      "refuses them (invalid type: floating point, expected usize). Lenient parsers accept them "
      "and may see a different shape than the loaders.",
      REF_IGNORED,
      "Export again. Writers that print integers through a floating-point formatter, or through "
      "JavaScript numbers, produce these forms.",
      NULL, "refuses" },
    { "S12", "warning; error with --strict", "Dimension or offset above 2^48-1",
      "Every dimension and data offset is at most 2^48-1 (281,474,976,710,655).",
      "The format's JSON schema caps the values there so that they stay exact in a double. "
      "Readers that parse JSON numbers as doubles, such as the JavaScript library behind the "
      "Hugging Face Hub's file viewer, lose precision above it. The reference reader accepts "
      "larger values.",
      "The file loads with the safetensors library, but double-based tools may compute wrong "
      "offsets. With --strict stfix refuses it (exit 2).",
      "No real tensor needs such a dimension: a value this large is usually paired with a 0 "
      "elsewhere in the shape. Fix the shape in the exporter; stfix rewrite keeps the values as "
      "they are.",
      NULL, "note" },
    { "S13", "warning; error with --strict (a second __metadata__: error)",
      "Duplicate key in the header",
      "No key appears twice at any level: tensor names, keys inside __metadata__, fields inside a "
      "tensor object (refused under S9) and __metadata__ itself (always refused).",
      "The reference reader keeps the last of two entries with one name. When their offsets "
      "differ it fails with a misleading InvalidOffset; when they are equal it loads silently. "
      "Parsers that keep the first duplicate, cJSON among them, then see a different tensor or "
      "metadata value than SGLang and ComfyUI do: a checker could approve a value the loader "
      "never uses.",
      "Tools disagree about what the file holds. With --strict stfix refuses it (exit 2).",
      "stfix keeps the last value of every duplicate, as the reference does, so stfix rewrite "
      "writes each name once with the value the loaders see. Check that this value is the "
      "intended one.",
      NULL, "refuses" },
    { "S14", "warning; error with --strict",
      "Tensor name empty, with a control character, or __metadata__",
      "Tensor names are non-empty, contain no control character and no U+0000 after unescaping, "
      "and are not __metadata__.",
      "The reference reader accepts such names, but they break the tools around it: an embedded "
      "U+0000 truncates the name in C-string based code, control characters garble logs and "
      "terminals, and a tensor named __metadata__ can be written by the reference writer but not "
      "read back.",
      "Without --strict stfix reads the file and writes such a name unchanged, except that it "
      "never writes a tensor named __metadata__. With --strict the input is refused (exit 2).",
      "Rename the tensor in the exporter.", NULL, "note" },
    { "S15", "error", "Tensor data not contiguous",
      "Sorted by their data_offsets (begin, then end), the tensors start at 0 and each begins "
      "where the previous one ends, with an end not before its begin: no gaps and no overlaps.",
      "The reference reader refuses it with InvalidOffset. Overlaps would let two tensors share "
      "bytes, and gaps would hide data that no loader sees.",
      REF_IGNORED,
      "Export again; stfix's canonical writer lays out the tensors contiguously from offset 0. "
      "Two entries with one name and different offsets (S13) also end up here.",
      NULL, "refuses" },
    { "S16", "error", "Element or bit count overflows 64 bits",
      "A tensor's element count (the product of its shape, 1 for an empty shape) and its bit "
      "count (elements times the dtype's bits) fit in 64 bits.",
      "The reference reader refuses it with ValidationOverflow. Without the check the size would "
      "wrap around, and a small byte range could pass for a huge tensor.",
      REF_IGNORED, REEXPORT, NULL, "refuses" },
    { "S17", "error", "Tensor size not a whole number of bytes",
      "A tensor's bit count is a multiple of 8. Only the sub-byte dtypes can break this: F4 needs "
      "an even element count, F6_E2M3 and F6_E3M2 a multiple of 4.",
      "The reference reader refuses it with MisalignedSlice: a tensor cannot end inside a byte.",
      REF_IGNORED,
      "Pad the tensor to whole bytes in the exporter, or store packed codes in a byte dtype (U8 "
      "or I8), as ComfyUI's packed formats do.",
      NULL, "refuses" },
    { "S18", "error", "Byte range does not match dtype and shape",
      "end - begin of data_offsets equals the tensor's bit count divided by 8.",
      "The reference reader refuses it with TensorInvalidInfo. A loader that trusted the shape "
      "would read bytes of the neighbouring tensor, or miss some of its own.",
      REF_IGNORED,
      "Export again. A shape edited by hand must keep the element count that matches the bytes.",
      NULL, "refuses" },
    { "S19", "error", "Data section longer or shorter than the tensors",
      "The file ends where the last tensor ends: 8 + N + the end of the data equals the file "
      "size. Trailing bytes are refused as well as missing ones, and a file without tensors has "
      "an empty data section. A zstd stream whose frames do not record their size (zstd < "
      "FILE) is not decompressed to learn it: the file is taken to be as long as its header "
      "declares, which is refused at open when the stream's block headers show it decodes to "
      "more or less, and otherwise when a read reaches the end and finds it does.",
      "The reference reader refuses it with MetadataIncompleteBuffer. A short file has lost "
      "tensor data; trailing bytes can hold a second file format (a polyglot file) that other "
      "tools read instead.",
      REF_IGNORED,
      "A short file must be copied or downloaded again. For trailing bytes the message gives the "
      "size the file should have: find out where the extra bytes come from before cutting the "
      "file to that size.",
      NULL, "refuses" },
    { "S20", "warning", "Zero-size tensor shares its offset with another tensor",
      "A tensor without bytes (a 0 in its shape, data_offsets [x, x]) starts where another "
      "tensor starts.",
      "The reference reader accepts it and it is not a safety problem. stfix reports it because "
      "a tool that identifies tensors by offset may confuse the two.",
      "Nothing: every loader reads both tensors correctly.",
      "Nothing is needed. stfix's canonical writer also places a zero-size tensor at the current "
      "offset, so the warning can remain after stfix rewrite.",
      NULL, "note" },
    { "S21", "info (canonical form only)", "Header padding is not canonical",
      "The header is padded with trailing spaces only, as few as needed to make N a multiple of "
      "8, so that the data starts 8-byte aligned.",
      CANON_WHY, CANON_IGNORED, CANON_FIX, NULL, "note" },
    { "S22", "info (canonical form only)", "Header JSON is not compact or not in canonical order",
      "The header JSON has no whitespace outside strings, __metadata__ comes first, the tensors "
      "follow in offset order, and each tensor's fields are in the order dtype, shape, "
      "data_offsets. It is also reported when the header differs in any other way from the one "
      "the canonical writer would produce.",
      CANON_WHY, CANON_IGNORED, CANON_FIX, NULL, "note" },
    { "S23", "info (canonical form only)", "Tensor data not in writer order",
      "The data is ordered as the reference writer orders it: by dtype from the widest to the "
      "narrowest (U64, I64, F64, C64, F32 and so on down to BOOL), then by name bytes ascending.",
      CANON_WHY, CANON_IGNORED, CANON_FIX, NULL, "note" },
    { "S24", "info (canonical form only)", "__metadata__ keys not sorted",
      "The keys of __metadata__ are sorted bytewise. This is stfix's rule: the reference writer "
      "iterates a hash map, so its key order is random.",
      CANON_WHY, CANON_IGNORED, CANON_FIX, NULL, "note" },
    { "S25", "info (canonical form only)", "Number or string escape not canonical",
      "Numbers are plain decimal, and strings use serde_json's escapes: the short forms for "
      "quote, backslash, backspace, form feed, newline, carriage return and tab, \\u00xx with "
      "lower-case hex for other control characters, and every other byte raw.",
      CANON_WHY, CANON_IGNORED, CANON_FIX, NULL, "note" },
    { "S26", "error", "zstd data corrupt or truncated",
      "A file that starts with a zstd frame is read through its decompressed bytes. Every frame "
      "has a valid header and blocks of a known type, the file does not end inside a frame, and "
      "each frame decodes without error to the size its header declares. A stream without a "
      "seek table is walked by its block headers when it is opened and checked as it is "
      "decompressed; a seekable file's frames are checked when they are first read. In a "
      ".safetensors.stz file a grouped frame (magic STZG) holds two zstd frames, the high and "
      "the low bytes of its BF16 or F16 values: its header must be exact (element width 2, "
      "zero flags, an even size no larger than the seek table gives the frame, inner sizes "
      "that add up to the frame) and each inner frame must decode, checksum included, to "
      "exactly half the size.",
      "zstd -d and every loader fed the decompressed stream fail on the same bytes, or worse, "
      "stop early and read a shorter file. The usual cause is a truncated download or copy.",
      "stfix refuses the input (exit 2), naming the file and the compressed byte offset, and "
      "writes no output.",
      "Obtain an intact copy; zstd -t tests a compressed file on its own.",
      NULL, "refuses" },
    { "S27", "error", "zstd seek table malformed",
      "A file that ends in the seekable magic number 0x8F92EAB1 holds a valid seek table, as "
      "the zstd seekable format lays it out: a skippable frame with magic 0x184D2A5E whose size "
      "matches the footer, reserved descriptor bits clear, every frame with compressed bytes, "
      "frames that end exactly where the table begins, and frames whose headers and decoded "
      "sizes agree with their entries.",
      "The table is what lets stfix read one tensor without decompressing the file before it. "
      "A table that disagrees with the frames would serve the wrong bytes.",
      "stfix refuses the input (exit 2), naming the file and the compressed byte offset, and "
      "writes no output.",
      "zstd -d restores the uncompressed file when only the table is damaged: decompress it and "
      "compress it again, or read the .safetensors file directly.",
      NULL, "note" },
    { "S28", "error", "zstd checksum mismatch",
      "A frame's decompressed bytes match their checksum: the low 32 bits of XXH64 in the seek "
      "table entry when the table carries checksums, and the frame's own content checksum when "
      "its header has one.",
      "A mismatch means the data changed after it was compressed: the tensors would be read "
      "with wrong values and no other error.",
      "stfix refuses the input (exit 2), naming the file and the compressed byte offset of the "
      "frame, and writes no output.",
      "Obtain an intact copy.",
      NULL, "refuses" },
    { "S29", "info (with stfix check --hash or --numeric, stfix inspect --hash)",
      "modelspec.hash_sha256 does not match the tensor data",
      "When __metadata__ holds modelspec.hash_sha256, its value is 0x and the SHA-256 of the "
      "file's tensor data: the bytes after the 8-byte length and the N header bytes, to the end "
      "of the file, as the ModelSpec metadata standard defines it (hex digits in either case "
      "are accepted). The check reads every byte of such a file, so stfix check makes it only "
      "with --hash or --numeric and stfix inspect only with --hash; a compressed file is "
      "checked as the bytes it restores to.",
      "Model browsers and UIs show the value as the model's identity and may warn that the "
      "file is corrupt when it does not match. A stale value is almost always left by a tool "
      "that changed the tensors or their order and copied the metadata unchanged, not by "
      "damage to the data: stfix hash prints the value the data have (DATA).",
      "Nothing fails to load: SGLang and ComfyUI never read the key.",
      "stfix rewrite and stfix fix write the value their output's data have whenever the "
      "metadata holds the key (they never add it), so a rewrite corrects a stale one.",
      NULL, "note" },

    { "I1", "error", "Index is not valid JSON or lacks a weight_map",
      "A sharded checkpoint's index (NAME.safetensors.index.json) is a JSON object with a "
      "weight_map object that maps tensor names to shard file names (strings), and optionally a "
      "metadata object. No key appears twice in the root, metadata or weight_map.",
      "transformers, diffusers and SGLang read weight_map to find the shard of each tensor. A "
      "broken index stops the load, and duplicate keys let parsers disagree about which shard "
      "holds a tensor.",
      "The sharded checkpoint does not load as a whole. stfix refuses it (exit 2).", INDEX_FIX,
      NULL, "refuses" },
    { "I2", "error", "Shard name is not a bare file name",
      "Every weight_map value is a bare file name in the index's directory: not empty, not a "
      "single dot, and without a slash, a backslash, two dots in a row or U+0000.",
      "This is a security rule. A value such as ../../etc/passwd or an absolute path makes a "
      "loader open a file outside the checkpoint's directory, chosen by whoever wrote the index.",
      "stfix refuses the index (exit 2). Loaders that follow the name open an arbitrary file.",
      "Put the shards in the index's directory and write their bare file names into weight_map.",
      NULL, "refuses" },
    { "I3", "error", "Shard missing or unreadable",
      "Every shard that weight_map names exists in the index's directory and passes S1 to S19 on "
      "its own.",
      "Loaders open every shard, so a missing or broken one fails the load partway through, "
      "often after minutes of loading.",
      "The checkpoint does not load. stfix refuses it, naming the shard and one tensor "
      "weight_map places in it, followed by the shard's own error: exit 2, or 4 when the shard "
      "exists but cannot be read as a file (a directory, a FIFO, no read permission), as for "
      "such a file given directly.",
      "Restore the shard: an incomplete download is the usual cause. If the shard is there but "
      "broken, see the S rule in the message.",
      NULL, "refuses" },
    { "I4", "error", "weight_map disagrees with the shards",
      "The tensor names held by the shards are exactly the weight_map keys, and each key maps to "
      "the shard that holds the tensor.",
      "Loaders that follow weight_map look for a tensor in the wrong shard or miss it and fail; "
      "loaders that read every shard load tensors the index does not declare.",
      "The checkpoint loads in some tools and fails, or loads different tensors, in others. "
      "stfix refuses it (exit 2).",
      INDEX_FIX, NULL, "refuses" },
    { "I5", "error", "Tensor in two shards",
      "No tensor name appears in more than one shard.",
      "SGLang loads every shard, and when a name occurs twice the later file silently wins, so "
      "the value it uses depends on the order of the files. stfix therefore makes this an error, "
      "not a warning.",
      "Different loaders may use different copies of the tensor. stfix refuses the checkpoint "
      "(exit 2).",
      "Decide which copy is right and export again. A shard left over from an earlier export "
      "with a different shard count is the usual cause.",
      NULL, "refuses" },
    { "I6", "warning", "total_size does not match the tensors",
      "metadata.total_size in the index is an unsigned integer equal to the sum of the tensors' "
      "data bytes (end - begin of their data_offsets), not of the file sizes.",
      "Loaders use total_size only for progress reports and memory estimates; a wrong value "
      "misleads them but does not break the load.",
      "Nothing breaks: the checkpoint loads.",
      "stfix recomputes total_size whenever it writes an index.", NULL, "note" },
    { "I7", "none (a property of stfix's sharded output; never reported)",
      "Quantized layer split across shards",
      "When stfix writes shards, a layer's weight, weight_scale, comfy_quant marker and other "
      "quantization tensors go into one shard, and each shard's _quantization_metadata lists "
      "only the layers whose tensors that shard holds.",
      "SGLang and ComfyUI read markers and _quantization_metadata per file. Keeping a layer "
      "in one shard means every file describes exactly the layers it holds, and no marker refers "
      "to tensors in another file.",
      "stfix does not check input checkpoints for this; its own output always satisfies it.",
      "Nothing to do: stfix rewrite and stfix fix with --max-shard-size write output that "
      "satisfies it.",
      NULL, "note" },

    { "L1", "error", "Header length over the cap",
      "The header length N is at most the header cap: 100,000,000 bytes by default, which is "
      "also the reference's own limit (S2). L1 fires only when a program using libstfix sets a "
      "lower cap.",
      CAP_WHY, CAP_IGNORED, CAP_FIX, NULL, "refuses" },
    { "L2", "error", "Too many tensors in one file",
      "A file holds at most 1,000,000 tensors by default. Real diffusion models hold fewer than "
      "100,000.",
      CAP_WHY, CAP_IGNORED, CAP_FIX, NULL, "note" },
    { "L3", "error", "Shape with too many dimensions",
      "A shape has at most 8 dimensions by default. Three-dimensional convolution weights have "
      "5 and stacked expert weights 3.",
      CAP_WHY, CAP_IGNORED, CAP_FIX, NULL, "note" },
    { "L4", "error", "Tensor name too long",
      "A tensor name is at most 4,096 bytes after unescaping, by default. A name whose raw text "
      "is more than six times the cap is refused before it is copied.",
      CAP_WHY, CAP_IGNORED, CAP_FIX, NULL, "note" },
    { "L5", "error", "Too many metadata entries",
      "__metadata__, and the metadata object of a sharded checkpoint's index, hold at most "
      "65,536 entries by default.",
      CAP_WHY, CAP_IGNORED, CAP_FIX, NULL, "note" },
    { "L6", "error", "Header JSON nested too deep",
      "The header's JSON nests at most 3 levels (the root object, a tensor object, its arrays). "
      "This cap is fixed.",
      "A valid header never needs more, and the check runs before anything is built from the "
      "JSON, so a deeply nested header costs no memory or stack.",
      CAP_IGNORED,
      "The header is not a safetensors header: export the checkpoint again or obtain an intact "
      "copy.",
      NULL, "note" },
    { "L7", "error", "Too many shard files in an index",
      "An index names at most 10,000 distinct shard files by default.", CAP_WHY, CAP_IGNORED,
      CAP_FIX, NULL, "note" },
    { "L8", "error", "Index file too large",
      "An index file is at most 100,000,000 bytes by default.", CAP_WHY, CAP_IGNORED, CAP_FIX,
      NULL, "note" },
    { "L9", "error", "zstd frame too large",
      "A frame of a seekable zstd file decodes to at most 64 MiB by default, since a read holds "
      "whole frames in memory (at most 8 of them per file by default). A frame of a plain zstd "
      "stream needs a window of at most 128 MiB, libzstd's own limit, which zstd exceeds only "
      "with --long or --ultra.",
      CAP_WHY, CAP_IGNORED,
      "Compress again with smaller frames, or without --long. A program using libstfix can "
      "change the frame cap in stf_open_opts; the stfix command uses the defaults.",
      NULL, "note" },
    { "L10", "error", "Too many frames in a zstd seek table",
      "A seek table lists at most 16,777,216 frames by default: 64 TiB in the default 4 MiB "
      "frames.",
      CAP_WHY, CAP_IGNORED, CAP_FIX, NULL, "note" },
    { "L11", "error", "zstd stream spool too large",
      "A plain zstd stream (not seekable) read out of data order, as rewrite and fix may read "
      "it, is decompressed again into a spool file, beside the output or in $TMPDIR, that holds "
      "the bytes already passed. It holds at most --max-spool bytes; by default the file's "
      "size, which for a stream whose frames do not record it is the size its header declares, "
      "so a stream that claims little cannot fill the disk. A read that needs more is refused "
      "before anything is spooled for it; the message gives the decompressed byte it wanted and "
      "the spool it would take.",
      "The spool takes disk space the size of the decompressed checkpoint; the cap keeps it "
      "within what the user allows.",
      CAP_IGNORED,
      "Raise --max-spool, or compress the file in the seekable format (stfix compress), which "
      "is read at any offset without a spool; or decompress it first.",
      NULL, "note" },
    { "L12", "error", "Regex step budget of a run spent",
      "The regex selectors of one plan (stfix plan, fix, verify, or one input of batch) take at "
      "most 100,000,000 steps by default over all their searches, every rule against every "
      "layer name; a step is one item of a pattern tried at one position. A pattern is compiled "
      "once per recipe and searched once per layer name, however many rules use it. Each "
      "search also has its own limits (stfix-rules(5), REGULAR EXPRESSIONS).",
      "A pattern with nested repeats such as (a+)+$ can take up to a million steps on one long "
      "layer name without reaching the limit of one search, and a plan searches every name with "
      "every pattern, so a short recipe could keep a plan busy for hours. The budget bounds the "
      "whole run; ordinary patterns take tens of steps per name.",
      "It cannot be ignored: the plan stops (exit 2) and nothing is written. The message names "
      "the rule's FILE:LINE:COL, the pattern and the layer whose search spent the budget.",
      "Simplify the pattern: remove nested repeats (stfix rules lint warns about them), anchor "
      "it, or use a prefix glob. Where many regex rules meet a very large model, raise the "
      "budget with --max-regex-steps N (stf_recipe_opts.max_regex_steps in the library).",
      NULL, "note" },
    { "L13", "error", "A server ignored a range request",
      "An http:// or https:// input (or an hf:// name) is read with HTTP range requests: the "
      "header, then the markers, then the tensors a command needs. A server that answers a "
      "range request with 200 and the whole file is stopped at the first byte of that body, "
      "which is never read further, let alone held: a 20 GB answer to a request for 64 KiB "
      "must not cost 20 GB. The first request of a file is the one exception: when the whole "
      "file is no longer than the range asked for, a 200 is that file. The message names the "
      "URL and the byte range asked for.",
      NET_WHY, NET_IGNORED,
      "Use a server that honours Range (any static file server, object store or the hub "
      "does), or download the file and give its path.",
      NULL, "note" },
    { "L14", "error", "A range answer is not the range asked for",
      "A 206 answer must carry a Content-Range of exactly the bytes asked for and the size "
      "the first answer gave (the first answer may end early, at the end of a shorter file). "
      "A missing or unreadable Content-Range, another range, another size, or a "
      "multipart/byteranges answer to a one-range request fails the read, naming the URL, "
      "the range asked for and the Content-Range received.",
      NET_WHY, NET_IGNORED,
      "A proxy or cache between stfix and the server may be rewriting ranges: bypass it "
      "(no_proxy) or download the file.",
      NULL, "note" },
    { "L15", "error", "A remote file changed while it was read",
      "Every answer after the first must carry the ETag and Last-Modified of the first one "
      "(when the server gives them). A different one means the file was replaced between two "
      "requests, so the bytes already read and those still to come may belong to different "
      "files; the read fails, naming the URL, the range and both values.",
      NET_WHY, NET_IGNORED,
      "Run again once the file stops changing; for the hub, name a fixed revision "
      "(hf://ORG/REPO@COMMIT/PATH) rather than a branch.",
      NULL, "note" },
    { "L16", "error", "A remote body ended early or ran long",
      "The body of a range answer must hold exactly the bytes of the range. A connection "
      "closed before the last byte (after the retries) or a body longer than the range fails "
      "the read, naming the URL, the range and the bytes received; nothing is read past the "
      "range.",
      NET_WHY, NET_IGNORED,
      "A transient network failure: run again, or raise --retries. A server that always cuts "
      "its answers short cannot serve the file.",
      NULL, "note" },
    { "L17", "error", "A remote request failed",
      "A request that fails is retried with a growing pause (at most --retries times, 4 by "
      "default) when the failure may pass: a connection that could not be made or broke, a "
      "timeout (--connect-timeout, --stall-timeout), 429 or a 5xx status, honouring the "
      "server's Retry-After up to 30 seconds. What remains fails the read naming the URL, the "
      "range and the reason: libcurl's text, the HTTP status (401 and 403 suggest a token), a "
      "TLS certificate that does not verify, or a redirect to a scheme other than http or "
      "https, which is never followed. A 404 or 410 is no such file (exit 2).",
      NET_WHY, NET_IGNORED,
      "Check the URL, the network and the proxy (https_proxy, no_proxy); give a token "
      "(HF_TOKEN, or --header 'Authorization: Bearer ...') for a private repository; "
      "--insecure accepts a certificate that does not verify, by name only.",
      NULL, "note" },
};
const size_t stf__rule_docs_container_n =
    sizeof stf__rule_docs_container / sizeof stf__rule_docs_container[0];
