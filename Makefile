# pyprof top-level Makefile. See README.md and docs/testing.md for the targets.
#
#   make            build/libpyprof.so, build/pyprof-collector, build/pyprof
#   make check      the whole test suite (what CI and the README run)
#   make check-quick unit tests and one smoke test
#   make check-new  the whole suite on CPython 3.14 and 3.15 (Debian sid's)
#   make check-debug-offsets  e2e checks on 3.13-3.15 with their compiled
#                   layout rows withheld (layouts from _Py_DebugOffsets)
#   make bench      benchmarks (figures for docs/performance.md)
#   make deps       install the Debian packages the build and tests need
#   make install    PREFIX=/usr/local by default (MANDIR=PREFIX/share/man); runs ldconfig
#   make wheel      build/dist/pyprof-VERSION-py2.py3-none-manylinux_2_N_x86_64.whl
#   make deb        build/dist/pyprof_VERSION_ARCH.deb (collector service included)

PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
BUILD  := build
CC     ?= cc

WARN   := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wformat=2 -Werror
OPT    ?= -O2 -g -fno-omit-frame-pointer
CFLAGS_COMMON := -std=gnu11 $(OPT) $(WARN) -Iinclude -D_GNU_SOURCE
ifdef SANITIZE
CFLAGS_COMMON += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
LDSAN := -fsanitize=$(SANITIZE)
endif

# The injected library: no sanitizers, hidden symbols, static TLS.
PRELOAD_CFLAGS := -std=gnu11 $(OPT) $(WARN) -Iinclude -D_GNU_SOURCE -fPIC \
          -fvisibility=hidden -ftls-model=initial-exec -Ipreload -ffunction-sections
