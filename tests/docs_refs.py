#!/usr/bin/env python3
"""Check that the repository's references resolve inside the repository.

Usage: docs_refs.py [ROOT]   (default: the current directory)

Prints one "FILE:LINE: problem" line per finding and exits 1 if there is
any, 0 if there is none, 2 on a usage error. Python 3 standard library only.

Which files: the files git knows in ROOT (tracked, plus untracked ones that
are not ignored), or, outside a git work tree, every file under ROOT except
build/ and .git/. Skipped: tests/fuzz/corpus/ (fuzzer inputs) and binary
files (any NUL byte), which covers the safetensors fixtures.

Rules, over the whole text of every file checked:
  citation    a section sign (U+00A7), a path into the notes directory next
              to the repository (".." then "/shared"), or the name of a notes
              file that is not part of the project (safetensors, comfy-quant,
              convrot or DESIGN followed by ".md"). Cite a page of the
              project instead: "stfix-convrot(7), GOLDEN VECTORS",
              "lib/README.md, Canonical form", or a rule id.
  defect      a defect number: the letter M and one or two digits as a whole
              word. Name the defect (stfix-defects(7), DEFECTS) instead.
              Not applied under fixtures/, whose files are data.
  page        a man page reference NAME(N) or ".Xr NAME N" where NAME is
              stfix or starts with "stfix-", and there is no file NAME.N in
              the man directory.
  section     a section named right after a page, on its line or carried
              on to the next one (whose comment prefix is skipped):
              "NAME(N), WORDS" or "NAME(N): WORDS", WORDS being capitalised
              words of two or more characters (not a rule id such as R15),
              where the page exists but no .Sh or .Ss title of it starts
              with WORDS; and the Words after "lib/README.md" and a comma
              (a word with a capital, such as Canonical or cJSON, then
              words up to the first punctuation) where
              lib/README.md exists but none of its "#" headings starts with
              Words and Words does not start with a heading and a space
              ("Canonical form and Sharded" cites two headings).

Rule over comments and documentation only (C comments; the text after a
"#" that starts a comment in shell, Python, Makefiles, YAML and the fuzz
dictionary; Python docstrings; all of *.md and the man pages; not string
literals or data files, which may name paths that deliberately do not exist
or that exist only after installation):
  path        a token that starts at a word boundary with one of the top
              directories lib/ include/ cmd/ tests/ man/ rules/ fixtures/,
              continues with letters, digits and "_ . / -", and names no file
              or directory in ROOT. A token directly followed by
              "*", "<", "$", "{" or "%" is a pattern, not a path, and is not
              checked; a trailing "." or "/" is dropped first. A token that
              does not exist and has a word in capitals (two or more letters
              between "/", "_", "-" or "." such as NAME or FILE) is a
              template (cmd/cli_NAME.c) and is not reported either. Paths written
              relative to another directory (../x, ./x, $BUILD/x) are not
              checked.
"""
import os
import re
import subprocess
import sys

SECTION = "\u00a7"
CITATION = re.compile(SECTION + r"|\.\./shared|\b(?:safetensors|comfy-quant|convrot|DESIGN)\.md\b")
DEFECT = re.compile(r"(?<![\w])M[0-9]{1,2}(?![\w])")
PAGE = re.compile(r"\b(stfix(?:-[A-Za-z0-9]+)*)\(([1-9])\)")
XR = re.compile(r"^\.Xr\s+(stfix(?:-[A-Za-z0-9]+)*)\s+([1-9])\b")
SEC_MAN = re.compile(r"\b(stfix(?:-[A-Za-z0-9]+)*)\(([1-9])\)[,:] "
                     r"((?:(?![A-Z][0-9]+\b)[A-Z][A-Z0-9]+)(?: (?:(?![A-Z][0-9]+\b)[A-Z][A-Z0-9]+))*)")
SEC_README = re.compile(r"\blib/README\.md, ([a-z]*[A-Z][A-Za-z]*(?: [A-Za-z]+)*)")
CONT = re.compile(r"^\s*(?:\*(?!/)|#|//)?\s*")
TOPS = ("lib", "include", "cmd", "tests", "man", "rules", "fixtures")
PATH = re.compile(r"(?<![\w./$-])((?:%s)/[A-Za-z0-9_./-]*)" % "|".join(TOPS))
PATTERN_NEXT = set("*<${%")
TEMPLATE = re.compile(r"(?:^|[/_.-])[A-Z]{2,}(?=$|[/_.-])")

HASH_EXT = (".sh", ".py", ".yaml", ".yml", ".dict", ".mk")
HASH_NAMES = ("Makefile",)
DOC_EXT = (".md", ".1", ".5", ".7")
C_EXT = (".c", ".h")


def list_files(root):
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
        names = sorted(set(n for n in out.decode("utf-8", "surrogateescape").split("\0") if n))
        return [n for n in names if os.path.isfile(os.path.join(root, n))]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, dirs, files in os.walk(root):
            rel = os.path.relpath(d, root)
            if rel == ".":
                dirs[:] = [x for x in dirs if x not in ("build", ".git")]
            for f in files:
                names.append(os.path.normpath(os.path.join(rel, f)))
        return sorted(names)


