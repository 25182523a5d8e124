/* SPDX-License-Identifier: MIT */
/* reclaim.c — the pages of an idle thread that other threads freed
 * wholly, given back to the OS by them.
 *
 * A block freed by a thread other than its owner waits on the owner's
 * remote list until the owner drains it, on one of its slow paths. A
 * thread that made blocks and then waits (a loader, a main thread in
 * pthread_join while workers free what it made) never drains: its pages
 * stay resident, full of free blocks, for as long as it waits.
 *
 * Other threads' purge steps look at the live arenas (sc__remote_reclaim_idle).
 * One whose remote list grew while its thread made no slow-path call for
 * SC_RECLAIM_IDLE_NS is walked: its whole list is taken with one exchange
 * (as its owner's drain takes it), the blocks are counted per page, and
 * every page all of whose blocks are in the walker's hands is given back
 * to the OS. Nobody can touch such a page: no block of it is live (its
 * owner's free of one aborts as a double free before writing), none is on
 * its free list, none is left to carve, and every link into it is the
 * walker's. It is then linked on the owner's `reclaimed` list (by its
 * descriptor's reclaim_next, a field only this protocol uses); the
 * owner's next drain marks its blocks free, counts them drained and keeps
 * the page as a purged spare page (remote.c). The other blocks go back on
 * the owner's remote list with one CAS.
 *
 * A walk follows at most SC_RECLAIM_WALK_MAX links (it runs inside some
 * thread's malloc or free): the rest of the list waits in the owner's
 * `reclaim_stash` for the next walk (or the owner's drain). A page whose
 * blocks lie farther apart in the list than that is not given back; nor
 * is one with a live block, or the page a class is still carving. The
 * next walk of an arena waits SC_RECLAIM_IDLE_NS and 8 times as long as
 * the last took (32 when it gave nothing back).
 *
 * Of descriptors this reads only the shared line (geometry, the carving
 * high-water mark, the map) and writes only reclaim_next: the owner's
 * fields stay the owner's. */
#include <sched.h>
#include <string.h>

#include "core/alloc.h"
#include "core/purge.h"

/* A page's blocks met in one walk: counted, and chained again (remote
 * links) so that they can be handed back. */
typedef struct {
  sc_page_t *page;
  uint32_t count;
  uintptr_t head, tail;
} reclaim_page_t;

/* One walk at a time in the process (it runs on a slow path of any
 * thread, whose stack may be small): its tables are static. */
static reclaim_page_t walk_pages[SC_RECLAIM_PAGES];
static uint64_t walk_seen[(SC_PAGE_SIZE >> SC_MIN_SHIFT) / 64]; /* a page's blocks, by map index */
static sc_page_t *walk_give[SC_RECLAIM_PAGES / 2];              /* pages to give back */
static _Atomic int walk_busy;
static sc_tls bool walk_mine; /* this thread is walking (a fork from a signal handler) */

/** True when u is the start of a block handed out from an active page of
 * arena x and PENDING in its map, as a thread other than x's sees it:
 * what every link of x's remote list must decode to. */
static bool link_ok(const sc_arena_t *x, uintptr_t u) {
  if (!sc__segment_owned(u) || sc__segment_of(u)->arena != x) return false;
  const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  uintptr_t offset = u & (SC_PAGE_SIZE - 1);
  if (page->state != SC_PAGE_ACTIVE || !sc__shared_block_start(page, offset) ||
      offset >= sc__page_carved(page))
    return false;
  const uint8_t *m = sc__map_entry(page->shared_map, u, page->shared_shift);
  return __atomic_load_n(m, __ATOMIC_RELAXED) == SC_MAP_PENDING;
}

/** Blocks a page of page's class and colour holds (page_init's carve). */
static uint32_t page_capacity(const sc_page_t *page) {
  return (uint32_t)((SC_PAGE_SIZE - page->shared_colour) / ((size_t)page->shared_mask + 1));
}

/** Link block u in front of the chain *head..*tail (remote links). */
static void chain_push(uintptr_t *head, uintptr_t *tail, uintptr_t u) {
  sc_block_t *b = (sc_block_t *)u;
  b->next = sc__remote_encode(*head, b);
  *head = u;
  if (*tail == 0) *tail = u;
}

