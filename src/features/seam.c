/* SPDX-License-Identifier: MIT */
/* seam.c — the features' table for the core (core/hooks.h:
 * sc__feature_table), each feature's work in one place, and the decision
 * of which features are on.
 *
 * The paths are the core's (core/tiers.c, core/tiers.h); the decision
 * installs the one for the mix of features on:
 *   - exact statistics alone: the core's tier template with the exact
 *     tier's inline accounting (malloc_exact / free_exact here; with tags,
 *     the tag rows' accounting: malloc_tags / free_tags);
 *   - exact statistics with sampled features: the same, plus the sampled
 *     features' own countdown (every malloc arrives, so theirs is a
 *     second counter);
 *   - sampled features alone: the core's sampled path, reached only when
 *     the countdown runs out; it asks the table's `sample` hooks;
 *   - anything else (the checking mode, the steady-state check): the
 *     core's general path, which asks the table's block events. */
#include <strings.h>

#include "core/alloc.h"
#include "core/tiers.h"
#include "features/check.h"
#include "features/exact.h"
#include "features/frame.h"
#include "features/frame_check.h"
#include "features/guard.h"
#include "core/hooks.h"
#include "features/seam.h"
#include "util/settings.h"
#include "features/sites.h"
#include "features/budget.h"
#include "features/tags.h"
#include "features/unwinder.h"
#include "sizeclass.h"
#include "util/startup.h"

/* ---- the sampled features' countdown ------------------------------------------- */

/* Per thread: calls until each sampled feature's next sample, and the value
 * the running countdown started from (the calls it covers). The running
 * countdown is the fast path's `sample_left` while only sampled features
 * are on, and the thread's `sampled_left` while a feature sees every
 * malloc. */
typedef struct {
  int64_t sites_left;
  int64_t guard_left;
  int64_t armed;
  bool drawn;
} sampling_t;

static sc_tls sampling_t sampling;

/** Draw each sampled feature's first sample, once per thread. */
static void sampling_first(sampling_t *s, uint32_t f) {
  if (s->drawn) return;
  s->drawn = true;
  if (f & SC_FEATURE_SITES) s->sites_left = sc__sites_draw_calls();
  if (f & SC_FEATURE_GUARD) s->guard_left = sc__guard_draw();
}

/** The calls until the next sample of any sampled feature. */
static int64_t sampling_next(const sampling_t *s, uint32_t f) {
  int64_t next = INT64_MAX;
  if ((f & SC_FEATURE_SITES) && s->sites_left < next) next = s->sites_left;
  if ((f & SC_FEATURE_GUARD) && s->guard_left < next) next = s->guard_left;
  return next;
}

/** The running countdown ran out: `armed` calls went by. The features
 * whose sample is due (SC_FEATURE_* bits); their next ones are drawn and
 * the countdown is set again (*left). */
static sc_noinline uint32_t sampling_fire(int64_t *left) {
  sampling_t *s = &sampling;
  uint32_t f = sc__features, due = 0;
  sampling_first(s, f);
  int64_t went = s->armed > 0 ? s->armed : 1;
  if ((f & SC_FEATURE_SITES) && (s->sites_left -= went) <= 0) {
    due |= SC_FEATURE_SITES;
    s->sites_left = sc__sites_draw_calls();
  }
  if ((f & SC_FEATURE_GUARD) && (s->guard_left -= went) <= 0) {
    due |= SC_FEATURE_GUARD;
    s->guard_left = sc__guard_draw();
  }
  s->armed = *left = sampling_next(s, f);
  return due;
}

static sc_startup int64_t countdown_start(void) {
  uint32_t f = sc__features;
  if (sc__tags_on && sc__thread.arena != NULL) sc__tags_bind(sc__thread.arena);
  if ((f & SC_FEATURES_SAMPLED) != 0) {
    sampling_t *s = &sampling;
    sampling_first(s, f);
    s->armed = sampling_next(s, f);
    if ((f & SC_FEATURES_EVERY_MALLOC) == 0) return s->armed;
    sc__thread.sampled_left = s->armed;
  }
  return (f & SC_FEATURES_EVERY_MALLOC) != 0 ? 0 : INT64_MAX;
}

