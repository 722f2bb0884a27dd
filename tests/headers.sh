#!/bin/sh
# Each public header, the experimental ones included, stands alone: a
# translation unit that includes only it (twice, for its include guard)
# compiles as C99 and as C++11, warnings as errors, and every function it
# declares (STF_API) lies inside its extern "C" block, so a C++ program
# links to the C library.
#
# usage: sh tests/headers.sh [INCLUDE]
#   INCLUDE  the directory holding stfix.h and stfix/*.h, default include
# Prints one line per failure on stdout (the compiler's messages on stderr)
# and exits 1 when there is one; 2 when a compiler is missing.
# $CC (default cc) and $CXX (default g++) are the compilers.
INC=${1:-include}
CC=${CC:-cc}
CXX=${CXX:-g++}
for c in "$CC" "$CXX"; do
    command -v "$c" >/dev/null 2>&1 || { echo "headers: $c is needed" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-headers.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
for h in "$INC"/stfix.h "$INC"/stfix/*.h "$INC"/stfix/experimental/*.h; do
    [ -f "$h" ] || continue
    name=${h#"$INC"/}
    printf '#include "%s"\n#include "%s"\n' "$name" "$name" >"$tmp/tu.c"
    if ! "$CC" -std=c99 -pedantic -Wall -Wextra -Werror -I"$INC" -c "$tmp/tu.c" -o "$tmp/tu.o" 2>"$tmp/err"; then
        echo "headers: $name does not compile alone as C99"; sed 's/^/    /' "$tmp/err" >&2; fail=1
    fi
    if ! "$CXX" -x c++ -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$INC" "$tmp/tu.c" \
        2>"$tmp/err"; then
        echo "headers: $name does not compile alone as C++11"; sed 's/^/    /' "$tmp/err" >&2; fail=1
    fi
    # The guard is "#ifdef __cplusplus / extern "C" { / #endif" ... "#ifdef
    # __cplusplus / } / #endif"; an STF_API line outside it is named.
    awk -v name="$name" '
        /^#[ \t]*if(def)?[ \t]+(defined[ \t]*\(?[ \t]*)?__cplusplus/ { cxx = 1; next }
        /^#[ \t]*endif/ { cxx = 0; next }
        cxx && /^[ \t]*extern[ \t]+"C"[ \t]*\{/ { inside = 1; next }
        cxx && /^[ \t]*\}/ { inside = 0; next }
        /STF_API/ && !/^[ \t]*#/ && !inside {
            printf "headers: %s:%d: a declaration outside extern \"C\"\n", name, FNR
        }' "$h" >"$tmp/guard"
    if [ -s "$tmp/guard" ]; then cat "$tmp/guard"; fail=1; fi
done
exit "$fail"
