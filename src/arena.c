/* arena.c — thread-local arenas: how a thread gets one, the allocation slow
 * path (carve, drain remote frees, next page, new page), frees from other
 * threads, and handing arenas on when their thread exits. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "alloc.h"
#include "page_queue.h"
#include "purge.h"

sc_tls sc_arena_t *sc__thread_arena;

/* current[c] points here when a class has no page: it has no free block and
 * no room to carve, so the fast path falls through to the slow path. */
sc_page_t sc__empty_page;

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

/* ---- page queues -------------------------------------------------------- */

/* Class queues: a page is `queued` while linked in its class's queue. */
static void queue_remove(sc_page_queue_t *q, sc_page_t *page) {
  sc__pq_remove(q, page);
  page->queued = 0;
}

static void queue_push_back(sc_page_queue_t *q, sc_page_t *page) {
  sc__pq_push_back(q, page);
  page->queued = 1;
}

static void queue_push_front(sc_page_queue_t *q, sc_page_t *page) {
  sc__pq_push_front(q, page);
  page->queued = 1;
}

/** Keep current[c] equal to the head of the class queue (or the empty page);
 * while purge work is pending, a new head gets the purge trap (purge.c). */
static void refresh_current(sc_arena_t *a, unsigned c) {
  sc_page_t *head = a->queues[c].first;
  a->current[c] = head ? head : &sc__empty_page;
  if (head != NULL && a->purge.armed) head->full = 1;
}

void sc__arena_page_unfull(sc_arena_t *a, sc_page_t *page) {
  if (page->queued) { /* not full: a purge trap on the class head */
    sc__purge_poll(a);
    return;
  }
  page->full = 0;
  queue_push_back(&a->queues[page->class_idx], page);
  if (a->current[page->class_idx] == &sc__empty_page) refresh_current(a, page->class_idx);
  sc__purge_note_unfull(a, page->class_idx);
}

/* ---- pages -------------------------------------------------------------- */

/** Prepare `page` of `seg` to serve class c. */
static void page_init(sc_arena_t *a, sc_segment_t *seg, sc_page_t *page, unsigned c) {
  page->class_idx = (uint8_t)c;
  page->shift = (uint8_t)(c + SC_MIN_SHIFT);
  page->capacity = (uint32_t)(SC_PAGE_SIZE >> page->shift);
  page->block_mask = (uint32_t)(sc__class_size(c) - 1);
  page->carved = 0;
  page->carved_max = 0;
  page->used = 0;
  page->free = NULL;
  page->full = 0;
  page->dirty = 1;
  page->state = SC_PAGE_ACTIVE;
  page->req = sc__segment_req_array(seg, page->index);
  seg->pages_active++;
  a->stats[c].pages++;
}

/** A page for class c: an empty one of c waiting to be purged (ready as it
 * is), else an idle or purged page to re-initialise (purge.c), else the next
 * unused page of the newest segment, else a page of a new segment. NULL when
 * the OS refuses memory. */
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
      a->segments = seg;
    }
    page = &seg->pages[seg->next_unused++];
  }
  page_init(a, seg, page, c);
  return page;
}

/* ---- remote frees ------------------------------------------------------- */

/** True when u is the start of a block handed out from a page of arena a:
 * what every link of a's remote list must decode to. */
static bool remote_link_ok(const sc_arena_t *a, uintptr_t u) {
  if (!sc__segment_owned(u) || sc__segment_of(u)->arena != a) return false;
  const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  uintptr_t offset = u & (SC_PAGE_SIZE - 1);
  return (offset & page->block_mask) == 0 && (offset >> page->shift) < page->carved;
}

