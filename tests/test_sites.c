/* SPDX-License-Identifier: MIT */
/* test_sites.c — allocation sites (SIZECLASS_SITES, docs/stats.md "Sites"):
 * exact counts, waste and leaks of known call sites at rate 1, with their
 * names, in the preloaded and the statically linked library; the top site
 * and its estimate under sampling; sites in threads, after fork and through
 * a signal frame; an unwinder that allocates; the folded stacks; the
 * report when sites are off and for a bad setting; and, in this process
 * (linked with libsizeclass.a), the cached stack walk against libgcc's.
 * The patterns are those of tests/progs/sites_prog.c. */
#include <alloca.h>
#include <pthread.h>

#include "sites_util.h"
#include "sizeclass.h"
#include "features/stack.h"
#include "features/unwinder.h"

/* The known sites of `sites_prog exact`. */
typedef struct {
  const char *function;
  uint64_t cls, allocs, live, wasted;
  const char *caller; /* frames[1] */
} known_t;

static const known_t exact_sites[] = {
    {"site_a", 64, 1000, 0, 1000 * (64 - 40), "run_exact"},
    {"site_b", 128, 500, 20, 500 * (128 - 100), "run_exact"},
    {"inner_c", 32, 300, 0, 300 * (32 - 20), "outer_c"},
    {"site_d", 256, 7, 7, 7 * (256 - 200), "run_exact"},
    {"site_f", 32, 50, 0, 50 * (32 - 24), "run_exact"},
};

/** Every known site of the exact pattern, with exact figures and names. */
static void check_exact(const su_json_t *j) {
  cr_assert_eq(su_ju(j, "0.site_sampling.rate_bytes"), 1);
  cr_assert_str_eq(su_jraw(j, "0.site_sampling.sampled"), "false");
  for (size_t k = 0; k < sizeof(exact_sites) / sizeof(exact_sites[0]); k++) {
    const known_t *e = &exact_sites[k];
    long i = sp_site(j, e->cls, e->function);
    cr_assert_geq(i, 0, "no site %s in class %lu", e->function, (unsigned long)e->cls);
    cr_expect_eq(sp_fig(j, i, "allocs"), e->allocs, "%s allocs", e->function);
    cr_expect_eq(sp_fig(j, i, "samples"), e->allocs, "%s samples", e->function);
    cr_expect_eq(sp_fig(j, i, "live_blocks"), e->live, "%s live", e->function);
    cr_expect_eq(sp_fig(j, i, "wasted_bytes"), e->wasted, "%s wasted", e->function);
    cr_expect_str_eq(su_jraw(j, "0.sites.%ld.sampled", i), "false");
    char name[64];
    snprintf(name, sizeof(name), "\"%s\"", e->function);
    cr_expect_str_eq(sp_frame(j, i, 0), name, "the function is the innermost frame");
    snprintf(name, sizeof(name), "\"%s\"", e->caller);
    cr_expect_str_eq(sp_frame(j, i, 1), name, "%s's caller", e->function);
    /* Each frame has its location: the program and an offset. */
    const char *loc = su_jraw(j, "0.sites.%ld.locations.0", i);
    cr_assert_not_null(loc);
    cr_expect(strstr(loc, "/sites_") != NULL && strstr(loc, "+0x") != NULL, "location %s", loc);
    cr_expect_eq(su_ju(j, "0.sites.%ld.frames.len", i), su_ju(j, "0.sites.%ld.locations.len", i));
  }
  /* The system allocator's site: class 0, 5 made, 2 freed. */
  long e = sp_site(j, 0, "site_e");
  cr_assert_geq(e, 0, "the system allocator's site");
  cr_expect_eq(sp_fig(j, e, "allocs"), 5);
  cr_expect_eq(sp_fig(j, e, "live_blocks"), 3);
  /* The process's first allocation (large, from a constructor). */
  long first = sp_site(j, 0, "first_site");
  cr_assert_geq(first, 0, "the first allocation of the process");
  cr_expect_eq(sp_fig(j, first, "allocs"), 1);
  cr_expect_eq(sp_fig(j, first, "live_blocks"), 1);
  /* The nested site names its whole chain. */
  long c = sp_site(j, 32, "inner_c");
  cr_expect_str_eq(sp_frame(j, c, 2), "\"run_exact\"");
  cr_expect_str_eq(sp_frame(j, c, 3), "\"main\"");
}

