# Every public header compiles on its own as C99 and as C++11, and declares
# its functions inside extern "C" (tests/headers.sh). First the check itself,
# on headers made here with one fault each: it must name each one. Then
# include/.
. tests/cli/lib.sh
F="$T_TMP/include"
mkdir -p "$F/stfix"
G_ON='#ifdef __cplusplus
extern "C" {
#endif'
G_OFF='#ifdef __cplusplus
}
#endif'
# Sound: guarded, self-contained, C99 and C++.
printf '%s\n' '#ifndef OK_H' '#define OK_H' '#include <stddef.h>' '#define STF_API' "$G_ON" \
    'STF_API size_t stf_ok(const char *s);' "$G_OFF" '#endif' >"$F/stfix/ok.h"
# size_t without <stddef.h>: not self-contained.
printf '%s\n' '#ifndef ALONE_H' '#define ALONE_H' "$G_ON" 'size_t stf_alone(void);' "$G_OFF" \
    '#endif' >"$F/stfix/alone.h"
# A C++ keyword as a parameter name.
printf '%s\n' '#ifndef CXX_H' '#define CXX_H' "$G_ON" 'int stf_cxx(int new);' "$G_OFF" \
    '#endif' >"$F/stfix/cxx.h"
# C11 only (C++11 has static_assert, not _Static_assert).
printf '%s\n' '#ifndef C11_H' '#define C11_H' '_Static_assert(1, "c11");' '#endif' >"$F/stfix/c11.h"
# A declaration after the guard closed.
printf '%s\n' '#ifndef LINK_H' '#define LINK_H' '#define STF_API' "$G_ON" 'STF_API int stf_in(void);' \
    "$G_OFF" 'STF_API int stf_out(void);' '#endif' >"$F/stfix/link.h"
# No include guard: a typedef repeated is C11 and C++, not C99.
printf '%s\n' 'typedef int stf_twice;' >"$F/stfix/twice.h"
printf '%s\n' '#include "stfix/ok.h"' >"$F/stfix.h"
t_run "the check finds each fault" 1 sh tests/headers.sh "$F"
cat >"$T_TMP/want" <<'W'
headers: stfix/alone.h does not compile alone as C99
headers: stfix/alone.h does not compile alone as C++11
headers: stfix/c11.h does not compile alone as C99
headers: stfix/c11.h does not compile alone as C++11
headers: stfix/cxx.h does not compile alone as C++11
headers: stfix/link.h:11: a declaration outside extern "C"
headers: stfix/twice.h does not compile alone as C99
W
t_stdout_is "the check finds each fault" "$T_TMP/want"
t_stderr_has "the check finds each fault" "alone.h:6:"

t_run "include/ headers stand alone" 0 sh tests/headers.sh include
t_stdout_is "include/ headers stand alone" /dev/null
t_true "include/ headers stand alone: no messages" test ! -s "$T_ERR"
