/* SPDX-License-Identifier: MIT */
/* test_harden.c — misuse is caught, loudly: double free (same thread, by
 * another thread, on a remote list, after a drain, through realloc), invalid
 * free (interior, never carved, unused page, metadata) and corrupted free
 * lists abort with one "sizeclass:" line. Two kinds of test per scenario of
 * harden_util.h: in this process (linked with libsizeclass.a) under
 * Criterion's .signal = SIGABRT, and in tests/progs/harden_misuse under
 * LD_PRELOAD, where the exact stderr line and the SIGABRT are both checked.
 * Then the other side: legitimate reuse is never mistaken for misuse. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <signal.h>
#include <stdio.h>

#include "harden_util.h"
#include "cr_util.h"
#include "sizeclass.h"

static void ignore_announce(uintptr_t p) { (void)p; }
static bool owns(const void *p) { return sc_owns(p); }
static const hu_env_t in_process = {.announce = ignore_announce, .owns = owns};

#if SC_HARDEN

/* ---- kind 1: in this process, Criterion checks the signal ---------------- */

/* The scenario must abort; returning at all fails the test (no SIGABRT). */
#define DEATH_TEST(name)                                                    \
  Test(harden_abort, name, .signal = SIGABRT, .init = cr_redirect_stderr) { \
    int rc = hu_find(#name)->run(&in_process);                              \
    cr_assert_fail("%s returned %d without aborting", #name, rc);           \
  }

DEATH_TEST(double_free)
DEATH_TEST(double_free_thread)
DEATH_TEST(double_free_remote_list)
DEATH_TEST(double_free_after_drain)
DEATH_TEST(double_free_realloc)
DEATH_TEST(realloc_freed_same_class)
DEATH_TEST(invalid_interior)
DEATH_TEST(invalid_interior_thread)
DEATH_TEST(invalid_uncarved)
DEATH_TEST(invalid_unused_page)
DEATH_TEST(invalid_metadata)
DEATH_TEST(corrupt_list)
DEATH_TEST(corrupt_remote)

/* ---- kind 2: preloaded program, exact message and SIGABRT --------------- */

/** Run harden_misuse with scenario `name`, preloaded or not; a hang is
 * killed after 60 s and fails the caller's status check. */
static void run_misuse(pr_result_t *r, const char *name, bool preload) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "harden_misuse");
  char *argv[] = {prog, (char *)name, NULL};
  pr_opts_t o = {.preload = preload, .timeout_s = 60};
  cr_assert(pr_run(r, argv, &o), "could not run %s", prog);
}

/** Run scenario `name` in harden_misuse under LD_PRELOAD and check that it
 * died of SIGABRT after writing exactly the expected line to stderr. */
static void expect_abort_message(const char *name) {
  const hu_case_t *c = hu_find(name);
  cr_assert_not_null(c);
  pr_result_t r;
  run_misuse(&r, name, true);
  cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
            "%s: wait status %#x (want SIGABRT); stderr: %s", name, (unsigned)r.status, r.err);
  char *end = NULL;
  unsigned long addr = strtoul(r.out, &end, 16);
  cr_assert(end != r.out && *end == '\n', "%s: no address announced: '%s'", name, r.out);
  char want[256];
  if (strcmp(c->what, "corrupted free list") == 0)
    snprintf(want, sizeof(want), "sizeclass: corrupted free list in class %u\n", c->class_size);
  else if (c->class_size != 0)
    snprintf(want, sizeof(want), "sizeclass: %s of 0x%lx (class %u B)\n", c->what, addr,
             c->class_size);
  else
    snprintf(want, sizeof(want), "sizeclass: %s of 0x%lx\n", c->what, addr);
  cr_assert(addr != 0 || strcmp(c->what, "corrupted free list") == 0, "%s: null address", name);
  cr_assert_str_eq(r.err, want, "%s", name);
  free(r.out);
}

