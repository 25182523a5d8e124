/* SPDX-License-Identifier: MIT */
/* segment.h — segments (segment.c): the map of the address
 * space that says which addresses are ours, a segment's metadata layout,
 * and finding a block's segment and page. */
#ifndef SC_SEGMENT_H
#define SC_SEGMENT_H

#include "core/types.h"

#pragma GCC visibility push(hidden)

extern _Atomic(uint8_t) sc__segment_map[SC_SEGMENT_MAP_SIZE];
/** True when blocks keep their requested size (the segments' metadata
 * holds wide map entries): set with the layout, before any segment exists. */
extern bool sc__req_arrays;
/** Pages at the start of every segment that hold metadata: SC_META_PAGES,
 * or SC_META_PAGES_REQ with requested sizes (sc__req_arrays). */
extern unsigned sc__meta_pages;
/** Bytes of metadata per data page while requested sizes are kept: its
 * map of wide entries (SC_MAP_BYTES_PER_PAGE << SC_MAP_WIDE_SHIFT). */
extern size_t sc__page_record_bytes;
/** Choose the segments' metadata layout for the whole process, before the
 * first segment: with requested sizes (wide map entries, SC_META_PAGES_REQ
 * pages of metadata) or without (the features' decision, seam.c). */
void sc__segment_set_layout(bool requests);

/** The segment map's index of address p. Only the address bits below
 * 2^47 are looked at: every pointer malloc hands out on x86-64 lies there
 * (ours and glibc's), and garbage above it is not worth an instruction on
 * every free. */
static inline uintptr_t sc__segment_index(uintptr_t p) {
  return (p >> SC_SEGMENT_SHIFT) & (SC_SEGMENT_MAP_SIZE - 1);
}
/** True when the segment of map index idx is ours (any thread). */
static inline bool sc__segment_index_owned(uintptr_t idx) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && !defined(__SANITIZE_THREAD__)
  /* One compare with the byte in memory (a relaxed load: one plain move on
   * x86-64); the compiler would load it, then test it. */
  bool nz;
  __asm__("cmpb $0, %1" : "=@ccnz"(nz) : "m"(*(const uint8_t *)&sc__segment_map[idx]));
  return nz;
#else
  return atomic_load_explicit(&sc__segment_map[idx], memory_order_relaxed) != 0;
#endif
}
/** True when p lies in a segment of ours (O(1), any thread). */
static inline bool sc__segment_owned(uintptr_t p) {
  return sc__segment_index_owned(sc__segment_index(p));
}
/** The segment of map index idx, which is ours: its base, without the
 * address bits at and above 2^47 (free: one shift of the index it looked
 * up; a pointer there is never one malloc handed out, and its write faults
 * as it would have). */
static inline sc_segment_t *sc__segment_at_index(uintptr_t idx) {
  return (sc_segment_t *)(idx << SC_SEGMENT_SHIFT);
}
static inline sc_segment_t *sc__segment_of(uintptr_t p) {
  return (sc_segment_t *)(p & ~(uintptr_t)SC_SEGMENT_MASK);
}
static inline sc_page_t *sc__page_of(sc_segment_t *seg, uintptr_t p) {
  return &seg->pages[(p & SC_SEGMENT_MASK) >> SC_PAGE_SHIFT];
}
static inline uint8_t *sc__page_start(const sc_page_t *page) {
  uintptr_t seg = (uintptr_t)page & ~(uintptr_t)SC_SEGMENT_MASK;
  return (uint8_t *)(seg + ((uintptr_t)page->index << SC_PAGE_SHIFT));
}
/** A fresh segment for `arena`, registered in the map; NULL if refused. */
sc_segment_t *sc__segment_new(sc_arena_t *arena);
/** Unregister and unmap a segment none of whose pages is in use; takes the
 * segment lock, so a walk of other arenas' pages never meets it unmapped. */
void sc__segment_free(sc_segment_t *seg);
/** The block map for data page `index` of seg about to serve class c
 * (all FREE): with requested sizes, the page's own record (its map, then
 * its sizes); without, a chunk of a map page shared with pages of c. */
uint8_t *sc__segment_map_take(sc_segment_t *seg, unsigned index, unsigned c);
/** Page `index` of seg, of class c, stops serving it: its map (all FREE)
 * goes back. */
void sc__segment_map_give(sc_segment_t *seg, unsigned index, unsigned c, uint8_t *map, bool zeroed);
/** The record of data page `index` of seg while requested sizes are kept
 * (its map and sizes: purge returns them with the page). */
uint8_t *sc__segment_record(sc_segment_t *seg, unsigned index);
/** Call fn on every active page of arena a. Takes the segment lock unless
 * `unlocked` (a dump that must not block: then it waits a bounded time and
 * returns false, having walked nothing, if another thread kept it). */
bool sc__segment_walk(sc_arena_t *a, void (*fn)(const sc_page_t *, void *), void *ctx,
                      bool unlocked);
/** fork child: the segment lock is free again. */
void sc__segment_fork_child(void);

#pragma GCC visibility pop

#endif /* SC_SEGMENT_H */
