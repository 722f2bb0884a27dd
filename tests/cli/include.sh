# CLI scenarios for recipes that include recipes (stfix-rules(5), INCLUDES):
# `stfix rules show` prints the resolved recipe, whose SHA-256 is the stamp;
# a change in an included file changes the stamp; a cycle and a missing
# include are FILE:LINE:COL problems, exit 2; an include by name finds the
# built-in recipes wherever stfix runs.
. tests/cli/lib.sh
F=fixtures/comfy/r14_scale_bf16.safetensors

mkdir -p "$T_TMP/team/base" "$T_TMP/lib"
cat >"$T_TMP/team/base/cast.yaml" <<'EOF2'
stfix: 1
target: sglang
rules:
    - name: cast
      match: {scale_dtype: [BF16, F16]}
      do: {cast-scale: {to: F32}}
EOF2
cat >"$T_TMP/lib/extra.yaml" <<'EOF2'
stfix: 1
target: comfyui
rules:
  - {name: drop-conv, match: {shape: 'rank != 2'}, do: drop}
EOF2
cat >"$T_TMP/team/model.yaml" <<'EOF2'
stfix: 1
target: comfyui
description: our model
include:
  - base/cast.yaml
  - extra
rules:
  - name: mine
    match: {marker: present}
    do: cast-scale
EOF2
cat >"$T_TMP/resolved.yaml" <<'EOF2'
stfix: 1
target: [sglang, comfyui]
description: our model
rules:
- name: cast
  match: {scale_dtype: [BF16, F16]}
  do: {cast-scale: {to: F32}}
- {name: drop-conv, match: {shape: 'rank != 2'}, do: drop}
- name: mine
  match: {marker: present}
  do: cast-scale
EOF2
t_run "show" 0 env STFIX_RULES_PATH="$T_TMP/lib" "$STFIX" rules show "$T_TMP/team/model.yaml"
t_stdout_is "show" "$T_TMP/resolved.yaml"
t_run "lint with includes" 0 env STFIX_RULES_PATH="$T_TMP/lib" "$STFIX" rules lint "$T_TMP/team/model.yaml"
printf '%s: ok (3 rules)\n' "$T_TMP/team/model.yaml" >"$T_TMP/lint.txt"
t_stdout_is "lint with includes" "$T_TMP/lint.txt"

# The stamp is the SHA-256 of what `rules show` prints.
want=$(t_sha256 "$T_TMP/resolved.yaml")
t_run "plan stamp" 0 env STFIX_RULES_PATH="$T_TMP/lib" "$STFIX" plan "$F" -r "$T_TMP/team/model.yaml" --json
t_stdout_has "plan stamp" "\"recipe_sha256\": \"$want\""
t_run "fix stamp" 0 env STFIX_RULES_PATH="$T_TMP/lib" "$STFIX" fix "$F" -r "$T_TMP/team/model.yaml" \
    -o "$T_TMP/out.safetensors"
t_true "fix stamp: stfix.recipe_sha256" test "$(python3 tests/cli/fix_tool.py meta "$T_TMP/out.safetensors" stfix.recipe_sha256)" = "$want"

# Without includes, show prints the file as it is.
t_run "show plain" 0 "$STFIX" rules show repair-scales
t_stdout_is "show plain" rules/repair-scales.yaml

# A change in an included file changes the stamp.
sed -i 's/BF16, F16/BF16/' "$T_TMP/team/base/cast.yaml"
t_run "edited include" 0 env STFIX_RULES_PATH="$T_TMP/lib" "$STFIX" plan "$F" -r "$T_TMP/team/model.yaml" --json
sed 's/BF16, F16/BF16/' "$T_TMP/resolved.yaml" >"$T_TMP/resolved2.yaml"
t_stdout_has "edited include" "\"recipe_sha256\": \"$(t_sha256 "$T_TMP/resolved2.yaml")\""
if grep -qF "$want" "$T_OUT"; then t_notok "edited include: stamp changed"; else t_ok "edited include: stamp changed"; fi

