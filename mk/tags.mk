# SPDX-License-Identifier: MIT
# tags.mk — tags, threads and budgets (docs/tags.md, tests/test_tags.c): the
# helper programs call sc_tag & co., so they link the static library.
TAGS_PROGS := tags_exact tags_budget
$(foreach p,$(TAGS_PROGS),$(BUILD)/tests/progs/$(p)): PROG_LDFLAGS = $(AR_LIB) -ldl
$(BUILD)/tests/progs/tags_cxx: tests/progs/tags_cxx.cc include/sizeclass.hpp $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g $(WARN) -Iinclude -o $@ $< $(AR_LIB) -lpthread -ldl
# A library the rules test tags by its file name (SIZECLASS_TAGS).
$(BUILD)/tests/progs/lib/libtagsrules.so: tests/progs/lib/tags_rules_lib.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g $(WARN) -fPIC -shared -o $@ $<
$(BUILD)/tests/progs/tags_rules: tests/progs/tags_rules.c $(BUILD)/tests/progs/lib/libtagsrules.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< -L$(BUILD)/tests/progs/lib -ltagsrules \
	  -Wl,-rpath,'$$ORIGIN/lib' -ldl