/** Count one malloc of a path that sees every malloc against the sampled
 * features' countdown: the features due now (0 mostly). */
static sc_always_inline uint32_t sampling_tick(uint32_t f) {
  if ((f & SC_FEATURES_SAMPLED) == 0) return 0;
  if (sc_likely(!sc__countdown(&sc__thread.sampled_left))) return 0;
  return sampling_fire(&sc__thread.sampled_left);
}

/* ---- the hooks: each feature's work, in one place ------------------------- */

/** A sample is due: guard pages may serve it from their pool (NULL: they
 * do not, or have no slot free). */
static void *guarded(uint32_t due, unsigned c, size_t n, size_t align) {
  if ((due & SC_FEATURE_GUARD) == 0) return NULL;
  void *g = sc__guard_alloc(n, align);
  /* A guarded block counts in its class's sites like any other (it lies
   * outside the segments: the sites' filter finds its free). */
  if (g != NULL && (due & SC_FEATURE_SITES)) sc__sites_sample_class(g, c, n);
  return g;
}

/** Block b of page (class c) was handed out for n bytes and the sites'
 * sample is due: record it, and mark it so that its free is seen. */
static void sites_sampled(sc_page_t *page, sc_block_t *b, unsigned c, size_t n) {
  if (sc__sites_sample_class(b, c, n))
    *sc__map_entry(page->map, (uintptr_t)b, page->shift) = SC_MAP_SAMPLED;
}

/** Before the owner takes a block from page. */
static sc_always_inline void before_take(uint32_t f, const sc_page_t *page) {
  if ((f & SC_FEATURE_CHECK) != 0) sc__check_take(page);
}

/** The features' work on block b (of page, class c) just handed out by
 * its owner a for a request of n bytes. */
static sc_always_inline void on_alloc(uint32_t f, sc_arena_t *a, sc_page_t *page, sc_block_t *b,
                                      unsigned c, size_t n) {
  if ((f & SC_FEATURE_EXACT) != 0) {
    if (sc__tags_on)
      sc__tags_alloc_any(a, page, b, c, n);
    else
      sc__exact_alloc_any(a, page, b, c, n);
  }
  if ((f & SC_FEATURE_CHECK) != 0) sc__check_alloc(page, b, n);
}

/** The features' work on a free by its owner a of block p of page, before
 * it goes back on the page's free list. */
static sc_always_inline void on_free_local(uint32_t f, sc_arena_t *a, sc_page_t *page, void *p) {
  if ((f & SC_FEATURE_EXACT) != 0) {
    if (sc__tags_on)
      sc__tags_free_local(a, page, (uintptr_t)p);
    else
      sc__exact_free(a, page, (uintptr_t)p);
  }
  if ((f & SC_FEATURE_CHECK) != 0) sc__check_poison(page, p, true);
}

/** The sites' work on a free of a block outside the segments (the system
 * allocator's, the guard pool's): the filter says whether it may have
 * been sampled. */
static sc_always_inline void on_free_unmarked(uint32_t f, void *p) {
  if ((f & SC_FEATURE_SITES) != 0 && sc__sites_maybe_sampled(p)) sc__sites_forget(p);
}

static void on_free_sampled(void *p) {
  if (sc__sites_on()) sc__sites_forget(p);
}

static void on_free_remote(sc_arena_t *me, sc_page_t *page, uintptr_t p) {
  if (sc__tags_on)
    sc__tags_remote_free(me, page, p);
  else if (me != NULL && sc__exact_on())
    sc__exact_remote_free(me, page, p);
  if (sc__check_on()) sc__check_poison(page, (void *)p, false);
}

static void on_before_take(const sc_page_t *page) { before_take(sc__features, page); }

static bool keep_freed(void *p, sc_page_t *page, bool local) {
  return sc__check_on() && sc__check_free(p, page, local);
}

static void on_sys_alloc(void *p, size_t n) {
  if (sc__tags_on) sc__tags_sys_alloc(p);
  if (p != NULL && sc__sites_on() && sc__sites_due(n)) sc__sites_sample(p, SC_SITES_SYSTEM, n);
}

