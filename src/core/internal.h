/* SPDX-License-Identifier: MIT */
/* internal.h — the types shared by the allocator's files (src/core/) and
 * the functions each core file offers the others and the features. Names:
 * sc_ is public (include/), sc__ is internal but shared between files,
 * static functions carry no prefix. What the core calls in the features is
 * hooks.h; what the report reads is snapshot.h. */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "util/os.h"

/* Everything declared from here on is internal to the library: hidden, so
 * that its variables are read without a detour through the GOT. */
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
  uint8_t *carve_end;  /* the page's end: carve_next == carve_end, nothing to carve */
  sc_arena_t *arena;   /* owner; NULL while the page serves no class */
  uint64_t allocs;     /* blocks handed out since the page took its class */
  uint8_t *map;        /* the page's block map (SC_MAP_*, one byte per block); the
                          requested sizes follow it when kept (sc__req_slot) */
  uintptr_t key;       /* the page's link secret, drawn when it takes a class
                          (sc__page_key_new): mixed with each link's slot (sc__encode) */
  uint32_t used;       /* blocks handed out and not yet freed back (owner
                          view), | SC_USED_PIN, | SC_USED_SLOW (see above) */
  uint16_t block_mask; /* block size - 1: an address with these bits set is interior */
  uint8_t class_idx;
  uint8_t shift; /* log2 of the block size */
  /* -- read by other threads; written on slow paths ----------------------- */
  _Alignas(64) uint8_t *shared_map; /* map, for other threads */
  struct sc_page_s *next;           /* class queue / idle / spare list links */
  struct sc_page_s *prev;
  uint64_t idle_since_ns; /* non-zero: in an idle list since then (purge.c) */
  uint32_t shared_carved; /* offset of fresh_end, for other threads */
  uint32_t shared_mask;   /* block_mask, for other threads */
  uint8_t shared_shift;   /* shift, for other threads */
  uint8_t shared_class;   /* class_idx, for other threads */
  uint8_t state;          /* SC_PAGE_* */
  uint8_t index;          /* page index in the segment */
  uint8_t queued;         /* 1 while linked in its class queue */
  uint8_t *fresh_end;     /* high-water mark of carve_next since the page took its
                             class (the owner's; read when it carves, a slow-ish path) */
} sc_page_t;

_Static_assert(sizeof(sc_page_t) == 128, "a page descriptor is two cache lines");
_Static_assert(offsetof(sc_page_t, shift) + 1 == 64 && offsetof(sc_page_t, shared_map) == 64,
               "the owner's line is exactly full: a field more goes to the second line");

/** The end of a page's free list: an odd value inside the page, never a
 * block, so that every link of a sound list, the last one included, points
 * into its own page (the hardened check is then a single test). It is
 * stored encoded like any link, so it tells a reader nothing. */
static inline sc_block_t *sc__list_end(const sc_page_t *page) {
  return (sc_block_t *)(((uintptr_t)page->carve_end - SC_PAGE_SIZE) | 1);
}
/** True when b, read from a free list, ends it (a sound list; the pop
 * checks more: alloc.h). */
static inline bool sc__is_list_end(const sc_block_t *b) { return ((uintptr_t)b & 1) != 0; }

/** Blocks of page handed out fresh (never before) since it took its class;
 * any thread may ask (a racing reader gets a moment's view). */
