# The shared library's exports are exactly the public API: every function
# declared in include/stfix.h (the stable tier) and include/stfix/*.h, with
# include/stfix/experimental.h (the experimental tier), each marked STF_API,
# and nothing else (the library is built with -fvisibility=hidden, so the
# internal stf__* functions stay inside it). First the check itself, on a
# small library made here with one leaked symbol and one unmarked
# declaration: it must name both.
. tests/cli/lib.sh
SO=${BUILD:-build}/libstfix.so
CC=${CC:-cc}

# Functions declared in the headers under directory $1 reached from the
# headers $2... (relative to $1; default stfix.h and, where there is one,
# stfix/experimental.h), one name a line, sorted. The preprocessor's line
# markers tell which file each line came from; a declaration is a
# statement at file scope, outside braces, that is not a typedef and has a
# parameter list: its name is the identifier before the first "(".
abi_declared() {
    d=$1
    shift
    [ $# -gt 0 ] || set -- stfix.h $(test -e "$d/stfix/experimental.h" && echo stfix/experimental.h)
    printf '#include "%s"\n' "$@" | "$CC" -std=c11 -E -I"$d" -x c - | awk -v dir="$d/" '
        /^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); ours = index(f, dir) == 1; next }
        /^#/ || !ours { next }
        {
            gsub(/__attribute__ *\(\(visibility *\("default"\)\)\)/, "")
            for (i = 1; i <= length($0); i++) {
                c = substr($0, i, 1)
                if (c == "{") depth++
                else if (c == "}") depth--
                else if (c == ";" && depth == 0) { decl(stmt); stmt = ""; continue }
                stmt = stmt c
            }
            stmt = stmt " "
        }
        function decl(s) {
            if (s ~ /^[ \t]*typedef[ \t]/ || index(s, "(") == 0) return
            s = substr(s, 1, index(s, "(") - 1)
            sub(/[ \t]+$/, "", s)
            if (match(s, /[A-Za-z_][A-Za-z_0-9]*$/)) print substr(s, RSTART, RLENGTH)
        }' | sort -u
}

# The defined dynamic symbols of shared library $1, sorted.
abi_exported() { nm -D --defined-only "$1" | awk '{ print $NF }' | sort -u; }

# Compares the two for headers $1 and library $2: prints "leaked: NAME" for
# each export no header declares and "not exported: NAME" for each
# declaration the library does not export; fails if it printed anything.
abi_diff() {
    abi_declared "$1" >"$T_TMP/declared" && abi_exported "$2" >"$T_TMP/exported" || return 2
    comm -13 "$T_TMP/declared" "$T_TMP/exported" | sed 's/^/leaked: /' >"$T_TMP/abi_diff"
    comm -23 "$T_TMP/declared" "$T_TMP/exported" | sed 's/^/not exported: /' >>"$T_TMP/abi_diff"
    cat "$T_TMP/abi_diff"
    test ! -s "$T_TMP/abi_diff"
}

# The check on a library with one function of each kind.
F="$T_TMP/fake"
mkdir -p "$F/include/stfix"
cat >"$F/include/stfix.h" <<'H'
#include "stfix/api.h"
H
cat >"$F/include/stfix/api.h" <<'H'
#define STF_API __attribute__((visibility("default")))
typedef struct stf_thing { int (*stf_not_a_function)(void); } stf_thing;
typedef int (*stf_callback)(void *ud);
STF_API int stf_public(stf_thing *t,
                       stf_callback cb);
int stf_unmarked(void);
H
cat >"$F/lib.c" <<'C'
#include "stfix.h"
int stf_public(stf_thing *t, stf_callback cb) { return t != 0 && cb != 0; }
int stf_unmarked(void) { return 1; }
static int helper(void) { return 2; }
__attribute__((visibility("default"))) int stf__leaked(void) { return helper(); }
C
t_run "build the check's own library" 0 \
    "$CC" -shared -fPIC -fvisibility=hidden -I"$F/include" -o "$F/libfake.so" "$F/lib.c"
t_run "the check finds a leak and a missing STF_API" 1 abi_diff "$F/include" "$F/libfake.so"
printf 'leaked: stf__leaked\nnot exported: stf_unmarked\n' >"$T_TMP/want"
t_stdout_is "the check finds a leak and a missing STF_API" "$T_TMP/want"

# The library itself.
t_true "$SO exists" test -e "$SO"
t_run "exports of $SO are the public API" 0 abi_diff include "$SO"
t_stdout_is "exports of $SO are the public API" /dev/null
t_true "the public API has functions" test "$(wc -l <"$T_TMP/declared")" -gt 100

# The two tiers: <stfix.h> alone declares none of the experimental functions
# (without STF_EXPERIMENTAL), defining STF_EXPERIMENTAL brings in exactly
# them, and each is marked STF_EXPERIMENTAL_API.
abi_declared include stfix.h >"$T_TMP/stable"
abi_declared include stfix.h stfix/experimental.h >"$T_TMP/all"
comm -13 "$T_TMP/stable" "$T_TMP/all" >"$T_TMP/experimental"
t_true "the stable API has functions" test "$(wc -l <"$T_TMP/stable")" -gt 100
t_true "the experimental API has functions" test "$(wc -l <"$T_TMP/experimental")" -gt 50
t_run "stfix.h declares no experimental function" 0 \
    grep -c -x -e stf_pyjson_parse -e stf_pool_new -e stf_json_quote -e stf_int8_quantize_rows \
    "$T_TMP/experimental"
printf '4\n' >"$T_TMP/want"
t_stdout_is "stfix.h declares no experimental function" "$T_TMP/want"
printf '#define STF_EXPERIMENTAL\n#include "stfix.h"\n' >"$T_TMP/defined.c"
"$CC" -std=c11 -E -Iinclude "$T_TMP/defined.c" | grep -o 'stf_[a-z0-9_]*(' | tr -d '(' | sort -u \
    >"$T_TMP/defined"
t_run "STF_EXPERIMENTAL brings in the experimental API" 0 \
    comm -23 "$T_TMP/experimental" "$T_TMP/defined"
t_stdout_is "STF_EXPERIMENTAL brings in the experimental API" /dev/null
t_run "experimental functions are marked STF_EXPERIMENTAL_API" 0 \
    sh -c "cat include/stfix/experimental/*.h | grep -c '^STF_EXPERIMENTAL_API\$'"
printf '%s\n' "$(wc -l <"$T_TMP/experimental")" >"$T_TMP/want"
t_stdout_is "experimental functions are marked STF_EXPERIMENTAL_API" "$T_TMP/want"
t_run "no function in experimental.h is marked STF_API alone" 1 \
    grep -n '^STF_API' include/stfix/experimental.h include/stfix/experimental/*.h

# Every destructor the headers declare is called with NULL by
# tests/unit/test_free_null.c.
grep -E '_(free|close)$' "$T_TMP/all" >"$T_TMP/destructors"
t_true "the headers declare destructors" test -s "$T_TMP/destructors"
grep -o 'stf_[a-z0-9_]*(NULL)' tests/unit/test_free_null.c | sed 's/(NULL)$//' | sort -u >"$T_TMP/freed"
t_run "every destructor is called with NULL in test_free_null.c" 0 \
    comm -23 "$T_TMP/destructors" "$T_TMP/freed"
t_stdout_is "every destructor is called with NULL in test_free_null.c" /dev/null
