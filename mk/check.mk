# SPDX-License-Identifier: MIT
# mk/check.mk — guard pages and the checking mode (docs/hardening.md).
#
#   make stress-check [STRESS_SECONDS=30]  make stress in the checking mode
#                                          (SIZECLASS_CHECK=1, a quarantine
#                                          of CHECK_QUARANTINE blocks)
#   make stress-guard [STRESS_SECONDS=30]  make stress with guard sampling
#                                          (SIZECLASS_GUARD=GUARD_RATE)
#   make fuzz-check [FUZZ_SECONDS=60]      make fuzz in the checking mode
#   make fuzz-guard [FUZZ_SECONDS=60]      make fuzz with guard sampling
#   make bench-guard [RUNS=7]              the overhead of guard sampling at
#                                          its default rate (and of the
#                                          checking mode) on frame-burst and
#                                          micro, interleaved runs
# The stress and fuzz runs sample far more often than the default rate
# (1 in GUARD_RATE = 50) so that guarded blocks go through every
# path many times in a short run.
#
# Test helper programs under tests/progs/linked/ are linked with
# libsizeclass.a (not preloaded): the test suites run them.

.PHONY: stress-check stress-guard fuzz-check fuzz-guard bench-guard

CHECK_QUARANTINE ?= 256
GUARD_RATE ?= 50

stress-check:
	@$(MAKE) --no-print-directory stress \
	  STRESS_ENV='SIZECLASS_CHECK=1 SIZECLASS_CHECK_QUARANTINE=$(CHECK_QUARANTINE)'

stress-guard:
	@$(MAKE) --no-print-directory stress STRESS_ENV='SIZECLASS_GUARD=$(GUARD_RATE)'

fuzz-check:
	@$(MAKE) --no-print-directory fuzz \
	  FUZZ_ENV='SIZECLASS_CHECK=1 SIZECLASS_CHECK_QUARANTINE=$(CHECK_QUARANTINE)'

# libFuzzer leaves SIGSEGV and SIGBUS to the library's handler, which reports
# a guard fault with its kind before it aborts (libFuzzer catches the abort).
fuzz-guard:
	@$(MAKE) --no-print-directory fuzz FUZZ_ENV='SIZECLASS_GUARD=$(GUARD_RATE)' \
	  FUZZ_ARGS='-handle_segv=0 -handle_bus=0'

bench-guard: lib bench-progs
	@BUILD=$(BUILD) RUNS=$(RUNS) scripts/bench-guard.py

LINKED_PROG_SRCS := $(wildcard tests/progs/linked/*.c)
LINKED_PROG_BINS := $(patsubst tests/progs/linked/%.c,$(BUILD)/tests/progs/linked/%,$(LINKED_PROG_SRCS)) \
                    $(BUILD)/tests/progs/linked/check_misuse

$(BUILD)/tests/progs/linked/%: tests/progs/linked/%.c $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< $(AR_LIB) -lpthread -ldl

# The memory-error scenarios, linked instead of preloaded.
$(BUILD)/tests/progs/linked/check_misuse: tests/progs/check_misuse.c tests/check_util.h \
                                             $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -DCK_LINKED -o $@ $< $(AR_LIB) -lpthread -ldl

test ubsan asan: $(LINKED_PROG_BINS)
