# pyprof top-level Makefile. See README.md and docs/testing.md for the targets.
#
#   make            build/libpyprof.so, build/pyprof-collector, build/pyprof
#   make check      the whole test suite (what CI and the README run)
#   make check-quick unit tests and one smoke test
#   make check-new  the whole suite on CPython 3.14 and 3.15 (Debian sid's)
#   make check-debug-offsets  e2e checks on 3.13-3.15 with their compiled
#                   layout rows withheld (layouts from _Py_DebugOffsets)
#   make check-san  unit and collector e2e tests under ASan+UBSan (CI)
#   make format-check  the sources against .clang-format (in make check)
#   make bench      benchmarks (figures for docs/performance.md)
#   make deps       install the Debian packages building and running need
#   make test-deps  and those the tests need (make check), as root
#   make install    PREFIX=/usr/local by default (MANDIR=PREFIX/share/man); runs ldconfig
#   make wheel      build/dist/pyprof-VERSION-py2.py3-none-manylinux_2_N_x86_64.whl
#   make deb        build/dist/pyprof_VERSION_ARCH.deb (collector service included)

PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
BUILD  := build
CC     ?= cc

# Header dependencies: every compile writes its .d beside its object
# (-MMD, the headers it read; -MP, a phony target per header so that a
# deleted header does not stop make), included at the end of this file:
# an edit rebuilds the objects that include what changed, and only those.
DEPFLAGS := -MMD -MP

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
# preload/ by execution context, lowest layer first (tools/layers, enforced
# by check-includes): cpython/ (CPython's layouts), base/ (log, clocks, the
# fault guard, the sample ring, the settings: no context of their own),
# native/ (native stacks), signal/ (code run in signal handlers and in the
# allocation hooks), sample/ (sampling's set-up and its threads), agent/
# (constructor, agent thread, the collector's connection) and interpose/
# (every exported symbol, a shim onto its module: they run in signal
# handlers and (v)fork children too). -ffunction-sections gives every
# function its own section, which tools/check-sigsafe reads as a call graph.
# The folders and their order are tools/layers' (lowest first), which
# make check-includes holds the includes and the link to.
layers_of = $(filter-out < . preload,$(shell sed -n 's/^layers $(1): //p' tools/layers))
PRELOAD_DIRS := $(addprefix preload/,$(call layers_of,preload))
PRELOAD_SRC  := $(foreach d,$(PRELOAD_DIRS),$(wildcard $(d)/*.c))
PRELOAD_HDR  := $(foreach d,$(PRELOAD_DIRS),$(wildcard $(d)/*.h))
PRELOAD_OBJ  := $(PRELOAD_SRC:preload/%.c=$(BUILD)/preload/%.o)
PRELOAD_LIBS := -ldl -lpthread -lrt

# Sanitizer builds (SANITIZE set, make san / check-san, or asan, ubsan...):
# the unit tests link libpreload.a built from a sanitized copy of the preload
# objects ($(BUILD)/preload-san/), while libpyprof.so keeps the plain objects:
# it is preloaded into interpreters that carry no sanitizer runtime. Those
# plain objects, and the generated protobuf code (never sanitized either),
# are the plain build's ($(PLAIN)/): a sanitizer build makes them there, once,
# and links $(BUILD)/libpyprof.so to $(PLAIN)'s instead of compiling them again.
PLAIN ?= build
ifdef SANITIZE
PRELOAD_AR_OBJ := $(PRELOAD_SRC:preload/%.c=$(BUILD)/preload-san/%.o)
$(BUILD)/preload-san/%.o: preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) $(DEPFLAGS) -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -c $< -o $@
GEN := $(PLAIN)/gen
else
PRELOAD_AR_OBJ := $(PRELOAD_OBJ)
GEN := $(BUILD)/gen
endif

PROTO_C := $(GEN)/profile.pb-c.c
PROTO_H := $(GEN)/profile.pb-c.h
PROTO_OBJ := $(GEN)/profile.pb-c.o
# opentelemetry-proto's profiles (OTLP, --otlp), vendored under proto/ at the
# release proto/opentelemetry/README names. protoc-c keeps each file's path
# under build/gen, so the generated headers include each other as
# "opentelemetry/proto/...", found through -I$(GEN).
OTLP_PROTO := $(addprefix proto/opentelemetry/proto/,common/v1/common.proto \
              resource/v1/resource.proto profiles/v1development/profiles.proto \
              collector/profiles/v1development/profiles_service.proto)
OTLP_C := $(OTLP_PROTO:proto/%.proto=$(GEN)/%.pb-c.c)
OTLP_H := $(OTLP_PROTO:proto/%.proto=$(GEN)/%.pb-c.h)
OTLP_OBJ := $(OTLP_C:.c=.o)
# collector/: the two programs' main()s at its root, the libraries in one
# folder each. pyprof-collector links common, symbols, daemon, http and
# views/view_read + view_tree + view_flame (the HTTP flame graph); pyprof
# links common, cli and views, no daemon object. Includes are written as
# paths from collector/ ("daemon/conn.h"), hence -Icollector only.
COLL_MAINS := collector/main_collector.c collector/main_pyprof.c \
              collector/collector_cmdline.c collector/collector_cmdline.h
COLL_DIRS := $(call layers_of,collector)
COLL_SRC := $(foreach d,$(COLL_DIRS),$(wildcard collector/$(d)/*.c))
# preload/base/config.c too: `pyprof record` checks PYPROF_* with the library's
# own rules and messages.
COLL_OBJ := $(COLL_SRC:collector/%.c=$(BUILD)/collector/%.o) $(PROTO_OBJ) $(OTLP_OBJ) \
            $(BUILD)/collector/preload_config.o $(BUILD)/collector/preload_pyabi.o \
            $(BUILD)/collector/remote/remote_walk_frames.o $(BUILD)/collector/preload_pycode.o \
            $(BUILD)/collector/remote/remote_walk_pydict.o $(BUILD)/collector/preload_pydict.o
COLL_CFLAGS := $(CFLAGS_COMMON) -I$(GEN) -Icollector
COLL_LIBS := -lprotobuf-c -lz -lm
# libcurl: pyprof-collector's HTTP client for --pyroscope (collector/push/),
# on a thread of its own; pyprof and libpyprof.so do not link it.
PUSH_LIBS := -lcurl -lpthread

UNIT_SRC := $(wildcard tests/unit/test_*.c)
# The end-to-end files in LANES lanes at once (tests/run): make check runs
# two (25 minutes instead of 43 on 2 cores; the shares past the tick are
# right under load since the preempted-thread rule, and the truth matrix
# runs beside a busy load by design). check-debug-offsets sets one lane
# of its own. check-san's files run in SAN_LANES, 2.
LANES ?= 2
SAN_LANES ?= 2
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/libpyprof.so $(BUILD)/pyprof-collector $(BUILD)/pyprof

$(BUILD)/preload/%.o: preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) $(DEPFLAGS) -c $< -o $@

ifdef SANITIZE
# The plain build's library (see PLAIN above), made there first by the
# sanitizer targets (plain-parts).
# A hard link (a copy across file systems), not a symlink: the tests
# expect the library under $(BUILD)'s own path, which pyprof record
# resolves.
$(BUILD)/libpyprof.so: $(PLAIN)/libpyprof.so
	@mkdir -p $(@D)
	rm -f $@ && { ln $< $@ 2>/dev/null || cp $< $@; }
else
$(BUILD)/libpyprof.so: $(PRELOAD_OBJ) preload/exports.map
	$(CC) -shared -o $@ $(filter %.o,$^) $(PRELOAD_LIBS) -Wl,-z,now -Wl,--version-script=preload/exports.map
endif
# What a sanitizer build takes from the plain one (PLAIN).
plain-parts: $(BUILD)/libpyprof.so $(PROTO_OBJ) $(OTLP_OBJ)

$(BUILD)/libpreload.a: $(PRELOAD_AR_OBJ)
	rm -f $@ && ar rcs $@ $^

# One grouped target (&:): protoc-c writes both files in one run. Two plain
# targets let make -j run it twice, one run truncating the .c while the
# other's was being compiled (an empty profile.pb-c.o; CI's UBSan link failed).
ifndef SANITIZE
$(PROTO_C) $(PROTO_H) &: proto/profile.proto | $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen proto/profile.proto

$(PROTO_OBJ): $(PROTO_C)
	$(CC) -std=gnu11 $(OPT) -I$(BUILD)/gen -c $< -o $@

# The four OTLP files in one protoc-c run, grouped for the same reason.
# (None uses proto3 `optional`, which Debian 12's protoc-c 1.4.1 refuses.)
$(OTLP_C) $(OTLP_H) &: $(OTLP_PROTO) | $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $(OTLP_PROTO)

$(OTLP_OBJ): %.o: %.c $(OTLP_H)
	$(CC) -std=gnu11 $(OPT) -I$(BUILD)/gen -c $< -o $@
endif

# The generated headers come first (order-only: their changes reach the
# objects that include them through the .d files).
$(BUILD)/collector/%.o: collector/%.c | $(PROTO_H) $(OTLP_H) $(BUILD)/collector
	@mkdir -p $(@D)
	$(CC) $(COLL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/collector/preload_config.o: preload/base/config.c | $(BUILD)/collector
	$(CC) $(CFLAGS_COMMON) $(DEPFLAGS) -c $< -o $@

# preload/cpython/pyabi.c too: pyprof reads a running interpreter from
# outside (collector/remote/) with the same generated layouts.
$(BUILD)/collector/preload_pyabi.o: preload/cpython/pyabi.c | $(BUILD)/collector
	$(CC) $(CFLAGS_COMMON) $(DEPFLAGS) -c $< -o $@

# The library's frame walker and code-object decoders, compiled a second
# time for `pyprof dump` of a process without the library: the same
# walk, its loads from the target's memory (pyprof/walk.h).
REMOTE_WALK_CFLAGS := -Ipreload -DPYPROF_REMOTE_WALK
# It is remote/'s (its loads are remote_mem.c's): its object sits there.
$(BUILD)/collector/remote/remote_walk_frames.o: preload/signal/sig_frames.c | $(BUILD)/collector
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(REMOTE_WALK_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The dict readers too, for the thread names read from outside
# (collector/remote/remote_names.c; pyprof/walk.h's pydict_*_remote).
$(BUILD)/collector/remote/remote_walk_pydict.o: preload/signal/sig_pydict.c | $(BUILD)/collector
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(REMOTE_WALK_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/collector/preload_pydict.o: preload/cpython/pydict.c | $(BUILD)/collector
	$(CC) $(CFLAGS_COMMON) -Ipreload $(DEPFLAGS) -c $< -o $@

$(BUILD)/collector/preload_pycode.o: preload/cpython/pycode.c | $(BUILD)/collector
	$(CC) $(CFLAGS_COMMON) $(DEPFLAGS) -c $< -o $@

$(BUILD)/libcollector.a: $(COLL_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/pyprof-collector: $(BUILD)/collector/main_collector.o \
  $(BUILD)/collector/collector_cmdline.o $(BUILD)/libcollector.a
	$(CC) $(LDSAN) -o $@ $^ $(COLL_LIBS) $(PUSH_LIBS)

$(BUILD)/pyprof: $(BUILD)/collector/main_pyprof.o $(BUILD)/libcollector.a
	$(CC) $(LDSAN) -o $@ $^ $(COLL_LIBS)

# Unit tests link against the collector archive and the preload archive.
# The replays of the OTLP and config fuzzers reach the push code, hence
# libcurl.
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libcollector.a $(BUILD)/libpreload.a | $(BUILD)/tests
	$(CC) $(COLL_CFLAGS) $(DEPFLAGS) -Ipreload -Itests/unit $< -o $@ $(BUILD)/libcollector.a $(BUILD)/libpreload.a $(COLL_LIBS) $(PRELOAD_LIBS) $(UNIT_LIBS) $(LDSAN)

$(BUILD)/tests/test_otlp_fuzz $(BUILD)/tests/test_config_fuzz: UNIT_LIBS = $(PUSH_LIBS)

unit: $(UNIT_BIN)

# Benchmark programs (tests/bench/*.c): plain C, wire.h only.
$(BUILD)/bench/%: tests/bench/%.c | $(BUILD)/bench
	$(CC) $(CFLAGS_COMMON) $(DEPFLAGS) $< -o $@ $(LDSAN)

$(BUILD)/preload $(BUILD)/collector $(BUILD)/gen $(BUILD)/tests $(BUILD)/bench:
	mkdir -p $@

check: all unit check-sigsafe check-includes check-exports check-layout check-size format-check $(BUILD)/fuzz/wire_fuzz
	LANES=$(LANES) tests/run

check-regrtest: all unit
	REGRTEST=1 UNIT=0 LANES=2 E2E="regrtest regrtest_matrix regrtest_attach" tests/run

# The whole suite on the newest interpreters alone (CPython 3.14 and 3.15
# from Debian sid, tools/get-sid-pythons; make check runs them too).
check-new: all unit check-sigsafe check-includes check-exports check-layout check-size
	PYPROF_TEST_PYTHONS=new tests/run

# 3.13, 3.14 and 3.15 as if this build did not know them: the compiled
# rows are withheld (PYPROF_TEST_WITHHOLD_TABLE=row, a test switch) and
# the library lays them out from each interpreter's own _Py_DebugOffsets.
# Unit tests aside (UNIT=0): they know no interpreter, and make check ran
# them. Two lanes, as make check runs these files.
check-debug-offsets: all
	PYPROF_TEST_WITHHOLD_TABLE=row PYPROF_TEST_PYTHONS="3.13 3.14 3.15" UNIT=0 LANES=2 \
		E2E="dbgoffsets smoke stacks truth threads native" T="$(T)" tests/run

check-quick: all unit check-includes
	QUICK=1 tests/run

bench: all $(BUILD)/bench/ingest $(BUILD)/bench/malloc_loop
	tests/bench/run

# Fuzzing, with libFuzzer (clang), under ASan and UBSan. Four harnesses
# in tests/fuzz/, each feeding hostile bytes to the real parsers:
#   wire    wire_fuzz.c: a client's stream through the collector's
#           decoder, aggregation, symtab compaction and pprof builder;
#   http    http_parse_fuzz.c: a request head through http_parse.c;
#   otlp    otlp_fuzz.c: a spooled window read back and made into an
#           OTLP request, a profile converted (pyprof convert --format
#           otlp), and the OTLP receiver's answer (Retry-After, body);
#   config  config_fuzz.c: pyprof-collector's --config file, and the
#           library's PYPROF_* variables (preload/base/config.c).
# The collector's sources are built again, instrumented, in
# $(BUILD)/fuzz/wire/, and every harness links them.
#
# Each fuzzer's corpus is kept in the repository, tests/fuzz/corpus/NAME/,
# beside its hand-written seeds, tests/fuzz/NAME_seeds/ (and for wire the
# fixtures of tests/data/wire/). A run (tools/fuzz-run) fuzzes from both
# into $(BUILD)/fuzz/NAME_new/, then makes the kept corpus again with
# libFuzzer's -set_cover_merge=1 (edges only): a small set of inputs that
# covers what the old corpus and the new inputs cover and the seeds do
# not. Commit it. Each finding (crash, sanitizer report, broken
# invariant, leak, time-out) is saved to tests/fuzz/NAME_found/, and the
# run fails. Unit tests replay every corpus, seed and finding in make
# check (test_wire_fuzz, test_http_fuzz, test_otlp_fuzz,
# test_config_fuzz; well under a second in all).
#   make fuzz                            each fuzzer FUZZ_SECONDS (60)
#   make fuzz FUZZ_SECONDS=600           longer
#   make fuzz-wire (fuzz-http, fuzz-otlp, fuzz-config)   one of them
#   make fuzz-wire FUZZ_RUNS=10000000    a number of executions instead
# check-fuzz-wire, part of `make check`: a fixed short budget of the wire
# fuzzer (FUZZ_CHECK_RUNS executions from the seeds, a few tens of
# seconds) through tests/fuzz/run-wire; the kept corpus is not touched.
# fuzz-http-afl: the HTTP harness under afl++ instead (make deps-fuzz;
# not for CI), findings to tests/fuzz/http_found/ too.
FUZZ_SECONDS ?= 60
FUZZERS := wire http otlp config
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -Iinclude \
  -I$(GEN) -Icollector -D_GNU_SOURCE $(FUZZ_SAN) $(DEPFLAGS)
FUZZ_OTLP_OBJ := $(OTLP_PROTO:proto/%.proto=$(BUILD)/fuzz/wire/gen/%.pb-c.o)
FUZZ_OBJ := $(COLL_SRC:collector/%.c=$(BUILD)/fuzz/wire/%.o) $(BUILD)/fuzz/wire/profile.pb-c.o \
            $(FUZZ_OTLP_OBJ) \
            $(BUILD)/fuzz/wire/preload_config.o $(BUILD)/fuzz/wire/preload_pyabi.o \
            $(BUILD)/fuzz/wire/preload_sig_frames.o $(BUILD)/fuzz/wire/preload_pycode.o \
            $(BUILD)/fuzz/wire/preload_sig_pydict.o $(BUILD)/fuzz/wire/preload_pydict.o
FUZZ_RUNS ?=
FUZZ_CHECK_RUNS ?= 100000
# Inputs up to: a wire stream, a request head, a spooled profile, a file.
FUZZ_MAX_LEN_wire := 16384
FUZZ_MAX_LEN_http := 20000
FUZZ_MAX_LEN_otlp := 65536
FUZZ_MAX_LEN_config := 8192

$(BUILD)/fuzz/wire/%.o: collector/%.c | $(PROTO_H) $(OTLP_H) $(BUILD)/fuzz/wire
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_config.o: preload/base/config.c | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_pyabi.o: preload/cpython/pyabi.c | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_sig_frames.o: preload/signal/sig_frames.c | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(REMOTE_WALK_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_sig_pydict.o: preload/signal/sig_pydict.c | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(REMOTE_WALK_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_pydict.o: preload/cpython/pydict.c | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ipreload -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/preload_pycode.o: preload/cpython/pycode.c | $(BUILD)/fuzz/wire
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/wire/profile.pb-c.o: $(PROTO_C) | $(BUILD)/fuzz/wire
	$(FUZZ_CC) -std=gnu11 -O1 -g $(FUZZ_SAN) -I$(GEN) -c $< -o $@

$(FUZZ_OTLP_OBJ): $(BUILD)/fuzz/wire/gen/%.o: $(GEN)/%.c $(OTLP_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -O1 -g $(FUZZ_SAN) -I$(GEN) -c $< -o $@

$(BUILD)/fuzz/wire_fuzz: tests/fuzz/wire_fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(filter %.c %.o,$^) -o $@ $(COLL_LIBS) $(PUSH_LIBS)

$(BUILD)/fuzz/http_fuzz: tests/fuzz/http_parse_fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(filter %.o,$^) -o $@ $(COLL_LIBS) $(PUSH_LIBS)

# otlp_fuzz.c includes push_http.c (its callbacks are static).
$(BUILD)/fuzz/otlp_fuzz: tests/fuzz/otlp_fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(filter-out %/push/push_http.o,$(filter %.o,$^)) -o $@ $(COLL_LIBS) $(PUSH_LIBS)

# config_fuzz.c includes collector_cmdline.c.
$(BUILD)/fuzz/config_fuzz: tests/fuzz/config_fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(filter %.o,$^) -o $@ $(COLL_LIBS) $(PUSH_LIBS)

$(BUILD)/fuzz/wire:
	mkdir -p $@

$(FUZZERS:%=fuzz-%): fuzz-%: $(BUILD)/fuzz/%_fuzz
	tools/fuzz-run $* $(BUILD)/fuzz/$*_fuzz \
	  $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) \
	  -max_len=$(FUZZ_MAX_LEN_$*)

# Every fuzzer in turn; all run even when one finds something, and the
# target fails if any did.
fuzz: $(FUZZERS:%=$(BUILD)/fuzz/%_fuzz)
	@rc=0; for f in $(FUZZERS); do \
	  $(MAKE) --no-print-directory fuzz-$$f || rc=1; done; exit $$rc

check-fuzz-wire: $(BUILD)/fuzz/wire_fuzz
	FUZZ_CHECK_RUNS=$(FUZZ_CHECK_RUNS) tests/fuzz/run-wire

fuzz-http-afl: | $(BUILD)/fuzz
	AFL_USE_ASAN=1 afl-cc -std=gnu11 -O1 -g -Icollector -D_GNU_SOURCE -DHTTP_FUZZ_AFL \
	  tests/fuzz/http_parse_fuzz.c collector/http/http_parse.c -o $(BUILD)/fuzz/http_parse_afl
	rm -rf $(BUILD)/fuzz/http_out
	AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	  afl-fuzz -V $(FUZZ_SECONDS) -m none -i tests/fuzz/corpus/http \
	  -o $(BUILD)/fuzz/http_out -- $(BUILD)/fuzz/http_parse_afl
	tools/fuzz-report $(BUILD)/fuzz/http_out tests/fuzz/http_found

$(BUILD)/fuzz:
	mkdir -p $@

# Every function of preload/signal/, preload/interpose/ and base/guard.c (the
# fault guard's handlers), every *_sigsafe
# function, and all they call, may use only what tools/check-sigsafe allows.
# tests/sigsafe/ holds a fixture that reaches malloc through a function not
# named *_sigsafe in another file: the check must reject both, naming the
# path, or it could not fail.
# Shims of interpose/ that are not called in signal context, left out as
# roots: fork() (agent/forkpause.c pauses the agent: a lock, logs; as
# before the shims), pthread_create() (allocates) and pyprof_* (ctypes,
# with the GIL).
SIGSAFE_NOT := fork.o pthread.o pyprof.o latebind.o
SIGSAFE_FIXTURE := $(BUILD)/sigsafe-fixture/signal/handler.o $(BUILD)/sigsafe-fixture/helper.o
$(BUILD)/sigsafe-fixture/%.o: tests/sigsafe/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) $(DEPFLAGS) -c $< -o $@
check-sigsafe: $(PRELOAD_OBJ) $(SIGSAFE_FIXTURE)
	tools/check-sigsafe $(BUILD)/preload/signal $(BUILD)/preload/interpose \
	  $(BUILD)/preload/base/guard.o $(addprefix !$(BUILD)/preload/interpose/,$(SIGSAFE_NOT)) \
	  -- $(PRELOAD_OBJ)
	@if tools/check-sigsafe $(BUILD)/sigsafe-fixture/signal -- $(SIGSAFE_FIXTURE) >$(BUILD)/sigsafe-fixture/out; then \
		echo "check-sigsafe: the fixture that calls malloc passed"; exit 1; fi
	@grep -q 'grow (helper.o) uses malloc.*via fixture_handler -> fixture_helper -> grow' $(BUILD)/sigsafe-fixture/out && \
	 grep -q 'fixture_handler calls fixture_helper, .*name it \*_sigsafe' $(BUILD)/sigsafe-fixture/out || \
		{ echo "check-sigsafe: the fixture was rejected for the wrong reason:"; cat $(BUILD)/sigsafe-fixture/out; exit 1; }
	@echo "check-sigsafe: the fixture that reaches malloc is rejected"

# No cycle between the files of preload/ or collector/, neither through
# their includes nor through the symbols their objects use from each
# other; tools/include-cycles.allow lists those still being taken apart.
# And the folders of preload/ and collector/ in their layers (tools/layers:
# no include upward, e.g. nothing of signal/ includes sample/ or agent/;
# http/ and push/ see daemon/ through daemon/daemon_api.h only; nothing
# reached through ".."); tests/includes/ holds a tree that breaks
# each rule once: the check must reject it, naming all three, or it
# could not fail.
CYCLES_ALLOW := tools/include-cycles.allow
# CPython's layout said by hand outside preload/cpython/ (offsets, version
# tests) may only go down (tools/layout-ratchet); the fixture's must fail.
check-layout:
	tools/check-layout tools/layout-ratchet preload
	@if tools/check-layout tools/layout-ratchet tests/layout >/dev/null; then \
		echo "check-layout: the fixture with a version test and an offset passed"; exit 1; fi
	@echo "check-layout: the fixture with a version test and an offset is rejected"

# Files of at most 1,000 lines and functions of at most 80 (docs/
# conventions.md): tools/check-size's ratchet, which may only go down; its
# fixture (a function of 89 lines) must be rejected.
check-size:
	tools/check-size tools/size-ratchet preload collector include
	@if tools/check-size tools/size-ratchet tests/size >/dev/null; then \
		echo "check-size: the fixture with a function of 89 lines passed"; exit 1; fi
	@echo "check-size: the fixture with a function of 89 lines is rejected"

# Every symbol the library exports is defined in preload/interpose/ (the
# doors into the library in one folder); the check must reject the same
# library read against another folder.
check-exports: $(BUILD)/libpyprof.so
	tools/check-exports $(BUILD)/libpyprof.so $(BUILD)/preload/interpose $(PRELOAD_OBJ)
	@if tools/check-exports $(BUILD)/libpyprof.so $(BUILD)/preload/base $(PRELOAD_OBJ) >/dev/null; then \
		echo "check-exports: read against preload/base/ it passed"; exit 1; fi
	@echo "check-exports: read against preload/base/ it is rejected"

check-includes: $(PRELOAD_OBJ) $(COLL_OBJ)
	tools/check-includes --allow $(CYCLES_ALLOW) --layers tools/layers preload collector
	tools/check-includes --allow $(CYCLES_ALLOW) --layers tools/layers --link preload.o $(PRELOAD_OBJ)
	tools/check-includes --allow $(CYCLES_ALLOW) --layers tools/layers --link collector.o $(COLL_OBJ)
	@mkdir -p $(BUILD)
	@if tools/check-includes --layers tests/includes/layers tests/includes/tree >$(BUILD)/includes-fixture.out; then \
		echo "check-includes: the fixture that includes upward passed"; exit 1; fi
	@grep -q 'daemon/core.c includes http/server.h: layer daemon may not include http' $(BUILD)/includes-fixture.out && \
	 grep -q 'http/server.c includes daemon/core.h: http sees daemon through daemon/api.h only' $(BUILD)/includes-fixture.out && \
	 grep -q 'cli/tool.c includes ../../outside/config.h: reaches outside' $(BUILD)/includes-fixture.out || \
		{ echo "check-includes: the fixture was rejected for the wrong reason:"; cat $(BUILD)/includes-fixture.out; exit 1; }
	@echo "check-includes: the fixture that includes upward is rejected"
	@mkdir -p $(BUILD)/linkfix/low $(BUILD)/linkfix/high
	@$(CC) -c tests/includes/link/low/a.c -o $(BUILD)/linkfix/low/a.o
	@$(CC) -c tests/includes/link/high/b.c -o $(BUILD)/linkfix/high/b.o
	@if tools/check-includes --layers tests/includes/link/layers --link linkfix.o \
		$(BUILD)/linkfix/low/a.o $(BUILD)/linkfix/high/b.o >$(BUILD)/linkfix.out; then \
		echo "check-includes: the fixture that links upward passed"; exit 1; fi
	@grep -q 'linkfix: a uses high_var of high/b.o: layer low may not use high' $(BUILD)/linkfix.out || \
		{ echo "check-includes: the link fixture was rejected for the wrong reason:"; cat $(BUILD)/linkfix.out; exit 1; }
	@echo "check-includes: the fixture that links upward is rejected"

# Sanitizer builds: the plain parts first (plain-parts, in $(PLAIN)), then
# everything else sanitized. san (what CI runs) is ASan with LeakSanitizer
# and UBSan in one build; asan and ubsan are one each, for a closer look.
san:
	$(MAKE) --no-print-directory BUILD=$(PLAIN) plain-parts
	$(MAKE) SANITIZE=address,undefined BUILD=build-san all unit
asan:
	$(MAKE) --no-print-directory BUILD=$(PLAIN) plain-parts
	$(MAKE) SANITIZE=address BUILD=build-asan all unit
ubsan:
	$(MAKE) --no-print-directory BUILD=$(PLAIN) plain-parts
	$(MAKE) SANITIZE=undefined BUILD=build-ubsan all unit

# The unit tests and the collector's end-to-end tests under ASan (with
# LeakSanitizer) and UBSan together (check-san; CI), or under one of them,
# each process's reports counted as failures by tests/run: SAN_E2E names
# the tests/e2e files, SAN_PYTHONS the interpreters (PYPROF_TEST_PYTHONS;
# 3.11 is the one most files prefer). The collector and pyprof are
# sanitized, libpyprof.so is not (see PRELOAD_AR_OBJ), nor are the version
# drivers run.
SAN_E2E     ?= smoke collector robust limits record views http ctl processes push
SAN_PYTHONS ?= 3.11
SAN_RUN = PYPROF_BUILD=$(1) E2E="$(SAN_E2E)" PYPROF_TEST_PYTHONS="$(SAN_PYTHONS)" LANES=$(SAN_LANES) tests/run
check-san: san
	$(call SAN_RUN,build-san)
check-asan: asan
	$(call SAN_RUN,build-asan)
check-ubsan: ubsan
	$(call SAN_RUN,build-ubsan)

release:
	$(MAKE) OPT="-O2 -DNDEBUG"

# make deps: what building and running need (the README's first command:
# the compiler, zlib, protobuf-c, libcurl for the collector's pushes,
# libunwind8 for PYPROF_NATIVE, Python to profile, and Go for `go tool
# pprof`, the reader the README shows). make test-deps: the rest of what
# make check needs (bats, a browser, clang for the wire fuzzer, man, the
# OTLP reader, npm's speedscope, CPython 3.14 and 3.15 from Debian sid,
# Debian python3's own test package for regrtest_matrix.bats).
DEPS_RUN := build-essential zlib1g-dev libprotobuf-c-dev protobuf-c-compiler \
  libcurl4-openssl-dev libunwind8 python3 golang-go
DEPS_TEST := bats libunwind-dev python3-numpy procps libxml2-utils chromium \
  python3-jsonschema curl patchelf man-db groff-base clang libclang-rt-14-dev \
  protobuf-compiler python3-protobuf openssl clang-format tmux util-linux \
  libpython3.11-testsuite
# (apt-get update once an hour at most: .ci/run calls both.)
APT_UPDATE := find /var/lib/apt/lists -maxdepth 0 -mmin -60 | grep -q . || apt-get update
deps:
	$(APT_UPDATE)
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	  $(DEPS_RUN)

test-deps: deps
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	  $(DEPS_TEST)
	$(MAKE) deps-npm
	tools/get-sid-pythons

# afl++ for make fuzz-http-afl only (it brings clang and LLVM: not for CI).
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
	install -m 0644 preload/module/pyprof.py $(DESTDIR)$(PREFIX)/lib/pyprof/python/
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
	rm -rf build build-san build-asan build-ubsan

# The C sources as .clang-format writes them (generated tables aside):
# none may differ in one place (tools/format-check; the tree was rewritten
# once, .git-blame-ignore-revs). Part of make check.
FORMAT_SRC = $(filter-out %_table.h,$(PRELOAD_SRC) $(PRELOAD_HDR) $(COLL_MAINS) \
  $(COLL_SRC) $(wildcard collector/*/*.h) $(wildcard include/pyprof/*.h) \
  $(wildcard tests/unit/*.[ch]))
format-check:
	@tools/format-check $(FORMAT_SRC)
	@if tools/format-check tests/format/bad.c >/dev/null 2>&1; then \
		echo "format-check: the fixture written against .clang-format passed"; exit 1; fi
	@echo "format-check: the fixture written against .clang-format is rejected"
format:
	clang-format -i $(FORMAT_SRC)

.PHONY: check-exports check-layout check-size wheel deb plain-parts san check-san test-deps format-check deps-fuzz fuzz fuzz-http fuzz-wire fuzz-otlp fuzz-config fuzz-http-afl check-fuzz-wire all unit check check-regrtest check-new check-debug-offsets check-quick bench check-sigsafe check-includes asan ubsan check-asan check-ubsan release deps deps-npm install clean format

# The header dependencies the compiles wrote (DEPFLAGS).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
