#!/bin/sh
# The output guard, as fix and rewrite meet it: an output that would replace
# an input (its shards, through links), a special file or a directory is
# refused with exit 3 before any work; owner, group and mode of a replaced
# file survive, set-uid/set-gid never do; concurrent writers of one output
# take turns (--no-wait refuses at once), so a sharded set is never mixed.
. tests/cli/lib.sh
D=$T_TMP
Q=rules/quantize-int8-convrot.yaml
t_same_sum() { # NAME FILE SUM
    if [ "$(t_sha256 "$2")" = "$3" ]; then t_ok "$1: $2 unchanged"; else t_notok "$1: $2 unchanged"; fi
}

# ------------------------------------------------ inputs: shards and index
# The reported case: fix an index into the stem of its own shards.
mkdir -p "$D/sh"
for f in healthy_sharded-00001-of-00002.safetensors healthy_sharded-00002-of-00002.safetensors \
         healthy_sharded.safetensors.index.json; do cp "fixtures/comfy/$f" "$D/sh/"; done
# Named as in the report: the index is not called healthy_sharded.*, only its shards.
mv "$D/sh/healthy_sharded.safetensors.index.json" "$D/sh/a.index.json"
s1=$(t_sha256 "$D/sh/healthy_sharded-00001-of-00002.safetensors")
s2=$(t_sha256 "$D/sh/healthy_sharded-00002-of-00002.safetensors")
si=$(t_sha256 "$D/sh/a.index.json")
idx=$D/sh/a.index.json
for cmd in fix rewrite; do
    set -- "$STFIX" "$cmd" "$idx" -o "$D/sh/healthy_sharded.safetensors" --max-shard-size 4536B
    [ "$cmd" = fix ] && set -- "$@" -r tests/recipes/cast-scale.yaml
    t_run "$cmd onto its own shards" 3 "$@"
    t_stderr_has "$cmd onto its own shards" "the output would overwrite the input file '$D/sh/healthy_sharded-0000"
    t_same_sum "$cmd onto its own shards" "$D/sh/healthy_sharded-00001-of-00002.safetensors" "$s1"
    t_same_sum "$cmd onto its own shards" "$D/sh/healthy_sharded-00002-of-00002.safetensors" "$s2"
    t_same_sum "$cmd onto its own shards" "$idx" "$si"
    t_no_temp "$cmd onto its own shards" "$D/sh"
done
# An output named like an index: the writer makes a safetensors file, never
# an index, so the name is refused before any work, sharded or not.
for cmd in fix rewrite; do
    for extra in "" "--max-shard-size 4536B"; do
        # rewrite's own option check names --max-shard-size first.
        [ "$cmd$extra" = "rewrite--max-shard-size 4536B" ] && continue
        set -- "$STFIX" "$cmd" "$idx" -o "$D/sh/out.safetensors.index.json" $extra
        [ "$cmd" = fix ] && set -- "$@" -r tests/recipes/cast-scale.yaml
        t_run "$cmd -o X.index.json $extra" 3 "$@"
        t_stderr_has "$cmd -o X.index.json $extra" "$D/sh/out.safetensors.index.json: an output file cannot take an index's name (*.index.json): name it *.safetensors; a sharded output's index is then named after it"
        t_true "$cmd -o X.index.json $extra: nothing written" test ! -e "$D/sh/out.safetensors.index.json"
    done
done
t_no_temp "-o X.index.json" "$D/sh"
# The index itself, through a symlink, a hard link and "..".
ln -s healthy_sharded-00001-of-00002.safetensors "$D/sh/sym.safetensors"
ln "$D/sh/healthy_sharded-00002-of-00002.safetensors" "$D/sh/hard.safetensors"
mkdir -p "$D/sh/sub"
for o in "$D/sh/sym.safetensors" "$D/sh/hard.safetensors" "$D/sh/sub/../a.index.json"; do
    t_run "fix onto an input as $o" 3 "$STFIX" fix "$idx" -r tests/recipes/cast-scale.yaml -o "$o"
    case $o in
    *.index.json) t_stderr_has "fix onto an input as $o" "an output file cannot take an index's name" ;;
    *) t_stderr_has "fix onto an input as $o" "the output would overwrite the input file" ;;
    esac
done
t_same_sum "links" "$D/sh/healthy_sharded-00002-of-00002.safetensors" "$s2"
t_true "links: the symlink is still a symlink" test -L "$D/sh/sym.safetensors"

