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
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>

#include "harden_util.h"
#include "core/internal.h"
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
DEATH_TEST(invalid_interior_line)
DEATH_TEST(invalid_interior_line_thread)
DEATH_TEST(interior_line_usable)
DEATH_TEST(interior_line_realloc)
DEATH_TEST(invalid_colour_gap)
DEATH_TEST(invalid_unused_page)
DEATH_TEST(invalid_metadata)
DEATH_TEST(corrupt_list)
DEATH_TEST(corrupt_remote)
DEATH_TEST(forged_link_live)
DEATH_TEST(forged_link_misaligned)
DEATH_TEST(fake_stack_free)
DEATH_TEST(fake_stack_realloc)
DEATH_TEST(fake_stack_usable)
DEATH_TEST(fake_global_free)
DEATH_TEST(fake_global_realloc)
DEATH_TEST(double_free_large)
DEATH_TEST(interior_large_free)
DEATH_TEST(interior_large_usable)
DEATH_TEST(misaligned_large_free)
DEATH_TEST(misaligned_large_realloc)
DEATH_TEST(interior_usable)
DEATH_TEST(uncarved_usable)

/* ---- white box: the checks themselves, with the real keys ---------------- */

/** The page and map entry of class block p (this process's library). */
static sc_page_t *wb_page(void *p) {
  uintptr_t u = (uintptr_t)p;
  return sc__page_of(sc__segment_of(u), u);
}
static uint8_t *wb_entry(void *p) {
  sc_page_t *page = wb_page(p);
  return sc__map_entry(page->map, (uintptr_t)p, page->shift);
}

/** Free a then b, then make b's link lead to target, encoded with the
 * page's real key (what an attacker who knew every secret would write),
 * and malloc twice: the second would hand out target. */
static void wb_forge(uintptr_t target_of(void *a, void *v)) {
  void *a, *b, *v;
  cr_assert_eq(hu_three_in_page(&in_process, &a, &b, &v), 0);
  free(hu_opaque(a));
  free(hu_opaque(b));
  uintptr_t target = target_of(a, v);
  ((sc_block_t *)hu_opaque(b))->next = sc__encode((sc_block_t *)target, b, wb_page(b));
  /* The target's own link leads back into the page. */
  ((sc_block_t *)target)->next = sc__encode((sc_block_t *)a, (void *)target, wb_page(b));
  hu_opaque(malloc(HU_SIZE));
  void *second = hu_opaque(malloc(HU_SIZE));
  cr_assert_fail("malloc handed out %p (target %p) without aborting", second, (void *)target);
}
static uintptr_t wb_live(void *a, void *v) { return (void)a, (uintptr_t)v; }
static uintptr_t wb_misaligned(void *a, void *v) { return (void)v, (uintptr_t)a + 8; }

/* A correctly encoded link to a live block: the pop's map check stops it. */
Test(harden_abort, keyed_link_to_live_block, .signal = SIGABRT, .init = cr_redirect_stderr) {
  wb_forge(wb_live);
}

/* A correctly encoded link to a misaligned address: the block-start check
 * stops it. */
Test(harden_abort, keyed_link_misaligned, .signal = SIGABRT, .init = cr_redirect_stderr) {
  wb_forge(wb_misaligned);
}

/* A correctly encoded link to the second line of a free 256 B block: the
 * address passes the start mask (a page of blocks above 64 B has a map
 * entry per 64 B), and the pop's map check stops it on the INTERIOR
 * entry. */
