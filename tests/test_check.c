/* SPDX-License-Identifier: MIT */
/* test_check.c — the checking mode (SIZECLASS_CHECK=1): a write past the
 * request into a block's slack is found by free and by realloc; a write
 * into a freed block (its key word at offset 8, its poison at 16, its last
 * byte) is found when the block is handed out again or leaves the
 * quarantine (SIZECLASS_CHECK_QUARANTINE), and at exit for the blocks the
 * quarantine still holds. Each as a death test in this process (which runs
 * in the checking mode, quarantine of 8) and in the helper program,
 * preloaded and linked, where the exact line is compared, with and without
 * quarantine where both apply. Then legitimate use is never reported. */
#include <criterion/criterion.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>

#include "check_test.h"
#include "sizeclass.h"

/* This whole test process runs in the checking mode. */
const char *const sizeclass_options = "SIZECLASS_CHECK=1 SIZECLASS_CHECK_QUARANTINE=8";

/* The helper programs' environments: without and with a quarantine. */
static const char *const plain[] = {"SIZECLASS_CHECK=1", NULL};
static const char *const held[] = {"SIZECLASS_CHECK=1", "SIZECLASS_CHECK_QUARANTINE=64", NULL};

#if SC_HARDEN

/* ---- kind 1: in this process ---------------------------------------------- */

CK_DEATH_TEST(check_abort, check_overflow)
CK_DEATH_TEST(check_abort, check_overflow_realloc)
CK_DEATH_TEST(check_abort, check_uaf_8)
CK_DEATH_TEST(check_abort, check_uaf_16)
CK_DEATH_TEST(check_abort, check_uaf_last)
CK_DEATH_TEST(check_abort, check_uaf_reused)
CK_DEATH_TEST(check_abort, check_uaf_at_exit)
CK_DEATH_TEST(check_abort, check_double_free)

/* ---- kind 2: preloaded, exact message ------------------------------------- */

/* Preloaded and linked; without quarantine (the block is checked when it
 * is handed out again) and with one (when it leaves the quarantine). */
