# mk/memcheck.mk — guard pages and the checking mode (docs/hardening.md).
#
# Test helper programs under tests/progs/linked/ are linked with
# libsizeclass.a (not preloaded): the test suites run them.

LINKED_PROG_SRCS := $(wildcard tests/progs/linked/*.c)
LINKED_PROG_BINS := $(patsubst tests/progs/linked/%.c,$(BUILD)/tests/progs/linked/%,$(LINKED_PROG_SRCS))

$(BUILD)/tests/progs/linked/%: tests/progs/linked/%.c $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< $(AR_LIB) -lpthread -ldl

test ubsan asan: $(LINKED_PROG_BINS)