/** The exact pattern at rate 1, preloaded or statically linked. */
static void run_exact(bool static_link) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J", NULL};
  sp_run_report(&r, &j, static_link, "exact", NULL, env);
  check_exact(&j);
  sp_done(&r, &j);
}

Test(sites, exact_counts_and_names_at_rate_1) { run_exact(false); }

/* Linked statically, the library's code lies inside the program: its own
 * frames must still be told apart from the program's. */
Test(sites, exact_counts_with_the_static_archive) { run_exact(true); }

/* SIZECLASS_SITES alone: the text report on stderr, without exact
 * statistics, with the leaks and the waste by site. */
Test(sites, text_report_names_leaks_and_waste) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_SITES=1", NULL};
  sp_run(&r, false, "exact", NULL, env);
  cr_assert_eq(r.rc, 0);
  cr_assert_not_null(
      strstr(r.err, "sites: who allocates each class (every allocation recorded: exact counts)"),
      "%s", r.err);
  cr_expect_not_null(strstr(r.err, "not tracked (\"-\"): requested bytes"),
                     "no exact statistics implied");
  const char *leaks = strstr(r.err, "256 B by live blocks (leaks at exit)\n");
  cr_assert_not_null(leaks, "%s", r.err);
  char cells[8][48];
  const char *line = strchr(leaks, '\n') + 1;
  size_t n = su_cells(line, cells, 8);
  cr_assert_geq(n, 4);
  cr_expect_str_eq(cells[0], "7");
  cr_expect_str_eq(cells[1], "7");
  cr_expect_str_eq(cells[2], "392 B");
  cr_expect(strncmp(cells[3], "site_d < run_exact < main", 25) == 0, "%s", cells[3]);
  const char *waste = strstr(r.err, "64 B by bytes wasted to rounding up\n");
  cr_assert_not_null(waste);
  n = su_cells(strchr(waste, '\n') + 1, cells, 8);
  cr_expect_str_eq(cells[0], "1000");
  cr_expect_str_eq(cells[2], "23.4 KiB");
  cr_expect(strncmp(cells[3], "site_a < run_exact", 18) == 0, "%s", cells[3]);
  sp_free(&r);
}

/* At the default rate (about one allocation per 256 KiB requested, and at
 * least about one in 512): 400000 allocations at hot_site and 40000 at
 * cold_site, 64 B each. hot_site gets about 880 samples: its estimate is
 * within 20 % with a margin of more than 5 standard deviations. */
Test(sites, top_site_and_its_estimate_under_sampling) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_SITES=on", "SIZECLASS_STATS=%J", NULL};
  sp_run_report(&r, &j, false, "sampled", "400000", env);
  cr_assert_eq(su_ju(&j, "0.site_sampling.rate_bytes"), 262144);
  cr_assert_str_eq(su_jraw(&j, "0.site_sampling.sampled"), "true");
  long hot = sp_site(&j, 64, "hot_site"), cold = sp_site(&j, 64, "cold_site");
  cr_assert_geq(hot, 0);
  cr_assert_str_eq(su_jraw(&j, "0.sites.%ld.sampled", hot), "true");
  uint64_t est = sp_fig(&j, hot, "allocs"), samples = sp_fig(&j, hot, "samples");
  cr_expect(est >= 320000 && est <= 480000, "hot_site estimate %lu (true: 400000)",
            (unsigned long)est);
  cr_expect(samples > 100 && samples < 2000, "hot_site samples %lu", (unsigned long)samples);
  /* The class's ranking by allocations starts with the true top site. */
  long first = -1;
  for (long i = 0; i < (long)su_ju(&j, "0.sites.len"); i++)
    if (su_ju(&j, "0.sites.%ld.class", i) == 64) {
      first = i;
      break;
    }
  cr_expect_eq(first, hot, "hot_site leads class 64");
  if (cold >= 0) cr_expect_lt(sp_fig(&j, cold, "allocs"), est / 3);
  sp_done(&r, &j);
}

/* Sampled estimates are calibrated by the class's exact figures: the
 * sites of class 64 add up to its allocations (each rounded: within one a
 * site), and the hot site, 10 of every 11 of them, is within 7 % (the
 * calibration's spread is that of its share of the class's 430 samples
 * or so: 1.5 %; without it, that of its own 390: 5 %). */