/** Move every block other threads freed into this arena back to its page. */
static void drain_remote(sc_arena_t *a) {
  uintptr_t head = atomic_exchange_explicit(&a->remote_free, 0, memory_order_acquire);
  unsigned class_size = 0; /* class of the block whose link led to head */
  while (head != 0) {
    /* Check a link before following it: a use-after-free write into a
     * block on this list must abort with a message, not fault. */
    if (sc_unlikely(!remote_link_ok(a, head))) sc__fatal_list(class_size);
    sc_block_t *b = (sc_block_t *)head;
    sc_block_t *next = sc__decode(b, b->next, a->secret);
    sc_page_t *page = sc__page_of(sc__segment_of(head), head);
    class_size = (unsigned)sc__class_size(page->class_idx);
    b->next = sc__encode(b, page->free, a->secret);
    page->free = b;
    page->used--;
    a->stats[page->class_idx].live--;
    a->stats[page->class_idx].req_drained += page->req[(head & (SC_PAGE_SIZE - 1)) >> page->shift];
    if (page->full) sc__arena_page_unfull(a, page);
    head = (uintptr_t)next;
  }
}

/** Push the chain head..tail (linked with sc__encode and the process
 * secret) on owner's remote list with one CAS. */
static void push_remote(sc_arena_t *owner, uintptr_t head, uintptr_t tail) {
  sc_block_t *last = (sc_block_t *)tail;
  uintptr_t old = atomic_load_explicit(&owner->remote_free, memory_order_relaxed);
  do {
    last->next = sc__encode(last, (sc_block_t *)old, sc__secret);
  } while (!atomic_compare_exchange_weak_explicit(&owner->remote_free, &old, head,
                                                  memory_order_release, memory_order_relaxed));
  if (sc_unlikely(old == 0)) sc__purge_remote_list_started(owner);
}

/** Free of block p (of seg/page) owned by another arena: push it on the
 * owner's remote list, counted in the freeing thread's arena. */
