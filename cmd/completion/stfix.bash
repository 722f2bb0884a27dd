# bash completion for stfix(1); `make install` puts it where bash-completion
# looks (PREFIX/share/bash-completion/completions/stfix), or source it.
#
# Nothing here lists a command or an option: they are read from the
# program's own --help (stfix --help for the commands, stfix COMMAND --help
# for its options), which the same tables that parse the command line
# print, so the completion cannot fall behind them. Older spellings, which
# --help names only under the option they stand for, are not offered.
# Recipe names come from `stfix rules list`, parallel-style profiles from
# `stfix check --tp-profile list`.

# The words of the left column of a --help text read on stdin: the
# commands (no leading '-') or the long options ("--name").
_stfix_help_words()
{
    local line word
    while IFS= read -r line; do
        case $line in
        usage:* | "       stfix "*) continue ;;
        "  -"*)
            line=${line#  }
            for word in ${line%%  *}; do
                word=${word%,}
                word=${word%%\[*}
                case $word in --?*) printf '%s\n' "$word" ;; esac
            done
            ;;
        "  "[a-z]*)
            word=${line#  }
            printf '%s\n' "${word%% *}"
            ;;
        "") break ;;
        esac
    done
}

_stfix()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local stfix=${COMP_WORDS[0]} cmd="" i w
    COMPREPLY=()
    # The command: the first word after stfix that is not an option; for
    # rules, with its subcommand.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case $w in -*) continue ;; esac
        if [[ -z $cmd ]]; then
            cmd=$w
        elif [[ $cmd == rules ]]; then
            cmd="rules $w"
            break
        else
            break
        fi
    done
    case $prev in
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --quant-mode) COMPREPLY=($(compgen -W "cuda fp32 eager" -- "$cur")); return ;;
    --target)
        # A comma-separated list: complete its last item.
        local head=""
        [[ $cur == *,* ]] && head=${cur%,*},
        COMPREPLY=($(compgen -P "$head" -W "sglang comfyui all" -- "${cur##*,}"))
        return
        ;;
    -r | --recipe)
        COMPREPLY=($(compgen -W "$("$stfix" rules list 2>/dev/null | cut -d' ' -f1)" -- "$cur")
            $(compgen -f -- "$cur"))
        return
        ;;
    --tp-profile)
        COMPREPLY=($(compgen -W "list $("$stfix" check --tp-profile list 2>/dev/null |
            cut -d' ' -f1)" -- "$cur") $(compgen -f -- "$cur"))
        return
        ;;
    esac
    if [[ -z $cmd || ( $cmd == rules && $cur != -* ) ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$("$stfix" --help 2>/dev/null | _stfix_help_words |
                grep -e '^-')" -- "$cur"))
        elif [[ -z $cmd ]]; then
            COMPREPLY=($(compgen -W "$("$stfix" --help 2>/dev/null | _stfix_help_words |
                grep -v -e '^-') help version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$("$stfix" rules --help 2>/dev/null | _stfix_help_words |
                grep -v -e '^-')" -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        # shellcheck disable=SC2086
        COMPREPLY=($(compgen -W "$("$stfix" $cmd --help 2>/dev/null | _stfix_help_words |
            grep -e '^-')" -- "$cur"))
        [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == --color ]] && COMPREPLY=(--color=)
        [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
}
complete -F _stfix stfix
