#!/usr/bin/env python3
"""Generate the rule documentation from the rule catalogue.

usage: mkchecks.py CATALOGUE.json STFIX.1 OUTDIR

CATALOGUE.json is the output of `stfix explain --list --json` (an array of
entries: id, severity, title, checks, why, ignored, fix, action, effect). STFIX.1 is
the source of stfix(1). Writes OUTDIR/stfix-checks.7, the whole page, and
OUTDIR/stfix.1, which is STFIX.1 with the rule list between the
BEGIN GENERATED RULES and END GENERATED RULES comment lines replaced.
OUTDIR may be the directory of STFIX.1 (`make man` does that).

Both pages are mdoc. Text is written one sentence per line, wrapped below 80
bytes, with backslashes and leading dots or apostrophes escaped, so that
`mandoc -Tlint -Wstyle` has nothing to say about it. The page's date is the
date of stfix(1), so the output depends on the inputs alone.
"""
import json
import os
import re
import sys

BEGIN = '.\\" BEGIN GENERATED RULES'
END = '.\\" END GENERATED RULES'
WIDTH = 79  # bytes per line at most

# Families in catalogue order: the stfix-checks(7) section, the stfix(1)
# subsection, and what the section says about them.
GROUPS = [
    ("S", "CONTAINER RULES (S)", "Container rules (S)",
     "S rules are the strict safetensors reader's.",
     "Every command checks them on every file it reads, in the order listed; "
     "an error stops the read at the first rule it breaks."),
    ("I", "INDEX RULES (I)", "Index rules (I)",
     "I rules check a sharded checkpoint: the NAME.safetensors.index.json file "
     "and the shards it names.",
     "Every shard must also pass the S rules on its own."),
    ("L", "RESOURCE LIMITS (L)", "Resource limits (L)",
     "L rules are caps on what stfix reads, so that a damaged or hostile file "
     "cannot make it use unbounded memory or time.",
     "Exceeding a cap is an error with its own id, never a crash."),
    ("R", "SGLANG RULES (R)", "SGLang rules (R)",
     "R rules reproduce what SGLang's loader refuses or silently miscomputes in "
     "a checkpoint in ComfyUI's quantized format.",
     "stfix check reports them with --target sglang or all (the default)."),
    ("C", "COMFYUI RULES (C)", "ComfyUI rules (C)",
     "C rules reproduce what ComfyUI's loader refuses or silently miscomputes. "
     "They were checked against ComfyUI at upstream commit 6db4fa2f of "
     "2026-08-07, with the layout parameter checks of the comfy-kitchen "
     "release it loads, by running that loader on the CPU over the test "
     "fixtures: where it raises, the C rule's message is its exception as "
     "Python prints it, type first.",
     "stfix check reports them with --target comfyui or all (the default)."),
    ("NH", "NUMERIC PROBES (N, H)", "Numeric probes (N, H)",
     "N and H rules read tensor data: N rules check scale values, H rules tell "
     "how a layer was quantized and rotated.",
     "stfix check runs them with --numeric."),
    ("T", "TENSOR PARALLEL RULES (T)", "Tensor parallel rules (T)",
     "T rules tell whether SGLang can split each Linear layer across T GPUs: "
     "a column-parallel layer along its N output rows, a row-parallel one along "
     "its K input columns.",
     "stfix check runs them with --tp; a layer's style comes from a "
     "parallel-style profile (stfix-rules(5), PARALLEL STYLES)."),
]

LABELS = [("checks", "Checks"), ("why", "Why it matters"), ("ignored", "If ignored"),
          ("fix", "How to fix"), ("action", "Recipe action")]

DESCRIPTION = (
    "Every finding stfix reports carries a stable rule id: a family letter "
    "and a number, such as S7 or R15. "
    "This page lists every id with what it checks, why a consumer such as "
    "SGLang or ComfyUI cares, what happens if the finding is ignored, how to "
    "fix it and which recipe action does. "
    "The same text is printed by stfix explain ID, and stfix explain --list "
    "lists every id with its severity and title. "
    "This page and the rule list of stfix(1) are generated from that "
    "catalogue, so the three never disagree.")

DESCRIPTION2 = (
    "The container families S, I and L decide whether a file can be read at "
    "all: an error among them makes every command refuse the input with exit "
    "status 2, and nothing is written. "
    "The families R, C, N, H and T are reported by stfix check, which exits 1 "
    "when one of them is an error; stfix fix refuses to write an output that "
    "still breaks an error rule of its recipe's targets.")

EFFECTS = [
    ("refuses", "The consumer raises and the load fails. "
                "Under a consumer's profile the message is the consumer's own text."),
    ("silent", "The consumer loads the file without an error and then computes "
               "wrong results, drops data, or fails only later, at the first "
               "forward pass. "
               "The message says what the consumer does instead."),
    ("degraded", "The file loads and works, but slower or replicated."),
    ("note", "Nothing goes wrong in the consumer; every finding at severity "
             "info is a note."),
]

SEVERITIES = [
    ("error", "The consumer refuses the file or computes wrong results with it. "
              "For S, I and L rules stfix refuses the input; for the others "
              "stfix check exits 1."),
    ("warning", "The file loads, but something about it is fragile, "
                "ambiguous or wasteful. Warnings never change the exit status."),
    ("warning; error with --strict", "The safetensors reference reader accepts "
     "the file but its format description, its schema or other readers do not. "
     "With --strict, inspect and rewrite treat it as an error."),
    ("info (canonical form only)", "The file is not byte-identical to what "
     "the canonical writer would produce. Only stfix inspect reports it."),
    ("none", "A property of what stfix writes, documented here for "
             "completeness; stfix never reports it for an input."),
]


