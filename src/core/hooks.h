/* SPDX-License-Identifier: MIT */
/* hooks.h — the one table through which optional features plug into the
 * core. The core owns the table (hooks.c): it starts as no-ops, and a
 * feature layer linked with the core fills it when the process starts
 * (sc__init → sc__hooks_start). The core calls nothing else above it
 * (scripts/check-layers.py checks the objects): core/ and util/ link and
 * run alone (tests/test_core_alone.c), with every feature off.
 *
 * A feature layer hands its table over by defining sc__feature_table,
 * which the core references weakly: linked with the features it is theirs,
 * linked alone it is absent (address 0) and the no-ops stay. Nothing runs
 * for it: the table is there before any constructor, however early the
 * first malloc. That weak reference is the one name of a higher layer the
 * core may mention (scripts/check-layers.py). sc__hooks_register does the
 * same at run time (members left NULL keep the core's no-op).
 *
 * The core calls a member only while a feature is on (sc__features != 0),
 * except lifecycle.decide, .countdown_start, .fork and .stats. The fast
 * paths call none: they carry one test each that all features share
 * (docs/architecture.md):
 *
 * - malloc counts down the thread's `sample_left` and, when it runs out,
 *   jumps to sc__alloc_noted_fn. Features that see every malloc keep it
 *   out (every malloc arrives there); sampled features set it to the calls
 *   until their next sample; with nothing on it never runs out.
 * - free compares the page's owner with the thread's `self`, which the
 *   features that see every free set to no arena: their frees leave
 *   through sc__free_other_fn. A block a sampled feature must see freed is
 *   SC_MAP_SAMPLED in its page's map: the free's map check sends it out of
 *   line (block.on_free_sampled), with no test of its own.
 *
 * lifecycle.decide sets sc__features and points the two targets at the
 * features' own paths (the exact tier's inline accounting, the sampled
 * path, the general path).
 *
 * The two targets and the table share one page of their own,
 * sc__hooks_page, read-only once sc__init has decided the features (one
 * write to a writable pointer the fast paths jump through would hand a
 * heap overflow the next malloc or free: glibc dropped __malloc_hook for
 * that). The library writes it only between sc__hooks_write_begin and
 * sc__hooks_write_end (docs/hardening.md). */
#ifndef SC_HOOKS_H
#define SC_HOOKS_H

#include <pthread.h>

#include "core/feature_bits.h"
#include "core/internal.h"

struct sc_stats;
struct mallinfo2;

#pragma GCC visibility push(hidden)

/** The exact tier's figures of one class, summed over arenas (stats.c). */
typedef struct sc_exact_sums_s {
  uint64_t live, peak;                    /* blocks, each arena's owner view */
  uint64_t req_total, req_live, req_peak; /* requested bytes */
  uint64_t hist[SC_BUCKETS];              /* requests by granule */
} sc_exact_sums_t;

/* ---- the table ------------------------------------------------------------- */

/** Events on the class blocks of the segments. */
typedef struct sc_block_hooks_s {
  /** A malloc the fast path did not tail-jump to (a thread's first, an
   * aligned one) is about to be served: the features' per-call state (the
   * caller's tag, found by unwinding). */
  void (*before_alloc)(void);
  /** Block b of page (class c) was handed out by its owner a for n bytes
   * on the general path (core/tiers.c): the features' accounting. */
  void (*on_alloc)(sc_arena_t *a, sc_page_t *page, void *b, unsigned c, size_t n);
  /** That block was a fresh carve of class c (the steady-state check). */
  void (*on_fresh)(unsigned c);
  /** The owner is about to take a block from page (the general path, and
   * refills while a feature is on). */
  void (*before_take)(const sc_page_t *page);
  /** free() of block p of page, by its owner (`local`) or another arena's
   * thread, before anything else: true when a feature keeps the block (the
   * checking mode's quarantine). */
  bool (*keep_freed)(void *p, sc_page_t *page, bool local);
  /** free of block p of page by its owner a while a feature that sees
   * every free is on (general path): the features' accounting, before the
   * core puts the block back on its list. */
  void (*on_free_local)(sc_arena_t *a, sc_page_t *page, void *p);
  /** free of block p of another arena's page by arena me (NULL: a thread
   * without one), before it goes on the owner's remote list. */
  void (*on_free_remote)(sc_arena_t *me, sc_page_t *page, uintptr_t p);
  /** A block marked SC_MAP_SAMPLED is being freed (its map byte is already
   * FREE): its feature forgets it. */
  void (*on_free_sampled)(void *p);
  /** Block p of a's page, freed by another thread, was drained back into
   * its page, while exact statistics are on: its accounting. */
  void (*on_drain)(sc_arena_t *a, const sc_page_t *page, uintptr_t p);
  /** malloc_usable_size() of block p whose class size is `size`. */
  size_t (*usable_size)(const void *p, size_t size);
} sc_block_hooks_t;

/** The sampled features (sites, guard pages): their countdown is theirs;
 * the core's paths ask when a sample is due and let them serve it. A
 * `due` value is a set of SC_FEATURE_* bits, 0 for none. */
