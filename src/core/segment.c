/* SPDX-License-Identifier: MIT */
/* segment.c — segments: size-aligned runs of pages, the process-wide
 * bitmap that answers "is this pointer ours?" in O(1) from its address,
 * and walks over an arena's pages that are safe against unmapping. */
#include <sched.h>
#include <string.h>

#include "core/internal.h"
#include "util/startup.h"

/* One byte per possible segment below 2^47: 32 MiB of zero-filled .bss
 * (address space only: a page of it becomes resident when a segment it
 * covers is mapped, and one page covers 16 GiB of addresses). A byte rather
 * than a bit: free's ownership test is a load and a compare, with no shift
 * and bit test, and marking a segment is a plain store. */
_Atomic(uint8_t) sc__segment_map[SC_SEGMENT_MAP_SIZE];

bool sc__req_arrays;
unsigned sc__meta_pages = SC_META_PAGES;
unsigned sc__map_shift;
size_t sc__page_record_bytes = SC_MAP_BYTES_PER_PAGE;

sc_startup void sc__segment_set_layout(bool requests) {
  sc__req_arrays = requests;
  sc__meta_pages = requests ? SC_META_PAGES_REQ : SC_META_PAGES;
  sc__map_shift = requests ? SC_MAP_WIDE_SHIFT : 0;
  sc__page_record_bytes = SC_MAP_BYTES_PER_PAGE << sc__map_shift;
}

#define SC_SEGMENT_MAGIC 0x5C5E6A11u

_Static_assert(sizeof(sc_segment_t) <= SC_HEADER_BYTES, "segment header fits its slot");
_Static_assert(SC_HEADER_BYTES + (SC_PAGES_PER_SEGMENT - SC_META_PAGES) * SC_MAP_BYTES_PER_PAGE <=
                   SC_META_PAGES * SC_PAGE_SIZE,
               "the block maps fit the metadata pages");
_Static_assert(SC_HEADER_BYTES + (SC_PAGES_PER_SEGMENT - SC_META_PAGES_REQ) *
                                     (SC_MAP_BYTES_PER_PAGE << SC_MAP_WIDE_SHIFT) <=
                   SC_META_PAGES_REQ * SC_PAGE_SIZE,
               "the wide block maps fit the metadata pages");
_Static_assert(SC_HEADER_BYTES % 4096 == 0 && SC_MAP_BYTES_PER_PAGE % 4096 == 0,
               "records are whole OS pages: purge returns them with their page");

/* Held while a segment is unmapped and while another thread's pages are
 * walked (statistics): a spin lock, so that a dump from a signal handler can
 * try it without blocking. `lock_mine` is set in the thread that holds it. */
static _Atomic int segment_lock;
static sc_tls bool lock_mine;

static void lock(void) {
  while (atomic_exchange_explicit(&segment_lock, 1, memory_order_acquire) != 0) sched_yield();
  lock_mine = true;
}

static void unlock(void) {
  lock_mine = false;
  atomic_store_explicit(&segment_lock, 0, memory_order_release);
}

/** Take the lock within about `tries` yields; false if it stayed held. */
static bool try_lock(unsigned tries) {
  for (unsigned i = 0; i < tries; i++) {
    if (atomic_exchange_explicit(&segment_lock, 1, memory_order_acquire) == 0) {
      lock_mine = true;
      return true;
    }
    sched_yield();
  }
  return false;
}

static void map_set(uintptr_t seg, bool on) {
  atomic_store_explicit(&sc__segment_map[seg >> SC_SEGMENT_SHIFT], on, memory_order_release);
}

sc_segment_t *sc__segment_new(sc_arena_t *arena) {
  sc_segment_t *seg = sc__os_map_aligned(SC_SEGMENT_SIZE, SC_SEGMENT_SIZE);
  if (seg == NULL) return NULL;
  if (((uintptr_t)seg >> SC_ADDRESS_BITS) != 0) { /* outside what the map covers */
    sc__os_unmap(seg, SC_SEGMENT_SIZE);
    return NULL;
  }
  /* Fresh mmap memory is zero: only non-zero fields need setting. */
  seg->arena = arena;
  seg->magic = SC_SEGMENT_MAGIC;
  seg->next_unused = sc__meta_pages;
  /* Page 0's descriptor is the header itself (internal.h). */
  for (unsigned i = 1; i < SC_PAGES_PER_SEGMENT; i++) seg->pages[i].index = (uint8_t)i;
  map_set((uintptr_t)seg, true);
  return seg;
}

void sc__segment_free(sc_segment_t *seg) {
  sc_assert(seg->pages_active == 0);
  map_set((uintptr_t)seg, false);
  bool mine = lock_mine; /* a walk of this thread's may hold it already */
  if (!mine) lock();
  sc__os_unmap(seg, SC_SEGMENT_SIZE);
  if (!mine) unlock();
}

