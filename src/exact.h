/* exact.h — exact per-request statistics (docs/stats.md, "exact tier"):
 * requested bytes live, total and at peak, the request-size histogram, and
 * the requested size of every block, per arena and class. Kept only while
 * SC_FEATURE_EXACT is on, from the out-of-line paths of the seam (seam.c)
 * and the remote paths (arena.c); the fast paths never see them. */
#ifndef SC_EXACT_H
#define SC_EXACT_H

#include "internal.h"
#include "size_class.h"

/** True when exact statistics are on (decided once, at startup). */
static inline bool sc__exact_on(void) { return (sc__features & SC_FEATURE_EXACT) != 0; }

/** The requested-size slot of block p of page. */
static inline uint16_t *sc__exact_req_slot(const sc_page_t *page, uintptr_t p) {
  return &page->req[(p & (SC_PAGE_SIZE - 1)) >> page->shared_shift];
}
/** The same, for the page's owner (its own line has the shift). */
static inline uint16_t *sc__exact_req_slot_local(const sc_page_t *page, uintptr_t p) {
  return &page->req[(p & (SC_PAGE_SIZE - 1)) >> page->shift];
}

/** Account block b of class c (its page: page), handed out by arena a for a
 * request of n bytes. */
static inline void sc__exact_alloc(sc_arena_t *a, const sc_page_t *page, const void *b, unsigned c,
                                   size_t n) {
  sc_class_stats_t *s = &a->exact[c];
  s->hist[sc__bucket_of(n)]++;
  s->req_total += n;
  s->req_live += n;
  *sc__exact_req_slot_local(page, (uintptr_t)b) = (uint16_t)n;
  uint64_t live = ++s->live;
  if (sc_unlikely(live > s->peak)) {
    s->peak = live;
    s->req_peak = s->req_live + s->req_remote - s->req_drained; /* owner view */
  }
}

/** Account a free by arena a (the owner) of block p of page. */
static inline void sc__exact_free(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  sc_class_stats_t *s = &a->exact[page->class_idx];
  s->frees++;
  s->live--;
  s->req_live -= *sc__exact_req_slot_local(page, p);
}

/** Account a free by arena me of block p of another arena's page. */
static inline void sc__exact_remote_free(sc_arena_t *me, const sc_page_t *page, uintptr_t p) {
  sc_class_stats_t *s = &me->exact[page->shared_class];
  uint16_t req = *sc__exact_req_slot(page, p);
  s->frees++;
  s->req_live -= req;
  s->req_remote += req;
}

/** Account block p of a's page, freed by another thread, drained back. */
static inline void sc__exact_drained(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  sc_class_stats_t *s = &a->exact[page->shared_class];
  s->live--;
  s->req_drained += *sc__exact_req_slot(page, p);
}

/** A block keeps its place under realloc: move its requested size to n in
 * the statistics of the calling thread's arena a (sums over arenas stay
 * exact). */
static inline void sc__exact_resize(sc_arena_t *a, uintptr_t p, size_t n) {
  const sc_page_t *page = sc__page_of(sc__segment_of(p), p);
  uint16_t *req = sc__exact_req_slot(page, p);
  a->exact[page->shared_class].req_live += n - *req;
  *req = (uint16_t)n;
}

#endif /* SC_EXACT_H */
