#!/bin/sh
# Objects of one room that use each other in a circle (lib/README.md,
# Circles that stay). A room is a folder of objects: build/obj/cmd,
# build/obj/lib/<layer>. Object A uses object B of its room when A
# references a global symbol B defines (nm, as tests/layers.sh reads them);
# a circle is a set of two objects or more each of which uses every other
# one through the others (a strongly connected component of that graph), a
# pair that use each other directly being the smallest.
#
# The rooms in STRICT_ROOMS may have no circle at all. Every other room of
# lib/ may keep a circle only where lib/README.md,
# Circles that stay, names it: one bullet a circle, whose first words are
# its objects' file names as this script prints them (in any order, with or
# without backticks), followed by the reason. A name there whose source is
# in lib/ but whose object the build does not make (the AVX kernels under
# SIMD=none) is left out of the comparison.
#
# usage: sh tests/circles.sh [SRC [OBJ]]
#   SRC  the source tree, holding lib/README.md, default .
#   OBJ  the object tree, holding OBJ/cmd and OBJ/lib/<layer>, default build/obj
#
# Prints one line per violation, each circle's objects sorted by name:
#   circles: ROOM: A.o B.o ...: a circle, and ROOM may have none
#   circles: ROOM: A.o B.o ...: a circle lib/README.md does not name
#   circles: lib/README.md names A.o B.o ...: no circle of these objects is left
#   circles: lib/README.md: a bullet of Circles that stay names no objects: TEXT
# Exit status: 0 clean, 1 violations, 2 nm missing, or a room without
# objects (no room of lib/ at all, or a room's folder without one).

# Rooms that may have no circle, as paths under OBJ. A room listed here
# whose folder does not exist is skipped.
STRICT_ROOMS="cmd lib/io lib/container"

SRC=${1:-.}
OBJ=${2:-build/obj}
README="$SRC/lib/README.md"
LC_ALL=C
export LC_ALL
command -v nm >/dev/null 2>&1 || { echo "circles: nm is needed (binutils)" >&2; exit 2; }
. "$(dirname "$0")/symbols.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-circles.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

listed() { # listed WORD LIST...: whether WORD is one of LIST
    _w=$1
    shift
    for _x in "$@"; do [ "$_x" = "$_w" ] && return 0; done
    return 1
}

