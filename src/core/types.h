/* SPDX-License-Identifier: MIT */
/* types.h — the allocator's data: blocks, pages and their
 * block maps, segments, the per-thread fast-path slots and arenas, with
 * the few inline helpers that read a page. Everything here is internal to
 * the library (hidden). The functions of each core file are declared in
 * segment.h, arena.h, debug.h and internal.h. */
#ifndef SC_TYPES_H
#define SC_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "util/os.h"

#pragma GCC visibility push(hidden)

/* A free block. The first word links the free list (encoded when hardened);
 * the checking mode keeps a key in the second while the block is free (the
 * hardened free itself reads nothing from a block: the block map says
 * whether it is live). Every class is at least 16 B, so both always fit. */
typedef struct sc_block_s {
  uintptr_t next;
  uintptr_t key;
} sc_block_t;

typedef struct sc_arena_s sc_arena_t;

/* Page states: a page serves one class of one arena at a time. */
enum {
  SC_PAGE_UNUSED = 0, /* in no queue; not yet handed to a class */
  SC_PAGE_ACTIVE = 1, /* serves a class; in its queue while it has room, or
                         in the arena's idle list once empty (purge.c) */
  SC_PAGE_PURGED = 2, /* returned to the OS, in the arena's spare pages */
};

/** Set in a page's `used` while a local free into it must leave the fast
 * path: the page is full (out of its queue), or it is a class head that
 * carries the purge trap (purge.c). With it, `(int32_t)--used <= 0` is one
 * test for "full, trapped or now empty" (arena.c: sc__page_after_free). */
#define SC_USED_SLOW 0x80000000u
/** Set in the `used` of the page a class allocates from (its queue's
 * head): that page never looks empty to a free, so a program that frees
 * its last block and allocates again stays on the fast path. */
#define SC_USED_PIN 0x40000000u
/** The count part of `used`. */
#define SC_USED_COUNT 0x3fffffffu

/* What the block map (config.h) says of each block of a page. Only the
 * page's owner writes LIVE and SAMPLED (it hands blocks out) and FREE (a
 * local free, or a drained remote one); a thread that frees another
 * thread's block moves it from LIVE or SAMPLED to PENDING with one locked
 * compare-and-swap, so that of two racing frees of one block only one can
 * win (arena.c). Each is a byte access of its own: a remote free never
 * loses a neighbour's update. LIVE is FREE - 1 (mod 256): the pop's
 * `subb $1` marks a block live and its borrow says the block was FREE; the
 * local free's `addb $1` marks it free and its zero flag says it was LIVE
 * (alloc.h), one instruction each. */
enum {
  SC_MAP_FREE = 0,    /* not handed out: free, or never carved */
  SC_MAP_SAMPLED = 2, /* handed out, and a feature must see its free (sites) */
  SC_MAP_PENDING = 3, /* freed by another thread, on its owner's remote list */
  SC_MAP_LIVE = 0xff, /* handed out */
  /* Inside a block, or outside every block (a coloured page's first
   * entries and its tail): never a block start. Only in the maps of
   * classes above 2^SC_COLOUR_SHIFT bytes, whose entries are per
   * 2^SC_COLOUR_SHIFT bytes (config.h). A pop's borrow and a free's
   * zero test both reject it, like any state but FREE and LIVE. */
  SC_MAP_INTERIOR = 0x80,
};

/* Descriptor of one 64 KiB page, kept in the segment header (never inside
 * the page, so user writes cannot reach it). Two cache lines. The first is
 * the owner's: a steady-state malloc and free read and write only it, the
 * block's map byte, and (malloc) the block. The second is read by threads
 * that free blocks of this page from elsewhere, and written only when the
 * page takes a class, carves a never-used block or changes lists: a remote
 * free never pulls the owner's line away from it. */
/* NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding): the split is the point */
typedef struct sc_page_s {
  /* -- the owner's line ------------------------------------------------- */
  sc_block_t *free;    /* local free list (LIFO); next links encoded; it ends in
                          sc__list_end(page), an odd address inside the page */
  uint8_t *carve_next; /* next block to carve in address order; blocks below it
                          were handed out since the page was last (re)carved */
  uint8_t *carve_end;  /* the end of the page's last block (its colour, then whole
                          blocks): carve_next == carve_end, nothing to carve */
  sc_arena_t *arena;   /* owner; NULL while the page serves no class */
  uint64_t allocs;     /* blocks handed out since the page took its class */
  uint8_t *map;        /* the page's block map (SC_MAP_*, one byte per block); the
                          requested sizes follow it when kept (sc__req_slot) */
  uintptr_t key;       /* the page's link secret, drawn when it takes a class
                          (sc__page_key_new): mixed with each link's slot (sc__encode) */
  uint32_t used;       /* blocks handed out and not yet freed back (owner
                          view), | SC_USED_PIN, | SC_USED_SLOW (see above) */
  uint8_t start_mask;  /* low bits every block start has clear: the block size - 1,
                          or the map granule's above 2^SC_COLOUR_SHIFT B (an address
                          with them clear whose map entry is INTERIOR is no start) */
  uint8_t size8;       /* the block size / 8: the carve's stride, one scaled lea */
  uint8_t class_idx;
  uint8_t shift; /* log2 of the map granule: of the block size, at most SC_COLOUR_SHIFT */
  /* -- read by other threads; written on slow paths ----------------------- */
  _Alignas(64) uint8_t *shared_map; /* map, for other threads */
  struct sc_page_s *next;           /* class queue / idle / spare list links */
  struct sc_page_s *prev;
  uint64_t idle_since_ns;         /* non-zero: in an idle list since then (purge.c) */
  uint32_t shared_carved;         /* offset of fresh_end, for other threads */
  uint32_t shared_mask;           /* the block size - 1, for other threads */
  uint8_t shared_shift;           /* shift (the map granule's), for other threads */
  uint8_t shared_class;           /* class_idx, for other threads */
  uint8_t state;                  /* SC_PAGE_* */
  uint8_t index;                  /* page index in the segment */
  uint8_t queued;                 /* 1 while linked in its class queue */
  uint16_t shared_colour;         /* offset of the first block (config.h), for other threads */
  uint8_t *fresh_end;             /* high-water mark of carve_next since the page took its
                                     class (the owner's; read when it carves, a slow-ish path) */
  struct sc_page_s *reclaim_next; /* on the owner's reclaimed list (reclaim.c) */
} sc_page_t;

_Static_assert(sizeof(sc_page_t) == 128, "a page descriptor is two cache lines");
_Static_assert(offsetof(sc_page_t, shift) + 1 == 64 && offsetof(sc_page_t, shared_map) == 64,
               "the owner's line is exactly full: a field more goes to the second line");

/** The block size of page's class (the owner's line). */
static inline size_t sc__page_block_size(const sc_page_t *page) { return (size_t)page->size8 << 3; }
/* How far a page's list end lies below its carve_end: carve_end is within
 * 1 KiB of the page's end (the colour and the blocks' rounding), so the
 * list end falls in the page's first 4 KiB, with its first block. malloc
 * prefetches the link it pops, the list end included: in an OS page the
 * page never touched (its last, while its blocks have not reached it) each
 * such prefetch made the processor walk the page tables, and a loop that
 * reused one block ran 2-6x slower (docs/performance.md). */
#define SC_LIST_END_BACK ((uintptr_t)SC_PAGE_SIZE - 4096 + 1)
_Static_assert(SC_SMALL_MAX <= 4096 - 16, "the list end lies in the page's first 4 KiB");

/** The end of a page's free list: an odd value inside the page, never a
 * block, so that every link of a sound list, the last one included, points
 * into its own page (the hardened check is then a single test). It is
 * stored encoded like any link, so it tells a reader nothing. carve_end
 * less SC_LIST_END_BACK: odd (carve_end is a multiple of 16), in the
 * page's first 4 KiB. */
static inline sc_block_t *sc__list_end(const sc_page_t *page) {
  return (sc_block_t *)((uintptr_t)page->carve_end - SC_LIST_END_BACK);
}
/** The start of page's data (any thread): carve_end lies in the page or
 * at its very end. */
static inline uintptr_t sc__page_base(const sc_page_t *page) {
  return ((uintptr_t)page->carve_end - 1) & ~(uintptr_t)(SC_PAGE_SIZE - 1);
}
/** The page's first block (its colour above the page's start; the
 * owner's line). carve_end less the start is the colour plus whole
 * blocks. */
