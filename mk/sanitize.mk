# mk/sanitize.mk — the Criterion suites under the sanitizers, each in its
# own build directory. See docs/hardening.md ("Sanitizers") for the why.
#
#   make ubsan   UndefinedBehaviorSanitizer: the whole normal build (library,
#                shim, suites, helper programs) rebuilt in $(BUILD)/ubsan with
#                -fsanitize=undefined, then `make test` there. UBSan does not
#                replace malloc, so nothing else changes: the suites link the
#                instrumented libsizeclass.a and the preloaded programs load
#                the instrumented libsizeclass.so. Any report aborts.
#   make asan    AddressSanitizer, link time only, in $(BUILD)/asan. ASan
#                brings its own malloc, so ours cannot also be `malloc`: the
#                shim is compiled with its names renamed (malloc ->
#                sc_asan_malloc, ...), each suite is compiled with the same
#                renaming so its own malloc/free calls reach libsizeclass,
#                and the library's system route (__libc_malloc & co.) goes to
#                ASan's malloc, so blocks made by Criterion, libc or ASan are
#                freed where they came from. Helper programs run preloaded
#                come from the normal build (an ASan library cannot be
#                preloaded into a program built without ASan).

.PHONY: ubsan asan

SAN_COMMON := -fno-omit-frame-pointer -fno-sanitize-recover=all
UBSAN_FLAGS := -fsanitize=undefined $(SAN_COMMON)
ASAN_FLAGS := -fsanitize=address $(SAN_COMMON)

# Every report is fatal and comes with a stack.
SAN_ENV := UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ASAN_OPTIONS=abort_on_error=0:detect_leaks=0:allocator_may_return_null=1

ubsan:
	@$(SAN_ENV) $(MAKE) --no-print-directory BUILD=$(BUILD)/ubsan \
	  EXTRA_CFLAGS="$(EXTRA_CFLAGS) $(UBSAN_FLAGS)" \
	  LDLIBS_LIB="$(LDLIBS_LIB) -fsanitize=undefined" test

# ---- asan ------------------------------------------------------------------
ASAN_DIR := $(BUILD)/asan
# Our interposing names, renamed out of ASan's way (here and in the suites).
SC_RENAME := -Dmalloc=sc_asan_malloc -Dfree=sc_asan_free -Dcalloc=sc_asan_calloc \
  -Drealloc=sc_asan_realloc -Dreallocarray=sc_asan_reallocarray \
  -Dposix_memalign=sc_asan_posix_memalign -Daligned_alloc=sc_asan_aligned_alloc \
  -Dmemalign=sc_asan_memalign -Dvalloc=sc_asan_valloc -Dpvalloc=sc_asan_pvalloc \
  -Dmalloc_usable_size=sc_asan_malloc_usable_size
# The system route of fallback.c, pointed at ASan's allocator.
SC_SYS_TO_ASAN := -D__libc_malloc=malloc -D__libc_calloc=calloc -D__libc_realloc=realloc \
  -D__libc_memalign=memalign -D__libc_free=free

ASAN_LIB_OBJS := $(patsubst %.c,$(ASAN_DIR)/obj/%.o,$(LIB_SRCS))
ASAN_TEST_BINS := $(patsubst tests/%.c,$(ASAN_DIR)/tests/%,$(TEST_SRCS))

$(ASAN_DIR)/obj/src/fallback.o: ASAN_EXTRA := $(SC_SYS_TO_ASAN) -fno-builtin
$(ASAN_DIR)/obj/shim/shim.o: ASAN_EXTRA := $(SC_RENAME)

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

asan: test-deps lib $(PROG_BINS) $(ASAN_TEST_BINS)
	@$(SAN_ENV) SC_BUILD=$(abspath $(BUILD)) scripts/run-tests.sh $(ASAN_TEST_BINS)
