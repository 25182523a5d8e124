/* seam.c — the out-of-line allocation paths taken while an optional
 * feature is on (seam.h), and the decision of which are on.
 *
 * The hooks and paths are written once, with the set of features on as a
 * parameter `f`, and inlined per case: the common single-feature cases
 * (exact statistics alone, guard sampling alone) get paths where the
 * tests of the other features fold away, so that adding a feature does not
 * slow the others down (allocation sites alone have such a path too); any
 * other mix takes the general path, which reads sc__features. */
#include <errno.h>
#include <strings.h>

#include "alloc.h"
#include "check.h"
#include "exact.h"
#include "frame_check.h"
#include "guard.h"
#include "seam.h"
#include "settings.h"
#include "sites.h"

uint32_t sc__features;
bool sc__req_arrays;

#define sc_always_inline inline __attribute__((always_inline))

/* ---- the hooks: each feature's work, in one place ------------------------- */

/** Before an allocation of n bytes aligned to `align` (0: malloc's) takes
 * a class block: a feature may serve it itself (guard sampling). */
static sc_always_inline void *pre_alloc(uint32_t f, size_t n, size_t align) {
  if ((f & SC_FEATURE_GUARD) != 0 && sc__guard_tick()) return sc__guard_alloc(n, align);
  return NULL;
}

/** Before the owner takes a block from page. */
static sc_always_inline void before_take(uint32_t f, const sc_page_t *page) {
  if ((f & SC_FEATURE_CHECK) != 0) sc__check_take(page);
}

/** The features' work on block b (of page, class c) just handed out for a
 * request of n bytes. */
static sc_always_inline void on_alloc(uint32_t f, sc_arena_t *a, sc_page_t *page, sc_block_t *b,
                                      unsigned c, size_t n) {
  if ((f & SC_FEATURE_EXACT) != 0) sc__exact_alloc(a, page, b, c, n);
  if ((f & SC_FEATURE_CHECK) != 0) sc__check_alloc(page, b, n);
}

/** The features' rarer work on an allocation: the sites' countdown ran out
 * (`sample`), or a fresh carve (`fresh`) while the steady-state check is
 * on. */
static void alloc_noted_work(sc_block_t *b, unsigned c, size_t n, bool sample, bool fresh) {
  if (sample) sc__sites_sample(b, c, n);
  if (fresh && sc__frame_check_on()) sc__frame_check_fresh(c);
}

/** The sites' work on a free of block p, by any thread: first of all, so
 * that a block the checking mode keeps in quarantine has left its site. */
static sc_always_inline void on_free_sites(uint32_t f, void *p) {
  if ((f & SC_FEATURE_SITES) != 0 && sc__sites_maybe_sampled(p)) sc__sites_forget(p);
}

/** The features' work on a free by its owner a of block p of page, before
 * it goes back on the page's free list. */
static sc_always_inline void on_free_local(uint32_t f, sc_arena_t *a, sc_page_t *page, void *p) {
  if ((f & SC_FEATURE_EXACT) != 0) sc__exact_free(a, page, (uintptr_t)p);
  if ((f & SC_FEATURE_CHECK) != 0) sc__check_poison(page, p, true);
}

void sc__seam_free_remote(sc_arena_t *me, sc_page_t *page, uintptr_t p) {
  on_free_sites(sc__features, (void *)p);
  if (me != NULL && sc__exact_on()) sc__exact_remote_free(me, page, p);
  if (sc__check_on()) sc__check_poison(page, (void *)p, false);
}

void sc__seam_before_take(const sc_page_t *page) { before_take(sc__features, page); }

bool sc__seam_free_held(void *p, sc_page_t *page) {
  return sc__check_on() && sc__check_free(p, page, false);
}

void sc__seam_sys_alloc(void *p, size_t n) {
  if (p != NULL && sc__sites_on() && sc__sites_due(n)) sc__sites_sample(p, SC_SITES_SYSTEM, n);
}

void sc__seam_sys_free(void *p) { on_free_sites(sc__features, p); }

