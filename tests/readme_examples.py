#!/usr/bin/env python3
"""Run the examples of README.md and compare their output with its text.

Usage: readme_examples.py STFIX [--update] [README]
  STFIX     the stfix binary to run (absolute or relative path)
  --update  rewrite the blocks whose output differs, in place
  README    the file to check (default: README.md of the current directory,
            which must be the repository root)

An example is an indented code block right after the line
"<!-- example -->" (a blank line between them is allowed). Each of its lines
that starts with "$ " is a shell command; the lines after it, up to the
next command or the end of the block, are what the command prints, stdout
and stderr together as a terminal shows them. A line "..." in that output
stands for one or more lines left out; the lines around it must appear as
shown, in that order.

Every block runs in a fresh scratch directory holding links "fixtures" and
"rules" to the repository's, with "stfix" on PATH naming STFIX and no
STFIX_* variable in the environment, so the commands read as they would
from the repository root and whatever they write stays in the scratch
directory. The commands of a block run one after the other with sh, each
within 120 seconds.

Only what a run cannot repeat is normalised before the comparison, on both
sides: the scratch directory's path is replaced by "." in what is printed
(also by --update), and timings ('"seconds":N', "N s" at the end of a
line) and version numbers (three dotted numbers) are masked. Everything
else must match byte for byte.

--update writes the output of each command that does not match: the whole
output, so a block that had "..." lines loses them and says so on stderr;
shorten it again by hand. Exit status: 0 when every example matches (or
was updated), 1 when one does not (a diff per command on stdout), 2 on a
usage error or a README without examples.

The inputs are the bundled fixtures: fixtures/demo/ holds the demo
checkpoints of tests/gen/gen_demo.py, model-bf16.safetensors
(tests/gen/gen_bf16_ckpt.py OUT 1 64) and legacy-fp8-scaled.safetensors
(tests/gen/gen_legacy_fp8.py OUT --input one).
Python 3 standard library only.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = "<!-- example -->"
INDENT = "    "
ELISION = "..."
MASKS = [
    (re.compile(r'"seconds": ?[0-9][0-9.eE+-]*'), '"seconds":N'),
    (re.compile(r"\b[0-9]+(\.[0-9]+)? s$"), "N s"),
    (re.compile(r"\b[0-9]+\.[0-9]+\.[0-9]+\b"), "X.Y.Z"),
]


def usage():
    sys.stderr.write("usage: readme_examples.py STFIX [--update] [README]\n")
    sys.exit(2)


def blocks(readme, lines):
    """(first, end) line indices of every example block: lines[first:end]."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != MARKER:
            i += 1
            continue
        j = i + 1
        if j < len(lines) and lines[j] == "":
            j += 1
        if j >= len(lines) or not lines[j].startswith(INDENT + "$ "):
            sys.stderr.write("readme_examples.py: %s:%d: %s is not followed by a block "
                             "starting with '%s$ '\n" % (readme, i + 1, MARKER, INDENT))
            sys.exit(2)
        first = end = j
        while end < len(lines):
            if lines[end].startswith(INDENT):
                end += 1
            elif lines[end] == "" and end + 1 < len(lines) and lines[end + 1].startswith(INDENT):
                end += 1
            else:
                break
        out.append((first, end))
        i = end
    return out


def commands(block, first):
    """[command, expected output lines, line number, blank lines after] of a
    block's lines (indent removed); first is the block's index in the file."""
    out = []
    for i, line in enumerate(block):
        text = line[len(INDENT):] if line.startswith(INDENT) else line
        if text.startswith("$ "):
            out.append([text[2:], [], first + i + 1, 0])
        else:
            out[-1][1].append(text)
    for c in out:
        # An output ends where the next command starts; the blank lines
        # before it belong to neither.
        while c[1] and c[1][-1] == "":
            c[1].pop()
            c[3] += 1
    return out


def mask(line):
    for rx, rep in MASKS:
        line = rx.sub(rep, line)
    return line


