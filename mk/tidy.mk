# SPDX-License-Identifier: MIT
# mk/tidy.mk — clang-tidy over the library: the sources of every layer of
# src/ (LIB_SRCS) and shim/*.c, and the headers of src/ and include/ they
# pull in (the fast paths live in src/core/alloc.h), compiled with the
# library's own flags. Silent when clean;
# any finding is an error, so `make tidy` fails on it (as `make lint` does).
#
#   make tidy [CLANG_TIDY=clang-tidy-14] [TIDY_HARDEN=0]
#
# Checks: bugprone-*, clang-analyzer-* (optin.* included), performance-*,
# portability-*, minus these, each for a reason:
#   bugprone-easily-swappable-parameters  flags every pair of same-typed
#       parameters, i.e. the C allocation API itself (calloc, memalign,
#       posix_memalign take two size_t) and helpers that mirror it.
#   clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling
#       asks for C11 Annex K (memcpy_s, memset_s), which glibc lacks.
#   performance-no-int-to-ptr  an allocator computes addresses (segment and
#       page masks, encoded free-list links): int-to-pointer casts are its job.
#   bugprone-reserved-identifier  in our code it only flags fallback.c's
#       declarations of glibc's __libc_* entry points (our sc__ names are not
#       reserved in C); it also fires on every __name in glibc's headers,
#       which clang-tidy hides but still counts aloud ("N warnings
#       generated") and pays for.
# A single false positive is silenced where it stands, with
# NOLINT(check-name) and the reason.

.PHONY: tidy tidy-deps

CLANG_TIDY ?= clang-tidy
TIDY_HARDEN ?= $(SC_HARDEN)
TIDY_EMPTY :=
TIDY_COMMA := ,
TIDY_CHECK_LIST := -* bugprone-* clang-analyzer-* performance-* portability-* \
  -bugprone-easily-swappable-parameters \
  -clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling \
  -performance-no-int-to-ptr \
  -bugprone-reserved-identifier
TIDY_CHECKS := $(subst $(TIDY_EMPTY) $(TIDY_EMPTY),$(TIDY_COMMA),$(strip $(TIDY_CHECK_LIST)))
TIDY_FLAGS := -std=gnu11 -Iinclude -Isrc -D_GNU_SOURCE -DSC_HARDEN=$(TIDY_HARDEN)

tidy-deps:
	@scripts/ensure-deps.sh tidy

# clang prints "N warnings generated." for the findings it hides (system
# headers, NOLINT); the filter drops those lines and keeps everything else.
tidy: tidy-deps
	@mkdir -p $(BUILD)
	@echo "clang-tidy: $(words $(LIB_SRCS)) files, SC_HARDEN=$(TIDY_HARDEN)"
	@$(CLANG_TIDY) --quiet --checks='$(TIDY_CHECKS)' --warnings-as-errors='*' \
	  --header-filter='/(src|include)/' $(LIB_SRCS) -- $(TIDY_FLAGS) >$(BUILD)/tidy.log 2>&1; \
	  rc=$$?; grep -Ev '^[0-9]+ warnings? generated\.$$' $(BUILD)/tidy.log; exit $$rc
