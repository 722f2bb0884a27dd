#!/bin/sh
# stfix batch killed with SIGKILL at several moments, then run again with
# --resume: the outputs and the final report lines (seconds masked) are
# those of an uninterrupted run, and no temporary file is left. Also: a
# resume of a finished batch redoes nothing, and a changed input is redone.
. tests/cli/lib.sh
D=$T_TMP/resume
mkdir -p "$D/zoo/a" "$D/zoo/b"
GEN=$(pwd)/tests/gen/gen_bf16_ckpt.py
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
cp rules/quantize-int8-convrot.yaml "$D/recipe.yaml"
for i in 1 2 3; do
    python3 tests/gen/gen_bf16_ckpt.py "$D/zoo/a/m$i.safetensors" 8MiB 512 >/dev/null
    python3 tests/gen/gen_bf16_ckpt.py "$D/zoo/b/m$i.safetensors" 8MiB 256 >/dev/null
done
mask() { sed 's/"seconds":[0-9.]*/"seconds":S/' "$1"; }
cd "$D" || exit 1

"$S" batch -r recipe.yaml -o out -j 2 zoo 2>/dev/null
mask out/stfix-report.jsonl >ref.jsonl
mv out ref
t_true "reference: six lines" test "$(wc -l <ref.jsonl)" -eq 6

cut_short=0
for delay in 0.01 0.05 0.1 0.2 0.3 0.5 0.8; do
    rm -rf out
    "$S" batch -r recipe.yaml -o out -j 2 zoo 2>/dev/null &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ "$(cat out/stfix-report.jsonl 2>/dev/null | wc -l)" -lt 6 ] && cut_short=$((cut_short + 1))
    t_run "killed after ${delay}s, resumed" 0 "$S" batch -r recipe.yaml -o out -j 2 --resume zoo
    mask out/stfix-report.jsonl >got.jsonl
    t_true "killed after ${delay}s: same report lines" cmp -s got.jsonl ref.jsonl
    same=1
    for f in $(cd ref && find . -name '*.safetensors' | sort); do cmp -s "ref/$f" "out/$f" || same=0; done
    t_true "killed after ${delay}s: same outputs" test "$same" -eq 1
    t_true "killed after ${delay}s: same files" test "$(cd ref && find . | sort)" = "$(cd out && find . | sort)"
    t_no_temp "killed after ${delay}s: no temp" out/a
done

t_true "some kills cut a batch short" test "$cut_short" -ge 2

# A finished batch resumed: every line kept as it was, seconds included.
cp out/stfix-report.jsonl before.jsonl
t_run "resume a finished batch" 0 "$S" batch -r recipe.yaml -o out --resume zoo
t_stderr_has "resume a finished batch" "6 checkpoint(s), 6 already done (--resume)"
t_true "resume a finished batch: report unchanged" cmp -s before.jsonl out/stfix-report.jsonl

# A line a kill cut short (no newline) is dropped, its checkpoint kept.
head -c 100 out/stfix-report.jsonl >>out/stfix-report.jsonl
t_run "resume after a torn line" 0 "$S" batch -r recipe.yaml -o out --resume zoo
t_true "resume after a torn line: report as before" cmp -s before.jsonl out/stfix-report.jsonl

# A changed input is redone; the others are kept.
python3 "$GEN" zoo/b/m2.safetensors 8MiB 128 >/dev/null
t_run "resume after an input changed" 0 "$S" batch -r recipe.yaml -o out --resume zoo
t_stderr_has "resume after an input changed" "6 checkpoint(s), 5 already done (--resume)"
t_true "resume after an input changed: six lines" test "$(wc -l <out/stfix-report.jsonl)" -eq 6
t_true "resume after an input changed: new sha256" grep -qF "$(t_sha256 zoo/b/m2.safetensors)" out/stfix-report.jsonl
