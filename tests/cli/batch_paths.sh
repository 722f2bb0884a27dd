#!/bin/sh
# stfix batch judges every path it would write before any work, as the
# output guard does for fix: the report (never an input however spelt, an
# output, a FIFO, a device or a directory, never appended through a link),
# each output (inside OUTDIR unless --allow-outside-outdir, never an input
# of the batch, never a special file) and OUTDIR against the input trees.
# A refusal of the command line is exit 3, before anything is written; a
# refused manifest line is a failed line naming the manifest line and the
# path, and the batch ends with exit 3. The exact messages are asserted.
. tests/cli/lib.sh
D=$T_TMP/batch_paths
mkdir -p "$D/zoo"
S=$(cd "$(dirname "$STFIX")" && pwd)/$(basename "$STFIX")
F=$(pwd)/fixtures/comfy
cp rules/repair-scales.yaml "$D/recipe.yaml"
cp "$F/r15_flat_scale_square.safetensors" "$D/zoo/broken.safetensors"
cp "$F/healthy_int8_g64.safetensors" "$D/zoo/healthy.safetensors"
cd "$D" || exit 1
R=$(pwd -P)
IN_SHA=$(t_sha256 zoo/broken.safetensors)
guard="stfix only replaces regular files: choose another output path"

# --report naming an input, directly, through ".." and through a link:
# refused before any work, the input untouched, nothing made.
t_run "report is an input" 3 "$S" batch -r recipe.yaml -o out --report zoo/broken.safetensors zoo
t_stderr_is "report is an input" "stfix: batch: the report: zoo/broken.safetensors: the output would overwrite the input file 'zoo/broken.safetensors'; choose another output path"
t_true "report is an input: input untouched" test "$(t_sha256 zoo/broken.safetensors)" = "$IN_SHA"
t_absent "report is an input: no OUTDIR" out
t_run "report is an input, through .." 3 "$S" batch -r recipe.yaml -o out \
    --report zoo/../zoo/broken.safetensors zoo
t_stderr_has "report is an input, through .." "the output would overwrite the input file 'zoo/broken.safetensors'"
ln -s zoo/broken.safetensors link.safetensors
t_run "report is an input, through a link" 3 "$S" batch -r recipe.yaml -o out \
    --report link.safetensors zoo
t_stderr_has "report is an input, through a link" "link.safetensors: the output would overwrite the input file 'zoo/broken.safetensors'"
t_true "report is an input: still untouched" test "$(t_sha256 zoo/broken.safetensors)" = "$IN_SHA"

# --report naming an output of the batch.
t_run "report is an output" 3 "$S" batch -r recipe.yaml -o out --report out/broken.safetensors zoo
t_stderr_is "report is an output" "stfix: batch: out/broken.safetensors: the report would replace '$R/out/broken.safetensors', an output of 'zoo/broken.safetensors'; choose another report path"
t_absent "report is an output: nothing written" out

# Special files: a FIFO would block the batch, /dev/null cannot be renamed
# over, a directory is no report.
mkfifo fifo
mkdir adir
t_run "report is a FIFO" 3 t_capped "$S" batch -r recipe.yaml -o out --report fifo zoo
t_stderr_is "report is a FIFO" "stfix: batch: the report: fifo: the output path exists and is a FIFO; $guard"
t_run "report is /dev/null" 3 t_capped "$S" batch -r recipe.yaml -o out --report /dev/null zoo
t_stderr_is "report is /dev/null" "stfix: batch: the report: /dev/null: the output path exists and is a character device; $guard"
t_run "report is a directory" 3 "$S" batch -r recipe.yaml -o out --report adir zoo
t_stderr_is "report is a directory" "stfix: batch: the report: adir: the output path exists and is a directory; $guard"
t_absent "special reports: nothing written" out