#define CHECK_MESSAGE_TEST(name)                                                            \
  Test(check_message, name) { ck_expect_message(#name, plain, CK_PRELOADED); }              \
  Test(check_message, name##_quarantined) { ck_expect_message(#name, held, CK_PRELOADED); } \
  Test(check_message, name##_linked) { ck_expect_message(#name, plain, CK_LINKED); }        \
  Test(check_message, name##_quarantined_linked) { ck_expect_message(#name, held, CK_LINKED); }

CHECK_MESSAGE_TEST(check_overflow)
CHECK_MESSAGE_TEST(check_overflow_realloc)
CHECK_MESSAGE_TEST(check_uaf_8)
CHECK_MESSAGE_TEST(check_uaf_16)
CHECK_MESSAGE_TEST(check_uaf_last)
CHECK_MESSAGE_TEST(check_double_free)

/* These need the quarantine. */
#define QUARANTINE_MESSAGE_TEST(name)                                                       \
  Test(check_message, name##_quarantined) { ck_expect_message(#name, held, CK_PRELOADED); } \
  Test(check_message, name##_quarantined_linked) { ck_expect_message(#name, held, CK_LINKED); }

QUARANTINE_MESSAGE_TEST(check_uaf_reused)
QUARANTINE_MESSAGE_TEST(check_uaf_at_exit)

/* Without quarantine a write after the block was handed out again lands in
 * a live block: nothing can see it, and the scenario says so. */
Test(check_message, reuse_needs_the_quarantine) {
  pr_result_t r;
  ck_run_exit(&r, "check_uaf_reused", plain, CK_PRELOADED, 3);
  free(r.out);
}

/* The default mode does not look at slack: the same program runs to its
 * end (as it did before the checking mode existed). */
Test(check_message, default_mode_unchanged) {
  static const char *const none[] = {NULL};
  pr_result_t r;
  ck_run_exit(&r, "check_overflow", none, CK_PRELOADED, 1);
  free(r.out);
}

#endif /* SC_HARDEN */

/* ---- legitimate use is never an error -------------------------------------- */

static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i);
}
static void expect_fill(const uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) cr_assert_eq(p[i], (uint8_t)(seed + i), "byte %zu of %zu", i, n);
}

/* Every request size writes its whole request, and malloc_usable_size
 * says what that is: the request (the rest of the block is slack). */
Test(check_ok, every_size_uses_its_request) {
  for (size_t n = 0; n <= 1024; n++) {
    uint8_t *p = malloc(n);
    cr_assert_not_null(p);
    cr_assert(sc_owns(p) || n == 0);
    cr_assert_eq(malloc_usable_size(p), n);
    fill(p, n, (uint8_t)n);
    expect_fill(p, n, (uint8_t)n);
    free(p);
  }
}

/* realloc within a class grows and shrinks the request; across classes the
 * contents move. */
Test(check_ok, realloc_moves_the_request) {
  uint8_t *p = malloc(17);
  fill(p, 17, 1);
  p = realloc(p, 32); /* same class: kept, grown to the whole block */
  cr_assert_eq(malloc_usable_size(p), 32);
  expect_fill(p, 17, 1);
  fill(p, 32, 2);
  p = realloc(p, 20); /* same class, shrunk: bytes 20.. are slack again */
  cr_assert_eq(malloc_usable_size(p), 20);
  p = realloc(p, 700); /* another class */
  expect_fill(p, 20, 2);
  fill(p, 700, 3);
  p = realloc(p, 5000); /* the system allocator */
  expect_fill(p, 700, 3);
  p = realloc(p, 100);
  expect_fill(p, 100, 3);
  fill(p, 100, 4);
  free(p);
}

Test(check_ok, calloc_and_aligned) {
  uint8_t *z = calloc(3, 7);
  for (int i = 0; i < 21; i++) cr_assert_eq(z[i], 0);
  fill(z, 21, 5);
  free(z);
  for (size_t align = 16; align <= 1024; align *= 2) {
    void *p = NULL;
    cr_assert_eq(posix_memalign(&p, align, 40), 0);
    cr_assert_eq((uintptr_t)p % align, 0);
    fill(p, 40, 6);
    free(p);
    uint8_t *q = aligned_alloc(align, align);
    cr_assert_eq((uintptr_t)q % align, 0);
    fill(q, align, 7);
    free(q);
  }
}

/* Blocks freed by another thread go through the quarantine and back to
 * their owner; reused, they are as clean as any. */
Test(check_ok, cross_thread_frees_and_reuse) {
  static void *ptrs[512];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 512; i++) {
      size_t n = (size_t)(i * 37 + round) % 1025;
      ptrs[i] = malloc(n);
      fill(ptrs[i], n, (uint8_t)i);
    }
    ck_free_in_thread(ptrs, 512);
  }
}

/* Many rounds of the same blocks: every one handed out again passes its
 * check (the slack written at hand-out, the poison at free). */
Test(check_ok, churn_never_reports) {
  void *live[256] = {0};
  uint32_t x = 12345;
  for (int i = 0; i < 200000; i++) {
    x = x * 1103515245u + 12345u;
    unsigned k = (x >> 8) % 256;
    free(live[k]);
    size_t n = (x >> 16) % 1025;
    live[k] = malloc(n);
    memset(live[k], 0xdf, n); /* the poison's own byte, written legitimately */
  }
  for (int k = 0; k < 256; k++) free(live[k]);
}

/* Real programs run clean in the checking mode, quarantine or not. */
Test(check_ok, preloaded_programs_run_clean) {
  const char *const *envs[] = {plain, held};
  for (int i = 0; i < 2; i++) {
    char *argv[] = {"/bin/sh", "-c", "seq 1 30000 | sort -r | tr 0-9 a-j | sort | md5sum", NULL};
    pr_opts_t o = {.preload = true, .timeout_s = 60, .env = envs[i], .drop_sizeclass_env = true};
    pr_result_t r;
    cr_assert(pr_run(&r, argv, &o));
    cr_assert_exit(&r, 0);
    cr_assert_str_empty(r.err);
    cr_assert_eq(strlen(r.out), 36, "md5sum printed: %s", r.out);
    free(r.out);
  }
}
