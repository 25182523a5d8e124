# SPDX-License-Identifier: MIT
# mk/stress.mk — the multithreaded torture test tests/progs/stress.c, run
# for a bounded time with the SC_DEBUG library preloaded (mk/debug.mk: the
# slow paths validate their pages and arenas while other threads free into
# them). It fails on any wrong byte, on a
# resident set above STRESS_MAX_RSS_MIB, or on one that keeps growing after
# warm-up (runs of 10 s or more). Beside the workers, rounds of
# STRESS_ROUND_THREADS short-lived threads hand blocks from one round to the
# next (issue 11's pattern; 0 turns them off).
#
#   make stress [STRESS_SECONDS=30] [STRESS_THREADS=4] [STRESS_MAX_RSS_MIB=512]
#               [STRESS_ROUND_THREADS=2] [STRESS_ENV='SIZECLASS_CHECK=1 ...']
#   make stress-stats [STRESS_SECONDS=30]   the same in the exact-statistics tier
#                                           with sampled sites (their own fast
#                                           paths, the report written at exit)
# STRESS_ENV: variables for the stressed process (mk/check.mk's
# stress-check and stress-guard use it).

.PHONY: stress stress-stats

STRESS_SECONDS ?= 30
STRESS_THREADS ?= 4
STRESS_MAX_RSS_MIB ?= 512
STRESS_ROUND_THREADS ?= 2
STRESS_ENV ?=

stress: debug-lib $(BUILD)/tests/progs/stress
	env $(STRESS_ENV) LD_PRELOAD=$(abspath $(DEBUG_SO)) $(BUILD)/tests/progs/stress -t $(STRESS_THREADS) \
	  -s $(STRESS_SECONDS) -m $(STRESS_MAX_RSS_MIB) -r $(STRESS_ROUND_THREADS)

stress-stats:
	@$(MAKE) --no-print-directory stress STRESS_ENV='SIZECLASS_STATS=/dev/null SIZECLASS_SITES=on'
