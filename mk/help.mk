# SPDX-License-Identifier: MIT
# mk/help.mk — `make help`: the targets people use, one line each, one
# screen. tests/test_docs.c checks that each target it lists exists
# (`make -n TARGET` succeeds). Targets of a file's own plumbing (deps, the
# programs a suite needs) are left out; mk/*.mk say more about each.

.PHONY: help

help:
	@echo 'make [TARGET] [VAR=value ...]; more in mk/*.mk and docs/testing.md'
	@echo '  lib             build build/libsizeclass.so and .a (the default)'
	@echo '  run             the demo game on the library, its statistics at exit'
	@echo '  run-glibc       the same demo on glibc, for comparison'
	@echo '  test            every Criterion suite (installs what the tests need)'
	@echo '  test-clang      the suites with everything built by clang (build/clang)'
	@echo '  test-noharden   the suites with SC_HARDEN=0 (build/noharden-test)'
	@echo '  asan            the suites under AddressSanitizer (build/asan)'
	@echo '  ubsan           the suites under UndefinedBehaviorSanitizer (build/ubsan)'
	@echo '  tsan            threaded suite and stress under ThreadSanitizer (build/tsan)'
	@echo '  stress          threaded torture test [STRESS_SECONDS=30]'
	@echo '  stress-check    the same in the checking mode'
	@echo '  stress-guard    the same with guard pages sampled often'
	@echo '  stress-stats    the same with exact statistics and sampled sites'
	@echo '  fuzz            libFuzzer harness [FUZZ_SECONDS=60]'
	@echo '  fuzz-check      the same in the checking mode'
	@echo '  fuzz-guard      the same with guard pages sampled often'
	@echo '  test-real       CPython and GLib test suites, with and without the library'
	@echo '  test-report     the report page in headless Chromium'
	@echo '  test-deb        the Debian packages end to end, as root'
	@echo '  bench           benchmarks against glibc, jemalloc, mimalloc, tcmalloc'
	@echo '  bench-instr     instructions per malloc+free pair (callgrind), both tiers'
	@echo '  bench-guard     the cost of guard sampling and the checking mode'
	@echo '  bench-sites     the cost and accuracy of allocation sites'
	@echo '  lint            layers, cppcheck, pyflakes, shellcheck'
	@echo '  layers          only the layer check of src/ (includes and calls)'
	@echo '  tidy            clang-tidy over the library'
	@echo '  format          clang-format every C/C++ file in place'
	@echo '  check-format    fail if a file is not clang-formatted'
	@echo '  debug-lib       the library with its invariants checked (build/debug)'
	@echo '  settings-doc    regenerate the settings table of docs/using.md'
	@echo '  install         install [PREFIX=/usr/local DESTDIR=]'
	@echo '  uninstall       remove what install wrote (same variables)'
	@echo '  deb             Debian packages in build/deb'
	@echo '  clean           remove build/'
	@echo '  help            this list'