static inline uint8_t *sc__page_first(const sc_page_t *page) {
  uintptr_t base = sc__page_base(page);
  return (uint8_t *)(base +
                     (((uintptr_t)page->carve_end - base) & (sc__page_block_size(page) - 1)));
}
/** True when b, read from a free list, ends it (a sound list; the pop
 * checks more: alloc.h). */
static inline bool sc__is_list_end(const sc_block_t *b) { return ((uintptr_t)b & 1) != 0; }

/** Blocks of page handed out fresh (never before) since it took its class;
 * any thread may ask (a racing reader gets a moment's view). */
static inline uint64_t sc__page_fresh(const sc_page_t *page) {
  return __atomic_load_n(&page->shared_carved, __ATOMIC_RELAXED) >>
         (page->shared_class + SC_MIN_SHIFT); /* the colour is less than a block */
}
/** The page's carving high-water mark (an offset in the page) as another
 * thread reads it: a relaxed load, a plain move; it only grows while the
 * page is active, and a block a thread holds lies below every value it can
 * read (the owner raises it with a relaxed store: sc__page_fresh_mark). */
static inline uint32_t sc__page_carved(const sc_page_t *page) {
  return __atomic_load_n(&page->shared_carved, __ATOMIC_RELAXED);
}

/** Index of block p in its page's map (the owner's view, and another
 * thread's: the same shift on either line). */
static inline size_t sc__map_index(uintptr_t p, unsigned shift) {
  return (p & (SC_PAGE_SIZE - 1)) >> shift;
}

/** log2 of the size of a map entry: 0, or SC_MAP_WIDE_SHIFT while
 * requested sizes are kept (config.h); fixed when the process starts. */
extern unsigned sc__map_shift;

/** The map entry (its state byte) of block p of a page whose map is `map`
 * and whose blocks are 2^shift bytes. */
static inline uint8_t *sc__map_entry(uint8_t *map, uintptr_t p, unsigned shift) {
  return map + (sc__map_index(p, shift) << sc__map_shift);
}

/** True when `offset` in page is a block start by the page's geometry,
 * as any thread sees it (the shared line): the map granule's low bits
 * clear and its map entry not INTERIOR. The caller saw the page active. */
static inline bool sc__shared_block_start(const sc_page_t *page, uintptr_t offset) {
  if ((offset & (((uintptr_t)1 << page->shared_shift) - 1)) != 0) return false;
  const uint8_t *e = sc__map_entry(page->shared_map, offset, page->shared_shift);
  return __atomic_load_n(e, __ATOMIC_RELAXED) != SC_MAP_INTERIOR;
}

/* A segment: SC_SEGMENT_SIZE bytes aligned to their size, owned by one
 * arena. Its first sc__meta_pages pages hold this header and the pages'
 * records (block maps, requested sizes); the rest are data pages. */
/* One 4 KiB page of a segment's map area, without requested sizes: it
 * holds the block maps of up to 2^c pages of class c (a page of class c
 * has 4096 >> c blocks), so that a page of large blocks does not keep a
 * whole OS page of map resident. Classes above 2^SC_COLOUR_SHIFT bytes
 * have maps of 1024 entries (config.h), as many as the 64 B class's: they
 * share its map pages (segment.c, map_chunks_log). */
typedef struct sc_map_page_s {
  uint64_t used; /* chunks handed out, one bit each */
  uint8_t cls;   /* its maps' c + 1 (above); 0: none */
} sc_map_page_t;

typedef struct sc_segment_s {
  /* Page 0 holds metadata, never blocks: the segment's own fields live in
   * its descriptor's place, so that the descriptor of page i is at byte
   * 128 * i (one address computation on free). */
  union {
    struct {
      sc_arena_t *arena;
      struct sc_segment_s *next; /* arena's segment list */
      uint32_t magic;
      uint32_t next_unused; /* first data page never handed out */
      uint32_t pages_active;
    };
    sc_page_t pages[SC_PAGES_PER_SEGMENT];
  };
  sc_map_page_t map_pages[SC_PAGES_PER_SEGMENT]; /* without requested sizes */
} sc_segment_t;

/* Per-arena, per-class counters that every configuration keeps. Only the
 * owning thread writes them, on slow paths (plain increments); readers sum
 * them over arenas, with the per-page counters of active pages. */
