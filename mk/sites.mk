# sites.mk — the helper programs of tests/test_sites.c (issue 12).
# sites_prog exports its symbols (-rdynamic): its own _Unwind_Backtrace
# (the test of an unwinder that allocates) must be what the preloaded
# library calls. sites_static is the same program linked with the static
# archive: the library's code then lies inside the program, and its frames
# must still be told apart (src/mark/text_mark.h).

$(BUILD)/tests/progs/sites_prog: tests/progs/sites_prog.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -rdynamic -o $@ $< -lpthread -ldl

$(BUILD)/tests/progs/sites_static: tests/progs/sites_prog.c $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -rdynamic -o $@ $< $(AR_LIB) -lpthread -ldl

test: $(BUILD)/tests/progs/sites_static