#define MESSAGE_TEST(name) \
  Test(harden_message, name) { expect_abort_message(#name); }

MESSAGE_TEST(double_free)
MESSAGE_TEST(double_free_thread)
MESSAGE_TEST(double_free_remote_list)
MESSAGE_TEST(double_free_after_drain)
MESSAGE_TEST(double_free_realloc)
MESSAGE_TEST(realloc_freed_same_class)
MESSAGE_TEST(invalid_interior)
MESSAGE_TEST(invalid_interior_thread)
MESSAGE_TEST(invalid_uncarved)
MESSAGE_TEST(invalid_unused_page)
MESSAGE_TEST(invalid_metadata)
MESSAGE_TEST(corrupt_list)
MESSAGE_TEST(corrupt_remote)

/* The program refuses to run a scenario unpreloaded, so a missing preload
 * can never pass as "caught". */
Test(harden_message, refuses_without_preload) {
  pr_result_t r;
  run_misuse(&r, "double_free", false);
  cr_assert_exit(&r, 2);
  free(r.out);
}

#endif /* SC_HARDEN */

/* ---- legitimate use is never misuse ------------------------------------- */

/* A freed block handed out again is live: freeing it is no double free. */
Test(harden_ok, reuse_then_free) {
  for (int i = 0; i < 100000; i++) {
    void *p = hu_opaque(malloc(HU_SIZE));
    cr_assert(sc_owns(p));
    free(p);
  }
  void *p = hu_opaque(malloc(HU_SIZE));
  free(p);
  void *q = hu_opaque(malloc(HU_SIZE));
  cr_assert_eq(p, q, "LIFO reuse hands the same block back");
  free(q);
}

/* A block freed by another thread, drained and handed out again, may be
 * freed again (its key is cleared on hand-out). */
Test(harden_ok, remote_free_then_reuse) {
  void *p = hu_opaque(malloc(HU_SIZE));
  cr_assert_eq(hu_free_on_thread(&in_process, &p, 1, false), 0);
  bool again = false;
  void *kept[4096];
  int n = 0;
  for (long i = 0; i < (1L << 22) && !again; i++) {
    void *r = hu_opaque(malloc(HU_SIZE));
    if (r == p)
      again = true;
    else if (n < 4096)
      kept[n++] = r;
  }
  cr_assert(again, "the remotely freed block came back");
  free(p); /* legitimate: must not abort */
  for (int i = 0; i < n; i++) free(kept[i]);
}

/* The key is tied to the block's address: a copy of a free block's bytes in
 * another, live block does not make that block look free. */
Test(harden_ok, copied_key_is_not_a_key) {
  uint8_t *a = hu_opaque(malloc(HU_SIZE));
  uint8_t *b = hu_opaque(malloc(HU_SIZE));
  uint8_t *alias = hu_opaque(a);
  free(a);
  uint8_t image[HU_SIZE];
  memcpy(image, hu_opaque(alias), sizeof(image)); /* what a stale read sees */
  memcpy(b, image, sizeof(image));
  free(b); /* must not abort */
  void *c = hu_opaque(malloc(HU_SIZE));
  void *d = hu_opaque(malloc(HU_SIZE));
  cr_assert((c == a && d == b) || (c == b && d == a), "both blocks are reusable");
  free(c);
  free(d);
}

/* Blocks of every class go round many times through free, realloc and
 * cross-thread free without a false alarm. */
Test(harden_ok, every_class_round_trips) {
  for (size_t n = 1; n <= 1024; n = n * 2 + 1) {
    void *ptrs[256];
    for (int i = 0; i < 256; i++) ptrs[i] = hu_opaque(malloc(n));
    for (int i = 0; i < 256; i += 2) free(ptrs[i]);
    for (int i = 0; i < 256; i += 2) ptrs[i] = hu_opaque(realloc(malloc(n), n));
    for (int i = 1; i < 256; i += 4)
      cr_assert_eq(hu_free_on_thread(&in_process, &ptrs[i], 1, false), 0);
    for (int i = 0; i < 256; i++)
      if (i % 4 != 1) free(ptrs[i]);
  }
}
