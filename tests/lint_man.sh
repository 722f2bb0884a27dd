#!/bin/sh
# make lint: mandoc -Tlint -Wstyle over man pages (the arguments, default
# man/*.[1-9]); prints every message and exits 1 when there is one.
#
# The one kind of message let through is a reference to a manual outside
# this project (a name other than stfix and stfix-*) that this machine does not
# have indexed: pread(2) is not ours to install. References between our own
# pages must resolve: every page in man/ and every page given is copied into
# a temporary man tree (man1, man5, man7, ...) indexed by makewhatis and
# searched before the system's, so a misspelt or missing stfix page fails.
# Each page is also rendered, and a line with two closing or two opening
# quotes in a row (quoting macros nested on one line) is a message too.
# Exit status: 0 clean, 1 messages, 2 mandoc or makewhatis missing or broken.
if ! command -v mandoc >/dev/null 2>&1 || ! command -v makewhatis >/dev/null 2>&1; then
    echo "lint: mandoc and makewhatis are needed (make deps installs mandoc)" >&2
    exit 2
fi
if [ $# -eq 0 ]; then
    set -- man/*.[1-9]
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-lint.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/tree"
for p in man/*.[1-9] "$@"; do
    [ -f "$p" ] || continue
    sec=${p##*.}
    mkdir -p "$tmp/tree/man$sec"
    cp "$p" "$tmp/tree/man$sec/" || exit 2
done
if ! makewhatis "$tmp/tree" >"$tmp/mw" 2>&1; then
    cat "$tmp/mw" >&2
    exit 2
fi
sys=$(manpath 2>/dev/null) || sys=/usr/share/man
MANPATH="$tmp/tree:$sys" mandoc -Tlint -Wstyle "$@" >"$tmp/out" 2>&1
rc=$?
# mandoc: 0 clean, 1-4 messages of some level, 5 and up a usage or system
# failure that is not about the pages.
if [ "$rc" -ge 5 ]; then
    cat "$tmp/out" >&2
    exit 2
fi
# Drop what is about other projects' manuals: "referenced manual not found:
# Xr NAME SEC" and "outdated mandoc.db lacks NAME(SEC) entry" (the system's
# index) for NAME not ours.
awk '
    /STYLE: referenced manual not found: Xr / {
        split($0, a, "Xr "); split(a[2], w, " ")
        if (w[1] !~ /^stfix(-|$)/) next
    }
    /outdated mandoc\.db lacks .* entry/ {
        s = $0; sub(/.*lacks /, "", s)
        if (s !~ /^stfix(-|\()/) next
    }
    { print }
' "$tmp/out" >"$tmp/kept"
# What mandoc cannot see: a quoting macro whose arguments run on into
# another one (".Pq Dq a , Dq b" quotes "a, "b"" inside "a") renders two
# closing or two opening quotes in a row, which no sentence of ours has.
for p in "$@"; do
    mandoc -Tutf8 "$p" 2>/dev/null | sed 's/.\x08//g' |
        awk -v p="$p" '/””|““|’’|‘‘/ { sub(/^ +/, ""); print p ": rendered line " NR ": nested quotes: " $0 }'
done >>"$tmp/kept"
if [ -s "$tmp/kept" ]; then
    cat "$tmp/kept"
    exit 1
fi
exit 0