/** Put the chain h..t after the chain *head..*tail. */
static void chain_append(uintptr_t *head, uintptr_t *tail, uintptr_t h, uintptr_t t) {
  if (h == 0) return;
  if (*head == 0) {
    *head = h;
  } else {
    sc_block_t *last = (sc_block_t *)*tail;
    last->next = sc__remote_encode(h, last);
  }
  *tail = t;
}

/** The walk's record of page, or NULL when it keeps count of as many
 * pages as it may (half the table: short probes). */
static reclaim_page_t *page_record(sc_page_t *page, unsigned *tracked) {
  unsigned mask = SC_RECLAIM_PAGES - 1;
  /* A multiplicative hash: descriptors are 128 B apart in segments
   * aligned to 4 MiB, so their low bits alone fill a few slots. */
  uint64_t h = ((uint64_t)(uintptr_t)page >> 7) * 0x9e3779b97f4a7c15ull;
  for (unsigned i = (unsigned)(h >> 32) & mask;; i = (i + 1) & mask) {
    reclaim_page_t *r = &walk_pages[i];
    if (r->page == page) return r;
    if (r->page != NULL) continue;
    if (*tracked >= SC_RECLAIM_PAGES / 2) return NULL;
    (*tracked)++;
    r->page = page;
    return r;
  }
}

/** True when the chain of r holds each block of its page once: with as
 * many links as the page has blocks, every block of it (a list that
 * names one block twice was corrupted; the owner's drain aborts on it). */
static bool chain_distinct(const reclaim_page_t *r) {
  memset(walk_seen, 0, sizeof(walk_seen));
  unsigned shift = r->page->shared_shift;
  for (uintptr_t u = r->head; u != 0;) {
    size_t i = sc__map_index(u, shift);
    uint64_t bit = (uint64_t)1 << (i % 64);
    if (walk_seen[i / 64] & bit) return false;
    walk_seen[i / 64] |= bit;
    const sc_block_t *b = (const sc_block_t *)u;
    u = sc__remote_decode(b->next, b);
  }
  return true;
}

void sc__reclaimed_count(sc_arena_t *x, const sc_page_t *page, int d) {
  unsigned c = page->shared_class;
  __atomic_fetch_add(&x->reclaimed_pages[c], (uint32_t)d, __ATOMIC_RELAXED);
  if (page->shared_colour != 0)
    __atomic_fetch_add(&x->reclaimed_coloured[c], (uint32_t)d, __ATOMIC_RELAXED);
}

/** Give back the memory of the n pages of `give` (sorted here: adjacent
 * pages share one madvise) and link those the OS took on x's reclaimed
 * list with one CAS (from then on x's drain may take them); the blocks of
 * a run the OS refused are chained on *head..*tail. Returns the pages
 * given back. */
static unsigned pages_give_back(sc_arena_t *x, sc_page_t **give, unsigned n, uintptr_t *head,
                                uintptr_t *tail) {
  sc__pages_sort(give, n);
  sc_page_t *first = NULL, *last = NULL;
  unsigned pages = 0;
  for (unsigned i = 0, j; i < n; i = j) {
    /* Descriptors are adjacent exactly when the pages are (same segment). */
    for (j = i + 1; j < n && give[j] == give[j - 1] + 1; j++) {
    }
    bool ok = sc__os_purge(sc__page_start(give[i]), (j - i) * SC_PAGE_SIZE);
    for (unsigned k = i; k < j; k++) {
      sc_page_t *page = give[k];
      if (!ok) {
        unsigned none = 0; /* the page has its record already: none is added */
        reclaim_page_t *r = page_record(page, &none);
        chain_append(head, tail, r->head, r->tail);
        continue;
      }
      page->reclaim_next = NULL;
      sc__reclaimed_count(x, page, 1);
      if (last != NULL)
        last->reclaim_next = page;
      else
        first = page;
      last = page;
      pages++;
    }
  }
  if (first == NULL) return 0;
  sc_page_t *old = atomic_load_explicit(&x->reclaimed, memory_order_relaxed);
  do {
    last->reclaim_next = old;
  } while (!atomic_compare_exchange_weak_explicit(&x->reclaimed, &old, first, memory_order_seq_cst,
                                                  memory_order_relaxed));
  if (old == NULL) sc__purge_remote_list_started(x); /* an abandoned x: its tenders drain it */
  return pages;
}