static void on_sys_free(void *p, uint32_t info, uint64_t bytes) {
  if (sc__tags_on) sc__tags_sys_free(info, bytes);
  on_free_unmarked(sc__features, p);
}

static void on_thread_exit(sc_arena_t *a) {
  if (sc__tags_on) sc__tags_thread_exit(a);
}

static bool arena_adoptable(sc_arena_t *a) { return sc__tags_adoptable(a); }

static unsigned realloc_enter(const void *p) { return sc__tags_on ? sc__tags_realloc_enter(p) : 0; }

static void realloc_leave(unsigned saved) {
  if (sc__tags_on) sc__tags_realloc_leave(saved);
}

static void on_resized(sc_arena_t *a, void *p, size_t n) {
  if (sc__check_on()) sc__check_resize(p, n);
  if (a == NULL && sc__req_arrays) a = sc__arena_get(); /* the request moves to this thread */
  if (sc__exact_on() && a != NULL && sc__tags_on) {
    sc__tags_resize(a, (uintptr_t)p, n);
  } else if (sc__exact_on() && a != NULL) {
    sc__exact_resize(a, (uintptr_t)p, n);
  } else if (sc__req_arrays) {
    const sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)p), (uintptr_t)p);
    *sc__req_slot(page, (uintptr_t)p) = (uint16_t)n;
  }
}

static size_t block_usable_size(const void *p, size_t size) {
  return sc__check_on() ? sc__check_usable(p) : size;
}

/* Blocks outside the segments that a feature made (the guard pool). */

static bool guard_has(const void *p) {
  return (sc__features & SC_FEATURE_GUARD) != 0 && sc__guard_has(p);
}

static bool foreign_free(void *p) {
  if (!guard_has(p)) return false;
  on_free_unmarked(sc__features, p);
  sc__guard_free(p);
  return true;
}

static bool foreign_realloc(void *p, size_t n, void **out) {
  if (!guard_has(p)) return false;
  *out = sc__guard_realloc(p, n);
  if (*out != NULL) on_free_unmarked(sc__features, p); /* p was freed */
  return true;
}

static bool foreign_usable_size(const void *p, size_t *out) {
  if (!guard_has(p)) return false;
  *out = sc__guard_usable(p);
  return true;
}

static bool foreign_owns(const void *p) { return guard_has(p) && sc__guard_owns(p); }

static void on_drain(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  if (sc__tags_on)
    sc__tags_drained(a, page, p);
  else
    sc__exact_drained(a, page, p);
}

static void on_sys_live(sc_arena_t *a, int64_t delta) { sc__exact_sys_live(a, delta); }

static bool realloc_is_freed(const void *p) {
  /* The quarantine's blocks carry the free key (check.c). */
  return ((const sc_block_t *)p)->key == sc__free_key(p);
}

static void stats_arena(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]) {
  if (sc__tags_on)
    sc__tags_sum(a, sums);
  else if (sc__exact_on())
    sc__exact_sum(a, sums);
}

static void stats_features(struct sc_stats *out) { sc__frame_stats(&out->frames); }

static void on_fork(int phase) {
  static bool tags_held; /* the prepare took the tags' locks: the others let them go */
  if (phase == 0) tags_held = sc__tags_on;
  if (tags_held) {
    sc__tag_rules_fork(phase);
    sc__tags_fork(phase);
    sc__budget_fork(phase);
  }
  if ((sc__features & SC_FEATURE_GUARD) != 0) sc__guard_fork(phase);
  if (sc__check_on()) sc__check_fork(phase);
}

/* ---- what the core's general and sampled paths ask (core/tiers.c) --------------- */

/** SIZECLASS_TAGS on a path malloc did not tail-jump to (a thread's first
 * malloc, aligned requests): the caller's rule, found by unwinding. */
static void rules_by_unwinding(void) {
  if (!sc__tags_on || !sc__tag_rules_on() || sc__tag_tls.pinned) return;
  unsigned t = sc__tag_rules_caller();
  if (t == 0) t = sc__tag_tls.code;
  if (t != sc__tag_tls.cur) sc__tags_set_cur(t);
}

