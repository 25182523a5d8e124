/* SPDX-License-Identifier: MIT */
/* arena.c — thread-local arenas: how a thread gets one (binding, adoption,
 * creation), its current pages, where a free of a block the fast path did
 * not take goes, and handing arenas on when their thread exits. The slow
 * allocation path is refill.c; other threads' frees are remote.c. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core/alloc.h"
#include "core/page_queue.h"
#include "core/purge.h"
#include "core/hooks.h"
#include "core/tiers.h"
#include "core/snapshot.h"

sc_tls sc_thread_t sc__thread = {
    .current = {[0 ... SC_BUCKETS - 1] = &sc__empty_page},
    .sample_left = INT64_MAX,
    .self = SC_NOT_AN_ARENA,
    .arena = NULL,
};

/* current[c] points here when a class has no page: it has no free block and
 * no room to carve, so the fast path falls through to the slow path. */
/* Its list end is its own (sc__list_end: carve_end is one page above 0),
 * and so is nothing else: start_mask is odd, like every page's. */
sc_page_t sc__empty_page = {.free = (sc_block_t *)(SC_PAGE_SIZE - SC_LIST_END_BACK),
                            .carve_next = (uint8_t *)SC_PAGE_SIZE,
                            .carve_end = (uint8_t *)SC_PAGE_SIZE,
                            .start_mask = 1,
                            .size8 = 2};

_Atomic uint64_t sc__orphan_remote_frees[SC_CLASSES];

/* The arena registry: every arena ever made (arenas are reused, never
 * unmapped) and the stack of abandoned ones awaiting a new thread. */
static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;
static sc_arena_t *arenas_all;
static sc_arena_t *arenas_abandoned;
static uint64_t arenas_created;
static uint64_t arenas_live;
static uint64_t arenas_adopted;

static pthread_key_t thread_exit_key;
static _Atomic int thread_exit_key_state; /* 0 none, 1 creating, 2 ready */

/* ---- the current page ----------------------------------------------------- */
void sc__thread_set_class(sc_thread_t *t, unsigned c, sc_page_t *page) {
  /* Granules of class c: 0..1 for 16 B, then 2^(c-1)+1 .. 2^c. */
  size_t first = c == 0 ? 0 : ((size_t)1 << (c - 1)) + 1, last = (size_t)1 << c;
  for (size_t g = first; g <= last; g++) t->current[g] = page;
}

void sc__arena_refresh_current(sc_arena_t *a, unsigned c) {
  sc_page_t *old = a->current[c];
  /* An arena without a thread allocates from nothing (release_heads). */
  sc_page_t *head = a->owned ? a->queues[c].first : NULL;
  sc_assert(head == NULL || head->queued);
  if (head == old) {
    if (head != NULL && a->purge.armed) head->used |= SC_USED_SLOW;
    return;
  }
  a->current[c] = head ? head : &sc__empty_page;
  if (a->thread != NULL) sc__thread_set_class(a->thread, c, a->current[c]);
  if (head != NULL) {
    head->used |= SC_USED_PIN;
    if (a->purge.armed) head->used |= SC_USED_SLOW;
  }
  if (old != &sc__empty_page && old->arena == a && (old->used & SC_USED_PIN)) {
    /* The old head is no longer pinned; if it is queued (it still has
     * room) it carries no trap, and it may have been empty all along. */
    old->used &= ~SC_USED_PIN;
    if (old->queued) {
      old->used &= ~SC_USED_SLOW;
      if (old->used == 0) sc__purge_page_emptied(a, old);
    }
  }
}

/* ---- arenas and threads ------------------------------------------------- */

/* Set once this thread's arena was handed on at thread exit. */
static sc_tls bool thread_exited;

/* The crash report wants an alternate signal stack on every thread that
 * allocates (snapshot.h): each gets one when it binds its first arena. */
static _Atomic bool altstacks_wanted;

void sc__altstacks_want(void) {
  atomic_store_explicit(&altstacks_wanted, true, memory_order_relaxed);
  sc__os_altstack_ensure(); /* the calling thread */
}

/** Point the calling thread's fast-path slots at a's pages (or, without
 * an arena, at nothing: every malloc is slow), its `self` at a unless a
 * feature sees every local free, and start its countdown (seam.c). */
static void thread_bind(sc_arena_t *a) {
  sc_thread_t *t = &sc__thread;
  t->arena = a;
  t->self = SC_NOT_AN_ARENA;
  t->sample_left = INT64_MAX;
  for (size_t g = 0; g < SC_BUCKETS; g++)
    t->current[g] = a != NULL ? a->current[sc__class_of_granule[g]] : &sc__empty_page;
  if (a == NULL) return;
  a->bound = 1;
  a->thread = t;
  /* A feature that sees every free: self is one past the arena, which no
   * page's owner equals (the features' free finds the arena from it). */
  t->self = (sc__features & SC_FEATURES_SEE_FREES) ? (sc_arena_t *)((uintptr_t)a + 1) : a;
  t->sample_left = sc__ops.lifecycle.countdown_start();
  sc__sys_top_bind(a);
}

