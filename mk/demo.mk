# SPDX-License-Identifier: MIT
# demo.mk — the bundled game demo (issue 5), the README's first command.
#   make run [DEMO_ARGS="frames seed"]  build the library and the demo, run the demo under
#                                       LD_PRELOAD=build/libsizeclass.so SIZECLASS_STATS=1
#   make run-glibc                      the same binary on glibc, for comparison (same checksum)
#   make demo                           just build build/examples/merge_island
# The demo is a plain program linked with nothing but libc: the allocator is whatever is
# preloaded. Its particle pool is src/features/pool.c compiled in with -DSC_POOL_STANDALONE, which
# makes the pool take memory from malloc; under LD_PRELOAD that malloc is libsizeclass, so
# the process has exactly one allocator instance, and without the library it still runs
# (sc_frame_mark is a weak reference then, and the marks are skipped).

DEMO      := $(BUILD)/examples/merge_island
DEMO_SRCS := $(wildcard examples/merge_island/*.c)
DEMO_ARGS ?=
CFLAGS_DEMO := -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -Iinclude -Isrc -DSC_POOL_STANDALONE \
               $(EXTRA_CFLAGS)

.PHONY: demo run run-glibc

$(DEMO): $(DEMO_SRCS) $(wildcard examples/merge_island/*.h) src/features/pool.c src/core/config.h \
         include/sizeclass.h include/sizeclass_pool.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_DEMO) -o $@ $(DEMO_SRCS) src/features/pool.c

demo: $(DEMO)

# tests/test_docs.c runs the README's frame-check recipe on the demo.
test: $(DEMO)

run: lib $(DEMO)
	LD_PRELOAD=$(abspath $(SO)) SIZECLASS_STATS=1 $(DEMO) $(DEMO_ARGS)

run-glibc: $(DEMO)
	$(DEMO) $(DEMO_ARGS)
