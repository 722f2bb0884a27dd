#!/bin/sh
# The option table of every command (cmd/cli_opts.c): -h/--help lists each
# option of the table, -V/--version prints the version, "--" ends the
# options (a file may start with '-'), an unknown option is a usage error
# (exit 3) naming the nearest valid one, a missing value names the option,
# and options and arguments may come in any order.
. tests/cli/lib.sh
F=fixtures/comfy
R=tests/recipes
D=$T_TMP
in=$F/r14_scale_bf16.safetensors
ok=$F/healthy_int8_g256.safetensors
version="stfix $(sed -n 's/^#define STF_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
    include/stfix/base.h | paste -sd.)"

# ------------------------------------------------------------- -V, --version
printf '%s\n' "$version" >"$D/version"
for c in "" inspect check rewrite plan fix rules "rules lint" "rules show" "rules list" diff explain \
    compress decompress; do
    for v in -V --version; do
        # shellcheck disable=SC2086
        t_run "stfix $c $v" 0 "$STFIX" $c $v
        t_stdout_is "stfix $c $v" "$D/version"
    done
done
# As people type them: stfix version, stfix help, stfix help COMMAND.
t_run "stfix version" 0 "$STFIX" version
t_stdout_is "stfix version" "$D/version"
t_run "stfix version x" 3 "$STFIX" version x
t_stderr_has "stfix version x" "stfix: version takes no arguments"
"$STFIX" --help >"$D/top_help"
t_run "stfix help" 0 "$STFIX" help
t_stdout_is "stfix help" "$D/top_help"
t_stdout_has "stfix help" "stfix <command> --help (or stfix help <command>) shows a command's"
"$STFIX" compress --help >"$D/compress_help0"
t_run "stfix help compress" 0 "$STFIX" help compress
t_stdout_is "stfix help compress" "$D/compress_help0"
t_run "stfix help chekc" 3 "$STFIX" help chekc
t_stderr_is "stfix help chekc" "stfix: unknown command 'chekc'; did you mean check?"
t_run "stfix help a b" 3 "$STFIX" help a b
t_stderr_has "stfix help a b" "stfix: help takes one command at most"
# Also after other options and arguments, as the first option that ends the run.
t_run "fix IN -r R -V" 0 "$STFIX" fix "$in" -r $R/cast-scale.yaml -V
t_stdout_is "fix IN -r R -V" "$D/version"

# ------------------------------------------------------------- -h, --help
# The option lines of a command's --help: every line that starts with
# "  -", i.e. the table's options, then -h, -V and --.
opt_lines() { "$STFIX" "$@" --help | grep -e '^  -'; }

# t_help_lists NAME "COMMAND" LINE...: the command's option lines are
# exactly LINE... (each line cut at its help text: the option, its
# metavar), in order.
t_help_lists() {
    _n=$1; _c=$2; shift 2
    # shellcheck disable=SC2086
    opt_lines $_c | awk '{ sub(/^  /, ""); sub(/  .*$/, ""); print "  " $0 }' >"$D/help_got"
    : >"$D/help_want"
    for _l in "$@"; do printf '  %s\n' "$_l" >>"$D/help_want"; done
    printf '  %s\n' "-h, --help" "-V, --version" "--color[=WHEN]" "-q, --quiet" "-v, --verbose" \
        "--no-progress" "--" >>"$D/help_want"
    if cmp -s "$D/help_got" "$D/help_want"; then t_ok "$_n: lists the table"
    else t_notok "$_n: lists the table" "$(diff "$D/help_want" "$D/help_got" | tr '\n' '|')"; fi
}

# The network options of the commands that read a checkpoint (stfix(1), INPUTS).
set -- "--hub-endpoint URL" "--header LINE" "--insecure" "--connect-timeout S" \
    "--stall-timeout S" "--retries N"
t_help_lists "inspect --help" inspect "--json" "--strict" "--hash" "$@"
t_help_lists "check --help" check "--target TARGET" "--numeric" "--hash" "-j, --jobs N" "--json" \
    "--tp T[,T...]" "--tp-profile NAME" "--net-jobs N" "$@"
t_help_lists "rewrite --help" rewrite "-o, --output OUT" "--max-shard-size SIZE" "--strict" \
    "--no-wait" "-j, --jobs N" "--max-spool SIZE" "--json" "--zstd[=LEVEL]" "--zstd-frame SIZE" \
    "--zstd-grouped" "--zstd-verify" "$@"
