/* SPDX-License-Identifier: MIT */
/* seam.h — the one place where optional features plug into allocation:
 * the hooks the core declares and calls, and features/seam.c implements.
 * The core calls nothing else of features/ (scripts/check-layers.py checks
 * it on the objects), and calls a hook only while a feature is on
 * (sc__features != 0), except the decision, fork and the snapshot's.
 *
 * Every optional feature (exact statistics, allocation sites, guard pages,
 * the checking mode, the steady-state check) is decided once, when the
 * process starts (sc__seam_decide, from sc__init): the environment, the
 * program's sizeclass_options string, or sc_stats_enable_exact() before
 * the first class allocation. The fast paths carry one test each that all
 * features share (DESIGN.md, guarantee 9):
 *
 * - malloc counts down the thread's `sample_left` and, when it runs out,
 *   jumps to sc__alloc_noted_fn. Exact statistics, the checking mode and
 *   the steady-state check keep it out (every malloc arrives here); the
 *   sampled features (sites, guard pages) set it to the calls until the
 *   next sample of either, so that between samples malloc runs the default
 *   path; with nothing on it never runs out.
 * - free compares the page's owner with the thread's `self`, which the
 *   features that see every free (exact statistics, the checking mode) set
 *   to no arena: their frees leave through sc__free_other_fn. A block that
 *   a sampled feature must see freed is SC_MAP_SAMPLED in its page's map:
 *   the free's map check sends it out of line (sc__page_free_marked,
 *   arena.c's remote path), with no test of its own.
 *
 * Exact statistics alone, and with sampled features, have their own
 * paths, which do their accounting inline (features/exact.h); any other
 * mix takes the general path, which reads sc__features. Blocks a feature makes
 * outside the segments (the guard pool) reach it through the *_foreign
 * hooks, which alloc.c asks while features are on before it hands a
 * pointer to the system allocator. */
#ifndef SC_SEAM_H
#define SC_SEAM_H

#include "core/feature_bits.h"
#include "core/internal.h"

struct sc_stats;

#pragma GCC visibility push(hidden)

/* ---- where the fast paths go (alloc.h) ------------------------------------ */

/** Where a malloc goes when the thread's countdown runs out: the features'
 * allocation path for the features on (page is the thread's current page
 * of granule g). With none on (arena.c's default), the slow path. */
extern void *(*sc__alloc_noted_fn)(size_t n, size_t g, sc_page_t *page);
/** Where a free of a class block goes when the page's owner is not the
 * thread's `self`: sc__free_other_any (arena.c's default), or the exact
 * tier's own path; self is the thread's. */
extern void (*sc__free_other_fn)(void *p, sc_page_t *page, sc_arena_t *self);

/* ---- the hooks the core calls (features/ implements them) ----------------- */

/** Decide which features are on; once, before the first arena exists. */
void sc__seam_decide(void);
/** The countdown a thread starts with when it binds an arena: 0 (every
 * malloc is seen), the calls until its first sample, or INT64_MAX. */
int64_t sc__seam_countdown_start(void);
/** malloc of n bytes (class c) by arena a's thread while a feature that
 * sees every malloc is on (the thread's first one, and refills). */
void *sc__seam_alloc(sc_arena_t *a, size_t n, unsigned c);
/** free of block p of page, owned by the calling thread's arena a, while
 * a feature that sees every free is on. */
void sc__seam_free_local(sc_arena_t *a, sc_page_t *page, void *p);
/** The features' work on a free of block p of another arena's page, by
 * arena me (NULL: a thread without one), before it goes on the owner's
 * remote list (arena.c calls it while features are on). */
void sc__seam_free_remote(sc_arena_t *me, sc_page_t *page, uintptr_t p);
/** A class block marked SC_MAP_SAMPLED is being freed (its map byte is
 * already FREE): its feature forgets it. */
void sc__seam_free_sampled(void *p);
/** The features' work on block p (NULL: the call failed) that the system
 * allocator made for a request of n bytes, and before the system allocator
 * frees block p (fallback.c calls them while features are on); `info` is
 * what the system route's record held for p (sys_record.h; 0: none), and
 * `bytes` its usable size, read before the record forgot it. */
