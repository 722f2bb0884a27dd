# Remote inputs (stfix(1), INPUTS): checkpoints read over HTTP(S) with range
# requests, from lighttpd serving the fixtures and from
# tests/cli/fault_server.py, which misbehaves in each way the reader must
# catch. What crosses the network is counted on both sides: stfix's -v and
# --json, and the servers' logs, request by request.
. tests/cli/lib.sh
. tests/cli/net_servers.inc
PATH=$PATH:/usr/sbin:/sbin
if ! command -v lighttpd >/dev/null 2>&1; then
    echo "# skipped: lighttpd is not installed (make deps installs it)"
    exit 0
fi
S="$T_TMP/srv"
mkdir -p "$S"
cp -R fixtures/comfy fixtures/demo "$S/"
cp fixtures/comfy/healthy_int8_g64.safetensors "$S/one.safetensors"
t_lighttpd L "$S" || exit 1
t_fault "$S"
F=comfy/healthy_int8_g64.safetensors
U="$L_URL/$F"
size=$(wc -c <"fixtures/$F")

# A small file: one request, for its first 64 KiB, holds all of it; the
# report is the local file's, under the URL's name.
t_run "check URL" 0 "$STFIX" check -v "$L_URL/one.safetensors"
"$STFIX" check "fixtures/$F" | sed "s|fixtures/$F|$L_URL/one.safetensors|" >"$T_TMP/want"
t_stdout_is "check URL" "$T_TMP/want"
t_stderr_has "check URL: -v" \
    "stfix: check: $L_URL/one.safetensors: $size bytes in 1 request(s) over the network"
t_log_lines L one.safetensors
printf 'GET /one.safetensors HTTP/1.1 206 %s bytes=0-65535\n' "$size" >"$T_TMP/want"
t_true "check URL: one request, as lighttpd saw it" cmp "$T_TMP/lines" "$T_TMP/want"
t_run "check --json URL" 0 "$STFIX" check --json "$U"
t_stdout_has "check --json URL" ", \"network\": {\"bytes\": $size, \"requests\": 1}}"
t_run "check --json local: no network member" 0 "$STFIX" check --json "fixtures/$F"
t_true "check --json local: no network member" sh -c "! grep -q network '$T_OUT'"

# The header on either side of the first range's end: a header that ends
# at byte 65536 comes in the first request, one 8 bytes longer needs a
# second for its last 8 bytes; then the markers, together at the end, in
# one more.
for end in 65536 65544; do
    set -- $(python3 tests/gen/gen_remote_export.py "$S/h$end.safetensors" 200 8 256 "$end")
    t_run "header to $end" 0 "$STFIX" check -v "$L_URL/h$end.safetensors"
    if [ "$end" = 65536 ]; then n=2; else n=3; fi
    t_stderr_has "header to $end: bytes" \
        "$L_URL/h$end.safetensors: $(($1 + $3 - $2)) bytes in $n request(s) over the network"
    t_log_lines L "h$end.safetensors"
    {
        printf 'GET /h%s.safetensors HTTP/1.1 206 65536 bytes=0-65535\n' "$end"
        [ "$end" = 65544 ] &&
            printf 'GET /h%s.safetensors HTTP/1.1 206 8 bytes=65536-65543\n' "$end"
        printf 'GET /h%s.safetensors HTTP/1.1 206 %s bytes=%s-%s\n' "$end" $(($3 - $2)) "$2" $(($3 - 1))
    } >"$T_TMP/want"
    t_true "header to $end: the requests" cmp "$T_TMP/lines" "$T_TMP/want"
done

# A 2 GiB export (its weights a hole): check reads its header and its
# markers, nothing of the weights: at most header + markers + 64 KiB, in 3
# requests.
set -- $(python3 tests/gen/gen_remote_export.py "$S/big.safetensors" 512 2048 2048)
t_run "2 GiB export" 0 "$STFIX" check -v "$L_URL/big.safetensors"
t_stderr_has "2 GiB export: header and markers only" \
    "$L_URL/big.safetensors: $(($1 + $3 - $2)) bytes in 3 request(s) over the network"
t_log_lines L big.safetensors
t_true "2 GiB export: 3 requests, as lighttpd saw them" test "$(wc -l <"$T_TMP/lines")" -eq 3
t_true "2 GiB export: the bytes lighttpd sent" \
    test "$(awk '{ n += $5 } END { print n }' "$T_TMP/lines")" -eq $(($1 + $3 - $2))
rm -f "$S/big.safetensors"

# hash streams: the file's bytes once, in requests that grow while the
# reads run on through it (the first 64 KiB, the rest of hash's first
# 1 MiB, then 1, 2, 4, 8 and 16 MiB at a time), with the hashes of the file
# on disk.
python3 tests/gen/gen_remote_export.py "$S/s40.safetensors" 10 2048 2048 >/dev/null
s40=$(wc -c <"$S/s40.safetensors")
t_run "hash streams" 0 "$STFIX" hash -v "$L_URL/s40.safetensors"
t_stderr_has "hash streams: bytes" "$L_URL/s40.safetensors: $s40 bytes in 8 request(s) over the network"
"$STFIX" hash "$S/s40.safetensors" | sed "s|$S/|$L_URL/|" >"$T_TMP/want"
t_stdout_is "hash streams" "$T_TMP/want"
t_log_lines L s40.safetensors
{
    printf 'GET /s40.safetensors HTTP/1.1 206 65536 bytes=0-65535\n'
    printf 'GET /s40.safetensors HTTP/1.1 206 983040 bytes=65536-1048575\n'
    b=1048576
    while [ $b -lt 16777216 ]; do
        printf 'GET /s40.safetensors HTTP/1.1 206 %s bytes=%s-%s\n' $b $b $((2 * b - 1))
        b=$((2 * b))
    done
    printf 'GET /s40.safetensors HTTP/1.1 206 16777216 bytes=16777216-33554431\n'
    printf 'GET /s40.safetensors HTTP/1.1 206 %s bytes=33554432-%s\n' $((s40 - 33554432)) $((s40 - 1))
} >"$T_TMP/want"
t_true "hash streams: the requests" cmp "$T_TMP/lines" "$T_TMP/want"
rm -f "$S/s40.safetensors"

