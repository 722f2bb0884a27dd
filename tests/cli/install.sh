# make install / uninstall into a DESTDIR: every installed piece is usable
# (binary runs, a program builds against the header + pkg-config + static
# library and links), and uninstall removes every file it installed.
. tests/cli/lib.sh
D="$T_TMP/dest"
P=/usr/local
t_run "install" 0 env -u BUILD -u SAN make -s install PREFIX=$P DESTDIR="$D"
for f in bin/stfix lib/libstfix.a lib/libstfix.so.0 lib/libstfix.so include/stfix.h \
         include/stfix/container.h lib/pkgconfig/stfix.pc share/man/man1/stfix.1 \
         share/man/man5/stfix-rules.5; do
    t_true "installed $f" test -e "$D$P/$f"
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
t_run "uninstall" 0 env -u BUILD -u SAN make -s uninstall PREFIX=$P DESTDIR="$D"
t_true "nothing left after uninstall" test -z "$(find "$D" -type f -o -type l)"