static inline uint64_t sc__page_fresh(const sc_page_t *page) {
  return __atomic_load_n(&page->shared_carved, __ATOMIC_RELAXED) >> page->shared_shift;
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

/* A segment: SC_SEGMENT_SIZE bytes aligned to their size, owned by one
 * arena. Its first sc__meta_pages pages hold this header and the pages'
 * records (block maps, requested sizes); the rest are data pages. */
/* One 4 KiB page of a segment's map area, without requested sizes: it
 * holds the block maps of up to 2^c pages of one class c (a page of class
 * c has 4096 >> c blocks), so that a page of large blocks does not keep a
 * whole OS page of map resident. */
typedef struct sc_map_page_s {
  uint64_t used; /* chunks handed out, one bit each */
  uint8_t cls;   /* class + 1 it serves; 0: none */
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
} sc_thread_t;

/** A value no page's `arena` ever holds; nor does it, less one (the exact
 * tier's `self` is its arena + 1: seam.c). */
#define SC_NOT_AN_ARENA ((sc_arena_t *)(uintptr_t)3)

/* A thread-local arena. */
struct sc_arena_s {
  sc_page_t *current[SC_CLASSES]; /* page to allocate from (never NULL) */
  sc_thread_t *thread;            /* owner's fast-path slots to keep in step; NULL if none */
  sc_class_counts_t counts[SC_CLASSES];
  sc_page_queue_t queues[SC_CLASSES];
  _Atomic(uintptr_t) remote_free; /* blocks freed by other threads */
  /* Blocks this thread freed for one other arena, not yet handed over:
   * a chain linked like a remote list, pushed with one CAS (arena.c). */
  sc_arena_t *batch_owner;
  uintptr_t batch_head;
  uintptr_t batch_tail;
  uint32_t batch_count;
  sc_segment_t *segments; /* segments this arena owns */
  sc_page_t *spare;       /* purged pages ready for any class */
  uint64_t spare_count;
  uint64_t slow_calls;    /* slow-path entries (purge pacing) */
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

/* ---- init.c ---------------------------------------------------------- */
/** Odd secret multiplier of the link keys (sc__encode); set once at init. */
extern uintptr_t sc__secret;
/** Secrets of the checking mode's free keys only (sc__free_key): reading a
 * freed block's key (a use-after-free read) must not reveal a link key. */
extern uintptr_t sc__key_secret;
extern uintptr_t sc__key_mult;
/** Secret mixed into remote-free links (sc__remote_encode). */
extern uintptr_t sc__remote_secret;
/** A fresh secret for a page taking a class (its `key`). */
uintptr_t sc__page_key_new(const sc_page_t *page);
/** SIZECLASS_HARDEN=random: pages hand their blocks out in a random order
 * (sc__page_shuffle); set once at init. */
extern bool sc__random_placement;
/** Make the process-wide state ready; cheap and idempotent. */
void sc__init(void);

/* ---- segment.c ------------------------------------------------------- */
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

/** True when p lies in a segment of ours (O(1), any thread). Only the
 * address bits below 2^47 are looked at: every pointer malloc hands out on
 * x86-64 lies there (ours and glibc's), and garbage above it is not worth
 * an instruction on every free. */
static inline bool sc__segment_owned(uintptr_t p) {
  uintptr_t idx = (p >> SC_SEGMENT_SHIFT) & (SC_SEGMENT_MAP_SIZE - 1);
  return atomic_load_explicit(&sc__segment_map[idx], memory_order_relaxed) != 0;
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
void sc__segment_map_give(sc_segment_t *seg, unsigned index, unsigned c, uint8_t *map);
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

/* ---- arena.c --------------------------------------------------------- */
extern sc_tls sc_thread_t sc__thread;
/** Placeholder page with no room, so current[] is never NULL. */
extern sc_page_t sc__empty_page;
/** Arena of the calling thread, adopting or creating one; NULL if refused. */
sc_arena_t *sc__arena_get(void);
/** Where the malloc fast path goes when its page has no block (and a
 * thread without an arena gets one): a request of n <= SC_SMALL_MAX bytes
 * served from the class of granule g (sc__bucket_of of n, or of the
 * alignment of an aligned request). */
void *sc__arena_alloc_slow(size_t n, size_t g);
/** A block of class c for arena a (the caller's), taken from its current
 * page or a new one, counted in the page; NULL when the OS refuses. */
void *sc__arena_refill(sc_arena_t *a, unsigned c);
/** When no segment can be had, the system allocator serves a request of n
 * bytes for class c, aligned to the class size so aligned requests stay
 * aligned (NULL with errno ENOMEM when it cannot). */
void *sc__alloc_from_system(size_t n, unsigned c);
/** Put every block of page, all free and none carved, on its free list in
 * a random order, and count them carved (SIZECLASS_HARDEN=random). */
void sc__page_shuffle(sc_page_t *page);
/** After a free (local or drained) into page left `used` <= 0 as a signed
 * number: the page was full, carries the purge trap, or is now empty. */
void sc__page_after_free(sc_page_t *page);
/** free() of a class block that the fast path did not take: another
 * arena's, ours while a feature sees every free, or not a block at all. */
void sc__free_other(void *p, sc_page_t *page);
/** The same, as sc__free_other_fn. */
void sc__free_other_any(void *p, sc_page_t *page, sc_arena_t *self);
/** A local free found block p's map byte not LIVE (sc__page_put): a
 * sampled block (its feature sees it, then it is freed), or misuse (an
 * abort with a message). */
void sc__page_free_marked(void *p, sc_page_t *page);
/** Hand this thread's batched cross-thread frees to their owner. */
void sc__arena_flush_remote(sc_arena_t *a);
/** Call fn on each arena with the arena list locked. */
void sc__arenas_foreach(void (*fn)(sc_arena_t *, void *), void *ctx);
/** The same if the lock is free right now (true), else nothing (false). */
bool sc__arenas_try_foreach(void (*fn)(sc_arena_t *, void *), void *ctx);
/** Move the blocks other threads freed into a back to their pages; the
 * caller owns a, or holds the arena lock and a is abandoned. */
void sc__arena_drain(sc_arena_t *a);
/** Point current[c] at the head of class c's queue (or the empty page) and
 * keep the owner's fast-path slots in step; the head gets the purge trap
 * while armed. */
void sc__arena_refresh_current(sc_arena_t *a, unsigned c);
/** Point the calling thread's malloc slots of class c at page. */
void sc__thread_set_class(sc_thread_t *t, unsigned c, sc_page_t *page);
/** Arenas created, live (owned by a thread) and adoptions so far. */
void sc__arena_counts(uint64_t *created, uint64_t *live, uint64_t *adopted);
/** sc__arenas_foreach and sc__arena_counts without the lock, for the stats
 * dump (signal handlers, exit with threads running): the arena list only
 * grows at its head and arenas are never unmapped, so the walk is safe;
 * counts may be a moment stale. */
void sc__arenas_foreach_unlocked(void (*fn)(sc_arena_t *, void *), void *ctx);
void sc__arena_counts_unlocked(uint64_t *created, uint64_t *live, uint64_t *adopted);
/** Frees of class blocks by threads without an arena (they have nowhere
 * else to be counted), per class. */
extern _Atomic uint64_t sc__orphan_remote_frees[SC_CLASSES];
/** fork handlers. */
void sc__arena_fork_prepare(void);
void sc__arena_fork_parent(void);
void sc__arena_fork_child(void);

/* ---- fallback.c (the system allocator) -------------------------------- */
/** The version glibc gives its allocator's symbols on x86-64: another
 * library's unversioned definitions never match it (dlvsym; dlopen of libc
 * would work too, but it allocates). */
#define SC_GLIBC_BASE_VERSION "GLIBC_2.2.5"
/** Counters of threads without an arena, and with exact statistics the
 * process-wide live and peak bytes (atomics). */
typedef struct sc_fallback_shared_s {
  _Atomic uint64_t allocs, frees, malloc_calls, realloc_calls, aligned_calls;
  _Atomic uint64_t bytes_total, bytes_freed;
  _Atomic uint64_t live_bytes, peak_live_bytes; /* exact statistics only */
} sc_fallback_shared_t;
extern sc_fallback_shared_t sc__fallback_shared;
/** Look up the system allocator's helpers that have no __libc_ alias; run
 * from the constructor (never from inside malloc). */
void sc__sys_bind(void);
/** Have glibc set its malloc up now, on one thread: glibc does that
 * lazily in its first malloc call, unsafely when several threads make
 * their first calls at once (threads can all but avoid glibc's malloc
 * under this library until then). Called once, from sc__init. */
void sc__sys_start(void);
/** Work out again whether the system route may skip its unusual cases
 * (glibc's headers, no feature on): after the features change. */
void sc__sys_refresh(void);
void *sc__sys_malloc(size_t n);
void *sc__sys_calloc(size_t count, size_t size);
void *sc__sys_realloc(void *p, size_t n);
void *sc__sys_memalign(size_t align, size_t n);
void sc__sys_free(void *p);
size_t sc__sys_usable_size(const void *p);

/* ---- sys_trim.c (when the system allocator gives memory back) ---------- */
/** Set glibc's thresholds for the paced policy (or leave glibc's own, if
 * the user chose); from the constructor. */
void sc__sys_trim_init(void);
/** Bytes of system blocks a thread frees before it looks whether a trim
 * is due. */
#define SC_SYS_TRIM_DEBT ((uint64_t)16 << 20)
/** A thread has freed SC_SYS_TRIM_DEBT bytes of system blocks since it
 * last looked: trim glibc's heaps if the paced policy is in force and the
 * purge delay has passed since the last trim. */
void sc__sys_trim_poll(void);
/** A thread without an arena freed `bytes` of system blocks (one shared,
 * atomic count of them). */
void sc__sys_trim_freed_shared(uint64_t bytes);
/** glibc's malloc_trim, when found (the constructor looks); 0 otherwise. */
int sc__sys_trim(size_t pad);
/** True when the paced policy is in force; paced trims so far. */
bool sc__sys_trim_paced(void);
uint64_t sc__sys_trim_count(void);

/* ---- validate.c (SC_DEBUG builds, config.h) ------------------------------- */
#if SC_DEBUG
/** Page's invariants, as its owner sees them (the owner is running):
 * geometry, carve pointer and high-water mark, the free list (links to
 * carved block starts, free in the block map, no cycle), free-list length
 * + used == blocks carved, blocks never carved free in the map. */
void sc__page_validate(const sc_page_t *page);
/** Arena a's invariants (its owner running, or a is nobody's and the
 * caller holds the arena lock): class queues and idle lists linked both
 * ways with the right pages and flags, each class allocating from its
 * pinned head, the owner's slots in step, pages, idle and spare pages
 * counted right, full pages full; with `pages`, every active page too. */
void sc__arena_validate(const sc_arena_t *a, bool pages);
/** "sizeclass: assertion failed: EXPR (FILE:LINE)", then abort(). */
sc_noreturn sc_cold void sc__assert_fail(const char *expr, const char *file, unsigned line);
#define sc_assert(cond) (sc_likely(cond) ? (void)0 : sc__assert_fail(#cond, __FILE__, __LINE__))
#define sc_validate_page(page) sc__page_validate(page)
/* After a purge poll: the step may have returned the page itself (a
 * trapped class head that emptied, under a requested purge). */
#define sc_validate_page_if_active(page) \
  ((page)->state == SC_PAGE_ACTIVE ? sc__page_validate(page) : (void)0)
#define sc_validate_arena(a, pages) sc__arena_validate((a), (pages))
#else
/* Nothing at all: an assertion's condition is not even evaluated (the
 * validators' arguments are plain variables). */
#define sc_assert(cond) ((void)sizeof(!(cond)))
#define sc_validate_page(page) ((void)(page))
#define sc_validate_page_if_active(page) ((void)(page))
#define sc_validate_arena(a, pages) ((void)(a), (void)(pages))
#endif

/* ---- harden.c (the messages of misuse) ------------------------------------ */
/** "sizeclass: <what> of 0x… (class N B)" (no class when class_size is 0),
 * then abort(). */
sc_noreturn sc_cold void sc__fatal_block(const char *what, const void *p, unsigned class_size);
/** "sizeclass: corrupted free list in class N B (page 0x…)" (no page when
 * page_base is 0), then abort(). */
sc_noreturn sc_cold void sc__fatal_list(unsigned class_size, uintptr_t page_base);
/* The misuse reports of the fast paths (alloc.h). They never return, but
 * are not declared noreturn: the fast paths reach them by a tail jump, with
 * no stack frame to set up on the way that every call would pay for. */
sc_cold void sc__fatal_invalid(const void *p);
sc_cold void sc__fatal_double(const void *p, const sc_page_t *page);
sc_cold __attribute__((returns_nonnull)) void *sc__fatal_list_of(const sc_page_t *page);
/* The same, declared noreturn, for callers that go on after a block was
 * taken (nothing of theirs then needs to survive the call). */
sc_noreturn sc_cold void sc__fatal_list_at(const sc_page_t *page);
/** Print "sizeclass: <msg>\n" to stderr without allocating. */
void sc__warn(const char *msg);
/** Every abort of the library's own goes through here: print
 * "sizeclass: <why>" on stderr, let the report write itself first when
 * one was asked for (reason "abort: <why>"; snapshot.h's last words,
 * bounded: a fault or a second abort while it runs stops at once), then
 * abort(). */
sc_noreturn sc_cold void sc__abort_with_report(const char *why);
/** The same, for a caller that printed its lines itself (the guard pages'
 * fault report): the report, then abort(). */
sc_noreturn sc_cold void sc__abort_said(const char *why);
/** The program called _exit or _Exit (shim.c): the report's last words
 * (reason "_exit"), then the caller ends the process. */
void sc__last_words_exit(void);

/* Free-list link encoding: the word stored in the block at `slot` is its
 * target xor a key made of the page's own secret and the slot's address,
 * (slot ^ page->key) * sc__secret: one link read through a use-after-free
 * (its target guessed) gives the product for that slot only, which says
 * nothing of another slot's or page's key without the two secrets
 * (docs/hardening.md). The list end is encoded like any link. */
static inline uintptr_t sc__link_key(const void *slot, const sc_page_t *page) {
  return ((uintptr_t)slot ^ page->key) * sc__secret;
}
static inline uintptr_t sc__encode(const sc_block_t *next, const void *slot,
                                   const sc_page_t *page) {
#if SC_HARDEN
  return (uintptr_t)next ^ sc__link_key(slot, page);
#else
  (void)slot, (void)page;
  return (uintptr_t)next;
#endif
}
static inline sc_block_t *sc__decode(uintptr_t word, const void *slot, const sc_page_t *page) {
#if SC_HARDEN
  return (sc_block_t *)(word ^ sc__link_key(slot, page));
#else
  (void)slot, (void)page;
  return (sc_block_t *)word;
#endif
}
/* The links of a remote-free list (arena.c): the freeing thread must not
 * read the owner's line, so the key is made of process secrets and the
 * slot alone. */
static inline uintptr_t sc__remote_encode(uintptr_t next, const void *slot) {
#if SC_HARDEN
  return next ^ (((uintptr_t)slot ^ sc__remote_secret) * sc__secret);
#else
  (void)slot;
  return next;
#endif
}
static inline uintptr_t sc__remote_decode(uintptr_t word, const void *slot) {
  return sc__remote_encode(word, slot); /* an xor: its own inverse */
}
/** Key the checking mode stores in a free block: unique per block so
 * copies don't match, and one read tells nothing of another block's key;
 * never 0 (a live block's key word). */
static inline uintptr_t sc__free_key(const void *b) {
  return (((uintptr_t)b ^ sc__key_secret) * sc__key_mult) | 1;
}

#pragma GCC visibility pop

#endif /* SC_INTERNAL_H */
