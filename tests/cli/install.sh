# make install / uninstall into a DESTDIR: every installed piece is usable
# (binary runs, a program builds against the header + pkg-config + static
# library and links), and uninstall removes every file it installed. Then
# into a temporary PREFIX (its own build): -r NAME and `rules list` find the
# installed recipes from any directory.
. tests/cli/lib.sh
# The sub-makes take nothing from a make around the tests (make asan passes
# BUILD, SAN and CFLAGS down in MAKEFLAGS).
D="$T_TMP/dest"
P=/usr/local
t_run "install" 0 env -u BUILD -u SAN -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s install PREFIX=$P DESTDIR="$D"
for f in bin/stfix lib/libstfix.a lib/libstfix.so.0 lib/libstfix.so include/stfix.h \
         include/stfix/container.h lib/pkgconfig/stfix.pc share/man/man1/stfix.1 \
         share/man/man5/stfix-rules.5 share/man/man7/stfix-checks.7 \
         share/man/man7/stfix-defects.7 share/man/man7/stfix-convrot.7 \
         share/stfix/rules/repair-scales.yaml share/stfix/rules/sglang-int8-convrot.yaml; do
    t_true "installed $f" test -e "$D$P/$f"
done
for f in man/*.[1-9]; do
    t_true "installed $f" cmp "$f" "$D$P/share/man/man${f##*.}/${f#man/}"
done
t_run "installed binary" 0 "$D$P/bin/stfix" --version
t_stdout_has "installed binary" "stfix "
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
for f in rules/*.yaml; do
    t_true "installed $f" cmp "$f" "$P2/share/stfix/$f"
done
mkdir -p "$T_TMP/elsewhere"
F=$(pwd)/fixtures/comfy/r14_scale_bf16.safetensors
t_run "installed: rules list" 0 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' rules list"
t_stdout_has "installed: rules list" "repair-scales                $P2/share/stfix/rules/repair-scales.yaml                Header-only"
t_true "installed: rules list has 5" test "$(wc -l <"$T_OUT")" -eq 5
t_run "installed: plan -r NAME" 0 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' plan '$F' -r repair-scales --json"
t_stdout_has "installed: plan -r NAME" '"recipe_sha256": "'"$(sha256sum rules/repair-scales.yaml | cut -c1-64)"'"'
t_run "installed: miss" 2 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$P2/bin/stfix' plan '$F' -r nope"
t_stderr_is "installed: miss" "stfix: plan: recipe 'nope' not found (searched nope.yaml in: $P2/share/stfix/rules, ./rules)"
t_run "uninstall from the prefix" 0 env -u SAN -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s uninstall BUILD="$T_TMP/build" PREFIX="$P2"
t_true "no recipes left" test ! -e "$P2/share/stfix"
t_run "uninstalled: miss" 2 sh -c "cd '$T_TMP/elsewhere' && env -u STFIX_RULES_PATH '$T_TMP/build/stfix' plan '$F' -r repair-scales"
