/* seam.c — the out-of-line allocation paths taken while an optional
 * feature is on (seam.h), and the decision of which are on. */
#include <errno.h>
#include <strings.h>

#include "alloc.h"
#include "exact.h"
#include "frame_check.h"
#include "options.h"
#include "seam.h"
#include "sites.h"

uint32_t sc__features;
bool sc__req_arrays;

/** True when a SIZECLASS_STATS-style value asks for something (not unset,
 * empty, 0, off, no or false). */
static bool value_on(const char *v) {
  static const char *const off[] = {"", "0", "off", "no", "false"};
  if (v == NULL) return false;
  for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
    if (strcasecmp(v, off[i]) == 0) return false;
  return true;
}

static void *seam_malloc(size_t n, unsigned c); /* below: sc__alloc_slow_fn */

/** Features are on from now on. */
static void features_set(uint32_t f) {
  sc__features = f;
  sc__req_arrays = (f & SC_FEATURE_EXACT) != 0;
  sc__meta_pages = sc__req_arrays ? SC_META_PAGES_EXACT : 1;
  if (f != 0) sc__alloc_slow_fn = seam_malloc;
}

void sc__seam_decide(void) {
  char buf[64];
  uint32_t f = sc__features; /* sc_stats_enable_exact may have run first */
  /* Exact statistics: asked for directly, or implied by a report. */
  if (value_on(sc__option("SIZECLASS_STATS_EXACT", buf, sizeof(buf))) ||
      value_on(sc__option("SIZECLASS_STATS", buf, sizeof(buf))) ||
      value_on(sc__option("SIZECLASS_STATS_SIGNAL", buf, sizeof(buf))))
    f |= SC_FEATURE_EXACT;
  f |= sc__sites_decide();       /* SIZECLASS_SITES* (sites.c) */
  f |= sc__frame_check_decide(); /* SIZECLASS_FRAME_CHECK* (frame_check.c) */
  features_set(f);
}

bool sc__seam_enable(uint32_t features) {
  uint64_t created, live, adopted;
  sc__arena_counts(&created, &live, &adopted);
  if ((sc__features & features) == features) return true;
  if (created != 0) return false;
  features_set(sc__features | features);
  return true;
}

/* ---- the hooks: each feature's work, in one place ------------------------- */

/** The features' work on block b (of page, class c) just handed out for a
 * request of n bytes, in the common case: no sample due, no check. `f`:
 * sc__features, read once by the caller (a store to the block could alias
 * it, and the compiler would read it again). */
static inline void *on_alloc(sc_arena_t *a, sc_page_t *page, sc_block_t *b, unsigned c, size_t n,
                             uint32_t f) {
  if (f & SC_FEATURE_EXACT) sc__exact_alloc(a, page, b, c, n);
  return b;
}

/** The same when the sites' countdown ran out (`sample`) or the
 * steady-state check is on: `fresh`, b was never handed out before. */
static void *on_alloc_noted(sc_arena_t *a, sc_page_t *page, sc_block_t *b, unsigned c, size_t n,
                            bool sample, bool fresh) {
  if (sc__exact_on()) sc__exact_alloc(a, page, b, c, n);
  if (sample) sc__sites_sample(b, c, n);
  if (fresh && sc__frame_check_on()) sc__frame_check_fresh(c);
  return b;
}

/** True when the free of p needs free_noted (a sampled block, maybe). */
static inline bool free_needs_note(const void *p) {
  return sc__sites_on() && sc__sites_maybe_sampled(p);
}

void sc__seam_free_remote(sc_arena_t *me, sc_page_t *page, uintptr_t p) {
  if (me != NULL && sc__exact_on()) sc__exact_remote_free(me, page, p);
  if (free_needs_note((void *)p)) sc__sites_forget((void *)p);
}

void sc__seam_sys_alloc(void *p, size_t n) {
  if (p != NULL && sc__sites_on() && sc__sites_due(n)) sc__sites_sample(p, SC_SITES_SYSTEM, n);
}

void sc__seam_sys_free(void *p) {
  if (free_needs_note(p)) sc__sites_forget(p);
}

/* ---- the paths ---------------------------------------------------------------- */