static void free_remote(uintptr_t p, sc_segment_t *seg, sc_page_t *page) {
  sc_block_t *b = (sc_block_t *)p;
  sc__check_block(page, p);
  sc_arena_t *me = sc__arena_get();
  if (sc_unlikely(me == seg->arena)) { /* we just adopted the owner */
    sc__free_inline(b);
    return;
  }
  unsigned c = page->class_idx;
#if SC_HARDEN
  uintptr_t key = sc__free_key(b, sc__key_secret);
  if (sc_unlikely(b->key == key)) sc__fatal_block("double free", b, (unsigned)sc__class_size(c));
  b->key = key;
#endif
  if (me != NULL) {
    sc_class_stats_t *s = &me->stats[c];
    s->frees++;
    s->remote_frees++;
    uint16_t req = page->req[(p & (SC_PAGE_SIZE - 1)) >> page->shift];
    s->req_live -= req;
    s->req_remote += req;
  }
  sc_arena_t *owner = seg->arena;
  if (sc_unlikely(me == NULL)) { /* no arena to batch in: hand over alone */
    push_remote(owner, p, p);
    return;
  }
  /* Batch it: one CAS per SC_REMOTE_BATCH frees instead of one per free. */
  if (me->batch_owner != owner) {
    sc__arena_flush_remote(me);
    me->batch_owner = owner;
  }
  b->next = sc__encode(b, (sc_block_t *)me->batch_head, sc__secret);
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

/** Hand out block b of page (class c) for a request of n bytes. */
static void *take_block(sc_arena_t *a, sc_page_t *page, sc_block_t *b, unsigned c, size_t n) {
#if SC_HARDEN
  b->key = 0;
#endif
  page->used++;
  sc__count_alloc(a, page, b, c, n);
  return b;
}

/** When no segment can be had, the system allocator serves the request,
 * aligned to the class size so aligned requests stay aligned. */
static void *alloc_from_system(size_t n, unsigned c) {
  void *p = sc__sys_memalign(sc__class_size(c), n);
  if (p == NULL) errno = ENOMEM;
  return p;
}

void *sc__arena_alloc_slow(size_t n, unsigned c) {
  sc_arena_t *a = sc__arena_get();
  if (sc_unlikely(a == NULL)) return alloc_from_system(n, c);
  sc__arena_flush_remote(a); /* other arenas may be waiting for these */
  sc__purge_poll(a);
  for (;;) {
    sc_page_t *page = a->current[c];
    /* 0. A page all of whose blocks are free is carved again in address
     * order rather than through its free list, whose order is that of the
     * frees: sequential blocks are what caches and prefetchers like. */
    if (page->used == 0 && page->free != NULL) {
      page->free = NULL;
      page->carved = 0;
    }
    /* 1. A free block (we may have come here only for lack of an arena). */
    sc_block_t *b = page->free;
    if (b != NULL) {
      sc_block_t *next = sc__decode(b, b->next, a->secret);
      if (SC_HARDEN && next != NULL && (((uintptr_t)next ^ (uintptr_t)b) >> SC_PAGE_SHIFT) != 0)
        sc__fatal_list((unsigned)sc__class_size(c));
      page->free = next;
      return take_block(a, page, b, c, n);
    }
    /* 2. Carve the next block; a fresh one if never handed out before. */
    if (page->carved < page->capacity) return sc__carve(a, page, c, n);
    /* 3. The current page is exhausted: it leaves the queue until a free. */
    if (page != &sc__empty_page) {
      queue_remove(&a->queues[c], page);
      page->full = 1;
      refresh_current(a, c);
      if (a->current[c] != &sc__empty_page) continue;
    }
    /* 4. Blocks other threads gave back. */
    if (atomic_load_explicit(&a->remote_free, memory_order_relaxed) != 0) {
      drain_remote(a);
      if (a->current[c] != &sc__empty_page) continue;
    }
    /* 5. A new page. */
    page = page_new(a, c);
    if (page == NULL) return alloc_from_system(n, c);
    /* A queued page with `full` set carries a purge trap (purge.c); it stops
     * being the head, so the trap moves to the new head. */
    if (a->queues[c].first != NULL) a->queues[c].first->full = 0;
    queue_push_front(&a->queues[c], page);
    refresh_current(a, c);
  }
}

/* ---- arenas and threads ------------------------------------------------- */

/* Set once this thread's arena was handed on at thread exit. */
static sc_tls bool thread_exited;

/** Thread exit: hand the arena on (blocks still in use stay valid: their
 * frees reach it through its remote list, drained by the next owner). */
static void arena_abandon(void *arg) {
  sc_arena_t *a = arg;
  if (sc__thread_arena != a) return; /* stale value: a is not this thread's */
  sc__thread_arena = NULL;
  thread_exited = true;
  sc__arena_flush_remote(a);
  sc__purge_on_abandon(a);
  pthread_mutex_lock(&arenas_lock);
  a->owned = 0;
  a->next_abandoned = arenas_abandoned;
  arenas_abandoned = a;
  arenas_live--;
  pthread_mutex_unlock(&arenas_lock);
}

void sc__arena_free_remote(uintptr_t p, sc_segment_t *seg, sc_page_t *page) {
  if (sc_likely(sc__thread_arena != NULL || !thread_exited)) {
    free_remote(p, seg, page);
    return;
  }
  /* The thread already handed its arena on: glibc frees per-thread buffers
   * (strerror, dlerror) after every TSD destructor ran. Borrow an arena for
   * this free only; keeping it would leak one arena per exiting thread. */
  free_remote(p, seg, page);
  sc_arena_t *a = sc__thread_arena;
  if (a == NULL) return;
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) == 2)
    pthread_setspecific(thread_exit_key, NULL);
  arena_abandon(a);
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
  a->secret = sc__secret;
  a->key_secret = sc__key_secret;
  return a;
}

sc_arena_t *sc__arena_get(void) {
  sc_arena_t *a = sc__thread_arena;
  if (a != NULL) return a;
  sc__init();
  ensure_thread_exit_key();
  /* 1. Adopt an arena whose thread exited, with all its pages and blocks. */
  pthread_mutex_lock(&arenas_lock);
  a = arenas_abandoned;
  if (a != NULL) {
    arenas_abandoned = a->next_abandoned;
    a->adopted_count++;
    arenas_adopted++;
    a->owned = 1;
    arenas_live++;
  }
  pthread_mutex_unlock(&arenas_lock);
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
  sc__thread_arena = a;
  if (atomic_load_explicit(&thread_exit_key_state, memory_order_acquire) == 2)
    pthread_setspecific(thread_exit_key, a);
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
  arenas_live = sc__thread_arena != NULL ? 1 : 0;
}
