#!/bin/sh
# Runs every test and prints one closing line "check: N passed, M failed".
#   unit: each cmocka binary in $BUILD/tests (one per lib file it tests)
#   cli:  each tests/cli/*.sh scenario script (prints "ok - ..." / "not ok - ...")
#   fuzz: each fuzz harness in $BUILD/fuzz-replay over its corpus
#         tests/fuzz/corpus/<harness>/ (one passed test per file)
#   lint: tests/lint_man.sh (mandoc -Tlint -Wstyle) over each man page
#   python: the Python package's pytest suite (tests/python) against this
#         build's libstfix.so, one passed test per case (python3 -m pytest)
# ONLY=unit|cli|fuzz|lint|python restricts the run. Exit status is non-zero on any failure.
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

# One runner's result: NAME RC PASSED FAILED LOG WHAT. Adds to the totals
# and prints its line, with the log when it failed; an exit status other
# than 0 with nothing counted as failed still counts one failure.
tally() {
    t_f=$4
    if [ "$2" -ne 0 ] && [ "$t_f" -eq 0 ]; then t_f=1; fi
    pass=$((pass + $3))
    if [ "$t_f" -ne 0 ]; then
        note_fail "$1" "$t_f"
        echo "FAIL $1 (exit $2):"; sed 's/^/    /' "$5"
    else
        # "1 test", "2 tests": the noun comes plural; drop its s for one.
        if [ "$3" -eq 1 ]; then echo "ok   $1 ($3 ${6%s})"; else echo "ok   $1 ($3 $6)"; fi
    fi
}

if [ -z "$ONLY" ] || [ "$ONLY" = unit ]; then
    for t in "$BUILD"/tests/*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        out="$tmp/$name.log"
        CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$out" 2>&1
        rc=$?
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        tally "$name" "$rc" "${p:-0}" "${f:-0}" "$out" tests
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
        tally "cli/$name" "$rc" "$p" "$f" "$out" cases
    done
fi

if [ -z "$ONLY" ] || [ "$ONLY" = fuzz ]; then
    for h in "$BUILD"/fuzz-replay/*; do
        [ -x "$h" ] || continue
        name=$(basename "$h")
        [ -d "tests/fuzz/corpus/$name" ] || continue
        raw="$tmp/fuzz-$name.raw"
        "$h" "tests/fuzz/corpus/$name" >"$raw" 2>&1
        rc=$?
        p=$(grep -c '^run ' "$raw")
        f=0
        if [ "$rc" -ne 0 ]; then f=1; [ "$p" -gt 0 ] && p=$((p - 1)); fi
        # On failure show the input that failed, not the whole list.
        awk '/^run /{held=$0; next} {if (held != "") print held; held=""; print}
             END {if (held != "") print held}' "$raw" >"$tmp/fuzz-$name.log"
        tally "fuzz/$name" "$rc" "$p" "$f" "$tmp/fuzz-$name.log" inputs
    done
fi

if [ -z "$ONLY" ] || [ "$ONLY" = lint ]; then
    for m in man/*.[1-9]; do
        [ -f "$m" ] || continue
        if sh tests/lint_man.sh "$m" >"$tmp/lint.log" 2>&1; then
            pass=$((pass + 1)); echo "ok   lint $m"
        else
            note_fail "lint:$m" 1; echo "FAIL lint $m:"; sed 's/^/    /' "$tmp/lint.log"
        fi
    done
fi

if [ -z "$ONLY" ] || [ "$ONLY" = python ]; then
    out="$tmp/python.log"
    so=$(ls "$BUILD"/libstfix.so.*.*.* 2>/dev/null | head -n 1)
    # The first python3 with pytest: the one on PATH, else Debian's (make deps).
    py=""
    for c in python3 /usr/bin/python3; do
        if "$c" -c 'import pytest' >/dev/null 2>&1; then py=$c; break; fi
    done
    # A sanitizer build's library needs its runtimes loaded first (make asan);
    # the interpreter's own allocations are not the library's leaks.
    pre=""
    if [ -n "$so" ] && ldd "$so" 2>/dev/null | grep -q libasan; then
        pre="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
    fi
    if [ -n "$py" ]; then
        LD_PRELOAD=$pre ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
        STFIX_LIBRARY=${so:+$(cd "$(dirname "$so")" && pwd)/$(basename "$so")} BUILD="$BUILD" \
            "$py" -m pytest -q -p no:cacheprovider tests/python >"$out" 2>&1
        rc=$?
    else
        echo "no python3 with pytest (make deps installs python3-pytest)" >"$out"
        rc=1
    fi
    last=$(tail -n 1 "$out")
    p=$(echo "$last" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) passed.*/\1/p; s/^\([0-9][0-9]*\) passed.*/\1/p' | head -n 1)
    f=$(echo "$last" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) failed.*/\1/p; s/^\([0-9][0-9]*\) failed.*/\1/p' | head -n 1)
    tally python "$rc" "${p:-0}" "${f:-0}" "$out" tests
fi

[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
