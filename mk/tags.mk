# SPDX-License-Identifier: MIT
# tags.mk — tags, threads and budgets (docs/tags.md, tests/test_tags.c): the
# helper programs call sc_tag & co., so they link the static library.
TAGS_PROGS := tags_exact tags_budget
$(foreach p,$(TAGS_PROGS),$(BUILD)/tests/progs/$(p)): PROG_LDFLAGS = $(AR_LIB) -ldl