static void on_alloc_general(sc_arena_t *a, sc_page_t *page, void *b, unsigned c, size_t n) {
  on_alloc(sc__features, a, page, b, c, n);
}

static void on_fresh(unsigned c) {
  if ((sc__features & SC_FEATURE_FRAME_CHECK) != 0 && sc__frame_check_on())
    sc__frame_check_fresh(c);
}

static void on_free_local_general(sc_arena_t *a, sc_page_t *page, void *p) {
  on_free_local(sc__features, a, page, p);
}

static uint32_t sample_tick(void) { return sampling_tick(sc__features); }

static void sample_taken(uint32_t due, sc_page_t *page, void *b, unsigned c, size_t n) {
  if (due & SC_FEATURE_SITES) sites_sampled(page, b, c, n);
}

/* ---- exact statistics (and sampled features) ------------------------------------------ */

/** An exact-tier malloc whose page has no block, or a thread without an
 * arena; `due`: the samples due. */
static sc_noinline void *exact_refill(size_t n, size_t g, sc_page_t *page, uint32_t due) {
  (void)page;
  sc_thread_t *t = &sc__thread;
  sc_arena_t *a = t->arena;
  if (a == NULL) {
    t->sample_left = INT64_MAX; /* the slow path binds an arena, and accounts */
    return sc__arena_alloc_slow(n, g);
  }
  unsigned c = sc__class_of_granule[g];
  sc_block_t *b = sc__arena_refill(a, c);
  if (sc_unlikely(b == NULL)) return sc__alloc_from_system(n, c); /* the OS refused a segment */
  page = a->current[c];
  size_t i = sc__map_index((uintptr_t)b, page->shift);
  if (sc__tags_on)
    sc__tags_alloc(page, b, page->map + (i << SC_MAP_WIDE_SHIFT), g, c, n);
  else
    sc__exact_alloc(a, page, b, page->map, i, g, c, n);
  if (due & SC_FEATURE_SITES) sites_sampled(page, b, c, n);
  return b;
}

/** With exact statistics, a sample is due (`due`, or 0: the countdown
 * just ran out, draw it): serve it (a guarded block is not in the
 * classes' counts; a recorded site is). */
static sc_noinline void *exact_due(size_t n, size_t g, sc_page_t *page, uint32_t due) {
  if (due == 0) due = sampling_fire(&sc__thread.sampled_left);
  if (sc__thread.arena == NULL) return exact_refill(n, g, page, 0);
  void *guard = guarded(due, sc__class_of_granule[g], n, sc__tier_align_of(n, g));
  if (guard != NULL) return guard;
  uint8_t *map = page->map;
  size_t i;
  sc_block_t *b = sc__page_take_wide(page, &i);
  if (sc_unlikely(b == NULL)) return exact_refill(n, g, page, due);
  if (sc__tags_on)
    sc__tags_alloc(page, b, map + (i << SC_MAP_WIDE_SHIFT), g, page->class_idx, n);
  else
    sc__exact_alloc(page->arena, page, b, map, i, g, page->class_idx, n);
  if (due & SC_FEATURE_SITES) sites_sampled(page, b, page->class_idx, n);
  return b;
}

/** The exact tier's accounting of a block, in its owner's arena
 * (core/tiers.h: sc_tier_alloc_account_t). */
static inline void *exact_account_alloc(const sc_page_t *page, void *b, uint8_t *e, size_t g,
                                        unsigned c, size_t n) {
#if defined(__x86_64__)
  /* g and n stay in the registers they came in (rsi, rdi): left to
   * itself, GCC takes one of them for the map index of the take just
   * inlined and moves the argument aside, an instruction per malloc. */
  __asm__("" : "+S"(g), "+D"(n));
#endif
  sc_arena_t *a = page->arena;
  return sc__exact_alloc_in(a, page, b, sc__req_slot_at(e), &a->exact.hist[g], c, n);
}

/** The exact tier's accounting of a free by the owner (sc_tier_free_account_t). */
static inline void exact_account_free(sc_arena_t *a, const uint8_t *e, unsigned c) {
  a->exact.headroom[c]++;
  a->exact.req_freed[c] += *(const uint16_t *)(e + 2);
}