typedef struct sc_class_counts_s {
  uint64_t retired_allocs; /* allocs of pages that stopped serving the class */
  uint64_t retired_fresh;  /* fresh carves of those pages */
  uint64_t drained;        /* our blocks freed by other threads, drained back */
  uint64_t remote_frees;   /* frees of other arenas' blocks done by this thread */
  uint64_t pages;          /* pages currently serving this class */
} sc_class_counts_t;

/* Per-arena exact accounting (docs/stats.md), kept only while exact
 * statistics are on (exact.h). Only the owning thread writes them: the
 * allocation and local-free paths touch hist, req_total, headroom and
 * req_freed, indexed by request granule or class (one instruction each);
 * everything else is derived when asked (stats.c): live = peak - headroom
 * (the owner's view: handed out minus freed back to us, locally or drained),
 * frees = allocations - live - drained + remote frees. Requested bytes wrap
 * per arena (a block may be freed by a thread other than its owner); their
 * sums are exact. */
typedef struct sc_exact_s {
  uint64_t hist[SC_BUCKETS];        /* allocations by request granule; each
                                       granule belongs to one class */
  uint64_t req_total[SC_CLASSES];   /* requested bytes handed out, cumulative */
  int64_t headroom[SC_CLASSES];     /* peak - live (owner view) */
  uint64_t req_freed[SC_CLASSES];   /* requested bytes of our blocks freed by us */
  uint64_t peak[SC_CLASSES];        /* highest live (owner view) */
  uint64_t req_peak[SC_CLASSES];    /* owner-view requested bytes at that peak */
  uint64_t req_remote[SC_CLASSES];  /* requested bytes of other arenas' blocks we freed */
  uint64_t req_drained[SC_CLASSES]; /* requested bytes of our blocks others freed, drained */
  /* Aligned requests served from a larger class than their size's, by
   * class and request granule (rare: read with hist when summing). */
  uint64_t hist_aligned[SC_CLASSES][SC_BUCKETS];
} sc_exact_t;

/* Counters of the system-allocator route. Each thread keeps its own in its
 * arena (plain adds: this path must not make glibc slower, and shared
 * atomics bounce between cores); exact statistics add process-wide live
 * and peak bytes (fallback.c). Bytes are usable sizes. */
typedef struct sc_fallback_counts_s {
  uint64_t allocs;        /* blocks made: malloc, calloc, realloc-new, aligned */
  uint64_t frees;         /* blocks released: free, realloc-moved */
  uint64_t malloc_calls;  /* malloc + calloc */
  uint64_t realloc_calls; /* realloc that stayed in the system allocator */
  uint64_t aligned_calls; /* memalign family */
  uint64_t bytes_total;   /* usable bytes handed out, cumulative */
  uint64_t bytes_freed;   /* usable bytes given back, cumulative */
} sc_fallback_counts_t;

/* A page queue: pages of one class that have room, the current page first. */
typedef struct sc_page_queue_s {
  sc_page_t *first;
  sc_page_t *last;
} sc_page_queue_t;

/* Memory-return state of an arena (purge.c); all zero when it is created. */
typedef struct sc_purge_state_s {
  sc_page_queue_t idle[SC_CLASSES]; /* empty pages out of their queue, oldest first */
  uint64_t next_ns;                 /* no purge step before this time */
  uint64_t idle_pages;              /* pages in idle[] */
  uint32_t steps;                   /* purge steps so far */
  uint8_t armed;                    /* purge traps are set on the class heads */
  uint8_t busy;                     /* a purge of this arena is running */
  _Atomic int request;              /* another thread asked for a full purge */
} sc_purge_state_t;

/* What a thread reads on its fast paths, in initial-exec TLS. malloc reads
 * `current`, the page each request granule (sc__bucket_of: (n + 15) / 16)
 * takes its block from (the granules of one class share a page), and counts
 * down `sample_left`: the one test all optional features share (hooks.h).
 * free compares a page's owner with `self`. Without an arena, current[] is
 * the empty page (so malloc takes its slow path and gets one) and self is
 * SC_NOT_AN_ARENA; so is self while a feature must see every local free. */
