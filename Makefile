# stfix — build, test, install.
#
#   make            ./stfix, libstfix.a, libstfix.so
#   make deps       install the Debian build/test dependencies (as root)
#   make check      every test (unit, CLI scenarios, fuzz corpora replayed, man-page lint)
#   make replay     only the fuzz corpora, each file through its harness
#   make lint       mandoc -Tlint -Wstyle over every man page (also in make check)
#   make demo       the main job on the bundled demo fixture
#   make readme     rerun the examples of README.md and rewrite the outputs that
#                   differ (tests/readme_examples.py; tests/cli/readme.sh compares)
#   make asan       the tests under AddressSanitizer + UBSan
#   make fuzz       build the libFuzzer harnesses (clang) and run each once over its
#                   corpus; FUZZ_SECONDS=N fuzzes each for N s (FUZZ_RUNS=N: N
#                   executions), one after the other,
#                   and prints executions, corpus size and crashes per harness (exit 1
#                   on any crash); FUZZ_MERGE=1 then minimizes tests/fuzz/corpus/
#   make bench      benchmarks, as ratios to a yardstick (BENCH_JSON=FILE;
#                   BENCH_SIZE=2G BENCH_REPS=5 for the end-to-end cases)
#   make install    PREFIX=/usr/local DESTDIR= (recipes in $(PREFIX)/share/stfix/rules,
#                   shell completion for bash and zsh in $(PREFIX)/share/...)
#   make man        regenerate man/stfix-checks.7 and the rule list of man/stfix.1
#                   from the rule catalogue (stfix explain --list --json)
#   make python     the Python package (lib/python, with this libstfix.so and the
#                   bundled recipes) as a wheel in build/python/, installed with
#                   PYTHON=python3 -m pip (PIP_FLAGS=, e.g. --user or --target DIR;
#                   PYTHON=VENV/bin/python for a virtual environment)
#
# WERROR=1 turns warnings into errors (CI does). V=1 shows the commands
# (otherwise make prints only diagnostics). SIMD=none builds without the
# AVX2/AVX-512 kernels (the default, SIMD=auto, has them when the compiler
# targets x86-64).

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc
WERROR ?= 0
SAN ?= 0
SIMD ?= auto
V ?= 0
# Recipes run without being echoed: make prints diagnostics only.
ifneq ($(V),1)
.SILENT:
endif

PKGS := yaml-0.1 libcjson libzstd libpcre2-8 libcrypto libxxhash libcurl
DEB_PKGS := build-essential pkg-config libyaml-dev libcjson-dev libzstd-dev libpcre2-dev libssl-dev libcmocka-dev libxxhash-dev zstd libcurl4-openssl-dev lighttpd lighttpd-mod-openssl openssl \
            clang libclang-rt-14-dev mandoc python3 python3-pytest python3-setuptools

# The version, from the one place it is written (include/stfix/base.h). The
# shared library's soname is libstfix.so.MAJOR, its real name
# libstfix.so.MAJOR.MINOR.PATCH.
VERSION_PARTS := $(shell sed -n 's/^.define STF_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9][0-9]*\)$$/\2/p' \
                   include/stfix/base.h)
ifneq ($(words $(VERSION_PARTS)),3)
$(error include/stfix/base.h: cannot read STF_VERSION_MAJOR/MINOR/PATCH)
endif
VERSION := $(word 1,$(VERSION_PARTS)).$(word 2,$(VERSION_PARTS)).$(word 3,$(VERSION_PARTS))
SONAME := libstfix.so.$(word 1,$(VERSION_PARTS))
SOREAL := libstfix.so.$(VERSION)