void sc__seam_resize(sc_arena_t *a, void *p, size_t n) {
  if (sc__check_on()) sc__check_resize(p, n);
  if (a == NULL && sc__req_arrays) a = sc__arena_get(); /* the request moves to this thread */
  if (sc__exact_on() && a != NULL) {
    sc__exact_resize(a, (uintptr_t)p, n);
  } else if (sc__req_arrays) {
    const sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)p), (uintptr_t)p);
    *sc__exact_req_slot(page, (uintptr_t)p) = (uint16_t)n;
  }
}

size_t sc__seam_usable(const void *p, size_t size) {
  return sc__check_on() ? sc__check_usable(p) : size;
}

/* Blocks outside the segments that a feature made (the guard pool). */

static bool guard_has(const void *p) {
  return (sc__features & SC_FEATURE_GUARD) != 0 && sc__guard_has(p);
}

bool sc__seam_free_foreign(void *p) {
  if (!guard_has(p)) return false;
  on_free_sites(sc__features, p);
  sc__guard_free(p);
  return true;
}

bool sc__seam_realloc_foreign(void *p, size_t n, void **out) {
  if (!guard_has(p)) return false;
  *out = sc__guard_realloc(p, n);
  if (*out != NULL) on_free_sites(sc__features, p); /* p was freed */
  return true;
}

bool sc__seam_usable_foreign(const void *p, size_t *out) {
  if (!guard_has(p)) return false;
  *out = sc__guard_usable(p);
  return true;
}

bool sc__seam_owns_foreign(const void *p) { return guard_has(p) && sc__guard_owns(p); }

void sc__seam_fork(int phase) {
  if ((sc__features & SC_FEATURE_GUARD) != 0) sc__guard_fork(phase);
  if (sc__check_on()) sc__check_fork(phase);
}

/* ---- the paths ---------------------------------------------------------------- */

/** An allocation whose current page has no block; `noted`: the features'
 * rarer work is due (alloc_noted_work, with `sample`). */
static sc_cold void *alloc_refill(sc_arena_t *a, size_t n, unsigned c, bool noted, bool sample) {
  /* Was the block a fresh carve? The refill takes it from the queue's next
   * page (compare its high-water mark), from a page it just (re)initialised
   * (its first block: fresh), or from a page that was full or idle (its
   * blocks come back, none is fresh). */
  sc_page_t *next = a->current[c] != &sc__empty_page ? a->current[c]->next : NULL;
  uint8_t *next_mark = next != NULL ? next->fresh_end : NULL;
  sc_block_t *b = sc__arena_refill(a, c); /* calls before_take on the way */
  if (sc_unlikely(b == NULL)) {
    b = sc__sys_memalign(sc__class_size(c), n); /* the OS refused a segment */
    if (b == NULL) errno = ENOMEM;
    return b;
  }
  sc_page_t *page = a->current[c]; /* refill took b from the current page */
  on_alloc(sc__features, a, page, b, c, n);
  if (noted) {
    bool fresh = page->allocs == 1;
    if (page == next) fresh = page->fresh_end != next_mark;
    alloc_noted_work(b, c, n, sample, fresh);
  }
  return b;
}

/** An allocation when the features' rarer work may be due: a sample
 * (`sample`), or the steady-state check, which must know whether the
 * block is a fresh carve. Out of line, reached by a jump, so that the
 * common path saves no register for it. */
static sc_noinline void *alloc_noted(sc_arena_t *a, size_t n, unsigned c, bool sample) {
  uint32_t f = sc__features;
  sc_page_t *page = a->current[c];
  before_take(f, page);
  uint8_t *fresh_mark = page->fresh_end; /* raised by a fresh carve */
  sc_block_t *b = sc__page_take_ex(page, true);
  if (sc_unlikely(b == NULL)) return alloc_refill(a, n, c, true, sample);
  on_alloc(f, a, page, b, c, n);
  alloc_noted_work(b, c, n, sample, page->fresh_end != fresh_mark);
  return b;
}

/** An allocation of n bytes of class c aligned to `align` (0: malloc's) by
 * arena a's thread, with features f on. */