DASH = "\x01"  # a word of its own in catalogue text: written as an em dash


def esc(line):
    """One text line, escaped for mdoc."""
    line = line.replace("\\", "\\e").replace(DASH, "\\(em")
    # int() in running text is a Python call, not a function to mark up.
    line = re.sub(r"(\w)\(\)", r"\1\\&()", line)
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def sentences(text):
    """The sentences of a paragraph: a word ending in . ! or ? (closing
    brackets or quotes may follow) ends one."""
    out, cur = [], []
    for word in text.split():
        cur.append(word)
        if re.search(r"[.!?][)\]\"']*$", word):
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


def wrap(sentence):
    """A sentence as escaped lines of at most WIDTH bytes (a word longer
    than that gets a line of its own)."""
    lines, cur = [], ""
    for word in sentence.split():
        if cur and len(esc(cur + " " + word).encode()) > WIDTH:
            lines.append(cur)
            cur = word
        else:
            cur = cur + " " + word if cur else word
    if cur:
        lines.append(cur)
    return [esc(x) for x in lines]


def text(paragraph):
    """A paragraph as mdoc text lines, one sentence per line."""
    return [line for s in sentences(paragraph) for line in wrap(s)]


def group_of(rule_id):
    for g in GROUPS:
        if rule_id[0] in g[0]:
            return g
    sys.exit("mkchecks: rule %s belongs to no family this page knows; "
             "add its family to GROUPS in man/mkchecks.py" % rule_id)


def by_group(docs):
    groups = {g[0]: [] for g in GROUPS}
    for d in docs:
        groups[group_of(d["id"])[0]].append(d)
    return groups


def checks_page(docs, date):
    out = [
        '.\\" Generated by man/mkchecks.py from the rule catalogue',
        '.\\" (lib/check/rule_docs_*.c): edit the catalogue, then run make man.',
        ".Dd " + date,
        ".Dt STFIX-CHECKS 7",
        ".Os",
        ".Sh NAME",
        ".Nm stfix-checks",
        ".Nd the rules stfix checks, and how to fix what they find",
        ".Sh DESCRIPTION",
    ]
    out += text(DESCRIPTION) + [".Pp"] + text(DESCRIPTION2)
    out += [".Sh SEVERITIES"] + text(
        "Each entry's severity says how stfix reports a finding of the rule.")
    out.append(".Bl -tag -width Ds")
    for name, what in SEVERITIES:
        out += ['.It Sy "%s"' % name] + text(what)
    out.append(".El")
    out += [".Pp"] + text(
        "Each finding also carries an effect, what its consumer does with the "
        "file: stfix check prints it after the rule id and as effect in --json, "
        "and each entry below gives it, per target where the targets differ.")
    out.append(".Bl -tag -width Ds")
    for name, what in EFFECTS:
        out += ['.It Sy %s' % name] + text(what)
    out.append(".El")
    groups = by_group(docs)
    for key, section, _sub, intro, intro2 in GROUPS:
        out += [".Sh " + section] + text(intro) + text(intro2)
        if not groups[key]:
            continue
        out.append(".Bl -tag -width Ds")
        for d in groups[key]:
            out += [".It Sy " + d["id"]] + text(d["title"])
            out += [".Pp", ".Sy Severity :"] + text(d["severity"])
            out += [".Pp", ".Sy Effect :"] + text(d.get("effect") or "note")
            for field, label in LABELS:
                out += [".Pp", ".Sy %s :" % label] + text(d[field] or "none")
        out.append(".El")
    out += [".Sh SEE ALSO", ".Xr stfix 1 ,", ".Xr stfix-rules 5 ,",
            ".Xr stfix-convrot 7 ,", ".Xr stfix-defects 7"]
    return "\n".join(out) + "\n"


def rules_block(docs):
    """The rule list of stfix(1): one tag per rule, title and severity."""
    out = [BEGIN,
           '.\\" Generated by man/mkchecks.py from the rule catalogue; run make man.']
    groups = by_group(docs)
    for key, _section, sub, _intro, _intro2 in GROUPS:
        if not groups[key]:
            continue
        out += [".Ss " + sub, ".Bl -tag -width Ds -compact"]
        for d in groups[key]:
            out += [".It Sy " + d["id"]] + text("%s %s %s" % (d["title"], DASH, d["severity"]))
        out.append(".El")
    out.append(END)
    return out


def main(argv):
    if len(argv) != 4:
        sys.exit("usage: mkchecks.py CATALOGUE.json STFIX.1 OUTDIR")
    with open(argv[1], encoding="ascii") as f:
        docs = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        page = f.read().split("\n")
    dates = [line[4:] for line in page if line.startswith(".Dd ")]
    if not dates or page.count(BEGIN) != 1 or page.count(END) != 1:
        sys.exit("mkchecks: %s needs one .Dd line and one BEGIN and END GENERATED "
                 "RULES comment" % argv[2])
    b, e = page.index(BEGIN), page.index(END)
    if e < b:
        sys.exit("mkchecks: %s: END GENERATED RULES before BEGIN" % argv[2])
    page[b:e + 1] = rules_block(docs)
    outputs = [("stfix-checks.7", checks_page(docs, dates[0])),
               ("stfix.1", "\n".join(page))]
    # Both files are complete before either replaces its target.
    for name, body in outputs:
        tmp = os.path.join(argv[3], "." + name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(body)
    for name, _body in outputs:
        os.replace(os.path.join(argv[3], "." + name + ".tmp"), os.path.join(argv[3], name))


if __name__ == "__main__":
    main(sys.argv)