typedef struct sc_thread_s {
  sc_page_t *current[SC_BUCKETS];
  int64_t sample_left;  /* mallocs until the features' path must see one */
  int64_t sampled_left; /* while every malloc is seen: those until a sample */
  sc_arena_t *self;
  sc_arena_t *arena; /* the thread's arena, NULL before it has one */
  /* The top of the thread's own glibc arena (sys_top.c): the trims it saw
   * when it last shrank it or bound its arena, its arena's count of system
   * calls (blocks made, freed, resized) then, and whether it made or freed
   * system blocks without an arena since. */
  uint64_t sys_shrunk_trims;
  uint64_t sys_shrunk_calls;
  uint8_t sys_used_unbound;
} sc_thread_t;

/** A value no page's `arena` ever holds; nor does it, less one (the exact
 * tier's `self` is its arena + 1: seam.c). */
#define SC_NOT_AN_ARENA ((sc_arena_t *)(uintptr_t)3)

/* A thread-local arena. */
struct sc_arena_s {
  sc_page_t *current[SC_CLASSES]; /* page to allocate from (never NULL) */
  sc_thread_t *thread;            /* owner's fast-path slots to keep in step; NULL if none */
  sc_class_counts_t counts[SC_CLASSES];
  uint8_t colours[SC_CLASSES]; /* pages of each class coloured so far (refill.c) */
  sc_page_queue_t queues[SC_CLASSES];
  _Atomic(uintptr_t) remote_free; /* blocks freed by other threads */
  /* Pages other threads freed wholly while this arena's thread made no
   * slow-path call, whose memory they gave back (reclaim.c), linked by
   * their reclaim_next. */
  _Atomic(sc_page_t *) reclaimed;
  /* Of those, per class, the pages and the coloured pages (atomic
   * accesses: walkers add before they link, the owner's drain takes
   * away): the statistics no longer count them among the class's pages. */
  uint32_t reclaimed_pages[SC_CLASSES];
  uint32_t reclaimed_coloured[SC_CLASSES];
  /* What the last reclaim walk left on remote_free (its head): nothing
   * new to look at while the list still starts there. */
  _Atomic(uintptr_t) reclaim_left;
  /* The rest of a list a walk stopped short of (SC_RECLAIM_WALK_MAX):
   * linked like the remote list; the next walk, or the drain, takes it. */
  _Atomic(uintptr_t) reclaim_stash;
  /* Blocks this thread freed for one other arena, not yet handed over:
   * a chain linked like a remote list, pushed with one CAS (arena.c). */
  sc_arena_t *batch_owner;
  uintptr_t batch_head;
  uintptr_t batch_tail;
  uint32_t batch_count;
  sc_segment_t *segments; /* segments this arena owns */
  sc_page_queue_t spare;  /* purged pages ready for any class */
  uint64_t spare_count;
  uint64_t slow_calls; /* slow-path entries (purge pacing); other threads
                          read it (the reclaim's idle test) */
  /* The reclaim's look at this arena (other threads'; atomic accesses;
   * away from remote_free, which freeing threads write): slow_calls when
   * last seen, and no walk before reclaim_next_ns (0: never looked). */
  uint64_t reclaim_slow;
  uint64_t reclaim_next_ns;
  sc_purge_state_t purge; /* memory return (purge.c) */
  sc_fallback_counts_t fallback;
  uint64_t sys_trim_mark;     /* fallback.bytes_freed when this thread last looked
                                 whether a trim is due (sys_trim.c) */
  int64_t sys_live_delta;     /* system bytes made minus freed here, not yet
                                 added to the process-wide live bytes (fallback.c) */
  sc_arena_t *next_all;       /* global list of every arena */
  sc_arena_t *next_abandoned; /* abandoned-arena stack */
  uint64_t id;
  int owned;     /* 1 while a live thread owns it */
  uint8_t bound; /* 1 while its thread uses it (until its exit begins) */
  int adopted_count;
  sc_exact_t exact; /* exact statistics (exact.h) */
  /* Tags (features/tags.h): this arena's rows of per-tag exact counters,
   * one per tag, 2^SC_TAG_ROW_SHIFT bytes each, and its thread's record
   * after them; NULL until tags are on (mapped once, never unmapped). */
  struct sc_tag_row_s *tag_rows;
};

#pragma GCC visibility pop

#endif /* SC_TYPES_H */
