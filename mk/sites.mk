# SPDX-License-Identifier: MIT
# sites.mk — the helper programs of tests/test_sites.c (issue 12).
# sites_prog exports its symbols (-rdynamic): its own _Unwind_Backtrace
# (the test of an unwinder that allocates) must be what the preloaded
# library calls. It forwards to libgcc's through dlsym(RTLD_NEXT), so it
# links libgcc_s itself (the library no longer brings it: it binds the
# unwinder at run time, src/features/unwinder.c). sites_static is the same
# program linked with the static archive: the library's code then lies
# inside the program, and its frames must still be told apart
# (src/mark/text_mark.h).
SITES_PROG_LIBS := -lpthread -ldl -Wl,--push-state,--no-as-needed -lgcc_s -Wl,--pop-state

$(BUILD)/tests/progs/sites_prog: tests/progs/sites_prog.c mk/sites.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -rdynamic -o $@ $< $(SITES_PROG_LIBS)

$(BUILD)/tests/progs/sites_static: tests/progs/sites_prog.c $(AR_LIB) mk/sites.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -rdynamic -o $@ $< $(AR_LIB) $(SITES_PROG_LIBS)

test: $(BUILD)/tests/progs/sites_static

# make bench-sites [RUNS=7] [ACC_RUNS=5] [FRAMES=200000] [PY_N=300000] [ONLY=regex]:
# the overhead of SIZECLASS_SITES (default rate and every allocation) on
# frame-burst and python against libsizeclass alone, glibc and heaptrack,
# and the accuracy of the sampled top sites (bench/sites_bench.py);
# writes bench/results/sites.md.
.PHONY: bench-sites
bench-sites: lib bench-progs
	@BUILD=$(BUILD) RUNS=$(RUNS) ACC_RUNS=$(ACC_RUNS) FRAMES=$(FRAMES) PY_N=$(PY_N) ONLY='$(ONLY)' \
	  python3 bench/sites_bench.py
