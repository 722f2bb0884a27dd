#!/bin/sh
# How a plain zstd input (one frame, as the zstd program writes it, no seek
# table) is read is said (stfix(1), INPUT FORMATS): on the progress line
# when stderr is a terminal (run under tests/cli/pty_run.py), and as a -v
# line otherwise: "reading IN in order" when every read came in data order,
# "spooling IN to DIR (random access)" once one went back.
. tests/cli/lib.sh
PTY="python3 tests/cli/pty_run.py"
D=$T_TMP
if ! command -v zstd >/dev/null 2>&1; then
    t_notok "the zstd program is installed (make deps)"
    exit 0
fi
zstd -q fixtures/comfy/r24_g128.safetensors -o "$D/in.safetensors.zst"

# fix reads in data order: no spool.
t_pty "fix .zst on a tty" 0 "$STFIX" fix "$D/in.safetensors.zst" -r comfyui-int8-convrot \
    -o "$D/a.safetensors"
t_true "fix .zst on a tty: the line says in order" \
    grep -qF "(100%), reading in.safetensors.zst in order" "$T_ERR"
t_run "fix .zst -v" 0 "$STFIX" fix "$D/in.safetensors.zst" -r comfyui-int8-convrot \
    -o "$D/b.safetensors" -v
t_stderr_has "fix .zst -v" "stfix: fix: reading $D/in.safetensors.zst in order"
t_run "fix .zst" 0 "$STFIX" fix "$D/in.safetensors.zst" -r comfyui-int8-convrot \
    -o "$D/c.safetensors"
t_true "fix .zst: nothing on stderr without -v" test ! -s "$T_ERR"

# Tensors stored in the reverse of name order: rewrite goes back, and spools
# beside its output.
python3 - "$D/rev.safetensors" <<'PY'
import json, struct, sys
n = 262144
h = {"a": {"dtype": "F32", "shape": [n], "data_offsets": [4 * n, 8 * n]},
     "b": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}
j = json.dumps(h, separators=(",", ":")).encode()
j += b" " * (-len(j) % 8)
data = struct.pack("<%df" % n, *[i * 0.5 for i in range(n)])
data += struct.pack("<%df" % n, *[-i * 0.25 for i in range(n)])
open(sys.argv[1], "wb").write(struct.pack("<Q", len(j)) + j + data)
PY
zstd -q "$D/rev.safetensors" -o "$D/rev.safetensors.zst"
mkdir "$D/o"
t_run "rewrite out of order -v" 0 "$STFIX" rewrite "$D/rev.safetensors.zst" -o "$D/o/r.safetensors" -v
t_stderr_has "rewrite out of order -v" \
    "stfix: rewrite: spooling $D/rev.safetensors.zst to $D/o (random access)"
t_run "rewrite plain" 0 "$STFIX" rewrite "$D/rev.safetensors" -o "$D/p.safetensors"
t_true "rewrite out of order: the bytes" cmp "$D/p.safetensors" "$D/o/r.safetensors"
t_pty "rewrite out of order on a tty" 0 "$STFIX" rewrite "$D/rev.safetensors.zst" \
    -o "$D/o/s.safetensors"
t_true "rewrite out of order on a tty: the line says spooling" \
    grep -qF "(100%), spooling rev.safetensors.zst to " "$T_ERR"

# A seekable file needs neither: no note.
t_run "compress" 0 "$STFIX" compress "$D/rev.safetensors" -o "$D/seek.safetensors.zst"
t_run "rewrite seekable -v" 0 "$STFIX" rewrite "$D/seek.safetensors.zst" -o "$D/o/t.safetensors" -v
if grep -qE "reading .* in order|spooling" "$T_ERR"; then t_notok "rewrite seekable -v: no note" "$(cat "$T_ERR")"
else t_ok "rewrite seekable -v: no note"; fi