/** The walk itself (walk_busy held): the stash left by a walk that
 * stopped short, else x's remote list; at most SC_RECLAIM_WALK_MAX links. */
static size_t reclaim_walk(sc_arena_t *x) {
  uintptr_t head = 0;
  if (atomic_load_explicit(&x->reclaim_stash, memory_order_relaxed) != 0)
    head = atomic_exchange_explicit(&x->reclaim_stash, 0, memory_order_acquire);
  bool whole = head == 0; /* the walk starts from x's list, not from a stash */
  if (whole) head = atomic_exchange_explicit(&x->remote_free, 0, memory_order_acquire);
  if (head == 0) return 0;
  memset(walk_pages, 0, sizeof(walk_pages));
  unsigned tracked = 0, class_size = 0;
  uintptr_t from = 0, rest_head = 0, rest_tail = 0;
  bool all_counted = true;
  for (unsigned links = 0; head != 0 && links < SC_RECLAIM_WALK_MAX; links++) {
    /* Checked before it is followed, as the owner's drain checks it. */
    if (sc_unlikely(!link_ok(x, head))) sc__fatal_list(class_size, from);
    sc_block_t *b = (sc_block_t *)head;
    uintptr_t next = sc__remote_decode(b->next, b);
    sc_page_t *page = sc__page_of(sc__segment_of(head), head);
    class_size = page->shared_mask + 1;
    from = head & ~(uintptr_t)(SC_PAGE_SIZE - 1);
    reclaim_page_t *r = page_record(page, &tracked);
    if (r != NULL) {
      chain_push(&r->head, &r->tail, head);
      r->count++;
    } else {
      chain_push(&rest_head, &rest_tail, head);
      all_counted = false;
    }
    head = next;
  }
  /* What the walk did not reach waits for the next one (only walks set
   * the stash, one at a time; x's drain takes it as it takes its list). */
  if (head != 0) atomic_store_explicit(&x->reclaim_stash, head, memory_order_release);
  /* Blocks of pages not counted go back first: the walk after the stash
   * meets them first. */
  unsigned n = 0;
  for (unsigned i = 0; i < SC_RECLAIM_PAGES; i++) {
    reclaim_page_t *r = &walk_pages[i];
    if (r->page == NULL) continue;
    if (r->count == page_capacity(r->page) && chain_distinct(r))
      walk_give[n++] = r->page;
    else
      chain_append(&rest_head, &rest_tail, r->head, r->tail);
  }
  unsigned pages = n != 0 ? pages_give_back(x, walk_give, n, &rest_head, &rest_tail) : 0;
  uintptr_t found = rest_head != 0 ? sc__remote_push(x, rest_head, rest_tail) : 0;
  /* Nothing new to walk while x's list starts where this walk left it:
   * only when this walk read all of x's list, counted every page of it,
   * and no push came in the meantime (else some blocks were never seen
   * together). */
  bool seen_all = whole && head == 0 && all_counted && found == 0;
  atomic_store_explicit(&x->reclaim_left, seen_all ? rest_head : 0, memory_order_relaxed);
  if (pages != 0) sc__purge_count_reclaimed(pages, (size_t)pages * SC_PAGE_SIZE);
  return pages;
}

