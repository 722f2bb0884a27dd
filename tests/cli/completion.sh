#!/bin/sh
# Shell completion (cmd/completion/stfix.bash and _stfix): the commands and
# each command's options are read from the program's --help, so they are
# exactly what the option tables parse: every command of stfix --help and
# every long option in the left column of its --help, in order, the older
# spellings (named under an option, never in the column) left out. Values:
# --color, --target (a list, completed item by item), --quant-mode, the
# recipes of `rules list` for -r, the profiles for --tp-profile. A stand-in
# program with another --help gets its own options: nothing is listed in
# the files. zsh's is run with stand-ins for its completion builtins.
. tests/cli/lib.sh
D=$T_TMP
BASH_COMP=cmd/completion/stfix.bash
ZSH_COMP=cmd/completion/_stfix

# bcomp PROGRAM WORD...: bash's completion of the last WORD, one a line.
bcomp() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _stfix
        [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' bcomp "$BASH_COMP" "$@"
}
# The long options of a --help text on stdin, as the table prints them.
help_opts() {
    awk '/^  -/ { sub(/^  /, ""); sub(/  .*/, ""); n = split($0, w, /[ ,]+/)
                  for (i = 1; i <= n; i++) if (w[i] ~ /^--./) { sub(/\[.*/, "", w[i]); print w[i] } }'
}
# The commands of a --help text on stdin.
help_cmds() {
    awk '/^usage:/ || /^       stfix / { next } /^$/ { exit } /^  [a-z]/ { print $1 }'
}

"$STFIX" --help | help_cmds >"$D/cmds"
t_true "stfix --help lists commands" test "$(wc -l <"$D/cmds")" -ge 12
{ cat "$D/cmds"; echo help; echo version; } >"$D/want"
t_run "bash: commands" 0 bcomp "$STFIX" ""
t_stdout_is "bash: commands" "$D/want"
t_run "bash: ch" 0 bcomp "$STFIX" ch
printf 'check\n' >"$D/want"
t_stdout_is "bash: ch" "$D/want"
"$STFIX" --help | help_opts >"$D/want"
t_run "bash: stfix --" 0 bcomp "$STFIX" --
t_stdout_is "bash: stfix --" "$D/want"

# Every command's options, and rules' subcommands and theirs.
for c in $(cat "$D/cmds") "rules lint" "rules show" "rules list"; do
    # shellcheck disable=SC2086
    "$STFIX" $c --help | help_opts >"$D/want"
    t_true "$c --help has options" test -s "$D/want"
    # shellcheck disable=SC2086
    t_run "bash: $c --" 0 bcomp "$STFIX" $c --
    t_stdout_is "bash: $c --" "$D/want"
done
"$STFIX" rules --help | help_cmds >"$D/want"
t_run "bash: rules" 0 bcomp "$STFIX" rules ""
t_stdout_is "bash: rules" "$D/want"
t_true "rules has lint, show, list" test "$(tr '\n' ' ' <"$D/want")" = "lint show list "

# The vocabulary: new names offered, older spellings not.
t_run "bash: compress --zstd-" 0 bcomp "$STFIX" compress in --zstd-
printf '%s\n' --zstd-grouped --zstd-frame --zstd-verify >"$D/want"
t_stdout_is "bash: compress --zstd-" "$D/want"
t_run "bash: compress --gro" 0 bcomp "$STFIX" compress in --gro
t_stdout_is "bash: compress --gro" /dev/null
t_run "bash: batch --verify" 0 bcomp "$STFIX" batch --verify
printf '%s\n' --verify-report >"$D/want"
t_stdout_is "bash: batch --verify" "$D/want"
# Options before the command do not hide it.
t_run "bash: -q check --nu" 0 bcomp "$STFIX" -q check --nu
printf '%s\n' --numeric >"$D/want"
t_stdout_is "bash: -q check --nu" "$D/want"

