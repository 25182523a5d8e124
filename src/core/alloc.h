/* SPDX-License-Identifier: MIT */
/* alloc.h — the malloc and free fast paths, inlined into both the public
 * sc_* functions and the interposed malloc/free.
 *
 * A steady-state malloc reads the thread's slot for the request's granule
 * (TLS), counts down the thread's sample countdown, takes the block from
 * the owner's line of that page's descriptor and marks it live in the
 * page's block map. A free reads the segment bitmap word (shared,
 * read-only), the same descriptor line and the block's map byte — never
 * the block itself, which is usually cold: it only writes the free-list
 * link into it. No statistics counter lives anywhere else: the page's
 * `allocs` and `used` are the default statistics (summed on demand,
 * stats.c). Anything unusual (no arena yet, an empty page, a full, trapped
 * or emptied page, another thread's block, a foreign pointer, a block that
 * is not plainly live) leaves through an out-of-line slow path.
 *
 * Optional features share one test per path (docs/architecture.md, guarantee 9): the
 * malloc countdown, which runs out at once for the features that see every
 * malloc and after a random number of calls for the sampled ones (seam.h),
 * and on free the owner comparison, which the features that see every free
 * make fail (the thread's `self`). A block a sampled feature must see freed
 * carries SC_MAP_SAMPLED, which the free's map check sends out of line. */
#ifndef SC_ALLOC_H
#define SC_ALLOC_H

#include "core/internal.h"
#include "core/hooks.h"
#include "core/size_class.h"

/* Hidden entry points shared by src/alloc.c and shim/. */
#pragma GCC visibility push(hidden)
void *sc__malloc_slow(size_t n);
void sc__free_slow(void *p);
void *sc__calloc(size_t count, size_t size);
void *sc__realloc(void *p, size_t n);
void *sc__memalign(size_t align, size_t n);
int sc__posix_memalign(void **out, size_t align, size_t n);
size_t sc__usable_size(const void *p);
#pragma GCC visibility pop

/** A fresh block was carved from page up to `end`: raise the high-water
 * mark, in both lines. */
static inline void sc__page_fresh_mark(sc_page_t *page, uint8_t *end) {
  page->fresh_end = end;
  __atomic_store_n(&page->shared_carved, (uint32_t)((uintptr_t)end - sc__page_base(page)),
                   __ATOMIC_RELAXED);
}

/** Mark map entry m live: true when it was not FREE (a forged or
 * corrupted link led to a block in use). One subtract and one branch on
 * x86-64: FREE - 1 is LIVE, and only FREE borrows. */
static inline bool sc__map_take(uint8_t *m) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool nc;
  __asm__("subb $1, %0" : "+m"(*m), "=@ccnc"(nc));
  return nc;
#else
  uint8_t was = *m;
  *m = SC_MAP_LIVE;
  return was != SC_MAP_FREE;
#endif
}

/** True when b has any of the bits of page's start mask set: not a block
 * start (or the list end, which is odd). One test with the mask in memory
 * on x86-64 (the compiler would load it into a register first). In a page
 * of blocks above 2^SC_COLOUR_SHIFT bytes the mask is the map granule's,
 * and an address that passes it inside a block has an INTERIOR map entry,
 * which the take's map test rejects. */
static inline bool sc__not_block_start(const sc_block_t *b, const sc_page_t *page) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool nz;
  __asm__("testb %b1, %2" : "=@ccnz"(nz) : "r"(b), "m"(page->start_mask));
  return nz;
#else
  return ((uintptr_t)b & page->start_mask) != 0;
#endif
}

/** What a take does besides taking (sc__page_take_entry's `how`). */
enum {
  /** Count the block in the page's `allocs` (the default tier's figure;
   * the exact tier's own histogram counts its blocks). */
  SC_TAKE_COUNT = 1,
  /** The caller does more before it returns the block: a corrupted list
   * ends in a call of sc__fatal_list_at. Without it the caller returns
   * the block at once, and the end is a tail jump to sc__fatal_list_of. */
  SC_TAKE_GOES_ON = 2,
};

/** Take a block from page: the head of its free list, else the next block
 * in address order; marked live in the map (entries of 2^eshift bytes: 0
 * in the default tier, SC_MAP_WIDE_SHIFT with requested sizes; *index:
 * its index), counted in the page's `used` and, with SC_TAKE_COUNT, in its
 * `allocs`. NULL when the page has neither. The named forms below are what
 * callers use.
 * Hardened, the block taken is a block start of the page that the map says
 * is free: the link that led to it stayed in the page (checked when it was
 * popped), the head's low bits are tested against the start mask (an odd
 * value: the list end, which must then be the page's own) and the map's
 * borrow says FREE (not INTERIOR either: no block start). A corrupted free-list link ends in
 * sc__fatal_list_of or sc__fatal_list_at (SC_TAKE_GOES_ON); neither returns. */
