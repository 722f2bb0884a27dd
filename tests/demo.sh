#!/bin/sh
# The demo behind `make demo`: stfix repairs the bundled broken demo
# checkpoint (fixtures/demo/demo.safetensors, made by tests/gen/gen_demo.py)
# for SGLang:
#   1. check --target sglang on the input: it fails (exit 1 is expected);
#   2. plan with rules/sglang-int8-convrot.yaml: what will change, per layer;
#   3. fix into a temporary directory (verified before it is published);
#   4. check --target sglang on the output: it must pass (exit 0).
# Exits 0 only if all of that held.
#   sh tests/demo.sh /abs/path/to/stfix
STFIX=${1:?usage: sh tests/demo.sh /abs/path/to/stfix}
cd "$(dirname "$0")/.." || exit 2
demo=fixtures/demo/demo.safetensors
recipe=rules/sglang-int8-convrot.yaml
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-demo.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
out="$tmp/demo-fixed.safetensors"

step() { printf '\n== %s\n' "$*"; }
die() { printf '\ndemo: FAILED: %s\n' "$*" >&2; exit 1; }

step "stfix check $demo --target sglang   (the input is broken: exit 1 expected)"
"$STFIX" check "$demo" --target sglang
rc=$?
[ "$rc" -eq 1 ] || die "check of the broken input exited $rc, expected 1"

step "stfix plan $demo -r $recipe"
"$STFIX" plan "$demo" -r "$recipe" || die "plan exited $?"

step "stfix fix $demo -r $recipe -o $out"
"$STFIX" fix "$demo" -r "$recipe" -o "$out" || die "fix exited $?"

step "stfix check $out --target sglang   (must pass)"
"$STFIX" check "$out" --target sglang || die "check of the repaired file exited $?"

printf '\ndemo: ok: the broken demo checkpoint fails check, and after stfix fix it passes\n'