/** An arena without a thread allocates from no page: its heads lose their
 * pin, so that blocks drained into them (by live threads tending it) show
 * when a page empties, like any other page's. */
static void release_heads(sc_arena_t *a) {
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    sc_page_t *head = a->current[c];
    a->current[c] = &sc__empty_page;
    if (head == &sc__empty_page) continue;
    head->used &= ~(SC_USED_PIN | SC_USED_SLOW);
    if (head->used == 0 && head->queued) sc__purge_page_emptied(a, head);
  }
}

/* thread_exit_key's value for a thread with no arena that used system
 * blocks (sc__arena_watch_exit); a thread that binds an arena later
 * replaces it with the arena. */
static char system_only_thread;

/** Thread exit: hand the arena on (blocks still in use stay valid: their
 * frees reach it through its remote list, drained by the next owner). */
static void arena_abandon(void *arg) {
  if (arg == &system_only_thread) {
    if (sc__thread.arena == NULL && !thread_exited) sc__sys_top_thread_exit(NULL);
    thread_exited = true;
    return;
  }
  sc_arena_t *a = arg;
  if (sc__thread.arena != a) return; /* stale value: a is not this thread's */
  sc_validate_arena(a, true);        /* every page, before it is handed on */
  if (sc__features != 0) sc__ops.lifecycle.thread_exit(a);
  if (!thread_exited) sc__sys_top_thread_exit(a); /* not again for an arena borrowed after */
  thread_bind(NULL);
  a->thread = NULL;
  a->bound = 0;
  thread_exited = true;
  sc__os_altstack_release();
  sc__arena_flush_remote(a);
  sc__purge_on_abandon(a);
  release_heads(a);
  pthread_mutex_lock(&arenas_lock);
  /* Relaxed atomic stores (plain moves): a remote free reads `owned`
   * without the lock (purge.h: sc__purge_remote_list_started). */
  __atomic_store_n(&a->owned, 0, __ATOMIC_RELAXED);
  a->next_abandoned = arenas_abandoned;
  arenas_abandoned = a;
  arenas_live--;
  pthread_mutex_unlock(&arenas_lock);
  /* A reclaim walk may have held its list when the purge above looked, and
   * handed it back while a was still owned: live threads must tend it. The
   * fence orders the store of `owned` before this look (purge.h:
   * sc__purge_remote_list_started, the pushers' side). */
  atomic_thread_fence(memory_order_seq_cst);
  if (sc__arena_has_returns(a)) sc__purge_hint_abandoned();
}

/** A free of another arena's block, or of no block at all. */
static sc_noinline void free_not_ours(void *p, sc_page_t *page) {
  sc_arena_t *me = sc__thread.arena;
  uintptr_t u = (uintptr_t)p;
  sc_segment_t *seg = sc__segment_of(u);
  if (sc_likely(me != NULL || !thread_exited)) {
    sc__free_remote(u, seg, page);
    return;
  }
  /* The thread already handed its arena on: glibc frees per-thread buffers
   * (strerror, dlerror) after every TSD destructor ran. Borrow an arena for
   * this free only; keeping it would leak one arena per exiting thread. */
  sc__free_remote(u, seg, page);
  sc_arena_t *a = sc__thread.arena;
  if (a == NULL) return;
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) == 2)
    pthread_setspecific(thread_exit_key, NULL);
  arena_abandon(a);
}

void sc__free_other(void *p, sc_page_t *page) {
  /* Our own block: a feature that sees every free sent it here. */
  sc_arena_t *me = sc__thread.arena;
  if (page->arena == me && sc_likely(me != NULL)) {
    if (sc__features != 0)
      sc__tier_free_local(me, page, p);
    else
      sc__page_free(page, p);
    return;
  }
  if (sc__features != 0 && sc__ops.block.keep_freed(p, page, false)) return;
  free_not_ours(p, page);
}

static void ensure_thread_exit_key(void) {
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) == 2) return;
  pthread_mutex_lock(&arenas_lock);
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_relaxed) == 0) {
    /* glibc's pthread_key_create does not allocate. */
    if (pthread_key_create(&thread_exit_key, arena_abandon) == 0)
      atomic_store_explicit(&thread_exit_key_state, 2, memory_order_release);
  }
  pthread_mutex_unlock(&arenas_lock);
}

bool sc__thread_has_exited(void) { return thread_exited; }

void sc__arena_watch_exit(void) {
  if (sc__thread.arena != NULL || thread_exited) return;
  ensure_thread_exit_key();
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) != 2 ||
      pthread_getspecific(thread_exit_key) != NULL)
    return;
  pthread_setspecific(thread_exit_key, &system_only_thread);
  /* For a key past glibc's first 32, setspecific allocates its second
   * level; that malloc may have bound an arena (and set the key to it)
   * before the store above: the arena is the one the exit must see. */
  if (sc__thread.arena != NULL) pthread_setspecific(thread_exit_key, sc__thread.arena);
}

