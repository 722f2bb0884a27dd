#!/bin/sh
# Colour in human text: severities (error bold red, warning yellow, info
# cyan) and rule ids (bold), only on a terminal with NO_COLOR unset or
# empty and TERM not "dumb", or with --color=always; never in JSON, never
# when piped. The terminal is a pseudo-terminal from python3's pty module.
. tests/cli/lib.sh
F=fixtures/comfy
r23=$F/r23_params_nested.safetensors
E=$(printf '\033')

# Run stfix with stdout and stderr on one pseudo-terminal; what it printed
# (the terminal's \r\n as \n) goes to $T_OUT, its exit status is T_RC.
t_pty_all() {
    : >"$T_ERR"
    python3 -c 'import os, subprocess, sys
m, s = os.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=s, stderr=s)
os.close(s)
out = b""
while True:
    try:
        b = os.read(m, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
sys.stdout.buffer.write(out.replace(b"\r\n", b"\n"))
sys.exit(p.wait())' "$@" >"$T_OUT"
    T_RC=$?
}
# No escape character in $T_OUT and $T_ERR.
t_plain() {
    if grep -q "$E" "$T_OUT" "$T_ERR"; then t_notok "$1: no colour" "$(grep "$E" "$T_OUT" "$T_ERR" | head -2 | cat -v)"
    else t_ok "$1: no colour"; fi
}
: >"$T_ERR"

red="$E[1;31merror$E[0m   $E[1mR23$E[0m: Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must set convrot=true"
yellow="$E[33mwarning$E[0m $E[1mC14$E[0m: Marker of layer blocks.0.attn.qkv nests keys under params"

# Piped: no colour, whatever NO_COLOR says.
t_run "piped" 1 "$STFIX" check "$r23"
t_plain "piped"
t_run "piped, NO_COLOR empty" 1 env NO_COLOR= "$STFIX" check "$r23"
t_plain "piped, NO_COLOR empty"

# --color=always colours a pipe too, NO_COLOR notwithstanding (a flag the
# user gave wins over the environment); the padding stays outside the
# escapes, so the columns line up as without colour.
t_run "always" 1 "$STFIX" check --color=always "$r23"
t_stdout_has "always" "  $red"
t_stdout_has "always" "  $yellow"
t_stdout_has "always" "hint: stfix explain $E[1mR23$E[0m shows"
t_true "always: same text once the escapes are gone" test \
    "$(sed "s/$E\[[0-9;]*m//g" "$T_OUT")" = "$("$STFIX" check "$r23")"
t_run "always, NO_COLOR=1" 1 env NO_COLOR=1 "$STFIX" check --color=always "$r23"
t_stdout_has "always, NO_COLOR=1" "  $red"
t_run "bare --color" 1 "$STFIX" check "$r23" --color
t_stdout_has "bare --color" "  $red"
t_run "never" 1 "$STFIX" check --color=never "$r23"
t_plain "never"
t_run "last one wins" 1 "$STFIX" check --color=always --color=never "$r23"
t_plain "last one wins"

# Never in JSON.
t_run "json" 1 "$STFIX" check --json --color=always "$r23"
t_plain "json"
t_true "json: parses" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T_OUT"

# The reader's findings on stderr, and fix's verification listing.
t_run "inspect stderr" 0 "$STFIX" inspect --color=always fixtures/malformed/s14_nul_in_name.safetensors
t_stderr_has "inspect stderr" "stfix: inspect: $E[33mwarning$E[0m $E[1mS14$E[0m: fixtures/malformed/s14_nul_in_name.safetensors: InvalidTensorName:"
t_stderr_has "inspect stderr" "stfix: inspect: $E[36minfo$E[0m $E[1mS21$E[0m: "
t_run "fix verification" 1 "$STFIX" fix --color=always "$F/r25_conv_marker.safetensors" \
    -r tests/recipes/flatten-conv.yaml -o "$T_TMP/flat.safetensors"
t_stdout_has "fix verification" "    $E[1;31merror$E[0m   $E[1mR27$E[0m: Serialized kitchen_int8 layer 'blocks.0.conv'"

# A terminal: colour by default; not with NO_COLOR set and not empty, not
# with TERM=dumb, not with --color=never.
t_pty_all env -u NO_COLOR TERM=xterm "$STFIX" check "$r23"
t_true "terminal: exit 1" test "$T_RC" -eq 1
t_stdout_has "terminal" "  $red"
t_pty_all env NO_COLOR= TERM=xterm "$STFIX" check "$r23"
t_stdout_has "terminal, NO_COLOR empty" "  $red"
t_pty_all env NO_COLOR=1 TERM=xterm "$STFIX" check "$r23"
t_true "terminal, NO_COLOR=1: exit 1" test "$T_RC" -eq 1
t_plain "terminal, NO_COLOR=1"
t_stdout_has "terminal, NO_COLOR=1" "  error   R23: Serialized"
t_pty_all env -u NO_COLOR TERM=dumb "$STFIX" check "$r23"
t_plain "terminal, TERM=dumb"
t_pty_all env -u NO_COLOR TERM=xterm "$STFIX" check --color=never "$r23"
t_plain "terminal, --color=never"
t_pty_all env -u NO_COLOR TERM=xterm "$STFIX" inspect fixtures/malformed/s14_nul_in_name.safetensors
t_stdout_has "terminal, stderr" "stfix: inspect: $E[33mwarning$E[0m $E[1mS14$E[0m: "

# WHEN is auto, always or never; after "--" --color is an argument.
t_run "bad WHEN" 3 "$STFIX" check --color=sometimes "$r23"
t_stderr_is "bad WHEN" "stfix: check: --color takes auto, always or never, not 'sometimes'"
t_run "after --" 2 "$STFIX" inspect -- --color=always
t_stderr_is "after --" "stfix: inspect: --color=always: cannot open: No such file or directory"
