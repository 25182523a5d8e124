# SPDX-License-Identifier: MIT
# libsizeclass — one Makefile. `make` builds build/libsizeclass.{so,a};
# `make test` installs what the tests need and runs them. Feature areas add
# their targets in mk/*.mk (included at the end).

CC       ?= cc
CXX      ?= c++
SC_HARDEN ?= 1
# 1: the invariants that check themselves (src/core/config.h); the sanitizer
# and stress targets build that way (mk/debug.mk), the default build never.
SC_DEBUG ?= 0
VERSION  := 0.1.0
SOMAJOR  := 0

BUILD    := build
OBJDIR   := $(BUILD)/obj
WARN     := -Wall -Wextra -Werror
# Expanded when used: an object directory may set SC_DEBUG for its own
# objects (mk/debug.mk, mk/sanitize.mk).
CFLAGS_LIB = -std=gnu11 -O2 -g $(WARN) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
             -fno-plt -fno-semantic-interposition -Iinclude -Isrc -DSC_HARDEN=$(SC_HARDEN) \
             -DSC_DEBUG=$(SC_DEBUG) -D_GNU_SOURCE $(EXTRA_CFLAGS)
# No -lgcc_s: the stack walks (src/features/stack.c, cfi.c) find libgcc's
# unwinder with dlsym, and dlopen libgcc_s only when a feature that walks
# stacks is switched on (src/features/unwinder.c), so other programs never
# map it.
LDLIBS_LIB := -lpthread -ldl