# Values.
t_run "bash: --color" 0 bcomp "$STFIX" check --color ""
printf '%s\n' auto always never >"$D/want"
t_stdout_is "bash: --color" "$D/want"
t_run "bash: --quant-mode" 0 bcomp "$STFIX" fix in --quant-mode f
printf '%s\n' fp32 >"$D/want"
t_stdout_is "bash: --quant-mode" "$D/want"
t_run "bash: --target" 0 bcomp "$STFIX" check --target ""
printf '%s\n' sglang comfyui all >"$D/want"
t_stdout_is "bash: --target" "$D/want"
t_run "bash: --target sglang,c" 0 bcomp "$STFIX" check --target sglang,c
printf '%s\n' sglang,comfyui >"$D/want"
t_stdout_is "bash: --target sglang,c" "$D/want"
t_run "bash: -r" 0 bcomp "$STFIX" fix in -r ""
"$STFIX" rules list | cut -d' ' -f1 >"$D/recipes"
t_true "rules list has repair-scales" grep -qx repair-scales "$D/recipes"
for r in $(cat "$D/recipes"); do t_true "bash: -r offers $r" grep -qx "$r" "$T_OUT"; done
t_run "bash: --tp-profile" 0 bcomp "$STFIX" check --tp 8 --tp-profile ""
t_stdout_has "bash: --tp-profile" "list"
"$STFIX" check --tp-profile list | cut -d' ' -f1 >"$D/profiles"
for p in $(cat "$D/profiles"); do t_stdout_has "bash: --tp-profile $p" "$p"; done
# Files after a command.
: >"$D/only-one.safetensors"
t_run "bash: a file" 0 bcomp "$STFIX" check "$D/only-one"
printf '%s\n' "$D/only-one.safetensors" >"$D/want"
t_stdout_is "bash: a file" "$D/want"

# A stand-in program whose --help is another: its options are offered.
cat >"$D/fake" <<'SH'
#!/bin/sh
case "$1 $2" in
"--help ") printf 'usage: stfix <command>\n  frob        frobnicate\n  -h, --help  help\n\nmore\n' ;;
"frob --help") printf 'usage: stfix frob X\n  X           a thing\n  -z, --zap N  zap\n  --zing[=W]  zing\n                  (older spelling: --zong)\n  --          end\n\n  --not-this  after the table\n' ;;
esac
SH
chmod +x "$D/fake"
t_run "bash: stand-in commands" 0 bcomp "$D/fake" ""
printf '%s\n' frob help version >"$D/want"
t_stdout_is "bash: stand-in commands" "$D/want"
t_run "bash: stand-in options" 0 bcomp "$D/fake" frob --
printf '%s\n' --zap --zing >"$D/want"
t_stdout_is "bash: stand-in options" "$D/want"

# zsh, where it is installed: the same lists through _describe and compadd.
if command -v zsh >/dev/null 2>&1; then
    t_run "zsh: syntax" 0 zsh -n "$ZSH_COMP"
    # zcomp PROGRAM WORD...: what _stfix offers for the last WORD (the
    # words of _describe's "word:description" pairs, compadd's words).
    zcomp() {
        zsh -c 'compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
            _describe() { print -rl -- ${${(P)4}%%:*} }
            _files() { print -r -- "(files)" }
            _call_program() { shift; "$@" }
            _sequence() { shift; [[ $1 == - ]] && shift; print -rl -- "$@" }
            f=$1; shift; words=("$@"); CURRENT=$#; PREFIX=$words[-1]; . $f' zcomp "$ZSH_COMP" "$@"
    }
    { cat "$D/cmds"; echo help; echo version; } >"$D/want"
    t_run "zsh: commands" 0 zcomp "$STFIX" ""
    t_stdout_is "zsh: commands" "$D/want"
    for c in $(cat "$D/cmds") "rules list"; do
        # shellcheck disable=SC2086
        "$STFIX" $c --help | help_opts >"$D/want"
        # shellcheck disable=SC2086
        t_run "zsh: $c --" 0 zcomp "$STFIX" $c --
        t_stdout_is "zsh: $c --" "$D/want"
    done
    t_run "zsh: commands have their summaries" 0 zsh -c '
        _describe() { print -rl -- ${(P)4} }; compadd() { : }; _files() { : }
        _call_program() { shift; "$@" }; words=("$1" ""); CURRENT=2; PREFIX=""; . "$2"' \
        zcomp "$STFIX" "$ZSH_COMP"
    t_stdout_has "zsh: commands have their summaries" "check:validate against the SGLang/ComfyUI acceptance rules"
    t_run "zsh: --target" 0 zcomp "$STFIX" check --target ""
    printf '%s\n' sglang comfyui all >"$D/want"
    t_stdout_is "zsh: --target" "$D/want"
    t_run "zsh: stand-in options" 0 zcomp "$D/fake" frob --
    printf '%s\n' --zap --zing >"$D/want"
    t_stdout_is "zsh: stand-in options" "$D/want"
else
    t_ok "zsh: not installed, its completion not run"
fi
