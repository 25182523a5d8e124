/* SPDX-License-Identifier: MIT */
/* tiers.h — the paths of the tiers that see every malloc and every free
 * (exact statistics, with or without tags), written once in the core as
 * inline templates; a tier supplies only its accounting, an inline
 * function the template calls with a constant pointer, so that each
 * instantiation compiles to the same straight code as a hand-written path
 * (make bench-instr: the exact and tagged tiers).
 *
 * The fast paths (alloc.h) reach a tier through its two targets,
 * sc__alloc_noted_fn and sc__free_other_fn (tiers.c), which the features'
 * decision points at its instantiations (features/seam.c). */
#ifndef SC_TIERS_H
#define SC_TIERS_H

#include "core/alloc.h"
#include "core/size_class.h"

#pragma GCC visibility push(hidden)

/** A tier's accounting of block b, handed out by its page's owner for a
 * request of n bytes (granule g, class c); e is the block's wide map entry
 * (its state byte first, the request's slot beside it). Returns b (or
 * tail-calls something that does). */
typedef void *(*sc_tier_alloc_account_t)(const sc_page_t *page, void *b, uint8_t *e, size_t g,
                                         unsigned c, size_t n);
/** A tier's accounting of a free by the owner a of the block whose wide
 * map entry is e (class c), before the block goes back on its list. */
typedef void (*sc_tier_free_account_t)(sc_arena_t *a, const uint8_t *e, unsigned c);
/** Where a tier's malloc goes when the current page has no block (or the
 * thread no arena): its refill; `due`, the samples due (0: none). */
typedef void *(*sc_tier_refill_t)(size_t n, size_t g, sc_page_t *page, uint32_t due);

/** malloc of n bytes (granule g) on a tier, from the thread's current page
 * of g: the block is taken as the fast path takes it, its request goes
 * beside its state in a wide entry (not counted in the page's allocs: the
 * tier's histogram counts it), then the tier accounts it. */
static sc_always_inline void *sc__tier_malloc(size_t n, size_t g, sc_page_t *page,
                                              sc_tier_alloc_account_t account,
                                              sc_tier_refill_t refill) {
  uint8_t *map = page->map;
  size_t i;
  sc_block_t *b = sc__page_take_wide_uncounted(page, &i);
  if (sc_unlikely(b == NULL)) return refill(n, g, page, 0);
  return account(page, b, map + (i << SC_MAP_WIDE_SHIFT), g, page->class_idx, n);
}

/** free of a class block on a tier: every free whose page's owner is not
 * the thread's `self` comes here, every local one among them (self is the
 * thread's arena + 1, or SC_NOT_AN_ARENA without one: less one, never a
 * page's owner either). The owner's free is accounted, then the block goes
 * back on its page's list (sc__page_free_entry, with the wide map entry
 * read once); any other goes to sc__free_other. */
static sc_always_inline void sc__tier_free(void *p, sc_page_t *page, sc_arena_t *self,
                                           sc_tier_free_account_t account) {
  sc_arena_t *a = (sc_arena_t *)((uintptr_t)self - 1);
  if (sc_likely(page->arena == a)) {
    /* The block's wide map entry: its state, and its request beside it. */
    uint8_t *e = page->map + (sc__map_index((uintptr_t)p, page->shift) << SC_MAP_WIDE_SHIFT);
    account(a, e, page->class_idx);
    sc__page_free_entry(page, p, e);
    return;
  }
  sc__free_other(p, page);
}

/** The alignment a request of n bytes served from the class of granule g
 * needs: 0 (malloc's) when that is n's own class, else the class size (an
 * aligned request: at least its alignment). */
static inline size_t sc__tier_align_of(size_t n, size_t g) {
  unsigned c = sc__class_of_granule[g];
  return sc__class_of(n) == c ? 0 : sc__class_size(c);
}

/* ---- the general and sampled paths (tiers.c) --------------------------------
 * Written once in the core; the features' work comes through their table
 * (hooks.h: block events and samples). */

/** The general path's malloc target: any mix of features that includes
 * one that sees every malloc (the checking mode, the steady-state check). */
void *sc__tier_general_malloc(size_t n, size_t g, sc_page_t *page);
/** A malloc of n bytes (class c) by arena a's thread on the general path
 * that the countdown did not send (the thread's first, a refill). */
void *sc__tier_alloc_seen(sc_arena_t *a, size_t n, unsigned c);
/** A free by its owner a of block p of page while a feature that sees
 * every free is on, other than the exact tier's own path. */
void sc__tier_free_local(sc_arena_t *a, sc_page_t *page, void *p);
/** The sampled features' malloc target (no feature sees every malloc):
 * reached only when the countdown runs out. */
void *sc__tier_sampled_malloc(size_t n, size_t g, sc_page_t *page);
/** aligned_alloc & co. of n bytes served from class c (align <= its size)
 * while a feature that sees every malloc, or guard pages, is on. */
void *sc__tier_alloc_aligned(size_t n, unsigned c, size_t align);

/** The malloc target while no feature is on: the slow path, the thread's
 * countdown started again. */
void *sc__alloc_plain(size_t n, size_t g, sc_page_t *page);

/** Point the fast paths' two targets at a tier's malloc and free (the free
 * first: a block the new malloc makes is freed by it), in the hooks' page
 * (hooks.h): any time, any thread, never from a signal handler. */
void sc__tiers_install(void *(*malloc_fn)(size_t n, size_t g, sc_page_t *page),
                       void (*free_fn)(void *p, sc_page_t *page, sc_arena_t *self));

#pragma GCC visibility pop

#endif /* SC_TIERS_H */
