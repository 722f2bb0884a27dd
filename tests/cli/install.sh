# make install / uninstall into a DESTDIR: every installed piece is usable
# (binary runs, a program builds against the header + pkg-config + static
# library and links), and uninstall removes every file it installed. Then
# into a temporary PREFIX (its own build): -r NAME and `rules list` find the
# installed recipes from any directory, and programs build against the
# installed stfix.pc, shared (linked to the soname) and static.
. tests/cli/lib.sh
# The sub-makes take nothing from a make around the tests (make asan passes
# BUILD, SAN and CFLAGS down in MAKEFLAGS).
D="$T_TMP/dest"
P=/usr/local
t_run "install" 0 env -u BUILD -u SAN -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s install PREFIX=$P DESTDIR="$D"
for f in bin/stfix lib/libstfix.a include/stfix.h \
         include/stfix/container.h lib/pkgconfig/stfix.pc share/man/man1/stfix.1 \
         share/man/man5/stfix-rules.5 share/man/man7/stfix-checks.7 \
         share/man/man7/stfix-defects.7 share/man/man7/stfix-convrot.7 \
         share/stfix/rules/repair-scales.yaml share/stfix/rules/sglang-int8-convrot.yaml; do
    t_true "installed $f" test -e "$D$P/$f"
done
for f in man/*.[1-9]; do
    t_true "installed $f" cmp "$f" "$D$P/share/man/man${f##*.}/${f#man/}"
done
# Shell completion where bash-completion and zsh look under the prefix.
t_true "installed bash completion" cmp cmd/completion/stfix.bash \
    "$D$P/share/bash-completion/completions/stfix"
t_true "installed zsh completion" cmp cmd/completion/_stfix "$D$P/share/zsh/site-functions/_stfix"
t_run "installed binary" 0 "$D$P/bin/stfix" --version
t_stdout_has "installed binary" "stfix "
# The shared library: real name libstfix.so.MAJOR.MINOR.PATCH (the version
# stfix --version prints), soname libstfix.so.MAJOR, links to both.
V=$(sed -n 's/^stfix //p' "$T_OUT")
t_true "version $V is MAJOR.MINOR.PATCH" sh -c "echo '$V' | grep -qxE '[0-9]+\.[0-9]+\.[0-9]+'"
SONAME=libstfix.so.${V%%.*}
t_true "installed lib/libstfix.so.$V" test -f "$D$P/lib/libstfix.so.$V" -a ! -L "$D$P/lib/libstfix.so.$V"
t_true "lib/$SONAME -> libstfix.so.$V" test "$(readlink "$D$P/lib/$SONAME")" = "libstfix.so.$V"
t_true "lib/libstfix.so -> $SONAME" test "$(readlink "$D$P/lib/libstfix.so")" = "$SONAME"
t_run "readelf -d libstfix.so.$V" 0 readelf -d "$D$P/lib/libstfix.so.$V"
t_stdout_has "readelf -d libstfix.so.$V" "Library soname: [$SONAME]"
t_true "stfix.pc: Version $V" grep -qx "Version: $V" "$D$P/lib/pkgconfig/stfix.pc"
cat >"$T_TMP/use.c" <<'C'
#include <stdio.h>
#include <stfix.h>
int main(void)
{
    printf("%s %u\n", stf_dtype_name(STF_BF16), stf_dtype_bits(STF_F4));
    return 0;
}
C
PC="$D$P/lib/pkgconfig"
t_run "compile against installed" 0 sh -c "cc -std=c11 -o '$T_TMP/use' '$T_TMP/use.c' \
    -I'$D$P/include' \$(PKG_CONFIG_PATH='$PC' pkg-config --cflags stfix) \
    '$D$P/lib/libstfix.a' \$(pkg-config --libs yaml-0.1 libcjson libzstd libpcre2-8 libcrypto) -lpthread -lm"
t_run "run linked program" 0 "$T_TMP/use"
t_stdout_has "run linked program" "BF16 4"
t_run "uninstall" 0 env -u BUILD -u SAN -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s uninstall PREFIX=$P DESTDIR="$D"
t_true "nothing left after uninstall" test -z "$(find "$D" -type f -o -type l)"

# A temporary PREFIX, built for it: the recipes' directory is compiled in.
P2="$T_TMP/prefix"
t_run "install to a prefix" 0 env -u SAN -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s install BUILD="$T_TMP/build" PREFIX="$P2"
for f in rules/*.yaml rules/tp/*.yaml; do
    t_true "installed $f" cmp "$f" "$P2/share/stfix/$f"
done
mkdir -p "$T_TMP/elsewhere"
F=$(pwd)/fixtures/comfy/r14_scale_bf16.safetensors
t_run "installed: rules list" 0 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' rules list"
t_stdout_has "installed: rules list" "repair-scales                repair      $P2/share/stfix/rules/repair-scales.yaml                Header-only"
t_true "installed: rules list has every bundled recipe" test "$(wc -l <"$T_OUT")" -eq "$(ls rules/*.yaml | wc -l)"
t_run "installed: tp profiles" 0 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' check --tp-profile list"
t_true "installed: tp profiles are 3" test "$(wc -l <"$T_OUT")" -eq 3
t_run "installed: plan -r NAME" 0 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' plan '$F' -r repair-scales --json"
t_stdout_has "installed: plan -r NAME" '"recipe_sha256": "'"$(sha256sum rules/repair-scales.yaml | cut -c1-64)"'"'
t_run "installed: miss" 2 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' plan '$F' -r nope"
t_stderr_is "installed: miss" "stfix: plan: recipe 'nope' not found (searched nope.yaml in: $P2/share/stfix/rules, ./rules; and the built-in recipes)"
# A program built with the installed stfix.pc: against the shared library
# (only -lstfix: the dependencies are private) it needs the soname; with
# --static it gets them all.
cat >"$T_TMP/ver.c" <<'C'
#include <stdio.h>
#include <stfix.h>
int main(void)
{
    printf("%s %u %s\n", stf_version(), stf_version_number(), STF_VERSION_STRING);
    return 0;
}
C
PCP="PKG_CONFIG_PATH='$P2/lib/pkgconfig'"
t_stdout_is_text() { printf '%s\n' "$2" >"$T_TMP/want"; t_stdout_is "$1" "$T_TMP/want"; }
t_run "pkg-config --libs stfix" 0 sh -c "$PCP pkg-config --libs stfix | sed 's/ *\$//'"
t_stdout_is_text "pkg-config --libs stfix" "-L$P2/lib -lstfix"
# The libraries stfix links are private, and so are their include paths:
# a consumer's Cflags are stfix's own directory alone (no -I/usr/include/cjson).
t_run "pkg-config --cflags stfix" 0 sh -c "$PCP pkg-config --cflags stfix | sed 's/ *\$//'"
t_stdout_is_text "pkg-config --cflags stfix" "-I$P2/include"
t_run "pkg-config --print-requires-private stfix" 0 sh -c "$PCP pkg-config --print-requires-private stfix"
t_true "pkg-config --print-requires-private stfix: none" test ! -s "$T_OUT"
t_run "pkg-config --print-requires stfix" 0 sh -c "$PCP pkg-config --print-requires stfix"
t_true "pkg-config --print-requires stfix: none" test ! -s "$T_OUT"
t_run "pkg-config --static --libs stfix" 0 sh -c "$PCP pkg-config --static --libs stfix"
for l in -lyaml -lcjson -lzstd -lpcre2-8 -lcrypto -lxxhash -lcurl -lpthread -lm; do
    t_true "pkg-config --static --libs stfix: $l" grep -q -- " $l\( \|\$\)" "$T_OUT"
done
t_run "link to the shared library" 0 sh -c "cc -std=c11 -o '$T_TMP/ver' '$T_TMP/ver.c' \
    \$($PCP pkg-config --cflags --libs stfix)"
t_run "NEEDED $SONAME" 0 readelf -d "$T_TMP/ver"
t_stdout_has "NEEDED $SONAME" "Shared library: [$SONAME]"
t_run "run against the shared library" 0 env LD_LIBRARY_PATH="$P2/lib" "$T_TMP/ver"
NUM=$(echo "$V" | awk -F. '{ print $1 * 10000 + $2 * 100 + $3 }')
t_stdout_is_text "run against the shared library" "$V $NUM $V"
t_run "link statically" 0 sh -c "cc -std=c11 -o '$T_TMP/ver_static' '$T_TMP/ver.c' \
    \$($PCP pkg-config --cflags stfix) '$P2/lib/libstfix.a' \
    \$($PCP pkg-config --static --libs stfix | sed 's/ -lstfix / /')"
t_run "run the static program" 0 "$T_TMP/ver_static"
t_stdout_is_text "run the static program" "$V $NUM $V"

# The consumer example (tests/consumer/check_sglang.c): a program that opens
# a checkpoint and checks it against SGLang through <stfix.h> alone, built
# against the installed stfix.pc as above, shared (as C and as C++, which
# needs the headers' extern "C") and static, on the demo checkpoint (six
# R-rule errors), a healthy one and a path that is not there.
CS=tests/consumer/check_sglang.c
cat >"$T_TMP/cs_demo" <<'W'
R5 error blocks.0.mlp.fc2
R15 error blocks.0.attn.qkv
R15 error blocks.0.conv_in
R14 error blocks.0.mlp.fc1
R30 error -
R25 error blocks.0.conv_in
exit 1
W
t_run "consumer: build, shared" 0 sh -c "cc -std=c99 -pedantic -Wall -Wextra -Werror -o '$T_TMP/cs' $CS \
    \$($PCP pkg-config --cflags --libs stfix)"
t_run "consumer: build, shared, C++" 0 sh -c "c++ -x c++ -std=c++11 -Wall -Wextra -Werror -o '$T_TMP/cs_cxx' $CS \
    -x none \$($PCP pkg-config --cflags --libs stfix)"
t_run "consumer: build, static" 0 sh -c "cc -std=c99 -pedantic -Wall -Wextra -Werror -o '$T_TMP/cs_static' $CS \
    \$($PCP pkg-config --cflags stfix) '$P2/lib/libstfix.a' \
    \$($PCP pkg-config --static --libs stfix | sed 's/ -lstfix / /')"
t_run "consumer: not linked to the shared library when static" 0 readelf -d "$T_TMP/cs_static"
t_true "consumer: not linked to the shared library when static: no $SONAME" \
    sh -c "! grep -qF '[$SONAME]' '$T_OUT'"
for cs in cs cs_cxx cs_static; do
    t_run "consumer $cs: demo" 1 env LD_LIBRARY_PATH="$P2/lib" "$T_TMP/$cs" fixtures/demo/demo.safetensors
    t_stdout_is "consumer $cs: demo" "$T_TMP/cs_demo"
    t_run "consumer $cs: healthy" 0 env LD_LIBRARY_PATH="$P2/lib" "$T_TMP/$cs" fixtures/demo/healthy.safetensors
    t_stdout_is_text "consumer $cs: healthy" "exit 0"
    t_run "consumer $cs: missing" 2 env LD_LIBRARY_PATH="$P2/lib" "$T_TMP/$cs" "$T_TMP/none.safetensors"
    t_stdout_is_text "consumer $cs: missing" "not found: $T_TMP/none.safetensors: cannot open: No such file or directory
exit 2"
done

t_run "uninstall from the prefix" 0 env -u SAN -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s uninstall BUILD="$T_TMP/build" PREFIX="$P2"
t_true "no recipes left" test ! -e "$P2/share/stfix"
t_true "nothing left in the prefix" test -z "$(find "$P2" -type f -o -type l)"
# The bundled recipes are built into the program: found without the files.
t_run "uninstalled: built in" 0 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$T_TMP/build/stfix' plan '$F' -r repair-scales"
