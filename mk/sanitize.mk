# SPDX-License-Identifier: MIT
# mk/sanitize.mk — the Criterion suites under the sanitizers, link time only:
# the library's objects are compiled with the sanitizer into each suite in
# its own build directory; nothing instrumented is ever preloaded (a
# sanitizer runtime in a preloaded process allocates on its own and breaks
# the suites' exact counts, and an ASan library cannot be preloaded into a
# program built without ASan). Helper programs that suites run under
# LD_PRELOAD come from the normal build ($(BUILD)), as in `make test`.
# See docs/hardening.md ("Sanitizers") for the why.
#
#   make ubsan   UndefinedBehaviorSanitizer, in $(BUILD)/ubsan: library
#                objects, shim included, and suites built with
#                -fsanitize=undefined. UBSan does not replace malloc, so the
#                suites run on libsizeclass exactly as in `make test`.
#   make asan    AddressSanitizer, in $(BUILD)/asan. ASan brings its own
#                malloc, so ours cannot also be `malloc`: the shim is compiled
#                with its names renamed (malloc -> sc_asan_malloc, ...), each
#                suite is compiled with the same renaming so its own
#                malloc/free calls reach libsizeclass, and the library's
#                system route (__libc_malloc & co.) goes to ASan's malloc, so
#                blocks made by Criterion, libc or ASan are freed where they
#                came from.
#   make tsan    ThreadSanitizer, in $(BUILD)/tsan: the threaded suite
#                (tests/test_core_threads.c) and the threaded stress program
#                (tests/progs/stress.c, TSAN_STRESS_SECONDS) linked with the
#                library built with -fsanitize=thread. TSan also brings its
#                own malloc: the same renaming as ASan's (below).
#                tests/tsan.supp holds the suppressions, each with its
#                reason.
# All three build the library's objects with SC_DEBUG=1 (src/core/config.h,
# mk/debug.mk): the invariants check themselves under the sanitizers too.
# Every sanitizer report is fatal (the suite fails).

.PHONY: ubsan asan tsan

# -Wno-error: instrumented code makes GCC's flow-based warnings noisy (e.g. a
# -Wrestrict false alarm in a suite); warnings are the normal build's job.
SAN_COMMON := -fno-omit-frame-pointer -fno-sanitize-recover=all -Wno-error
UBSAN_FLAGS := -fsanitize=undefined $(SAN_COMMON)
ASAN_FLAGS := -fsanitize=address $(SAN_COMMON)

# Every report is fatal and comes with a stack.
SAN_ENV := UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ASAN_OPTIONS=abort_on_error=0:detect_leaks=0:allocator_may_return_null=1

# ---- ubsan -----------------------------------------------------------------
UBSAN_DIR := $(BUILD)/ubsan
UBSAN_LIB_OBJS := $(patsubst %.c,$(UBSAN_DIR)/obj/%.o,$(LIB_SRCS))
UBSAN_TEST_BINS := $(patsubst tests/%.c,$(UBSAN_DIR)/tests/%,$(TEST_SRCS))

$(UBSAN_DIR)/obj/%.o: SC_DEBUG = 1
$(UBSAN_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) $(UBSAN_FLAGS) -MMD -MP -c $< -o $@

-include $(UBSAN_LIB_OBJS:.o=.d)
.SECONDARY: $(UBSAN_LIB_OBJS)