void sc__seam_sys_alloc(void *p, size_t n);
void sc__seam_sys_free(void *p, uint32_t info, uint64_t bytes);
/** aligned_alloc & co. of n bytes served from class c (align <= its size)
 * while features are on. */
void *sc__seam_memalign(size_t n, unsigned c, size_t align);
/** Before the owner takes a block from page on a slow path (arena.c:
 * refill) while features are on. */
void sc__seam_before_take(const sc_page_t *page);
/** free() of block p of another arena's page, while features are on,
 * before anything else: true when a feature kept it (quarantine). */
bool sc__seam_free_held(void *p, sc_page_t *page);
/** realloc() keeps class block p for n bytes (by arena a's thread; NULL:
 * one without an arena) while features are on. */
void sc__seam_resize(sc_arena_t *a, void *p, size_t n);
/** malloc_usable_size() of class block p, whose class size is `size`,
 * while features are on. */
size_t sc__seam_usable(const void *p, size_t size);
/** A pointer outside the segments, while features are on: true when it
 * belongs to a feature (the guard pool), which then did the call. */
bool sc__seam_free_foreign(void *p);
bool sc__seam_realloc_foreign(void *p, size_t n, void **out);
bool sc__seam_usable_foreign(const void *p, size_t *out);
bool sc__seam_owns_foreign(const void *p);
/** A block p of a's page, freed by another thread, was drained back into
 * its page (arena.c), while exact statistics are on: its accounting. */
void sc__seam_drained(sc_arena_t *a, const sc_page_t *page, uintptr_t p);
/** The system allocator's live bytes moved by delta (made: > 0, freed:
 * < 0) on a thread of arena a (NULL: one without), while exact statistics
 * are on (fallback.c). */
void sc__seam_sys_live(sc_arena_t *a, int64_t delta);
/** realloc() of class block p, live in the block map, while a feature
 * that may hold freed blocks is on (SC_FEATURES_HOLD_FREED): true when it
 * holds p, which makes the call a realloc of a freed block. */
bool sc__seam_realloc_freed(const void *p);
/** The thread of arena a is exiting (its arena is handed on next). */
void sc__seam_thread_exit(sc_arena_t *a);
/** May abandoned arena a be adopted by a new thread (the arena lock is
 * held)? Tags count per thread: not while blocks of its thread are live. */
bool sc__seam_adoptable(sc_arena_t *a);
/** realloc moves block p: the features' state of the calling thread that
 * the new block must carry (its tag) is p's until _leave(the value). */
unsigned sc__seam_realloc_enter(const void *p);
void sc__seam_realloc_leave(unsigned saved);
/** fork handlers of the features: 0 prepare, 1 parent, 2 child. */
void sc__seam_fork(int phase);

/* ---- the hooks of the statistics snapshot (stats.c) ----------------------- */

/** The exact tier's figures of one class, summed over arenas. */
typedef struct sc_exact_sums_s {
  uint64_t live, peak;                    /* blocks, each arena's owner view */
  uint64_t req_total, req_live, req_peak; /* requested bytes */
  uint64_t hist[SC_BUCKETS];              /* requests by granule */
} sc_exact_sums_t;
/** Add arena a's exact figures of every class into sums (relaxed loads:
 * its thread may be running); while exact statistics are on. */
void sc__seam_stats_arena(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]);
/** The features' part of a snapshot (the frame figures), after the core's. */
void sc__seam_stats(struct sc_stats *out);

/* ---- the features' decision, for the API (options.c, sc_stats_enable_exact) */

/** Turn features on before any arena exists; false if one already does. */
bool sc__seam_enable(uint32_t features);
/** sc_option_set changed `setting` (an sc_setting_id_t of settings.h whose
 * `when` is SC_WHEN_START): decide its feature again while that is off and
 * no arena exists; false when it is too late (the setting is then put
 * back). */
bool sc__seam_option(unsigned setting);

#pragma GCC visibility pop

#endif /* SC_SEAM_H */