static sc_always_inline sc_block_t *sc__page_take_entry(sc_page_t *page, unsigned eshift,
                                                        size_t *index, unsigned how) {
  const bool count = (how & SC_TAKE_COUNT) != 0;
  sc_block_t *b = page->free;
  if (sc_likely(!sc__not_block_start(b, page))) {
    /* The map first, then the link: b itself was checked when it became
     * the head (in its page), and a FREE map byte says it is a block of
     * this page nobody holds; the decode's check then guards the next. */
    *index = sc__map_index((uintptr_t)b, page->shift);
    page->used++; /* first: the compiler keeps it one add before the asm */
    if (count) page->allocs++;
#if SC_HARDEN
    if (sc_unlikely(sc__map_take(&page->map[*index << eshift]))) goto corrupt;
#else
    page->map[*index << eshift] = SC_MAP_LIVE;
#endif
    sc_block_t *next = sc__decode(b->next, b, page);
    page->free = next;
    /* The next block's line, for the next malloc of this class: a page's
     * free blocks are often cold (freed long ago), and the pop must read
     * its link. */
    __builtin_prefetch(next);
#if SC_HARDEN
    /* A link must stay in its page (its end does too): checked after the
     * store, so the check reuses the register the store no longer needs. */
    if (sc_unlikely((((uintptr_t)next ^ (uintptr_t)b) >> SC_PAGE_SHIFT) != 0)) goto corrupt;
#endif
#if defined(__x86_64__)
    /* b is the return value: kept in rax from its load on, it needs no
     * move before the ret (GCC would use rax for the decode and move b
     * back at the end). Never NULL: a block start of the page. */
    __asm__("" : "+a"(b));
    if (b == NULL) __builtin_unreachable();
#endif
    return b;
  } else {
    uint8_t *at = page->carve_next;
    /* A head that is no block start is never handed out: NULL, or a fresh
     * block below. */
    if (sc_unlikely(at == page->carve_end)) return NULL;
#if SC_HARDEN
    /* It must be the list end, the page's own (sc__list_end: carve_end
     * less SC_LIST_END_BACK); else a link was corrupted. (An add and a
     * compare.) */
    if (sc_unlikely((uintptr_t)b + SC_LIST_END_BACK != (uintptr_t)page->carve_end)) goto corrupt;
#endif
    if (at == NULL) __builtin_unreachable(); /* a page's blocks are never at 0 */
    b = (sc_block_t *)at;
    at += sc__page_block_size(page); /* a scaled lea */
    page->carve_next = at;
    /* Never handed out since the page was (re)carved: FREE in the map.
     * (Marked before the high-water mark moves: the mark's atomic store
     * would make the compiler load the map's address again.) */
    *index = sc__map_index((uintptr_t)b, page->shift);
    page->map[*index << eshift] = SC_MAP_LIVE;
    if (sc_unlikely(at > page->fresh_end)) sc__page_fresh_mark(page, at);
    page->used++;
    if (count) page->allocs++;
    return b;
  }
#if SC_HARDEN
corrupt:
  if (how & SC_TAKE_GOES_ON) sc__fatal_list_at(page);
  return sc__fatal_list_of(page);
#endif
}
/** The default tier's malloc (narrow map entries, counted), returning the
 * block at once. */
static sc_always_inline sc_block_t *sc__page_take_narrow(sc_page_t *page, size_t *index) {
  return sc__page_take_entry(page, 0, index, SC_TAKE_COUNT);
}
/** A take with requested sizes kept (wide map entries), counted in the
 * page's `allocs`, by a caller that goes on (the exact tier's sample). */
static sc_always_inline sc_block_t *sc__page_take_wide(sc_page_t *page, size_t *index) {
  return sc__page_take_entry(page, SC_MAP_WIDE_SHIFT, index, SC_TAKE_COUNT | SC_TAKE_GOES_ON);
}
/** The same, not counted in `allocs`: the exact tier's histogram counts it. */
static sc_always_inline sc_block_t *sc__page_take_wide_uncounted(sc_page_t *page, size_t *index) {
  return sc__page_take_entry(page, SC_MAP_WIDE_SHIFT, index, SC_TAKE_GOES_ON);
}
/** A take in whichever tier the process runs, counted, by a slow path. */
static inline sc_block_t *sc__page_take_any(sc_page_t *page) {
  size_t index;
  return sc__page_take_entry(page, sc__map_shift, &index, SC_TAKE_COUNT | SC_TAKE_GOES_ON);
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

/** Mark map entry m free: true when it was not LIVE (LIVE + 1 is FREE,
 * and only LIVE gives 0). One add and one branch on x86-64. (The name is
 * from when LIVE was 1; the exact tier's free uses it too.) */
static inline bool sc__map_dec(uint8_t *m) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool nz;
  __asm__("addb $1, %0" : "+m"(*m), "=@ccnz"(nz));
  return nz;
#else
  return ++*m != 0;
#endif
}

