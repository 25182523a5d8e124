/* SPDX-License-Identifier: MIT */
/* arena.c — thread-local arenas: how a thread gets one, the allocation slow
 * path (drain remote frees, next page, new page), what a free does when the
 * fast path cannot finish it (full, trapped and emptied pages; other
 * threads' blocks), and handing arenas on when their thread exits. */
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
 * and so is nothing else: block_mask is odd, like every page's. */
sc_page_t sc__empty_page = {.free = (sc_block_t *)1,
                            .carve_next = (uint8_t *)SC_PAGE_SIZE,
                            .carve_end = (uint8_t *)SC_PAGE_SIZE,
                            .block_mask = 1};

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

/* ---- class queues and the current page ------------------------------------ */

/* A page is `queued` while linked in its class's queue. */
static void queue_remove(sc_page_queue_t *q, sc_page_t *page) {
  sc_assert(page->queued);
  sc__pq_remove(q, page);
  page->queued = 0;
}

static void queue_push_back(sc_page_queue_t *q, sc_page_t *page) {
  sc_assert(!page->queued);
  sc__pq_push_back(q, page);
  page->queued = 1;
}

static void queue_push_front(sc_page_queue_t *q, sc_page_t *page) {
  sc_assert(!page->queued);
  sc__pq_push_front(q, page);
  page->queued = 1;
}

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

/* ---- pages -------------------------------------------------------------- */

/** Prepare `page` of `seg` to serve class c, all of it to be carved. */
static void page_init(sc_arena_t *a, sc_segment_t *seg, sc_page_t *page, unsigned c) {
  sc_assert(page->arena == NULL && !page->queued && page->idle_since_ns == 0);
  unsigned shift = c + SC_MIN_SHIFT;
  uint8_t *start = sc__page_start(page);
  page->used = 0;
  page->carve_next = start;
  page->carve_end = start + SC_PAGE_SIZE;
  page->key = sc__page_key_new(page);
  page->free = sc__list_end(page);
  page->arena = a;
  page->allocs = 0;
  page->map = sc__segment_map_take(seg, page->index, c); /* all FREE */
  page->fresh_end = start;
  page->block_mask = (uint16_t)((1u << shift) - 1);
  page->class_idx = (uint8_t)c;
  page->shift = (uint8_t)shift;
  page->shared_map = page->map;
  page->shared_carved = 0;
  page->shared_mask = page->block_mask;
  page->shared_shift = (uint8_t)shift;
  page->shared_class = (uint8_t)c;
  page->state = SC_PAGE_ACTIVE;
  seg->pages_active++;
  a->counts[c].pages++;
  if (sc_unlikely(sc__random_placement)) sc__page_shuffle(page);
}

void sc__page_shuffle(sc_page_t *page) {
  if (sc__features & SC_FEATURE_CHECK) return; /* switched on since: see init.c */
  uintptr_t base = (uintptr_t)sc__page_start(page);
  unsigned shift = page->shift;
  size_t n = SC_PAGE_SIZE >> shift;
  /* Fisher-Yates over the block indices, kept in each block's second word
   * (every class has two), then the list linked through the first. */
  for (size_t i = 0; i < n; i++) ((sc_block_t *)(base + (i << shift)))->key = i;
  uint64_t x = sc__page_key_new(page) | 1;
  for (size_t i = n - 1; i > 0; i--) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27; /* xorshift64 */
    size_t j = (size_t)(((x * 0x2545F4914F6CDD1Dull) >> 32) * (i + 1) >> 32);
    sc_block_t *bi = (sc_block_t *)(base + (i << shift)), *bj = (sc_block_t *)(base + (j << shift));
    uintptr_t t = bi->key;
    bi->key = bj->key;
    bj->key = t;
  }
  sc_block_t *next = sc__list_end(page);
  for (size_t k = n; k-- > 0;) {
    sc_block_t *b = (sc_block_t *)(base + (((sc_block_t *)(base + (k << shift)))->key << shift));
    b->next = sc__encode(next, b, page);
    next = b;
  }
  for (size_t i = 0; i < n; i++) ((sc_block_t *)(base + (i << shift)))->key = 0;
  page->free = next;
  page->carve_next = page->carve_end;
  if (page->carve_end > page->fresh_end) sc__page_fresh_mark(page, page->carve_end);
}