t_help_lists "plan --help" plan "-r, --recipe RECIPE" "--max-regex-steps N" "--quant-mode MODE" "-j, --jobs N" "--json" \
    "--tp-profile NAME" "$@"
t_help_lists "fix --help" fix "-r, --recipe RECIPE" "--max-regex-steps N" "-o, --output OUT" "--in-place" "-j, --jobs N" \
    "--quant-mode MODE" "--error-report" "--allow-noncompliant" "--max-shard-size SIZE" \
    "--max-mem SIZE" "--no-wait" "--fail-if-unchanged" "--json" "--tp-profile NAME" \
    "--max-spool SIZE" "--zstd[=LEVEL]" "--zstd-frame SIZE" "--zstd-grouped" "--zstd-verify" "$@"
t_help_lists "compress --help" compress "-o, --output OUT" "--zstd-grouped" "-l, --level N" \
    "--zstd-frame SIZE" "--zstd-verify" "-j, --jobs N" "-f, --force" "--no-wait" "--json"
t_help_lists "decompress --help" decompress "-o, --output OUT" "-f, --force" "--no-wait" "--json"
t_help_lists "rules list --help" "rules list" "--json"
t_help_lists "rules lint --help" "rules lint" "--json"
t_help_lists "rules show --help" "rules show" "--json"
t_help_lists "diff --help" diff "--numeric" "-j, --jobs N" "--max-mem SIZE" "--json" "$@"
t_help_lists "explain --help" explain "--list" "--json"
t_help_lists "stfix --help" ""

# -h is --help, in every command; the whole text of one, exactly.
for c in "" inspect check rewrite plan fix rules "rules lint" "rules show" "rules list" diff explain \
    compress decompress; do
    # shellcheck disable=SC2086
    "$STFIX" $c --help >"$D/long_help"
    # shellcheck disable=SC2086
    t_run "stfix $c -h" 0 "$STFIX" $c -h
    t_stdout_is "stfix $c -h" "$D/long_help"
    if awk 'length > 80 { exit 1 }' "$D/long_help"; then t_ok "stfix $c --help: 80 columns"
    else t_notok "stfix $c --help: 80 columns" "$(awk 'length > 80' "$D/long_help")"; fi
done
"$STFIX" --help | sed -n '/^Exit status:$/,$p' >"$D/exit_lines"
cat >"$D/inspect_help" <<'EOF'
usage: stfix inspect FILE|INDEX.json [--json] [--strict] [--hash]
  FILE|INDEX.json      a .safetensors file or a *.safetensors.index.json
  --json               one JSON document (schema in stfix(1)) instead of
                       the listing
  --strict             treat stfix's stricter-than-reference rules as errors
  --hash               read a file whose metadata holds modelspec.hash_sha256
                       and compare it with the data (S29)
  --hub-endpoint URL   where hf:// names resolve (default $HF_ENDPOINT,
                       else https://huggingface.co)
  --header LINE        send LINE ('Name: value') with each request to the
                       host of a URL input, never after a redirect to another
  --insecure           do not verify the TLS certificates of https:// inputs
  --connect-timeout S  give up connecting after S seconds (default 30)
  --stall-timeout S    fail a transfer that receives nothing for S seconds
                       (default 60)
  --retries N          retry a failed connection, 429 or 5xx N times
                       (default 4)
  -h, --help           show this help and exit
  -V, --version        print "stfix VERSION" and exit
  --color[=WHEN]       colour severities in human text: auto (the default:
                       on a terminal, unless NO_COLOR is set), always, never
  -q, --quiet          errors only on stderr: no warnings, notes or progress
  -v, --verbose        more detail on stderr (files read, sizes)
  --no-progress        no progress line (shown only when stderr is a
                       terminal)
  --                   end of the options: what follows is an argument,
                       also when it starts with '-'

EOF
cat "$D/exit_lines" >>"$D/inspect_help"
t_run "inspect -h" 0 "$STFIX" inspect -h
t_stdout_is "inspect -h" "$D/inspect_help"

# ------------------------------------------------------------- unknown options
# t_unknown NAME "STDERR" COMMAND...: exit 3, and stderr's first line.
t_unknown() {
    _n=$1; _e=$2; shift 2
    t_run "$_n" 3 "$@"
    if [ "$(head -n 1 "$T_ERR")" = "$_e" ]; then t_ok "$_n: message"
    else t_notok "$_n: message" "got: $(head -n 1 "$T_ERR")"; fi
}
t_unknown "inspect --jsn" "stfix: inspect: unknown option '--jsn'; did you mean --json?" \
    "$STFIX" inspect --jsn "$in"
