/* segment.c — segments: size-aligned runs of pages, and the process-wide
 * bitmap that answers "is this pointer ours?" in O(1) from its address. */
#include <string.h>

#include "internal.h"

/* One bit per possible segment below 2^47: 4 MiB of zero-filled .bss, of
 * which only the words covering segments we map ever become resident. */
_Atomic(uint64_t) sc__segment_map[SC_SEGMENT_MAP_WORDS];

#define SC_SEGMENT_MAGIC 0x5C5E6A11u

_Static_assert(sizeof(sc_segment_t) <= SC_HEADER_BYTES, "segment header fits its slot");
_Static_assert(SC_HEADER_BYTES + (SC_PAGES_PER_SEGMENT - SC_META_PAGES) * SC_REQ_BYTES_PER_PAGE <=
                   SC_META_PAGES * SC_PAGE_SIZE,
               "requested-size arrays fit the metadata pages");

static void map_set(uintptr_t seg, bool on) {
  uintptr_t idx = seg >> SC_SEGMENT_SHIFT;
  uint64_t bit = (uint64_t)1 << (idx & 63);
  if (on)
    atomic_fetch_or_explicit(&sc__segment_map[idx >> 6], bit, memory_order_release);
  else
    atomic_fetch_and_explicit(&sc__segment_map[idx >> 6], ~bit, memory_order_release);
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
  seg->next_unused = SC_META_PAGES;
  for (unsigned i = 0; i < SC_PAGES_PER_SEGMENT; i++) seg->pages[i].index = (uint8_t)i;
  map_set((uintptr_t)seg, true);
  return seg;
}

void sc__segment_free(sc_segment_t *seg) {
  map_set((uintptr_t)seg, false);
  sc__os_unmap(seg, SC_SEGMENT_SIZE);
}

/** Requested-size array of data page `index` of seg. */
uint16_t *sc__segment_req_array(sc_segment_t *seg, unsigned index) {
  uint8_t *base = (uint8_t *)seg + SC_HEADER_BYTES;
  return (uint16_t *)(base + (size_t)(index - SC_META_PAGES) * SC_REQ_BYTES_PER_PAGE);
}