/** A zeroed arena from the OS, its classes pointing at the empty page. */
static sc_arena_t *arena_create(void) {
  size_t size = (sizeof(sc_arena_t) + 4095) & ~(size_t)4095;
  sc_arena_t *a = sc__os_map_aligned(size, 4096);
  if (a == NULL) return NULL;
  for (unsigned c = 0; c < SC_CLASSES; c++) a->current[c] = &sc__empty_page;
  return a;
}

sc_arena_t *sc__arena_get(void) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) return a;
  sc__init();
  ensure_thread_exit_key();
  /* 1. Adopt an arena whose thread exited, with all its pages and blocks. */
  pthread_mutex_lock(&arenas_lock);
  a = arenas_abandoned;
  sc_arena_t **link = &arenas_abandoned;
  /* A feature may keep an arena for its exited thread a while (tags). */
  while (a != NULL && sc__features != 0 && !sc__ops.lifecycle.adoptable(a)) {
    link = &a->next_abandoned;
    a = a->next_abandoned;
  }
  if (a != NULL) {
    *link = a->next_abandoned;
    a->adopted_count++;
    arenas_adopted++;
    __atomic_store_n(&a->owned, 1, __ATOMIC_RELAXED);
    arenas_live++;
  }
  pthread_mutex_unlock(&arenas_lock);
  /* An adopted arena's classes allocate from their queue heads again. */
  if (a != NULL)
    for (unsigned c = 0; c < SC_CLASSES; c++) sc__arena_refresh_current(a, c);
  /* 2. Else map a new one (outside the lock) and register it. */
  if (a == NULL) {
    a = arena_create();
    if (a == NULL) return NULL;
    pthread_mutex_lock(&arenas_lock);
    a->id = arenas_created++;
    a->next_all = arenas_all;
    /* Release: an unlocked walk (the signal dump) that sees a sees its link. */
    __atomic_store_n(&arenas_all, a, __ATOMIC_RELEASE);
    __atomic_store_n(&a->owned, 1, __ATOMIC_RELAXED);
    arenas_live++;
    pthread_mutex_unlock(&arenas_lock);
  }
  thread_bind(a);
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) == 2)
    pthread_setspecific(thread_exit_key, a);
  /* Not for an arena borrowed after the thread's exit (one free's worth). */
  if (atomic_load_explicit(&altstacks_wanted, memory_order_relaxed) && !thread_exited)
    sc__os_altstack_ensure();
  return a;
}

void sc__arenas_foreach(void (*fn)(sc_arena_t *, void *), void *ctx) {
  pthread_mutex_lock(&arenas_lock);
  for (sc_arena_t *a = arenas_all; a != NULL; a = a->next_all) fn(a, ctx);
  pthread_mutex_unlock(&arenas_lock);
}

bool sc__arenas_try_foreach(void (*fn)(sc_arena_t *, void *), void *ctx) {
  if (pthread_mutex_trylock(&arenas_lock) != 0) return false;
  for (sc_arena_t *a = arenas_all; a != NULL; a = a->next_all) fn(a, ctx);
  pthread_mutex_unlock(&arenas_lock);
  return true;
}

void sc__arena_counts(uint64_t *created, uint64_t *live, uint64_t *adopted) {
  pthread_mutex_lock(&arenas_lock);
  *created = arenas_created;
  *live = arenas_live;
  *adopted = arenas_adopted;
  pthread_mutex_unlock(&arenas_lock);
}

void sc__arenas_foreach_unlocked(void (*fn)(sc_arena_t *, void *), void *ctx) {
  sc_arena_t *a = __atomic_load_n(&arenas_all, __ATOMIC_ACQUIRE);
  for (; a != NULL; a = __atomic_load_n(&a->next_all, __ATOMIC_RELAXED)) fn(a, ctx);
}

void sc__arena_counts_unlocked(uint64_t *created, uint64_t *live, uint64_t *adopted) {
  *created = __atomic_load_n(&arenas_created, __ATOMIC_RELAXED);
  *live = __atomic_load_n(&arenas_live, __ATOMIC_RELAXED);
  *adopted = __atomic_load_n(&arenas_adopted, __ATOMIC_RELAXED);
}

/* ---- fork ---------------------------------------------------------------- */

/** Take the registry lock for fork. The forking thread gets its arena first:
 * prepare handlers registered before ours run after it, under the lock, and
 * one that allocates (or frees) from an arena-less thread would otherwise
 * wait for the lock in sc__arena_get forever. */
void sc__arena_fork_prepare(void) {
  (void)sc__arena_get();
  pthread_mutex_lock(&arenas_lock);
  sc__remote_fork_prepare(); /* a walk holds blocks of some arena's list */
}
void sc__arena_fork_parent(void) {
  sc__remote_fork_parent();
  pthread_mutex_unlock(&arenas_lock);
}

/* In the child only the forking thread exists, and it holds the registry
 * lock (taken by the prepare handler): it lets it go, as the parent does
 * (re-initialising a locked mutex is undefined). Other threads' arenas may
 * be mid-update, so they are left alone (owned by no one, never adopted). */
void sc__arena_fork_child(void) {
  pthread_mutex_unlock(&arenas_lock);
  arenas_live = sc__thread.arena != NULL ? 1 : 0;
  sc__remote_fork_child();
  sc__segment_fork_child();
}