/** A page for class c, to be carved from its start: an empty one of c
 * waiting to be purged, else an idle or purged page to re-initialise
 * (purge.c), else the next unused page of the newest segment, else a page
 * of a new segment. NULL when the OS refuses memory. */
static sc_page_t *page_new(sc_arena_t *a, unsigned c) {
  sc_page_t *page = sc__purge_idle_take(a, c);
  if (page != NULL) return page;
  page = sc__purge_recycle(a);
  sc_segment_t *seg;
  if (page != NULL) {
    seg = sc__segment_of((uintptr_t)page);
  } else {
    seg = a->segments;
    if (seg == NULL || seg->next_unused == SC_PAGES_PER_SEGMENT) {
      seg = sc__segment_new(a);
      if (seg == NULL) return NULL;
      seg->next = a->segments;
      __atomic_store_n(&a->segments, seg, __ATOMIC_RELEASE); /* walkers (stats) */
    }
    page = &seg->pages[seg->next_unused++];
  }
  page_init(a, seg, page, c);
  return page;
}

/* ---- after a free ----------------------------------------------------------- */

void sc__page_after_free(sc_page_t *page) {
  sc_arena_t *a = page->arena;
  unsigned c = page->class_idx;
  sc_assert(a != NULL && page->state == SC_PAGE_ACTIVE);
  if (page->used & SC_USED_SLOW) {
    if (page->queued) { /* a purge trap on the class head (purge.c) */
      sc__purge_poll(a);
      sc_validate_page_if_active(page);
      return;
    }
    /* The page was full and out of its queue: it has room again. */
    page->used &= ~SC_USED_SLOW;
    queue_push_back(&a->queues[c], page);
    if (a->current[c] == &sc__empty_page) sc__arena_refresh_current(a, c);
    sc__purge_poll(a);
  }
  /* Every block came back. The class head is pinned, so this is another
   * page: it waits in the idle list until a class needs a page or the
   * purge delay passes. */
  if (page->used == 0 && page->queued) sc__purge_page_emptied(a, page);
  sc_validate_page_if_active(page); /* it changed lists: the arena's too */
  sc_validate_arena(a, false);
}

void sc__page_free_marked(void *p, sc_page_t *page) {
  uintptr_t u = (uintptr_t)p;
  uint8_t *m = sc__map_entry(page->map, u, page->shift);
#if SC_HARDEN
  if ((u & page->block_mask) != 0) sc__fatal_invalid(p); /* inside a block: map untouched */
#endif
  uint8_t was = (uint8_t)(*m - 1); /* sc__page_put incremented it */
  if (sc_likely(was == SC_MAP_SAMPLED)) {
    *m = SC_MAP_FREE;
    sc__ops.block.on_free_sampled(p);
    sc_block_t *b = p;
    b->next = sc__encode(page->free, b, page);
    page->free = b;
    if ((int32_t)--page->used <= 0) sc__page_after_free(page);
    return;
  }
  *m = was;
  /* PENDING: another thread freed it, and it waits on our remote list. */
  if (was == SC_MAP_PENDING) sc__fatal_double(p, page);
  if (was != SC_MAP_FREE || u >= (uintptr_t)page->carve_next) sc__fatal_invalid(p);
  sc__fatal_double(p, page);
}

/* ---- remote frees ------------------------------------------------------- */

/** True when u is the start of a block handed out from a page of arena a:
 * what every link of a's remote list must decode to. */
static sc_always_inline bool remote_link_ok(const sc_arena_t *a, uintptr_t u) {
  if (!sc__segment_owned(u) || sc__segment_of(u)->arena != a) return false;
  const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  return page->arena == a && (u & page->block_mask) == 0 && u < (uintptr_t)page->carve_next;
}