# A cycle names every file of it, at the include that closes it.
printf 'stfix: 1\ntarget: sglang\ninclude: b.yaml\n' >"$T_TMP/a.yaml"
printf 'stfix: 1\ninclude: [a.yaml]\n' >"$T_TMP/b.yaml"
t_run "cycle" 2 "$STFIX" rules lint "$T_TMP/a.yaml"
t_stderr_is "cycle" "$T_TMP/b.yaml:2:11: include[0]: include cycle: $T_TMP/a.yaml -> $T_TMP/b.yaml -> $T_TMP/a.yaml"
t_run "cycle (fix)" 2 "$STFIX" fix "$F" -r "$T_TMP/a.yaml" -o "$T_TMP/never.safetensors"
t_absent "cycle (fix)" "$T_TMP/never.safetensors"

# A missing include, at its FILE:LINE:COL.
printf 'stfix: 1\ntarget: sglang\ninclude:\n  - nothere.yaml\n' >"$T_TMP/m.yaml"
t_run "missing include" 2 "$STFIX" rules show "$T_TMP/m.yaml"
t_stderr_is "missing include" "$T_TMP/m.yaml:4:5: include[0]: cannot open '$T_TMP/nothere.yaml': No such file or directory"
if [ -s "$T_OUT" ]; then t_notok "missing include: no stdout"; else t_ok "missing include: no stdout"; fi

t_run "show: no recipe" 3 "$STFIX" rules show
t_run "show: two recipes" 3 "$STFIX" rules show a b

# A file named by mistake is refused as no recipe, quoting none of its text:
# a password file's hashes must not reach stderr or the JSON error, whether
# it is included or given to -r.
printf 'root:$6$saltsalt$SECRETHASH0:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n' >"$T_TMP/shadow"
printf 'stfix: 1\ntarget: sglang\ninclude: [%s]\nrules: []\n' "$T_TMP/shadow" >"$T_TMP/inc_shadow.yaml"
notrec="not a recipe (none of the keys stfix, target, kind, description, include, rules, parallel at the top level)"
t_run "shadow include" 2 "$STFIX" rules lint "$T_TMP/inc_shadow.yaml"
t_stderr_is "shadow include" "$T_TMP/shadow: $notrec"
t_run "shadow -r" 2 "$STFIX" plan "$F" -r "$T_TMP/shadow" --json
t_stderr_is "shadow -r" "$T_TMP/shadow: $notrec"
t_stdout_has "shadow -r" "\"message\": \"$T_TMP/shadow: $notrec\""
t_run "shadow fix" 2 "$STFIX" fix "$F" -r "$T_TMP/inc_shadow.yaml" -o "$T_TMP/never.safetensors" --json
for f in "$T_OUT" "$T_ERR"; do
    if grep -q 'SECRETHASH\|20228\|daemon' "$f"; then t_notok "shadow: nothing of it in $f"
    else t_ok "shadow: nothing of it in $f"; fi
done
# A key of a recipe is shown by its first 16 bytes at most.
printf 'stfix: 1\ntarget: sglang\nrules: []\nroot:$6$saltsalt$SECRETHASH0: 1\n' >"$T_TMP/key.yaml"
t_run "long key" 2 "$STFIX" rules lint "$T_TMP/key.yaml"
t_stderr_is "long key" "$T_TMP/key.yaml:4:1: recipe: unknown key 'root:\$6\$saltsalt...' (expected one of: stfix, target, kind, description, include, rules, parallel)"

# Bytes that are not text: the offset, never the bytes.
printf 'stfix: 1\ntarget: \377\376\n' >"$T_TMP/binary.yaml"
t_run "binary" 2 "$STFIX" rules lint "$T_TMP/binary.yaml"
t_stderr_is "binary" "$T_TMP/binary.yaml: not a recipe (bytes that are not UTF-8 at offset 17)"
printf 'stfix: 1\000SECRET\n' >"$T_TMP/nul.yaml"
t_run "NUL" 2 "$STFIX" plan "$F" -r "$T_TMP/nul.yaml"
t_stderr_is "NUL" "$T_TMP/nul.yaml: not a recipe (a NUL byte at offset 8)"