t_unknown "inspect --stric" "stfix: inspect: unknown option '--stric'; did you mean --strict?" \
    "$STFIX" inspect "$in" --stric
t_unknown "check --numerc" "stfix: check: unknown option '--numerc'; did you mean --numeric?" \
    "$STFIX" check --numerc "$in"
t_unknown "check --traget" "stfix: check: unknown option '--traget'; did you mean --target?" \
    "$STFIX" check "$in" --traget=all
t_unknown "rewrite --no-wiat" "stfix: rewrite: unknown option '--no-wiat'; did you mean --no-wait?" \
    "$STFIX" rewrite "$in" -o "$D/x.safetensors" --no-wiat
t_unknown "rewrite -O" "stfix: rewrite: unknown option '-O'; did you mean -o?" \
    "$STFIX" rewrite "$in" -O "$D/x.safetensors"
t_unknown "plan --recipie" "stfix: plan: unknown option '--recipie'; did you mean --recipe?" \
    "$STFIX" plan "$in" --recipie $R/cast-scale.yaml
t_unknown "inspect -json" "stfix: inspect: unknown option '-j' (in '-json'); did you mean --json?" \
    "$STFIX" inspect "$in" -json
# Where -j is --jobs (check, plan, fix), -json is -j with the value "son".
t_unknown "plan -json" "stfix: plan: --jobs takes a number from 1 to 1024, not 'son'" \
    "$STFIX" plan "$in" -r $R/cast-scale.yaml -json
t_unknown "fix --quantmode" "stfix: fix: unknown option '--quantmode'; did you mean --quant-mode?" \
    "$STFIX" fix "$in" -r $R/cast-scale.yaml -o "$D/x.safetensors" --quantmode fp32
t_unknown "fix --fail-if-unchanges" \
    "stfix: fix: unknown option '--fail-if-unchanges'; did you mean --fail-if-unchanged?" \
    "$STFIX" fix "$in" -r $R/cast-scale.yaml -o "$D/x.safetensors" --fail-if-unchanges
t_unknown "rules list --jsno" "stfix: rules: unknown option '--jsno'; did you mean --json?" \
    "$STFIX" rules list --jsno
t_unknown "rules lint --strict" "stfix: rules: unknown option '--strict'" \
    "$STFIX" rules lint --strict $R/cast-scale.yaml
t_unknown "stfix --verison" "stfix: unknown option '--verison'; did you mean --version?" \
    "$STFIX" --verison
t_unknown "stfix chekc" "stfix: unknown command 'chekc'; did you mean check?" "$STFIX" chekc "$in"
# No abbreviations: a beginning of a name is unknown, and the name suggested.
t_unknown "check --num" "stfix: check: unknown option '--num'; did you mean --numeric?" \
    "$STFIX" check --num "$in"
t_unknown "fix --out" "stfix: fix: unknown option '--out'; did you mean --output?" \
    "$STFIX" fix "$in" -r $R/cast-scale.yaml --out "$D/x.safetensors"
t_absent "no output on usage errors" "$D/x.safetensors"
# Nothing near: the message, then the usage on stderr.
t_unknown "inspect --frobnicate" "stfix: inspect: unknown option '--frobnicate'" \
    "$STFIX" inspect --frobnicate "$in"
t_stderr_has "inspect --frobnicate" "usage: stfix inspect FILE|INDEX.json [--json] [--strict] [--hash]"
# With --json, the usage error is the JSON error document, suggestion included.
t_run "fix --json --jsn" 3 "$STFIX" fix "$in" --jsn --json
t_true "fix --json --jsn: JSON error" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
want = {"file": sys.argv[2], "command": "fix", "exit": 3,
        "error": {"rule": None, "offset": None, "code": None,
                  "message": "unknown option '"'"'--jsn'"'"'; did you mean --json?"}}
assert d == want, d' "$T_OUT" "$in"