Test(harden_abort, keyed_link_to_interior_line, .signal = SIGABRT, .init = cr_redirect_stderr) {
  void *blocks[3];
  blocks[0] = hu_opaque(malloc(HU_LINES_SIZE));
  for (int i = 0; i < 1000; i++) {
    blocks[1] = hu_opaque(malloc(HU_LINES_SIZE));
    blocks[2] = hu_opaque(malloc(HU_LINES_SIZE));
    if (hu_page_base(blocks[0]) == hu_page_base(blocks[1]) &&
        hu_page_base(blocks[1]) == hu_page_base(blocks[2]))
      break;
    blocks[0] = blocks[2];
  }
  cr_assert_eq(hu_page_base(blocks[0]), hu_page_base(blocks[2]), "no three blocks in one page");
  uint8_t *a = blocks[0], *b = blocks[1];
  free(hu_opaque(a));
  free(hu_opaque(b));
  uintptr_t target = (uintptr_t)a + 64;
  ((sc_block_t *)hu_opaque(b))->next = sc__encode((sc_block_t *)target, b, wb_page(b));
  ((sc_block_t *)target)->next = sc__encode((sc_block_t *)a, (void *)target, wb_page(b));
  hu_opaque(malloc(HU_LINES_SIZE));
  void *second = hu_opaque(malloc(HU_LINES_SIZE));
  cr_assert_fail("malloc handed out %p (target %p) without aborting", second, (void *)target);
}

/* The other thread of racing_double_free_interleaved: it frees p (a
 * remote free, held in its batch), waits, and exits (its batch then
 * reaches the owner's remote list). */
static sem_t wb_freed, wb_exit;
static void *wb_free_main(void *p) {
  free(hu_opaque(malloc(HU_SIZE))); /* an arena of its own */
  free(p);
  sem_post(&wb_freed);
  sem_wait(&wb_exit);
  return NULL;
}

/* The interleaving a racing cross-thread double free can produce, made
 * step by step: the owner's free reads the block's map entry (LIVE), the
 * other thread's free then succeeds, and the owner's write (FREE) lands
 * last. The owner hands the block out again (it heads its free list), and
 * the other thread's free reaches the owner's remote list: the owner's
 * drain must notice before it hands the block out a second time. */
Test(harden_abort, racing_double_free_interleaved, .signal = SIGABRT, .init = cr_redirect_stderr) {
  sem_init(&wb_freed, 0, 0);
  sem_init(&wb_exit, 0, 0);
  void *p = hu_opaque(malloc(HU_SIZE));
  free(hu_opaque(p)); /* the owner's free, whose writes ... */
  uintptr_t link = ((uintptr_t *)p)[0];
  *wb_entry(p) = SC_MAP_LIVE; /* ... have not landed yet */
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, wb_free_main, p), 0);
  sem_wait(&wb_freed);
  *wb_entry(p) = SC_MAP_FREE; /* now they do: its map entry, its link */
  ((uintptr_t *)p)[0] = link;
  void *again = hu_opaque(malloc(HU_SIZE));
  cr_assert_eq(again, p, "the block heads its free list");
  ((uintptr_t *)again)[1] = (uintptr_t)again;
  sem_post(&wb_exit);
  pthread_join(t, NULL);
  static uintptr_t *blocks[16384];
  for (int i = 0; i < 16384; i++) {
    blocks[i] = hu_opaque(malloc(HU_SIZE));
    blocks[i][1] = (uintptr_t)blocks[i];
  }
  cr_assert_eq(((uintptr_t *)again)[1], (uintptr_t)again, "block %p handed out twice", again);
  for (int i = 0; i < 16384; i++)
    cr_assert_eq(blocks[i][1], (uintptr_t)blocks[i], "block %p handed out twice",
                 (void *)blocks[i]);
  cr_assert_fail("the block freed twice was not caught");
}

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
    snprintf(want, sizeof(want), "sizeclass: corrupted free list in class %u B (page 0x%lx)\n",
             c->class_size, addr);
  else if (c->class_size != 0)
    snprintf(want, sizeof(want), "sizeclass: %s of 0x%lx (class %u B)\n", c->what, addr,
             c->class_size);
  else
    snprintf(want, sizeof(want), "sizeclass: %s of 0x%lx\n", c->what, addr);
  cr_assert(addr != 0, "%s: null address", name);
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
MESSAGE_TEST(invalid_interior_line)
MESSAGE_TEST(invalid_interior_line_thread)
MESSAGE_TEST(interior_line_usable)
MESSAGE_TEST(interior_line_realloc)
MESSAGE_TEST(invalid_colour_gap)
MESSAGE_TEST(invalid_unused_page)
MESSAGE_TEST(invalid_metadata)
MESSAGE_TEST(corrupt_list)
MESSAGE_TEST(corrupt_remote)
MESSAGE_TEST(forged_link_live)
MESSAGE_TEST(forged_link_misaligned)
MESSAGE_TEST(fake_stack_free)
MESSAGE_TEST(fake_stack_realloc)
MESSAGE_TEST(fake_stack_usable)
MESSAGE_TEST(fake_global_free)
MESSAGE_TEST(fake_global_realloc)
MESSAGE_TEST(double_free_large)
MESSAGE_TEST(interior_large_free)
MESSAGE_TEST(interior_large_usable)
MESSAGE_TEST(misaligned_large_free)
MESSAGE_TEST(misaligned_large_realloc)
MESSAGE_TEST(interior_usable)
MESSAGE_TEST(uncarved_usable)