# Special files are refused without being read: a FIFO with no writer, a
# device that never ends, a directory; included (a problem of the entry,
# exit 2) or given to -r (exit 4, as for a checkpoint that is no regular file).
mkfifo "$T_TMP/fifo.yaml"
printf 'stfix: 1\ntarget: sglang\ninclude: [fifo.yaml]\nrules: []\n' >"$T_TMP/inc_fifo.yaml"
t_run "FIFO include" 2 t_capped "$STFIX" rules lint "$T_TMP/inc_fifo.yaml"
t_stderr_is "FIFO include" "$T_TMP/inc_fifo.yaml:3:11: include[0]: '$T_TMP/fifo.yaml' is not a regular file"
t_run "FIFO -r" 4 t_capped "$STFIX" plan "$F" -r "$T_TMP/fifo.yaml"
t_stderr_is "FIFO -r" "stfix: plan: $T_TMP/fifo.yaml: not a recipe (a FIFO, not a regular file)"
t_run "device -r" 4 t_capped "$STFIX" rules lint /dev/zero
t_stderr_is "device -r" "stfix: rules: /dev/zero: not a recipe (a character device, not a regular file)"
t_run "directory -r" 4 t_capped "$STFIX" rules lint "$T_TMP/team"
t_stderr_is "directory -r" "stfix: rules: $T_TMP/team: not a recipe (a directory, not a regular file)"

# An include by NAME finds what -r NAME finds, the built-in recipes last:
# from a copy of the program alone, in a directory without rules/ and with
# no installed recipes, a recipe of the user's includes a bundled one by
# name (resolved as in the source tree, so stamped the same); an include by
# path stays a path; a file on STFIX_RULES_PATH comes before the built-in
# recipe of its name.
if [ ! -d /usr/local/share/stfix/rules ]; then
ROOT=$(pwd)
mkdir "$T_TMP/away"
cp "$STFIX" "$T_TMP/away/stfix-alone"
away() { (cd "$T_TMP/away" && env -u STFIX_RULES_PATH ./stfix-alone "$@"); }
printf 'stfix: 1\ntarget: sglang\ninclude: repair-scales\n' >"$T_TMP/away/mine.yaml"
t_run "away: include NAME" 0 away rules lint mine.yaml
printf 'mine.yaml: ok (4 rules)\n' >"$T_TMP/want.txt"
t_stdout_is "away: include NAME" "$T_TMP/want.txt"
t_run "away: include NAME, plan -v" 0 away plan -v "$ROOT/$F" -r mine.yaml
t_stderr_has "away: include NAME, plan -v" "stfix: plan: recipe file (built-in)/repair-scales.yaml"
t_run "away: rules show" 0 away rules show mine.yaml
cp "$T_OUT" "$T_TMP/away.resolved"
t_run "tree: rules show" 0 env -u STFIX_RULES_PATH "$STFIX" rules show "$T_TMP/away/mine.yaml"
t_stdout_is "tree: rules show" "$T_TMP/away.resolved"
printf 'stfix: 1\ntarget: sglang\ninclude: repair-scales.yaml\n' >"$T_TMP/away/path.yaml"
t_run "away: include by path" 2 away rules lint path.yaml
t_stderr_is "away: include by path" "path.yaml:3:10: include: cannot open 'repair-scales.yaml': No such file or directory"
printf 'stfix: 1\ntarget: sglang\ninclude: nope\n' >"$T_TMP/away/miss.yaml"
t_run "away: include miss" 2 away rules lint miss.yaml
t_stderr_is "away: include miss" "miss.yaml:3:10: include: no recipe named 'nope' (searched nope.yaml in: /usr/local/share/stfix/rules, ./rules; and the built-in recipes)"
mkdir "$T_TMP/mine"
printf 'stfix: 1\nrules:\n  - {name: ours, match: {}, do: drop}\n' >"$T_TMP/mine/repair-scales.yaml"
t_run "away: search path first" 0 sh -c "cd '$T_TMP/away' && STFIX_RULES_PATH='$T_TMP/mine' ./stfix-alone rules lint mine.yaml"
printf 'mine.yaml: ok (1 rule)\n' >"$T_TMP/want.txt"
t_stdout_is "away: search path first" "$T_TMP/want.txt"
fi
