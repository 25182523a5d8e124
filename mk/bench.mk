# SPDX-License-Identifier: MIT
# bench.mk — the benchmark suite (issue 4).
#   make bench [QUICK=1] [RUNS=n] [ONLY=regex] [SECTIONS=main,stats,harden,footprint] [FP_RUNS=n]
#                                                run every benchmark under glibc, jemalloc,
#                                                mimalloc, tcmalloc and libsizeclass in both
#                                                tiers (default; SIZECLASS_STATS=/dev/null):
#                                                time, peak RSS, minor faults, system time;
#                                                footprint: peak and settled RSS (issue 7),
#                                                FP_RUNS runs
#   make bench-instr                             instructions per malloc+free pair (callgrind),
#                                                both tiers, LIFO and random order
#   make bench-progs                             just build build/bench/*
#   make bench-noharden                          the SC_HARDEN=0 library in build/noharden/
# Benchmark programs are plain C (bench/*.c) or C++ (bench/*.cc) linked with
# nothing but libc and libstdc++: the runner chooses the allocator with
# LD_PRELOAD (operator new reaches it through libstdc++'s malloc). Builtin
# malloc/free are off, and for C++ the removal of new/delete pairs, so the
# compiler cannot elide or merge the calls being measured.

BENCH_SRCS := $(wildcard bench/*.c)
BENCH_CXX_SRCS := $(wildcard bench/*.cc)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS)) \
              $(patsubst bench/%.cc,$(BUILD)/bench/%,$(BENCH_CXX_SRCS))
CFLAGS_BENCH := -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -fno-builtin-malloc -fno-builtin-free \
                -fno-builtin-calloc -fno-builtin-realloc $(EXTRA_CFLAGS)
# -fno-allocation-dce is GCC's; clang (make test-clang, where the
# benchmarks only get their smoke run) has no such switch and may elide a
# new/delete pair. Asked of the compiler when a C++ benchmark is built.
BENCH_NO_ALLOC_DCE = $(shell $(CXX) -fno-allocation-dce -x c++ -fsyntax-only /dev/null \
                       >/dev/null 2>&1 && echo -fno-allocation-dce)
CXXFLAGS_BENCH = -std=gnu++17 -O2 -g $(WARN) -D_GNU_SOURCE -fno-builtin-malloc \
                 -fno-builtin-free $(BENCH_NO_ALLOC_DCE) $(EXTRA_CXXFLAGS)
BENCH_NOHARDEN := $(BUILD)/noharden

.PHONY: bench bench-instr bench-progs bench-noharden

$(BUILD)/bench/%: bench/%.c bench/bench.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BENCH) -o $@ $< -lpthread

$(BUILD)/bench/%: bench/%.cc bench/bench.h
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS_BENCH) -o $@ $< -lpthread

# micro_mixed is micro.c built with MICRO_MIXED (bench/micro_mixed.c).
$(BUILD)/bench/micro_mixed: bench/micro.c

bench-progs: $(BENCH_BINS)

# The comparison library: same sources, hardening off, its own build dir.
bench-noharden:
	@$(MAKE) --no-print-directory SC_HARDEN=0 BUILD=$(BENCH_NOHARDEN) lib

bench: lib bench-progs bench-noharden
	@BUILD=$(BUILD) QUICK=$(QUICK) RUNS=$(RUNS) ONLY='$(ONLY)' SECTIONS='$(SECTIONS)' FP_RUNS=$(FP_RUNS) scripts/bench.sh

bench-instr: lib bench-progs bench-noharden
	@BUILD=$(BUILD) scripts/bench-instr.sh

# The smoke test (tests/test_bench_smoke.c) runs the programs built here.
test: bench-progs
