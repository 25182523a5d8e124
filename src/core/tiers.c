/* SPDX-License-Identifier: MIT */
/* tiers.c — the fast paths' two targets (hooks.h) and how a tier is
 * installed on them (tiers.h). */
#include "core/tiers.h"

#include "core/hooks.h"

/** Nothing is on, yet the countdown ran out (after 2^63 mallocs): start it
 * again. The default malloc target (hooks.c). */
void *sc__alloc_plain(size_t n, size_t g, sc_page_t *page) {
  (void)page;
  sc__thread.sample_left = INT64_MAX;
  return sc__arena_alloc_slow(n, g);
}

/* The targets live in the hooks' page (hooks.h), read-only once sc__init
 * has decided the features: each install makes it writable for its two
 * stores. */
void sc__tiers_install(void *(*malloc_fn)(size_t n, size_t g, sc_page_t *page),
                       void (*free_fn)(void *p, sc_page_t *page, sc_arena_t *self)) {
  sc__hooks_write_begin();
  __atomic_store_n(&sc__free_other_fn, free_fn != NULL ? free_fn : sc__free_other_any,
                   __ATOMIC_RELEASE);
  __atomic_store_n(&sc__alloc_noted_fn, malloc_fn != NULL ? malloc_fn : sc__alloc_plain,
                   __ATOMIC_RELEASE);
  sc__hooks_write_end();
}

/* ---- the general path: any mix of features, every malloc seen -------------- */

/** A block of class c for arena a when its current page has none;
 * `fresh` says whether it is a fresh carve (the steady-state check). */
static sc_cold void *general_refill(sc_arena_t *a, size_t n, unsigned c, bool *fresh) {
  /* Was the block a fresh carve? The refill takes it from the queue's next
   * page (compare its high-water mark), from a page it just (re)initialised
   * (its first block: fresh), or from a page that was full or idle (its
   * blocks come back, none is fresh). */
  sc_page_t *next = a->current[c] != &sc__empty_page ? a->current[c]->next : NULL;
  uint32_t next_mark = next != NULL ? next->shared_carved : 0;
  sc_block_t *b = sc__arena_refill(a, c); /* calls before_take on the way */
  if (sc_unlikely(b == NULL)) {
    *fresh = false;                     /* the system's block: no carve */
    return sc__alloc_from_system(n, c); /* the OS refused a segment */
  }
  sc_page_t *page = a->current[c]; /* refill took b from the current page */
  sc__ops.block.on_alloc(a, page, b, c, n);
  *fresh = page->allocs == 1;
  if (page == next) *fresh = page->shared_carved != next_mark;
  return b;
}

/** An allocation of n bytes of class c aligned to `align` (0: malloc's) by
 * arena a's thread while a feature that sees every malloc is on. */
static void *general_alloc(sc_arena_t *a, size_t n, unsigned c, size_t align) {
  uint32_t due = sc__ops.sample.tick();
  if (sc_unlikely(due != 0)) {
    void *g = sc__ops.sample.serve(due, c, n, align);
    if (g != NULL) return g;
  }
  sc_page_t *page = a->current[c];
  sc_block_t *b;
  bool fresh;
  if (sc_unlikely(align > ((size_t)1 << SC_COLOUR_SHIFT))) { /* a page of colour 0 */
    b = sc__arena_take_aligned(a, c, align, &page, &fresh);
    if (b == NULL) return sc__alloc_from_system(n, c); /* aligned to the class size */
    sc__ops.block.on_alloc(a, page, b, c, n);
    goto taken;
  }
  sc__ops.block.before_take(page);
  uint32_t mark = page->shared_carved; /* raised by a fresh carve */
  b = sc__page_take_any(page);
  if (sc_likely(b != NULL)) {
    sc__ops.block.on_alloc(a, page, b, c, n);
    fresh = page->shared_carved != mark;
  } else {
    b = general_refill(a, n, c, &fresh);
    if (b == NULL) return NULL;
  }
taken:
  if (sc_unlikely(due != 0) && sc__segment_owned((uintptr_t)b))
    sc__ops.sample.taken(due, sc__page_of(sc__segment_of((uintptr_t)b), (uintptr_t)b), b, c, n);
  if (fresh) sc__ops.block.on_fresh(c);
  return b;
}

void *sc__tier_alloc_seen(sc_arena_t *a, size_t n, unsigned c) {
  sc__ops.block.before_alloc();
  return general_alloc(a, n, c, 0);
}

void *sc__tier_general_malloc(size_t n, size_t g, sc_page_t *page) {
  (void)page;
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) return general_alloc(a, n, sc__class_of_granule[g], 0);
  sc__thread.sample_left = INT64_MAX; /* no arena: the slow path binds one */
  return sc__arena_alloc_slow(n, g);
}

void sc__tier_free_local(sc_arena_t *a, sc_page_t *page, void *p) {
  if (sc__ops.block.keep_freed(p, page, true)) return; /* quarantined */
  sc__ops.block.on_free_local(a, page, p);
  sc__page_free(page, p);
}

/* ---- sampled features alone ------------------------------------------------- */

/** The samples `due` for a request of n bytes aligned to `align` (0:
 * malloc's), served from the class of granule g of arena a (page: the
 * thread's current page of g). */
static void *sampled_serve(sc_arena_t *a, uint32_t due, size_t n, size_t g, size_t align,
                           sc_page_t *page) {
  unsigned c = sc__class_of_granule[g];
  if (due != 0) {
    void *own = sc__ops.sample.serve(due, c, n, align);
    if (own != NULL) return own;
  }
  sc_block_t *b;
  if (sc_unlikely(align > ((size_t)1 << SC_COLOUR_SHIFT))) { /* a page of colour 0 */
    bool fresh;
    b = sc__arena_take_aligned(a, c, align, &page, &fresh);
    if (b == NULL) return sc__alloc_from_system(n, c);
  } else if ((b = sc__page_take_any(page)) == NULL) {
    b = sc__arena_refill(a, c);
    if (b == NULL) return sc__arena_alloc_slow(n, g); /* it asks the system */
    page = a->current[c];
  }
  if (due != 0) sc__ops.sample.taken(due, page, b, c, n);
  return b;
}

void *sc__tier_sampled_malloc(size_t n, size_t g, sc_page_t *page) {
  sc_thread_t *t = &sc__thread;
  sc_arena_t *a = t->arena;
  if (sc_unlikely(a == NULL)) {
    t->sample_left = INT64_MAX; /* no arena: the slow path binds one */
    return sc__arena_alloc_slow(n, g);
  }
  uint32_t due = sc__ops.sample.fire(&t->sample_left);
  return sampled_serve(a, due, n, g, sc__tier_align_of(n, g), page);
}

void *sc__tier_alloc_aligned(size_t n, unsigned c, size_t align) {
  size_t g = sc__bucket_of(sc__class_size(c));
  sc_arena_t *a = sc__arena_get();
  if (sc_unlikely(a == NULL)) return sc__arena_alloc_slow(n, g);
  sc__ops.block.before_alloc();
  if ((sc__features & SC_FEATURES_EVERY_MALLOC) != 0) return general_alloc(a, n, c, align);
  /* Sampled features alone (guard pages need the alignment): counted down
   * like any malloc. */
  sc_thread_t *t = &sc__thread;
  uint32_t due = 0;
  if (sc__countdown(&t->sample_left)) due = sc__ops.sample.fire(&t->sample_left);
  return sampled_serve(a, due, n, g, align, t->current[g]);
}