typedef struct sc_sample_hooks_s {
  /** Count one malloc of a path that sees every malloc against the
   * sampled features' own countdown: the features due now. */
  uint32_t (*tick)(void);
  /** The thread's countdown *left ran out: the features due; *left is
   * set to the calls until the next sample. */
  uint32_t (*fire)(int64_t *left);
  /** A block of a feature's own for a sample due (a guarded slot) for n
   * bytes of class c aligned to `align` (0: malloc's); NULL: none. */
  void *(*serve)(uint32_t due, unsigned c, size_t n, size_t align);
  /** Class block b of page was handed out for n bytes while samples were
   * due (the sites record it and mark it SC_MAP_SAMPLED). */
  void (*taken)(uint32_t due, sc_page_t *page, void *b, unsigned c, size_t n);
} sc_sample_hooks_t;

/** realloc() of a class block. */
typedef struct sc_realloc_hooks_s {
  /** p is live in the block map while a feature that may hold freed blocks
   * is on (SC_FEATURES_HOLD_FREED): true when it holds p (a realloc of a
   * freed block). */
  bool (*is_freed)(const void *p);
  /** p stays where it is for n bytes (a: the caller's arena, or NULL). */
  void (*resized)(sc_arena_t *a, void *p, size_t n);
  /** p moves: the calling thread's state the new block must carry (its
   * tag) is p's from enter until leave(the value enter returned). */
  unsigned (*enter)(const void *p);
  void (*leave)(unsigned saved);
} sc_realloc_hooks_t;

/** Blocks outside the segments that a feature made (the guard pool): each
 * is true when p is the feature's, which then did the call. */
typedef struct sc_foreign_hooks_s {
  bool (*owns)(const void *p);
  bool (*free)(void *p);
  bool (*realloc)(void *p, size_t n, void **out);
  bool (*usable_size)(const void *p, size_t *out);
} sc_foreign_hooks_t;

/** The system allocator's route (fallback.c). */
typedef struct sc_sys_hooks_s {
  /** Block p (NULL: the call failed) made for a request of n bytes. */
  void (*on_alloc)(void *p, size_t n);
  /** Block p is about to be freed; `info` is what the route's record held
   * for it (sys_record.h; 0: none), `bytes` its usable size. */
  void (*on_free)(void *p, uint32_t info, uint64_t bytes);
  /** The live bytes moved by delta on a thread of arena a (NULL: one
   * without), while exact statistics are on. */
  void (*on_live)(sc_arena_t *a, int64_t delta);
} sc_sys_hooks_t;

/** The process and its threads. */
typedef struct sc_lifecycle_hooks_s {
  /** Decide which features are on (sc__features) and point the fast
   * paths' targets at their paths; once, from sc__init, before any arena. */
  void (*decide)(void);
  /** The countdown a thread starts with when it binds an arena: 0 (every
   * malloc is seen), the calls until its first sample, or INT64_MAX. */
  int64_t (*countdown_start)(void);
  /** The thread of arena a is exiting (its arena is handed on next). */
  void (*thread_exit)(sc_arena_t *a);
  /** May abandoned arena a be adopted by a new thread (the arena lock is
   * held)? Tags count per thread: not while blocks of its thread live. */
  bool (*adoptable)(sc_arena_t *a);
  /** fork handlers: 0 prepare, 1 parent, 2 child. */
  void (*fork)(int phase);
  /** Add arena a's exact figures of every class into sums (relaxed loads:
   * its thread may be running); while exact statistics are on. */
  void (*stats_arena)(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]);
  /** The features' part of a snapshot, after the core's. */
  void (*stats)(struct sc_stats *out);
} sc_lifecycle_hooks_t;

typedef struct sc_feature_ops_s {
  sc_block_hooks_t block;
  sc_sample_hooks_t sample;
  sc_realloc_hooks_t realloc;
  sc_foreign_hooks_t foreign;
  sc_sys_hooks_t sys;
  sc_lifecycle_hooks_t lifecycle;
} sc_feature_ops_t;

/* ---- the page the fast paths jump through ----------------------------------- */

/** A function pointer of any type, stored and cast back by its user. */
typedef void (*sc_any_fn_t)(void);

/** The bytes the page struct is aligned to and fills a multiple of: the
 * x86-64 page. On a system whose pages are larger, the page is never made
 * read-only (hooks.c: a larger protection would take its neighbours). */
#define SC_HOOKS_PAGE_SIZE 4096

/** glibc's allocator functions, the system route's (fallback.c). */
typedef struct sc_libc_alloc_s {
  void *(*malloc_fn)(size_t n);
  void *(*calloc_fn)(size_t count, size_t size);
  void *(*realloc_fn)(void *p, size_t n);
  void *(*memalign_fn)(size_t align, size_t n);
  void (*free_fn)(void *p);
} sc_libc_alloc_t;
/* Its first entries (fallback.c): each binds the table, then calls glibc's. */
void *sc__libc_first_malloc(size_t n);
void *sc__libc_first_calloc(size_t count, size_t size);
void *sc__libc_first_realloc(void *p, size_t n);
void *sc__libc_first_memalign(size_t align, size_t n);
void sc__libc_first_free(void *p);