# ------------------------------------------------ special files, directories
demo=fixtures/demo/demo.safetensors
mkfifo "$D/fifo"
t_run "-o FIFO" 3 "$STFIX" fix "$demo" -r rules/sglang-int8-convrot.yaml -o "$D/fifo"
t_stderr_has "-o FIFO" "$D/fifo: the output path exists and is a FIFO; stfix only replaces regular files"
t_true "-o FIFO: still a FIFO" test -p "$D/fifo"
t_run "rewrite -o FIFO" 3 "$STFIX" rewrite "$demo" -o "$D/fifo"
t_true "rewrite -o FIFO: still a FIFO" test -p "$D/fifo"
ln -s /dev/null "$D/null-link"
t_run "-o symlink to /dev/null" 3 "$STFIX" rewrite "$demo" -o "$D/null-link"
t_stderr_has "-o symlink to /dev/null" "is a character device (through a symlink)"
t_true "/dev/null is still a character device" test -c /dev/null
if [ "$(id -u)" = 0 ] && mknod "$D/null" c 1 3 2>/dev/null; then
    t_run "-o device" 3 "$STFIX" fix "$demo" -r rules/sglang-int8-convrot.yaml -o "$D/null"
    t_stderr_has "-o device" "exists and is a character device"
    t_true "-o device: still a device" test -c "$D/null"
else
    echo "# skipped: -o device (mknod needs root)"
fi
# An existing directory is refused before any work: the recipe would fail
# at plan time (exit 2), so exit 3 shows the guard ran first.
mkdir -p "$D/adir"
python3 tests/gen/gen_bf16_ckpt.py "$D/bf.safetensors" 1MiB 64
t_run "-o directory" 3 "$STFIX" fix "$D/bf.safetensors" -r tests/recipes/requantize-fail-indivisible.yaml -o "$D/adir"
t_stderr_has "-o directory" "$D/adir: the output path exists and is a directory"
t_run "-o directory/" 3 "$STFIX" rewrite "$demo" -o "$D/adir/"
t_true "-o directory: empty" test -z "$(ls -A "$D/adir")"

# ------------------------------------------------ permissions
cp "$demo" "$D/suid-target"
chmod 4755 "$D/suid-target"
ln -s suid-target "$D/suid-link"
t_run "-o symlink to a set-uid file" 0 "$STFIX" rewrite "$demo" -o "$D/suid-link"
t_true "-o symlink: the link became the output" test -f "$D/suid-link" -a ! -L "$D/suid-link"
t_true "-o symlink: no set-uid bit" test ! -u "$D/suid-link" -a ! -g "$D/suid-link"
t_true "-o symlink: target untouched" cmp "$demo" "$D/suid-target"
t_true "-o symlink: target keeps its mode" test -u "$D/suid-target"
cp "$demo" "$D/sgid.safetensors"
chmod 2750 "$D/sgid.safetensors"
t_run "replacing a set-gid file" 0 "$STFIX" rewrite "$demo" -o "$D/sgid.safetensors"
t_true "replacing a set-gid file: mode 0750" test "$(stat -c %a "$D/sgid.safetensors")" = 750
if [ "$(id -u)" = 0 ]; then
    cp "$demo" "$D/owned.safetensors"
    chown 12345:23456 "$D/owned.safetensors"
    chmod 640 "$D/owned.safetensors"
    t_run "--in-place as root" 0 "$STFIX" fix "$D/owned.safetensors" -r rules/sglang-int8-convrot.yaml --in-place
    t_true "--in-place as root: owner and group kept" test "$(stat -c %u:%g:%a "$D/owned.safetensors")" = 12345:23456:640
    t_true "--in-place as root: rewritten" sh -c "! cmp -s '$demo' '$D/owned.safetensors'"
else
    echo "# skipped: --in-place owner (only root can hand a file to another user)"
fi

# ------------------------------------------------ one writer per output
# tests/cli/hold_lock.py holds OUT's lock as another run writing OUT would.
python3 tests/gen/gen_bf16_ckpt.py "$D/big.safetensors" 96MiB 1024
small=$D/bf.safetensors
"$STFIX" fix "$small" -r "$Q" -o "$D/ref.safetensors" -j 1 >/dev/null 2>&1
t_run "--no-wait while another run writes" 4 python3 tests/cli/hold_lock.py "$D/one.safetensors" \
    "$STFIX" fix "$small" -r "$Q" -o "$D/one.safetensors" --no-wait
