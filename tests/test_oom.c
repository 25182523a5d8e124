/* SPDX-License-Identifier: MIT */
/* test_oom.c — out of memory under a lowered RLIMIT_AS: every allocation
 * entry point answers NULL/ENOMEM, the program carries on once memory is
 * freed, threads that allocate while memory is exhausted (with and without
 * an arena) neither crash nor deadlock. The work is done by
 * tests/progs/oom_carry_on under LD_PRELOAD; a hang is killed after 120 s. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>

#include "proc_run.h"

/** Run oom_carry_on with headroom_mib and threads; check it passed and that
 * it was really refused, then really served again. */
static void run_oom(const char *headroom_mib, const char *threads) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "oom_carry_on");
  char *argv[] = {prog, (char *)headroom_mib, (char *)threads, NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 120};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
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
  free(r.out);
}

Test(oom, tight_limit_two_threads, .timeout = 150) { run_oom("8", "2"); }

Test(oom, wider_limit_four_threads, .timeout = 150) { run_oom("48", "4"); }