/** Block p of page, drained from the remote list: it must be PENDING (one
 * remote free won its race); else the owner freed it too, or a forged
 * remote link led here, and it is a double free. Then it is FREE. */
static sc_always_inline void drain_mark_free(sc_page_t *page, uintptr_t p, unsigned class_size) {
  uint8_t *m = sc__map_entry(page->map, p, page->shift);
  if (sc_unlikely(__atomic_load_n(m, __ATOMIC_RELAXED) != SC_MAP_PENDING))
    sc__fatal_block("double free", (const void *)p, class_size);
  __atomic_store_n(m, SC_MAP_FREE, __ATOMIC_RELAXED);
}

/** Move the blocks of list head (other threads' frees) back to their pages
 * of arena a; `exact`: exact statistics see each (hooks.h). Written once,
 * compiled twice: the default tier's loop has no call in it. */
static sc_always_inline void drain_list(sc_arena_t *a, uintptr_t head, bool exact) {
  unsigned class_size = 0; /* class of the block whose link led to head */
  uintptr_t from = 0;      /* its page */
  while (head != 0) {
    /* Check a link before following it: a use-after-free write into a
     * block on this list must abort with a message, not fault. */
    if (sc_unlikely(!remote_link_ok(a, head))) sc__fatal_list(class_size, from);
    sc_block_t *b = (sc_block_t *)head;
    uintptr_t next = sc__remote_decode(b->next, b);
    sc_page_t *page = sc__page_of(sc__segment_of(head), head);
    sc_assert((page->used & SC_USED_COUNT) != 0);
    class_size = page->shared_mask + 1;
    from = head & ~(uintptr_t)(SC_PAGE_SIZE - 1);
    drain_mark_free(page, head, class_size);
    a->counts[page->class_idx].drained++;
    if (exact) sc__ops.block.on_drain(a, page, head);
    b->next = sc__encode(page->free, b, page);
    page->free = b;
    if ((int32_t)--page->used <= 0) sc__page_after_free(page);
    head = next;
    /* The end of a run of one page's blocks. */
    if (SC_DEBUG && (head == 0 || sc__page_of(sc__segment_of(head), head) != page))
      sc_validate_page_if_active(page);
  }
}

/** Move every block other threads freed into this arena back to its page. */
static void drain_remote(sc_arena_t *a) {
  uintptr_t head = atomic_exchange_explicit(&a->remote_free, 0, memory_order_acquire);
  if (sc_unlikely(sc__features & SC_FEATURE_EXACT))
    drain_list(a, head, true);
  else
    drain_list(a, head, false);
  sc_validate_arena(a, false);
}

/** Push the chain head..tail (linked with sc__encode) on owner's remote
 * list with one CAS. */
static void push_remote(sc_arena_t *owner, uintptr_t head, uintptr_t tail) {
  sc_block_t *last = (sc_block_t *)tail;
  uintptr_t old = atomic_load_explicit(&owner->remote_free, memory_order_relaxed);
  do {
    last->next = sc__remote_encode(old, last);
  } while (!atomic_compare_exchange_weak_explicit(&owner->remote_free, &old, head,
                                                  memory_order_release, memory_order_relaxed));
  if (sc_unlikely(old == 0)) sc__purge_remote_list_started(owner);
}

/** Check that p is the start of a block handed out from page, as a thread
 * other than the owner sees it (the shared line: geometry, and the
 * high-water mark of carving; a block between the owner's carve offset and
 * that mark is free in the map and is caught as a double free). */
static void check_shared(const sc_page_t *page, uintptr_t p) {
  uintptr_t offset = p & (SC_PAGE_SIZE - 1);
  if (sc_unlikely(page->state != SC_PAGE_ACTIVE || (offset & page->shared_mask) != 0 ||
                  offset >= page->shared_carved))
    sc__fatal_invalid((const void *)p);
}