t_stderr_has "--no-wait while another run writes" "another stfix run is writing this output"
t_absent "--no-wait while another run writes" "$D/one.safetensors"
# Without --no-wait the run waits: still running, nothing written, while the
# lock is held; complete once it is let go.
python3 tests/cli/hold_lock.py "$D/one.safetensors" --until "$D/go" &
holder=$!
i=0
while [ ! -e "$D/go.held" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
"$STFIX" fix "$small" -r "$Q" -o "$D/one.safetensors" -j 1 >/dev/null 2>&1 &
pid=$!
sleep 0.5
t_true "waiting: still running while the lock is held" kill -0 "$pid"
t_absent "waiting" "$D/one.safetensors"
touch "$D/go"
wait "$holder"
wait "$pid"
t_true "waiting: succeeded once the lock was let go" test $? -eq 0
t_true "waiting: the output is complete" cmp "$D/one.safetensors" "$D/ref.safetensors"
t_no_temp "one writer per output" "$D"

# Two different writers of one sharded output at once: whichever ends last,
# the index names a complete set of its own shards, never a mix.
"$STFIX" rewrite "$D/big.safetensors" -o "$D/ra.safetensors" --max-shard-size 32MiB >/dev/null
"$STFIX" fix "$D/big.safetensors" -r "$Q" -o "$D/rb.safetensors" --max-shard-size 32MiB -j 1 >/dev/null
mixed=0
for trial in 1 2 3 4 5; do
    rm -f "$D"/mix*
    "$STFIX" rewrite "$D/big.safetensors" -o "$D/mix.safetensors" --max-shard-size 32MiB >/dev/null 2>&1 &
    a=$!
    "$STFIX" fix "$D/big.safetensors" -r "$Q" -o "$D/mix.safetensors" --max-shard-size 32MiB -j 1 >/dev/null 2>&1
    wait "$a"
    ok=0
    for r in ra rb; do
        set -- "$D/$r"-*-of-*.safetensors
        all=1
        for s in "$@"; do
            m=$D/mix-${s#"$D/$r"-}
            cmp -s "$s" "$m" || all=0
        done
        [ -n "$(sed "s/$r-/mix-/g" "$D/$r.safetensors.index.json" | cmp - "$D/mix.safetensors.index.json" 2>&1)" ] && all=0
        [ $all = 1 ] && ok=1
    done
    [ $ok = 1 ] || mixed=$((mixed + 1))
done
t_true "concurrent sharded writers: no mixed set in 5 trials ($mixed mixed)" test $mixed -eq 0
t_no_temp "concurrent sharded writers" "$D"

# ------------------------------------------------ names too long for their temporary
# OUT is written as .OUT.stfix-XXXXXX first, 14 bytes longer: a name that
# leaves no room for that is refused before any work. The recipe would fail
# at plan time (exit 2), so exit 3 and the one line on stderr show the
# guard ran first.
mkdir -p "$D/long"
n241=$(printf '%0229d.safetensors' 0)
n242=$(printf '%0230d.safetensors' 0)
n255=$(printf '%0243d.safetensors' 0)
long_msg() { # PATH BYTES OVER
    printf '%s: the file name is too long: its temporary file (.NAME.stfix-XXXXXX) would have a %s-byte name, over the limit of 255 bytes for a file name in '\''%s'\''; shorten the output'\''s name by %s' \
        "$1" "$2" "$D/long" "$3"
}
for n in "$n255:269:14 bytes" "$n242:256:1 byte"; do
    name=${n%%:*} rest=${n#*:}
    t_run "fix -o a ${#name}-byte name" 3 "$STFIX" fix "$D/bf.safetensors" -r tests/recipes/requantize-fail-indivisible.yaml -o "$D/long/$name"
    t_stderr_is "fix -o a ${#name}-byte name" "stfix: fix: $(long_msg "$D/long/$name" "${rest%%:*}" "${rest#*:}")"
    t_run "rewrite -o a ${#name}-byte name" 3 "$STFIX" rewrite "$D/bf.safetensors" -o "$D/long/$name"
    t_stderr_is "rewrite -o a ${#name}-byte name" "stfix: rewrite: $(long_msg "$D/long/$name" "${rest%%:*}" "${rest#*:}")"
done
cp "$D/bf.safetensors" "$D/long/$n242"
t_run "fix --in-place of a 242-byte name" 3 "$STFIX" fix "$D/long/$n242" -r tests/recipes/cast-scale.yaml --in-place
t_stderr_has "fix --in-place of a 242-byte name" "the file name is too long: its temporary file (.NAME.stfix-XXXXXX) would have a 256-byte name"
t_same_sum "fix --in-place of a 242-byte name" "$D/long/$n242" "$(t_sha256 "$D/bf.safetensors")"
rm "$D/long/$n242"
t_run "compress -o a 255-byte name" 3 "$STFIX" compress "$D/bf.safetensors" -o "$D/long/$(printf '%0239d.safetensors.zst' 0)"
t_stderr_has "compress -o a 255-byte name" "would have a 269-byte name, over the limit of 255 bytes"
# Sharded: STEM-00001-of-00001.safetensors is 15 bytes longer than OUT.
t_run "fix -o a 227-byte name, sharded" 3 "$STFIX" fix "$D/bf.safetensors" -r tests/recipes/requantize-fail-indivisible.yaml -o "$D/long/$(printf '%0215d.safetensors' 0)" --max-shard-size 1MiB
t_stderr_has "fix -o a 227-byte name, sharded" "the shard name '$(printf '%0215d' 0)-00001-of-00001.safetensors' is too long: its temporary file (.NAME.stfix-XXXXXX) would have a 256-byte name"
t_true "names too long: nothing written" test -z "$(ls -A "$D/long")"
# 241 bytes leave room: the output is written.
t_run "fix -o a 241-byte name" 0 "$STFIX" fix "$D/bf.safetensors" -r tests/recipes/cast-scale.yaml -o "$D/long/$n241"
t_true "fix -o a 241-byte name: written" test -s "$D/long/$n241"
t_run "rewrite -o a 240-byte name" 0 "$STFIX" rewrite "$D/bf.safetensors" -o "$D/long/$(printf '%0228d.safetensors' 0)"
t_no_temp "241-byte names" "$D/long"

# ------------------------------------------------ an input that changes while it is read
# The run opens its input, then waits for OUT's lock (held by
# hold_lock.py); its lock's socket showing in /proc/PID/fd says it waits.
# Another process then rewrites one byte of the input in place (its size
# kept; its modification time had been set in the past, so the change shows
# whatever the clock's granularity) and the lock is let go: the run reads
# the rest and must publish nothing.
mkdir -p "$D/chg"
changed_while_read() { # NAME IN OUT CMD...
    _name=$1 _in=$2 _out=$3
    shift 3
    # An input the recipe changes (its BF16 scale is widened), so that even
    # --in-place has an output to withhold.
    cp fixtures/comfy/r14_scale_bf16.safetensors "$_in"
    touch -d @1000000000 "$_in"
    rm -f "$D/chg/go" "$D/chg/go.held"
    python3 tests/cli/hold_lock.py "$_out" --until "$D/chg/go" &
    _holder=$!
    _i=0
    while [ ! -e "$D/chg/go.held" ] && [ $_i -lt 1000 ]; do sleep 0.01; _i=$((_i + 1)); done
    "$STFIX" "$@" >"$T_OUT" 2>"$T_ERR" &
    _pid=$!
    _i=0
    while ! ls -l "/proc/$_pid/fd" 2>/dev/null | grep -q 'socket:' && [ $_i -lt 1000 ]; do
        sleep 0.01
        _i=$((_i + 1))
    done
    python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(1000); b = f.read(1); f.seek(1000); f.write(bytes([b[0] ^ 0x55]))' "$_in"
    _sum=$(t_sha256 "$_in")
    touch "$D/chg/go"
    wait "$_holder"
    wait "$_pid"
    _rc=$?
    if [ $_rc -eq 4 ]; then t_ok "$_name: exit 4"; else t_notok "$_name: exit 4" "got exit $_rc; stderr: $(head -c 400 "$T_ERR")"; fi
    t_stderr_has "$_name" "$_in: the input changed while stfix was reading it (modification time 2001-09-09T01:46:40.000000000Z, now "
    t_stderr_has "$_name" "); nothing was written: run again once nothing changes it"
    t_same_sum "$_name: the input is as the other process left it" "$_in" "$_sum"
    t_no_temp "$_name" "$D/chg"
}
changed_while_read "fix -o, input changed" "$D/chg/in.safetensors" "$D/chg/out.safetensors" \
    fix "$D/chg/in.safetensors" -r tests/recipes/cast-scale.yaml -o "$D/chg/out.safetensors" -j 1
t_absent "fix -o, input changed" "$D/chg/out.safetensors"
changed_while_read "fix --in-place, input changed" "$D/chg/in.safetensors" "$D/chg/in.safetensors" \
    fix "$D/chg/in.safetensors" -r tests/recipes/cast-scale.yaml --in-place -j 1
changed_while_read "rewrite, input changed" "$D/chg/in.safetensors" "$D/chg/out.safetensors" \
    rewrite "$D/chg/in.safetensors" -o "$D/chg/out.safetensors"
t_absent "rewrite, input changed" "$D/chg/out.safetensors"