Test(sites, sampled_estimates_add_up_to_the_class) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_SITES=on", "SIZECLASS_STATS=%J", NULL};
  sp_run(&r, false, "sampled", "200000", env);
  cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
  su_json_t j;
  su_json_load(&j, r.json_path, "one");
  uint64_t class_allocs = su_ju(&j, "0.classes.2.allocs"), sum = 0, n = 0;
  for (long i = 0; i < (long)su_ju(&j, "0.sites.len"); i++)
    if (su_ju(&j, "0.sites.%ld.class", i) == 64) {
      sum += sp_fig(&j, i, "allocs");
      n++;
    }
  cr_assert_geq(class_allocs, 220000);
  cr_expect(sum + n >= class_allocs && sum <= class_allocs + n,
            "class 64: sites sum to %lu over %lu sites, the class made %lu", (unsigned long)sum,
            (unsigned long)n, (unsigned long)class_allocs);
  long hot = sp_site(&j, 64, "hot_site");
  cr_assert_geq(hot, 0);
  uint64_t est = sp_fig(&j, hot, "allocs");
  cr_expect(est >= 186000 && est <= 214000, "hot_site estimate %lu (true: 200000)",
            (unsigned long)est);
  su_json_free(&j);
  sp_free(&r);
}

Test(sites, sites_of_threads) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J", NULL};
  sp_run_report(&r, &j, false, "threads", NULL, env);
  long i = sp_site(&j, 64, "thread_site");
  cr_assert_geq(i, 0);
  cr_expect_eq(sp_fig(&j, i, "allocs"), 4000, "4 threads x 1000, one stack");
  cr_expect_eq(sp_fig(&j, i, "live_blocks"), 0);
  cr_expect_str_eq(sp_frame(&j, i, 1), "\"thread_main\"");
  sp_done(&r, &j);
}

/* A sampled block (every one, at rate 1) freed by another thread, or
 * moved by realloc, leaves its site's live count: the free finds the
 * block's mark in its page's map on the remote path and on the local
 * one. */
Test(sites, sampled_blocks_freed_by_another_thread_or_moved) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J", NULL};
  sp_run(&r, false, "cross", NULL, env);
  cr_assert_eq(r.rc, 0, "%s", r.err);
  su_json_t j;
  su_json_load(&j, r.json_path, "one");
  long i = sp_site(&j, 64, "cross_site");
  cr_assert_geq(i, 0);
  cr_expect_eq(sp_fig(&j, i, "allocs"), 400);
  cr_expect_eq(sp_fig(&j, i, "live_blocks"), 0);
  su_json_free(&j);
  sp_free(&r);
}

/* The child records its own allocations (locks and tables work after
 * fork) and inherits its parent's live blocks; each writes its report. */
Test(sites, sites_after_fork) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J.%p.json", NULL};
  sp_run(&r, false, "fork", NULL, env);
  cr_assert_eq(r.rc, 0, "%s", r.err);
  cr_assert_eq(su_said(r.out, "child"), 0, "the child exited cleanly");
  uint64_t parent = su_said(r.out, "pid");
  int rc;
  char *files = pr_sh(&rc, 10, "ls %s.*.json", r.json_path);
  cr_assert_not_null(files);
  int reports = 0;
  char *save = NULL; /* su_json_load uses strtok */
  for (char *f = strtok_r(files, "\n", &save); f != NULL;
       f = strtok_r(NULL, "\n", &save), reports++) {
    su_json_t j;
    su_json_load(&j, f, "one");
    bool is_parent = su_ju(&j, "0.process.pid") == parent;
    long p = sp_site(&j, 64, "parent_site"), c = sp_site(&j, 64, "child_site");
    cr_assert_geq(p, 0, "%s: parent_site", f);
    cr_expect_eq(sp_fig(&j, p, "live_blocks"), 100);
    if (is_parent) {
      cr_expect_lt(c, 0, "the parent never ran child_site");
    } else {
      cr_assert_geq(c, 0, "the child's site");
      cr_expect_eq(sp_fig(&j, c, "allocs"), 200);
      cr_expect_eq(sp_fig(&j, c, "live_blocks"), 200);
    }
    su_json_free(&j);
  }
  cr_expect_eq(reports, 2, "one report per process");
  free(files);
  sp_free(&r);
}