/** Every function pointer the allocator's paths call through, alone in
 * their page(s): nothing else shares them, so that they can be read-only
 * for the life of the process but for the instants the library writes
 * them. The alignment makes sizeof a multiple of SC_HOOKS_PAGE_SIZE. */
typedef struct sc_hooks_page_s {
  /** Where a malloc goes when the thread's countdown runs out: the
   * features' allocation path for the features on (page is the thread's
   * current page of granule g). With none on (sc__alloc_plain), the slow
   * path. */
  _Alignas(SC_HOOKS_PAGE_SIZE) void *(*alloc_noted_fn)(size_t n, size_t g, sc_page_t *page);
  /** Where a free of a class block goes when the page's owner is not the
   * thread's `self`: sc__free_other_any (the default), or the exact tier's
   * own path; self is the thread's. */
  void (*free_other_fn)(void *p, sc_page_t *page, sc_arena_t *self);
  /** The table the core calls: its no-ops, or the features'. */
  sc_feature_ops_t ops;
  /** The page is read-only (sc__hooks_seal succeeded): a write must make
   * it writable first. In the page itself, so that it cannot be cleared
   * either. */
  bool sealed;
  /** Bound after the decision, each between sc__hooks_write_begin and
   * _end: glibc's malloc_usable_size and malloc_trim (fallback.c,
   * sys_trim.c; NULL: not found), reached from realloc, malloc_usable_size
   * and free's paced trim; glibc's mallinfo2 (below); and libgcc's
   * unwinder (features/unwinder.h keeps their types and casts them back;
   * NULL until bound), reached from a sampled malloc. */
  size_t (*sys_usable_size_fn)(void *);
  int (*sys_trim_fn)(size_t);
  /** glibc's mallinfo2 (fallback.c; NULL: glibc before 2.33, or not
   * bound yet), for the whole heap's figures (mallinfo.c). */
  struct mallinfo2 (*sys_mallinfo2_fn)(void);
  /** glibc's own allocator (fallback.c: its system route), found in
   * libc.so.6 by libc_syms.c since the library defines the __libc_* names
   * too; bound at the route's first call (its first entries do it). */
  sc_libc_alloc_t libc;
  /** The report's last words at the library's aborts and at exit
   * (snapshot.h: sc_last_words_fn; harden.c), registered at startup. */
  sc_any_fn_t last_words_fn;
  sc_any_fn_t unwind_backtrace_fn, unwind_get_ip_info_fn, unwind_find_fde_fn;
} sc_hooks_page_t;

_Static_assert(sizeof(sc_hooks_page_t) == SC_HOOKS_PAGE_SIZE,
               "every pointer of the hooks' page lies in its one page");
/** The one instance (hooks.c), in .data (never .data.rel.ro: with -z now
 * the loader makes RELRO read-only before sc__init writes the features'
 * table in). */
extern sc_hooks_page_t sc__hooks_page;

/* The names the paths use: plain members, so the fast paths still load
 * and jump through one absolute address (objdump: jmp *mem). */
#define sc__alloc_noted_fn (sc__hooks_page.alloc_noted_fn)
#define sc__free_other_fn (sc__hooks_page.free_other_fn)
#define sc__ops (sc__hooks_page.ops)

/** Make the page writable for a write of the library's own, once sealed:
 * writers are serialized by the page's lock, held until
 * sc__hooks_write_end (no two threads unprotect and reprotect under each
 * other; fork waits for it). The write between must take no lock and
 * call nothing that could write the page. Never from a signal handler.
 * A page that cannot be made writable aborts: the features' state would
 * no longer match their paths. */
void sc__hooks_write_begin(void);
/** Read-only again (once sealed; a failure warns once and leaves it
 * writable: protection lost, nothing else), then the lock is released. */
void sc__hooks_write_end(void);
/** From sc__init, once the features' decision installed their paths: the
 * page is read-only from now on (a failure warns once). */
void sc__hooks_seal(void);
/** fork handlers (init.c): 0 takes the page's lock (a fork never copies
 * it writable mid-write), 1 and 2 release it. */
void sc__hooks_fork(int phase);

/** Take table t's members (a NULL member keeps the current one). From
 * sc__hooks_start, before the page is sealed (any later call writes it
 * through sc__hooks_write_begin too). */
void sc__hooks_register(const sc_feature_ops_t *t);
/** From sc__init: register sc__feature_table when linked, then call
 * lifecycle.decide. */
void sc__hooks_start(void);

/** The features' table, when a feature layer is linked in (weak: 0 when
 * the core is linked alone). */
extern const sc_feature_ops_t sc__feature_table __attribute__((weak));

#pragma GCC visibility pop

/** Lock m around fork, for the lifecycle.fork phase: taken before (0),
 * let go in the parent (1), made anew in the child (2). */
static inline void sc__lock_fork(pthread_mutex_t *m, int phase) {
  if (phase == 0)
    pthread_mutex_lock(m);
  else if (phase == 1)
    pthread_mutex_unlock(m);
  else
    pthread_mutex_init(m, NULL);
}

#endif /* SC_HOOKS_H */
