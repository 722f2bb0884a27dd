# CLI scenarios for hostile `regex` selectors: a pattern too costly to
# compile is refused at load by lint, plan and fix, and a search that reaches
# its match limit stops plan and fix; each with exit 2 and a FILE:LINE:COL
# message, within seconds and 64 MiB (t_capped). POSIX regcomp took 24 GB for
# the first pattern and regexec minutes for the second.
. tests/cli/lib.sh
F=fixtures/comfy

cat >"$T_TMP/huge.yaml" <<'EOF2'
stfix: 1
target: comfyui
rules:
  - name: r
    match: {regex: '(.{0,1000}){0,1000}'}
    do: cast-scale
EOF2
huge="$T_TMP/huge.yaml:5:20: rules[0].match.regex: invalid regex '(.{0,1000}){0,1000}': compiles to more than 16384 bytes (a repeated group is copied once per repetition)"
t_run "huge lint" 2 t_capped "$STFIX" rules lint "$T_TMP/huge.yaml"
t_stderr_is "huge lint" "$huge"
t_run "huge plan" 2 t_capped "$STFIX" plan $F/r14_scale_bf16.safetensors -r "$T_TMP/huge.yaml"
t_stderr_is "huge plan" "$huge"
t_run "huge fix" 2 t_capped "$STFIX" fix $F/r14_scale_bf16.safetensors -r "$T_TMP/huge.yaml" \
    -o "$T_TMP/huge.safetensors"
t_stderr_is "huge fix" "$huge"
t_true "huge fix: no output" test ! -e "$T_TMP/huge.safetensors"

# 50 tensors whose 4000-byte names hold a long run of 'a' that the pattern
# must try to split every way before it fails; and one layer of that kind.
python3 - "$T_TMP" <<'EOF2'
import json, struct, sys
def save(path, names):
    hdr, off = {}, 0
    for n in sorted(names):
        hdr[n] = {"dtype": "F32", "shape": [1], "data_offsets": [off, off + 4]}
        off += 4
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(off))
save(sys.argv[1] + "/names.safetensors", ["a" * 3994 + "xb%04d" % i for i in range(50)])
save(sys.argv[1] + "/layer.safetensors", ["a" * 3991 + "xb.weight"])
EOF2
cat >"$T_TMP/slow.yaml" <<'EOF2'
stfix: 1
target: comfyui
rules:
  - name: r
    match: {regex: '(a{1,255}){1,255}(b{1,255}){1,255}'}
    do: cast-scale
EOF2
t_run "slow lint" 0 t_capped "$STFIX" rules lint "$T_TMP/slow.yaml"
limit="needed more than 1000000 backtracking steps (the match limit); simplify the regex"
slow="$T_TMP/slow.yaml:5:20: rules[0].match.regex: matching 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaxb0000' $limit"
t_run "slow plan" 2 t_capped "$STFIX" plan "$T_TMP/names.safetensors" -r "$T_TMP/slow.yaml"
t_stderr_is "slow plan" "stfix: plan: $slow"
t_run "slow fix" 2 t_capped "$STFIX" fix "$T_TMP/names.safetensors" -r "$T_TMP/slow.yaml" \
    -o "$T_TMP/slow.safetensors"
t_stderr_is "slow fix" "stfix: fix: $slow"
t_true "slow fix: no output" test ! -e "$T_TMP/slow.safetensors"
t_run "slow layer" 2 t_capped "$STFIX" plan "$T_TMP/layer.safetensors" -r "$T_TMP/slow.yaml"
t_stderr_is "slow layer" "stfix: plan: $T_TMP/slow.yaml:5:20: rules[0].match.regex: matching 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaxb' $limit"

# Each search below stays under its own limit, but ten rules against 100
# layers would run for minutes: the plan's searches share one budget of
# regex steps, and the search that would go past it stops the run (L12).
# The pattern is compiled and searched once per name, whatever the number
# of rules that use it.
python3 - "$T_TMP" <<'EOF3'
import json, struct, sys
hdr, off = {}, 0
for i in range(100):
    hdr["a" * 18 + "b%03d.weight" % i] = {"dtype": "F32", "shape": [1], "data_offsets": [off, off + 4]}
    off += 4
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1] + "/layers100.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + bytes(off))
EOF3
printf 'stfix: 1\ntarget: comfyui\nrules:\n' >"$T_TMP/ten.yaml"
for i in 0 1 2 3 4 5 6 7 8 9; do
    printf '  - name: r%d\n    match: {regex: "(a+)+$"}\n    do: cast-scale\n' $i >>"$T_TMP/ten.yaml"
done
l12="$T_TMP/ten.yaml:5:20: rules[0].match.regex: L12 LimitExceeded: '(a+)+\$' spent the run's budget of 100000000 regex steps matching 'aaaaaaaaaaaaaaaaaab063'; simplify the regex, or raise the budget with --max-regex-steps"
t_run "budget plan" 2 t_capped "$STFIX" plan "$T_TMP/layers100.safetensors" -r "$T_TMP/ten.yaml"
t_stderr_is "budget plan" "stfix: plan: $l12"
t_run "budget plan json" 2 t_capped "$STFIX" plan "$T_TMP/layers100.safetensors" -r "$T_TMP/ten.yaml" --json
t_stdout_has "budget plan json" "\"rule\": \"L12\""
t_run "budget fix" 2 t_capped "$STFIX" fix "$T_TMP/layers100.safetensors" -r "$T_TMP/ten.yaml" \
    -o "$T_TMP/budget.safetensors"
t_stderr_is "budget fix" "stfix: fix: $l12"
t_absent "budget fix" "$T_TMP/budget.safetensors"
t_run "smaller budget" 2 t_capped "$STFIX" plan "$T_TMP/layers100.safetensors" -r "$T_TMP/ten.yaml" \
    --max-regex-steps 5000000
t_stderr_is "smaller budget" "stfix: plan: $T_TMP/ten.yaml:5:20: rules[0].match.regex: L12 LimitExceeded: '(a+)+\$' spent the run's budget of 5000000 regex steps matching 'aaaaaaaaaaaaaaaaaab003'; simplify the regex, or raise the budget with --max-regex-steps"
# An ordinary pattern takes a few steps a name: ten rules of it against the
# 100 layers fit in 2000.
sed 's/(a+)+\$/c[0-9]+$/' "$T_TMP/ten.yaml" >"$T_TMP/plain.yaml"
t_run "plain pattern" 0 t_capped "$STFIX" plan "$T_TMP/layers100.safetensors" -r "$T_TMP/plain.yaml" \
    --max-regex-steps 2000
t_run "budget: usage" 3 "$STFIX" plan "$T_TMP/layers100.safetensors" -r "$T_TMP/ten.yaml" \
    --max-regex-steps 0
t_stderr_has "budget: usage" "stfix: plan: --max-regex-steps takes a whole number from 1 to 18446744073709551615, not '0'"
