# pyprof top-level Makefile. See README.md for the targets.
#
#   make            build/libpyprof.so, build/pyprof-collector, build/pyprof
#   make check      the whole test suite (what CI and the README run)
#   make check-quick unit tests and one smoke test
#   make bench      benchmarks (figures for README.md)
#   make deps       install the Debian packages the build and tests need
#   make install    PREFIX=/usr/local by default; runs ldconfig

PREFIX ?= /usr/local
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
          -fvisibility=hidden -ftls-model=initial-exec
PRELOAD_SRC  := $(wildcard preload/*.c)
PRELOAD_OBJ  := $(PRELOAD_SRC:preload/%.c=$(BUILD)/preload/%.o)
PRELOAD_LIBS := -ldl -lpthread -lrt

PROTO_C := $(BUILD)/gen/profile.pb-c.c
PROTO_H := $(BUILD)/gen/profile.pb-c.h
COLL_MAINS := collector/main_collector.c collector/main_pyprof.c
COLL_SRC := $(filter-out $(COLL_MAINS),$(wildcard collector/*.c))
COLL_OBJ := $(COLL_SRC:collector/%.c=$(BUILD)/collector/%.o) $(BUILD)/gen/profile.pb-c.o
COLL_CFLAGS := $(CFLAGS_COMMON) -I$(BUILD)/gen -Icollector
COLL_LIBS := -lprotobuf-c -lz -lm

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/libpyprof.so $(BUILD)/pyprof-collector $(BUILD)/pyprof

$(BUILD)/preload/%.o: preload/%.c $(wildcard preload/*.h) $(wildcard include/pyprof/*.h) | $(BUILD)/preload
	$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

$(BUILD)/libpyprof.so: $(PRELOAD_OBJ)
	$(CC) -shared -o $@ $^ $(PRELOAD_LIBS) -Wl,-z,now -Wl,--version-script=preload/exports.map

$(BUILD)/libpreload.a: $(PRELOAD_OBJ)
	rm -f $@ && ar rcs $@ $^

$(PROTO_C) $(PROTO_H): proto/profile.proto | $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen proto/profile.proto

$(BUILD)/gen/profile.pb-c.o: $(PROTO_C)
	$(CC) -std=gnu11 $(OPT) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/collector/%.o: collector/%.c $(PROTO_H) $(wildcard collector/*.h) $(wildcard include/pyprof/*.h) | $(BUILD)/collector
	$(CC) $(COLL_CFLAGS) -c $< -o $@

$(BUILD)/libcollector.a: $(COLL_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/pyprof-collector: $(BUILD)/collector/main_collector.o $(BUILD)/libcollector.a
	$(CC) $(LDSAN) -o $@ $^ $(COLL_LIBS)

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

check: all unit check-sigsafe $(BUILD)/fuzz/wire_fuzz
	tests/run

check-regrtest: all unit
	REGRTEST=1 T="regression tests" tests/run

check-quick: all unit
	QUICK=1 tests/run

bench: all $(BUILD)/bench/ingest $(BUILD)/bench/malloc_loop
	tests/bench/run

# Fuzzing the HTTP request parser with afl++ (Debian's afl++): FUZZ_SECONDS
# of afl-fuzz over tests/fuzz/http_seeds/, under ASan; anything it finds
# is copied to tests/fuzz/http_found/ (replayed by test_http_parse).
FUZZ_SECONDS ?= 300
fuzz-http: | $(BUILD)/fuzz
	AFL_USE_ASAN=1 afl-cc -std=gnu11 -O1 -g -Icollector -D_GNU_SOURCE \
	  tests/fuzz/http_parse_fuzz.c collector/http_parse.c -o $(BUILD)/fuzz/http_parse
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
FUZZ_OBJ := $(COLL_SRC:collector/%.c=$(BUILD)/fuzz/wire/%.o) $(BUILD)/fuzz/wire/profile.pb-c.o
FUZZ_RUNS ?=
FUZZ_CHECK_RUNS ?= 100000
FUZZ_MAX_LEN ?= 16384

$(BUILD)/fuzz/wire/%.o: collector/%.c $(PROTO_H) $(wildcard collector/*.h) $(wildcard include/pyprof/*.h) | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/profile.pb-c.o: $(PROTO_C) | $(BUILD)/fuzz/wire
	$(FUZZ_CC) -std=gnu11 -O1 -g $(FUZZ_SAN) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/fuzz/wire_fuzz: tests/fuzz/wire_fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ $(COLL_LIBS)

$(BUILD)/fuzz/wire:
	mkdir -p $@

fuzz-wire: $(BUILD)/fuzz/wire_fuzz
	tools/fuzz-wire $(BUILD)/fuzz/wire_fuzz $(BUILD)/fuzz/wire_corpus \
	  $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) \
	  -max_len=$(FUZZ_MAX_LEN)

check-fuzz-wire: $(BUILD)/fuzz/wire_fuzz
	FUZZ_CHECK_RUNS=$(FUZZ_CHECK_RUNS) tests/versions/fuzz_wire.sh

# Signal-context objects may call only what this list allows.
check-sigsafe: $(PRELOAD_OBJ)
	tools/check-sigsafe $(BUILD)/preload/sig_*.o

asan:
	$(MAKE) SANITIZE=address BUILD=build-asan all unit
ubsan:
	$(MAKE) SANITIZE=undefined BUILD=build-ubsan all unit

release:
	$(MAKE) OPT="-O2 -DNDEBUG"

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	  build-essential libunwind-dev zlib1g-dev libprotobuf-c-dev \
	  protobuf-c-compiler bats golang-go python3 python3-numpy procps \
	  libxml2-utils chromium python3-jsonschema curl \
	  clang libclang-rt-14-dev
	$(MAKE) deps-npm

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
	-[ -z "$(DESTDIR)" ] && ldconfig

clean:
	rm -rf build build-asan build-ubsan

format:
	clang-format -i preload/*.[ch] collector/*.[ch] include/pyprof/*.h tests/unit/*.[ch]

.PHONY: deps-fuzz fuzz-http fuzz-wire check-fuzz-wire all unit check check-regrtest check-quick bench check-sigsafe asan ubsan release deps deps-npm install clean format
