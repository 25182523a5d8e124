/* SPDX-License-Identifier: MIT */
/* tiers.c — the fast paths' two targets (hooks.h) and how a tier is
 * installed on them (tiers.h). */
#include "core/tiers.h"

#include "core/hooks.h"

/** Nothing is on, yet the countdown ran out (after 2^63 mallocs): start it
 * again. */
static void *alloc_plain(size_t n, size_t g, sc_page_t *page) {
  (void)page;
  sc__thread.sample_left = INT64_MAX;
  return sc__arena_alloc_slow(n, g);
}

/* Where the fast paths go for the features while none is on; the features'
 * decision points them at its own paths. */
void *(*sc__alloc_noted_fn)(size_t n, size_t g, sc_page_t *page) = alloc_plain;
void (*sc__free_other_fn)(void *p, sc_page_t *page, sc_arena_t *self) = sc__free_other_any;

void sc__tiers_install(void *(*malloc_fn)(size_t n, size_t g, sc_page_t *page),
                       void (*free_fn)(void *p, sc_page_t *page, sc_arena_t *self)) {
  __atomic_store_n(&sc__free_other_fn, free_fn != NULL ? free_fn : sc__free_other_any,
                   __ATOMIC_RELEASE);
  __atomic_store_n(&sc__alloc_noted_fn, malloc_fn != NULL ? malloc_fn : alloc_plain,
                   __ATOMIC_RELEASE);
}
