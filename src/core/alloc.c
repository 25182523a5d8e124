/* SPDX-License-Identifier: MIT */
/* alloc.c — the allocation API on top of the fast paths: calloc, realloc,
 * aligned allocation, usable size, and the public sc_* names. */
#include "core/alloc.h"

#include <errno.h>
#include <string.h>

#include "core/hooks.h"
#include "core/tiers.h"
#include "sizeclass.h"

/** Requests above SC_SMALL_MAX: the system allocator. */
sc_noinline void *sc__malloc_slow(size_t n) { return sc__sys_malloc(n); }

/** free() of a pointer outside our segments: NULL, or the system's. */
sc_noinline void sc__free_slow(void *p) {
  if (p == NULL) return;
  if (sc_unlikely(sc__features != 0) && sc__ops.foreign.free(p)) return; /* a guarded block */
  sc__sys_free(p);
}

/** True when `offset` in page is the start of a block it has carved (live
 * or free: the map says which). Any thread may ask: the page's shared
 * line answers. */
static inline bool carved_block_start(const sc_page_t *page, uintptr_t offset) {
  return page->state == SC_PAGE_ACTIVE && sc__shared_block_start(page, offset) &&
         offset < sc__page_carved(page);
}

/** Page of one of our blocks (p must be owned); a pointer that is not the
 * start of a handed-out block aborts, named for the call that got it.
 * Inline: malloc_usable_size answers with it and no call. */
static sc_always_inline const sc_page_t *owned_block_page(uintptr_t p, const char *call) {
  const sc_page_t *page = sc__page_of(sc__segment_of(p), p);
  if (sc_unlikely(!carved_block_start(page, p & (SC_PAGE_SIZE - 1))))
    sc__fatal_block(call, (const void *)p, 0);
  return page;
}

void *sc__calloc(size_t count, size_t size) {
  size_t n;
  if (sc_unlikely(__builtin_mul_overflow(count, size, &n))) {
    errno = ENOMEM;
    return NULL;
  }
  if (n > SC_SMALL_MAX) return sc__sys_calloc(1, n);
  void *p = sc__malloc_inline(n);
  if (sc_likely(p != NULL)) memset(p, 0, n);
  return p;
}

/** realloc(p, n) for anything the fast paths below leave: NULL, size 0,
 * another class, features, misuse. */
static sc_noinline void *realloc_general(void *p, size_t n) {
  if (p == NULL) return sc__malloc_inline(n);
  if (n == 0) { /* glibc: realloc(p, 0) frees and returns NULL */
    sc__free_inline(p);
    return NULL;
  }
  uintptr_t u = (uintptr_t)p;
  size_t old_size;
  if (sc__segment_owned(u)) {
    const sc_page_t *page = owned_block_page(u, "realloc of invalid pointer");
    old_size = (size_t)page->shared_mask + 1;
    /* A freed block must not come back to life through realloc. */
    const uint8_t *state = sc__map_entry(page->shared_map, u, page->shared_shift);
    uint8_t st = __atomic_load_n(state, __ATOMIC_RELAXED);
    bool freed = st == SC_MAP_FREE || st == SC_MAP_PENDING; /* PENDING: freed remotely */
    /* A feature may hold freed blocks that are still live in the map (the
     * checking mode's quarantine). */
    if ((sc__features & SC_FEATURES_HOLD_FREED) && sc__ops.realloc.is_freed(p)) freed = true;
    if (sc_unlikely(freed)) sc__fatal_block("realloc of freed block", p, (unsigned)old_size);
    /* Same class: keep the block; only its requested size changes. */
    if (n <= SC_SMALL_MAX && sc__class_size(sc__class_of(n)) == old_size) {
      if (sc__features != 0) sc__ops.realloc.resized(sc__thread.arena, p, n);
      return p;
    }
  } else {
    void *q;
    if (sc_unlikely(sc__features != 0) && sc__ops.foreign.realloc(p, n, &q)) return q;
    if (n > SC_SMALL_MAX) {
      if (sc_likely(sc__features == 0)) return sc__sys_realloc(p, n);
      unsigned saved = sc__ops.realloc.enter(p); /* the new block keeps p's tag */
      q = sc__sys_realloc(p, n);
      sc__ops.realloc.leave(saved);
      return q;
    }
    old_size = sc__sys_usable_size(p);
  }
  unsigned saved = sc__features != 0 ? sc__ops.realloc.enter(p) : 0;
  void *q = sc__malloc_inline(n);
  if (sc__features != 0) sc__ops.realloc.leave(saved);
  if (q == NULL) return NULL; /* the old block stays valid */
  memcpy(q, p, old_size < n ? old_size : n);
  sc__free_inline(p);
  return q;
}

/** True when p, a pointer into our segments, is a live block of a class
 * that also serves n (n > 0) and nothing is on: realloc keeps it as it is.
 * Every check of realloc_general's same-class case, read from the page's
 * shared line; anything else is left to realloc_general, which says what
 * is wrong. */
