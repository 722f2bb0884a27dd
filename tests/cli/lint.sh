# make lint (tests/lint_man.sh): any mandoc message at style level fails,
# a reference between the project's pages must resolve, and a reference to
# another project's manual that this machine lacks is let through.
. tests/cli/lib.sh
M="$T_TMP/man"
mkdir -p "$M"
P="$M/stfix-probe.7"
# page BODY-LINE SEE-ALSO-LINE...: a small section-7 page at $P.
page() {
    body=$1
    shift
    printf '%s\n' '.Dd November 29, 2026' '.Dt STFIX-PROBE 7' '.Os' '.Sh NAME' \
        '.Nm stfix-probe' '.Nd a page for the lint tests' '.Sh DESCRIPTION' "$body" \
        '.Sh SEE ALSO' "$@" >"$P"
}
page 'Nothing to see.' '.Xr stfix 1 ,' '.Xr nosuchpage 3 ,' '.Xr stfix-rules 5'
t_run "lint: clean page" 0 sh tests/lint_man.sh "$P"
t_true "lint: clean page prints nothing" test ! -s "$T_OUT"

page 'Nothing to see.' '.Xr stfix-nosuchpage 7'
t_run "lint: own page missing" 1 sh tests/lint_man.sh "$P"
t_stdout_has "lint: own page missing" \
    "stfix-probe.7:10:6: STYLE: referenced manual not found: Xr stfix-nosuchpage 7"

page 'Nothing to see here, nothing to see here, nothing to see here, nothing to see here.' \
    '.Xr stfix 1'
t_run "lint: long line" 1 sh tests/lint_man.sh "$P"
t_stdout_has "lint: long line" "stfix-probe.7:8:83: STYLE: input text line longer than 80 bytes"

page 'Two sentences.  On one line.' '.Xr stfix 1'
t_run "lint: sentence" 1 sh tests/lint_man.sh "$P"
t_stdout_has "lint: sentence" "stfix-probe.7:8:17: WARNING: new sentence, new line"

page '.Ql stfix: prefix:' '.Xr stfix 1'
t_run "lint: trailing delimiter" 1 sh tests/lint_man.sh "$P"
t_stdout_has "lint: trailing delimiter" \
    "stfix-probe.7:8:18: STYLE: no blank before trailing delimiter: Ql stfix: prefix:"

# Quoting macros nested on one line: mandoc says nothing, the rendered page
# shows "a, "b"" with two closing quotes in a row.
page '.Pq Dq added , Dq removed' '.Xr stfix 1'
t_run "lint: nested quotes" 1 sh tests/lint_man.sh "$P"
t_stdout_is_text() { printf '%s\n' "$2" >"$T_TMP/want"; t_stdout_is "$1" "$T_TMP/want"; }
t_stdout_is_text "lint: nested quotes" \
    "$P: rendered line 7: nested quotes: (“added, “removed””)"
printf '%s\n' '.Dd November 29, 2026' '.Dt STFIX-PROBE 7' '.Os' '.Sh NAME' '.Nm stfix-probe' \
    '.Nd a page for the lint tests' '.Sh DESCRIPTION' '.Po' '.Dq added ,' '.Dq removed' '.Pc' \
    '.Sh SEE ALSO' '.Xr stfix 1' >"$P"
t_run "lint: quotes one a line" 0 sh tests/lint_man.sh "$P"
t_true "lint: quotes one a line prints nothing" test ! -s "$T_OUT"