# An index: the index, then each shard, one request each.
I=comfy/healthy_sharded.safetensors.index.json
ib=$(cat "fixtures/$I" fixtures/comfy/healthy_sharded-0000[12]-of-00002.safetensors | wc -c)
t_run "index URL" 0 "$STFIX" check -v "$L_URL/$I"
"$STFIX" check "fixtures/$I" | sed "s|fixtures/$I|$L_URL/$I|" >"$T_TMP/want"
t_stdout_is "index URL" "$T_TMP/want"
t_stderr_has "index URL: bytes" "$L_URL/$I: $ib bytes in 3 request(s) over the network"

# Several inputs, read ahead 8 at once (--net-jobs): the reports of one at
# a time, in the order given, each with its own network member; an input
# that fails reports its error in its place.
set -- "$L_URL/$F" "$L_URL/demo/demo.safetensors" "$L_URL/comfy/none.safetensors" "fixtures/$F" "$L_URL/$I"
t_run "several URLs, one at a time" 2 "$STFIX" check --json --net-jobs 1 "$@"
cp "$T_OUT" "$T_TMP/one"
t_run "several URLs, read ahead" 2 "$STFIX" check --json "$@"
t_stdout_is "several URLs, read ahead" "$T_TMP/one"
t_stdout_has "several URLs: each its own network member" \
    "\"network\": {\"bytes\": $ib, \"requests\": 3}}"
t_run "several URLs, read ahead, human" 2 "$STFIX" check "$@"
"$STFIX" check --net-jobs 1 "$@" >"$T_TMP/one" 2>/dev/null
t_stdout_is "several URLs, read ahead, human" "$T_TMP/one"

# inspect, plan, hash, diff: the local file's answers under the URL's name.
t_run "inspect --json URL" 0 "$STFIX" inspect --json "$U"
t_stdout_has "inspect --json URL" "\"network\": {\"bytes\": $size, \"requests\": 1}}"
D=demo/demo.safetensors
t_run "plan URL" 0 "$STFIX" plan "$L_URL/$D" -r sglang-repair
"$STFIX" plan "fixtures/$D" -r sglang-repair | sed "s|fixtures/$D|$L_URL/$D|" >"$T_TMP/want"
t_stdout_is "plan URL" "$T_TMP/want"
# plan --json is written a layer at a time; the network member still ends it.
t_run "plan --json URL" 0 "$STFIX" plan --json "$U" -r sglang-repair
t_stdout_has "plan --json URL" "\"bytes_copied\": 1207}, \"network\": {\"bytes\": $size, \"requests\": 1}}"
t_run "hash URL" 0 "$STFIX" hash "$L_URL/$D"
"$STFIX" hash "fixtures/$D" | sed "s|fixtures/$D|$L_URL/$D|" >"$T_TMP/want"
t_stdout_is "hash URL" "$T_TMP/want"
t_run "diff URL and file" 0 "$STFIX" diff "$L_URL/$D" "fixtures/$D"
t_stdout_has "diff URL and file" "identical"

# fix and rewrite read a URL and write a local file: the bytes of a fix
# from the file itself.
t_run "fix URL" 0 "$STFIX" fix -v "$L_URL/$D" -r sglang-repair -o "$T_TMP/remote.safetensors"
t_stderr_has "fix URL: -v" "stfix: fix: $(wc -c <"fixtures/$D") bytes in 1 request(s) over the network in all"
t_run "fix file" 0 "$STFIX" fix -q "fixtures/$D" -r sglang-repair -o "$T_TMP/local.safetensors"
t_true "fix URL: the bytes of fix file" cmp "$T_TMP/remote.safetensors" "$T_TMP/local.safetensors"
t_run "fix -o URL" 3 "$STFIX" fix "fixtures/$D" -r sglang-repair -o "$L_URL/out.safetensors"
t_stderr_is "fix -o URL" "stfix: fix: output '$L_URL/out.safetensors' is a URL: stfix reads URLs but writes only local files"
t_run "fix --in-place URL" 3 "$STFIX" fix "$L_URL/$D" -r sglang-repair --in-place
t_stderr_is "fix --in-place URL" "stfix: fix: --in-place input '$L_URL/$D' is a URL: stfix reads URLs but writes only local files"
t_run "rewrite -o URL" 3 "$STFIX" rewrite "$L_URL/$D" -o "$L_URL/out.safetensors"
t_stderr_is "rewrite -o URL" "stfix: rewrite: output '$L_URL/out.safetensors' is a URL: stfix reads URLs but writes only local files"

# batch: URLs as inputs and as a manifest's "input", fixed as the file is.
t_run "batch URL" 0 "$STFIX" batch -q -o "$T_TMP/b1" "$L_URL/$D" "$L_URL/$F"
t_true "batch URL: the bytes of fix file" cmp "$T_TMP/b1/demo.safetensors" "$T_TMP/local.safetensors"
t_true "batch URL: the compliant one left alone" test ! -e "$T_TMP/b1/healthy_int8_g64.safetensors"
printf '{"input": "%s", "output": "m.safetensors", "recipe": "sglang-repair"}\n' "$L_URL/$D" \
    >"$T_TMP/m.jsonl"