/* An allocation made by the unwinder (here: the program's own
 * _Unwind_Find_FDE and _Unwind_Backtrace, which the library's calls bind
 * to, allocate and free) is served and not sampled: no recursion, no
 * deadlock, and the counts stay exact. */
Test(sites, an_unwinder_that_allocates_does_not_recurse) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J", "SITES_PROG_UNWIND_ALLOC=1",
                       NULL};
  sp_run_report(&r, &j, false, "exact", NULL, env);
  cr_expect_gt(su_said(r.out, "walks"), 0, "the unwinder was called");
  check_exact(&j);
  sp_done(&r, &j);
}

/* A signal frame: the cached rules do not cover it, libgcc walks the
 * stack (and allocates, here), through the frame to the program. */
Test(sites, a_stack_through_a_signal_frame) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J", "SITES_PROG_UNWIND_ALLOC=1",
                       NULL};
  sp_run_report(&r, &j, false, "signal", NULL, env);
  cr_expect_gt(su_said(r.out, "walks"), 0, "libgcc walked it");
  long i = sp_site(&j, 64, "signal_site");
  cr_assert_geq(i, 0);
  cr_expect_eq(sp_fig(&j, i, "allocs"), 10);
  cr_expect_str_eq(sp_frame(&j, i, 1), "\"on_signal\"");
  bool main_seen = false;
  for (int k = 2; k < (int)su_ju(&j, "0.sites.%ld.frames.len", i); k++)
    main_seen |= strcmp(sp_frame(&j, i, k), "\"main\"") == 0;
  cr_expect(main_seen, "the walk crossed the signal frame to main");
  sp_done(&r, &j);
}

Test(sites, folded_stacks_for_flame_graphs) {
  sp_run_t r;
  char folded[160];
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_SITES_FORMAT=folded",
                       "SIZECLASS_SITES_FOLDED=%J.folded", NULL};
  sp_run(&r, false, "exact", NULL, env);
  cr_assert_eq(r.rc, 0, "%s", r.err);
  cr_expect_str_empty(r.err, "folded output implies no report: %s", r.err);
  snprintf(folded, sizeof(folded), "%s.folded", r.json_path);
  char *text = su_read(folded);
  cr_assert_not_null(text, "no %s", folded);
  cr_expect_not_null(strstr(text, ";main;run_exact;site_a;[64 B] 1000\n"), "%s", text);
  cr_expect_not_null(strstr(text, ";main;run_exact;outer_c;inner_c;[32 B] 300\n"), "%s", text);
  cr_expect_not_null(strstr(text, ";main;run_exact;site_e;[system] 5\n"), "%s", text);
  free(text);
  sp_free(&r);
}

/* A folded-stack path that cannot be written: one warning naming the
 * setting that chose it and the path; the program runs on. */
Test(sites, an_unwritable_folded_path_is_named) {
  const char *named[] = {"SIZECLASS_SITES=1", "SIZECLASS_SITES_FORMAT=folded",
                         "SIZECLASS_SITES_FOLDED=/nonexistent-sc-dir/x.folded", NULL};
  sp_expect_err("exact", NULL, named, 0,
                "sizeclass: SIZECLASS_SITES_FOLDED=\"/nonexistent-sc-dir/x.folded\": cannot "
                "write the folded stacks to /nonexistent-sc-dir/x.folded; no folded stacks\n");
  const char *beside[] = {"SIZECLASS_SITES=1", "SIZECLASS_SITES_FORMAT=folded",
                          "SIZECLASS_STATS=/nonexistent-sc-dir/r.json", NULL};
  sp_run_t r;
  sp_run(&r, false, "exact", NULL, beside);
  cr_expect_eq(r.rc, 0, "%s", r.err);
  cr_expect_not_null(strstr(r.err,
                            "sizeclass: SIZECLASS_SITES_FORMAT=\"folded\": cannot write "
                            "the folded stacks to /nonexistent-sc-dir/r.json.folded; no "
                            "folded stacks\n"),
                     "%s", r.err);
  sp_free(&r);
}

Test(sites, off_they_are_not_tracked) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_STATS=%J", NULL};
  sp_run_report(&r, &j, false, "exact", NULL, env);
  cr_expect_str_eq(su_jraw(&j, "0.sites"), "null");
  cr_expect_str_eq(su_jraw(&j, "0.site_sampling"), "null");
  sp_done(&r, &j);
}

