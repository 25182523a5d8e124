# SPDX-License-Identifier: MIT
# mk/fuzz.mk — the libFuzzer harness tests/fuzz/fuzz_alloc.c.
#
#   make fuzz [FUZZ_SECONDS=60]   build $(BUILD)/fuzz/fuzz_alloc with clang
#                                 and run it for FUZZ_SECONDS, starting from
#                                 the seed corpus tests/fuzz/corpus/.
#             [FUZZ_ENV='SIZECLASS_CHECK=1 ...']  variables for the fuzzed
#                                 process, [FUZZ_ARGS=...] more libFuzzer
#                                 flags (mk/check.mk's fuzz-check and
#                                 fuzz-guard use them).
# The library is compiled with -fsanitize=fuzzer-no-link (its branches guide
# the fuzzer) and linked in whole, shim included: the harness's malloc, and
# libFuzzer's own, are libsizeclass, as in a real program. UBSan is on;
# ASan is not, because ASan would replace malloc (see mk/sanitize.mk) and
# cannot see inside our blocks anyway: the harness's tags check them.
# New inputs go to $(BUILD)/fuzz/corpus, crash reproducers to $(BUILD)/fuzz/
# (crash-*); replay one with `$(BUILD)/fuzz/fuzz_alloc FILE`.

.PHONY: fuzz fuzz-build

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_ENV ?=
FUZZ_ARGS ?=
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The library is instrumented for coverage but not for comparison tracing:
# with trace-cmp libFuzzer reads the operands of the double-free check
# (`b->key == block ^ secret`), learns the secret key and writes it into
# its own input copies, which it then frees through our free(): an abort
# that no real program can provoke without already reading the secret.
FUZZ_LIB_COV := -fno-sanitize-coverage=trace-cmp
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(LIB_SRCS))

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS_LIB) -fsanitize=fuzzer-no-link $(FUZZ_LIB_COV) $(FUZZ_SAN) -MMD -MP -c $< -o $@

-include $(FUZZ_LIB_OBJS:.o=.d)
.SECONDARY: $(FUZZ_LIB_OBJS)

$(FUZZ_DIR)/fuzz_alloc: tests/fuzz/fuzz_alloc.c $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -D_GNU_SOURCE -fsanitize=fuzzer $(FUZZ_SAN) \
	  -o $@ $< $(FUZZ_LIB_OBJS) -lpthread -ldl -lm

fuzz-build: $(FUZZ_DIR)/fuzz_alloc

# clang and its fuzzer runtime are installed first (scripts/ensure-deps.sh).
fuzz:
	@scripts/ensure-deps.sh fuzz
	@$(MAKE) --no-print-directory fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus
	@echo "fuzz: $(FUZZ_DIR)/fuzz_alloc for $(FUZZ_SECONDS) s$(if $(FUZZ_ENV), with $(FUZZ_ENV)) (log: $(FUZZ_DIR)/fuzz.log)"
	@env $(FUZZ_ENV) UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(FUZZ_DIR)/fuzz_alloc -max_total_time=$(FUZZ_SECONDS) -max_len=4000 -timeout=30 \
	  -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_ARGS) $(FUZZ_DIR)/corpus tests/fuzz/corpus \
	  > $(FUZZ_DIR)/fuzz.log 2>&1; rc=$$?; \
	if [ $$rc -ne 0 ]; then tail -n 60 $(FUZZ_DIR)/fuzz.log; echo "fuzz: FAILED (exit $$rc)"; \
	else grep -E '^(INFO: seed corpus|Done |stat::(number_of_executed_units|new_units_added|peak_rss))' \
	  $(FUZZ_DIR)/fuzz.log; echo "fuzz: ok, no finding"; fi; exit $$rc
