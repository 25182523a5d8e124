/* SPDX-License-Identifier: MIT */
/* exact.h — exact per-request statistics (docs/stats.md, "exact tier"):
 * requested bytes live, total and at peak, the request-size histogram, and
 * the requested size of every block, per arena and class. Kept only while
 * SC_FEATURE_EXACT is on. A steady-state malloc and free do their part on
 * the exact tier's own fast paths (seam.c: a handful of adds on counters
 * of the thread's arena, and the block's requested-size slot beside its
 * map byte); the remote, drain and system paths do theirs through the
 * features' table (core/hooks.h, seam.c). */
#ifndef SC_EXACT_H
#define SC_EXACT_H

#include "core/internal.h"
#include "core/hooks.h"
#include "core/size_class.h"

#pragma GCC visibility push(hidden)
/** A new peak for the class of page in its owner's arena (the headroom
 * went below zero); returns b, so that an allocation can end with it as a
 * tail call (n and g, the request and its granule, are unused: they keep
 * the caller's registers where its arguments came in). */
__attribute__((returns_nonnull)) void *sc__exact_new_peak(size_t n, size_t g, const sc_page_t *page,
                                                          void *b);
/** Add arena a's figures of every class into sums (a snapshot). */
void sc__exact_sum(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]);
#pragma GCC visibility pop

/** True when exact statistics are on (decided once, at startup). */
static inline bool sc__exact_on(void) { return (sc__features & SC_FEATURE_EXACT) != 0; }

/** The requested-size slot of the block whose wide map entry is at e
 * (config.h: bytes 2 and 3 of the entry). */
static inline uint16_t *sc__req_slot_at(uint8_t *e) { return (uint16_t *)(e + 2); }
/** The requested-size slot of block p of page, as its owner reads it. */
static inline uint16_t *sc__req_slot_local(const sc_page_t *page, uintptr_t p) {
  return sc__req_slot_at(page->map + (sc__map_index(p, page->shift) << SC_MAP_WIDE_SHIFT));
}
/** The same, for any thread (the shared line). */
static inline uint16_t *sc__req_slot(const sc_page_t *page, uintptr_t p) {
  return sc__req_slot_at(page->shared_map +
                         (sc__map_index(p, page->shared_shift) << SC_MAP_WIDE_SHIFT));
}

/** Account block b of page (class c, owner a), handed out for a request
 * of n bytes, in histogram cell *hist; its requested-size slot is `slot`.
 * Returns b. */
static inline void *sc__exact_alloc_in(sc_arena_t *a, const sc_page_t *page, void *b,
                                       uint16_t *slot, uint64_t *hist, unsigned c, size_t n) {
  sc_exact_t *x = &a->exact;
  ++*hist;
  x->req_total[c] += n;
  *slot = (uint16_t)n;
  if (sc_unlikely(--x->headroom[c] < 0)) return sc__exact_new_peak(n, 0, page, b);
  return b;
}

/** The same for a request of granule g = sc__bucket_of(n) served from its
 * own class c (every malloc); the block is at index i of the page's map
 * `map` (read before its state byte was written: a byte store may alias
 * anything, and the map would be read again). */
static inline void *sc__exact_alloc(sc_arena_t *a, const sc_page_t *page, void *b, uint8_t *map,
                                    size_t i, size_t g, unsigned c, size_t n) {
  uint16_t *slot = sc__req_slot_at(map + (i << SC_MAP_WIDE_SHIFT));
  return sc__exact_alloc_in(a, page, b, slot, &a->exact.hist[g], c, n);
}

/** The same for any request served from class c: an aligned one may be
 * served from a larger class than its size's (its histogram cell is then
 * its class's own). */
static inline void sc__exact_alloc_any(sc_arena_t *a, const sc_page_t *page, void *b, unsigned c,
                                       size_t n) {
  size_t g = sc__bucket_of(n);
  uint64_t *hist = sc__class_of_granule[g] == c ? &a->exact.hist[g] : &a->exact.hist_aligned[c][g];
  sc__exact_alloc_in(a, page, b, sc__req_slot_local(page, (uintptr_t)b), hist, c, n);
}

/** Account a free by its owner a of block p of page. */
static inline void sc__exact_free(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  sc_exact_t *x = &a->exact;
  unsigned c = page->class_idx;
  x->headroom[c]++;
  x->req_freed[c] += *sc__req_slot_local(page, p);
}

/** Account a free by arena me of block p of another arena's page (the
 * free itself is counted in me->counts[c].remote_frees). */
static inline void sc__exact_remote_free(sc_arena_t *me, const sc_page_t *page, uintptr_t p) {
  me->exact.req_remote[page->shared_class] += *sc__req_slot(page, p);
}

/** Account block p of a's page, freed by another thread, drained back
 * (counted in a->counts[c].drained). */
static inline void sc__exact_drained(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  unsigned c = page->shared_class;
  a->exact.headroom[c]++;
  a->exact.req_drained[c] += *sc__req_slot(page, p);
}

/** A block keeps its place under realloc: move its requested size to n in
 * the statistics of the calling thread's arena a (sums over arenas stay
 * exact). */
static inline void sc__exact_resize(sc_arena_t *a, uintptr_t p, size_t n) {
  const sc_page_t *page = sc__page_of(sc__segment_of(p), p);
  uint16_t *req = sc__req_slot(page, p);
  a->exact.req_freed[page->shared_class] += *req - (uint64_t)n; /* wraps: live moves by n - req */
  *req = (uint16_t)n;
}

/* ---- the system allocator: process-wide live and peak bytes ---------------------- */

/* Kept exactly while one thread runs; with more, each thread adds its
 * share once it moved by SC_SYS_LIVE_SLACK bytes (so the peak may miss up
 * to that much per thread: docs/stats.md). */

/** A thread's share of the live bytes reaches the shared counter once it
 * moved this far (or at once while it is the only thread). */
#define SC_SYS_LIVE_SLACK ((int64_t)256 << 10)

/** Add `delta` (two's complement for a decrease) to the live bytes and
 * raise the peak if the sum passed it. */
static inline void sc__exact_add_live_bytes(uint64_t delta) {
  sc_fallback_shared_t *s = &sc__fallback_shared;
  uint64_t live = atomic_fetch_add_explicit(&s->live_bytes, delta, memory_order_relaxed) + delta;
  uint64_t peak = atomic_load_explicit(&s->peak_live_bytes, memory_order_relaxed);
  while (live > peak && live < (UINT64_MAX >> 1) &&
         !atomic_compare_exchange_weak_explicit(&s->peak_live_bytes, &peak, live,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

/** The system allocator's live bytes moved by delta on a thread of arena a
 * (NULL: one without): the process-wide live and peak bytes. */
static inline void sc__exact_sys_live(sc_arena_t *a, int64_t delta) {
  if (a == NULL) {
    sc__exact_add_live_bytes((uint64_t)delta);
    return;
  }
  int64_t d = a->sys_live_delta + delta;
  uint64_t created, live, adopted;
  if (d >= SC_SYS_LIVE_SLACK || d <= -SC_SYS_LIVE_SLACK) {
    a->sys_live_delta = 0;
    sc__exact_add_live_bytes((uint64_t)d);
    return;
  }
  sc__arena_counts_unlocked(&created, &live, &adopted);
  if (live <= 1) { /* alone: exact */
    a->sys_live_delta = 0;
    sc__exact_add_live_bytes((uint64_t)d);
    return;
  }
  a->sys_live_delta = d;
}

#endif /* SC_EXACT_H */
