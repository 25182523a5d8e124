/* SPDX-License-Identifier: MIT */
/* remote.c — frees of another thread's blocks: the map's PENDING state
 * won with one compare-and-swap, batches pushed on the owner's remote
 * list with one CAS, and the owner's drain of that list back into its
 * pages. */
#include "core/alloc.h"
#include "core/hooks.h"
#include "core/page_queue.h"
#include "core/purge.h"
#include "core/snapshot.h"
#include "core/tiers.h"

/* ---- remote frees ------------------------------------------------------- */

/** True when u is the start of a block handed out from a page of arena a:
 * what every link of a's remote list must decode to. */
static sc_always_inline bool remote_link_ok(const sc_arena_t *a, uintptr_t u) {
  if (!sc__segment_owned(u) || sc__segment_of(u)->arena != a) return false;
  const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  return page->arena == a && (u & page->start_mask) == 0 && u < (uintptr_t)page->carve_next &&
         *sc__map_entry(page->map, u, page->shift) != SC_MAP_INTERIOR;
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

/** Page of a, whose blocks were all PENDING when another thread reclaimed
 * it (reclaim.c) and are FREE now: out of its class queue (the class's
 * exhausted head) if it is still in it, then a purged spare page. */
static void reclaimed_page_release(sc_arena_t *a, sc_page_t *page) {
  unsigned c = page->class_idx;
  page->used = 0; /* no pin, no trap: the count is zero */
  if (page->queued) {
    sc__pq_remove(&a->queues[c], page);
    page->queued = 0;
    sc__arena_refresh_current(a, c);
  }
  sc__purge_take_reclaimed(a, page);
}

/** The pages other threads reclaimed for a (reclaim.c), from `page` on
 * (linked by reclaim_next): every block of each was PENDING and is FREE
 * now, counted drained (`exact`: exact statistics see each), and the page
 * is a purged spare page, its memory the OS's again. */
static sc_noinline void drain_reclaimed(sc_arena_t *a, sc_page_t *page, bool exact) {
  while (page != NULL) {
    sc_page_t *next = page->reclaim_next;
    unsigned class_size = page->shared_mask + 1;
    uintptr_t first = (uintptr_t)sc__page_first(page);
    uintptr_t from = first & ~(uintptr_t)(SC_PAGE_SIZE - 1);
    /* Descriptors are out of the program's reach; checked all the same. */
    if (sc_unlikely(page->arena != a || page->state != SC_PAGE_ACTIVE))
      sc__fatal_list(class_size, from);
    uint32_t n = 0;
    for (uintptr_t p = first; p < (uintptr_t)page->carve_end; p += class_size, n++) {
      drain_mark_free(page, p, class_size); /* each one PENDING, or an abort */
      if (exact) sc__ops.block.on_drain(a, page, p);
    }
    /* Every block was handed out and none came back: the count is all. */
    if (sc_unlikely((page->used & SC_USED_COUNT) != n)) sc__fatal_list(class_size, from);
    a->counts[page->class_idx].drained += n;
    sc__reclaimed_count(a, page, -1);
    page->reclaim_next = NULL;
    reclaimed_page_release(a, page);
    page = next;
  }
}

/** Move every block other threads freed into this arena back to its page,
 * and take back the pages they reclaimed. */
static void drain_remote(sc_arena_t *a) {
  /* The list, and what a reclaim walk stopped short of (reclaim.c). */
  uintptr_t heads[2] = {atomic_exchange_explicit(&a->remote_free, 0, memory_order_acquire), 0};
  if (sc_unlikely(atomic_load_explicit(&a->reclaim_stash, memory_order_relaxed) != 0))
    heads[1] = atomic_exchange_explicit(&a->reclaim_stash, 0, memory_order_acquire);
  bool exact = (sc__features & SC_FEATURE_EXACT) != 0;
  for (unsigned k = 0; k < 2; k++) {
    if (sc_unlikely(exact))
      drain_list(a, heads[k], true);
    else
      drain_list(a, heads[k], false);
  }
  if (sc_unlikely(atomic_load_explicit(&a->reclaimed, memory_order_relaxed) != NULL))
    drain_reclaimed(a, atomic_exchange_explicit(&a->reclaimed, NULL, memory_order_acquire), exact);
  sc_validate_arena(a, false);
}

uintptr_t sc__remote_push(sc_arena_t *owner, uintptr_t head, uintptr_t tail) {
  sc_block_t *last = (sc_block_t *)tail;
  uintptr_t old = atomic_load_explicit(&owner->remote_free, memory_order_relaxed);
  do {
    last->next = sc__remote_encode(old, last);
  } while (!atomic_compare_exchange_weak_explicit(&owner->remote_free, &old, head,
                                                  memory_order_seq_cst, memory_order_relaxed));
  if (sc_unlikely(old == 0)) sc__purge_remote_list_started(owner);
  return old;
}

/** Check that p is the start of a block handed out from page, as a thread
 * other than the owner sees it (the shared line: geometry, and the
 * high-water mark of carving; a block between the owner's carve offset and
 * that mark is free in the map and is caught as a double free). */
static void check_shared(const sc_page_t *page, uintptr_t p) {
  uintptr_t offset = p & (SC_PAGE_SIZE - 1);
  if (sc_unlikely(page->state != SC_PAGE_ACTIVE || !sc__shared_block_start(page, offset) ||
                  offset >= sc__page_carved(page)))
    sc__fatal_invalid((const void *)p);
}

/** Move block p of another thread's page from LIVE (or SAMPLED) to
 * PENDING in its map with one locked compare-and-swap (a byte of its own:
 * the owner's stores to its neighbours are never lost). Of two frees of one
 * block racing here, one wins; a block that was not live is a double free.
 * A local free racing with it is caught by the owner's drain (drain_mark_free).
 * A sampled block's feature sees it. */
static sc_noinline void map_free_remote_marked(const sc_page_t *page, uintptr_t p, uint8_t *m,
                                               uint8_t v) {
  if (v != SC_MAP_SAMPLED || !__atomic_compare_exchange_n(m, &v, SC_MAP_PENDING, false,
                                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    sc__fatal_block("double free", (const void *)p, page->shared_mask + 1);
  sc__ops.block.on_free_sampled((void *)p);
}
static sc_always_inline void map_free_remote(const sc_page_t *page, uintptr_t p) {
  uint8_t *m = sc__map_entry(page->shared_map, p, page->shared_shift);
  uint8_t v = SC_MAP_LIVE;
  if (sc_likely(__atomic_compare_exchange_n(m, &v, SC_MAP_PENDING, false, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)))
    return;
  map_free_remote_marked(page, p, m, v); /* a sampled block, or a double free */
}

/** Add p (marked PENDING, counted) to me's batch of remote frees, which
 * is for p's owner: one CAS per SC_REMOTE_BATCH frees instead of one per
 * free. */
static sc_always_inline void remote_batch_push(sc_arena_t *me, uintptr_t p) {
  sc_block_t *b = (sc_block_t *)p;
  b->next = sc__remote_encode(me->batch_head, b);
  if (me->batch_count++ == 0) me->batch_tail = p;
  me->batch_head = p;
  if (sc_unlikely(me->batch_count >= SC_REMOTE_BATCH)) sc__arena_flush_remote(me);
}
/** The same, for any owner: a batch for another owner is handed over first. */
static sc_always_inline void remote_batch_add(sc_arena_t *me, sc_arena_t *owner, uintptr_t p) {
  if (me->batch_owner != owner) {
    sc__arena_flush_remote(me);
    me->batch_owner = owner;
  }
  remote_batch_push(me, p);
}

/** Free of block p (of seg/page) owned by another arena: push it on the
 * owner's remote list, counted in the freeing thread's arena. */
void sc__free_remote(uintptr_t p, sc_segment_t *seg, sc_page_t *page) {
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
    sc__remote_push(owner, p, p);
    return;
  }
  me->counts[c].remote_frees++;
  if (sc__features != 0) sc__ops.block.on_free_remote(me, page, p);
  remote_batch_add(me, owner, p);
}

/** A remote free's rare turns, out of the common path's frame: p's map
 * entry m was not plainly LIVE (`v`: a sampled block, or a double free,
 * which aborts), or me's batch is for another owner. */
static sc_noinline void free_remote_rare(sc_arena_t *me, uintptr_t p, sc_segment_t *seg,
                                         sc_page_t *page, uint8_t *m, uint8_t v, bool live) {
  if (!live) map_free_remote_marked(page, p, m, v); /* now PENDING, or never returns */
  me->counts[page->shared_class].remote_frees++;
  remote_batch_add(me, seg->arena, p);
}

void sc__free_other_any(void *p, sc_page_t *page, sc_arena_t *self) {
  (void)self;
  /* The common case in one frame with no call but tail calls (a
   * producer/consumer's consumer does nothing else, and a slow one lets the
   * producer's blocks pile up): no feature on, a thread with an arena,
   * another arena's segment, a plainly live block, a batch for the same
   * owner. The same checks as sc__free_remote's, in the same order. */
  uintptr_t u = (uintptr_t)p;
  sc_segment_t *seg = sc__segment_of(u);
  sc_arena_t *me = sc__thread.arena;
  if (sc_unlikely(me == NULL || sc__features != 0 || seg->arena == me)) {
    sc__free_other(p, page);
    return;
  }
  check_shared(page, u);
  uint8_t *m = sc__map_entry(page->shared_map, u, page->shared_shift);
  uint8_t v = SC_MAP_LIVE;
  bool live =
      __atomic_compare_exchange_n(m, &v, SC_MAP_PENDING, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  if (sc_unlikely(!live || me->batch_owner != seg->arena)) {
    free_remote_rare(me, u, seg, page, m, v, live);
    return;
  }
  me->counts[page->shared_class].remote_frees++;
  remote_batch_push(me, u);
}

void sc__arena_flush_remote(sc_arena_t *a) {
  if (a->batch_count == 0) return;
  sc__remote_push(a->batch_owner, a->batch_head, a->batch_tail);
  a->batch_head = a->batch_tail = 0;
  a->batch_count = 0;
}

void sc__arena_drain(sc_arena_t *a) { drain_remote(a); }