# ------------------------------------------------------------- values
t_run "plan -r" 3 "$STFIX" plan "$in" -r
t_stderr_is "plan -r" "stfix: plan: option '-r' needs a value (RECIPE)"
t_run "fix --recipe" 3 "$STFIX" fix "$in" -o "$D/x.safetensors" --recipe
t_stderr_is "fix --recipe" "stfix: fix: option '--recipe' needs a value (RECIPE)"
t_run "rewrite -o" 3 "$STFIX" rewrite "$in" -o
t_stderr_is "rewrite -o" "stfix: rewrite: option '-o' needs a value (OUT)"
t_run "check --target" 3 "$STFIX" check "$in" --target
t_stderr_is "check --target" "stfix: check: option '--target' needs a value (TARGET)"
t_run "fix --max-mem" 3 "$STFIX" fix "$in" -r $R/cast-scale.yaml -o "$D/x.safetensors" --max-mem
t_stderr_is "fix --max-mem" "stfix: fix: option '--max-mem' needs a value (SIZE)"
t_run "inspect --json=yes" 3 "$STFIX" inspect --json=yes "$in"
t_stderr_is "inspect --json=yes" "stfix: inspect: option '--json' takes no value"
t_run "fix -j 0" 3 "$STFIX" fix "$in" -r $R/cast-scale.yaml -o "$D/x.safetensors" -j 0
t_stderr_is "fix -j 0" "stfix: fix: --jobs takes a number from 1 to 1024, not '0'"
t_run "fix --max-mem 0" 3 "$STFIX" fix "$in" -r $R/cast-scale.yaml -o "$D/x.safetensors" --max-mem 0
t_stderr_is "fix --max-mem 0" "stfix: fix: --max-mem: '0' is too small (the least is 1)"
t_absent "no output on value errors" "$D/x.safetensors"

# ------------------------------------------------------------- one vocabulary
# compress spells its options as rewrite, fix and batch do (--zstd-grouped,
# --zstd-frame, --zstd-verify); batch's mode is --verify-report. The older
# spellings still work, give the same bytes, and --help names each under
# the option it stands for.
"$STFIX" compress --help >"$D/compress_help"
for old in grouped frame verify; do
    t_true "compress --help names --$old" grep -qx "  *(older spelling: --$old)" "$D/compress_help"
done
"$STFIX" batch --help >"$D/batch_help"
t_true "batch --help: --verify-report" grep -q "^  --verify-report REPORT  *re-verify every" \
    "$D/batch_help"
t_true "batch --help names --verify" grep -qx "  *(older spelling: --verify)" "$D/batch_help"
cp "$ok" "$D/v.safetensors"
t_run "compress, new spellings" 0 "$STFIX" compress "$D/v.safetensors" -o "$D/new.stz" \
    --zstd-grouped --zstd-frame 1KiB --zstd-verify -l 5
t_run "compress, old spellings" 0 "$STFIX" compress "$D/v.safetensors" -o "$D/old.stz" \
    --grouped --frame=1KiB --verify --level 5
t_true "compress: the same bytes either way" cmp "$D/new.stz" "$D/old.stz"
t_run "compress --zstd-frame 1000" 3 "$STFIX" compress "$D/v.safetensors" --zstd-frame 1000
t_stderr_is "compress --zstd-frame 1000" \
    "stfix: compress: --zstd-frame: '1000' is too small (the least is 1024)"
# An older spelling is named as it was typed.
t_run "compress --frame 1000" 3 "$STFIX" compress "$D/v.safetensors" --frame 1000
t_stderr_is "compress --frame 1000" "stfix: compress: --frame: '1000' is too small (the least is 1024)"
t_run "compress --verify=1" 3 "$STFIX" compress "$D/v.safetensors" --verify=1
t_stderr_is "compress --verify=1" "stfix: compress: option '--verify' takes no value"
t_unknown "compress --group" "stfix: compress: unknown option '--group'; did you mean --grouped?" \
    "$STFIX" compress "$D/v.safetensors" --group
t_absent "no .zst on usage errors" "$D/v.safetensors.zst"
for v in --verify-report --verify; do
    t_run "batch $v REPORT FILE" 3 "$STFIX" batch $v "$D/r.jsonl" "$ok"
    t_stderr_has "batch $v REPORT FILE" "stfix: batch: --verify-report takes no inputs and no -o"
    t_run "batch $v, no report" 2 "$STFIX" batch $v "$D/none.jsonl"
    t_stderr_has "batch $v, no report" "$D/none.jsonl"
done

# ------------------------------------------------------------- sizes
# A size as people type it: any case, a decimal fraction taken exactly,
# K/M/G alone as powers of 1024 (stfix(1), Sizes).
mkdir "$D/ref"
"$STFIX" rewrite "$in" -o "$D/ref/s.safetensors" --max-shard-size 1536 >/dev/null
for sz in 1.5KiB 1.5kib 1.5Ki 1.5K 1.5k 1.536KB 1.536kb 0.00146484375mib 1536B 1536.9; do
    rm -rf "$D/sz" && mkdir "$D/sz"
    t_run "rewrite --max-shard-size $sz" 0 "$STFIX" rewrite "$in" -o "$D/sz/s.safetensors" \
        --max-shard-size "$sz"
    t_true "--max-shard-size $sz: as 1536" diff -r "$D/ref" "$D/sz"