static sc_always_inline void *alloc_with(uint32_t f, sc_arena_t *a, size_t n, unsigned c,
                                         size_t align) {
  void *g = pre_alloc(f, n, align);
  if (sc_unlikely(g != NULL)) {
    /* A guarded block counts in its class's sites like any other. */
    if ((f & SC_FEATURE_SITES) != 0 && sc__sites_due(n)) sc__sites_sample(g, c, n);
    return g;
  }
  if ((f & (SC_FEATURE_SITES | SC_FEATURE_FRAME_CHECK)) != 0) {
    bool sample = (f & SC_FEATURE_SITES) != 0 && sc__sites_due(n); /* the sites' countdown */
    if (sample || (f & SC_FEATURE_FRAME_CHECK) != 0) return alloc_noted(a, n, c, sample);
  }
  sc_page_t *page = a->current[c];
  before_take(f, page);
  sc_block_t *b = sc__page_take_ex(page, true);
  if (sc_unlikely(b == NULL)) return alloc_refill(a, n, c, false, false);
  on_alloc(f, a, page, b, c, n);
  return b;
}

void *sc__seam_alloc(sc_arena_t *a, size_t n, unsigned c) {
  return alloc_with(sc__features, a, n, c, 0);
}

void *sc__seam_memalign(size_t n, unsigned c, size_t align) {
  sc_arena_t *a = sc__arena_get();
  if (sc_unlikely(a == NULL)) return sc__arena_alloc_slow(n, c);
  return alloc_with(sc__features, a, n, c, align);
}

/** A free by its owner a of block p of page, with features f on. */
static sc_always_inline void free_local_with(uint32_t f, sc_arena_t *a, sc_page_t *page, void *p) {
  on_free_sites(f, p);
  if ((f & SC_FEATURE_CHECK) != 0 && sc__check_free(p, page, true)) return; /* quarantined */
  on_free_local(f, a, page, p);
  sc__page_free(page, p);
}

static sc_noinline void free_local_any(sc_arena_t *a, sc_page_t *page, void *p) {
  free_local_with(sc__features, a, page, p);
}

void sc__seam_free_local(sc_arena_t *a, sc_page_t *page, void *p) {
  uint32_t f = sc__features;
  if (sc_likely(f == SC_FEATURE_EXACT))
    free_local_with(SC_FEATURE_EXACT, a, page, p);
  else if (f == SC_FEATURE_SITES)
    free_local_with(SC_FEATURE_SITES, a, page, p);
  else
    free_local_any(a, page, p);
}

/* ---- the malloc fast path's slow targets ---------------------------------- */

/** With exact statistics alone. */
static void *seam_malloc_exact(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) return alloc_with(SC_FEATURE_EXACT, a, n, c, 0);
  return sc__arena_alloc_slow(n, c);
}

/** With allocation sites alone. */
static void *seam_malloc_sites(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) return alloc_with(SC_FEATURE_SITES, a, n, c, 0);
  return sc__arena_alloc_slow(n, c);
}

/** Any other mix of features. */
static void *seam_malloc(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) return alloc_with(sc__features, a, n, c, 0);
  return sc__arena_alloc_slow(n, c);
}

/** seam_malloc_sampled's way out: no arena yet, a sample due, or no block
 * in the current page. */
static sc_noinline void *sampled_slow(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_unlikely(a == NULL)) return sc__arena_alloc_slow(n, c); /* it counts this one */
  return alloc_with(SC_FEATURE_GUARD, a, n, c, 0);
}

/** With guard sampling alone: frees keep the fast path (arena.c:
 * thread_bind), and an allocation only counts down to the next sample
 * before it takes its block as the fast path would have (no stack frame
 * on the way). */
static void *seam_malloc_sampled(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread.arena;
  uint32_t k = sc__guard_countdown;
  if (sc_likely(a != NULL && k > 1)) {
    sc__guard_countdown = k - 1;
    sc_block_t *b = sc__page_take(a->current[c]);
    if (sc_likely(b != NULL)) return b;
    sc__guard_countdown = k; /* not served here: sampled_slow counts it */
  }
  return sampled_slow(n, c);
}

