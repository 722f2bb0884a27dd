#!/bin/sh
# Runs every test and prints one closing line "check: N passed, M failed".
#   unit: each cmocka binary in $BUILD/tests (one per lib file it tests)
#   cli:  each tests/cli/*.sh scenario script (prints "ok - ..." / "not ok - ...")
#   lint: mandoc -Tlint over the man pages
# ONLY=unit|cli|lint restricts the run. Exit status is non-zero on any failure.
BUILD=${BUILD:-build}
ONLY=${ONLY:-}
STFIX=${STFIX:-$(pwd)/build/stfix}
export STFIX
pass=0
fail=0
failed_names=""
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-check.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

note_fail() { fail=$((fail + $2)); failed_names="$failed_names $1"; }

if [ -z "$ONLY" ] || [ "$ONLY" = unit ]; then
    for t in "$BUILD"/tests/*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        out="$tmp/$name.log"
        CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$out" 2>&1
        rc=$?
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        p=${p:-0}; f=${f:-0}
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
        pass=$((pass + p))
        if [ "$f" -ne 0 ]; then
            note_fail "$name" "$f"
            echo "FAIL $name (exit $rc):"; sed 's/^/    /' "$out"
        else
            echo "ok   $name ($p tests)"
        fi
    done
fi

if [ -z "$ONLY" ] || [ "$ONLY" = cli ]; then
    for s in tests/cli/*.sh; do
        [ -f "$s" ] || continue
        case "$s" in */lib.sh) continue ;; esac
        name=$(basename "$s" .sh)
        out="$tmp/cli-$name.log"
        T_TMP="$tmp/cli-$name.d" sh "$s" >"$out" 2>&1
        rc=$?
        p=$(grep -c '^ok - ' "$out")
        f=$(grep -c '^not ok - ' "$out")
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
        pass=$((pass + p))
        if [ "$f" -ne 0 ]; then
            note_fail "cli/$name" "$f"
            echo "FAIL cli/$name (exit $rc):"; sed 's/^/    /' "$out"
        else
            echo "ok   cli/$name ($p cases)"
        fi
    done
fi

if [ -z "$ONLY" ] || [ "$ONLY" = lint ]; then
    for m in man/*.[15]; do
        [ -f "$m" ] || continue
        if mandoc -Tlint -Wwarning "$m" >"$tmp/lint.log" 2>&1; then
            pass=$((pass + 1)); echo "ok   lint $m"
        else
            note_fail "lint:$m" 1; echo "FAIL lint $m:"; sed 's/^/    /' "$tmp/lint.log"
        fi
    done
fi

[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
