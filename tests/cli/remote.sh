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

# hash streams: the file's bytes once, in 16 MiB requests once the reads
# run on through it (the first 64 KiB, the rest of hash's first 1 MiB,
# then 16 MiB at a time), with the hashes of the file on disk.
python3 tests/gen/gen_remote_export.py "$S/s40.safetensors" 10 2048 2048 >/dev/null
s40=$(wc -c <"$S/s40.safetensors")
t_run "hash streams" 0 "$STFIX" hash -v "$L_URL/s40.safetensors"
t_stderr_has "hash streams: bytes" "$L_URL/s40.safetensors: $s40 bytes in 5 request(s) over the network"
"$STFIX" hash "$S/s40.safetensors" | sed "s|$S/|$L_URL/|" >"$T_TMP/want"
t_stdout_is "hash streams" "$T_TMP/want"
t_log_lines L s40.safetensors
{
    printf 'GET /s40.safetensors HTTP/1.1 206 65536 bytes=0-65535\n'
    printf 'GET /s40.safetensors HTTP/1.1 206 983040 bytes=65536-1048575\n'
    printf 'GET /s40.safetensors HTTP/1.1 206 16777216 bytes=1048576-17825791\n'
    printf 'GET /s40.safetensors HTTP/1.1 206 16777216 bytes=17825792-34603007\n'
    printf 'GET /s40.safetensors HTTP/1.1 206 %s bytes=34603008-%s\n' $((s40 - 34603008)) $((s40 - 1))
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
