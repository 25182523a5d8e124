# SPDX-License-Identifier: MIT
# hooks.mk — the hooks' page (core/hooks.h, tests/test_hooks_page.c): its
# helper program reads the library's internals, so it links the static
# library.
$(BUILD)/tests/progs/hooks_page: PROG_LDFLAGS = $(AR_LIB) -ldl