/* ---- the decision ------------------------------------------------------------- */

/** Features are on from now on. */
static void features_set(uint32_t f) {
  sc__features = f;
  /* The checking mode needs each block's request as much as exact
   * statistics do. */
  sc__req_arrays = (f & (SC_FEATURE_EXACT | SC_FEATURE_CHECK)) != 0;
  sc__meta_pages = sc__req_arrays ? SC_META_PAGES_EXACT : 1;
  if (f == SC_FEATURE_EXACT)
    sc__alloc_slow_fn = seam_malloc_exact;
  else if (f == SC_FEATURE_GUARD)
    sc__alloc_slow_fn = seam_malloc_sampled;
  else if (f == SC_FEATURE_SITES)
    sc__alloc_slow_fn = seam_malloc_sites;
  else if (f != 0)
    sc__alloc_slow_fn = seam_malloc;
}

void sc__seam_decide(void) {
  sc__settings_load();
  uint32_t f = sc__features; /* sc_stats_enable_exact may have run first */
  /* Exact statistics: asked for directly, or implied by a report. */
  if (sc__setting(SC_SET_STATS_EXACT) != 0 || sc__settings_report_asked()) f |= SC_FEATURE_EXACT;
  if (sc__guard_decide()) f |= SC_FEATURE_GUARD;
  if (sc__check_decide()) f |= SC_FEATURE_CHECK;
  f |= sc__sites_decide();       /* SIZECLASS_SITES* (sites.c) */
  f |= sc__frame_check_decide(); /* SIZECLASS_FRAME_CHECK* (frame_check.c) */
  features_set(f);
}

/** The feature a setting decided at startup belongs to. */
static uint32_t feature_of(sc_setting_id_t id) {
  switch (id) {
    case SC_SET_STATS_EXACT:
      return SC_FEATURE_EXACT;
    case SC_SET_GUARD:
    case SC_SET_GUARD_SLOTS:
      return SC_FEATURE_GUARD;
    case SC_SET_CHECK:
    case SC_SET_CHECK_QUARANTINE:
      return SC_FEATURE_CHECK;
    case SC_SET_SITES:
    case SC_SET_SITES_FORMAT:
    case SC_SET_SITES_FOLDED:
      return SC_FEATURE_SITES;
    case SC_SET_FRAME_CHECK:
      return SC_FEATURE_FRAME_CHECK;
    default:
      return 0;
  }
}

bool sc__seam_option(unsigned setting) {
  sc_setting_id_t id = (sc_setting_id_t)setting;
  uint32_t feature = feature_of(id);
  uint64_t created, live, adopted;
  if (feature == 0) return false;
  if ((sc__features & feature) != 0) /* fixed for the run; asking for exact again is fine */
    return id == SC_SET_STATS_EXACT && sc__setting(id) != 0;
  sc__arena_counts(&created, &live, &adopted);
  if (created != 0) return false; /* too late: blocks exist without it */
  /* The feature is off: its decision has no state to undo. */
  uint32_t f = 0;
  if (feature == SC_FEATURE_EXACT && sc__setting(SC_SET_STATS_EXACT) != 0) f = SC_FEATURE_EXACT;
  if (feature == SC_FEATURE_GUARD && sc__guard_decide()) f = SC_FEATURE_GUARD;
  if (feature == SC_FEATURE_CHECK && sc__check_decide()) f = SC_FEATURE_CHECK;
  if (feature == SC_FEATURE_SITES) f = sc__sites_decide();
  if (feature == SC_FEATURE_FRAME_CHECK) f = sc__frame_check_decide();
  return f == 0 || sc__seam_enable(f);
}

bool sc__seam_enable(uint32_t features) {
  uint64_t created, live, adopted;
  sc__arena_counts(&created, &live, &adopted);
  if ((sc__features & features) == features) return true;
  if (created != 0) return false;
  features_set(sc__features | features);
  return true;
}

sc_public bool sc_stats_enable_exact(void) {
  sc__init();
  return sc__seam_enable(SC_FEATURE_EXACT);
}