# pkg-config's flags for a set of packages, asked for the first time a rule
# needs them (so `make deps` and `make clean` work where they are missing);
# a package pkg-config cannot find stops make, naming it.
pkg_missing = $(strip $(shell for p in $(1); do pkg-config --exists $$p 2>/dev/null || echo $$p; done))
pkg_flags = $(if $(call pkg_missing,$(2)),$(error $(if $(shell command -v pkg-config),pkg-config\
  cannot find $(call pkg_missing,$(2)),pkg-config is not installed); `make deps` installs\
  the build dependencies),$(shell pkg-config $(1) $(2)))
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(call pkg_flags,--cflags,$$(PKGS)))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $$(call pkg_flags,--libs,$$(PKGS)))$(PKG_LIBS)
# libcurl's own static dependencies (nghttp2, ssh2, rtmp, ldap, ...) are many
# and rarely installed as archives: a program linking libstfix.a takes
# libcurl as a shared library, and the rest as archives where they exist.
PKGS_DYN_ONLY := libcurl
PKG_LIBS_STATIC = $(eval PKG_LIBS_STATIC := $$(call pkg_flags,--static --libs,$$(filter-out $$(PKGS_DYN_ONLY),$$(PKGS))) $$(call pkg_flags,--libs,$$(PKGS_DYN_ONLY)))$(PKG_LIBS_STATIC)
CMOCKA_CFLAGS = $(eval CMOCKA_CFLAGS := $$(call pkg_flags,--cflags,cmocka))$(CMOCKA_CFLAGS)
CMOCKA_LIBS = $(eval CMOCKA_LIBS := $$(call pkg_flags,--libs,cmocka))$(CMOCKA_LIBS)

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wconversion
ifeq ($(WERROR),1)
WARN += -Werror
endif
# -ffp-contract=off: the kernels' rounding is part of their contract (every SIMD
# variant bit-identical to the scalar one); no FMA contraction, no fast-math, ever.
CFLAGS ?= -O2 -g
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -ffp-contract=off -fno-fast-math \
              -Iinclude $(WARN) $(PKG_CFLAGS)
LDLIBS = $(PKG_LIBS) -lpthread -lm

ifeq ($(SAN),1)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

SIMD_AVX2 := -mavx2 -mf16c -mfma
SIMD_AVX512 := -mavx2 -mf16c -mfma -mavx512f -mavx512bw -mavx512vl -mavx512dq

# SIMD=auto has the x86 kernels (lib/quant/*_avx2.c, *_avx512.c) when the
# compiler targets x86-64; SIMD=none (or another target) builds the scalar
# ones only, with STF_NO_SIMD defined.
ifeq ($(SIMD),auto)
ifneq ($(filter x86_64-% amd64-%,$(shell $(CC) -dumpmachine)),)
SIMD_USE := x86
else
SIMD_USE := none
endif
else ifeq ($(SIMD),none)
SIMD_USE := none
else
$(error SIMD=$(SIMD): use SIMD=auto or SIMD=none)
endif

