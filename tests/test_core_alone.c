/* SPDX-License-Identifier: MIT */
/* test_core_alone.c — the core links and runs alone: this suite links
 * build/core/libsizeclass-core.a (src/util and src/core, no feature, report,
 * API or shim object: make core-alone) and calls the core's entry points
 * (sc_malloc & co.) with the core's own feature table, its no-ops
 * (core/hooks.h). Criterion itself runs on the C library's malloc here:
 * the archive defines no malloc. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "sizeclass.h"

TestSuite(core_alone);

Test(core_alone, malloc_free_and_usable_size) {
  static const size_t sizes[] = {1, 16, 17, 100, 512, 1000, 1024};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    unsigned char *p = sc_malloc(n);
    cr_assert_not_null(p, "sc_malloc(%zu)", n);
    cr_expect(sc_owns(p), "a %zu B block comes from the segments", n);
    cr_expect_eq(sc_usable_size(p), sc_class_size(n), "usable size of %zu B", n);
    memset(p, 0xab, n);
    sc_free(p);
  }
  /* Above the classes: the system allocator's block, not ours. */
  void *big = sc_malloc(100000);
  cr_assert_not_null(big);
  cr_expect(!sc_owns(big));
  cr_expect_geq(sc_usable_size(big), 100000);
  sc_free(big);
}

Test(core_alone, calloc_zeroes_and_realloc_keeps_the_bytes) {
  unsigned char *z = sc_calloc(40, 10);
  cr_assert_not_null(z);
  for (size_t i = 0; i < 400; i++) cr_assert_eq(z[i], 0, "byte %zu", i);
  sc_free(z);
  unsigned char *p = sc_malloc(24);
  cr_assert_not_null(p);
  for (int i = 0; i < 24; i++) p[i] = (unsigned char)i;
  /* Same class: the block stays; larger: it moves with its bytes; beyond
   * the classes: the system's block, with them too. */
  cr_expect_eq(sc_realloc(p, 30), p);
  static const size_t grow[] = {200, 1000, 5000};
  for (size_t k = 0; k < 3; k++) {
    p = sc_realloc(p, grow[k]);
    cr_assert_not_null(p);
    for (int i = 0; i < 24; i++)
      cr_assert_eq(p[i], (unsigned char)i, "byte %d at %zu B", i, grow[k]);
  }
  sc_free(p);
}

Test(core_alone, aligned_blocks) {
  static const size_t aligns[] = {16, 64, 256, 1024, 4096};
  for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
    void *p = NULL;
    cr_assert_eq(sc_posix_memalign(&p, aligns[i], 40), 0, "align %zu", aligns[i]);
    cr_expect_eq((uintptr_t)p % aligns[i], 0, "aligned to %zu", aligns[i]);
    cr_expect_geq(sc_usable_size(p), 40);
    sc_free(p);
  }
  void *p = NULL;
  cr_expect_eq(sc_posix_memalign(&p, 24, 40), EINVAL, "not a power of two");
}

#define N_BLOCKS 1024

static void *blocks[N_BLOCKS];

static void *free_them(void *arg) {
  (void)arg;
  for (int i = 0; i < N_BLOCKS; i++) sc_free(blocks[i]);
  return NULL;
}

/** Blocks freed by another thread go back to their owner: counted as
 * cross-thread frees, and handed out again. */
Test(core_alone, cross_thread_frees_come_back) {
  struct sc_stats before, after;
  sc_stats_get(&before);
  for (int i = 0; i < N_BLOCKS; i++) {
    blocks[i] = sc_malloc(64);
    cr_assert_not_null(blocks[i]);
  }
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, free_them, NULL), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  sc_stats_get(&after);
  unsigned c64 = 2; /* 16, 32, 64 */
  cr_assert_eq(after.classes[c64].size, 64);
  cr_expect_geq(after.classes[c64].remote_frees - before.classes[c64].remote_frees, N_BLOCKS);
  /* The owner drains them when its pages run dry: a freed address returns. */
  bool again = false;
  void **more = calloc(4 * N_BLOCKS, sizeof(void *));
  cr_assert_not_null(more);
  int made = 0;
  for (; made < 4 * N_BLOCKS && !again; made++) {
    more[made] = sc_malloc(64);
    for (int i = 0; i < N_BLOCKS && !again; i++) again = more[made] == blocks[i];
  }
  cr_expect(again, "no block freed by the other thread came back in %d mallocs", made);
  for (int i = 0; i < made; i++) sc_free(more[i]);
  free(more);
  /* No feature is on: the exact figures are not tracked. */
  cr_expect_eq(after.tracked & SC_TRACKED_EXACT, 0);
}

/** The core's own checks hold without the features: a double free aborts. */
Test(core_alone, double_free_aborts, .signal = SIGABRT) {
  void *p = sc_malloc(32);
  sc_free(p);
  sc_free(p);
}
