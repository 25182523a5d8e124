# SPDX-License-Identifier: MIT
# mk/debug.mk — the library with its invariants checked (SC_DEBUG=1,
# src/core/config.h): the slow paths validate their page and arena
# (src/core/validate.c: at a refill, a free that leaves the fast path, the
# end of a drain, a thread's exit) and run their sc_asserts. Same sources
# and flags as the default build otherwise, in $(DEBUG_DIR); the default
# build contains none of it.
#
#   make debug-lib   $(DEBUG_DIR)/libsizeclass.so and .a
#
# `make stress` (and stress-check, -guard, -stats) preloads this .so; the
# sanitizer builds compile their own objects with SC_DEBUG=1
# (mk/sanitize.mk). tests/progs/debug/*.c are linked with this archive:
# tests/test_debug.c corrupts a page and an arena on purpose and expects
# the "sizeclass: assertion failed:" line and abort().

.PHONY: debug-lib

DEBUG_DIR := $(BUILD)/debug
DEBUG_OBJS := $(patsubst %.c,$(DEBUG_DIR)/obj/%.o,$(LIB_SRCS))
DEBUG_SO := $(DEBUG_DIR)/libsizeclass.so
DEBUG_AR := $(DEBUG_DIR)/libsizeclass.a

$(DEBUG_DIR)/obj/%.o: SC_DEBUG = 1
$(DEBUG_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) -MMD -MP -c $< -o $@

-include $(DEBUG_OBJS:.o=.d)
.SECONDARY: $(DEBUG_OBJS)

$(DEBUG_SO): $(DEBUG_OBJS)
	$(call link_so,$(DEBUG_OBJS))

$(DEBUG_AR): $(DEBUG_OBJS)
	$(call link_ar,$(DEBUG_OBJS))

debug-lib: $(DEBUG_SO) $(DEBUG_AR)

# Programs that corrupt the library's state on purpose (tests/test_debug.c).
DEBUG_PROG_SRCS := $(wildcard tests/progs/debug/*.c)
DEBUG_PROG_BINS := $(patsubst tests/progs/debug/%.c,$(BUILD)/tests/progs/debug/%,$(DEBUG_PROG_SRCS))

$(BUILD)/tests/progs/debug/%: tests/progs/debug/%.c $(DEBUG_AR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -DSC_DEBUG=1 -o $@ $< $(DEBUG_AR) -lpthread -ldl

test ubsan asan: $(DEBUG_PROG_BINS) $(DEBUG_SO)