uint8_t *sc__segment_record(sc_segment_t *seg, unsigned index) {
  uint8_t *base = (uint8_t *)seg + SC_HEADER_BYTES;
  return base + (size_t)(index - sc__meta_pages) * sc__page_record_bytes;
}

/** log2 of the number of maps of pages of class c one map page holds: a
 * map has an entry per block, or per 2^SC_COLOUR_SHIFT bytes above that
 * size (config.h). */
static unsigned map_chunks_log(unsigned c) {
  return c + SC_MIN_SHIFT < SC_COLOUR_SHIFT ? c : SC_COLOUR_SHIFT - SC_MIN_SHIFT;
}

uint8_t *sc__segment_map_take(sc_segment_t *seg, unsigned index, unsigned c) {
  if (sc__req_arrays) return sc__segment_record(seg, index);
  uint8_t *area = (uint8_t *)seg + SC_HEADER_BYTES;
  c = map_chunks_log(c);     /* map pages are kept per map size (cls below) */
  unsigned chunks = 1u << c; /* per map page */
  uint64_t full = chunks == 64 ? ~(uint64_t)0 : ((uint64_t)1 << chunks) - 1;
  unsigned n = SC_PAGES_PER_SEGMENT - sc__meta_pages, spare = n;
  for (unsigned m = 0; m < n; m++) {
    sc_map_page_t *mp = &seg->map_pages[m];
    if (mp->cls == 0 && spare == n) spare = m;
    if (mp->cls != c + 1 || mp->used == full) continue;
    unsigned k = (unsigned)__builtin_ctzll(~mp->used);
    mp->used |= (uint64_t)1 << k;
    return area + (size_t)m * SC_MAP_BYTES_PER_PAGE +
           ((size_t)k << (SC_PAGE_SHIFT - SC_MIN_SHIFT - c));
  }
  /* A map page of its own for c: there is always one, a page of 16 B
   * blocks filling a whole one. */
  seg->map_pages[spare].cls = (uint8_t)(c + 1);
  seg->map_pages[spare].used = 1;
  return area + (size_t)spare * SC_MAP_BYTES_PER_PAGE;
}

void sc__segment_map_give(sc_segment_t *seg, unsigned index, unsigned c, uint8_t *map,
                          bool zeroed) {
  (void)index;
  /* Every block is free: only the INTERIOR entries of a map with entries
   * inside blocks are not FREE (unless the OS just zeroed it: not dirtied
   * again). */
  if (c + SC_MIN_SHIFT > SC_COLOUR_SHIFT && !zeroed)
    memset(map, SC_MAP_FREE, (SC_PAGE_SIZE >> SC_COLOUR_SHIFT) << sc__map_shift);
  if (sc__req_arrays) return;
  c = map_chunks_log(c);
  size_t offset = (size_t)(map - ((uint8_t *)seg + SC_HEADER_BYTES));
  sc_map_page_t *mp = &seg->map_pages[offset / SC_MAP_BYTES_PER_PAGE];
  unsigned k = (unsigned)((offset % SC_MAP_BYTES_PER_PAGE) >> (SC_PAGE_SHIFT - SC_MIN_SHIFT - c));
  mp->used &= ~((uint64_t)1 << k);
  if (mp->used == 0) mp->cls = 0;
}

bool sc__segment_walk(sc_arena_t *a, void (*fn)(const sc_page_t *, void *), void *ctx,
                      bool unlocked) {
  /* Unlocked (a dump that must not block): wait a bounded time; if the lock
   * stays held and this thread is not its holder, another thread may be
   * unmapping a segment right now, so leave the pages out. The holder
   * itself (a signal handler that interrupted it) walks safely: it unlinks
   * a segment from its arena's list before unmapping it. */
  bool locked = lock_mine;
  if (!locked) {
    if (unlocked) {
      if (!try_lock(1000)) return false;
    } else {
      lock();
    }
  }
  for (sc_segment_t *seg = __atomic_load_n(&a->segments, __ATOMIC_ACQUIRE); seg != NULL;
       seg = __atomic_load_n(&seg->next, __ATOMIC_RELAXED)) {
    uint32_t end = __atomic_load_n(&seg->next_unused, __ATOMIC_RELAXED);
    if (end > SC_PAGES_PER_SEGMENT) end = SC_PAGES_PER_SEGMENT;
    for (uint32_t i = sc__meta_pages; i < end; i++) {
      const sc_page_t *page = &seg->pages[i];
      if (__atomic_load_n(&page->state, __ATOMIC_RELAXED) == SC_PAGE_ACTIVE) fn(page, ctx);
    }
  }
  if (!locked) unlock();
  return true;
}

void sc__segment_fork_child(void) { atomic_store_explicit(&segment_lock, 0, memory_order_relaxed); }
