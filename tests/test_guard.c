/* SPDX-License-Identifier: MIT */
/* test_guard.c — sampled guard pages (SIZECLASS_GUARD): with every
 * allocation guarded (SIZECLASS_GUARD=1), a read or write one byte past a
 * 48-byte request and a read or write of a freed block fault and are
 * reported with the kind, the address, offset, size and threads; misuse of
 * a guarded block (double, invalid free, realloc of a freed one, a write
 * into its rounding) is reported as for any block. Each as a death test in
 * this process (which guards every allocation) and in the helper program,
 * preloaded and linked (exact line). Faults that are not in the pool reach the program's
 * own handler, or kill the program as before. Then: guarded blocks work
 * with every API, across threads and fork, stay aligned, and a full pool
 * only means unguarded blocks; sampling guards about one allocation in n. */
#include <criterion/criterion.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/wait.h>

#include "check_test.h"
#include "sizeclass.h"

/* This whole test process guards every allocation it can. */
const char *const sizeclass_options = "SIZECLASS_GUARD=1 SIZECLASS_GUARD_SLOTS=4096";

static const char *const every[] = {"SIZECLASS_GUARD=1", "SIZECLASS_GUARD_SLOTS=4096", NULL};

/* ---- kind 1: in this process ---------------------------------------------- */

CK_DEATH_TEST(guard_abort, guard_overflow_write)
CK_DEATH_TEST(guard_abort, guard_overflow_read)
CK_DEATH_TEST(guard_abort, guard_uaf_read)
CK_DEATH_TEST(guard_abort, guard_uaf_write)
CK_DEATH_TEST(guard_abort, guard_uaf_thread)
CK_DEATH_TEST(guard_abort, guard_slack)
CK_DEATH_TEST(guard_abort, guard_double_free)
CK_DEATH_TEST(guard_abort, guard_invalid_free)
CK_DEATH_TEST(guard_abort, guard_realloc_freed)
CK_DEATH_TEST(guard_abort, guard_wild)

/* ---- kind 2: preloaded, exact message ------------------------------------- */

#define GUARD_MESSAGE_TEST(name)                                               \
  Test(guard_message, name) { ck_expect_message(#name, every, CK_PRELOADED); } \
  Test(guard_message, name##_linked) { ck_expect_message(#name, every, CK_LINKED); }

GUARD_MESSAGE_TEST(guard_overflow_write)
GUARD_MESSAGE_TEST(guard_overflow_read)
GUARD_MESSAGE_TEST(guard_uaf_read)
GUARD_MESSAGE_TEST(guard_uaf_write)
GUARD_MESSAGE_TEST(guard_uaf_thread)
GUARD_MESSAGE_TEST(guard_slack)
GUARD_MESSAGE_TEST(guard_double_free)
GUARD_MESSAGE_TEST(guard_invalid_free)
GUARD_MESSAGE_TEST(guard_realloc_freed)
GUARD_MESSAGE_TEST(guard_wild)

/* With allocation sites recorded (a sites feature sets the guard pages'
 * hook; here a fake one, in the linked program), the report names the
 * allocation and free sites on lines of their own. */
Test(guard_message, sites_are_named) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "linked/check_misuse");
  char *argv[] = {prog, "sites", "guard_uaf_read", NULL};
  pr_opts_t o = {.timeout_s = 60, .env = every, .drop_sizeclass_env = true};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "status %#x, stderr %s",
            (unsigned)r.status, r.err);
  unsigned long block = 0;
  long offset = 0, alloc_tid = 0, free_tid = 0;
  cr_assert_eq(sscanf(r.out, "%lx %ld %ld %ld", &block, &offset, &alloc_tid, &free_tid), 4);
  char want[1024];
  ck_expected(ck_find("guard_uaf_read"), block, offset, alloc_tid, free_tid, want, 512);
  strcat(want, "\nsizeclass:   allocated at fake site 7\nsizeclass:   freed at fake site 7\n");
  cr_assert_str_eq(r.err, want);
  free(r.out);
}

/* The program refuses to run unpreloaded, so a missing preload can never
 * pass as "caught". */
Test(guard_message, refuses_without_preload) {
  pr_result_t r;
  ck_run_exit(&r, "guard_overflow_write", every, CK_PLAIN, 2);
  free(r.out);
}

/* Without SIZECLASS_GUARD the overflow lands in the block's rounding: no
 * fault, as before (the program then reports the miss). */
