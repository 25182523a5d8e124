/* SPDX-License-Identifier: MIT */
/* hooks.c — the core's feature table (hooks.h): its no-ops, which are what
 * the core does with every feature off, and how a feature layer's table
 * replaces them; the page that holds it with the fast paths' two targets,
 * and how that page is kept read-only. */
#include "core/hooks.h"

#include <malloc.h>
#include <pthread.h>

#include "core/tiers.h"
#include "util/os.h"
#include "util/startup.h"

/* ---- the no-ops ------------------------------------------------------------ */

static void none_before_alloc(void) {}
static void none_on_alloc(sc_arena_t *a, sc_page_t *page, void *b, unsigned c, size_t n) {
  (void)a, (void)page, (void)b, (void)c, (void)n;
}
static void none_on_fresh(unsigned c) { (void)c; }
static void none_before_take(const sc_page_t *page) { (void)page; }
static bool none_keep_freed(void *p, sc_page_t *page, bool local) {
  return (void)p, (void)page, (void)local, false;
}
static void none_on_free_local(sc_arena_t *a, sc_page_t *page, void *p) {
  (void)a, (void)page, (void)p;
}
static void none_on_free_remote(sc_arena_t *me, sc_page_t *page, uintptr_t p) {
  (void)me, (void)page, (void)p;
}
static void none_on_free_sampled(void *p) { (void)p; }
static void none_on_drain(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  (void)a, (void)page, (void)p;
}
static size_t none_usable_size(const void *p, size_t size) { return (void)p, size; }
static uint32_t none_tick(void) { return 0; }
static uint32_t none_fire(int64_t *left) {
  *left = INT64_MAX;
  return 0;
}
static void *none_serve(uint32_t due, unsigned c, size_t n, size_t align) {
  return (void)due, (void)c, (void)n, (void)align, NULL;
}
static void none_taken(uint32_t due, sc_page_t *page, void *b, unsigned c, size_t n) {
  (void)due, (void)page, (void)b, (void)c, (void)n;
}
static bool none_is_freed(const void *p) { return (void)p, false; }
static void none_resized(sc_arena_t *a, void *p, size_t n) { (void)a, (void)p, (void)n; }
static unsigned none_enter(const void *p) { return (void)p, 0; }
static void none_leave(unsigned saved) { (void)saved; }
static bool none_owns(const void *p) { return (void)p, false; }
static bool none_free(void *p) { return (void)p, false; }
static bool none_realloc(void *p, size_t n, void **out) {
  return (void)p, (void)n, (void)out, false;
}
static bool none_foreign_usable(const void *p, size_t *out) { return (void)p, (void)out, false; }
static void none_sys_alloc(void *p, size_t n) { (void)p, (void)n; }
static void none_sys_free(void *p, uint32_t info, uint64_t bytes) {
  (void)p, (void)info, (void)bytes;
}
static void none_sys_live(sc_arena_t *a, int64_t delta) { (void)a, (void)delta; }
static void none_decide(void) {}
static int64_t none_countdown_start(void) { return INT64_MAX; }
static void none_thread_exit(sc_arena_t *a) { (void)a; }
static bool none_adoptable(sc_arena_t *a) { return (void)a, true; }
static void none_fork(int phase) { (void)phase; }
static void none_stats_arena(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]) {
  (void)a, (void)sums;
}
static void none_stats(struct sc_stats *out) { (void)out; }

sc_hooks_page_t sc__hooks_page = {
    .alloc_noted_fn = sc__alloc_plain,
    .free_other_fn = sc__free_other_any,
    .libc = {sc__libc_first_malloc, sc__libc_first_calloc, sc__libc_first_realloc,
             sc__libc_first_memalign, sc__libc_first_free},
#if defined(__SANITIZE_ADDRESS__)
    /* mk/sanitize.mk's ASan build: the system route is ASan's malloc, whose
     * blocks only its malloc_usable_size measures, from the start
     * (fallback.c). */
    .sys_usable_size_fn = malloc_usable_size,
#endif
    .ops =
        {
            .block = {.before_alloc = none_before_alloc,
                      .on_alloc = none_on_alloc,
                      .on_fresh = none_on_fresh,
                      .before_take = none_before_take,
                      .keep_freed = none_keep_freed,
                      .on_free_local = none_on_free_local,
                      .on_free_remote = none_on_free_remote,
                      .on_free_sampled = none_on_free_sampled,
                      .on_drain = none_on_drain,
                      .usable_size = none_usable_size},
            .sample =
                {.tick = none_tick, .fire = none_fire, .serve = none_serve, .taken = none_taken},
            .realloc = {.is_freed = none_is_freed,
                        .resized = none_resized,
                        .enter = none_enter,
                        .leave = none_leave},
            .foreign = {.owns = none_owns,
                        .free = none_free,
                        .realloc = none_realloc,
                        .usable_size = none_foreign_usable},
            .sys = {.on_alloc = none_sys_alloc, .on_free = none_sys_free, .on_live = none_sys_live},
            .lifecycle = {.decide = none_decide,
                          .countdown_start = none_countdown_start,
                          .thread_exit = none_thread_exit,
                          .adoptable = none_adoptable,
                          .fork = none_fork,
                          .stats_arena = none_stats_arena,
                          .stats = none_stats},
        },
};