/** What sc__page_put_entry did. */
typedef enum {
  SC_PUT_DONE = 0,      /* back on the page's free list */
  SC_PUT_PAGE_CHANGED,  /* back on it, and the page needs sc__page_after_free:
                           it was full or trapped, or it is now empty */
  SC_PUT_NOT_LIVE = -1, /* not done: p is not a plainly live block
                           (sc__page_free_marked sorts it out) */
} sc_put_result_t;

/** Put block p of page (owned by the calling thread), whose map entry is
 * e, back on its free list. SC_PUT_NOT_LIVE covers a sampled block and
 * misuse: a pointer inside a block is caught by the start mask or by its
 * INTERIOR map entry; one to a block that is free or was never handed out,
 * by the map byte (which the test leaves incremented: sc__page_free_marked
 * restores it). */
static inline sc_put_result_t sc__page_put_entry(sc_page_t *page, void *p, uint8_t *e) {
  sc_block_t *b = (sc_block_t *)p;
#if SC_HARDEN
  if (sc_unlikely(((uint8_t)(uintptr_t)p & page->start_mask) != 0)) return SC_PUT_NOT_LIVE;
#endif
  if (sc_unlikely(sc__map_dec(e))) return SC_PUT_NOT_LIVE;
  b->next = sc__encode(page->free, b, page);
  page->free = b;
  return sc__used_dec(&page->used) ? SC_PUT_PAGE_CHANGED : SC_PUT_DONE;
}
/** The map entry (of 2^eshift bytes) of block p of page. */
static inline uint8_t *sc__page_entry(const sc_page_t *page, const void *p, unsigned eshift) {
  return &page->map[sc__map_index((uintptr_t)p, page->shift) << eshift];
}

/** Free block p of page, owned by the calling thread, whose map entry is
 * e: put it back, then what the page needs, or what its map entry asks
 * for. */
static inline void sc__page_free_entry(sc_page_t *page, void *p, uint8_t *e) {
  sc_put_result_t r = sc__page_put_entry(page, p, e);
  if (sc_likely(r == SC_PUT_DONE)) return;
  if (r == SC_PUT_PAGE_CHANGED)
    sc__page_after_free(page);
  else
    sc__page_free_marked(p, page);
}
/** The same, with map entries of 2^eshift bytes. */
static inline void sc__page_free_at(sc_page_t *page, void *p, unsigned eshift) {
  sc__page_free_entry(page, p, sc__page_entry(page, p, eshift));
}
/** The same in whichever tier the process runs. */
static inline void sc__page_free(sc_page_t *page, void *p) {
  sc__page_free_at(page, p, sc__map_shift);
}

/** --*left, and true when the result is <= 0 (a sample is due): one
 * subtract on the TLS word and one branch on x86-64. */
static inline bool sc__countdown(int64_t *left) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool le;
  __asm__("subq $1, %0" : "+m"(*left), "=@ccle"(le));
  return le;
#else
  return --*left <= 0;
#endif
}

/** Allocate n <= SC_SMALL_MAX bytes from the page of granule g (the
 * granule of n, or of a larger size for an aligned request); NULL + ENOMEM
 * on failure. The countdown comes first: the features' path then takes the
 * block itself. */
static inline void *sc__alloc_granule(size_t n, size_t g) {
  sc_thread_t *t = &sc__thread;
  sc_page_t *page = t->current[g];
  if (sc_unlikely(sc__countdown(&t->sample_left))) return sc__alloc_noted_fn(n, g, page);
  size_t index;
  sc_block_t *b = sc__page_take_narrow(page, &index); /* narrow entries: */
  if (sc_likely(b != NULL)) return b; /* with wide ones the countdown never lets it here */
  return sc__arena_alloc_slow(n, g);
}

/** Allocate n <= SC_SMALL_MAX bytes from its class. */
static inline void *sc__alloc_small(size_t n) { return sc__alloc_granule(n, sc__bucket_of(n)); }

/** malloc(n). */
static inline void *sc__malloc_inline(size_t n) {
  if (sc_likely(n <= SC_SMALL_MAX)) return sc__alloc_small(n);
  return sc__sys_malloc(n); /* the system route, a tail jump */
}

/** free(p), any pointer: ours, the system allocator's, or NULL. */
static inline void sc__free_inline(void *p) {
  uintptr_t u = (uintptr_t)p;
  uintptr_t seg = sc__segment_index(u);
  if (sc_unlikely(!sc__segment_index_owned(seg))) {
    sc__free_slow(p); /* NULL or the system allocator's */
    return;
  }
  sc_page_t *page = sc__page_of(sc__segment_at_index(seg), u);
  sc_arena_t *self = sc__thread.self;
  if (sc_unlikely(page->arena != self)) {
    sc__free_other_fn(p, page, self);
    return;
  }
  sc__page_free_at(page, p, 0); /* wide entries: self is never the owner */
}

#endif /* SC_ALLOC_H */