done
for sz in "5 GB" " 5GB" 5GBs .5G 5. -1 1e9 5XB 5gig; do
    t_run "--max-shard-size '$sz'" 3 "$STFIX" rewrite "$in" -o "$D/x.safetensors" \
        --max-shard-size "$sz"
    t_stderr_is "--max-shard-size '$sz'" \
        "stfix: rewrite: --max-shard-size: '$sz' is not a size (e.g. 5GB, 1.5GiB, 512MiB, 5G)"
done
for sz in 18446744073709551616 16EiB 18.446744073709551616EB 17179869184G; do
    t_run "--max-shard-size $sz" 3 "$STFIX" rewrite "$in" -o "$D/x.safetensors" \
        --max-shard-size "$sz"
    t_stderr_is "--max-shard-size $sz" \
        "stfix: rewrite: --max-shard-size: '$sz' is too large (the most is 18446744073709551615 bytes)"
done
t_run "--max-mem 0.5B" 3 "$STFIX" fix "$in" -r $R/cast-scale.yaml -o "$D/x.safetensors" \
    --max-mem 0.5B
t_stderr_is "--max-mem 0.5B" "stfix: fix: --max-mem: '0.5B' is too small (the least is 1)"
t_absent "no output on size errors" "$D/x.safetensors"
"$STFIX" rewrite --help >"$D/rewrite_help"
t_true "rewrite --help: the units" grep -qx "case: KB MB GB TB (powers of 1000), KiB MiB GiB TiB or K M G T (powers" \
    "$D/rewrite_help"
t_true "inspect --help: no SIZE, no units" sh -c "! grep -q '^SIZE:' $D/inspect_help"

# ------------------------------------------------------------- "--"
# Files whose names start with '-': an unknown option before "--", an
# input after it.
mkdir -p "$D/dash"
cp "$ok" "$D/dash/-x.safetensors"
cp $R/cast-scale.yaml "$D/dash/-r.yaml"
(
    cd "$D/dash" || exit 1
    t_unknown "inspect -x.safetensors" \
        "stfix: inspect: unknown option '-x' (in '-x.safetensors')" "$STFIX" inspect -x.safetensors
    t_run "inspect -- -x.safetensors" 0 "$STFIX" inspect -- -x.safetensors
    t_stdout_has "inspect -- -x.safetensors" "file: -x.safetensors (header "
    t_run "check --json -- -x.safetensors" 0 "$STFIX" check --json -- -x.safetensors
    t_stdout_has "check --json -- -x.safetensors" '{"file": "-x.safetensors", "target": "all"'
    t_run "rewrite -o OUT -- -x.safetensors" 0 "$STFIX" rewrite -o rw.safetensors -- -x.safetensors
    t_true "rewrite -- -x.safetensors: same bytes" cmp rw.safetensors -- -x.safetensors
    t_run "plan -r R -- -x.safetensors" 0 "$STFIX" plan --json -r ./-r.yaml -- -x.safetensors
    t_stdout_has "plan -r R -- -x.safetensors" '{"file": "-x.safetensors", "recipe": "./-r.yaml"'
    t_run "fix -r R -o OUT -- -x.safetensors" 0 "$STFIX" fix -r ./-r.yaml -o fx.safetensors \
        -- -x.safetensors
    t_true "fix -- -x.safetensors: output" test -s fx.safetensors
    t_run "rules lint -- -r.yaml" 0 "$STFIX" rules lint -- -r.yaml
    printf '%s\n' "-r.yaml: ok (1 rule)" >want_lint
    t_stdout_is "rules lint -- -r.yaml" want_lint
    # "--" after every option: what follows is only arguments.
    t_run "check -- FILE --json" 2 "$STFIX" check -- -x.safetensors --json
    t_stderr_is "check -- FILE --json" "stfix: check: --json: cannot open: No such file or directory"
)

# ------------------------------------------------------------- order
# Options before, between or after the arguments: the same run.
"$STFIX" inspect --json "$in" >"$D/before"
t_run "inspect FILE --json" 0 "$STFIX" inspect "$in" --json
t_stdout_is "inspect FILE --json" "$D/before"
"$STFIX" check --target sglang "$ok" "$in" >"$D/check_before"
t_run "check FILE --target=sglang FILE" 1 "$STFIX" check "$ok" --target=sglang "$in"
t_stdout_is "check FILE --target=sglang FILE" "$D/check_before"