Test(guard_message, off_by_default) {
  static const char *const none[] = {NULL};
  pr_result_t r;
  ck_run_exit(&r, "guard_overflow_write", none, CK_PRELOADED, 2);
  cr_assert(strstr(r.err, "precondition failed") != NULL, "%s", r.err);
  free(r.out);
}

/* ---- faults that are not ours --------------------------------------------- */

/** Run the linked program guard_chain MODE with env. */
static void run_chain(pr_result_t *r, const char *mode, const char *const *env) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "linked/guard_chain");
  char *argv[] = {prog, (char *)mode, NULL};
  pr_opts_t o = {.timeout_s = 60, .env = env, .drop_sizeclass_env = true};
  cr_assert(pr_run(r, argv, &o), "could not run %s", prog);
}

/* A program's own SIGSEGV handler, installed before the library's, still
 * gets the program's faults: ours sits on top and hands them down. */
Test(guard_chain, program_handler_gets_its_faults) {
  static const char *const env[] = {"SIZECLASS_GUARD=1", "GUARD_CHAIN_HANDLER=1", NULL};
  pr_result_t r;
  run_chain(&r, "null", env);
  cr_assert_str_eq(r.out, "handler: sizeclass\n", "ours must be on top of the program's");
  cr_assert_exit(&r, 42);
  cr_assert_str_eq(r.err, "program handler: signal 11, code 1\n");
  free(r.out);
}

/* ... and a guard fault in the same program is ours: reported, aborted. */
Test(guard_chain, guard_fault_is_ours) {
  static const char *const env[] = {"SIZECLASS_GUARD=1", "GUARD_CHAIN_HANDLER=1", NULL};
  pr_result_t r;
  run_chain(&r, "overflow", env);
  cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "status %#x, stderr %s",
            (unsigned)r.status, r.err);
  cr_assert(strncmp(r.err, "sizeclass: heap-buffer-overflow: write at ", 42) == 0, "%s", r.err);
  free(r.out);
}

/* With no handler of the program's, a crash stays a crash: SIGSEGV, from a
 * fault or sent by kill(). */
Test(guard_chain, crashes_stay_crashes) {
  static const char *const env[] = {"SIZECLASS_GUARD=1", NULL};
  const char *modes[] = {"null", "kill"};
  for (int i = 0; i < 2; i++) {
    pr_result_t r;
    run_chain(&r, modes[i], env);
    cr_assert_str_eq(r.out, "handler: sizeclass\n");
    cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV, "%s: status %#x, stderr %s",
              modes[i], (unsigned)r.status, r.err);
    cr_assert_str_empty(r.err);
    free(r.out);
  }
}

/* Without SIZECLASS_GUARD the library installs no handler at all. */
Test(guard_chain, no_handler_when_off) {
  static const char *const env[] = {"GUARD_CHAIN_HANDLER=1", NULL};
  pr_result_t r;
  run_chain(&r, "null", env);
  cr_assert_str_eq(r.out, "handler: program\n");
  cr_assert_exit(&r, 42);
  free(r.out);
}

/* ---- guarded blocks work like any ------------------------------------------ */

static bool guarded(const void *p, size_t n) {
  return malloc_usable_size((void *)p) == n &&
         (((uintptr_t)p + (n != 0 ? n : 1) + 15) & ~(uintptr_t)15) % 4096 == 0;
}
static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i);
}
static void expect_fill(const uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) cr_assert_eq(p[i], (uint8_t)(seed + i), "byte %zu of %zu", i, n);
}

Test(guard_ok, every_size_is_guarded_and_usable) {
  for (size_t n = 0; n <= 1024; n += (n < 64 ? 1 : 61)) {
    uint8_t *p = malloc(n);
    cr_assert(guarded(p, n), "malloc(%zu) = %p, usable %zu", n, (void *)p, malloc_usable_size(p));
    cr_assert_eq((uintptr_t)p % 16, 0);
    cr_assert(sc_owns(p) || n == 0);
    fill(p, n, (uint8_t)n);
    expect_fill(p, n, (uint8_t)n);
    void *gone = ck_opaque(p);
    free(p);
    cr_assert(!sc_owns(gone));
  }
  void *big = malloc(5000); /* the system allocator's, as always */
  cr_assert(!sc_owns(big));
  free(big);
}

