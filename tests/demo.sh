#!/bin/sh
# The demo behind `make demo`: stfix on the bundled demo checkpoint
# (fixtures/demo/demo.safetensors, made by tests/gen/gen_demo.py).
#   sh tests/demo.sh /abs/path/to/stfix
# Later commands (check, fix) add their steps here.
set -e
STFIX=${1:?usage: sh tests/demo.sh /abs/path/to/stfix}
cd "$(dirname "$0")/.."
demo=fixtures/demo/demo.safetensors
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "== stfix inspect $demo"
"$STFIX" inspect "$demo"
echo
echo "== stfix rewrite $demo -o $tmp/demo.safetensors --max-shard-size 8KB"
"$STFIX" rewrite "$demo" -o "$tmp/demo.safetensors" --max-shard-size 8KB
echo
echo "== stfix rewrite (join the shards again) and compare with the original"
"$STFIX" rewrite "$tmp/demo.safetensors.index.json" -o "$tmp/joined.safetensors"
cmp "$demo" "$tmp/joined.safetensors" && echo "identical bytes: the demo file is canonical"
