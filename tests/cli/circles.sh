# Objects of one folder that use each other in a circle (tests/circles.sh;
# lib/README.md, Circles that stay). First the check itself, on objects made
# here: a pair and a three-way circle in cmd/, a circle lib/README.md names
# and one it does not, a bullet naming a circle that is gone and one naming
# no objects; it must print exactly these. Then the tree's own objects.
. tests/cli/lib.sh
CC=${CC:-cc}
OBJ=${BUILD:-build}/obj

F="$T_TMP/fake"
mkdir -p "$F/src" "$F/lib"
# obj NAME ROOM CALLS...: NAME.o in $F/obj/ROOM defining NAME() and calling
# each of CALLS.
obj() {
    _n=$1 _r=$2
    shift 2
    {
        for _c in "$@"; do echo "int $_c(void);"; done
        printf 'int %s(void) { return 0' "$_n"
        for _c in "$@"; do printf ' + %s()' "$_c"; done
        echo '; }'
    } >"$F/src/$_n.c"
    mkdir -p "$F/obj/$_r"
    t_true "compile $_r/$_n.c" "$CC" -c -o "$F/obj/$_r/$_n.o" "$F/src/$_n.c"
}
obj a cmd b
obj b cmd a
obj c cmd d
obj d cmd e
obj e cmd c
obj k1 lib/check k2
obj k2 lib/check k1
obj s1 lib/check s2
obj s2 lib/check s3
obj s3 lib/check s1 k1
obj u lib/util
obj x1 lib/container x2
obj x2 lib/container x1
mkdir -p "$F/lib/check"
: >"$F/lib/check/k_avx2.c"
: >"$F/lib/check/k_avx512.c"
cat >"$F/lib/README.md" <<'M'
# A map

- `s1.o s2.o s3.o`: a list outside the section counts for nothing.

## Circles that stay

Each circle with its reason:

- `k1.o` `k2.o` `k_avx2.o`: they need each other (the last is not
  built here), for a reason on two lines.
- `k_avx512.o u.o`: a circle not built here.
- `other.o gone.o`: it was removed.
- what the objects once were.

## Data flow
M
t_run "the check finds each circle" 1 sh tests/circles.sh "$F" "$F/obj"
cat >"$T_TMP/want" <<'W'
circles: cmd: a.o b.o: a circle, and cmd may have none
circles: cmd: c.o d.o e.o: a circle, and cmd may have none
circles: lib/container: x1.o x2.o: a circle, and lib/container may have none
circles: lib/check: s1.o s2.o s3.o: a circle lib/README.md does not name
circles: lib/README.md names gone.o other.o: no circle of these objects is left
circles: lib/README.md: a bullet of Circles that stay names no objects: what the objects once were.
W
t_stdout_is "the check finds each circle" "$T_TMP/want"
t_true "the check finds each circle: no stderr" test ! -s "$T_ERR"

# A strict room without a folder is skipped; lib/ alone, with its circle
# named, is clean.
rm -r "$F/obj/cmd" "$F/obj/lib/container" "$F/obj/lib/check"/s*.o
sed -i '/other.o gone.o/d; /what the objects/d' "$F/lib/README.md"
t_run "no cmd/ folder, circles named" 0 sh tests/circles.sh "$F" "$F/obj"
t_stdout_is "no cmd/ folder, circles named" /dev/null

rm "$F"/obj/lib/util/*.o
t_run "a room without objects" 2 sh tests/circles.sh "$F" "$F/obj"
t_stderr_is "a room without objects" "circles: no objects in $F/obj/lib/util"
rm -r "$F/obj/lib"
t_run "no rooms of lib/" 2 sh tests/circles.sh "$F" "$F/obj"
t_stderr_is "no rooms of lib/" "circles: no rooms of lib/ in $F/obj/lib"

# The tree itself.
t_run "cmd/ and lib/ keep to their circles" 0 sh tests/circles.sh . "$OBJ"
t_stdout_is "cmd/ and lib/ keep to their circles" /dev/null