/** malloc with exact statistics: the countdown sends every call here,
 * with the thread's current page of granule g; the core's tier path takes
 * the block (core/tiers.h). With sampled features (`sampled`), their own
 * countdown comes first. */
static sc_always_inline void *exact_malloc_with(size_t n, size_t g, sc_page_t *page, bool sampled) {
  if (sampled && sc_unlikely(sc__countdown(&sc__thread.sampled_left)))
    return exact_due(n, g, page, 0); /* it draws the next sample */
  return sc__tier_malloc(n, g, page, exact_account_alloc, exact_refill);
}

static void *malloc_exact(size_t n, size_t g, sc_page_t *page) {
  return exact_malloc_with(n, g, page, false);
}
static void *malloc_exact_sampled(size_t n, size_t g, sc_page_t *page) {
  return exact_malloc_with(n, g, page, true);
}

/** free with exact statistics: the core's tier path (core/tiers.h). */
static void free_exact(void *p, sc_page_t *page, sc_arena_t *self) {
  sc__tier_free(p, page, self, exact_account_free);
}

/* ---- exact statistics with tags (tags.h) ------------------------------------------------ */

/** malloc with tags: the exact tier's, counted in the row of the thread's
 * tag, the tag written into the block's entry beside its request. */
static sc_always_inline void *tags_malloc_with(size_t n, size_t g, sc_page_t *page, bool sampled) {
  if (sampled && sc_unlikely(sc__countdown(&sc__thread.sampled_left)))
    return exact_due(n, g, page, 0);
  return sc__tier_malloc(n, g, page, sc__tags_alloc, exact_refill);
}

static void *malloc_tags(size_t n, size_t g, sc_page_t *page) {
  return tags_malloc_with(n, g, page, false);
}
static void *malloc_tags_sampled(size_t n, size_t g, sc_page_t *page) {
  return tags_malloc_with(n, g, page, true);
}

/** malloc with SIZECLASS_TAGS rules, out of line: the caller's range is
 * not the cached one, its tag is not the thread's, or a realloc pinned it. */
static sc_noinline void *rules_slow(size_t n, size_t g, sc_page_t *page, uintptr_t ra,
                                    bool sampled) {
  sc__tag_rules_apply(ra);
  return tags_malloc_with(n, g, page, sampled);
}

/** malloc with SIZECLASS_TAGS rules: the tag of the caller's object first
 * (malloc tail-jumps here: the return address is the program's call). The
 * common case, a caller in the cached range whose tag the thread has, is a
 * few compares; everything else is a tail call. */
static sc_always_inline void *rules_malloc_with(size_t n, size_t g, sc_page_t *page, uintptr_t ra,
                                                bool sampled) {
  sc_tag_tls_t *tls = &sc__tag_tls;
  /* A pinned thread (realloc) and sc_tag_enter drop the cache (rule_len 0). */
  if (sc_unlikely(ra - tls->rule_lo >= tls->rule_len || tls->rule_tag != tls->cur))
    return rules_slow(n, g, page, ra, sampled);
  return tags_malloc_with(n, g, page, sampled);
}
static void *malloc_rules(size_t n, size_t g, sc_page_t *page) {
  return rules_malloc_with(n, g, page, (uintptr_t)__builtin_return_address(0), false);
}
static void *malloc_rules_sampled(size_t n, size_t g, sc_page_t *page) {
  return rules_malloc_with(n, g, page, (uintptr_t)__builtin_return_address(0), true);
}

/** free with tags: the exact tier's, counted in the owner's row of the
 * block's tag. */
static void free_tags(void *p, sc_page_t *page, sc_arena_t *self) {
  sc__tier_free(p, page, self, sc__tags_free);
}

void sc__seam_tags_install(void);
void sc__seam_tags_install(void) {
  uint32_t f = sc__features;
  if ((f & ~SC_FEATURES_SAMPLED) != SC_FEATURE_EXACT) return;
  void *(*fn)(size_t, size_t, sc_page_t *) =
      (f & SC_FEATURES_SAMPLED) ? malloc_tags_sampled : malloc_tags;
  if (sc__tag_rules_on()) fn = (f & SC_FEATURES_SAMPLED) ? malloc_rules_sampled : malloc_rules;
  sc__tiers_install(fn, free_tags);
}