t_run "batch manifest URL" 0 "$STFIX" batch -q --manifest "$T_TMP/m.jsonl" -o "$T_TMP/b2"
t_true "batch manifest URL: the bytes of fix file" cmp "$T_TMP/b2/m.safetensors" "$T_TMP/local.safetensors"
t_true "batch manifest URL: the URL as input" \
    grep -q "^{\"input\":\"$L_URL/$D\",\"input_files\":\[{\"path\":\"$L_URL/$D\",\"sha256\":null" \
    "$T_TMP/b2/stfix-report.jsonl"

t_run "batch --resume URL" 0 "$STFIX" batch --resume -o "$T_TMP/b1" "$L_URL/$D"
t_true "batch --resume URL: done again (its input has no hash)" \
    sh -c "! grep -q 'already done' '$T_ERR' && grep -q '^  fixed  *1\$' '$T_ERR'"

# Names that are not there, or not names.
t_run "404" 2 "$STFIX" check "$L_URL/comfy/none.safetensors"
t_stderr_is "404" "stfix: check: $L_URL/comfy/none.safetensors: HTTP 404: no such file"
t_run "bad hf:// name" 3 "$STFIX" check hf://org/repo
t_stderr_is "bad hf:// name" "stfix: check: hf://org/repo: a hub name is hf://ORG/REPO[@REVISION]/PATH"
t_run "bad --header" 3 "$STFIX" check --header nocolon "$U"
t_stderr_is "bad --header" "stfix: check: --header takes 'Name: value', not 'nocolon'"

# The faults, each with its error naming the URL and the range. A file
# whose header needs a second request, so that a change shows.
set -- $(python3 tests/gen/gen_remote_export.py "$S/mid.safetensors" 300 8 256)
hdr_end=$1
fault() { # fault NAME RC MODE [OPTIONS...]: check FAULT_URL/MODE/mid.safetensors
    _n=$1 _rc=$2 _m=$3
    shift 3
    : >"$FAULT_LOG"
    t_run "$_n" "$_rc" t_capped "$STFIX" check -q "$@" "$FAULT_URL/$_m/mid.safetensors"
}
fault "ignores Range" 4 ignore-range
t_stderr_is "ignores Range" "stfix: check: $FAULT_URL/ignore-range/mid.safetensors: bytes 0-65535: L13 RangeIgnored: the server ignored the Range request and sent the whole file (200); stopped at its first byte"
fault "wrong Content-Range" 4 wrong-range
t_stderr_is "wrong Content-Range" "stfix: check: $FAULT_URL/wrong-range/mid.safetensors: bytes 0-65535: L14 BadContentRange: not the range asked for: Content-Range is 'bytes 1-65536/$3'"
fault "file changed" 4 change
t_stderr_is "file changed" "stfix: check: $FAULT_URL/change/mid.safetensors: bytes 65536-$((hdr_end - 1)): L15 RemoteChanged: the file changed while it was being read: ETag was '\"v1\"', now '\"v2\"'"
fault "body cut short" 4 short --retries 0
t_stderr_is "body cut short" "stfix: check: $FAULT_URL/short/mid.safetensors: bytes 0-65535: L16 BodyLength: the body ended after 32768 bytes"
t_true "body cut short: one request" test "$(wc -l <"$FAULT_LOG")" -eq 1
fault "cut short, retried" 4 short --retries 2
t_stderr_is "cut short, retried" "stfix: check: $FAULT_URL/short/mid.safetensors: bytes 0-65535: L16 BodyLength: the body ended after 32768 bytes (retried)"
t_true "cut short, retried: three requests" test "$(wc -l <"$FAULT_LOG")" -eq 3
fault "503 twice, then served" 0 busy-2
t_true "503 twice, then served: 2 + 3 requests" test "$(wc -l <"$FAULT_LOG")" -eq 5
fault "429 past the retries" 4 slow-9 --retries 2
t_stderr_is "429 past the retries" "stfix: check: $FAULT_URL/slow-9/mid.safetensors: bytes 0-65535: L17 HttpFailed: HTTP 429 (retried)"
t_true "429 past the retries: three requests" test "$(wc -l <"$FAULT_LOG")" -eq 3
fault "redirect to ftp" 4 to-ftp
t_stderr_is "redirect to ftp" "stfix: check: $FAULT_URL/to-ftp/mid.safetensors: bytes 0-65535: L17 HttpFailed: redirect (302) to 'ftp://127.0.0.1/mid.safetensors', not an http or https URL"
t_run "connection refused" 4 "$STFIX" check --retries 0 "http://127.0.0.1:1/x.safetensors"
t_stderr_has "connection refused" "stfix: check: http://127.0.0.1:1/x.safetensors: bytes 0-65535: L17 HttpFailed: Failed to connect to 127.0.0.1 port 1 after "