/** sc__seam_alloc when the current page has no block; `noted`: the
 * features' rare work is due (on_alloc_noted, with `sample`). */
static sc_cold void *alloc_refill(sc_arena_t *a, size_t n, unsigned c, bool noted, bool sample) {
  /* Was the block a fresh carve? The refill takes it from the queue's next
   * page (compare its high-water mark), from a page it just (re)initialised
   * (its first block: fresh), or from a page that was full or idle (its
   * blocks come back, none is fresh). */
  sc_page_t *next = a->current[c] != &sc__empty_page ? a->current[c]->next : NULL;
  uint8_t *next_mark = next != NULL ? next->fresh_end : NULL;
  sc_block_t *b = sc__arena_refill(a, c);
  if (sc_unlikely(b == NULL)) {
    b = sc__sys_memalign(sc__class_size(c), n); /* the OS refused a segment */
    if (b == NULL) errno = ENOMEM;
    return b;
  }
  sc_page_t *page = a->current[c]; /* refill took b from the current page */
  if (!noted) return on_alloc(a, page, b, c, n, sc__features);
  bool fresh = page->allocs == 1;
  if (page == next) fresh = page->fresh_end != next_mark;
  return on_alloc_noted(a, page, b, c, n, sample, fresh);
}

/** sc__seam_alloc when a sample is due (`sample`) or the steady-state
 * check is on: out of line, reached by a jump, so that the common path
 * saves no register. */
static sc_noinline void *alloc_noted(sc_arena_t *a, size_t n, unsigned c, bool sample) {
  sc_page_t *page = a->current[c];
  uint8_t *fresh_mark = page->fresh_end; /* raised by a fresh carve */
  sc_block_t *b = sc__page_take_ex(page, true);
  if (sc_unlikely(b == NULL)) return alloc_refill(a, n, c, true, sample);
  return on_alloc_noted(a, page, b, c, n, sample, page->fresh_end != fresh_mark);
}

/** sc__seam_alloc, inlined into the malloc fast path's slow target too. */
static inline __attribute__((always_inline)) void *seam_alloc(sc_arena_t *a, size_t n, unsigned c) {
  uint32_t f = sc__features;
  /* One test for the exact tier; with sites, the countdown (a sampled
   * allocation and the steady-state check leave for alloc_noted). */
  if (sc_unlikely(f & (SC_FEATURE_SITES | SC_FEATURE_FRAME_CHECK))) {
    bool sample = (f & SC_FEATURE_SITES) && sc__sites_due(n);
    if (sample || (f & SC_FEATURE_FRAME_CHECK)) return alloc_noted(a, n, c, sample);
  }
  sc_page_t *page = a->current[c];
  sc_block_t *b = sc__page_take_ex(page, true);
  if (sc_unlikely(b == NULL)) return alloc_refill(a, n, c, false, false);
  return on_alloc(a, page, b, c, n, f);
}

void *sc__seam_alloc(sc_arena_t *a, size_t n, unsigned c) { return seam_alloc(a, n, c); }

/** The malloc fast path's slow target while features are on: every
 * allocation of a thread with an arena goes straight to the seam. */
static void *seam_malloc(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) return seam_alloc(a, n, c);
  return sc__arena_alloc_slow(n, c);
}

/** A local free of block p that may have been sampled: out of line,
 * reached by a jump, so that the common path saves no register. */
static sc_noinline void free_noted(sc_page_t *page, void *p) {
  sc__sites_forget(p);
  sc__page_free(page, p);
}

/* A free by its owner a of block p of page: the features' work before it
 * goes back on the page's free list. */
void sc__seam_free_local(sc_arena_t *a, sc_page_t *page, void *p) {
  uint32_t f = sc__features; /* once: the stores below could alias it */
  if (f & SC_FEATURE_EXACT) sc__exact_free(a, page, (uintptr_t)p);
  if (sc_unlikely(f & SC_FEATURE_SITES) && sc__sites_maybe_sampled(p)) {
    free_noted(page, p);
    return;
  }
  sc__page_free(page, p);
}

sc_public bool sc_stats_enable_exact(void) {
  sc__init();
  return sc__seam_enable(SC_FEATURE_EXACT);
}
