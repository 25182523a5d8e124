/* SPDX-License-Identifier: MIT */
/* refill.c — where a class's blocks come from when the fast path finds
 * none: the class queues, a page taking a class (and its shuffle), the
 * allocation slow path (drain remote frees, next page, new page), and what
 * a free does when the fast path cannot finish it (a full, trapped or
 * emptied page; a marked block). */
#include <errno.h>
#include <string.h>

#include "core/alloc.h"
#include "core/hooks.h"
#include "core/page_queue.h"
#include "core/purge.h"
#include "core/snapshot.h"
#include "core/tiers.h"
#include "util/rng.h"

/* ---- class queues ------------------------------------------------------------ */

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

/* ---- pages -------------------------------------------------------------- */

/** The colour of arena a's next page of class c (config.h): 0 for blocks
 * of at most 2^SC_COLOUR_SHIFT bytes; above, the class's colours in turn,
 * in bit-reversed order, so that two pages already sit half a block
 * apart. */
static size_t page_colour(sc_arena_t *a, unsigned c) {
  unsigned shift = c + SC_MIN_SHIFT;
  if (shift <= SC_COLOUR_SHIFT) return 0;
  unsigned bits = shift - SC_COLOUR_SHIFT, k = a->colours[c]++, r = 0;
  for (unsigned i = 0; i < bits; i++) r |= ((k >> i) & 1u) << (bits - 1 - i);
  return (size_t)r << SC_COLOUR_SHIFT;
}

/** Mark INTERIOR every entry of page's map (all FREE) that is no block
 * start: its colour's, those inside its blocks, its tail's. A map with an
 * entry per block has none. */
static void mark_interior(sc_page_t *page) {
  unsigned shift = page->shift;
  size_t size = sc__page_block_size(page);
  if (((size_t)1 << shift) == size) return;
  /* Every entry INTERIOR, then each block start's whole entry FREE (its
   * request slot too, with requested sizes kept). */
  memset(page->map, SC_MAP_INTERIOR, (SC_PAGE_SIZE >> shift) << sc__map_shift);
  uintptr_t first = (uintptr_t)sc__page_first(page), end = (uintptr_t)page->carve_end;
  if (sc__map_shift == 0) {
    for (uintptr_t at = first; at < end; at += size)
      page->map[sc__map_index(at, shift)] = SC_MAP_FREE;
  } else {
    for (uintptr_t at = first; at < end; at += size)
      memset(page->map + (sc__map_index(at, shift) << SC_MAP_WIDE_SHIFT), SC_MAP_FREE,
             (size_t)1 << SC_MAP_WIDE_SHIFT);
  }
}

/** Prepare `page` of `seg` to serve class c, all of it to be carved from
 * its colour (0: the page's start, its blocks aligned to their size). */
static void page_init(sc_arena_t *a, sc_segment_t *seg, sc_page_t *page, unsigned c,
                      size_t colour) {
  sc_assert(page->arena == NULL && !page->queued && page->idle_since_ns == 0);
  unsigned shift = c + SC_MIN_SHIFT;
  unsigned granule = shift < SC_COLOUR_SHIFT ? shift : SC_COLOUR_SHIFT;
  uint8_t *start = sc__page_start(page);
  page->used = 0;
  page->class_idx = (uint8_t)c;
  page->size8 = (uint8_t)(1u << (shift - 3));
  page->carve_next = start + colour;
  page->carve_end = start + colour + (((SC_PAGE_SIZE - colour) >> shift) << shift);
  page->key = sc__page_key_new(page);
  page->free = sc__list_end(page);
  page->arena = a;
  page->allocs = 0;
  page->map = sc__segment_map_take(seg, page->index, c); /* all FREE */
  page->fresh_end = start + colour;
  page->start_mask = (uint8_t)((1u << granule) - 1);
  page->shift = (uint8_t)granule;
  mark_interior(page);
  page->shared_map = page->map;
  page->shared_carved = (uint32_t)colour;
  page->shared_colour = (uint16_t)colour;
  page->shared_mask = (uint32_t)(1u << shift) - 1;
  page->shared_shift = (uint8_t)granule;
  page->shared_class = (uint8_t)c;
  page->state = SC_PAGE_ACTIVE;
  seg->pages_active++;
  a->counts[c].pages++;
  if (sc_unlikely(sc__random_placement)) sc__page_shuffle(page);
}

void sc__page_shuffle(sc_page_t *page) {
  if (sc__features & SC_FEATURE_CHECK) return; /* switched on since: see init.c */
  uintptr_t base = (uintptr_t)sc__page_first(page);
  unsigned shift = page->class_idx + SC_MIN_SHIFT;
  size_t n = ((uintptr_t)page->carve_end - base) >> shift;
  /* Fisher-Yates over the block indices, kept in each block's second word
   * (every class has two), then the list linked through the first. */
  for (size_t i = 0; i < n; i++) ((sc_block_t *)(base + (i << shift)))->key = i;
  /* The generator starts from the page's new free-list key (secret-
   * derived, so the order differs per page and per process), not from a
   * thread's state: a page is shuffled by whichever thread takes it. */
  sc_rng_t rng = {.s = sc__page_key_new(page) | 1};
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)((sc__rng_next(&rng) >> 32) * (i + 1) >> 32);
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
 * of a new segment. `aligned`: one whose blocks are aligned to their size
 * (colour 0; an empty one of c keeps its colour, so it is not taken).
 * NULL when the OS refuses memory. */