# hf:// names resolve on the hub endpoint (--hub-endpoint, else
# HF_ENDPOINT); HF_TOKEN goes to the endpoint's host, never to the host a
# redirect leads to, and neither does a --header.
port=${FAULT_URL##*:}
: >"$FAULT_LOG"
t_run "hf:// with a revision" 0 "$STFIX" check -q --hub-endpoint "$FAULT_URL" "hf://org/repo@v1/$F"
t_true "hf:// with a revision: the resolve URL" \
    grep -q "^GET /org/repo/resolve/v1/$F bytes=0-65535 206 $size -\$" "$FAULT_LOG"
: >"$FAULT_LOG"
t_run "HF_ENDPOINT, HF_TOKEN" 0 env HF_ENDPOINT="$FAULT_URL" HF_TOKEN=sekrit "$STFIX" check -q "hf://org/repo/$F"
t_true "HF_TOKEN sent to the hub" \
    grep -q "^GET /org/repo/resolve/main/$F bytes=0-65535 206 $size Bearer sekrit\$" "$FAULT_LOG"
: >"$FAULT_LOG"
t_run "token and redirect" 0 env HF_TOKEN=sekrit "$STFIX" check -q --hub-endpoint "$FAULT_URL" \
    "$FAULT_URL/hop/localhost:$port/ok/$F"
printf 'GET /hop/localhost:%s/ok/%s bytes=0-65535 302 0 Bearer sekrit\nGET /ok/%s bytes=0-65535 206 %s -\n' \
    "$port" "$F" "$F" "$size" >"$T_TMP/want"
t_true "token and redirect: not sent to the other host" cmp "$FAULT_LOG" "$T_TMP/want"
: >"$FAULT_LOG"
t_run "--header and redirect" 0 "$STFIX" check -q --header "Authorization: Bearer h1" \
    "$FAULT_URL/hop/localhost:$port/ok/$F"
printf 'GET /hop/localhost:%s/ok/%s bytes=0-65535 302 0 Bearer h1\nGET /ok/%s bytes=0-65535 206 %s -\n' \
    "$port" "$F" "$F" "$size" >"$T_TMP/want"
t_true "--header and redirect: not sent to the other host" cmp "$FAULT_LOG" "$T_TMP/want"

# The proxy is the one the program passes: http_proxy at a closed port
# fails the request, no_proxy lets it through.
t_run "http_proxy" 4 env http_proxy=http://127.0.0.1:1 "$STFIX" check -q --retries 0 "$U"
t_stderr_has "http_proxy" "L17 HttpFailed: Failed to connect to 127.0.0.1 port 1 after "
t_run "no_proxy" 0 env http_proxy=http://127.0.0.1:1 no_proxy=127.0.0.1 "$STFIX" check -q "$U"

# HTTPS: the certificate is verified; --insecure, by name, does not.
if t_lighttpd T "$S" https; then
    t_run "https: self-signed" 4 "$STFIX" check -q --retries 0 "$T_URL/$F"
    # OpenSSL 1.1 spells it "self signed", 3.x "self-signed".
    t_stderr_has "https: self-signed" "stfix: check: $T_URL/$F: bytes 0-65535: L17 HttpFailed: SSL certificate problem: self"
    t_run "https: --insecure" 0 "$STFIX" check -q --insecure "$T_URL/$F"
else
    t_notok "https: lighttpd with TLS did not start"
fi

# ---- Hostile header lengths over the network ----
# The 8-byte length is judged from the first answer, before any read of the
# header it claims: a length past the limit (2^40 bytes) is S2, one past the
# end of a 109-byte file (90 MB) is S3, each exit 2 under the address-space
# cap, with one request of the file's own bytes, as -v and lighttpd count
# them.
python3 -c 'import struct, sys
open(sys.argv[1], "wb").write(struct.pack("<Q", 1 << 40) + b"{" + b" " * 4087)
open(sys.argv[2], "wb").write(struct.pack("<Q", 90000000) + b"{" + b" " * 100)' \
    "$S/claims_2t.safetensors" "$S/claims_90m.safetensors"
t_run "header of 2^40 bytes" 2 t_capped "$STFIX" check -v "$L_URL/claims_2t.safetensors"
t_stderr_is "header of 2^40 bytes" "stfix: check: $L_URL/claims_2t.safetensors: S2 HeaderTooLarge (byte 0): header length 1099511627776 exceeds 100000000
stfix: check: 4096 bytes in 1 request(s) over the network in all"
t_log_lines L claims_2t.safetensors
printf 'GET /claims_2t.safetensors HTTP/1.1 206 4096 bytes=0-65535\n' >"$T_TMP/want"
t_true "header of 2^40 bytes: one request of 4096 bytes" cmp "$T_TMP/lines" "$T_TMP/want"
t_run "header of 90 MB in 109 bytes" 2 t_capped "$STFIX" check -v "$L_URL/claims_90m.safetensors"
t_stderr_is "header of 90 MB in 109 bytes" "stfix: check: $L_URL/claims_90m.safetensors: S3 InvalidHeaderLength (byte 0): header length 90000000 runs past the end of the 109-byte file
stfix: check: 109 bytes in 1 request(s) over the network in all"
t_log_lines L claims_90m.safetensors
printf 'GET /claims_90m.safetensors HTTP/1.1 206 109 bytes=0-65535\n' >"$T_TMP/want"
t_true "header of 90 MB in 109 bytes: one request of 109 bytes" cmp "$T_TMP/lines" "$T_TMP/want"

# ---- Every command's JSON says what crossed the network ----
# fix, diff, rewrite and batch end their document about a remote input
# with "network", as check does: here each input is the 44841-byte demo
# under a name of its own, which one request of the first 64 KiB holds,
# so each counts its file's bytes in one request, as lighttpd saw them.
D=demo/demo.safetensors
dsz=$(wc -c <"fixtures/$D")
for n in fix diff rw b1 b2; do cp "fixtures/$D" "$S/j_$n.safetensors"; done
one_request() { # one_request NAME FILE: lighttpd's log holds one request of FILE, all of it
    t_log_lines L "$2"
    printf 'GET /%s HTTP/1.1 206 %s bytes=0-65535\n' "$2" "$dsz" >"$T_TMP/want"
    t_true "$1: one request, as lighttpd saw it" cmp "$T_TMP/lines" "$T_TMP/want"
}
t_run "fix --json URL" 0 "$STFIX" fix --json "$L_URL/j_fix.safetensors" -r sglang-repair \
    -o "$T_TMP/j_fix.safetensors"
t_true "fix --json URL: the member ends the document" \
    test "$(tail -n 1 "$T_OUT")" = " \"metrics\": [], \"network\": {\"bytes\": $dsz, \"requests\": 1}}"
one_request "fix --json URL" j_fix.safetensors
t_run "fix --json local" 0 "$STFIX" fix --json "fixtures/$D" -r sglang-repair -o "$T_TMP/j_fix2.safetensors"
t_true "fix --json local: no network member" sh -c "! grep -q network '$T_OUT'"

t_run "diff --json URL and file" 0 "$STFIX" diff --json "$L_URL/j_diff.safetensors" "fixtures/$D"
t_stdout_has "diff --json URL and file" \
    "\"metadata\": 0}, \"network\": {\"bytes\": $dsz, \"requests\": 1}}"
one_request "diff --json URL and file" j_diff.safetensors
t_run "diff --json file and URL, -v" 0 "$STFIX" diff -v --json "fixtures/$D" "$L_URL/$D"
t_stdout_has "diff --json file and URL" "\"network\": {\"bytes\": $dsz, \"requests\": 1}}"
t_stderr_has "diff --json file and URL: -v" \
    "stfix: diff: $L_URL/$D: $dsz bytes in 1 request(s) over the network"
t_run "diff --json two URLs, -v" 0 "$STFIX" diff -v --json "$L_URL/$D" "$L_URL/j_diff.safetensors"
t_stdout_has "diff --json two URLs: both inputs' bytes" \
    "\"network\": {\"bytes\": $((2 * dsz)), \"requests\": 2}}"
t_stderr_has "diff --json two URLs: -v" \
    "stfix: diff: $L_URL/$D and $L_URL/j_diff.safetensors: $((2 * dsz)) bytes in 2 request(s) over the network"
t_run "diff --json files" 0 "$STFIX" diff --json "fixtures/$D" "fixtures/$D"
t_true "diff --json files: no network member" sh -c "! grep -q network '$T_OUT'"

t_run "rewrite --json URL" 0 "$STFIX" rewrite --json "$L_URL/j_rw.safetensors" -o "$T_TMP/j_rw.safetensors"
printf '%s\n' "{\"input\": \"$L_URL/j_rw.safetensors\", \"output\": \"$T_TMP/j_rw.safetensors\", \"tensors\": 17, \"zstd\": null," \
    ' "files": [' \
    "  {\"path\": \"$T_TMP/j_rw.safetensors\", \"bytes\": $dsz}], \"network\": {\"bytes\": $dsz, \"requests\": 1}}" \
    >"$T_TMP/want"
t_stdout_is "rewrite --json URL" "$T_TMP/want"
one_request "rewrite --json URL" j_rw.safetensors
t_run "rewrite --json local" 0 "$STFIX" rewrite --json "fixtures/$D" -o "$T_TMP/j_rw2.safetensors"
t_true "rewrite --json local: no network member" sh -c "! grep -q network '$T_OUT'"

# batch: each URL input's report line ends with its own member, a local
# one's has none, and the summary's is their sum. A URL input is not
# hashed (check reads its header and markers only, and --resume would have
# to read all of it again to compare): its sha256 and autov2 are null.
t_run "batch --json URLs" 0 "$STFIX" batch --json -q -o "$T_TMP/jb" \
    "$L_URL/j_b1.safetensors" "$L_URL/j_b2.safetensors" fixtures/comfy/healthy_fp8.safetensors
t_true "batch --json URLs: the summary's member, the sum" \
    test "$(tail -n 1 "$T_OUT")" = " \"failed\": [], \"network\": {\"bytes\": $((2 * dsz)), \"requests\": 2}}"
for n in b1 b2; do
    grep "^{\"input\":\"$L_URL/j_$n.safetensors\"," "$T_TMP/jb/stfix-report.jsonl" >"$T_TMP/jline"
    t_true "batch --json URLs: j_$n's line ends with its member" \
        grep -q ",\"seconds\":[0-9.]*,\"network\":{\"bytes\":$dsz,\"requests\":1}}\$" "$T_TMP/jline"
    t_true "batch --json URLs: j_$n not hashed" grep -q \
        "\"input_files\":\[{\"path\":\"$L_URL/j_$n.safetensors\",\"sha256\":null,\"autov2\":null}\]" \
        "$T_TMP/jline"
    one_request "batch --json URLs: j_$n" "j_$n.safetensors"
done
t_true "batch --json URLs: no member in the local input's line" \
    sh -c "grep '^{\"input\":\"fixtures/' '$T_TMP/jb/stfix-report.jsonl' | grep -q '\"seconds\":[0-9.]*}\$'"
t_run "batch --json local" 0 "$STFIX" batch --json -q -o "$T_TMP/jb2" fixtures/comfy/healthy_fp8.safetensors
t_true "batch --json local: no network member" \
    sh -c "! grep -q network '$T_OUT' '$T_TMP/jb2/stfix-report.jsonl'"

# A repair of a 17 MB export reads on other threads than the caller's too
# (-j 2), and how far its reads run ahead varies from run to run: each
# member holds every request lighttpd saw for its file, whatever thread
# made it.
python3 tests/gen/gen_quant_ckpt.py sylvester "$S/j_syl1.safetensors" 16MiB 256 >/dev/null
cp "$S/j_syl1.safetensors" "$S/j_syl2.safetensors"
log_sums() { # log_sums FILE: "BYTES REQUESTS" of lighttpd's lines for FILE
    t_log_lines L "$1"
    echo "$(awk '{ n += $5 } END { print n }' "$T_TMP/lines") $(wc -l <"$T_TMP/lines")"
}
t_run "batch --json, a repair on 2 threads" 0 "$STFIX" batch --json -q -j 2 -o "$T_TMP/jb3" \
    "$L_URL/j_syl1.safetensors"
set -- $(log_sums j_syl1.safetensors)
t_true "batch --json, a repair on 2 threads: the summary's member" \
    test "$(tail -n 1 "$T_OUT")" = " \"failed\": [], \"network\": {\"bytes\": $1, \"requests\": $2}}"
t_true "batch --json, a repair on 2 threads: the line's member" \
    grep -q "\"status\":\"fixed\",.*,\"network\":{\"bytes\":$1,\"requests\":$2}}\$" "$T_TMP/jb3/stfix-report.jsonl"
t_run "fix --json, a repair on 2 threads" 0 "$STFIX" fix --json -j 2 "$L_URL/j_syl2.safetensors" \
    -r sglang-repair -o "$T_TMP/j_syl2.safetensors"
set -- $(log_sums j_syl2.safetensors)
t_true "fix --json, a repair on 2 threads: the member" \
    test "$(tail -n 1 "$T_OUT")" = " \"metrics\": [], \"network\": {\"bytes\": $1, \"requests\": $2}}"

# check --numeric of several URLs reads them ahead too, each input's probes
# on the thread that checks it, and reads every weight: each input's
# member holds every request lighttpd saw for its file, whatever the other
# inputs read at the same time, and the reports are those of one input at
# a time (--net-jobs 1), members included.
for n in 1 2 3; do cp "$S/j_syl1.safetensors" "$S/j_num$n.safetensors"; done
set -- "$L_URL/j_num1.safetensors" "$L_URL/j_num2.safetensors" "$L_URL/j_num3.safetensors"
t_run "check --numeric URLs, read ahead" 1 "$STFIX" check --numeric --json "$@"
cp "$T_OUT" "$T_TMP/num.ahead"
for n in 1 2 3; do
    grep "^{\"file\": \"$L_URL/j_num$n.safetensors\"," "$T_TMP/num.ahead" >"$T_TMP/jline"
    set -- $(log_sums "j_num$n.safetensors")
    t_true "check --numeric URLs, read ahead: j_num$n's member, as lighttpd saw it ($2 requests)" \
        grep -q ", \"network\": {\"bytes\": $1, \"requests\": $2}}\$" "$T_TMP/jline"
done
set -- "$L_URL/j_num1.safetensors" "$L_URL/j_num2.safetensors" "$L_URL/j_num3.safetensors"
t_run "check --numeric URLs, one at a time" 1 "$STFIX" check --numeric --json --net-jobs 1 "$@"
t_stdout_is "check --numeric URLs: the reports of one at a time" "$T_TMP/num.ahead"
# The same through the fault server, each answer 50 ms late, with -j 1 (a
# lone input's probes read one request at a time): the inputs' requests
# are in flight together, and each member is still its file's alone, as
# the server logged them.
: >"$FAULT_LOG"
: >"$FAULT_LOG.open"
set -- "$FAULT_URL/delay-50/j_num1.safetensors" "$FAULT_URL/delay-50/j_num2.safetensors" \
    "$FAULT_URL/delay-50/j_num3.safetensors"
t_run "check --numeric URLs, 50 ms answers" 1 "$STFIX" check --numeric -j 1 --json "$@"
t_true "check --numeric URLs, 50 ms answers: requests in flight together" \
    test "$(sort -n "$FAULT_LOG.open" | tail -n 1)" -ge 2
for n in 1 2 3; do
    set -- $(awk -v p="/delay-50/j_num$n.safetensors" '$2 == p { b += $5; r++ } END { print b + 0, r + 0 }' "$FAULT_LOG")
    t_true "check --numeric URLs, 50 ms answers: j_num$n's member, as the server saw it ($2 requests)" \
        grep -q "^{\"file\": \"$FAULT_URL/delay-50/j_num$n.safetensors\",.*, \"network\": {\"bytes\": $1, \"requests\": $2}}\$" "$T_OUT"
done
# A compressed export counts through its decoder: the member of a .zst
# URL checked with --numeric on 2 threads is every request of the
# compressed file lighttpd logged.
"$STFIX" compress "$S/j_syl1.safetensors" -o "$S/j_zst.safetensors.zst" >/dev/null
t_run "check --numeric .zst URL" 1 "$STFIX" check --numeric -j 2 --json "$L_URL/j_zst.safetensors.zst"
set -- $(log_sums j_zst.safetensors.zst)
t_true "check --numeric .zst URL: the member, as lighttpd saw it ($2 requests)" \
    grep -q "}, \"network\": {\"bytes\": $1, \"requests\": $2}}\$" "$T_OUT"
rm -f "$S"/j_num[123].safetensors "$S"/j_syl[12].safetensors "$S/j_zst.safetensors.zst"

# ---- Reads in parallel: fix -j N and batch --net-jobs N over URLs ----
# fix -j N from a URL: the workers' reads are requests of their own, in
# flight together (the fault server counts its open requests, each answer
# 20 ms late), never more than N, and the output is the bytes of fix of
# the file itself, whatever N.
python3 tests/gen/gen_bf16_ckpt.py "$S/par.safetensors" 4MiB 256
Q=rules/quantize-int8-convrot.yaml
t_run "fix -j: the local file" 0 "$STFIX" fix -q "$S/par.safetensors" -r "$Q" -o "$T_TMP/par.local"
for j in 1 2 3; do
    : >"$FAULT_LOG.open"
    t_run "fix -j $j URL" 0 "$STFIX" fix -q -j "$j" "$FAULT_URL/delay-20/par.safetensors" -r "$Q" \
        -o "$T_TMP/par.j$j"
    t_true "fix -j $j URL: the bytes of fix file" cmp "$T_TMP/par.j$j" "$T_TMP/par.local"
    most=$(sort -n "$FAULT_LOG.open" | tail -n 1)
    t_true "fix -j $j URL: at most $j request(s) in flight (saw $most)" test "$most" -le "$j"
    [ "$j" -gt 1 ] && t_true "fix -j $j URL: requests in flight together (saw $most)" test "$most" -ge 2
done
# fix from a URL moves the file about once: a repair of a 17 MB export and
# a BF16 to INT8 quantize of a 17 MB file, on 1, 2 and 3 threads, cost at
# most 1.1 times the file, plus the first 64 KiB request, as lighttpd saw
# them (reads ahead start small and grow while they are read in order;
# copies are read in the pass, between the jobs, in file order), and the
# output is the bytes of fix of the file itself.
python3 tests/gen/gen_quant_ckpt.py sylvester "$S/w_syl.safetensors" 16MiB 256 >/dev/null
python3 tests/gen/gen_bf16_ckpt.py "$S/w_bf16.safetensors" 16MiB 256 >/dev/null
for f in w_syl w_bf16; do
    r=sglang-repair
    [ $f = w_bf16 ] && r=$Q
    t_run "fix $f: the local file" 0 "$STFIX" fix -q "$S/$f.safetensors" -r "$r" -o "$T_TMP/$f.local"
    size=$(wc -c <"$S/$f.safetensors")
    for j in 1 2 3; do
        ln "$S/$f.safetensors" "$S/$f.j$j.safetensors"
        t_run "fix $f -j $j URL" 0 "$STFIX" fix -q -j "$j" "$L_URL/$f.j$j.safetensors" -r "$r" \
            -o "$T_TMP/$f.j$j"
        t_true "fix $f -j $j URL: the bytes of fix file" cmp "$T_TMP/$f.j$j" "$T_TMP/$f.local"
        set -- $(log_sums "$f.j$j.safetensors")
        t_true "fix $f -j $j URL: $1 bytes in $2 requests, at most 1.1 times $size and 64 KiB" \
            test "$1" -le $((size + size / 10 + 65536))
        rm -f "$S/$f.j$j.safetensors"
    done
    rm -f "$S/$f.safetensors"
done

# plan and check --numeric of a URL move the header, the markers and the
# tensors their H1 probes read, and little else: plan's probes read each
# probed weight whole (nothing more at all); check's read each weight and
# its scale, in small reads near the front of the file, at most 4 KiB more
# a probe. The probes are the H1 findings of check --numeric of the file
# itself; the bytes, from its header.
probed() { # probed FILE CHECK_JSON w|ws: "PROBED_BYTES MARKER_BYTES PROBES"
    python3 - "$@" <<'PY'
import json, re, struct, sys
f, cj, kinds = sys.argv[1:4]
with open(f, 'rb') as fh:
    hdr = json.loads(fh.read(struct.unpack('<Q', fh.read(8))[0]))
size = lambda k: hdr[k]['data_offsets'][1] - hdr[k]['data_offsets'][0]
names = [re.search(r' in (\S+): ', d['message']).group(1)
         for d in json.load(open(cj))['diagnostics'] if d['rule'] == 'H1']
b = sum(size(w) for w in names)
if kinds == 'ws':
    b += sum(size(w[:-6] + 'weight_scale') for w in names if w[:-6] + 'weight_scale' in hdr)
print(b, sum(size(k) for k in hdr if k.endswith('.comfy_quant')), len(names))
PY
}
python3 tests/gen/gen_quant_ckpt.py sylvester "$S/p_syl.safetensors" 16MiB 256 >/dev/null
"$STFIX" check --numeric --json "$S/p_syl.safetensors" >"$T_TMP/p_syl.json"
for j in 1 2; do
    ln "$S/p_syl.safetensors" "$S/p_syl.j$j.safetensors"
    t_run "plan -j $j URL" 0 "$STFIX" plan -q -j "$j" "$L_URL/p_syl.j$j.safetensors" -r sglang-repair
    set -- $(log_sums "p_syl.j$j.safetensors") $(probed "$S/p_syl.safetensors" "$T_TMP/p_syl.json" w)
    t_true "plan -j $j URL: $1 bytes in $2 requests, at most 64 KiB, $4 of markers and $3 probed in $5 probes" \
        test "$1" -le $((65536 + $4 + $3))
    ln "$S/p_syl.safetensors" "$S/c_syl.j$j.safetensors"
    t_run "check --numeric -j $j URL" 1 "$STFIX" check -j "$j" --numeric "$L_URL/c_syl.j$j.safetensors"
    set -- $(log_sums "c_syl.j$j.safetensors") $(probed "$S/p_syl.safetensors" "$T_TMP/p_syl.json" ws)
    t_true "check --numeric -j $j URL: $1 bytes in $2 requests, at most 64 KiB, $4 of markers, $3 probed and 4 KiB for each of $5 probes" \
        test "$1" -le $((65536 + $4 + $3 + 4096 * $5))
    rm -f "$S/p_syl.j$j.safetensors" "$S/c_syl.j$j.safetensors"
done
rm -f "$S/p_syl.safetensors"

# Each request of the workers is checked as a lone one is: a file that
# changes under them fails the fix with the change named, nothing written;
# answers of 503 are retried, request by request, to the same bytes.
t_run "fix -j 3 URL: file changed" 4 "$STFIX" fix -q -j 3 "$FAULT_URL/change/par.safetensors" \
    -r "$Q" -o "$T_TMP/par.changed"
# (The workers' first requests are in flight together: which of them
# meets the change first, and so which new ETag is named, varies.)
t_stderr_has "fix -j 3 URL: file changed" "L15 RemoteChanged: the file changed while it was being read: ETag was '\"v1\"', now '\"v"
t_true "fix -j 3 URL: file changed: a later ETag named" \
    grep -Eq "ETag was '\"v1\"', now '\"v([2-9]|[1-9][0-9])\"'\$" "$T_ERR"
t_true "fix -j 3 URL: file changed: nothing written" test ! -e "$T_TMP/par.changed"
t_run "fix -j 3 URL: 503 three times, then served" 0 "$STFIX" fix -q -j 3 \
    "$FAULT_URL/busy-3/par.safetensors" -r "$Q" -o "$T_TMP/par.busy"
t_true "fix -j 3 URL: 503 three times: the bytes of fix file" cmp "$T_TMP/par.busy" "$T_TMP/par.local"
# The other faults, met by the workers' requests: the server answers the
# first 8 requests (the header, the markers and the plan's reads, one
# after the other), then misbehaves, from the pass's first request on; the
# fix fails with the rule and the tensor being read, nothing written.
python3 tests/gen/gen_bf16_ckpt.py "$S/par12.safetensors" 12MiB 256
for m in "ignore-range L13 RangeIgnored: the server ignored the Range request" \
    "wrong-range L14 BadContentRange: not the range asked for" \
    "short L16 BodyLength: the body ended after" "busy L17 HttpFailed: HTTP 503"; do
    set -- $m
    mode=$1
    shift
    rm -f "$T_TMP/par.fault"
    t_run "fix -j 3 URL: $mode in the pass" 4 "$STFIX" fix -q -j 3 --retries 0 \
        "$FAULT_URL/after-8-$mode/par12.safetensors" -r "$Q" -o "$T_TMP/par.fault"
    t_stderr_has "fix -j 3 URL: $mode in the pass" "stfix: fix: tensor '"
    t_stderr_has "fix -j 3 URL: $mode in the pass" "/after-8-$mode/par12.safetensors: bytes "
    t_stderr_has "fix -j 3 URL: $mode in the pass" "$*"
    t_true "fix -j 3 URL: $mode in the pass: nothing written" test ! -e "$T_TMP/par.fault"
done
rm -f "$S/par12.safetensors"

# batch over URL inputs opens them ahead, --net-jobs at once (default 8):
# their headers and markers are fetched together, while the batch runs
# the earlier ones; the report, the outputs and the summary are those of
# --net-jobs 1, one input after the other, the time taken aside. An input
# that is not there fails in its place.
for i in 1 2 3 4 5; do cp fixtures/demo/demo.safetensors "$S/bd$i.safetensors"; done
set --
for i in 1 2 3 4 5; do set -- "$@" "$FAULT_URL/delay-50/bd$i.safetensors"; done
set -- "$@" "$FAULT_URL/delay-50/$F" "$FAULT_URL/delay-50/comfy/none.safetensors"
bnorm() { sed 's/"seconds":[0-9.e+-]*/"seconds":S/; s/, [0-9.]* s$/, S s/' "$1"; }
for nj in 1 8; do
    rm -rf "$T_TMP/bnj"
    : >"$FAULT_LOG.open"
    t_run "batch URLs --net-jobs $nj" 1 "$STFIX" batch --net-jobs "$nj" -o "$T_TMP/bnj" "$@"
    bnorm "$T_TMP/bnj/stfix-report.jsonl" >"$T_TMP/bnj.report.$nj"
    bnorm "$T_ERR" >"$T_TMP/bnj.summary.$nj"
    cmp -s "$T_TMP/bnj/bd3.safetensors" "$T_TMP/local.safetensors" && echo same >"$T_TMP/bnj.out.$nj"
    sort -n "$FAULT_LOG.open" | tail -n 1 >"$T_TMP/bnj.most.$nj"
done
t_true "batch URLs --net-jobs 1: one request at a time" test "$(cat "$T_TMP/bnj.most.1")" -eq 1
t_true "batch URLs: requests in flight together ($(cat "$T_TMP/bnj.most.8"))" \
    test "$(cat "$T_TMP/bnj.most.8")" -ge 2
t_true "batch URLs: the report of one at a time" cmp "$T_TMP/bnj.report.1" "$T_TMP/bnj.report.8"
t_true "batch URLs: the summary of one at a time" cmp "$T_TMP/bnj.summary.1" "$T_TMP/bnj.summary.8"
t_true "batch URLs: the bytes of fix file" test -s "$T_TMP/bnj.out.1" -a -s "$T_TMP/bnj.out.8"
t_true "batch URLs: the missing one failed in its place" \
    grep -q "^{\"input\":\"$FAULT_URL/delay-50/comfy/none.safetensors\",.*\"status\":\"failed\",\"error\":{\"rule\":null,\"message\":\"$FAULT_URL/delay-50/comfy/none.safetensors: HTTP 404: no such file\"}" \
    "$T_TMP/bnj.report.8"
# A manifest's URL lines the same way.
: >"$T_TMP/bm.jsonl"
for i in 1 2 3; do
    printf '{"input": "%s", "output": "m%s.safetensors", "recipe": "sglang-repair"}\n' \
        "$FAULT_URL/delay-50/bd$i.safetensors" "$i" >>"$T_TMP/bm.jsonl"
done
for nj in 1 8; do
    rm -rf "$T_TMP/bnj"
    : >"$FAULT_LOG.open"
    t_run "batch manifest URLs --net-jobs $nj" 0 "$STFIX" batch -q --net-jobs "$nj" \
        --manifest "$T_TMP/bm.jsonl" -o "$T_TMP/bnj"
    bnorm "$T_TMP/bnj/stfix-report.jsonl" >"$T_TMP/bnj.report.$nj"
    sort -n "$FAULT_LOG.open" | tail -n 1 >"$T_TMP/bnj.most.$nj"
done
t_true "batch manifest URLs: requests in flight together ($(cat "$T_TMP/bnj.most.8"))" \
    test "$(cat "$T_TMP/bnj.most.8")" -ge 2
t_true "batch manifest URLs: the report of one at a time" cmp "$T_TMP/bnj.report.1" "$T_TMP/bnj.report.8"
t_true "batch manifest URLs: the bytes of fix file" cmp "$T_TMP/bnj/m2.safetensors" "$T_TMP/local.safetensors"
