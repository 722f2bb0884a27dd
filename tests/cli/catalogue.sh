# The rule catalogue against the code and the man pages:
#  - man/stfix-checks.7 and the rule list of man/stfix.1 are what
#    man/mkchecks.py makes of `stfix explain --list --json` (make man);
#  - the generated text is mandoc -Tlint -Wstyle clean;
#  - every rule id the library can report has an entry, and every entry is
#    reported somewhere in lib/ or has severity "none" (never reported).
. tests/cli/lib.sh

t_run "catalogue" 0 "$STFIX" explain --list --json
cp "$T_OUT" "$T_TMP/catalogue.json"
mkdir -p "$T_TMP/gen"
t_run "mkchecks" 0 python3 man/mkchecks.py "$T_TMP/catalogue.json" man/stfix.1 "$T_TMP/gen"
for m in stfix-checks.7 stfix.1; do
    if cmp -s "man/$m" "$T_TMP/gen/$m"; then t_ok "man/$m is generated"
    else
        t_notok "man/$m is generated" "man/$m differs from the catalogue; run make man:"
        diff "man/$m" "$T_TMP/gen/$m" | head -10 | sed 's/^/#   /'
    fi
done

# Style: nothing in stfix-checks.7, nothing between the markers of stfix.1
# (a cross-reference to a page the system does not have is not the text's).
style() { mandoc -Tlint -Wstyle "$1" 2>&1 | grep -v 'referenced manual not found\|mandoc\.db'; }
left=$(style "$T_TMP/gen/stfix-checks.7")
if [ -z "$left" ]; then t_ok "stfix-checks.7: style"; else t_notok "stfix-checks.7: style" "$left"; fi
b=$(grep -n '^\.\\" BEGIN GENERATED RULES$' "$T_TMP/gen/stfix.1" | cut -d: -f1)
e=$(grep -n '^\.\\" END GENERATED RULES$' "$T_TMP/gen/stfix.1" | cut -d: -f1)
left=$(style "$T_TMP/gen/stfix.1" | awk -F: -v b="$b" -v e="$e" '$3 >= b && $3 <= e')
if [ -n "$b" ] && [ -n "$e" ] && [ -z "$left" ]; then t_ok "stfix.1 rule list: style"
else t_notok "stfix.1 rule list: style" "markers at '$b'-'$e'; $left"; fi

# Completeness. The ids the library can report are its quoted "X<number>"
# strings of the rule families, outside the catalogue's own tables; dtype
# names of the same shape (I8, I16, I32, I64, C64) are not rule ids.
python3 - "$T_TMP/catalogue.json" <<'PY'
import glob, json, re, sys
docs = json.load(open(sys.argv[1]))
documented = {d["id"]: d for d in docs}
DTYPES = {"I8", "I16", "I32", "I64", "C64"}
emitted = {}
for path in sorted(glob.glob("lib/**/*.[ch]", recursive=True)):
    if re.search(r"lib/check/rule_docs?_", path):
        continue
    for m in re.finditer(r'"([SILRCNHT][0-9]+)"', open(path, encoding="utf-8").read()):
        if m.group(1) not in DTYPES:
            emitted.setdefault(m.group(1), path)
for fam in "SILRCNHT":
    ids = sorted((i for i in emitted if i[0] == fam), key=lambda i: int(i[1:]))
    missing = [i for i in ids if i not in documented]
    if not ids:
        print("not ok - %s ids documented" % fam)
        print("#   lib/ reports no %s id: is the scan still finding them?" % fam)
    elif missing:
        print("not ok - %s ids documented" % fam)
        for i in missing:
            print("#   %s (reported in %s) has no catalogue entry" % (i, emitted[i]))
    else:
        print("ok - %s ids documented (%d)" % (fam, len(ids)))
unused = [d["id"] for d in docs if d["id"] not in emitted and not d["severity"].startswith("none")]
if unused:
    print("not ok - every entry is reported or marked never reported")
    print("#   not reported anywhere in lib/: %s (give them severity \"none (...)\")" % " ".join(unused))
else:
    print("ok - every entry is reported or marked never reported")
PY
