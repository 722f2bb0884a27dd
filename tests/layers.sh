#!/bin/sh
# The library's layering, enforced (lib/README.md, Layers):
#
#   util  <-  io  <-  container  <-  { model, quant }  <-  { check, rules }  <-  pipeline
#
# A layer may use its own layer and the layers to its left; the two layers in
# one pair of braces do not use each other. The public headers map onto the
# layers one to one, except that the util layer's public header is base.h and
# the io layer (the bytes read and written) has none: its types reach
# programs only through the container layer's header:
#
#   include/stfix/base.h       util        include/stfix/check.h     check
#   include/stfix/container.h  container   include/stfix/rules.h     rules
#   include/stfix/model.h      model       include/stfix/pipeline.h  pipeline
#   include/stfix/quant.h      quant
#
# include/stfix.h is the umbrella, for cmd/ and for programs outside.
# A header in include/stfix/experimental/ is the experimental half of the
# layer header of the same name and counts as that layer's;
# include/stfix/experimental.h is their umbrella (include/stfix.h takes it
# in under STF_EXPERIMENTAL).
#
# usage: sh tests/layers.sh [SRC [OBJ]]
#   SRC  the source tree (lib/, include/, cmd/), default .
#   OBJ  the object tree, holding OBJ/lib/<layer>/*.o, default build/obj
#
# Prints one line per violation and exits 1 when there is one:
#   - an object of a layer references a symbol defined in another layer it
#     may not use (names the object, the symbol and both layers);
#   - a file of lib/<layer>/ includes the umbrella stfix.h, the public header
#     of a layer it may not use, or a header of another layer's lib/ folder
#     (only a layer's internal headers, lib/<layer>/*.h, may include the
#     internal headers of the layers below: a .c file includes its own
#     layer's headers, which bring in what the layer takes from below);
#   - a public header includes the umbrella, a lib/ header or the public
#     header of a layer its own may not use;
#   - a file of cmd/ includes anything but stfix.h, system headers and
#     cmd/'s own headers.
# Exit status: 0 clean, 1 violations, 2 a layer without objects or nm missing.
SRC=${1:-.}
OBJ=${2:-build/obj}
LAYERS="util io container model quant check rules pipeline"
command -v nm >/dev/null 2>&1 || { echo "layers: nm is needed (binutils)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stfix-layers.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# The one awk definition of the order: may(L, M) is 1 when layer L may use M.
MAY='
function rank(l) {
    if (l == "util") return 0
    if (l == "io") return 1
    if (l == "container") return 2
    if (l == "model" || l == "quant") return 3
    if (l == "check" || l == "rules") return 4
    if (l == "pipeline") return 5
    return -1
}
function may(l, m) { return l == m || (rank(m) >= 0 && rank(m) < rank(l)) }
# experimental/L.h is the experimental half of the public header of layer L.
function hdr_layer(h) {
    sub(/^experimental\//, "", h)
    return h == "base" ? "util" : rank(h) >= 0 ? h : ""
}
'

# ---------------------------------------------------------------- symbols
# "D NAME LAYER OBJECT" for each global symbol an object defines, then
# "U NAME LAYER OBJECT" for each it references.
status=0
for l in $LAYERS; do
    set -- "$OBJ/lib/$l"/*.o
    if [ ! -f "$1" ]; then
        echo "layers: no objects for layer $l in $OBJ/lib/$l" >&2
        status=2
        continue
    fi
    # nm -A -P: "OBJECT: NAME TYPE ...", one symbol a line.
    nm -A -P --defined-only "$@" 2>/dev/null | sed "s|^$OBJ/||" |
        awk -v l="$l" '$3 ~ /^[A-TV-Z]$/ { sub(/:$/, "", $1); print "D", $2, l, $1 }' >>"$tmp/def"
    nm -A -P --undefined-only "$@" 2>/dev/null | sed "s|^$OBJ/||" |
        awk -v l="$l" '{ sub(/:$/, "", $1); print "U", $2, l, $1 }' >>"$tmp/use"
done
[ "$status" -eq 0 ] || exit "$status"
awk "$MAY"'
    FNR == NR { if (!($2 in at)) { at[$2] = $3; in_obj[$2] = $4 } next }
    ($2 in at) && !may($3, at[$2]) {
        printf "layers: %s (%s) references %s, defined in %s (%s): %s may not use %s\n",
               $4, $3, $2, in_obj[$2], at[$2], $3, at[$2]
    }' "$tmp/def" "$tmp/use" >"$tmp/out"

# ---------------------------------------------------------------- includes
# "FILE TARGET" for each #include of each file; TARGET is the path it
# resolves to in the tree ("" for a header from outside: the system's or a
# dependency's). A quoted name is looked up beside the file, then in lib/
# and include/; a bracketed one in include/ and lib/.
for f in "$SRC"/lib/*/*.[ch] "$SRC"/include/stfix.h "$SRC"/include/stfix/*.h \
    "$SRC"/include/stfix/experimental/*.h "$SRC"/cmd/*.[ch]; do
    [ -f "$f" ] || continue
    rel=${f#"$SRC"/}
    dir=${rel%/*}
    sed -n 's/^[ \t]*#[ \t]*include[ \t]*\([<"][^>"]*\)[>"].*/\1/p' "$f" | while read -r inc; do
        name=${inc#?}
        case $inc in
        \"*) cands="$dir/$name lib/$name include/$name" ;;
        *) cands="include/$name lib/$name" ;;
        esac
        target=
        for c in $cands; do
            if [ -f "$SRC/$c" ]; then target=$c; break; fi
        done
        case $target in
        *./*) # "lib/check/../util/util.h" and the like, normalized.
            target=$(echo "$target" | sed -e ':a' -e 's|[^/]*/\.\./||' -e 'ta' -e 's|\./||g') ;;
        esac
        echo "$rel ${target:--}"
    done
done >"$tmp/inc"
awk "$MAY"'
    function bad(why) { printf "layers: %s includes %s: %s\n", $1, $2, why }
    $2 == "-" { next }
    $1 ~ /^lib\// {
        split($1, p, "/"); l = p[2]
        if ($2 == "include/stfix.h") bad("the umbrella header; include the layers\x27 own headers")
        else if ($2 == "include/stfix/experimental.h")
            bad("the experimental umbrella; include the layers\x27 own halves")
        else if ($2 ~ /^include\/stfix\//) {
            h = $2; sub(/^include\/stfix\//, "", h); sub(/\.h$/, "", h); m = hdr_layer(h)
            if (m == "") bad("a public header outside the layer map")
            else if (!may(l, m)) bad(l " may not use " m)
        } else if ($2 ~ /^lib\//) {
            split($2, q, "/"); m = q[2]
            if (m == l) next
            if (!may(l, m)) bad(l " may not use " m)
            else if ($1 !~ /\.h$/) bad("another layer\x27s internal header; include it from " l "\x27s own")
        } else bad("a header outside lib/ and include/")
        next
    }
    $1 == "include/stfix/experimental.h" { next }
    $1 ~ /^include\/stfix\// {
        h = $1; sub(/^include\/stfix\//, "", h); sub(/\.h$/, "", h); l = hdr_layer(h)
        if ($2 == "include/stfix.h") bad("the umbrella header")
        else if ($2 ~ /^include\/stfix\//) {
            k = $2; sub(/^include\/stfix\//, "", k); sub(/\.h$/, "", k); m = hdr_layer(k)
            if (l == "" || m == "") bad("a public header outside the layer map")
            else if (!may(l, m)) bad(l " may not use " m)
        } else bad("a header that is not public")
        next
    }
    $1 ~ /^cmd\// && $2 != "include/stfix.h" && $2 !~ /^cmd\// {
        bad("cmd/ includes only stfix.h, system headers and its own")
    }' "$tmp/inc" >>"$tmp/out"

cat "$tmp/out"
[ ! -s "$tmp/out" ]