/* ---- read-only but for the library's own writes -------------------------------
 * The page is made read-only by sc__hooks_seal (sc__init, once the
 * features' decision installed their paths); each later write (a feature
 * turned on at run time: sc_tag, sc_stats_enable_exact, sc_option_set)
 * makes it writable under the lock and read-only again. Writes happen a
 * handful of times in a run: two mprotect calls each. */

static pthread_mutex_t page_lock = PTHREAD_MUTEX_INITIALIZER;
static bool warned_protect; /* __atomic_exchange_n: one warning */

/** Can the page be protected alone? Not where the system's pages are
 * larger than the struct's alignment: that would take its neighbours. */
static bool page_fits(void) { return sc__os_page_size() <= SC_HOOKS_PAGE_SIZE; }

static void warn_protect(void) {
  if (!__atomic_exchange_n(&warned_protect, true, __ATOMIC_RELAXED))
    sc__warn(
        "could not make the allocator's function pointers read-only (mprotect failed): "
        "they stay writable");
}

void sc__hooks_write_begin(void) {
  pthread_mutex_lock(&page_lock);
  if (sc__hooks_page.sealed && !sc__os_protect_ro(&sc__hooks_page, sizeof(sc__hooks_page), true))
    sc__abort_with_report(
        "could not make the allocator's function pointers writable to turn a feature on "
        "(mprotect failed)");
}

void sc__hooks_write_end(void) {
  if (sc__hooks_page.sealed && !sc__os_protect_ro(&sc__hooks_page, sizeof(sc__hooks_page), false))
    warn_protect();
  pthread_mutex_unlock(&page_lock);
}

sc_startup void sc__hooks_seal(void) {
  if (!page_fits()) return;
  pthread_mutex_lock(&page_lock);
  if (!sc__hooks_page.sealed) {
    sc__hooks_page.sealed = true; /* written while the page is still writable */
    if (!sc__os_protect_ro(&sc__hooks_page, sizeof(sc__hooks_page), false)) {
      sc__hooks_page.sealed = false;
      warn_protect();
    }
  }
  pthread_mutex_unlock(&page_lock);
}

void sc__hooks_fork(int phase) {
  if (phase == 0)
    pthread_mutex_lock(&page_lock);
  else
    pthread_mutex_unlock(&page_lock);
}

/* ---- registration ------------------------------------------------------------ */

sc_startup void sc__hooks_register(const sc_feature_ops_t *t) {
  sc__hooks_write_begin();
#define TAKE(m) \
  if (t->m != NULL) sc__ops.m = t->m
  TAKE(block.before_alloc);
  TAKE(block.on_alloc);
  TAKE(block.on_fresh);
  TAKE(block.before_take);
  TAKE(block.keep_freed);
  TAKE(block.on_free_local);
  TAKE(block.on_free_remote);
  TAKE(block.on_free_sampled);
  TAKE(block.on_drain);
  TAKE(block.usable_size);
  TAKE(sample.tick);
  TAKE(sample.fire);
  TAKE(sample.serve);
  TAKE(sample.taken);
  TAKE(realloc.is_freed);
  TAKE(realloc.resized);
  TAKE(realloc.enter);
  TAKE(realloc.leave);
  TAKE(foreign.owns);
  TAKE(foreign.free);
  TAKE(foreign.realloc);
  TAKE(foreign.usable_size);
  TAKE(sys.on_alloc);
  TAKE(sys.on_free);
  TAKE(sys.on_live);
  TAKE(lifecycle.decide);
  TAKE(lifecycle.countdown_start);
  TAKE(lifecycle.thread_exit);
  TAKE(lifecycle.adoptable);
  TAKE(lifecycle.fork);
  TAKE(lifecycle.stats_arena);
  TAKE(lifecycle.stats);
#undef TAKE
  sc__hooks_write_end();
}

sc_startup void sc__hooks_start(void) {
  if (&sc__feature_table != NULL) sc__hooks_register(&sc__feature_table);
  sc__ops.lifecycle.decide();
}