# The library's layers, bottom up (src/README.md): each may include only
# those before it. src/mark/text_begin.c first and src/mark/text_end.c last:
# their labels bracket the library's code in every section
# (src/mark/text_mark.h).
LIB_LAYERS := util core features report api
# The link order is not the layers': the code a plain run executes all the
# time (util, core, the entry points) comes first and the features and the
# report, which a plain run never calls after start-up, last, so that the
# kernel's read-around keeps the rest of the library's code off the
# resident set (src/util/startup.h gathers the start-up code apart).
LIB_LINK_ORDER := util core api shim features report
lib_srcs_of = $(if $(filter shim,$(1)),shim/shim.c shim/cxx.c shim/signal.c,$(sort $(wildcard src/$(1)/*.c)))
LIB_SRCS := src/mark/text_begin.c $(foreach l,$(LIB_LINK_ORDER),$(call lib_srcs_of,$(l))) \
            src/mark/text_end.c
LIB_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(LIB_SRCS))
LIB_DEPS := $(LIB_OBJS:.o=.d)

SO  := $(BUILD)/libsizeclass.so
AR_LIB := $(BUILD)/libsizeclass.a

.PHONY: all lib test clean format format-deps lint check-format layers
all: lib
lib: $(SO) $(AR_LIB)

$(OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) -MMD -MP -c $< -o $@

# $(call link_so,OBJECTS): the shared library $@ of a set of library objects.
link_so = $(CC) -shared -Wl,-soname,libsizeclass.so.$(SOMAJOR) -Wl,-z,now -Wl,-fini=sc__fini -o $@ $(1) $(LDLIBS_LIB)
# $(call link_ar,OBJECTS): the archive $@. It holds one relocatable object
# made of every library object (next to $@'s objects), so that a program
# linking it statically gets the whole library whenever it gets malloc:
# modules that arm themselves from their own constructors (the statistics
# dump, frame statistics, memory-return settings) come along.
link_ar = rm -f $@ $(dir $@)obj/libsizeclass.o && \
          $(LD) -r -o $(dir $@)obj/libsizeclass.o $(1) && ar rcs $@ $(dir $@)obj/libsizeclass.o

$(SO): $(LIB_OBJS)
	$(call link_so,$(LIB_OBJS))
	@ln -sf libsizeclass.so $(BUILD)/libsizeclass.so.$(SOMAJOR)

$(AR_LIB): $(LIB_OBJS)
	$(call link_ar,$(LIB_OBJS))

-include $(LIB_DEPS)

# The core alone: src/util and src/core (and the marks around their code),
# no feature, report, API or shim object. It links by itself: the core
# reaches the features only through their table (core/hooks.h), which stays
# the core's no-ops here. tests/test_core_alone.c links it.
CORE_SRCS := src/mark/text_begin.c $(foreach l,util core,$(sort $(wildcard src/$(l)/*.c))) \
             src/mark/text_end.c
CORE_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(CORE_SRCS))
CORE_AR := $(BUILD)/core/libsizeclass-core.a
.PHONY: core-alone
core-alone: $(CORE_AR)
$(CORE_AR): $(CORE_OBJS)
	@mkdir -p $(dir $@)obj
	$(call link_ar,$(CORE_OBJS))

# ---- tests ---------------------------------------------------------------
# tests/test_*.c: Criterion suites, each linked with libsizeclass.a so the
# whole test process (Criterion included) runs on our allocator.
# tests/progs/*.c and *.cc: helper programs the suites run, most of them
# under LD_PRELOAD.
TEST_SRCS  := $(wildcard tests/test_*.c)
TEST_BINS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
PROG_SRCS  := $(wildcard tests/progs/*.c)
PROG_CXX   := $(wildcard tests/progs/*.cc)
PROG_BINS  := $(patsubst tests/progs/%.c,$(BUILD)/tests/progs/%,$(PROG_SRCS)) \
              $(patsubst tests/progs/%.cc,$(BUILD)/tests/progs/%,$(PROG_CXX))
# -fno-builtin (here and for the C++ helper programs): the suites test the
# allocator, so the compiler must not reason about the malloc family or
# operator new (clang drops an allocation whose result is only compared
# with NULL or stored where nothing reads it, and answers "not NULL";
# -fno-builtin-malloc & co. do not reach valloc or pvalloc).
CFLAGS_TEST := -std=gnu11 -O1 -g $(WARN) -Iinclude -Isrc -Itests -D_GNU_SOURCE \
               -DSC_HARDEN=$(SC_HARDEN) -fno-builtin $(EXTRA_CFLAGS)

$(BUILD)/tests/%: tests/%.c tests/*.h $(AR_LIB) $(SO)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $(shell pkg-config --cflags criterion 2>/dev/null) -o $@ $< \
	  $(AR_LIB) $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion) -lpthread -ldl

# The core-alone suite links the core's archive, not the library's.
$(BUILD)/tests/test_core_alone: tests/test_core_alone.c $(CORE_AR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $(shell pkg-config --cflags criterion 2>/dev/null) -o $@ $< \
	  $(CORE_AR) $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion) -lpthread -ldl

$(BUILD)/tests/progs/%: tests/progs/%.c tests/*.h $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< -lpthread $(PROG_LDFLAGS)

# glibc's own allocator, around the preloaded library's __libc_* names.
$(BUILD)/tests/progs/sys_before_takeover: PROG_LDFLAGS = $(OBJDIR)/src/core/libc_syms.o

# Its sizeclass_options string must be visible to the preloaded library.
$(BUILD)/tests/progs/stats_pattern: PROG_LDFLAGS = -rdynamic -ldl

# A program linked with another allocator's library (see its source).
$(BUILD)/tests/progs/lib/libother_alloc.so: tests/progs/lib/other_alloc.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -fPIC -shared -o $@ $<
$(BUILD)/tests/progs/other_alloc_user: tests/progs/other_alloc_user.c \
                                       $(BUILD)/tests/progs/lib/libother_alloc.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< -L$(BUILD)/tests/progs/lib -lother_alloc \
	  -Wl,-rpath,'$$ORIGIN/lib'

$(BUILD)/tests/progs/%: tests/progs/%.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g $(WARN) -fno-builtin -o $@ $< -lpthread

test-deps:
	@scripts/ensure-deps.sh test

test: test-deps lib $(TEST_BINS) $(PROG_BINS)
	@SC_BUILD=$(abspath $(BUILD)) scripts/run-tests.sh $(TEST_BINS)

clean:
	rm -rf $(BUILD)

FORMAT_FILES := $(shell git ls-files '*.c' '*.h' '*.cc' 2>/dev/null)
format-deps:
	@scripts/ensure-deps.sh format
format: format-deps
	clang-format -i $(FORMAT_FILES)
check-format: format-deps
	clang-format --dry-run --Werror $(FORMAT_FILES)
# make lint: the layers, cppcheck over the library, then the scripts'
# linters (mk/lint.mk: pyflakes, shellcheck).
lint: lint-deps layers
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --suppress=missingIncludeSystem --inline-suppr -Iinclude -Isrc src shim
	@$(MAKE) --no-print-directory lint-scripts
# The layers of src/ (src/README.md): what each folder may include, and call
# (the objects' symbols). Silent when they hold; tests/test_layers.c runs the
# same check in `make test` and shows that it fails when a rule breaks.
layers: lib
	@python3 scripts/check-layers.py --objects $(OBJDIR)

-include $(wildcard mk/*.mk)

# The benchmarks read their resident set with the tests' reader.
$(BENCH_BINS): tests/rss.h
