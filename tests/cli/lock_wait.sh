#!/bin/sh
# A run whose output another run is writing waits for it, and says so on
# stderr with -v (and on a terminal): which output, and why it waits. Without
# -v and off a terminal it waits without a word, as before.
. tests/cli/lib.sh
D=$T_TMP
in=fixtures/comfy/r14_scale_bf16.safetensors

# hold OUT: hold OUT's lock until $D/go exists (hold_lock.py --until); the
# holder's pid in $holder once the lock is held.
hold() {
    rm -f "$D/go" "$D/go.held"
    python3 tests/cli/hold_lock.py "$1" --until "$D/go" &
    holder=$!
    i=0
    while [ ! -e "$D/go.held" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
}

# stderr_wait FILE TEXT: wait (10 s at most) until FILE holds TEXT.
stderr_wait() {
    i=0
    while ! grep -qF -- "$2" "$1" 2>/dev/null && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
}

# let_go PID NAME: let the holder go, then PID must end with status 0.
let_go() {
    touch "$D/go"
    wait "$holder"
    wait "$1"
    t_true "$2: exit 0 once the lock was let go" test $? -eq 0
}

for c in rewrite fix compress decompress; do
    out=$D/$c.safetensors
    case $c in
    rewrite) set -- rewrite "$in" -o "$out" ;;
    fix) set -- fix "$in" -r tests/recipes/cast-scale.yaml -o "$out" ;;
    compress) out=$D/c.safetensors.zst; set -- compress "$in" -o "$out" ;;
    decompress)
        "$STFIX" compress "$in" -o "$D/d.safetensors.zst" >/dev/null
        set -- decompress "$D/d.safetensors.zst" -o "$out" ;;
    esac
    hold "$out"
    "$STFIX" "$@" -v >"$D/o" 2>"$D/e" &
    pid=$!
    msg="stfix: $c: waiting for $out, locked by another stfix run..."
    stderr_wait "$D/e" "$msg"
    t_true "$c -v: still waiting while the lock is held" kill -0 "$pid"
    let_go "$pid" "$c -v"
    T_ERR=$D/e t_stderr_has "$c -v: says it waits, for which output" "$msg"
done

# Without -v, off a terminal: no line, the wait is silent.
out=$D/quiet.safetensors
hold "$out"
"$STFIX" rewrite "$in" -o "$out" >"$D/o" 2>"$D/e" &
pid=$!
sleep 0.3
let_go "$pid" "rewrite, not a terminal"
if grep -q "waiting for" "$D/e"; then t_notok "rewrite, not a terminal: no waiting line" "$(cat "$D/e")"
else t_ok "rewrite, not a terminal: no waiting line"; fi
# -q drops it even with -v before it (the last one wins).
out=$D/q.safetensors
hold "$out"
"$STFIX" rewrite "$in" -o "$out" -v -q >"$D/o" 2>"$D/e" &
pid=$!
sleep 0.3
let_go "$pid" "rewrite -v -q"
t_true "rewrite -v -q: nothing on stderr" test ! -s "$D/e"
