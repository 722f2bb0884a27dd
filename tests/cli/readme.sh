#!/bin/sh
# The examples of README.md are what the program prints: every block marked
# "<!-- example -->" is run from a scratch copy of the repository root
# against the bundled fixtures and compared byte for byte
# (tests/readme_examples.py; `make readme` rewrites the blocks that differ).
# Then the checker itself, on a scratch README: a matching block, "..."
# elisions honoured and refused, a stale output reported as a diff, --update
# rewriting it, and the usage errors.
. tests/cli/lib.sh
CHK="python3 tests/readme_examples.py"

t_run "README.md" 0 $CHK "$STFIX"
t_stdout_is "README.md" /dev/null

W="$T_TMP/readme"
rm -rf "$W"
mkdir -p "$W"
# One block of two commands, with an elision of one line and one of two.
cat >"$W/ok.md" <<'E'
Text.

<!-- example -->

    $ printf 'a\nb\nc\n'
    a
    ...
    c

    $ printf 'x\ny\nz\nw\n'; echo "stfix 1.2.3, 0.25 s"
    x
    ...
    stfix 9.9.9, 7 s

Text.
E
t_run "elisions" 0 $CHK "$STFIX" "$W/ok.md"
t_stdout_is "elisions" /dev/null

# "..." stands for at least one line, never for none.
printf '<!-- example -->\n\n    $ seq 2\n    1\n    ...\n    2\n' >"$W/none.md"
t_run "empty elision" 1 $CHK "$STFIX" "$W/none.md"
cat >"$T_TMP/readme-expect" <<E
$W/none.md:3: \$ seq 2
  --- README
  +++ run
  @@ -1,3 +1,2 @@
   1
  -...
   2
1 example output(s) differ from $W/none.md; \`make readme\` rewrites them
E
t_stdout_is "empty elision" "$T_TMP/readme-expect"

# A stale output, and what stfix really prints (the scratch directory, where
# the command runs, reads as ".").
cat >"$W/stale.md" <<'E'
# Title

<!-- example -->

    $ stfix explain s7 | head -n 2; pwd
    S7  Header starts with whitespace
    severity: warning
    /somewhere

End.
E
t_run "stale" 1 $CHK "$STFIX" "$W/stale.md"
cat >"$T_TMP/readme-expect" <<E
$W/stale.md:5: \$ stfix explain s7 | head -n 2; pwd
  --- README
  +++ run
  @@ -1,3 +1,3 @@
   S7  Header starts with whitespace
  -severity: warning
  -/somewhere
  +severity: warning; error with --strict
  +.
1 example output(s) differ from $W/stale.md; \`make readme\` rewrites them
E
t_stdout_is "stale" "$T_TMP/readme-expect"

t_run "update" 0 $CHK "$STFIX" --update "$W/stale.md"
t_stderr_is "update" "readme_examples.py: 1 example output(s) updated in $W/stale.md"
cat >"$T_TMP/readme-expect" <<'E'
# Title

<!-- example -->

    $ stfix explain s7 | head -n 2; pwd
    S7  Header starts with whitespace
    severity: warning; error with --strict
    .

End.
E
t_true "update: the block rewritten, the rest kept" cmp -s "$W/stale.md" "$T_TMP/readme-expect"
t_run "updated" 0 $CHK "$STFIX" "$W/stale.md"

# --update leaves a matching file alone and drops the "..." of a block it
# rewrites, saying so.
printf '<!-- example -->\n\n    $ seq 3\n    ...\n    4\n' >"$W/elided.md"
t_run "update elided" 0 $CHK "$STFIX" --update "$W/elided.md"
t_stderr_has "update elided" "$W/elided.md:3: \$ seq 3: the whole output replaces the one with '...'; shorten it again by hand"
printf '<!-- example -->\n\n    $ seq 3\n    1\n    2\n    3\n' >"$T_TMP/readme-expect"
t_true "update elided: whole output" cmp -s "$W/elided.md" "$T_TMP/readme-expect"

# Usage errors: no example, a marker without a block, no arguments.
printf '# Nothing\n' >"$W/empty.md"
t_run "no example" 2 $CHK "$STFIX" "$W/empty.md"
t_stderr_is "no example" "readme_examples.py: $W/empty.md: no <!-- example --> block"
printf '<!-- example -->\n\nText.\n' >"$W/bare.md"
t_run "marker without block" 2 $CHK "$STFIX" "$W/bare.md"
t_stderr_is "marker without block" "readme_examples.py: $W/bare.md:1: <!-- example --> is not followed by a block starting with '    \$ '"
t_run "usage" 2 $CHK
t_stderr_is "usage" "usage: readme_examples.py STFIX [--update] [README]"
