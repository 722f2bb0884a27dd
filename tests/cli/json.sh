#!/bin/sh
# The --json documents of the commands that write files and of rules
# (stfix(1), JSON OUTPUT), byte for byte against tests/cli/expected/json-*
# (the scratch directory shown as D), and one JSON document on stdout on
# every exit of every command, usage errors included.
. tests/cli/lib.sh
F=fixtures/comfy
R=tests/recipes
D=$T_TMP
E=tests/cli/expected
ok=$F/r14_scale_bf16.safetensors
sh_in=$F/healthy_sharded.safetensors.index.json

# stdout of the last t_run, with $D shown as D, is FILE byte for byte. A
# compressed file's size depends on the zstd library: FILE writes it as
# @D/PATH@, and a total that holds such sizes as @N+D/PATH+...@ (N the
# other sizes together); both stand for the sizes of the files at hand.
t_doc_is() {
    sed "s|$D|D|g" "$T_OUT" >"$D/doc"
    python3 - "$2" "$D" >"$D/want" <<'PY'
import os, re, sys
text = open(sys.argv[1]).read()
def size(term):
    p = sys.argv[2] + term[1:]
    return int(term) if term.isdigit() else os.stat(p).st_size if os.path.exists(p) else -1
print(re.sub(r"@([^@]+)@", lambda m: str(sum(size(t) for t in m.group(1).split("+"))), text), end="")
PY
    if cmp -s "$D/doc" "$D/want"; then t_ok "$1: document"
    else t_notok "$1: document" "differs from $2:"; diff "$D/want" "$D/doc" | head -20 | sed 's/^/#   /'; fi
}

# stdout of the last t_run is exactly one JSON document.
t_one_doc() {
    if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T_OUT" 2>/dev/null
    then t_ok "$1: one JSON document"
    else t_notok "$1: one JSON document" "$(head -c 300 "$T_OUT")"; fi
}

# ------------------------------------------------------------- rewrite
t_run "rewrite --json" 0 "$STFIX" rewrite "$ok" -o "$D/rw.safetensors" --json
t_doc_is "rewrite --json" $E/json-rewrite.json
t_run "rewrite --json sharded" 0 "$STFIX" rewrite --json "$sh_in" -o "$D/rs.safetensors" --max-shard-size 1KB
t_doc_is "rewrite --json sharded" $E/json-rewrite-sharded.json
t_run "rewrite --json grouped" 0 "$STFIX" rewrite --json "$sh_in" -o "$D/rg.safetensors" --zstd-grouped --zstd-verify --max-shard-size 1KB
t_doc_is "rewrite --json grouped" $E/json-rewrite-grouped.json

# ------------------------------------------------------------- compress, decompress
t_run "compress --json" 0 "$STFIX" compress --json "$ok" -o "$D/c.safetensors.zst"
t_doc_is "compress --json" $E/json-compress.json
t_run "decompress --json" 0 "$STFIX" decompress --json "$D/c.safetensors.zst"
t_doc_is "decompress --json" $E/json-decompress.json
t_run "compress --json index" 0 "$STFIX" compress --json "$sh_in" -o "$D/ci.safetensors.index.json" --grouped
t_doc_is "compress --json index" $E/json-compress-index.json
mkdir -p "$D/back"
t_run "decompress --json index" 0 "$STFIX" decompress "$D/ci.safetensors.index.json" -o "$D/back/m.safetensors.index.json" --json
t_doc_is "decompress --json index" $E/json-decompress-index.json

# ------------------------------------------------------------- rules
mkdir -p "$D/adir"
t_run "rules lint --json" 4 "$STFIX" rules lint --json rules/repair-scales.yaml $R/broken.yaml "$D/none.yaml" "$D/adir"
t_doc_is "rules lint --json" $E/json-rules-lint.json
t_stderr_has "rules lint --json" "tests/recipes/broken.yaml:6:13: rules[0].match: unknown key 'dtyp'"
t_run "rules lint --json valid" 0 "$STFIX" rules lint $R/cast-scale.yaml --json
t_one_doc "rules lint --json valid"
t_run "rules show --json" 0 "$STFIX" rules show --json $R/cast-scale.yaml
t_doc_is "rules show --json" $E/json-rules-show.json

# ------------------------------------------------------------- batch
mkdir -p "$D/zoo"
cp "$ok" $F/healthy_int8_g256.safetensors fixtures/malformed/s05_not_json.safetensors "$D/zoo/"
t_run "batch --json" 1 "$STFIX" batch --json -r $R/cast-scale.yaml -o "$D/out" "$D/zoo"
t_doc_is "batch --json" $E/json-batch.json
t_true "batch --json: the report is still written" test -s "$D/out/stfix-report.jsonl"
t_run "batch --json --dry-run" 3 "$STFIX" batch --json --dry-run -r $R/cast-scale.yaml "$D/zoo"
t_doc_is "batch --json --dry-run" $E/json-batch-dry-run.json

# ------------------------------------------------------------- every exit
# Each command that takes --json prints one document however it ends: a
# bad option, no argument at all, an input that cannot be read.
for c in inspect check rewrite plan fix diff batch verify explain compress decompress; do
    t_run "$c --json --bogus" 3 "$STFIX" $c --json --bogus
    t_one_doc "$c --json --bogus"
    t_run "$c --json, no arguments" 3 "$STFIX" $c --json
    t_one_doc "$c --json, no arguments"
done
for s in list lint show; do
    t_run "rules $s --json --bogus" 3 "$STFIX" rules $s --json --bogus
    t_one_doc "rules $s --json --bogus"
done
t_run "rules list --json --bogus: the error" 3 "$STFIX" rules list --json --bogus
t_stdout_is "rules list --json --bogus: the error" $E/json-rules-list-bogus.json
t_run "rewrite --json unreadable" 4 "$STFIX" rewrite --json "$D/adir" -o "$D/x.safetensors"
t_one_doc "rewrite --json unreadable"
t_run "compress --json missing" 2 "$STFIX" compress --json "$D/none.safetensors"
t_one_doc "compress --json missing"
t_run "decompress --json missing" 2 "$STFIX" decompress --json "$D/none.safetensors.zst"
t_one_doc "decompress --json missing"
t_run "rules show --json missing" 2 "$STFIX" rules show --json "$D/none.yaml"
t_one_doc "rules show --json missing"
t_run "batch --json missing input" 2 "$STFIX" batch --json -r $R/cast-scale.yaml -o "$D/o2" "$D/none"
t_one_doc "batch --json missing input"
