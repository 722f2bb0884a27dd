# CLI scenarios for `stfix explain`: one entry as text and as JSON, ids in
# any case, --list against the catalogue, unknown ids and usage errors
# (exit 3, nothing on stdout).
. tests/cli/lib.sh

t_run "S7" 0 "$STFIX" explain S7
cat >"$T_TMP/s7.txt" <<'EOF2'
S7  Header starts with whitespace
severity: warning; error with --strict
effect: note

Checks:
  Byte 0 of the header is an opening brace, as the format's description
  requires.

Why it matters:
  The reference reader has accepted leading whitespace only since version
  0.8.0-rc.0, and has a test that asserts it; older releases of the
  safetensors library, which SGLang and ComfyUI installations may still use,
  and other strict readers refuse the file.

If ignored:
  The file loads with current safetensors releases and fails with older ones.
  With --strict stfix refuses it (exit 2).

How to fix:
  stfix rewrite writes the canonical form, which does not have this problem;
  stfix fix writes it too.

Recipe action:
  none
EOF2
t_stdout_is "S7" "$T_TMP/s7.txt"
if [ -s "$T_ERR" ]; then t_notok "S7: no stderr" "$(cat "$T_ERR")"; else t_ok "S7: no stderr"; fi

# Lower case is the same entry; no line is longer than 78 columns.
t_run "s7" 0 "$STFIX" explain s7
t_stdout_is "s7" "$T_TMP/s7.txt"
t_run "I3" 0 "$STFIX" explain I3
t_stdout_has "I3" "I3  Shard missing or unreadable"
long=$(awk 'length($0) > 78' "$T_OUT" | head -1)
if [ -z "$long" ]; then t_ok "I3: wrapped at 78"; else t_notok "I3: wrapped at 78" "$long"; fi

# Several ids: each entry in the order given, a blank line between them.
t_run "two" 0 "$STFIX" explain l2 S1
first=$(grep -n '^[A-Z][0-9]*  ' "$T_OUT" | cut -d: -f2- | cut -c1-5 | tr '\n' ' ')
if [ "$first" = "L2  T S1  F " ]; then t_ok "two: order"; else t_notok "two: order" "got '$first'"; fi

# Unknown ids: exit 3, the id named with the nearest ids of its family.
t_run "S30" 3 "$STFIX" explain S30
t_stderr_is "S30" "stfix: explain: unknown rule 'S30'; did you mean S29? (stfix explain --list shows every rule)"
t_run "i0" 3 "$STFIX" explain i0
t_stderr_is "i0" "stfix: explain: unknown rule 'i0'; did you mean I1? (stfix explain --list shows every rule)"
t_run "Q1" 3 "$STFIX" explain Q1
t_stderr_is "Q1" "stfix: explain: unknown rule 'Q1' (stfix explain --list shows every rule)"
# One unknown id among known ones: nothing is printed for the others.
t_run "mixed" 3 "$STFIX" explain S1 L0
t_stderr_is "mixed" "stfix: explain: unknown rule 'L0'; did you mean L1? (stfix explain --list shows every rule)"
if [ -s "$T_OUT" ]; then t_notok "mixed: no stdout" "$(head -3 "$T_OUT")"; else t_ok "mixed: no stdout"; fi

# Usage errors.
t_run "no id" 3 "$STFIX" explain
t_stderr_has "no id" "stfix: explain: no rule id given"
t_run "list and id" 3 "$STFIX" explain --list S1
t_stderr_has "list and id" "stfix: explain: --list takes no rule ids"
t_stderr_has "list and id" "usage: stfix explain RULE... [--json]"
t_run "bad option" 3 "$STFIX" explain --lsit
t_stderr_is "bad option" "stfix: explain: unknown option '--lsit'; did you mean --list?"
# After --, an argument that looks like an option is a rule id.
t_run "after --" 3 "$STFIX" explain -- --list
t_stderr_is "after --" "stfix: explain: unknown rule '--list' (stfix explain --list shows every rule)"
t_run "help" 0 "$STFIX" explain --help
t_stdout_has "help" "usage: stfix explain RULE... [--json]"
t_stdout_has "help" "Exit status:"

# --list: one line per catalogue entry, "ID  severity  title", in the
# order of --list --json, which holds every entry with all its fields.
t_run "list" 0 "$STFIX" explain --list
cp "$T_OUT" "$T_TMP/list.txt"
t_stdout_has "list" "S7   warning  Header starts with whitespace"
t_stdout_has "list" "I7   none     Quantized layer split across shards"
t_run "list json" 0 "$STFIX" explain --list --json
cp "$T_OUT" "$T_TMP/list.json"
if python3 - "$T_TMP/list.json" "$T_TMP/list.txt" <<'PY'
import json, sys
docs = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
keys = ["id", "severity", "title", "checks", "why", "ignored", "fix", "action", "effect"]
effects = {"refuses", "silent", "degraded", "note"}
assert isinstance(docs, list) and len(docs) == len(lines) >= 40, (len(docs), len(lines))
for d, line in zip(docs, lines):
    assert list(d) == keys, list(d)
    assert line.split()[0] == d["id"] and line.endswith("  " + d["title"]), line
    assert all(isinstance(d[k], str) and d[k] for k in keys[:-2]), d["id"]
    # one effect word, or "profile: word" pairs where the targets differ
    assert all(w.split(": ")[-1] in effects for w in d["effect"].split("; ")), d["id"]
    assert d["action"] is None or isinstance(d["action"], str), d["id"]
assert [d["id"] for d in docs[:3]] == ["S1", "S2", "S3"]
PY
then t_ok "list json: every entry, as --list"; else t_notok "list json: every entry, as --list"; fi

# One id with --json: one object; two: an array.
t_run "json one" 0 "$STFIX" explain --json i6
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["id"] == "I6" and d["severity"] == "warning" and d["action"] is None, d
assert d["title"] == "total_size does not match the tensors", d["title"]
assert d["fix"] == "stfix recomputes total_size whenever it writes an index.", d["fix"]
' "$T_OUT"; then t_ok "json one: object"; else t_notok "json one: object"; fi
t_run "json two" 0 "$STFIX" explain S2 S3 --json
if python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
assert [d["id"] for d in v] == ["S2", "S3"], v
' "$T_OUT"; then t_ok "json two: array"; else t_notok "json two: array"; fi
# An unknown id with --json: the JSON error document, exit 3.
t_run "json unknown" 3 "$STFIX" explain --json S99
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "explain" and d["exit"] == 3, d
assert d["error"]["message"].startswith("unknown rule '"'"'S99'"'"'"), d
' "$T_OUT"; then t_ok "json unknown: error document"; else t_notok "json unknown: error document"; fi