LIB_SRC := $(sort $(wildcard lib/*/*.c))
ifeq ($(SIMD_USE),none)
LIB_SRC := $(filter-out %_avx2.c %_avx512.c,$(LIB_SRC))
BASE_CFLAGS += -DSTF_NO_SIMD
endif
CMD_SRC := $(sort $(wildcard cmd/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
TSUP_SRC := $(sort $(wildcard tests/unit/support/*.c))
BENCH_SRC := $(sort $(wildcard tests/bench/*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/obj/%.o)
TSUP_OBJ := $(TSUP_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz-replay/%)
# The program's shared helpers (cmd/cli_*.c, no main()), for fuzz_cli_args.
CLI_SRC := $(filter cmd/cli_%.c,$(CMD_SRC))
REPLAY_OBJ := $(BUILD)/obj/tests/fuzz/driver.o $(BUILD)/obj/tests/fuzz/support.o \
              $(BUILD)/obj/tests/unit/support/st_tmp.o $(CLI_SRC:%.c=$(BUILD)/obj/%.o) \
              $(BUILD)/obj/gen/cli_builtin_recipes.o

STFIX_BIN := $(BUILD)/stfix
LIBA := $(BUILD)/libstfix.a
LIBSO := $(BUILD)/libstfix.so
LIBSO_FILES := $(BUILD)/$(SOREAL) $(BUILD)/$(SONAME) $(LIBSO)

.PHONY: FORCE all deps check unit cli replay lint man demo readme asan fuzz bench install uninstall clean \
        python
.DEFAULT_GOAL := all

all: $(STFIX_BIN) $(LIBA) $(LIBSO_FILES)
ifeq ($(BUILD),build)
# The default build also leaves copies at the top level.
all: stfix libstfix.a libstfix.so
stfix: $(STFIX_BIN)
	cp -f $< $@
libstfix.a: $(LIBA)
	cp -f $< $@
libstfix.so: $(BUILD)/$(SOREAL)
	cp -f $< $@
endif

# The library exports only what include/stfix/ marks STF_API. Only the
# library and its tests see lib/'s internal headers: cmd/ is built with
# -Iinclude alone (tests/layers.sh checks what each part includes).
$(LIB_OBJ): BASE_CFLAGS += -fvisibility=hidden -Ilib

$(BUILD)/obj/%_avx2.o: %_avx2.c $(BUILD)/simd
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SIMD_AVX2) -MMD -MP -c $< -o $@

$(BUILD)/obj/%_avx512.o: %_avx512.c $(BUILD)/simd
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SIMD_AVX512) -MMD -MP -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c $(BUILD)/simd
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(CMOCKA_CFLAGS) -Ilib -Itests/unit -Icmd -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.c $(BUILD)/simd
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# $(BUILD)/simd holds the SIMD choice the objects were built with, so that
# switching SIMD rebuilds them.
$(BUILD)/simd: FORCE
	@mkdir -p $(@D)
	@echo '$(SIMD_USE)' | cmp -s - $@ || echo '$(SIMD_USE)' >$@

# The installed recipes' directory is compiled into the recipe search path
# (cmd/cli_rules_path.c); $(BUILD)/prefix holds the PREFIX it was built for,
# so that a different PREFIX rebuilds it.
RULES_DIR := $(PREFIX)/share/stfix/rules
$(BUILD)/prefix: FORCE
	@mkdir -p $(@D)
	@echo '$(RULES_DIR)' | cmp -s - $@ || echo '$(RULES_DIR)' >$@
$(BUILD)/obj/cmd/cli_rules_path.o: BASE_CFLAGS += -DSTFIX_RULES_DIR='"$(RULES_DIR)"'
$(BUILD)/obj/cmd/cli_rules_path.o: $(BUILD)/prefix
FORCE:

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

# The real name, and the soname and development links to it.
$(BUILD)/$(SOREAL): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/$(SONAME): $(BUILD)/$(SOREAL)
	ln -sf $(SOREAL) $@
$(LIBSO): $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# The bundled recipes and parallel-style profiles, embedded in the program
# (cmd/embed_recipes.sh), so that -r NAME and --tp-profile NAME find them
# wherever it runs; files on the search path come first (cmd/cli_recipes.c,
# cmd/cli_tp.c).
BUILTIN_RECIPES := $(sort $(wildcard rules/*.yaml))
BUILTIN_PROFILES := $(sort $(wildcard rules/tp/*.yaml))
BUILTIN_C := $(BUILD)/gen/cli_builtin_recipes.c
BUILTIN_OBJ := $(BUILD)/obj/gen/cli_builtin_recipes.o
$(BUILTIN_C): cmd/embed_recipes.sh $(BUILTIN_RECIPES) $(BUILTIN_PROFILES)
	@mkdir -p $(@D)
	sh cmd/embed_recipes.sh $@ $(BUILTIN_RECIPES) --tp $(BUILTIN_PROFILES)
$(BUILTIN_OBJ): $(BUILTIN_C) $(BUILD)/simd
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -Icmd -MMD -MP -c $< -o $@

$(STFIX_BIN): $(CMD_OBJ) $(BUILTIN_OBJ) $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(BUILTIN_OBJ) $(LIBA) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TSUP_OBJ) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(TSUP_OBJ) $(LIBA) $(CMOCKA_LIBS) $(LDLIBS)

# A test of the program's own cmd/cli_NAME.c (tests/unit/test_cli_NAME.c)
# links the program's shared helpers too (cmd/cli_*.c, no main()), which
# call each other.
$(BUILD)/tests/test_cli_%: $(BUILD)/obj/tests/unit/test_cli_%.o $(CLI_SRC:%.c=$(BUILD)/obj/%.o) \
                           $(BUILTIN_OBJ) $(TSUP_OBJ) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

# A fuzz harness with the replay main(): every corpus file as a regression test.
$(BUILD)/fuzz-replay/%: $(BUILD)/obj/tests/fuzz/%.o $(REPLAY_OBJ) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(REPLAY_OBJ) $(LIBA) $(LDLIBS)

# Keep test, bench and replay objects (pattern-rule intermediates) between runs.
.SECONDARY: $(UNIT_SRC:%.c=$(BUILD)/obj/%.o) $(TSUP_OBJ) $(BENCH_SRC:%.c=$(BUILD)/obj/%.o) \
            $(FUZZ_SRC:%.c=$(BUILD)/obj/%.o) $(REPLAY_OBJ)

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(TSUP_OBJ:.o=.d) \
         $(UNIT_SRC:tests/unit/%.c=$(BUILD)/obj/tests/unit/%.d) \
         $(FUZZ_SRC:%.c=$(BUILD)/obj/%.d) $(REPLAY_OBJ:.o=.d) \
         $(BENCH_SRC:%.c=$(BUILD)/obj/%.d) $(BUILTIN_OBJ:.o=.d)

# ------------------------------------------------------------------ deps
deps:
	@missing=""; \
	for p in $(PKGS) cmocka; do pkg-config --exists $$p 2>/dev/null || missing=1; done; \
	for c in cc g++ pkg-config clang mandoc python3 zstd lighttpd openssl; do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	[ -e /usr/lib/lighttpd/mod_openssl.so ] || missing=1; \
	{ python3 -c 'import pytest, setuptools' || /usr/bin/python3 -c 'import pytest, setuptools'; } \
	  >/dev/null 2>&1 || missing=1; \
	[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ] || \
	  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || missing=1; \
	if [ -z "$$missing" ]; then echo "deps: everything is present"; exit 0; fi; \
	cmd="apt-get update && apt-get install -y --no-install-recommends $(DEB_PKGS)"; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "deps: missing build dependencies; run as root:"; echo "  $$cmd"; exit 1; fi; \
	echo "deps: $$cmd"; \
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEB_PKGS)

# ------------------------------------------------------------------ tests
check: all $(UNIT_BIN) $(REPLAY_BIN)
	@STFIX=$(abspath $(STFIX_BIN)) BUILD=$(BUILD) sh tests/run.sh

unit: $(UNIT_BIN)
	@STFIX=$(abspath $(STFIX_BIN)) BUILD=$(BUILD) ONLY=unit sh tests/run.sh

cli: all
	@STFIX=$(abspath $(STFIX_BIN)) BUILD=$(BUILD) ONLY=cli sh tests/run.sh

replay: $(REPLAY_BIN)
	@BUILD=$(BUILD) ONLY=fuzz sh tests/run.sh

# Every page in man/, style level included (tests/lint_man.sh); also part of check.
lint:
	@sh tests/lint_man.sh

# The rule documentation is generated from the catalogue the program carries;
# make check (tests/cli/catalogue.sh) fails when the committed pages differ.
man: $(STFIX_BIN)
	$(STFIX_BIN) explain --list --json >$(BUILD)/catalogue.json
	python3 man/mkchecks.py $(BUILD)/catalogue.json man/stfix.1 man

asan:
	$(MAKE) --no-print-directory BUILD=build/asan SAN=1 CFLAGS="-O1 -g" check

demo: all
	@sh tests/demo.sh $(abspath $(STFIX_BIN))

# The README's examples are real runs: each block after "<!-- example -->"
# is run and its output written back where it differs (make check compares).
readme: all
	python3 tests/readme_examples.py $(STFIX_BIN) --update

# ------------------------------------------------------------------ python
# The wheel bundles the real-named shared library and the recipes; pip
# installs it offline into PYTHON's environment (no build step there).
PYTHON ?= python3
PIP_FLAGS ?=
WHEEL := $(BUILD)/python/stfix-$(VERSION)-py3-none-linux_x86_64.whl
$(WHEEL): $(BUILD)/$(SOREAL) lib/python/mkwheel.py $(wildcard lib/python/stfix/*.py) \
          $(BUILTIN_RECIPES) $(BUILTIN_PROFILES)
	python3 lib/python/mkwheel.py $(VERSION) $(BUILD)/$(SOREAL) rules $(BUILD)/python >/dev/null
python: $(WHEEL)
	$(PYTHON) -m pip install --no-deps --no-index --force-reinstall --disable-pip-version-check \
	  $(PIP_FLAGS) $(WHEEL)

# ------------------------------------------------------------------ fuzz
# Each harness is built twice: with clang and libFuzzer here (make fuzz),
# and with $(CC) and a replay main() for make check (REPLAY_BIN above).
FUZZ_SECONDS ?= 0
FUZZ_RUNS ?=
FUZZ_CC ?= clang
FUZZ_BUILD := build/fuzz
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -DSTF_NO_SIMD -O1 -g -ffp-contract=off -fno-omit-frame-pointer \
               -Iinclude -Ilib -Itests/unit -Icmd $(PKG_CFLAGS) -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined
FUZZ_SUP_SRC := $(filter-out %_avx2.c %_avx512.c,$(LIB_SRC)) tests/fuzz/support.c \
                tests/unit/support/st_tmp.c $(CLI_SRC) $(BUILTIN_C)
FUZZ_SUP_OBJ := $(FUZZ_SUP_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/libfuzzsup.a: $(FUZZ_SUP_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/%: tests/fuzz/%.c $(FUZZ_BUILD)/libfuzzsup.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -o $@ $< $(FUZZ_BUILD)/libfuzzsup.a $(LDLIBS)

.SECONDARY: $(FUZZ_SUP_OBJ)
-include $(FUZZ_SUP_OBJ:.o=.d) $(FUZZ_BIN:=.d)

fuzz: $(FUZZ_BIN)
	@FUZZ_RUNS=$(FUZZ_RUNS) sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

# ------------------------------------------------------------------ bench
BENCH_JSON ?=
bench: all $(BENCH_BIN)
	@STFIX=$(abspath $(STFIX_BIN)) BENCH_JSON=$(BENCH_JSON) sh tests/bench/run.sh $(BENCH_BIN)

# ------------------------------------------------------------------ install
# Every page of man/ goes to the section directory its suffix names (man1,
# man5, man7).
MAN_DIR := $(PREFIX)/share/man
# Where bash-completion and zsh look by default under a prefix.
BASH_COMP_DIR := $(PREFIX)/share/bash-completion/completions
ZSH_COMP_DIR := $(PREFIX)/share/zsh/site-functions
MAN_PAGES := $(sort $(wildcard man/*.[1-9]))
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/stfix \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(RULES_DIR)
	install -m 755 $(STFIX_BIN) $(DESTDIR)$(PREFIX)/bin/stfix
	install -m 644 $(LIBA) $(DESTDIR)$(PREFIX)/lib/libstfix.a
	install -m 755 $(BUILD)/$(SOREAL) $(DESTDIR)$(PREFIX)/lib/$(SOREAL)
	ln -sf $(SOREAL) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libstfix.so
	install -m 644 include/stfix.h $(DESTDIR)$(PREFIX)/include/stfix.h
	install -m 644 include/stfix/*.h $(DESTDIR)$(PREFIX)/include/stfix/
	install -d $(DESTDIR)$(PREFIX)/include/stfix/experimental
	install -m 644 include/stfix/experimental/*.h $(DESTDIR)$(PREFIX)/include/stfix/experimental/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	  -e 's|@LIBS_PRIVATE@|$(strip $(PKG_LIBS_STATIC))|g' \
	  lib/stfix.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/stfix.pc
	for f in $(MAN_PAGES); do \
	  install -d "$(DESTDIR)$(MAN_DIR)/man$${f##*.}" && \
	  install -m 644 "$$f" "$(DESTDIR)$(MAN_DIR)/man$${f##*.}/" || exit 1; \
	done
	install -m 644 rules/*.yaml $(DESTDIR)$(RULES_DIR)/
	install -d $(DESTDIR)$(RULES_DIR)/tp
	install -m 644 rules/tp/*.yaml $(DESTDIR)$(RULES_DIR)/tp/
	install -d $(DESTDIR)$(BASH_COMP_DIR) $(DESTDIR)$(ZSH_COMP_DIR)
	install -m 644 cmd/completion/stfix.bash $(DESTDIR)$(BASH_COMP_DIR)/stfix
	install -m 644 cmd/completion/_stfix $(DESTDIR)$(ZSH_COMP_DIR)/_stfix

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/stfix $(DESTDIR)$(PREFIX)/lib/libstfix.a \
	  $(DESTDIR)$(PREFIX)/lib/libstfix.so $(DESTDIR)$(PREFIX)/lib/$(SONAME) \
	  $(DESTDIR)$(PREFIX)/lib/$(SOREAL) \
	  $(DESTDIR)$(PREFIX)/include/stfix.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/stfix.pc
	for f in $(MAN_PAGES); do rm -f "$(DESTDIR)$(MAN_DIR)/man$${f##*.}/$${f#man/}"; done
	rm -rf $(DESTDIR)$(PREFIX)/include/stfix
	for f in rules/*.yaml rules/tp/*.yaml; do rm -f "$(DESTDIR)$(RULES_DIR)/$${f#rules/}"; done
	-rmdir $(DESTDIR)$(RULES_DIR)/tp $(DESTDIR)$(RULES_DIR) $(DESTDIR)$(PREFIX)/share/stfix 2>/dev/null
	rm -f $(DESTDIR)$(BASH_COMP_DIR)/stfix $(DESTDIR)$(ZSH_COMP_DIR)/_stfix

clean:
	rm -rf build stfix libstfix.a libstfix.so
