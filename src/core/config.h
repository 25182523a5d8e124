/* SPDX-License-Identifier: MIT */
/* config.h — every compile-time constant and option of libsizeclass, in one
 * visible block. */
#ifndef SC_CONFIG_H
#define SC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/** Hardening (encoded free lists, double/invalid free detection); `make
 * SC_HARDEN=0` turns it off to measure its cost. */
#ifndef SC_HARDEN
#define SC_HARDEN 1
#endif

/** Invariants that check themselves (validate.c): the sanitizer and
 * stress builds set it to 1 (mk/sanitize.mk, mk/debug.mk), which makes the
 * slow paths validate their page and arena and run their sc_asserts
 * (internal.h). 0, the default, compiles every check out. */
#ifndef SC_DEBUG
#define SC_DEBUG 0
#endif

/** Number of size classes: 16, 32, 64, 128, 256, 512, 1024 bytes. */
#define SC_CLASSES 7
/** log2 of the smallest class. */
#define SC_MIN_SHIFT 4
/** Largest request served from the classes; larger goes to the system. */
#define SC_SMALL_MAX 1024
/** Request-size granule of the histogram and of the class lookup table. */
#define SC_GRANULE_SHIFT 4
/** Histogram buckets: bucket i counts requests of (i-1)*16+1 .. i*16 bytes;
 * bucket 0 counts malloc(0). */
#define SC_BUCKETS ((SC_SMALL_MAX >> SC_GRANULE_SHIFT) + 1)

/** A page is the unit a class is carved from and memory return works on. */
#define SC_PAGE_SHIFT 16
#define SC_PAGE_SIZE ((size_t)1 << SC_PAGE_SHIFT)
/** A segment is an mmap'd run of pages, aligned to its own size so that the
 * segment (and page) of any pointer is found by masking. */
#define SC_SEGMENT_SHIFT 22
#define SC_SEGMENT_SIZE ((size_t)1 << SC_SEGMENT_SHIFT)
#define SC_SEGMENT_MASK (SC_SEGMENT_SIZE - 1)
#define SC_PAGES_PER_SEGMENT (SC_SEGMENT_SIZE >> SC_PAGE_SHIFT)
/** The block map: one entry per block of a data page (SC_MAP_* in
 * internal.h), 4096 of them for a page of 16 B blocks. It lets a free check
 * a block without reading it (a freed block is usually cold; its map entry
 * sits with many others on one line), and it marks the blocks a feature
 * must see freed. An entry is one byte, or with requested sizes kept
 * (exact statistics, the checking mode) four: the state byte, a spare
 * byte, the request (uint16), so that a free finds both on one line. */
#define SC_MAP_BYTES_PER_PAGE (SC_PAGE_SIZE >> SC_MIN_SHIFT)
#define SC_MAP_WIDE_SHIFT 2
/** Page colouring: blocks of a power-of-two size start at multiples of
 * that size, so the first lines of a page's blocks (where programs keep
 * their hot fields) all fall in the same fraction of a cache's sets: a
 * quarter for 256 B blocks, a sixteenth for 1 KiB. A page of a class above
 * 2^SC_COLOUR_SHIFT bytes therefore starts its first block at a multiple
 * of 2^SC_COLOUR_SHIFT below the block size (its colour), different from
 * the page before it, and its map has an entry per 2^SC_COLOUR_SHIFT bytes
 * (not per block): the entries inside blocks say SC_MAP_INTERIOR, so that
 * a block start is still the low bits clear and an entry that is not
 * INTERIOR (docs/architecture.md, "Page colouring"). */
#define SC_COLOUR_SHIFT 6
/** Segment layout: the header (SC_HEADER_BYTES: the segment and its page
 * descriptors), then one record per data page (its map, and its requested
 * sizes when kept), then the data pages. Pages at the start of a segment
 * that hold metadata: SC_META_PAGES, or SC_META_PAGES_REQ with requested
 * sizes; sc__meta_pages says which, for the whole process. */
#define SC_HEADER_BYTES ((size_t)16384)
#define SC_META_PAGES 4
#define SC_META_PAGES_REQ 13

/** Cross-thread frees are gathered per owner arena and handed over this
 * many at a time with one compare-and-swap (a batch is also handed over
 * when the freeing thread frees to another owner, takes its own allocation
 * slow path, trims, or exits). */
#define SC_REMOTE_BATCH 32

/** A live arena whose thread has made no slow-path call for this long
 * (or the purge delay, if shorter, but never under the second figure)
 * while its remote list grew is walked by other threads' purge steps: the
 * pages other threads freed wholly are given back to the OS for it
 * (reclaim.c). */
#define SC_RECLAIM_IDLE_NS 4000000ull
#define SC_RECLAIM_IDLE_MIN_NS 1000000ull
/** Pages a reclaim walk keeps count of: half this table (a power of two);
 * the others' blocks go back first in the list, for the next walk. */
#define SC_RECLAIM_PAGES 512
/** Links a reclaim walk follows at most (a slow path of some thread runs
 * it: ~100 ns a link, each a cache miss); the rest waits for the next. */
#define SC_RECLAIM_WALK_MAX 16384u

/** Most frames an allocation site's stack keeps (the innermost ones). */
#define SC_UNWIND_DEPTH 32

/** User-space addresses we register: below 2^47 (x86-64 4-level paging). */
#define SC_ADDRESS_BITS 47
/** Entries of the segment map: one byte per possible segment below 2^47. */
#define SC_SEGMENT_MAP_SIZE ((size_t)1 << (SC_ADDRESS_BITS - SC_SEGMENT_SHIFT))

#if defined(__GNUC__)
#define sc_likely(x) __builtin_expect(!!(x), 1)
#define sc_unlikely(x) __builtin_expect(!!(x), 0)
#define sc_noinline __attribute__((noinline))
#define sc_cold __attribute__((cold, noinline))
#define sc_always_inline inline __attribute__((always_inline))
#define sc_noreturn __attribute__((noreturn))
#define sc_public __attribute__((visibility("default")))
#define sc_tls __thread __attribute__((tls_model("initial-exec")))
#else
#error "libsizeclass needs GCC or Clang"
#endif

#endif /* SC_CONFIG_H */
