# SPDX-License-Identifier: MIT
# mk/variants.mk — `make test` in other builds of the library, each in a
# build directory of its own (CI runs both):
#
#   make test-clang      every suite, the library, the suites and the helper
#                        programs built with clang and clang++ (warnings
#                        are errors there too), in $(BUILD)/clang
#   make test-noharden   every suite with SC_HARDEN=0 (src/core/config.h:
#                        no encoded links, no double-free or invalid-free
#                        checks; the suites test what that build promises),
#                        in $(BUILD)/noharden-test
# Sub-makes: a variant's objects never mix with the default build's.

.PHONY: test-clang test-noharden clang-deps

CLANG_CC ?= clang
CLANG_CXX ?= clang++

clang-deps:
	@scripts/ensure-deps.sh clang

# -gdwarf-4: valgrind 3.19 (Debian 12) cannot read clang 14's default
# DWARF 5, and the suites run programs under valgrind.
test-clang: clang-deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/clang CC=$(CLANG_CC) CXX=$(CLANG_CXX) \
	  EXTRA_CFLAGS='-gdwarf-4 $(EXTRA_CFLAGS)' test

test-noharden:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/noharden-test SC_HARDEN=0 test