static inline bool realloc_in_class(uintptr_t u, size_t n) {
  const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  size_t size = (size_t)page->shared_mask + 1, offset = u & (SC_PAGE_SIZE - 1);
  if (n - 1 >= size || (n <= size / 2 && size != SC_MIN_CLASS_SIZE)) return false;
  if (!carved_block_start(page, offset)) return false;
  const uint8_t *state = sc__map_entry(page->shared_map, u, page->shared_shift);
  return __atomic_load_n(state, __ATOMIC_RELAXED) == SC_MAP_LIVE;
}

void *sc__realloc(void *p, size_t n) {
  uintptr_t u = (uintptr_t)p;
  if (sc_likely(sc__features == 0)) {
    if (sc__segment_owned(u)) {
      if (sc_likely(realloc_in_class(u, n))) return p;
    } else if (p != NULL && n > SC_SMALL_MAX) {
      return sc__sys_realloc(p, n); /* glibc's block stays glibc's */
    }
  }
  return realloc_general(p, n);
}

/** memalign semantics: align is a power of two (callers round/validate). */
void *sc__memalign(size_t align, size_t n) {
  if (align <= SC_MIN_CLASS_SIZE) return sc__malloc_inline(n);
  if (align <= SC_SMALL_MAX && n <= SC_SMALL_MAX) {
    /* A block of class 2^k is aligned to 2^k, or to 64 B in a page of
     * another colour (config.h): pick the larger class, and above 64 B a
     * page of colour 0 (sc__arena_take_aligned). */
    size_t g = sc__bucket_of(n > align ? n : align);
    if (sc_unlikely(sc__features & (SC_FEATURES_EVERY_MALLOC | SC_FEATURE_GUARD)))
      return sc__tier_alloc_aligned(n, sc__class_of_granule[g], align);
    if (align > ((size_t)1 << SC_COLOUR_SHIFT)) {
      if (sc_unlikely(sc__features != 0)) /* sampled ones too: they see it */
        return sc__tier_alloc_aligned(n, sc__class_of_granule[g], align);
      /* The class's current page, when its colour allows (the common
       * case: a program that asks for one alignment of a class), else
       * a page whose colour does. */
      sc_page_t *page = sc__thread.current[g];
      if (((uintptr_t)sc__page_first(page) & (align - 1)) == 0) {
        size_t index;
        sc_block_t *b = sc__page_take_narrow(page, &index);
        if (sc_likely(b != NULL)) return b;
      }
      return sc__alloc_aligned(n, sc__class_of_granule[g], align);
    }
    return sc__alloc_granule(n, g);
  }
  return sc__sys_memalign(align, n);
}

int sc__posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  int saved = errno;
  void *p = sc__memalign(align, n);
  if (p == NULL) {
    errno = saved;
    return ENOMEM;
  }
  *out = p;
  return 0;
}

/** malloc_usable_size of what is not one of our blocks: NULL, a guarded
 * block, the system's. */
static sc_noinline size_t usable_size_other(const void *p) {
  if (p == NULL) return 0;
  size_t size;
  if (sc_unlikely(sc__features != 0) && sc__ops.foreign.usable_size(p, &size)) return size;
  return sc__sys_usable_size(p);
}

/* Programs that count their memory (a key-value server) ask after every
 * malloc and before every free: our blocks are answered inline, no call
 * (NULL's segment is never ours). */
size_t sc__usable_size(const void *p) {
  uintptr_t u = (uintptr_t)p;
  if (sc_unlikely(!sc__segment_owned(u))) return usable_size_other(p);
  size_t size =
      (size_t)owned_block_page(u, "malloc_usable_size of invalid pointer")->shared_mask + 1;
  if (sc_likely(sc__features == 0)) return size;
  return sc__ops.block.usable_size(p, size);
}

/* ---- public names ------------------------------------------------------ */

sc_public void *sc_malloc(size_t n) { return sc__malloc_inline(n); }
sc_public void sc_free(void *p) { sc__free_inline(p); }
sc_public void *sc_calloc(size_t count, size_t size) { return sc__calloc(count, size); }
sc_public void *sc_realloc(void *p, size_t n) { return sc__realloc(p, n); }
sc_public int sc_posix_memalign(void **out, size_t align, size_t n) {
  return sc__posix_memalign(out, align, n);
}
sc_public size_t sc_usable_size(const void *p) { return sc__usable_size(p); }

sc_public bool sc_owns(const void *p) {
  uintptr_t u = (uintptr_t)p;
  if (!sc__segment_owned(u)) return sc__features != 0 && sc__ops.foreign.owns(p);
  const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
  uintptr_t offset = u & (SC_PAGE_SIZE - 1);
  return page->state == SC_PAGE_ACTIVE && page->arena != NULL && offset >= page->shared_colour &&
         offset < sc__page_carved(page);
}

sc_public size_t sc_class_size(size_t n) {
  return n <= SC_SMALL_MAX ? sc__class_size(sc__class_of(n)) : 0;
}