/** Move block p of another thread's page from LIVE (or SAMPLED) to
 * PENDING in its map with one locked compare-and-swap (a byte of its own:
 * the owner's stores to its neighbours are never lost). Of two frees of one
 * block racing here, one wins; a block that was not live is a double free.
 * A local free racing with it is caught by the owner's drain (drain_mark_free).
 * A sampled block's feature sees it. */
static void map_free_remote(const sc_page_t *page, uintptr_t p) {
  uint8_t *m = sc__map_entry(page->shared_map, p, page->shared_shift);
  uint8_t v = SC_MAP_LIVE;
  if (sc_likely(__atomic_compare_exchange_n(m, &v, SC_MAP_PENDING, false, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)))
    return;
  if (v != SC_MAP_SAMPLED || !__atomic_compare_exchange_n(m, &v, SC_MAP_PENDING, false,
                                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    sc__fatal_block("double free", (const void *)p, page->shared_mask + 1);
  sc__ops.block.on_free_sampled((void *)p);
}

/** Free of block p (of seg/page) owned by another arena: push it on the
 * owner's remote list, counted in the freeing thread's arena. */
static void free_remote(uintptr_t p, sc_segment_t *seg, sc_page_t *page) {
  sc_block_t *b = (sc_block_t *)p;
  check_shared(page, p);
  sc_arena_t *me = sc__arena_get();
  if (sc_unlikely(me == seg->arena)) { /* we just adopted the owner */
    sc__free_inline(b);
    return;
  }
  sc_assert(page->arena != me || me == NULL);
  unsigned c = page->shared_class;
  map_free_remote(page, p);
  sc_arena_t *owner = seg->arena;
  if (sc_unlikely(me == NULL)) { /* no arena to batch in: hand over alone */
    atomic_fetch_add_explicit(&sc__orphan_remote_frees[c], 1, memory_order_relaxed);
    if (sc__features != 0) sc__ops.block.on_free_remote(NULL, page, p);
    push_remote(owner, p, p);
    return;
  }
  me->counts[c].remote_frees++;
  if (sc__features != 0) sc__ops.block.on_free_remote(me, page, p);
  /* Batch it: one CAS per SC_REMOTE_BATCH frees instead of one per free. */
  if (me->batch_owner != owner) {
    sc__arena_flush_remote(me);
    me->batch_owner = owner;
  }
  b->next = sc__remote_encode(me->batch_head, b);
  if (me->batch_count++ == 0) me->batch_tail = p;
  me->batch_head = p;
  if (me->batch_count >= SC_REMOTE_BATCH) sc__arena_flush_remote(me);
}

void sc__arena_flush_remote(sc_arena_t *a) {
  if (a->batch_count == 0) return;
  push_remote(a->batch_owner, a->batch_head, a->batch_tail);
  a->batch_head = a->batch_tail = 0;
  a->batch_count = 0;
}

void sc__arena_drain(sc_arena_t *a) { drain_remote(a); }

/* ---- the allocation slow path ------------------------------------------- */

void *sc__alloc_from_system(size_t n, unsigned c) {
  void *p = sc__sys_memalign(sc__class_size(c), n);
  if (p == NULL) errno = ENOMEM;
  return p;
}

void *sc__arena_refill(sc_arena_t *a, unsigned c) {
  sc__arena_flush_remote(a); /* other arenas may be waiting for these */
  sc__purge_poll(a);
  for (;;) {
    sc_page_t *page = a->current[c];
    /* 1. A block of the current page (we may have come here for another
     * reason than its being empty: features, a new arena). */
    if (sc__features != 0) sc__ops.block.before_take(page);
    sc_block_t *b = sc__page_take(page);
    if (b != NULL) {
      sc_validate_page(page);
      sc_validate_arena(a, false);
      return b;
    }
    /* 2. The current page is exhausted: it leaves the queue until a free. */
    if (page != &sc__empty_page) {
      sc_validate_page(page);
      queue_remove(&a->queues[c], page);
      page->used |= SC_USED_SLOW;
      sc__arena_refresh_current(a, c);
      if (a->current[c] != &sc__empty_page) continue;
    }
    /* 3. Blocks other threads gave back. */
    if (atomic_load_explicit(&a->remote_free, memory_order_relaxed) != 0) {
      drain_remote(a);
      if (a->current[c] != &sc__empty_page) continue;
    }
    /* 4. A new page. The old head (if any) loses the purge trap: only
     * heads carry it. */
    page = page_new(a, c);
    if (page == NULL) return NULL;
    sc_page_t *first = a->queues[c].first;
    if (first != NULL) first->used &= ~SC_USED_SLOW;
    queue_push_front(&a->queues[c], page);
    sc__arena_refresh_current(a, c);
  }
}

void *sc__arena_alloc_slow(size_t n, size_t g) {
  unsigned c = sc__class_of_granule[g];
  sc_arena_t *a = sc__thread.arena;
  if (sc_unlikely(a == NULL)) {
    a = sc__arena_get(); /* the thread's first allocation binds it */
    if (sc_unlikely(a == NULL)) return sc__alloc_from_system(n, c);
    /* Its countdown starts now and counts this call too: a sample may be
     * due at once (rate 1). */
    sc_thread_t *t = &sc__thread;
    if ((sc__features & SC_FEATURES_EVERY_MALLOC) == 0 && sc__countdown(&t->sample_left))
      return sc__alloc_noted_fn(n, g, t->current[g]);
  }
  /* The features that see every malloc see a thread's first one here (the
   * countdown sends them the next ones), and those that find no block. */
  if (sc__features & SC_FEATURES_EVERY_MALLOC) return sc__tier_alloc_seen(a, n, c);
  void *p = sc__arena_refill(a, c);
  return p != NULL ? p : sc__alloc_from_system(n, c);
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

/** Thread exit: hand the arena on (blocks still in use stay valid: their
 * frees reach it through its remote list, drained by the next owner). */
static void arena_abandon(void *arg) {
  sc_arena_t *a = arg;
  if (sc__thread.arena != a) return; /* stale value: a is not this thread's */
  sc_validate_arena(a, true);        /* every page, before it is handed on */
  if (sc__features != 0) sc__ops.lifecycle.thread_exit(a);
  thread_bind(NULL);
  a->thread = NULL;
  a->bound = 0;
  thread_exited = true;
  sc__os_altstack_release();
  sc__arena_flush_remote(a);
  sc__purge_on_abandon(a);
  release_heads(a);
  pthread_mutex_lock(&arenas_lock);
  a->owned = 0;
  a->next_abandoned = arenas_abandoned;
  arenas_abandoned = a;
  arenas_live--;
  pthread_mutex_unlock(&arenas_lock);
}

/** A free of another arena's block, or of no block at all. */
static sc_noinline void free_not_ours(void *p, sc_page_t *page) {
  sc_arena_t *me = sc__thread.arena;
  uintptr_t u = (uintptr_t)p;
  sc_segment_t *seg = sc__segment_of(u);
  if (sc_likely(me != NULL || !thread_exited)) {
    free_remote(u, seg, page);
    return;
  }
  /* The thread already handed its arena on: glibc frees per-thread buffers
   * (strerror, dlerror) after every TSD destructor ran. Borrow an arena for
   * this free only; keeping it would leak one arena per exiting thread. */
  free_remote(u, seg, page);
  sc_arena_t *a = sc__thread.arena;
  if (a == NULL) return;
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) == 2)
    pthread_setspecific(thread_exit_key, NULL);
  arena_abandon(a);
}

void sc__free_other_any(void *p, sc_page_t *page, sc_arena_t *self) {
  (void)self;
  sc__free_other(p, page);
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
    a->owned = 1;
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
    a->owned = 1;
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
}
void sc__arena_fork_parent(void) { pthread_mutex_unlock(&arenas_lock); }

/* In the child only the forking thread exists. Other threads' arenas may be
 * mid-update, so they are left alone (owned by no one, never adopted). */
void sc__arena_fork_child(void) {
  pthread_mutex_init(&arenas_lock, NULL);
  arenas_live = sc__thread.arena != NULL ? 1 : 0;
  sc__segment_fork_child();
}
