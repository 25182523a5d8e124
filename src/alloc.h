/* alloc.h — the malloc and free fast paths, inlined into both the public
 * sc_* functions and the interposed malloc/free.
 *
 * A steady-state malloc reads the thread's slot for the class (TLS), the
 * owner's line of that page's descriptor and the block; a free reads the
 * segment bitmap word (shared, read-only), the same descriptor line and the
 * block. No statistics counter lives anywhere else: the page's `allocs`
 * and `used` are the default statistics (summed on demand, stats.c).
 * Anything unusual (no arena yet, an empty page, a full, trapped or emptied
 * page, another thread's block, a foreign pointer, an optional feature on)
 * leaves through an out-of-line slow path; optional features make every
 * call leave, so with them off the fast path carries none of their work. */
#ifndef SC_ALLOC_H
#define SC_ALLOC_H

#include "internal.h"
#include "size_class.h"

/* Hidden entry points shared by src/alloc.c and shim/. */
#pragma GCC visibility push(hidden)
void *sc__malloc_slow(size_t n);
void sc__free_slow(void *p);
void *sc__calloc(size_t count, size_t size);
void *sc__realloc(void *p, size_t n);
void *sc__memalign(size_t align, size_t n);
int sc__posix_memalign(void **out, size_t align, size_t n);
size_t sc__usable_size(const void *p);
/* The misuse reports. They never return, but are not declared noreturn:
 * the fast paths reach them by a tail jump, with no stack frame to set up
 * on the way that every call would pay for. */
sc_cold void sc__fatal_invalid(const void *p);
sc_cold void sc__fatal_double(const void *p, const sc_page_t *page);
sc_cold __attribute__((returns_nonnull)) void *sc__fatal_list_of(const sc_page_t *page);
/* The same, declared noreturn, for callers that go on after a block was
 * taken (nothing of theirs then needs to survive the call). */
sc_noreturn sc_cold void sc__fatal_list_at(const sc_page_t *page);
#pragma GCC visibility pop

/** A fresh block was carved from page up to `end`: raise the high-water
 * mark, in both lines. */
static inline void sc__page_fresh_mark(sc_page_t *page, uint8_t *end) {
  page->fresh_end = end;
  page->shared_carved = (uint32_t)(end - (page->carve_end - SC_PAGE_SIZE));
}

/** Take a block from page: the head of its free list, else the next block
 * in address order; counted in the page. NULL when the page has neither.
 * A corrupted free-list link ends in sc__fatal_list_of (for callers that
 * return the block at once: a tail jump) or, with `goes_on`, in
 * sc__fatal_list_at; neither returns. */
static inline sc_block_t *sc__page_take_ex(sc_page_t *page, bool goes_on) {
  (void)goes_on; /* only the hardened check uses it */
  sc_block_t *b = page->free;
  if (sc_likely(!sc__is_list_end(b))) {
    sc_block_t *next = sc__decode(b->next);
    page->free = next;
#if SC_HARDEN
    /* A link must stay in its page (its end does too): checked after the
     * store, so the check reuses the register the store no longer needs. */
    if (sc_unlikely((((uintptr_t)next ^ (uintptr_t)b) >> SC_PAGE_SHIFT) != 0)) {
      if (goes_on) sc__fatal_list_at(page);
      return sc__fatal_list_of(page);
    }
#endif
  } else {
    uint8_t *at = page->carve_next;
    if (sc_unlikely(at == page->carve_end)) return NULL;
    b = (sc_block_t *)at;
    at += page->block_size;
    page->carve_next = at;
    if (sc_unlikely(at > page->fresh_end)) sc__page_fresh_mark(page, at);
  }
#if SC_HARDEN
  b->key = 0; /* a live block carries no free key */
#endif
  page->used++;
  page->allocs++;
  return b;
}
static inline sc_block_t *sc__page_take(sc_page_t *page) { return sc__page_take_ex(page, false); }

/** True when p is not the start of a block handed out from page (the
 * owner's view: an interior pointer, or one past what was carved). Always
 * false when hardening is off. */
static inline bool sc__bad_local(const sc_page_t *page, uintptr_t p) {
#if SC_HARDEN
  return sc_unlikely((p & page->block_mask) != 0 || p >= (uintptr_t)page->carve_next);
#else
  (void)page;
  (void)p;
  return false;
#endif
}

/** --*used, and true when the result is <= 0 as a signed number (full,
 * trapped or emptied page): one subtract and one branch on x86-64. */
static inline bool sc__used_dec(uint32_t *used) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool le; /* the flags of used - 1 say used <= 1 (signed), that is the result <= 0 */
  __asm__("subl $1, %0" : "+m"(*used), "=@ccle"(le));
  return le;
#else
  return (int32_t)-- * used <= 0;
#endif
}

/** Put block p of page (owned by the calling thread) back on its free
 * list: 0 done, 1 done and the page needs sc__page_after_free (full,
 * trapped, or now empty), -1 misuse (p is not a live block: reported by
 * sc__page_misuse). */
static inline int sc__page_put(sc_page_t *page, void *p) {
  sc_block_t *b = (sc_block_t *)p;
  if (sc__bad_local(page, (uintptr_t)p)) return -1;
#if SC_HARDEN
  uintptr_t key = sc__free_key(b);
  if (sc_unlikely(b->key == key)) return -1;
  b->key = key;
#endif
  b->next = sc__encode(page->free);
  page->free = b;
  return sc__used_dec(&page->used);
}

/** Report the misuse sc__page_put refused (never returns). */
static inline void sc__page_misuse(const sc_page_t *page, void *p) {
  if (sc__bad_local(page, (uintptr_t)p))
    sc__fatal_invalid(p);
  else
    sc__fatal_double(p, page);
}

/** Free block p of page, owned by the calling thread: put it back, then
 * what the page needs, or the misuse report. */
static inline void sc__page_free(sc_page_t *page, void *p) {
  int r = sc__page_put(page, p);
  if (sc_likely(r == 0)) return;
  if (r > 0)
    sc__page_after_free(page);
  else
    sc__page_misuse(page, p);
}

/** Allocate n <= SC_SMALL_MAX bytes from class c; NULL + ENOMEM on failure. */
static inline void *sc__alloc_small(size_t n, unsigned c) {
  sc_block_t *b = sc__page_take(sc__thread.current[c]);
  if (sc_likely(b != NULL)) return b;
  return sc__alloc_slow_fn(n, c);
}

/** malloc(n). */
static inline void *sc__malloc_inline(size_t n) {
  if (sc_likely(n <= SC_SMALL_MAX)) return sc__alloc_small(n, sc__class_of(n));
  return sc__malloc_slow(n);
}

/** free(p), any pointer: ours, the system allocator's, or NULL. */
static inline void sc__free_inline(void *p) {
  uintptr_t u = (uintptr_t)p;
  if (sc_unlikely(!sc__segment_owned(u))) {
    sc__free_slow(p); /* NULL or the system allocator's */
    return;
  }
  sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  if (sc_unlikely(page->arena != sc__thread.self)) {
    sc__free_other(p, page);
    return;
  }
  sc__page_free(page, p);
}

#endif /* SC_ALLOC_H */
