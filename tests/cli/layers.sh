# The layering of lib/ (tests/layers.sh; lib/README.md, Layers). First the
# check itself, on a small tree made here with one violation of each kind:
# it must name every one. Then the library's own objects and sources.
. tests/cli/lib.sh
CC=${CC:-cc}
OBJ=${BUILD:-build}/obj

F="$T_TMP/fake"
mkdir -p "$F/include/stfix" "$F/cmd"
for l in util io container model quant check rules pipeline; do mkdir -p "$F/lib/$l"; done
for h in base container model quant check rules pipeline; do : >"$F/include/stfix/$h.h"; done
: >"$F/include/stfix.h"
: >"$F/lib/util/util.h"
: >"$F/lib/pipeline/p.h"
: >"$F/cmd/cli.h"
# One function per layer, each calling only below, except: util calls
# pipeline (upward), io calls container (the layer just above it) and model
# calls quant (its sibling).
cat >"$F/lib/util/u.c" <<'C'
#include <stddef.h>
#include "util.h"
int stf_plan_build(void);
int stf__u(void) { return 1; }
int stf_u_up(void) { return stf_plan_build(); }
C
cat >"$F/lib/io/i.c" <<'C'
int stf__u(void);
int stf_c(void);
int stf__i(void) { return stf__u(); }
int stf__i_up(void) { return stf_c(); }
C
cat >"$F/lib/container/c.c" <<'C'
#include "stfix/base.h"
#include "stfix/container.h"
#include "util/util.h"
int stf__i(void);
int stf_c(void) { return stf__i(); }
C
cat >"$F/lib/model/m.c" <<'C'
#include "stfix/check.h"
int stf_c(void);
int stf_q(void);
int stf_m(void) { return stf_c() + stf_q(); }
C
cat >"$F/lib/quant/q.c" <<'C'
#include "../../include/stfix.h"
int stf_q(void) { return 2; }
C
cat >"$F/lib/check/k.c" <<'C'
#include "pipeline/p.h"
int stf_m(void);
int stf_k(void) { return stf_m(); }
C
cat >"$F/lib/rules/r.c" <<'C'
int stf_r(void) { return 3; }
C
cat >"$F/lib/pipeline/p.c" <<'C'
#include "p.h"
#include "stfix/rules.h"
int stf_k(void);
int stf_r(void);
int stf_plan_build(void) { return stf_k() + stf_r(); }
C
printf '#include "stfix/pipeline.h"\n#include "stfix.h"\n' >"$F/include/stfix/quant.h"
printf '#include <stdio.h>\n#include <stfix.h>\n#include "cli.h"\n#include <stfix/base.h>\n#include "util/util.h"\n' \
    >"$F/cmd/main.c"
for c in "$F"/lib/*/*.c; do
    o="$F/obj/${c#"$F"/}"
    mkdir -p "${o%/*}"
    t_true "compile ${c#"$F"/}" "$CC" -c -I"$F/lib" -I"$F/include" -o "${o%.c}.o" "$c"
done
t_run "the check finds each violation" 1 sh tests/layers.sh "$F" "$F/obj"
cat >"$T_TMP/want" <<'W'
layers: lib/util/u.o (util) references stf_plan_build, defined in lib/pipeline/p.o (pipeline): util may not use pipeline
layers: lib/io/i.o (io) references stf_c, defined in lib/container/c.o (container): io may not use container
layers: lib/model/m.o (model) references stf_q, defined in lib/quant/q.o (quant): model may not use quant
layers: lib/check/k.c includes lib/pipeline/p.h: check may not use pipeline
layers: lib/container/c.c includes lib/util/util.h: another layer's internal header; include it from container's own
layers: lib/model/m.c includes include/stfix/check.h: model may not use check
layers: lib/quant/q.c includes include/stfix.h: the umbrella header; include the layers' own headers
layers: include/stfix/quant.h includes include/stfix/pipeline.h: quant may not use pipeline
layers: include/stfix/quant.h includes include/stfix.h: the umbrella header
layers: cmd/main.c includes include/stfix/base.h: cmd/ includes only stfix.h, system headers and its own
layers: cmd/main.c includes lib/util/util.h: cmd/ includes only stfix.h, system headers and its own
W
t_stdout_is "the check finds each violation" "$T_TMP/want"
rm -f "$F"/obj/lib/rules/*.o
t_run "a layer without objects" 2 sh tests/layers.sh "$F" "$F/obj"
t_stderr_is "a layer without objects" "layers: no objects for layer rules in $F/obj/lib/rules"

# The library itself.
t_run "lib/ keeps its layers" 0 sh tests/layers.sh . "$OBJ"
t_stdout_is "lib/ keeps its layers" /dev/null
