# Every reference in the repository resolves inside it (tests/docs_refs.py):
# no citation of notes outside the repository, no defect numbers, no man
# page or file that does not exist. First the repository itself, then the
# checker on a scratch tree with one planted problem of each kind, and the
# look-alikes it must leave alone.
. tests/cli/lib.sh
CHK="python3 tests/docs_refs.py"

t_run "repository" 0 $CHK .
t_stdout_is "repository" /dev/null

# A scratch tree outside any git work tree, so the checker walks it.
W="$T_TMP/tree"
rm -rf "$W"
mkdir -p "$W/lib/x" "$W/man" "$W/tests/cli" "$W/rules" "$W/build" "$W/tests/fuzz/corpus/h"
export GIT_CEILING_DIRECTORIES="$T_TMP"
: >"$W/man/stfix.1"
: >"$W/rules/a.yaml"
cat >"$W/lib/x/ok.c" <<'C'
/*
 * Reads lib/x/ok.c and rules/a.yaml, any rules/*.yaml, cmd/cli_NAME.c and
 * $BUILD/tests/none; see stfix(1). F8_E4M3 and E8M0 are dtypes.
 */
static const char *p = "lib/x/missing_in_a_string.c";
C
t_run "clean tree" 0 $CHK "$W"
t_stdout_is "clean tree" /dev/null

# The planted tokens are assembled here so that this file stays clean.
sec=$(printf '\302\247')
notes=$(printf '%s.md' convrot)
m6=$(printf 'M%d' 6)
m12=$(printf 'M%d' 12)
gone=stfix-gone
nope=stfix-nope
px=stfix-x
rd=lib/README.md
shared=shared
printf '.Sh NAME\n.Sh SEE ALSO\n.Xr stfix 1 ,\n.Xr %s 7\n' "$gone" >"$W/man/$px.7"
printf '# Layers\n## Canonical form\n' >"$W/lib/README.md"
cat >"$W/lib/x/bad.c" <<C
/* Fine: $px(7), SEE ALSO; lib/README.md, Canonical form and Layers. */
/* The golden vectors ($notes $sec 10) and the defect $m6. */
int x; // see lib/x/gone.h
static const char *q = "no problem: lib/x/gone_too.c";
/* $px(7), GOLDEN VECTORS; lib/README.md, Dtypes; $px(7), R15 */
/* A citation that wraps: $rd,
 * cJSON notes; and one that is fine: $px(7),
 * SEE ALSO. */
C
printf '# recipe\n# from ../%s/spec\n  # see tests/cli/nothing.sh.\nname: a # %s(7)\n' "$shared" "$nope" \
    >"$W/rules/b.yaml"
printf '%s %s\n' "$m12" "$sec" >"$W/tests/fuzz/corpus/h/input"
printf '%s\n\000' "$m12" >"$W/lib/x/binary.bin"
cat >"$T_TMP/docs-expect" <<E
lib/x/bad.c:2: citation of notes outside the repository: '$notes'
lib/x/bad.c:2: citation of notes outside the repository: '$sec'
lib/x/bad.c:2: defect number '$m6': name the defect instead
lib/x/bad.c:3: no file or directory 'lib/x/gone.h' in the repository
lib/x/bad.c:5: no heading 'Dtypes' in lib/README.md
lib/x/bad.c:5: no section 'GOLDEN VECTORS' in $px(7)
lib/x/bad.c:6: no heading 'cJSON notes' in lib/README.md
man/$px.7:4: no page $gone(7) in man/
rules/b.yaml:2: citation of notes outside the repository: '../$shared'
rules/b.yaml:3: no file or directory 'tests/cli/nothing.sh' in the repository
rules/b.yaml:4: no page $nope(7) in man/
E
t_run "planted problems" 1 $CHK "$W"
t_stdout_is "planted problems" "$T_TMP/docs-expect"

t_run "usage" 2 $CHK a b
t_stderr_is "usage" "usage: docs_refs.py [ROOT]"