def matches(expected, actual):
    """The expected lines, "..." standing for one or more lines, are actual."""
    exp = [mask(x) for x in expected]
    act = [mask(x) for x in actual]
    if ELISION not in exp:
        return exp == act
    parts = [[]]
    for x in exp:
        if x == ELISION:
            parts.append([])
        else:
            parts[-1].append(x)
    head, tail, middle = parts[0], parts[-1], parts[1:-1]
    if act[:len(head)] != head:
        return False
    pos = len(head)
    end = len(act) - len(tail)
    if end < pos or act[end:] != tail:
        return False
    for part in middle:
        pos += 1  # an elision leaves out at least one line
        found = -1
        for k in range(pos, end - len(part) + 1):
            if act[k:k + len(part)] == part:
                found = k
                break
        if found < 0:
            return False
        pos = found + len(part)
    return end - pos >= 1


def run_block(stfix, root, cmds):
    """The output lines of each command of a block, in a scratch directory."""
    scratch = tempfile.mkdtemp(prefix="stfix-readme.")
    try:
        work = os.path.join(scratch, "w")
        bindir = os.path.join(scratch, "bin")
        os.mkdir(work)
        os.mkdir(bindir)
        os.symlink(stfix, os.path.join(bindir, "stfix"))
        for name in ("fixtures", "rules"):
            os.symlink(os.path.join(root, name), os.path.join(work, name))
        env = {k: v for k, v in os.environ.items() if not k.startswith("STFIX")}
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        outs = []
        for c in cmds:
            cmd = c[0]
            try:
                p = subprocess.run(["sh", "-c", cmd], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
                text = p.stdout.decode("utf-8", "replace")
            except subprocess.TimeoutExpired:
                text = "(readme_examples.py: timed out after 120 s)\n"
            for d in (os.path.realpath(work), work):
                text = text.replace(d + "/", "./").replace(d, ".")
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            outs.append(lines)
        return outs
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv):
    args = [a for a in argv if a != "--update"]
    update = len(args) != len(argv)
    if len(args) not in (1, 2) or args[0].startswith("-"):
        usage()
    stfix = os.path.abspath(args[0])
    readme = args[1] if len(args) == 2 else "README.md"
    root = os.path.dirname(os.path.abspath(readme))
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = blocks(readme, lines)
    if not found:
        sys.stderr.write("readme_examples.py: %s: no %s block\n" % (readme, MARKER))
        return 2
    bad = 0
    report = {}
    new = list(lines)
    # Last block first, so that the indices of earlier ones stay valid.
    for first, end in reversed(found):
        cmds = commands(lines[first:end], first)
        outs = run_block(stfix, root, cmds)
        text = []
        changed = False
        for (cmd, exp, line, blanks), act in zip(cmds, outs):
            if matches(exp, act):
                keep = exp
            else:
                changed = True
                bad += 1
                keep = act
                if not update:
                    report[line] = ["%s:%d: $ %s" % (readme, line, cmd)] + [
                        "  " + d for d in difflib.unified_diff(exp, act, "README", "run",
                                                               lineterm="", n=2)]
                elif ELISION in exp:
                    sys.stderr.write("%s:%d: $ %s: the whole output replaces the one with '%s'; "
                                     "shorten it again by hand\n" % (readme, line, cmd, ELISION))
            text.append(INDENT + "$ " + cmd)
            text.extend(INDENT + x if x else "" for x in keep)
            text.extend([""] * blanks)
        if update and changed:
            new[first:end] = text
    if update:
        if new != lines:
            with open(readme, "w", encoding="utf-8") as f:
                f.write("\n".join(new))
        if bad:
            sys.stderr.write("readme_examples.py: %d example output(s) updated in %s\n" % (bad, readme))
        return 0
    for line in sorted(report):
        print("\n".join(report[line]))
    if bad:
        print("%d example output(s) differ from %s; `make readme` rewrites them" % (bad, readme))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
