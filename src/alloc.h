/* alloc.h — the malloc and free fast paths, inlined into both the public
 * sc_* functions and the interposed malloc/free. They are written so the
 * common case is a handful of loads and stores with no call: anything
 * unusual (no arena yet, empty free list, a full page, a remote or foreign
 * pointer) leaves through an out-of-line slow path. */
#ifndef SC_ALLOC_H
#define SC_ALLOC_H

#include "internal.h"
#include "purge.h"
#include "size_class.h"

/* Hidden entry points shared by src/alloc.c and shim/. */
void *sc__malloc_slow(size_t n);
void sc__free_slow(void *p);
void *sc__calloc(size_t count, size_t size);
void *sc__realloc(void *p, size_t n);
void *sc__memalign(size_t align, size_t n);
int sc__posix_memalign(void **out, size_t align, size_t n);
size_t sc__usable_size(const void *p);
sc_noreturn sc_cold void sc__fatal_invalid(const void *p);
sc_noreturn sc_cold void sc__fatal_list_of(const sc_page_t *page);

/** Account a block of class c handed out for a request of n bytes. */
static inline void sc__count_alloc(sc_arena_t *a, sc_page_t *page, sc_block_t *b, unsigned c,
                                   size_t n) {
  sc_class_stats_t *s = &a->stats[c];
  s->hist[sc__bucket_of(n)]++;
  s->req_total += n;
  s->req_live += n;
  page->req[((uintptr_t)b & (SC_PAGE_SIZE - 1)) >> page->shift] = (uint16_t)n;
  uint64_t live = ++s->live;
  if (sc_unlikely(live > s->peak)) {
    s->peak = live;
    s->req_peak = s->req_live + s->req_remote - s->req_drained; /* owner view */
  }
}

/** Hand out the next block of page in address order (page->carved <
 * page->capacity); fresh when no block at that index was handed out since
 * the page took its class. */
static inline void *sc__carve(sc_arena_t *a, sc_page_t *page, unsigned c, size_t n) {
  sc_block_t *b = (sc_block_t *)(sc__page_start(page) + ((size_t)page->carved++ << page->shift));
  if (sc_unlikely(page->carved > page->carved_max)) {
    page->carved_max = page->carved;
    a->stats[c].fresh_carves++;
  }
#if SC_HARDEN
  b->key = 0;
#endif
  page->used++;
  sc__count_alloc(a, page, b, c, n);
  /* Carving counts as a slow-path event for memory return's pacing: a
   * program that only carves and pops must still reach purge steps. */
  sc__purge_poll(a);
  return b;
}

/** Allocate n <= SC_SMALL_MAX bytes from class c; NULL + ENOMEM on failure. */
static inline void *sc__alloc_small(size_t n, unsigned c) {
  sc_arena_t *a = sc__thread_arena;
  if (sc_likely(a != NULL)) {
    sc_page_t *page = a->current[c];
    sc_block_t *b = page->free;
    if (sc_likely(b != NULL)) {
      sc_block_t *next = sc__decode(b, b->next, a->secret);
#if SC_HARDEN
      if (sc_unlikely((((uintptr_t)next ^ (uintptr_t)b) >> SC_PAGE_SHIFT) != 0 && next != NULL))
        sc__fatal_list_of(page);
      b->key = 0;
#endif
      page->free = next;
      page->used++;
      sc__count_alloc(a, page, b, c, n);
      return b;
    }
    if (sc_likely(page->carved < page->capacity)) return sc__carve(a, page, c, n);
  }
  return sc__arena_alloc_slow(n, c);
}

/** malloc(n). */
static inline void *sc__malloc_inline(size_t n) {
  if (sc_likely(n <= SC_SMALL_MAX)) return sc__alloc_small(n, sc__class_of(n));
  return sc__malloc_slow(n);
}

/** Check that p is the start of a block handed out from page; abort if not.
 * Compiles to nothing when hardening is off. */
static inline void sc__check_block(const sc_page_t *page, uintptr_t p) {
#if SC_HARDEN
  uintptr_t offset = p & (SC_PAGE_SIZE - 1);
  if (sc_unlikely((offset & page->block_mask) != 0 || (offset >> page->shift) >= page->carved))
    sc__fatal_invalid((const void *)p);
#else
  (void)page;
  (void)p;
#endif
}

/** free(p), any pointer: ours, the system allocator's, or NULL. */
static inline void sc__free_inline(void *p) {
  uintptr_t u = (uintptr_t)p;
  if (sc_unlikely(!sc__segment_owned(u))) {
    sc__free_slow(p); /* NULL or the system allocator's */
    return;
  }
  sc_segment_t *seg = sc__segment_of(u);
  sc_page_t *page = sc__page_of(seg, u);
  sc_arena_t *a = sc__thread_arena;
  if (sc_likely(seg->arena == a)) {
    sc_block_t *b = (sc_block_t *)p;
    unsigned c = page->class_idx;
    sc__check_block(page, u);
#if SC_HARDEN
    uintptr_t key = sc__free_key(b, a->key_secret);
    if (sc_unlikely(b->key == key)) sc__fatal_block("double free", p, (unsigned)sc__class_size(c));
    b->key = key;
#endif
    b->next = sc__encode(b, page->free, a->secret);
    page->free = b;
    page->used--;
    sc_class_stats_t *s = &a->stats[c];
    s->frees++;
    s->live--;
    s->req_live -= page->req[(u & (SC_PAGE_SIZE - 1)) >> page->shift];
    if (sc_unlikely(page->full)) sc__arena_page_unfull(a, page);
    return;
  }
  sc__arena_free_remote(u, seg, page);
}

#endif /* SC_ALLOC_H */