Test(guard_ok, calloc_realloc_aligned) {
  uint8_t *z = calloc(6, 8);
  cr_assert(guarded(z, 48));
  for (int i = 0; i < 48; i++) cr_assert_eq(z[i], 0);
  fill(z, 48, 1);
  uint8_t *p = realloc(z, 40); /* a new guarded block */
  cr_assert(guarded(p, 40));
  expect_fill(p, 40, 1);
  p = realloc(p, 3000); /* the system allocator */
  expect_fill(p, 40, 1);
  fill(p, 3000, 2);
  p = realloc(p, 100); /* back to a guarded block */
  cr_assert(guarded(p, 100));
  expect_fill(p, 100, 2);
  cr_assert_null(realloc(p, 0)); /* frees it */
  for (size_t align = 32; align <= 1024; align *= 2) {
    void *q = NULL;
    cr_assert_eq(posix_memalign(&q, align, 40), 0);
    cr_assert_eq((uintptr_t)q % align, 0, "align %zu: %p", align, q);
    cr_assert_eq(malloc_usable_size(q), 40);
    fill(q, 40, 3);
    free(q);
    uint8_t *a = aligned_alloc(align, 24);
    cr_assert_eq((uintptr_t)a % align, 0);
    fill(a, 24, 4);
    free(a);
  }
  void *v = valloc(100);
  cr_assert_eq((uintptr_t)v % 4096, 0);
  free(v);
}

Test(guard_ok, freed_by_another_thread) {
  void *ptrs[64];
  for (int i = 0; i < 64; i++) {
    ptrs[i] = malloc(48);
    cr_assert(guarded(ptrs[i], 48));
  }
  ck_free_in_thread(ptrs, 64);
  for (int i = 0; i < 64; i++) cr_assert(!sc_owns(ck_opaque(ptrs[i])));
}

/* The child of a fork allocates and frees guarded blocks at once, frees the
 * parent's, and still catches an overflow. */
Test(guard_ok, fork_child_guards_too, .init = cr_redirect_stderr) {
  uint8_t *kept = malloc(48);
  fill(kept, 48, 9);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    uint8_t *p = malloc(64);
    int bad = !guarded(p, 64);
    for (int i = 0; i < 48; i++) bad |= kept[i] != (uint8_t)(9 + i);
    free(kept);
    free(p);
    if (bad) _exit(3);
    uint8_t *q = malloc(48);
    ((volatile uint8_t *)ck_opaque(q))[48] = 1; /* caught: SIGABRT */
    _exit(4);
  }
  int code = pr_wait_child(pid, 60); /* 128 + signal when killed */
  cr_assert_eq(code, 128 + SIGABRT, "child: exit code %d", code);
  expect_fill(kept, 48, 9);
  free(kept);
}

/* A full pool hands out ordinary blocks; a freed slot serves again (after
 * every other free one: first in, first out). */
Test(guard_ok, full_pool_falls_back) {
  enum { N = 6000 };
  static void *ptrs[N];
  int plain = 0;
  for (int i = 0; i < N; i++) {
    ptrs[i] = malloc(48);
    fill(ptrs[i], 48, (uint8_t)i);
    if (!guarded(ptrs[i], 48)) {
      plain++;
      cr_assert(sc_owns(ptrs[i]));
      cr_assert_eq(malloc_usable_size(ptrs[i]), 64);
    }
  }
  cr_assert_geq(plain, N - 4096, "at most 4096 slots");
  for (int i = 0; i < N; i++) {
    expect_fill(ptrs[i], 48, (uint8_t)i);
    free(ptrs[i]);
  }
  void *p = malloc(48);
  cr_assert(guarded(p, 48));
  free(p);
}

/* About one allocation in n is guarded; not the same ones each time. */
Test(guard_sampling, rate_is_about_one_in_n) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "guard_rate");
  char *argv[] = {prog, "200000", NULL};
  static const char *const env[] = {"SIZECLASS_GUARD=100", NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 60, .env = env, .drop_sizeclass_env = true};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_assert_exit(&r, 0);
  unsigned long guarded_n = 0, first = 0;
  cr_assert_eq(sscanf(r.out, "guarded %lu first %lu", &guarded_n, &first), 2, "%s", r.out);
  /* 200000 allocations at 1 in 100: 2000 expected; far outside +-20 %
   * would mean a wrong rate. */
  cr_assert(guarded_n > 1600 && guarded_n < 2400, "guarded %lu of 200000", guarded_n);
  free(r.out);
}