# preload/ by execution context: signal/ (signal handlers), interpose/ (the
# libc functions pyprof wraps: they run in signal handlers and (v)fork
# children too), native/ (native stacks), the rest at the root (constructor,
# agent thread, program threads). -ffunction-sections gives every function
# its own section, which tools/check-sigsafe reads as a call graph.
PRELOAD_DIRS := preload preload/signal preload/interpose preload/native
PRELOAD_SRC  := $(foreach d,$(PRELOAD_DIRS),$(wildcard $(d)/*.c))
PRELOAD_HDR  := $(foreach d,$(PRELOAD_DIRS),$(wildcard $(d)/*.h)) $(wildcard include/pyprof/*.h)
PRELOAD_OBJ  := $(PRELOAD_SRC:preload/%.c=$(BUILD)/preload/%.o)
PRELOAD_LIBS := -ldl -lpthread -lrt

# Sanitizer builds (SANITIZE set, make asan / ubsan / check-asan / check-ubsan):
# the unit tests link libpreload.a built from a sanitized copy of the preload
# objects ($(BUILD)/preload-san/), while libpyprof.so keeps the plain objects:
# it is preloaded into interpreters that carry no sanitizer runtime.
ifdef SANITIZE
PRELOAD_AR_OBJ := $(PRELOAD_SRC:preload/%.c=$(BUILD)/preload-san/%.o)
$(BUILD)/preload-san/%.o: preload/%.c $(PRELOAD_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -c $< -o $@
else
PRELOAD_AR_OBJ := $(PRELOAD_OBJ)
endif

PROTO_C := $(BUILD)/gen/profile.pb-c.c
PROTO_H := $(BUILD)/gen/profile.pb-c.h
# opentelemetry-proto's profiles (OTLP, --otlp), vendored under proto/ at the
# release proto/opentelemetry/README names. protoc-c keeps each file's path
# under build/gen, so the generated headers include each other as
# "opentelemetry/proto/...", found through -I$(BUILD)/gen.
OTLP_PROTO := $(addprefix proto/opentelemetry/proto/,common/v1/common.proto \
              resource/v1/resource.proto profiles/v1development/profiles.proto \
              collector/profiles/v1development/profiles_service.proto)
OTLP_C := $(OTLP_PROTO:proto/%.proto=$(BUILD)/gen/%.pb-c.c)
OTLP_H := $(OTLP_PROTO:proto/%.proto=$(BUILD)/gen/%.pb-c.h)
OTLP_OBJ := $(OTLP_C:.c=.o)
# collector/: the two programs' main()s at its root, the libraries in one
# folder each. pyprof-collector links common, symbols, daemon, http and
# views/view_read + view_tree + view_flame (the HTTP flame graph); pyprof
# links common, cli and views, no daemon object. Includes are written as
# paths from collector/ ("daemon/conn.h"), hence -Icollector only.
COLL_MAINS := collector/main_collector.c collector/main_pyprof.c
COLL_DIRS := common symbols daemon http push views cli
COLL_SRC := $(foreach d,$(COLL_DIRS),$(wildcard collector/$(d)/*.c))
COLL_HDR := $(foreach d,$(COLL_DIRS),$(wildcard collector/$(d)/*.h))
# preload/config.c too: `pyprof record` checks PYPROF_* with the library's
# own rules and messages.
COLL_OBJ := $(COLL_SRC:collector/%.c=$(BUILD)/collector/%.o) $(BUILD)/gen/profile.pb-c.o $(OTLP_OBJ) \
            $(BUILD)/collector/preload_config.o
COLL_CFLAGS := $(CFLAGS_COMMON) -I$(BUILD)/gen -Icollector
COLL_LIBS := -lprotobuf-c -lz -lm
# libcurl: pyprof-collector's HTTP client for --pyroscope (collector/push/),
# on a thread of its own; pyprof and libpyprof.so do not link it.
PUSH_LIBS := -lcurl -lpthread

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/libpyprof.so $(BUILD)/pyprof-collector $(BUILD)/pyprof

$(BUILD)/preload/%.o: preload/%.c $(PRELOAD_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

$(BUILD)/libpyprof.so: $(PRELOAD_OBJ)
	$(CC) -shared -o $@ $^ $(PRELOAD_LIBS) -Wl,-z,now -Wl,--version-script=preload/exports.map

$(BUILD)/libpreload.a: $(PRELOAD_AR_OBJ)
	rm -f $@ && ar rcs $@ $^

# One grouped target (&:): protoc-c writes both files in one run. Two plain
# targets let make -j run it twice, one run truncating the .c while the
# other's was being compiled (an empty profile.pb-c.o; CI's UBSan link failed).
$(PROTO_C) $(PROTO_H) &: proto/profile.proto | $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen proto/profile.proto

$(BUILD)/gen/profile.pb-c.o: $(PROTO_C)
	$(CC) -std=gnu11 $(OPT) -I$(BUILD)/gen -c $< -o $@

# The four OTLP files in one protoc-c run, grouped for the same reason.
# (None uses proto3 `optional`, which Debian 12's protoc-c 1.4.1 refuses.)
$(OTLP_C) $(OTLP_H) &: $(OTLP_PROTO) | $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $(OTLP_PROTO)

$(OTLP_OBJ): %.o: %.c $(OTLP_H)
	$(CC) -std=gnu11 $(OPT) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/collector/%.o: collector/%.c $(PROTO_H) $(OTLP_H) $(COLL_HDR) $(wildcard include/pyprof/*.h) | $(BUILD)/collector
	@mkdir -p $(@D)
	$(CC) $(COLL_CFLAGS) -c $< -o $@

$(BUILD)/collector/preload_config.o: preload/config.c preload/config.h preload/log.h $(wildcard include/pyprof/*.h) | $(BUILD)/collector
	$(CC) $(CFLAGS_COMMON) -c $< -o $@

$(BUILD)/libcollector.a: $(COLL_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/pyprof-collector: $(BUILD)/collector/main_collector.o $(BUILD)/libcollector.a
	$(CC) $(LDSAN) -o $@ $^ $(COLL_LIBS) $(PUSH_LIBS)

$(BUILD)/pyprof: $(BUILD)/collector/main_pyprof.o $(BUILD)/libcollector.a
	$(CC) $(LDSAN) -o $@ $^ $(COLL_LIBS)

# Unit tests link against the collector archive and the preload archive.
$(BUILD)/tests/%: tests/unit/%.c tests/unit/check.h $(BUILD)/libcollector.a $(BUILD)/libpreload.a | $(BUILD)/tests
	$(CC) $(COLL_CFLAGS) -Ipreload -Itests/unit $< -o $@ $(BUILD)/libcollector.a $(BUILD)/libpreload.a $(COLL_LIBS) $(PRELOAD_LIBS) $(LDSAN)

unit: $(UNIT_BIN)

# Benchmark programs (tests/bench/*.c): plain C, wire.h only.
$(BUILD)/bench/%: tests/bench/%.c $(wildcard include/pyprof/*.h) | $(BUILD)/bench
	$(CC) $(CFLAGS_COMMON) $< -o $@ $(LDSAN)

$(BUILD)/preload $(BUILD)/collector $(BUILD)/gen $(BUILD)/tests $(BUILD)/bench:
	mkdir -p $@

check: all unit check-sigsafe check-includes $(BUILD)/fuzz/wire_fuzz
	tests/run

check-regrtest: all unit
	REGRTEST=1 T="regression tests" tests/run

# The whole suite on the newest interpreters alone (CPython 3.14 and 3.15
# from Debian sid, tools/get-sid-pythons; make check runs them too).
check-new: all unit check-sigsafe check-includes
	PYPROF_TEST_PYTHONS=new tests/run

# 3.13, 3.14 and 3.15 as if this build did not know them: the compiled
# rows are withheld (PYPROF_TEST_WITHHOLD_TABLE=row, a test switch) and
# the library lays them out from each interpreter's own _Py_DebugOffsets.
check-debug-offsets: all unit check-sigsafe check-includes
	PYPROF_TEST_WITHHOLD_TABLE=row PYPROF_TEST_PYTHONS="3.13 3.14 3.15" \
		E2E="dbgoffsets smoke stacks truth threads native" T="$(T)" tests/run

check-quick: all unit check-includes
	QUICK=1 tests/run

bench: all $(BUILD)/bench/ingest $(BUILD)/bench/malloc_loop
	tests/bench/run

# Fuzzing the HTTP request parser with afl++ (Debian's afl++): FUZZ_SECONDS
# of afl-fuzz over tests/fuzz/http_seeds/, under ASan; anything it finds
# is copied to tests/fuzz/http_found/ (replayed by test_http_parse).
FUZZ_SECONDS ?= 300
fuzz-http: | $(BUILD)/fuzz
	AFL_USE_ASAN=1 afl-cc -std=gnu11 -O1 -g -Icollector -D_GNU_SOURCE \
	  tests/fuzz/http_parse_fuzz.c collector/http/http_parse.c -o $(BUILD)/fuzz/http_parse
	rm -rf $(BUILD)/fuzz/http_out
	AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	  afl-fuzz -V $(FUZZ_SECONDS) -m none -i tests/fuzz/http_seeds \
	  -o $(BUILD)/fuzz/http_out -- $(BUILD)/fuzz/http_parse
	tools/fuzz-report $(BUILD)/fuzz/http_out tests/fuzz/http_found

$(BUILD)/fuzz:
	mkdir -p $@

# Fuzzing the wire decoder with libFuzzer (clang), under ASan and UBSan:
# tests/fuzz/wire_fuzz.c feeds each input to the collector's real
# decoder, aggregation and pprof builder. The collector's sources are
# built again, instrumented, in $(BUILD)/fuzz/wire/. The corpus starts
# from tests/data/wire/ and tests/fuzz/wire_seeds/; what the fuzzer adds
# stays in $(BUILD)/fuzz/wire_corpus/, and each finding is saved to
# tests/fuzz/wire_found/ (replayed by tests/unit/test_wire_fuzz.c).
#   make fuzz-wire                       FUZZ_SECONDS (300) of fuzzing
#   make fuzz-wire FUZZ_RUNS=10000000    a number of executions instead
# check-fuzz-wire, part of `make check`: a fixed short budget
# (FUZZ_CHECK_RUNS executions, a few tens of seconds) through
# tests/fuzz/run-wire, which prints the figures and fails on a finding.
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -Iinclude \
  -I$(BUILD)/gen -Icollector -D_GNU_SOURCE $(FUZZ_SAN)
FUZZ_OTLP_OBJ := $(OTLP_PROTO:proto/%.proto=$(BUILD)/fuzz/wire/gen/%.pb-c.o)
FUZZ_OBJ := $(COLL_SRC:collector/%.c=$(BUILD)/fuzz/wire/%.o) $(BUILD)/fuzz/wire/profile.pb-c.o \
            $(FUZZ_OTLP_OBJ) \
            $(BUILD)/fuzz/wire/preload_config.o
FUZZ_RUNS ?=
FUZZ_CHECK_RUNS ?= 100000
FUZZ_MAX_LEN ?= 16384

$(BUILD)/fuzz/wire/%.o: collector/%.c $(PROTO_H) $(OTLP_H) $(wildcard collector/*/*.h) $(wildcard include/pyprof/*.h) | $(BUILD)/fuzz/wire
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_config.o: preload/config.c preload/config.h $(wildcard include/pyprof/*.h) | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/profile.pb-c.o: $(PROTO_C) | $(BUILD)/fuzz/wire
	$(FUZZ_CC) -std=gnu11 -O1 -g $(FUZZ_SAN) -I$(BUILD)/gen -c $< -o $@

$(FUZZ_OTLP_OBJ): $(BUILD)/fuzz/wire/gen/%.o: $(BUILD)/gen/%.c $(OTLP_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -O1 -g $(FUZZ_SAN) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/fuzz/wire_fuzz: tests/fuzz/wire_fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ $(COLL_LIBS) $(PUSH_LIBS)

$(BUILD)/fuzz/wire:
	mkdir -p $@

fuzz-wire: $(BUILD)/fuzz/wire_fuzz
	tools/fuzz-wire $(BUILD)/fuzz/wire_fuzz $(BUILD)/fuzz/wire_corpus \
	  $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) \
	  -max_len=$(FUZZ_MAX_LEN)

check-fuzz-wire: $(BUILD)/fuzz/wire_fuzz
	FUZZ_CHECK_RUNS=$(FUZZ_CHECK_RUNS) tests/versions/fuzz_wire.sh

# Every function of preload/signal/ and preload/interpose/, every *_sigsafe
# function, and all they call, may use only what tools/check-sigsafe allows.
# tests/sigsafe/ holds a fixture that reaches malloc through a function not
# named *_sigsafe in another file: the check must reject both, naming the
# path, or it could not fail.
SIGSAFE_FIXTURE := $(BUILD)/sigsafe-fixture/signal/handler.o $(BUILD)/sigsafe-fixture/helper.o
$(BUILD)/sigsafe-fixture/%.o: tests/sigsafe/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -c $< -o $@
check-sigsafe: $(PRELOAD_OBJ) $(SIGSAFE_FIXTURE)
	tools/check-sigsafe $(BUILD)/preload/signal $(BUILD)/preload/interpose -- $(PRELOAD_OBJ)
	@if tools/check-sigsafe $(BUILD)/sigsafe-fixture/signal -- $(SIGSAFE_FIXTURE) >$(BUILD)/sigsafe-fixture/out; then \
		echo "check-sigsafe: the fixture that calls malloc passed"; exit 1; fi
	@grep -q 'grow (helper.o) uses malloc.*via fixture_handler -> fixture_helper -> grow' $(BUILD)/sigsafe-fixture/out && \
	 grep -q 'fixture_handler calls fixture_helper, .*name it \*_sigsafe' $(BUILD)/sigsafe-fixture/out || \
		{ echo "check-sigsafe: the fixture was rejected for the wrong reason:"; cat $(BUILD)/sigsafe-fixture/out; exit 1; }
	@echo "check-sigsafe: the fixture that reaches malloc is rejected"

# No cycle between the files of preload/ or collector/, neither through
# their includes nor through the symbols their objects use from each
# other; tools/include-cycles.allow lists those still being taken apart.
CYCLES_ALLOW := tools/include-cycles.allow
check-includes: $(PRELOAD_OBJ) $(COLL_OBJ)
	tools/check-includes --allow $(CYCLES_ALLOW) preload collector
	tools/check-includes --allow $(CYCLES_ALLOW) --link preload.o $(PRELOAD_OBJ)
	tools/check-includes --allow $(CYCLES_ALLOW) --link collector.o $(COLL_OBJ)

asan:
	$(MAKE) SANITIZE=address BUILD=build-asan all unit
ubsan:
	$(MAKE) SANITIZE=undefined BUILD=build-ubsan all unit

# The unit tests and the collector's end-to-end tests under ASan (with
# LeakSanitizer) and under UBSan, each process's reports counted as failures
# by tests/run: SAN_E2E names the tests/e2e files, SAN_PYTHONS the
# interpreters (PYPROF_TEST_PYTHONS; 3.11 is the one most files prefer).
# The collector and pyprof are sanitized, libpyprof.so is not (see
# PRELOAD_AR_OBJ), nor are the version drivers run.
SAN_E2E     ?= smoke collector robust limits record views http ctl processes push
SAN_PYTHONS ?= 3.11
SAN_RUN = PYPROF_BUILD=$(1) E2E="$(SAN_E2E)" PYPROF_TEST_PYTHONS="$(SAN_PYTHONS)" tests/run
check-asan: asan
	$(call SAN_RUN,build-asan)
check-ubsan: ubsan
	$(call SAN_RUN,build-ubsan)

release:
	$(MAKE) OPT="-O2 -DNDEBUG"

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	  build-essential libunwind-dev zlib1g-dev libprotobuf-c-dev \
	  protobuf-c-compiler bats golang-go python3 python3-numpy procps \
	  libxml2-utils chromium python3-jsonschema curl patchelf \
	  man-db groff-base clang libclang-rt-14-dev libcurl4-openssl-dev \
	  protobuf-compiler python3-protobuf openssl
	$(MAKE) deps-npm
	tools/get-sid-pythons

# afl++ for make fuzz-http only (it brings clang and LLVM: not for CI).
deps-fuzz:
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends afl++

# speedscope's schema and importer for tests/e2e/views.bats, pinned, in
# tests/node/ (not committed). npm comes with the machine's nodejs when it
# has one (Debian's npm package would replace a newer nodejs).
SPEEDSCOPE_VERSION := 1.25.0
deps-npm:
	command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y --no-install-recommends npm
	mkdir -p tests/node
	cd tests/node && npm install --no-audit --no-fund --no-save \
	  speedscope@$(SPEEDSCOPE_VERSION)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib
	install -m 0755 $(BUILD)/pyprof $(BUILD)/pyprof-collector $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/libpyprof.so $(DESTDIR)$(PREFIX)/lib/
	install -d $(DESTDIR)$(PREFIX)/lib/pyprof/python
	install -m 0644 preload/python/pyprof.py $(DESTDIR)$(PREFIX)/lib/pyprof/python/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m 0644 man/pyprof.1 man/pyprof-collector.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/libpyprof.7 $(DESTDIR)$(MANDIR)/man7/
	-[ -z "$(DESTDIR)" ] && ldconfig

# A wheel (tools/wheel, the standard library only): the programs, the
# library, the pyprof module and the manual pages, with the libraries a
# base system lacks bundled (patchelf, as auditwheel does), in build/dist/.
# pip install build/dist/pyprof-*.whl; see docs/install.md.
wheel: all
	tools/wheel $(BUILD) $(BUILD)/dist

# A Debian package (tools/deb, dpkg-deb; packaging/deb/): the programs, the
# library, the module for the system Python, the manual pages and a
# systemd unit running one collector for the machine; in build/dist/.
deb: all
	tools/deb $(BUILD) $(BUILD)/dist

clean:
	rm -rf build build-asan build-ubsan

format:
	clang-format -i $(PRELOAD_SRC) $(filter preload/%,$(PRELOAD_HDR)) collector/*.c collector/*/*.[ch] include/pyprof/*.h tests/unit/*.[ch]

.PHONY: wheel deb deps-fuzz fuzz-http fuzz-wire check-fuzz-wire all unit check check-regrtest check-new check-debug-offsets check-quick bench check-sigsafe check-includes asan ubsan check-asan check-ubsan release deps deps-npm install clean format
