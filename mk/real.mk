# SPDX-License-Identifier: MIT
# mk/real.mk — real, packaged test suites with libsizeclass preloaded, each
# run twice (without the library, then with it) and required to give exactly
# the same per-test results:
#   - CPython's own regression tests (Debian's libpython3.11-testsuite), run
#     by /usr/bin/python3 (not a python3 that PATH may find first) with
#     PYTHONMALLOC=malloc, so every object allocation, not only those
#     pymalloc passes on, reaches malloc; compared test case by test case
#     from regrtest's JUnit XML;
#   - GLib's installed tests (Debian's libglib2.0-tests): C programs heavy on
#     malloc, threads and GSlice; compared by their TAP result lines (random
#     seeds in test names masked) and exit status.
#
#   make test-real             the CI-sized subset (about 1-2 minutes)
#   make test-real REAL=full   the long list
# Logs and results: $(BUILD)/real/.

.PHONY: test-real

REAL ?= ci
REAL_PYTHON := /usr/bin/python3
REAL_GLIB_DIR := /usr/libexec/installed-tests/glib

REAL_PY_CI := test_list test_dict test_set test_tuple test_bytes test_unicode test_re \
  test_json test_pickle test_collections test_deque test_heapq test_itertools test_functools \
  test_struct test_array test_memoryview test_gc test_weakref test_sort test_csv test_zlib \
  test_hashlib test_queue test_threading_local test_ctypes
REAL_PY_FULL := $(REAL_PY_CI) test_threading test_decimal test_xml_etree test_xml_etree_c \
  test_io test_os test_subprocess test_signal test_mmap test_ast test_tokenize test_pickletools \
  test_dictviews test_string test_bisect test_math test_random test_statistics test_fractions \
  test_concurrent_futures test_asyncio
REAL_GLIB_CI := array-test asyncqueue hash list slist queue string strfuncs tree once slice \
  slice-concurrent regex bytes checksum base64 keyfile dataset object signals properties \
  thread-pool atomic bitlock
REAL_GLIB_FULL := $(REAL_GLIB_CI) sequence mutex cond rec-mutex rwlock gvariant mainloop \
  1bit-mutex

REAL_PY_TESTS = $(if $(filter full,$(REAL)),$(REAL_PY_FULL),$(REAL_PY_CI))
REAL_GLIB_TESTS = $(if $(filter full,$(REAL)),$(REAL_GLIB_FULL),$(REAL_GLIB_CI))

# Compare two regrtest JUnit files: same test cases, same outcome each.
define REAL_JUNIT_COMPARE
import sys, xml.etree.ElementTree as ET
def load(path):
    out = {}
    for tc in ET.parse(path).iter("testcase"):
        st = "passed"
        for ch in tc:
            if ch.tag in ("failure", "error", "skipped"):
                st = ch.tag
        out[(tc.get("classname"), tc.get("name"))] = st
    return out
base, pre = load(sys.argv[1]), load(sys.argv[2])
diff = sorted(k for k in base.keys() | pre.keys() if base.get(k) != pre.get(k))
count = lambda d, s: sum(1 for v in d.values() if v == s)
print("test-real: python: %d test cases without, %d with the library; with it: %d passed, "
      "%d skipped, %d failed, %d errors; %d differ"
      % (len(base), len(pre), count(pre, "passed"), count(pre, "skipped"), count(pre, "failure"),
         count(pre, "error"), len(diff)))
for k in diff[:40]:
    print("  %s.%s: %s without, %s with" % (k[0], k[1], base.get(k), pre.get(k)))
sys.exit(1 if diff or not pre else 0)
endef
export REAL_JUNIT_COMPARE

# The library must really be in the process: malloc's blocks are its own.
define REAL_PRELOAD_PROBE
import ctypes, sys
lib = ctypes.CDLL(None)
lib.malloc.restype = ctypes.c_void_p
lib.malloc.argtypes = [ctypes.c_size_t]
lib.sc_owns.restype = ctypes.c_bool
lib.sc_owns.argtypes = [ctypes.c_void_p]
sys.exit(0 if lib.sc_owns(lib.malloc(32)) else 1)
endef
export REAL_PRELOAD_PROBE

test-real: lib
	@scripts/ensure-deps.sh real
	@rm -rf $(BUILD)/real && mkdir -p $(BUILD)/real
	@set -u; so=$(abspath $(SO)); out=$(abspath $(BUILD)/real); py=$(REAL_PYTHON); fail=0; \
	echo "test-real: $$($$py --version) ($$py), GLib tests in $(REAL_GLIB_DIR), REAL=$(REAL)"; \
	LD_PRELOAD=$$so $$py -c "$$REAL_PRELOAD_PROBE" \
	  || { echo "test-real: the preloaded library does not serve python's malloc"; exit 1; }; \
	for mode in without with; do \
	  pre=; [ $$mode = with ] && pre=$$so; \
	  LD_PRELOAD=$$pre PYTHONMALLOC=malloc $$py -m test -j2 --junit-xml $$out/python-$$mode.xml \
	    $(REAL_PY_TESTS) > $$out/python-$$mode.log 2>&1; \
	  echo "test-real: python regrtest $$mode the library: exit $$? ($$(grep -E '^Tests result' $$out/python-$$mode.log))"; \
	done; \
	pyfail=0; $$py -c "$$REAL_JUNIT_COMPARE" $$out/python-without.xml $$out/python-with.xml \
	  || { pyfail=1; fail=1; }; \
	ng=0; nd=0; \
	for t in $(REAL_GLIB_TESTS); do \
	  for mode in without with; do \
	    pre=; [ $$mode = with ] && pre=$$so; \
	    (cd $(REAL_GLIB_DIR) && LD_PRELOAD=$$pre timeout 300 ./$$t --tap -k > $$out/glib-$$t-$$mode.log 2>&1; \
	      echo "exit $$?") > $$out/glib-$$t-$$mode.rc; \
	    { grep -E '^(not )?ok ' $$out/glib-$$t-$$mode.log | sed -E 's/seed:[0-9]+/seed:N/'; \
	      cat $$out/glib-$$t-$$mode.rc; } > $$out/glib-$$t-$$mode.tap; \
	  done; \
	  ng=$$((ng + 1)); \
	  if ! diff -u $$out/glib-$$t-without.tap $$out/glib-$$t-with.tap > $$out/glib-$$t.diff; then \
	    nd=$$((nd + 1)); fail=1; echo "test-real: glib $$t differs:"; head -20 $$out/glib-$$t.diff; \
	  fi; \
	done; \
	echo "test-real: glib: $$ng programs, $$(cat $$out/glib-*-with.tap | grep -c '^ok ') ok and $$(cat $$out/glib-*-with.tap | grep -c '^not ok ') not ok with the library; $$nd differ"; \
	if [ $$fail -eq 0 ]; then echo "test-real: ok"; else echo "test-real: FAILED (logs: $$out)"; fi; \
	echo "real: $$(( 2 - pyfail - (nd > 0) )) passed, $$(( pyfail + (nd > 0) )) failed"; \
	exit $$fail