static sc_page_t *page_new(sc_arena_t *a, unsigned c, bool aligned) {
  sc_page_t *page = aligned ? NULL : sc__purge_idle_take(a, c);
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
  page_init(a, seg, page, c, aligned ? 0 : page_colour(a, c));
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
  if ((u & page->start_mask) != 0) sc__fatal_invalid(p); /* inside a block: map untouched */
#endif
  uint8_t was = (uint8_t)(*m - 1); /* sc__page_put_entry incremented it */
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

/* ---- the allocation slow path ------------------------------------------- */

/** Put `page` (queued in a's queue of c, or new) at the queue's front: the
 * class's current page. The old head loses the purge trap: only heads
 * carry it. */
static void make_head(sc_arena_t *a, unsigned c, sc_page_t *page) {
  sc_page_queue_t *q = &a->queues[c];
  if (q->first != page) {
    if (q->first != NULL) q->first->used &= ~SC_USED_SLOW;
    if (page->queued) queue_remove(q, page);
    queue_push_front(q, page);
  }
  sc__arena_refresh_current(a, c);
}

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
    sc_block_t *b = sc__page_take_any(page);
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
    if (sc__arena_has_returns(a)) {
      sc__arena_drain(a);
      if (a->current[c] != &sc__empty_page) continue;
    }
    /* 4. A new page. The old head (if any) loses the purge trap: only
     * heads carry it. */
    page = page_new(a, c, false);
    if (page == NULL) return NULL;
    make_head(a, c, page);
  }
}

/* How many pages of a class's queue an aligned request looks at before it
 * makes a page of colour 0: the one it finds becomes the current page, so
 * the walk runs once per page, not once per request; the pages of other
 * colours it passes go to the back, so the next walk looks at others. */
#define SC_ALIGNED_WALK 8

/** A block of class c aligned to `align` from one of the first pages of
 * arena a's queue of c whose colour allows it, which becomes the class's
 * current page (an exhausted page leaves the queue on the way, one of
 * another colour goes to its back), or NULL. */
static sc_block_t *take_aligned_queued(sc_arena_t *a, unsigned c, size_t align, sc_page_t **where,
                                       bool *fresh) {
  sc_page_queue_t *q = &a->queues[c];
  sc_page_t *page = q->first, *moved = NULL;
  for (unsigned seen = 0; page != NULL && page != moved && seen < SC_ALIGNED_WALK; seen++) {
    sc_page_t *next = page->next;
    if (((uintptr_t)sc__page_first(page) & (align - 1)) != 0) {
      if (page != q->first) { /* the head stays the plain requests' page */
        queue_remove(q, page);
        queue_push_back(q, page);
        if (moved == NULL) moved = page;
      }
    } else {
      if (sc__features != 0) sc__ops.block.before_take(page);
      uint32_t mark = page->shared_carved; /* raised by a fresh carve */
      sc_block_t *b = sc__page_take_any(page);
      if (b != NULL) {
        make_head(a, c, page);
        *where = page;
        *fresh = page->shared_carved != mark;
        return b;
      }
      /* Exhausted: it leaves the queue until a free, as in a refill. */
      queue_remove(q, page);
      page->used |= SC_USED_SLOW;
      if (a->current[c] == page) sc__arena_refresh_current(a, c);
    }
    page = next;
  }
  return NULL;
}

sc_block_t *sc__arena_take_aligned(sc_arena_t *a, unsigned c, size_t align, sc_page_t **where,
                                   bool *fresh) {
  sc_block_t *b = take_aligned_queued(a, c, align, where, fresh);
  if (b != NULL) return b;
  /* As a refill: what this thread freed for others goes to them, the
   * purge's pacing sees the slow path, and blocks other threads gave back
   * come home before a page is made. */
  sc__arena_flush_remote(a);
  sc__purge_poll(a);
  if (sc__arena_has_returns(a)) {
    sc__arena_drain(a);
    b = take_aligned_queued(a, c, align, where, fresh);
    if (b != NULL) return b;
  }
  /* None has room near the front: a page of the class with its blocks
   * aligned, as its current page (plain requests take from it too). */
  sc_page_t *page = page_new(a, c, true);
  if (page == NULL) return NULL;
  if (sc__features != 0) sc__ops.block.before_take(page);
  b = sc__page_take_any(page); /* a fresh page: never NULL */
  make_head(a, c, page);
  *where = page;
  *fresh = true;
  return b;
}

void *sc__alloc_aligned(size_t n, unsigned c, size_t align) {
  sc_arena_t *a = sc__arena_get();
  sc_page_t *page;
  bool fresh;
  sc_block_t *b = a != NULL ? sc__arena_take_aligned(a, c, align, &page, &fresh) : NULL;
  if (sc_likely(b != NULL)) {
    sc_validate_page(page);
    return b;
  }
  return sc__alloc_from_system(n, c); /* aligned to the class size */
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
