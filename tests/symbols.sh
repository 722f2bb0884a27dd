# The global symbols of objects, read with nm; sourced by tests/layers.sh
# and tests/circles.sh, which build their graphs of "this object uses a
# symbol that object defines" from it.
#
# symbols BASE OBJECT...: one line per global symbol of each OBJECT on
# stdout: first "D NAME OBJECT" for each one it defines, then "U NAME
# OBJECT" for each one it references and leaves to another object; OBJECT
# is the path as given, less a leading BASE/. The caller checks that nm is
# there.
symbols() {
    _sym_base=$1
    shift
    # nm -A -P: "OBJECT: NAME TYPE ...", one symbol a line. An upper-case
    # type but U is a global definition; lower case is the object's own.
    nm -A -P --defined-only "$@" 2>/dev/null | awk -v b="$_sym_base/" '
        $3 ~ /^[A-TV-Z]$/ {
            sub(/:$/, "", $1)
            if (index($1, b) == 1) $1 = substr($1, length(b) + 1)
            print "D", $2, $1
        }'
    nm -A -P --undefined-only "$@" 2>/dev/null | awk -v b="$_sym_base/" '{
            sub(/:$/, "", $1)
            if (index($1, b) == 1) $1 = substr($1, length(b) + 1)
            print "U", $2, $1
        }'
}