/** A walk of x if none is running (*walked says whether this one ran). */
static size_t reclaim_try(sc_arena_t *x, bool *walked) {
  *walked = false;
  /* The checking mode keeps patterns in free blocks: its pages stay. */
  if (sc__features & SC_FEATURE_CHECK) return 0;
  if (atomic_load_explicit(&walk_busy, memory_order_relaxed) != 0 ||
      atomic_exchange_explicit(&walk_busy, 1, memory_order_acquire) != 0)
    return 0;
  *walked = true;
  walk_mine = true;
  size_t pages = reclaim_walk(x);
  /* x's thread may have ended during the walk, after its own last look
   * at the stash the walk left (arena_abandon's fence pairs with this). */
  atomic_thread_fence(memory_order_seq_cst);
  if (__atomic_load_n(&x->owned, __ATOMIC_RELAXED) == 0 && sc__arena_has_returns(x))
    sc__purge_wake_abandoned();
  walk_mine = false;
  atomic_store_explicit(&walk_busy, 0, memory_order_release);
  return pages;
}

size_t sc__remote_reclaim(sc_arena_t *x) {
  bool walked;
  return reclaim_try(x, &walked);
}

/* ---- which arena, and when -------------------------------------------------- */

typedef struct {
  sc_arena_t *self, *pick;
  uint64_t now, idle_ns;
} look_t;

/** With the registry locked: pick x if it has blocks no walk has seen (its
 * list grew since the last walk, or a walk left a stash) and its thread
 * made no slow-path call for idle_ns. */
static void look(sc_arena_t *x, void *ctx) {
  look_t *l = ctx;
  if (x == l->self || l->pick != NULL || __atomic_load_n(&x->owned, __ATOMIC_RELAXED) == 0) return;
  uintptr_t h = atomic_load_explicit(&x->remote_free, memory_order_relaxed);
  bool unseen = h != 0 && h != atomic_load_explicit(&x->reclaim_left, memory_order_relaxed);
  if (!unseen && atomic_load_explicit(&x->reclaim_stash, memory_order_relaxed) == 0) return;
  uint64_t slow = __atomic_load_n(&x->slow_calls, __ATOMIC_RELAXED);
  uint64_t next = __atomic_load_n(&x->reclaim_next_ns, __ATOMIC_RELAXED);
  if (next == 0 || slow != __atomic_load_n(&x->reclaim_slow, __ATOMIC_RELAXED)) {
    __atomic_store_n(&x->reclaim_slow, slow, __ATOMIC_RELAXED);
    __atomic_store_n(&x->reclaim_next_ns, l->now + l->idle_ns, __ATOMIC_RELAXED);
    return;
  }
  if (l->now < next) return;
  l->pick = x;
}

size_t sc__remote_reclaim_idle(sc_arena_t *self, uint64_t now, uint64_t idle_ns) {
  if (atomic_load_explicit(&walk_busy, memory_order_relaxed) != 0) return 0;
  look_t l = {self, NULL, now, idle_ns};
  if (!sc__arenas_try_foreach(look, &l) || l.pick == NULL) return 0;
  uint64_t start = sc__os_now_ns();
  bool walked;
  size_t pages = reclaim_try(l.pick, &walked);
  if (!walked) return 0; /* another thread walks: its pacing stands */
  /* The next walk of it waits idle_ns, and 8 times as long as this one
   * took (32 times when it gave nothing back): walks take at most ~1/9 of
   * a thread's time. */
  uint64_t end = sc__os_now_ns(), pause = (end - start) * (pages != 0 ? 8 : 32);
  __atomic_store_n(&l.pick->reclaim_next_ns, end + (pause > idle_ns ? pause : idle_ns),
                   __ATOMIC_RELAXED);
  return pages;
}

void sc__remote_fork_prepare(void) {
  /* A fork from a signal handler that interrupted this thread's own walk
   * cannot wait for it: the child may then lose that list (a leak). */
  if (walk_mine) return;
  int idle = 0;
  while (!atomic_compare_exchange_weak_explicit(&walk_busy, &idle, 1, memory_order_acquire,
                                                memory_order_relaxed)) {
    idle = 0;
    sched_yield(); /* a walk takes no lock: it ends */
  }
}

void sc__remote_fork_parent(void) {
  if (!walk_mine) atomic_store_explicit(&walk_busy, 0, memory_order_release);
}

void sc__remote_fork_child(void) {
  walk_mine = false;
  atomic_store_explicit(&walk_busy, 0, memory_order_relaxed);
}
