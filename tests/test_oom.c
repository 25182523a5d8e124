/* test_oom.c — out of memory under a lowered RLIMIT_AS: every allocation
 * entry point answers NULL/ENOMEM, the program carries on once memory is
 * freed, threads that allocate while memory is exhausted (with and without
 * an arena) neither crash nor deadlock. The work is done by
 * tests/progs/oom_carry_on under LD_PRELOAD; a hang is killed by SIGALRM. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>

#include "harden_util.h"

/** Run oom_carry_on with headroom_mib and threads; check it passed and that
 * it was really refused, then really served again. */
static void run_oom(const char *headroom_mib, const char *threads) {
  hu_run_t r;
  char *argv[] = {"oom_carry_on", (char *)headroom_mib, (char *)threads, NULL};
  hu_run(&r, "oom_carry_on", argv, true, 120);
  cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
            "oom_carry_on %s %s: wait status %#x\nstdout: %s\nstderr: %s", headroom_mib, threads,
            (unsigned)r.status, r.out, r.err);
  unsigned long first = 0, refusals = 0, half = 0, again = 0, all = 0, third = 0;
  int got = sscanf(r.out,
                   "oom: ok first=%lu refusals=%lu freed_half=%lu again=%lu freed_all=%lu "
                   "third=%lu",
                   &first, &refusals, &half, &again, &all, &third);
  cr_assert_eq(got, 6, "summary line: %s", r.out);
  cr_assert_gt(first, 0);
  cr_assert_geq(refusals, 1000);
  cr_assert_gt(half, 0);
  cr_assert_gt(again, 0, "allocation carries on after frees");
  cr_assert_eq(all, first - half + again, "every block held was freed once");
  cr_assert_gt(third, 0);
  cr_assert_str_empty(r.err, "no complaint on stderr");
}

Test(oom, tight_limit_two_threads, .timeout = 150) { run_oom("8", "2"); }

Test(oom, wider_limit_four_threads, .timeout = 150) { run_oom("48", "4"); }