# A link at the report path is replaced, never written through.
echo "not a report" >target.txt
ln -s target.txt rep.jsonl
t_run "report is a link" 0 "$S" batch -r recipe.yaml -o out --report rep.jsonl zoo/healthy.safetensors
t_true "report is a link: its target untouched" test "$(cat target.txt)" = "not a report"
t_true "report is a link: replaced by the report" sh -c 'test ! -L rep.jsonl && grep -q "\"status\":\"compliant\"" rep.jsonl'
if [ "$(id -u)" = 0 ]; then
    # --resume reads the report: never through a link to another user's file.
    chown 4242 target.txt
    ln -s target.txt theirs.jsonl
    t_run "resume through a link to another user's file" 3 "$S" batch -r recipe.yaml -o out \
        --resume --report theirs.jsonl zoo/healthy.safetensors
    t_stderr_is "resume through a link to another user's file" "stfix: batch: theirs.jsonl: a symbolic link to a file of another user (uid 4242), which --resume would read; choose another report path"
fi

# (A fresh input, so each case below stands alone even where an older
# stfix destroyed the input above.)
cp "$F/r15_flat_scale_square.safetensors" zoo/broken.safetensors

# Manifest outputs stay inside OUTDIR, resolved: the line is refused, the
# others run, the report says why, and the batch exits 3.
echo victim >victim.txt
mkdir -p m elsewhere om
ln -s ../elsewhere om/esc
printf '%s\n' '{"input": "../zoo/broken.safetensors", "output": "../victim.txt"}' \
    '{"input": "../zoo/healthy.safetensors"}' \
    "{\"input\": \"../zoo/broken.safetensors\", \"output\": \"$R/victim.txt\"}" \
    '{"input": "../zoo/broken.safetensors", "output": "a/../../victim.txt"}' \
    '{"input": "../zoo/broken.safetensors", "output": "esc/x.safetensors"}' >m/man.jsonl
t_run "manifest outputs outside OUTDIR" 3 "$S" batch -r recipe.yaml -o om --manifest m/man.jsonl
t_true "outside OUTDIR: the victim untouched" test "$(cat victim.txt)" = victim
t_absent "outside OUTDIR: nothing through the symlinked directory" elsewhere/x.safetensors
t_stderr_has "line 1" "  failed m/../zoo/broken.safetensors: m/man.jsonl:1: the output 'om/../victim.txt' is outside the output directory 'om' (it resolves to '$R/victim.txt'); name one inside it, or give --allow-outside-outdir"
t_stderr_has "line 3" "  failed m/../zoo/broken.safetensors: m/man.jsonl:3: the output '$R/victim.txt' is outside the output directory 'om'; name one inside it, or give --allow-outside-outdir"
t_stderr_has "line 4" "m/man.jsonl:4: the output 'om/a/../../victim.txt' is outside the output directory 'om' (it resolves to '$R/victim.txt')"
t_stderr_has "line 5" "m/man.jsonl:5: the output 'om/esc/x.safetensors' is outside the output directory 'om' (it resolves to '$R/elsewhere/x.safetensors')"
t_stderr_has "the other line ran" "  compliant       1"
t_true "the report has the refusal" grep -qF '"status":"failed","error":{"rule":null,"message":"m/man.jsonl:1: the output '"'om/../victim.txt'"' is outside the output directory' om/stfix-report.jsonl
t_true "the report has five lines" test "$(wc -l <om/stfix-report.jsonl)" -eq 5

# --allow-outside-outdir lets them out, by name; the guard still applies.
printf '%s\n' '{"input": "../zoo/broken.safetensors", "output": "../victim.txt"}' >m/out.jsonl
t_run "--allow-outside-outdir" 0 "$S" batch -r recipe.yaml -o oa --allow-outside-outdir --manifest m/out.jsonl
t_true "--allow-outside-outdir: written there" cmp -s oa/../victim.txt "$(cd "$R" && "$S" fix zoo/broken.safetensors -r recipe.yaml -o fixed.safetensors >/dev/null && echo fixed.safetensors)"
printf '%s\n' '{"input": "../zoo/broken.safetensors", "output": "../zoo/healthy.safetensors"}' \
    '{"input": "../zoo/healthy.safetensors"}' >m/in.jsonl