/* Two threads free one block at the same moment, 400 times, each attempt
 * in a child process: every attempt ends in an abort with the double-free
 * (or corrupted-list) message, or in one free winning cleanly; no block is
 * ever handed out twice (harden_race checks the stamps of the class's next
 * 4096 blocks). */
Test(harden_race, racing_double_free_never_hands_out_twice, .timeout = 600) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "harden_race");
  char *argv[] = {prog, "400", NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 500};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
            "wait status %#x; stdout: %s; stderr: %s", (unsigned)r.status, r.out, r.err);
  long attempts = 0, aborted = 0, clean = 0, failed = -1;
  cr_assert_eq(sscanf(r.out, "attempts %ld aborted %ld clean %ld failed %ld", &attempts, &aborted,
                      &clean, &failed),
               4, "%s", r.out);
  cr_assert(attempts == 400 && failed == 0 && aborted + clean == attempts, "%s", r.out);
  free(r.out);
}

/* The system route refuses pointers it did not hand out, but blocks glibc
 * made before the library took over are freed, resized and measured as
 * before (tests/progs/sys_before_takeover: made from .preinit_array). */
Test(harden_ok, glibc_blocks_from_before_the_takeover) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "sys_before_takeover");
  char *argv[] = {prog, NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 60};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && strcmp(r.out, "ok\n") == 0,
            "wait status %#x; stdout: %s; stderr: %s", (unsigned)r.status, r.out, r.err);
  free(r.out);
}

/** Run harden_order with SIZECLASS_HARDEN=value (NULL: unset): the blocks
 * of its 3999 consecutive pairs that lie in address order. */
static unsigned order_run(const char *value, char *err, size_t err_len) {
  char prog[4096];
  pr_prog_path(prog, sizeof(prog), "harden_order");
  char *argv[] = {prog, NULL};
  char setting[64];
  snprintf(setting, sizeof(setting), "SIZECLASS_HARDEN=%s", value != NULL ? value : "");
  const char *env[] = {setting, NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 60, .drop_sizeclass_env = true, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_assert_exit(&r, 0);
  unsigned in_order = 0, distinct = 0;
  cr_assert_eq(sscanf(r.out, "%u %u", &in_order, &distinct), 2, "%s", r.out);
  cr_assert_eq(distinct, 4000, "every block distinct: %s", r.out);
  snprintf(err, err_len, "%s", r.err);
  free(r.out);
  return in_order;
}

/* SIZECLASS_HARDEN=random: consecutive blocks are not address neighbours
 * (by default nearly all are: pages are carved in address order). */
Test(harden_ok, random_placement_is_not_address_order) {
  char err[4096];
  unsigned plain = order_run(NULL, err, sizeof(err));
  cr_assert_geq(plain, 3900, "by default blocks come in address order: %u of 3999", plain);
  unsigned random = order_run("random", err, sizeof(err));
  cr_assert_lt(random, 100, "random placement: %u of 3999 pairs in address order", random);
  cr_assert_str_empty(err);
}

/* A bad value: one warning, and placement stays in address order. */
Test(harden_ok, bad_harden_value_keeps_address_order) {
  char err[4096];
  unsigned n = order_run("randm", err, sizeof(err));
  cr_assert_geq(n, 3900, "a bad value switched random placement on: %u of 3999", n);
  cr_assert_str_eq(err,
                   "sizeclass: SIZECLASS_HARDEN=\"randm\": expected off or random; blocks stay in "
                   "address order\n");
}

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