$(UBSAN_DIR)/tests/%: tests/%.c tests/*.h $(UBSAN_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $(UBSAN_FLAGS) $(shell pkg-config --cflags criterion 2>/dev/null) \
	  -o $@ $< $(UBSAN_LIB_OBJS) \
	  $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion) -lpthread -ldl

ubsan: test-deps lib $(PROG_BINS) $(UBSAN_TEST_BINS)
	@$(SAN_ENV) SC_BUILD=$(abspath $(BUILD)) scripts/run-tests.sh $(UBSAN_TEST_BINS)

# ---- asan ------------------------------------------------------------------
ASAN_DIR := $(BUILD)/asan
# Our interposing names, renamed out of ASan's way (here and in the suites).
SC_RENAME := -Dmalloc=sc_asan_malloc -Dfree=sc_asan_free -Dcalloc=sc_asan_calloc \
  -Drealloc=sc_asan_realloc -Dreallocarray=sc_asan_reallocarray \
  -Dposix_memalign=sc_asan_posix_memalign -Daligned_alloc=sc_asan_aligned_alloc \
  -Dmemalign=sc_asan_memalign -Dvalloc=sc_asan_valloc -Dpvalloc=sc_asan_pvalloc \
  -Dmalloc_usable_size=sc_asan_malloc_usable_size -Dfree_sized=sc_asan_free_sized \
  -Dfree_aligned_sized=sc_asan_free_aligned_sized -Dcfree=sc_asan_cfree \
  -D__libc_malloc=sc_asan___libc_malloc -D__libc_calloc=sc_asan___libc_calloc \
  -D__libc_realloc=sc_asan___libc_realloc -D__libc_free=sc_asan___libc_free \
  -D__libc_memalign=sc_asan___libc_memalign -D__libc_valloc=sc_asan___libc_valloc \
  -D__libc_pvalloc=sc_asan___libc_pvalloc -Dmallopt=sc_asan_mallopt
# The system route of fallback.c, pointed at ASan's allocator by name.
SC_SYS_TO_ASAN := -DSC_SYS_DIRECT -D__libc_malloc=malloc -D__libc_calloc=calloc -D__libc_realloc=realloc \
  -D__libc_memalign=memalign -D__libc_free=free

ASAN_LIB_OBJS := $(patsubst %.c,$(ASAN_DIR)/obj/%.o,$(LIB_SRCS))
ASAN_TEST_BINS := $(patsubst tests/%.c,$(ASAN_DIR)/tests/%,$(TEST_SRCS))

$(ASAN_DIR)/obj/src/core/fallback.o: ASAN_EXTRA := $(SC_SYS_TO_ASAN) -fno-builtin
# glibc's thresholds through ASan's mallopt, which refuses them: no paced trim.
$(ASAN_DIR)/obj/src/core/sys_trim.o: ASAN_EXTRA := -D__libc_mallopt=mallopt
$(ASAN_DIR)/obj/src/core/sys_top.o: ASAN_EXTRA := -D__libc_mallopt=mallopt
$(ASAN_DIR)/obj/shim/shim.o: ASAN_EXTRA := $(SC_RENAME)
# ASan brings its own operator new and delete.
$(ASAN_DIR)/obj/shim/cxx.o: ASAN_EXTRA := -DSC_NO_CXX_OPERATORS

$(ASAN_DIR)/obj/%.o: SC_DEBUG = 1
$(ASAN_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) $(ASAN_FLAGS) $(ASAN_EXTRA) -MMD -MP -c $< -o $@

-include $(ASAN_LIB_OBJS:.o=.d)
.SECONDARY: $(ASAN_LIB_OBJS)

# -Wno-mismatched-dealloc: libc declares strdup & co. as freed by `free`,
# which the renaming turns into sc_asan_free; that is right (a pointer we do
# not own goes on to ASan's free), but GCC cannot know it.
$(ASAN_DIR)/tests/%: tests/%.c tests/*.h $(ASAN_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $(ASAN_FLAGS) $(SC_RENAME) -Wno-mismatched-dealloc \
	  $(shell pkg-config --cflags criterion 2>/dev/null) -o $@ $< $(ASAN_LIB_OBJS) \
	  $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion) -lpthread -ldl

# The tests left out of `make asan`, and why: the one place that says so
# (docs/hardening.md points here). Each cannot hold in a process whose
# malloc is ASan's; every one of them runs in `make test` and `make ubsan`.
# - glibc's own blocks (made with __libc_malloc) handed to free, realloc or
#   malloc_usable_size: here the system route is ASan's allocator, which
#   does not own them and stops the test ("not owned").
ASAN_SKIP := core_api/free_preserves_errno core_api/glibc_blocks_are_resized_and_freed_by_glibc \
  core_api/realloc_to_zero_frees_and_returns_null core_api/sc_owns_only_class_blocks \
  core_api/usable_size_of_null_and_glibc_blocks
# - libc's own allocations (strdup) expected to be ours: here they are ASan's.
ASAN_SKIP += core_api/link_time_interposition
# - the room a grown glibc block gets (an eighth more) and the in-place
#   realloc of one: both read glibc's chunk header, which ASan's blocks
#   do not have (the system route then asks for the size as it is).
ASAN_SKIP += core_api/a_system_block_grown_a_little_has_room_for_the_next_pieces
# - glibc's mallinfo2 for a block of the system route: that is ASan's
#   malloc here, which glibc's figures do not see.
ASAN_SKIP += core_api/mallinfo_counts_glibcs_blocks_as_glibc_does
# - RLIMIT_AS: ASan reserves terabytes of shadow address space up front.
ASAN_SKIP += core_api/malloc_returns_enomem_when_the_os_refuses
# - fork while other threads allocate: ASan's allocator has no fork
#   handlers, so a child can inherit its lock held (and hang).
ASAN_SKIP += core_threads/fork_under_load_never_deadlocks core_threads/fork_while_arena_lock_held
# - a bound on the footprint: ASan's quarantine and redzones go over it.
ASAN_SKIP += core_threads/thread_churn_keeps_footprint_bounded
# - the resident set after pages go back: ASan's shadow of them (an eighth
#   of their size, 34 MiB of 256 MiB) stays resident on some kernels
#   (6.18.44-fc-v1252: smaps shows it in the high shadow mapping after
#   malloc_trim; the same tests held on v1147).
ASAN_SKIP += purge/delay_holds_memory_until_trim purge/burst_settles_under_light_load
asan_empty :=
asan_space := $(asan_empty) $(asan_empty)
ASAN_PATTERN := !($(subst $(asan_space),|,$(strip $(ASAN_SKIP))))

asan: test-deps lib $(PROG_BINS) $(ASAN_TEST_BINS)
	@echo "asan: leaving out $(words $(ASAN_SKIP)) tests that cannot hold under ASan's malloc (mk/sanitize.mk)"
	@$(SAN_ENV) CRITERION_TEST_PATTERN='$(ASAN_PATTERN)' SC_BUILD=$(abspath $(BUILD)) \
	  scripts/run-tests.sh $(ASAN_TEST_BINS)

# ---- tsan ------------------------------------------------------------------
# ThreadSanitizer sees the library's atomics (the remote-free lists, the
# arena hand-on) and every plain access beside them. Like ASan it brings
# its own malloc, so the library is built as for `make asan`: the shim's
# names renamed (SC_RENAME), the system route sent to TSan's malloc
# (SC_SYS_TO_ASAN), ASan's operators rule (TSan has its own new/delete
# too). fallback.c asks the sanitizer's malloc_usable_size about the system
# route's blocks only under __SANITIZE_ADDRESS__, and hooks.c binds it
# there from the start under the same macro; TSan's blocks have no glibc
# header either, so both are compiled with that macro set (there is no
# other use of it in src/).
TSAN_DIR := $(BUILD)/tsan
TSAN_FLAGS := -fsanitize=thread $(SAN_COMMON)
TSAN_LIB_OBJS := $(patsubst %.c,$(TSAN_DIR)/obj/%.o,$(LIB_SRCS))
TSAN_TESTS := test_core_threads
TSAN_TEST_BINS := $(patsubst %,$(TSAN_DIR)/tests/%,$(TSAN_TESTS))
TSAN_STRESS := $(TSAN_DIR)/tests/progs/stress
TSAN_STRESS_SECONDS ?= 20
# The suite's .timeout values are for the plain build: TSan is 5-15x slower.
TSAN_TIMEOUT_SCALE ?= 5
TSAN_SUPP := tests/tsan.supp
# Every report stops the program with exit status 66; the second stack of
# a lock-order report too; history_size=7 (the most) so that the earlier
# access of a race keeps its stack on a long run.
TSAN_ENV := TSAN_OPTIONS='halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=7 \
  suppressions=$(abspath $(TSAN_SUPP))'

$(TSAN_DIR)/obj/src/core/fallback.o: TSAN_EXTRA := $(SC_SYS_TO_ASAN) -fno-builtin \
  -D__SANITIZE_ADDRESS__=1
$(TSAN_DIR)/obj/src/core/hooks.o: TSAN_EXTRA := -D__SANITIZE_ADDRESS__=1
# glibc's thresholds through the sanitizer's mallopt, as before it was ours.
$(TSAN_DIR)/obj/src/core/sys_trim.o: TSAN_EXTRA := -D__libc_mallopt=mallopt
$(TSAN_DIR)/obj/src/core/sys_top.o: TSAN_EXTRA := -D__libc_mallopt=mallopt
$(TSAN_DIR)/obj/shim/shim.o: TSAN_EXTRA := $(SC_RENAME)
$(TSAN_DIR)/obj/shim/cxx.o: TSAN_EXTRA := -DSC_NO_CXX_OPERATORS

$(TSAN_DIR)/obj/%.o: SC_DEBUG = 1
$(TSAN_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) $(TSAN_FLAGS) $(TSAN_EXTRA) -MMD -MP -c $< -o $@

-include $(TSAN_LIB_OBJS:.o=.d)
.SECONDARY: $(TSAN_LIB_OBJS)

# Criterion cannot start under TSan: the suite is built against the
# stand-in tests/tsan/criterion/criterion.h and its runner instead.
$(TSAN_DIR)/tests/%: tests/%.c tests/*.h tests/tsan/criterion/criterion.h tests/tsan/runner.c \
                     $(TSAN_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -Itests/tsan $(CFLAGS_TEST) $(TSAN_FLAGS) $(SC_RENAME) -Wno-mismatched-dealloc \
	  -o $@ $< tests/tsan/runner.c $(TSAN_LIB_OBJS) -lpthread -ldl

# -rdynamic: the program finds sc_owns as it would in the preloaded library.
$(TSAN_STRESS): tests/progs/stress.c tests/rss.h $(TSAN_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $(TSAN_FLAGS) $(SC_RENAME) -Wno-mismatched-dealloc -rdynamic \
	  -o $@ $< $(TSAN_LIB_OBJS) -lpthread -ldl

# The tests left out of `make tsan`, and why: the three that fork while
# other threads run: a multithreaded fork, and a child that starts a thread
# after one, are not supported by TSan. They run in `make test`,
# `make ubsan` and (but two) `make asan`.
TSAN_SKIP := core_threads/fork_under_load_never_deadlocks core_threads/fork_while_arena_lock_held \
  core_threads/fork_from_a_thread_without_arena_with_allocating_handler
TSAN_PATTERN := !($(subst $(asan_space),|,$(strip $(TSAN_SKIP))))

tsan: test-deps $(TSAN_TEST_BINS) $(TSAN_STRESS)
	@echo "tsan: leaving out $(words $(TSAN_SKIP)) tests that cannot hold under TSan (mk/sanitize.mk)"
	@$(TSAN_ENV) SC_TEST_TIMEOUT_SCALE=$(TSAN_TIMEOUT_SCALE) CRITERION_TEST_PATTERN='$(TSAN_PATTERN)' \
	  SC_BUILD=$(abspath $(BUILD)) \
	  scripts/run-tests.sh $(TSAN_TEST_BINS)
	$(TSAN_ENV) $(TSAN_STRESS) -t $(STRESS_THREADS) -s $(TSAN_STRESS_SECONDS) \
	  -m $(STRESS_MAX_RSS_MIB) -r $(STRESS_ROUND_THREADS)