/* A bad value never switches a feature on: one warning, and no sites. */
Test(sites, a_bad_setting_warns_once_and_leaves_sites_off) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_SITES=often", "SIZECLASS_STATS=%J", NULL};
  sp_run_report(&r, &j, false, "exact", NULL, env);
  cr_expect_str_eq(r.err,
                   "sizeclass: SIZECLASS_SITES=\"often\": expected on, off, 1 or a byte count from "
                   "2 to 128m (k, m: KiB, MiB); sites stay off\n");
  cr_expect_str_eq(su_jraw(&j, "0.site_sampling"), "null");
  cr_expect_str_eq(su_jraw(&j, "0.sites"), "null");
  sp_done(&r, &j);
}

/* scripts/sc-addr2line turns each frame's module+offset into file:line. */
Test(sites, locations_resolve_to_source_lines) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS=%J", NULL};
  sp_run(&r, false, "exact", NULL, env);
  cr_assert_eq(r.rc, 0);
  int rc;
  char *out = pr_sh(&rc, 60, "scripts/sc-addr2line '%s'", r.json_path);
  cr_assert_not_null(out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_expect_not_null(strstr(out, "site_a"), "%s", out);
  cr_expect_not_null(strstr(out, "tests/progs/sites_prog.c:"), "%s", out);
  free(out);
  sp_free(&r);
}

/* ---- libgcc's unwinder: mapped only for the features that walk stacks --------------------------
 */

/** How many of /proc/self/maps's lines name libgcc_s in tests/progs/PROG
 * (settings_prog, preloaded, or settings_prog_linked, with the archive),
 * run with the NAME=value entries of env and, when api_sites, with
 * sc_option_set("SIZECLASS_SITES", "1") from its main; none of our own
 * SIZECLASS_* variables. */
static uint64_t gcc_maps(bool linked, const char *const *env, bool api_sites) {
  char prog[512];
  snprintf(prog, sizeof(prog), "%s/tests/progs/%s", su_build(),
           linked ? "settings_prog_linked" : "settings_prog");
  char *with_api[] = {prog, "api", "SIZECLASS_SITES", "1", "maps", "libgcc_s", NULL};
  char *plain[] = {prog, "maps", "libgcc_s", NULL};
  pr_opts_t o = {.preload = !linked, .drop_sizeclass_env = true, .timeout_s = 60, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, api_sites ? with_api : plain, &o), "could not run %s", prog);
  cr_assert_eq(r.exit_code, 0, "%s: %s", prog, r.err);
  if (api_sites) cr_assert_not_null(strstr(r.out, "set SIZECLASS_SITES=1\n"), "%s", r.out);
  uint64_t n = su_said(r.out, "maps");
  free(r.out);
  return n;
}

/* The library does not link libgcc_s (the unwinder): a plain C program
 * never maps it unless sites, tag rules or budgets walk stacks; they bind
 * it when switched on, from the environment or from the program's code
 * (features/unwinder.c). */
Test(sites, libgcc_s_is_mapped_only_when_stacks_are_walked) {
  const char *sites[] = {"SIZECLASS_SITES=1", NULL};
  const char *tags[] = {"SIZECLASS_TAGS=mine=main", NULL};
  const char *budget[] = {"SIZECLASS_BUDGET=total=1GiB", NULL};
  for (int linked = 0; linked < 2; linked++) {
    const char *how = linked ? "linked with libsizeclass.a" : "preloaded";
    cr_expect_eq(gcc_maps(linked, NULL, false), 0, "%s, nothing on: libgcc_s is mapped", how);
    cr_expect_gt(gcc_maps(linked, sites, false), 0, "%s, SIZECLASS_SITES", how);
    cr_expect_gt(gcc_maps(linked, tags, false), 0, "%s, SIZECLASS_TAGS", how);
    cr_expect_gt(gcc_maps(linked, budget, false), 0, "%s, SIZECLASS_BUDGET", how);
    cr_expect_gt(gcc_maps(linked, NULL, true), 0, "%s, sc_option_set(SIZECLASS_SITES)", how);
  }
}

/* ---- the walk itself, in this process ----------------------------------------------------------
 */