# The circles of one room's objects, one line each, "A.o B.o ...": each
# circle's names sorted, the lines sorted.
circles_of() {
    symbols "$OBJ" "$@" | awk '
    function base(p) { sub(/.*\//, "", p); return p }
    function node(o) {
        if (!(o in id)) { id[o] = ++n; name[n] = o }
        return id[o]
    }
    $1 == "D" { k = node(base($3)); if (!($2 in at)) at[$2] = k; next }
    $1 == "U" && ($2 in at) {
        a = node(base($3)); b = at[$2]
        if (a != b && !((a, b) in edge)) { edge[a, b] = 1; out[a] = out[a] " " b }
    }
    END {
        # reach[s, t]: t is reached from s, one walk from each object.
        for (s = 1; s <= n; s++) {
            top = 0
            stack[++top] = s
            while (top) {
                v = stack[top--]
                k = split(out[v], w, " ")
                for (j = 1; j <= k; j++)
                    if (!((s, w[j]) in reach)) { reach[s, w[j]] = 1; stack[++top] = w[j] }
            }
        }
        for (s = 1; s <= n; s++) {
            if (s in comp) continue
            m = 0
            for (t = s; t <= n; t++)
                if (!(t in comp) && (t == s || ((s, t) in reach && (t, s) in reach))) {
                    comp[t] = s
                    mem[++m] = name[t]
                }
            if (m < 2) continue
            for (i = 2; i <= m; i++) { # insertion sort of the names
                x = mem[i]
                for (j = i - 1; j >= 1 && mem[j] > x; j--) mem[j + 1] = mem[j]
                mem[j + 1] = x
            }
            line = mem[1]
            for (i = 2; i <= m; i++) line = line " " mem[i]
            print line
        }
    }' | sort
}

# The rooms: the strict ones that exist, then each other room of lib/.
status=0
strict=
for r in $STRICT_ROOMS; do
    [ -d "$OBJ/$r" ] && strict="$strict $r"
done
open=
rooms=0
for d in "$OBJ"/lib/*/; do
    [ -d "$d" ] || continue
    rooms=$((rooms + 1))
    r=${d#"$OBJ"/}
    r=${r%/}
    listed "$r" $STRICT_ROOMS || open="$open $r"
done
if [ "$rooms" -eq 0 ]; then
    echo "circles: no rooms of lib/ in $OBJ/lib" >&2
    exit 2
fi
for r in $strict $open; do
    set -- "$OBJ/$r"/*.o
    if [ ! -f "$1" ]; then
        echo "circles: no objects in $OBJ/$r" >&2
        status=2
    fi
done
[ "$status" -eq 0 ] || exit "$status"

for r in $strict; do
    circles_of "$OBJ/$r"/*.o | while read -r c; do
        echo "circles: $r: $c: a circle, and $r may have none"
    done
done >"$tmp/out"

# The circles lib/README.md names, one line each as circles_of gives them
# ("+ A.o B.o ..."; "- TEXT" for a bullet naming no objects). A name whose
# source is in lib/ but whose object this build does not make (the AVX
# kernels under SIMD=none) is left out of its circle, and a circle left
# with fewer than two is not in this build.
for f in "$OBJ"/lib/*/*.o; do [ -f "$f" ] && echo "o ${f##*/}"; done >"$tmp/made"
for f in "$SRC"/lib/*/*.c; do [ -f "$f" ] && f=${f##*/} && echo "c ${f%.c}.o"; done >>"$tmp/made"
if [ -f "$README" ]; then
    awk -v list="$tmp/made" '
    BEGIN {
        while ((getline l <list) > 0) {
            split(l, p, " ")
            if (p[1] == "o") made[p[2]] = 1
            else src[p[2]] = 1
        }
    }
    # A bullet goes on over the indented lines after it.
    function flush(    n, i, j, w, x, m, any, line) {
        if (bullet == "") return
        n = split(bullet, word, " ")
        bullet = ""
        m = any = 0
        for (i = 2; i <= n; i++) {
            w = word[i]
            gsub(/`/, "", w)
            sub(/[:,;]$/, "", w)
            if (w !~ /^[A-Za-z0-9_+-]+\.o$/) break
            if ((w in src) && !(w in made)) { any = 1; continue }
            mem[++m] = w
        }
        if (!m && !any) { print "-", substr(text, 3, 60); return }
        if (any && m < 2) return
        for (i = 2; i <= m; i++) {
            x = mem[i]
            for (j = i - 1; j >= 1 && mem[j] > x; j--) mem[j + 1] = mem[j]
            mem[j + 1] = x
        }
        line = mem[1]
        for (i = 2; i <= m; i++) line = line " " mem[i]
        print "+", line
    }
    /^## / { flush(); in_it = ($0 == "## Circles that stay"); next }
    in_it && /^[-*] / { flush(); bullet = text = $0; next }
    in_it && bullet != "" && /^[ \t]+[^ \t]/ { bullet = bullet " " $0; next }
    { flush() }
    END { flush() }' "$README"
fi >"$tmp/named"

: >"$tmp/found"
for r in $open; do
    circles_of "$OBJ/$r"/*.o | while read -r c; do
        echo "$c" >>"$tmp/found"
        grep -qxF "+ $c" "$tmp/named" ||
            echo "circles: $r: $c: a circle lib/README.md does not name"
    done
done >>"$tmp/out"
while read -r kind c; do
    if [ "$kind" = - ]; then
        echo "circles: lib/README.md: a bullet of Circles that stay names no objects: $c"
    elif ! grep -qxF "$c" "$tmp/found"; then
        echo "circles: lib/README.md names $c: no circle of these objects is left"
    fi
done <"$tmp/named" >>"$tmp/out"

cat "$tmp/out"
[ ! -s "$tmp/out" ]
