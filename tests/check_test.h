/* SPDX-License-Identifier: MIT */
/* check_test.h — the two kinds of death test of test_guard.c and
 * test_check.c, over the scenarios of check_util.h:
 *   CK_DEATH_TEST(name): in this process (linked with libsizeclass.a, its
 *     mode switched on by the suite's sizeclass_options), under Criterion's
 *     .signal = SIGABRT;
 *   ck_expect_message(name, env, how): tests/progs/check_misuse NAME
 *     with the variables env, under LD_PRELOAD or linked with
 *     libsizeclass.a, where the SIGABRT and the exact stderr line are both
 *     checked. */
#ifndef CHECK_TEST_H
#define CHECK_TEST_H

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "cr_util.h"
#include "check_util.h"

static void ck_ignore_announce(uintptr_t block, long offset, long alloc_tid, long free_tid) {
  (void)block;
  (void)offset;
  (void)alloc_tid;
  (void)free_tid;
}
static const ck_env_t ck_in_process = {.announce = ck_ignore_announce};

/* The scenario must abort; returning at all fails the test (no SIGABRT). */
#define CK_DEATH_TEST(suite, name)                                   \
  Test(suite, name, .signal = SIGABRT, .init = cr_redirect_stderr) { \
    int rc = ck_find(#name)->run(&ck_in_process);                    \
    cr_assert_fail("%s returned %d without aborting", #name, rc);    \
  }

/* Blocks for ck_free_in_thread's thread. */
typedef struct {
  void **ptrs;
  int n;
} ck_blocks_t;

static void *ck_free_blocks(void *arg) {
  const ck_blocks_t *b = arg;
  for (int i = 0; i < b->n; i++) free(b->ptrs[i]);
  return NULL;
}

/** Free ptrs[0..n) on another thread (a thread of its own, joined). */
static inline void ck_free_in_thread(void **ptrs, int n) {
  ck_blocks_t b = {ptrs, n};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, ck_free_blocks, &b), 0);
  pthread_join(t, NULL);
}

/** How the helper program gets the library. */
enum { CK_PLAIN, CK_PRELOADED, CK_LINKED };

/** Run check_misuse NAME with the variables env (NULL-terminated):
 * unpreloaded, preloaded, or its copy linked with libsizeclass.a; a hang
 * is killed after 60 s. */
static inline void ck_run(pr_result_t *r, const char *name, const char *const *env, int how) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), how == CK_LINKED ? "linked/check_misuse" : "check_misuse");
  char *argv[] = {prog, (char *)name, NULL};
  pr_opts_t o = {
      .preload = how == CK_PRELOADED, .timeout_s = 60, .env = env, .drop_sizeclass_env = true};
  cr_assert(pr_run(r, argv, &o), "could not run %s", prog);
}

/** ck_run, which must end with exit code `code` (free r->out). */
static inline void ck_run_exit(pr_result_t *r, const char *name, const char *const *env, int how,
                               int code) {
  ck_run(r, name, env, how);
  cr_assert_exit(r, code);
}

/** Scenario `name` under env, preloaded or linked (`how`), dies of
 * SIGABRT after writing exactly its message (one line) to stderr. */
static inline void ck_expect_message(const char *name, const char *const *env, int how) {
  const ck_case_t *c = ck_find(name);
  cr_assert_not_null(c, "no scenario %s", name);
  pr_result_t r;
  ck_run(&r, name, env, how);
  cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
            "%s: wait status %#x (want SIGABRT); stdout: %s; stderr: %s", name, (unsigned)r.status,
            r.out, r.err);
  unsigned long block = 0;
  long offset = 0, alloc_tid = 0, free_tid = 0;
  cr_assert_eq(sscanf(r.out, "%lx %ld %ld %ld", &block, &offset, &alloc_tid, &free_tid), 4,
               "%s: nothing announced: '%s'", name, r.out);
  char want[512];
  ck_expected(c, block, offset, alloc_tid, free_tid, want, sizeof(want) - 1);
  strcat(want, "\n");
  cr_assert_str_eq(r.err, want, "%s", name);
  free(r.out);
}

#endif /* CHECK_TEST_H */