#if defined(__clang__) /* clang clones no functions and has no optimize attribute */
#define NOINLINE __attribute__((noinline))
#define WITH_FRAME_POINTER NOINLINE
#else
#define NOINLINE __attribute__((noinline, noclone))
#define WITH_FRAME_POINTER __attribute__((noinline, optimize("no-omit-frame-pointer")))
#endif

/* The two walks from the same frame; the first entries are the two call
 * sites (they differ), the rest must match. */
NOINLINE static void compare_walks(const char *what) {
  uintptr_t fast[SC_UNWIND_DEPTH], slow[SC_UNWIND_DEPTH];
  unsigned n = sc__unwind(fast, SC_UNWIND_DEPTH);
  unsigned m = sc__unwind_libgcc(slow, SC_UNWIND_DEPTH);
  __asm__ volatile("" ::: "memory");
  cr_assert_eq(n, m, "%s: %u frames, libgcc %u", what, n, m);
  cr_assert_geq(n, 3, "%s", what);
  for (unsigned i = 1; i < n; i++)
    cr_assert_eq(fast[i], slow[i], "%s: frame %u: %#lx, libgcc %#lx", what, i,
                 (unsigned long)fast[i], (unsigned long)slow[i]);
  cr_assert_lt(fast[0] > slow[0] ? fast[0] - slow[0] : slow[0] - fast[0], 64,
               "both start in this function");
}

NOINLINE static int recurse(int depth) {
  if (depth == 0) {
    compare_walks("recursion");
    return 0;
  }
  return recurse(depth - 1) + 1;
}

/* A frame that alloca makes variable: its CFA rule is rbp-based. */
NOINLINE static int with_alloca(size_t n) {
  volatile char *buf = alloca(n);
  buf[0] = 1;
  compare_walks("alloca");
  return buf[0];
}

WITH_FRAME_POINTER static int with_frame_pointer(int x) {
  compare_walks("frame pointer");
  return x + 1;
}

static void *walk_in_thread(void *arg) {
  recurse(5);
  return arg;
}

Test(sites, the_cached_walk_matches_libgcc) {
  /* No stack-walking feature is on in this process: bind the unwinder as
   * sc_option_set would (features/unwinder.c). */
  cr_assert(sc__unwinder_bind(), "libgcc's unwinder could not be bound");
  for (int d = 0; d < 25; d += 6) recurse(d);
  with_alloca(100);
  with_alloca(5000);
  with_frame_pointer(1);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, walk_in_thread, NULL), 0);
  pthread_join(t, NULL);
  /* Twice: the second walk reads every rule from the cache. */
  recurse(7);
  recurse(7);
}

Test(sites, the_library_code_is_recognised) {
  cr_expect(sc__unwind_is_ours((uintptr_t)&sc_malloc + 4));
  cr_expect(sc__unwind_is_ours((uintptr_t)&sc__unwind + 4));
  cr_expect(!sc__unwind_is_ours((uintptr_t)&recurse + 4));
  cr_expect(!sc__unwind_is_ours((uintptr_t)&strlen + 4));
}

/* Guard pages (SIZECLASS_GUARD) name the sites of a block's allocation and
 * free in their use-after-free report when sites are recorded. */
Test(sites, guard_pages_name_the_sites) {
  char prog[512];
  snprintf(prog, sizeof(prog), "%s/tests/progs/check_misuse", su_build());
  char *argv[] = {prog, "guard_uaf_read", NULL};
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_GUARD=1", "SIZECLASS_GUARD_SLOTS=4096",
                       NULL};
  pr_opts_t o = {.preload = true, .drop_sizeclass_env = true, .timeout_s = 60, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  free(r.out);
  cr_assert_eq(r.exit_code, 128 + SIGABRT, "%s", r.err);
  cr_expect_not_null(strstr(r.err, "sizeclass: use-after-free: read at "), "%s", r.err);
  cr_expect_not_null(strstr(r.err, "\nsizeclass:   allocated at ck_guard_uaf_read < main (/"), "%s",
                     r.err);
  cr_expect_not_null(strstr(r.err, "\nsizeclass:   freed at ck_guard_uaf_read < main (/"), "%s",
                     r.err);
  cr_expect_not_null(strstr(r.err, "/check_misuse+0x"), "%s", r.err);
}