/* ---- the decision ------------------------------------------------------------- */

/** Features are on from now on (they are only ever added). */
static sc_startup void features_set(uint32_t f) {
  sc__features = f;
  /* The checking mode needs each block's request as much as exact
   * statistics do. */
  sc__segment_set_layout((f & (SC_FEATURE_EXACT | SC_FEATURE_CHECK)) != 0);
  uint32_t sampled = f & SC_FEATURES_SAMPLED, rest = f & ~SC_FEATURES_SAMPLED;
  if (rest == SC_FEATURE_EXACT)
    sc__tiers_install(sampled ? malloc_exact_sampled : malloc_exact, free_exact);
  else if (rest != 0)
    sc__tiers_install(sc__tier_general_malloc, NULL);
  else if (sampled != 0)
    sc__tiers_install(sc__tier_sampled_malloc, NULL);
  /* else nothing is on: the core's own targets (tiers.c) stay */
  sc__sys_refresh();
}

static sc_startup void decide(void) {
  sc__settings_load();
  uint32_t f = sc__features; /* sc_stats_enable_exact may have run first */
  /* Exact statistics: asked for directly, or implied by a report. */
  if (sc__setting(SC_SET_STATS_EXACT) != 0 || sc__settings_report_asked()) f |= SC_FEATURE_EXACT;
  if (sc__guard_decide()) f |= SC_FEATURE_GUARD;
  if (sc__check_decide()) f |= SC_FEATURE_CHECK;
  f |= sc__sites_decide();            /* SIZECLASS_SITES* (sites.c) */
  f |= sc__frame_check_decide();      /* SIZECLASS_FRAME_CHECK* (frame_check.c) */
  bool budgets = sc__budget_decide(); /* SIZECLASS_BUDGET: exact statistics and tags */
  budgets |= sc__tag_rules_decide();  /* SIZECLASS_TAGS: the same */
  if (budgets) f |= SC_FEATURE_EXACT;
  features_set(f);
  if (budgets && !sc__tags_start())
    sc__warn(
        "SIZECLASS_BUDGET: budgets are not checked with SIZECLASS_CHECK or "
        "SIZECLASS_FRAME_CHECK on");
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
  if (f != 0 && !sc__seam_enable(f)) return false;
  /* Sites walk stacks from now on: bind libgcc's unwinder here, from the
   * program's call (sc_option_set), never from an allocation. */
  if ((f & SC_FEATURE_SITES) != 0) (void)sc__unwinder_bind();
  return true;
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

/* ---- the table the core calls (core/hooks.h) ----------------------------------- */

const sc_feature_ops_t sc__feature_table = {
    .block = {.before_alloc = rules_by_unwinding,
              .on_alloc = on_alloc_general,
              .on_fresh = on_fresh,
              .before_take = on_before_take,
              .keep_freed = keep_freed,
              .on_free_local = on_free_local_general,
              .on_free_remote = on_free_remote,
              .on_free_sampled = on_free_sampled,
              .on_drain = on_drain,
              .usable_size = block_usable_size},
    .sample = {.tick = sample_tick, .fire = sampling_fire, .serve = guarded, .taken = sample_taken},
    .realloc = {.is_freed = realloc_is_freed,
                .resized = on_resized,
                .enter = realloc_enter,
                .leave = realloc_leave},
    .foreign = {.owns = foreign_owns,
                .free = foreign_free,
                .realloc = foreign_realloc,
                .usable_size = foreign_usable_size},
    .sys = {.on_alloc = on_sys_alloc, .on_free = on_sys_free, .on_live = on_sys_live},
    .lifecycle = {.decide = decide,
                  .countdown_start = countdown_start,
                  .thread_exit = on_thread_exit,
                  .adoptable = arena_adoptable,
                  .fork = on_fork,
                  .stats_arena = stats_arena,
                  .stats = stats_features},
};
