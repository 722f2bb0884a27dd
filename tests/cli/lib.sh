# Helpers for CLI scenario scripts (sourced). Each assertion prints one
# "ok - NAME" or "not ok - NAME" line; tests/run.sh counts them.
#   t_run NAME RC cmd...      run cmd, capture stdout/stderr, assert exit code RC
#   t_stdout_is NAME FILE     stdout of the last t_run equals FILE byte for byte
#   t_stdout_has NAME TEXT    stdout contains TEXT (fixed string)
#   t_stderr_has NAME TEXT    stderr contains TEXT (fixed string)
#   t_stderr_is NAME TEXT     stderr equals TEXT plus a newline
#   t_true NAME cmd...        cmd exits 0
#   t_absent NAME PATH        nothing exists at PATH
#   t_no_temp NAME DIR        no .NAME.stfix-XXXXXX temp file in DIR
#   t_sha256 FILE             prints FILE's sha256 (64 hex characters)
#   t_capped cmd...           run cmd under `timeout 10` and a 64 MiB address-space
#                             cap (`ulimit -v`), for hostile inputs: a hang or a
#                             runaway allocation becomes a failure, not a stuck or
#                             swapping machine. The cap is left out for
#                             AddressSanitizer builds, which reserve terabytes.
#   t_utf8 NAME               stdout and stderr of the last t_run are strict UTF-8
# $STFIX is the binary under test, $T_TMP a scratch directory (created here).
: "${STFIX:?STFIX must name the stfix binary}"
T_TMP=${T_TMP:-$(mktemp -d)}
mkdir -p "$T_TMP"
T_OUT="$T_TMP/stdout"
T_ERR="$T_TMP/stderr"

t_ok() { echo "ok - $1"; }
t_notok() {
    echo "not ok - $1"
    shift
    [ $# -gt 0 ] && echo "#   $*"
    return 0
}

t_run() {
    _n=$1; _rc=$2; shift 2
    "$@" >"$T_OUT" 2>"$T_ERR"
    T_RC=$?
    if [ "$T_RC" -eq "$_rc" ]; then t_ok "$_n: exit $_rc"
    else
        t_notok "$_n: exit $_rc" "got exit $T_RC; stderr: $(head -c 400 "$T_ERR")"
    fi
}

# t_pty NAME RC CMD...: run CMD with stderr on a pseudo-terminal
# (tests/cli/pty_run.py) and stdout to a file: $T_OUT, $T_ERR. $PTY may name
# the runner by an absolute path for tests that change directory.
t_pty() {
    _n=$1; _rc=$2; shift 2
    ${PTY:-python3 tests/cli/pty_run.py} "$T_OUT" "$T_ERR" "$@"
    _got=$?
    if [ "$_got" -eq "$_rc" ]; then t_ok "$_n: exit $_rc"
    else t_notok "$_n: exit $_rc" "got exit $_got; stderr: $(head -c 400 "$T_ERR")"; fi
}

t_stdout_is() {
    if cmp -s "$T_OUT" "$2"; then t_ok "$1: stdout"
    else t_notok "$1: stdout" "differs from $2:"; diff "$2" "$T_OUT" | head -20 | sed 's/^/#   /'; fi
}

# t__has FILE TEXT: TEXT occurs in FILE. grep -F would read a TEXT of
# several lines as several patterns, any one of which matches, so such a
# TEXT is looked for whole, lines and all.
t__has() {
    case $2 in
    *'
'*)
        case $(cat "$1"; echo x) in *"$2"*) return 0 ;; esac
        return 1 ;;
    esac
    grep -qF -- "$2" "$1"
}

t_stdout_has() {
    if t__has "$T_OUT" "$2"; then t_ok "$1: stdout has '$2'"
    else t_notok "$1: stdout has '$2'" "stdout: $(head -c 400 "$T_OUT")"; fi
}

t_stderr_has() {
    if t__has "$T_ERR" "$2"; then t_ok "$1: stderr has '$2'"
    else t_notok "$1: stderr has '$2'" "stderr: $(head -c 400 "$T_ERR")"; fi
}

t_stderr_is() {
    printf '%s\n' "$2" >"$T_TMP/expect_err"
    if cmp -s "$T_ERR" "$T_TMP/expect_err"; then t_ok "$1: stderr"
    else t_notok "$1: stderr" "got: $(cat "$T_ERR")"; fi
}

t_true() {
    _n=$1; shift
    if "$@"; then t_ok "$_n"; else t_notok "$_n" "command failed: $*"; fi
}

# Nothing exists at path $2.
t_absent() { if [ -e "$2" ]; then t_notok "$1: no $2"; else t_ok "$1: no $2"; fi; }

# No stfix temp file (.NAME.stfix-XXXXXX) left in directory $2.
t_no_temp() {
    _left=$(ls -A "$2" | grep '\.stfix-' | head -3)
    if [ -z "$_left" ]; then t_ok "$1: no temp file"; else t_notok "$1: no temp file" "left: $_left"; fi
}

# The sha256 of file $1, as 64 hex characters.
t_sha256() { sha256sum "$1" | cut -c1-64; }

if grep -q __asan_init "$STFIX" 2>/dev/null; then T_ASAN=1; else T_ASAN=; fi

t_capped() {
    if [ -n "$T_ASAN" ]; then timeout 10 "$@"
    else (ulimit -v 65536 && exec timeout 10 "$@"); fi
}

t_utf8() {
    if python3 -c 'import sys
for p in sys.argv[1:]: open(p, "rb").read().decode("utf-8", "strict")' "$T_OUT" "$T_ERR" 2>/dev/null
    then t_ok "$1: output is UTF-8"
    else t_notok "$1: output is UTF-8" "stdout: $(head -c 400 "$T_OUT"); stderr: $(head -c 400 "$T_ERR")"; fi
}