def c_comments(text):
    """The text of C comments, other characters blanked (lines kept)."""
    out = []
    i, n = 0, len(text)
    state = None  # None, "block", "line", '"', "'"
    while i < n:
        ch = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if state is None:
            if ch == "/" and nxt == "*":
                state = "block"; out.append("  "); i += 2; continue
            if ch == "/" and nxt == "/":
                state = "line"; out.append("  "); i += 2; continue
            if ch in "\"'":
                state = ch
            out.append("\n" if ch == "\n" else " ")
        elif state == "block":
            if ch == "*" and nxt == "/":
                state = None; out.append("  "); i += 2; continue
            out.append(ch)
        elif state == "line":
            if ch == "\n":
                state = None
            out.append(ch)
        else:
            if ch == "\\" and nxt:
                out.append("  " if nxt != "\n" else " \n"); i += 2; continue
            if ch == state or ch == "\n":
                state = None
            out.append("\n" if ch == "\n" else " ")
        i += 1
    return "".join(out)


def hash_comments(text, python):
    """Text after a comment-starting "#" (and Python docstrings)."""
    lines = []
    in_doc = None
    for line in text.split("\n"):
        if python and in_doc:
            end = line.find(in_doc)
            if end >= 0:
                lines.append(line[:end]); in_doc = None
            else:
                lines.append(line)
            continue
        keep = ""
        q = None
        j = 0
        while j < len(line):
            ch = line[j]
            if python and q is None and line.startswith(('"""', "'''"), j):
                delim = line[j:j + 3]
                end = line.find(delim, j + 3)
                if end < 0:
                    keep += line[j + 3:]; in_doc = delim; break
                keep += line[j + 3:end] + " "; j = end + 3; continue
            if q:
                if ch == "\\":
                    j += 2; continue
                if ch == q:
                    q = None
            elif ch in "\"'":
                q = ch
            elif ch == "#" and (j == 0 or line[j - 1] in " \t;("):
                keep += line[j:]; break
            j += 1
        lines.append(keep)
    return "\n".join(lines)


def prose(name, text):
    """The comment and documentation text of a file, line for line; None: data."""
    base = os.path.basename(name)
    if name.endswith(DOC_EXT):
        return text
    if name.endswith(C_EXT):
        return c_comments(text)
    if name.endswith(HASH_EXT) or base in HASH_NAMES:
        return hash_comments(text, name.endswith(".py"))
    return None


def man_titles(path):
    titles = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^\.S[hs]\s+(.*?)\s*$", line)
            if m:
                titles.append(m.group(1).replace('"', ""))
    return titles


def md_titles(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [m.group(1) for m in re.finditer(r"^#+\s+(.*?)\s*$", f.read(), re.M)]


def cites_title(words, titles):
    return any(t.startswith(words) or words.startswith(t + " ") for t in titles)


def main(argv):
    if len(argv) > 2:
        sys.stderr.write("usage: docs_refs.py [ROOT]\n")
        return 2
    root = argv[1] if len(argv) == 2 else "."
    found = []

    def report(name, text, pos, what):
        found.append((name, text.count("\n", 0, pos) + 1, what))

    for name in list_files(root):
        if name.startswith("tests/fuzz/corpus/"):
            continue
        try:
            with open(os.path.join(root, name), "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if b"\0" in raw:
            continue
        text = raw.decode("utf-8", "replace")
        for m in CITATION.finditer(text):
            report(name, text, m.start(), "citation of notes outside the repository: '%s'" % m.group(0))
        if not name.startswith("fixtures/"):
            for m in DEFECT.finditer(text):
                report(name, text, m.start(), "defect number '%s': name the defect instead" % m.group(0))
        for m in PAGE.finditer(text):
            if not os.path.isfile(os.path.join(root, "man", "%s.%s" % (m.group(1), m.group(2)))):
                report(name, text, m.start(), "no page %s(%s) in man/" % (m.group(1), m.group(2)))
        readme = os.path.join(root, "lib", "README.md")
        lines = text.split("\n")
        for i, line in enumerate(lines):
            # A citation may wrap: the line, a space, the next line without its comment prefix.
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            both = line.rstrip() + " " + nxt[CONT.match(nxt).end():]
            for m in SEC_MAN.finditer(both):
                if m.start() >= len(line.rstrip()):
                    break
                page = os.path.join(root, "man", "%s.%s" % (m.group(1), m.group(2)))
                if os.path.isfile(page) and not cites_title(m.group(3), man_titles(page)):
                    found.append((name, i + 1, "no section '%s' in %s(%s)"
                                  % (m.group(3), m.group(1), m.group(2))))
            if not os.path.isfile(readme):
                continue
            for m in SEC_README.finditer(both):
                if m.start() >= len(line.rstrip()):
                    break
                if not cites_title(m.group(1), md_titles(readme)):
                    found.append((name, i + 1, "no heading '%s' in lib/README.md" % m.group(1)))
        if name.endswith((".1", ".5", ".7")):
            off = 0
            for line in text.split("\n"):
                m = XR.match(line)
                if m and not os.path.isfile(os.path.join(root, "man", "%s.%s" % (m.group(1), m.group(2)))):
                    report(name, text, off, "no page %s(%s) in man/" % (m.group(1), m.group(2)))
                off += len(line) + 1
        doc = prose(name, text)
        if doc is None:
            continue
        for m in PATH.finditer(doc):
            tok = m.group(1)
            if doc[m.end():m.end() + 1] in PATTERN_NEXT and m.end() < len(doc):
                continue
            tok = tok.rstrip("./")
            if "/" not in tok:
                continue
            if not os.path.exists(os.path.join(root, tok)) and not TEMPLATE.search(tok):
                report(name, doc, m.start(), "no file or directory '%s' in the repository" % tok)
    for name, line, what in sorted(found):
        print("%s:%d: %s" % (name, line, what))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