t_run "--allow-outside-outdir over another input" 3 "$S" batch -r recipe.yaml -o ob --allow-outside-outdir --manifest m/in.jsonl
t_stderr_has "--allow-outside-outdir over another input" "  failed m/../zoo/broken.safetensors: m/in.jsonl:1: $R/zoo/healthy.safetensors: the output would overwrite the input file 'm/../zoo/healthy.safetensors'; choose another output path"
t_true "over another input: untouched" cmp -s zoo/healthy.safetensors "$F/healthy_int8_g64.safetensors"

# A discovered output that is a FIFO: that checkpoint is refused, exit 3.
mkdir -p of
mkfifo of/broken.safetensors
t_run "output is a FIFO" 3 t_capped "$S" batch -r recipe.yaml -o of zoo
t_stderr_has "output is a FIFO" "  failed zoo/broken.safetensors: of/broken.safetensors: the output path exists and is a FIFO; $guard"

# OUTDIR against the input trees: refused up front, nothing written.
cp -r zoo z2
t_run "OUTDIR is the input directory" 3 "$S" batch -r recipe.yaml -o z2 z2
t_stderr_is "OUTDIR is the input directory" "stfix: batch: z2: the output directory is the input directory 'z2'; choose an output directory outside the input tree"
t_absent "OUTDIR is the input directory: no report in it" z2/stfix-report.jsonl
t_run "OUTDIR is the input directory, spelt otherwise" 3 "$S" batch -r recipe.yaml -o ./z2/ z2
t_run "OUTDIR inside the input tree" 3 "$S" batch -r recipe.yaml -o z2/sub/out z2
t_stderr_is "OUTDIR inside the input tree" "stfix: batch: z2/sub/out: the output directory is inside the input directory 'z2'; choose an output directory outside the input tree"
t_absent "OUTDIR inside the input tree: not made" z2/sub
mkdir -p o3/models/models o4/models
cp zoo/broken.safetensors o3/models/models/
cp zoo/broken.safetensors o4/models/
t_run "input tree inside OUTDIR, an output inside it" 3 "$S" batch -r recipe.yaml -o o3 o3/models
t_stderr_is "input tree inside OUTDIR, an output inside it" "stfix: batch: o3: the output directory holds the input directory 'o3/models', and the output 'o3/models/broken.safetensors' of 'o3/models/models/broken.safetensors' would be written inside it, where a later batch would take it for an input; choose an output directory outside the input tree"
t_absent "input tree inside OUTDIR: no report" o3/stfix-report.jsonl
t_run "input tree inside OUTDIR, outputs beside it" 0 "$S" batch -r recipe.yaml -o o4 o4/models
t_true "outputs beside it: written" test -f o4/broken.safetensors
t_run "a file input inside OUTDIR, its own output" 3 "$S" batch -r recipe.yaml -o o4/models o4/models/broken.safetensors
t_stderr_has "a file input inside OUTDIR, its own output" "  failed o4/models/broken.safetensors: o4/models/broken.safetensors: the output would overwrite the input file 'o4/models/broken.safetensors'; choose another output path"

# Inputs that do not exist are exit 2; a FIFO manifest or report to verify
# cannot hold the batch (exit 4, as a FIFO input is for check).
t_run "missing manifest" 2 "$S" batch -r recipe.yaml -o x --manifest nothere.jsonl
t_stderr_is "missing manifest" "stfix: batch: nothere.jsonl: cannot open: No such file or directory"
t_run "FIFO manifest" 4 t_capped "$S" batch -r recipe.yaml -o x --manifest fifo
t_stderr_is "FIFO manifest" "stfix: batch: fifo: cannot read: not a regular file"
t_run "--verify a missing report" 2 "$S" batch --verify nothere.jsonl
t_run "--verify a FIFO" 4 t_capped "$S" batch --verify fifo
t_stderr_is "--verify a FIFO" "stfix: batch: fifo: the report is a FIFO; a report is a regular file"
t_absent "nothing made" x
