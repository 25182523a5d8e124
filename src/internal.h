/* internal.h — the types shared by the allocator's files and the functions
 * each file offers the others. Names: sc_ is public (include/), sc__ is
 * internal but shared between files, static functions carry no prefix. */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* A free block. The first word links the free list (encoded when hardened);
 * the second holds the double-free key while the block is free. Every class
 * is at least 16 B, so both always fit. */
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

/* Descriptor of one 64 KiB page, kept in the segment header (never inside
 * the page, so user writes cannot reach it). Two cache lines: the first is
 * read by any thread that frees into the page and changes only when the
 * page is set up or carves; the second is the owner's, written on every
 * allocation and free. Keeping them apart stops a thread that frees blocks
 * of this page from bouncing the owner's hot line (and back). */
/* NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding): the split is the point */
typedef struct sc_page_s {
  /* -- read-mostly: set when the page starts serving a class ---------- */
  uint16_t *req;       /* requested size of each block, for statistics */
  uint32_t capacity;   /* blocks the page holds */
  uint32_t carved;     /* bump index: blocks below it were handed out */
  uint32_t carved_max; /* highest `carved` since the page took its class */
  uint32_t block_mask; /* block size - 1: an offset with these bits set is interior */
  uint8_t class_idx;
  uint8_t shift; /* log2 of the block size */
  uint8_t state; /* SC_PAGE_* */
  uint8_t index; /* page index in the segment */
  /* -- the owner's, written on every allocation and free --------------- */
  _Alignas(64) sc_block_t *free; /* local free list (LIFO); next links encoded */
  struct sc_page_s *next;        /* class queue / spare list links */
  struct sc_page_s *prev;
  uint64_t idle_since_ns; /* non-zero: in an idle list since then (purge.c) */
  uint32_t used;          /* blocks handed out and not yet freed (owner view) */
  uint8_t full;           /* 1 while out of its class queue for lack of room; also
                             set on a queued class head as a purge trap (purge.c):
                             either way a local free into it takes the slow path */
  uint8_t queued;         /* 1 while linked in its class queue */
  uint8_t dirty;          /* 1 once blocks were carved since the last purge */
} sc_page_t;

_Static_assert(sizeof(sc_page_t) == 128, "a page descriptor is two cache lines");

/* A segment: SC_SEGMENT_SIZE bytes aligned to their size, owned by one
 * arena. Its first SC_META_PAGES pages hold this header and the
 * requested-size arrays; the rest are data pages. */
typedef struct sc_segment_s {
  sc_arena_t *arena;
  struct sc_segment_s *next; /* arena's segment list */
  uint32_t magic;
  uint32_t next_unused; /* first data page never handed out */
  uint32_t pages_active;
  uint32_t pad_;
  _Alignas(64) sc_page_t pages[SC_PAGES_PER_SEGMENT];
} sc_segment_t;

/* Per-arena, per-class counters. Only the owning thread writes them (plain
 * increments); readers sum them over arenas. Frees are counted by the thread
 * that frees, so sums over arenas are exact even when frees cross threads. */
typedef struct sc_class_stats_s {
  uint64_t live;             /* owner view: handed out minus freed back to us */
  uint64_t peak;             /* highest `live` seen */
  uint64_t frees;            /* frees of this class done by this thread */
  uint64_t remote_frees;     /* ...of which the block belonged to another arena */
  uint64_t fresh_carves;     /* blocks handed out for the first time */
  uint64_t pages;            /* pages currently serving this class */
  uint64_t req_total;        /* requested bytes, cumulative */
  uint64_t req_live;         /* requested bytes of live blocks (wraps; sums ok) */
  uint64_t req_peak;         /* owner-view requested bytes when `peak` was last raised */
  uint64_t req_remote;       /* requested bytes of other arenas' blocks this thread freed */
  uint64_t req_drained;      /* requested bytes of our blocks freed by others, drained */
  uint64_t hist[SC_BUCKETS]; /* allocations by requested size; sum = allocs */
  /* Padding to a power of two keeps `&arena->stats[c]` a shift, not a
   * multiply, on the fast path. */
  uint64_t pad_[128 - 11 - SC_BUCKETS];
} sc_class_stats_t;

/* A page queue: pages of one class that have room, the current page first. */
_Static_assert(sizeof(sc_class_stats_t) == 1024, "class counters: a power-of-two stride");

typedef struct sc_page_queue_s {
  sc_page_t *first;
  sc_page_t *last;
} sc_page_queue_t;

/* Memory-return state of an arena (purge.c); all zero when it is created. */
typedef struct sc_purge_state_s {
  sc_page_queue_t idle[SC_CLASSES]; /* empty pages out of their queue, oldest first */
  sc_page_t *cursor[SC_CLASSES];    /* where the empty-page scan of a queue resumes */
  uint64_t scan_sig[SC_CLASSES];    /* class counters when its last scan pass began */
  uint64_t quiet_until[SC_CLASSES]; /* a pass that found nothing: next one not before */
  uint64_t next_ns;                 /* no purge step before this time */
  uint64_t idle_pages;              /* pages in idle[] */
  uint32_t rescan;                  /* bit c: queue c may hold empty pages */
  uint32_t found;                   /* bit c: the current scan of queue c found some */
  uint32_t steps;                   /* purge steps so far */
  uint8_t armed;                    /* purge traps are set on the class heads */
  uint8_t busy;                     /* a purge of this arena is running */
  _Atomic int request;              /* another thread asked for a full purge */
} sc_purge_state_t;

/* A thread-local arena. The first field is what the malloc fast path reads. */
struct sc_arena_s {
  sc_page_t *current[SC_CLASSES]; /* page to allocate from (never NULL) */
  uintptr_t secret;               /* copy of the process secret (hardening) */
  uintptr_t key_secret;           /* copy of the free-key secret */
  sc_class_stats_t stats[SC_CLASSES];
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
  uint64_t slow_calls;        /* slow-path entries (purge pacing) */
  sc_purge_state_t purge;     /* memory return (purge.c) */
  sc_arena_t *next_all;       /* global list of every arena */
  sc_arena_t *next_abandoned; /* abandoned-arena stack */
  uint64_t id;
  int owned; /* 1 while a live thread owns it */
  int adopted_count;
};

/* ---- size_class.c ---------------------------------------------------- */
extern const uint8_t sc__class_of_granule[SC_BUCKETS];

/* ---- init.c ---------------------------------------------------------- */
/** Secret mixed into free-list links and free keys; set once at init. */
extern uintptr_t sc__secret;
/** Second secret, for free keys only: reading a freed block's key (a
 * use-after-free read) must not reveal the link secret. */
extern uintptr_t sc__key_secret;
/** Make the process-wide state ready; cheap and idempotent. */
void sc__init(void);

/* ---- stats.c --------------------------------------------------------- */
/** Read SIZECLASS_STATS* and arm the exit/signal dump; from the constructor. */
void sc__stats_on_load(void);

/* ---- os.c ------------------------------------------------------------ */
/** mmap `size` bytes aligned to `align`; NULL when the OS refuses. */
void *sc__os_map_aligned(size_t size, size_t align);
void sc__os_unmap(void *p, size_t size);
/** Return a range's physical memory to the OS; keeps it mapped. */
bool sc__os_purge(void *p, size_t size);
uint64_t sc__os_now_ns(void);
/** Write all of buf to fd, retrying on EINTR; never allocates. */
void sc__os_write_all(int fd, const char *buf, size_t len);

/* ---- segment.c ------------------------------------------------------- */
extern _Atomic(uint64_t) sc__segment_map[SC_SEGMENT_MAP_WORDS];

/** True when p lies in a segment of ours (O(1), any thread). */
static inline bool sc__segment_owned(uintptr_t p) {
  if (p >> SC_ADDRESS_BITS) return false;
  uintptr_t idx = p >> SC_SEGMENT_SHIFT;
  uint64_t word = atomic_load_explicit(&sc__segment_map[idx >> 6], memory_order_relaxed);
  return (word >> (idx & 63)) & 1;
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
/** Unregister and unmap a segment none of whose pages is in use. */
void sc__segment_free(sc_segment_t *seg);
/** Requested-size array of data page `index` of seg. */
uint16_t *sc__segment_req_array(sc_segment_t *seg, unsigned index);

/* ---- arena.c --------------------------------------------------------- */
extern sc_tls sc_arena_t *sc__thread_arena;
/** Placeholder page with no room, so current[] is never NULL. */
extern sc_page_t sc__empty_page;
/** Arena of the calling thread, adopting or creating one; NULL if refused. */
sc_arena_t *sc__arena_get(void);
/** Slow path of allocation of class c for a request of n bytes. */
void *sc__arena_alloc_slow(size_t n, unsigned c);
/** Slow path of a local free into a page that was full. */
void sc__arena_page_unfull(sc_arena_t *a, sc_page_t *page);
/** Free of a block owned by another arena (or by an abandoned one). */
void sc__arena_free_remote(uintptr_t p, sc_segment_t *seg, sc_page_t *page);
/** Hand this thread's batched cross-thread frees to their owner. */
void sc__arena_flush_remote(sc_arena_t *a);
/** Call fn on each arena with the arena list locked. */
void sc__arenas_foreach(void (*fn)(sc_arena_t *, void *), void *ctx);
/** The same if the lock is free right now (true), else nothing (false). */
bool sc__arenas_try_foreach(void (*fn)(sc_arena_t *, void *), void *ctx);
/** Move the blocks other threads freed into a back to their pages; the
 * caller owns a, or holds the arena lock and a is abandoned. */
void sc__arena_drain(sc_arena_t *a);
/** Arenas created, live (owned by a thread) and adoptions so far. */
void sc__arena_counts(uint64_t *created, uint64_t *live, uint64_t *adopted);
/** sc__arenas_foreach and sc__arena_counts without the lock, for the stats
 * dump (signal handlers, exit with threads running): the arena list only
 * grows at its head and arenas are never unmapped, so the walk is safe;
 * counts may be a moment stale. */
void sc__arenas_foreach_unlocked(void (*fn)(sc_arena_t *, void *), void *ctx);
void sc__arena_counts_unlocked(uint64_t *created, uint64_t *live, uint64_t *adopted);
/** fork handlers. */
void sc__arena_fork_prepare(void);
void sc__arena_fork_parent(void);
void sc__arena_fork_child(void);

/* ---- fallback.c (the system allocator) -------------------------------- */
/* Counters of the system-allocator route, process-wide (atomics: this path
 * already pays for glibc's own synchronisation). Bytes are usable sizes. */
typedef struct sc_fallback_stats_s {
  _Atomic uint64_t allocs;        /* blocks made: malloc, calloc, realloc-new, aligned */
  _Atomic uint64_t frees;         /* blocks released: free, realloc-moved */
  _Atomic uint64_t malloc_calls;  /* malloc + calloc */
  _Atomic uint64_t realloc_calls; /* realloc that stayed in the system allocator */
  _Atomic uint64_t aligned_calls; /* memalign family */
  _Atomic uint64_t bytes_total;   /* usable bytes handed out, cumulative */
  _Atomic uint64_t live_bytes;
  _Atomic uint64_t peak_live_bytes;
} sc_fallback_stats_t;
extern sc_fallback_stats_t sc__fallback_stats;
/** Look up the system allocator's helpers that have no __libc_ alias; run
 * from the constructor (never from inside malloc). */
void sc__sys_bind(void);
/** glibc's malloc_trim, when found; 0 otherwise. */
int sc__sys_trim(size_t pad);
void *sc__sys_malloc(size_t n);
void *sc__sys_calloc(size_t count, size_t size);
void *sc__sys_realloc(void *p, size_t n);
void *sc__sys_memalign(size_t align, size_t n);
void sc__sys_free(void *p);
size_t sc__sys_usable_size(const void *p);

/* ---- harden.c -------------------------------------------------------- */
sc_noreturn sc_cold void sc__fatal_block(const char *what, const void *p, unsigned class_size);
sc_noreturn sc_cold void sc__fatal_list(unsigned class_size);
/** Print "sizeclass: <msg>\n" to stderr without allocating. */
void sc__warn(const char *msg);

/* Free-list link encoding: the stored word mixes the target with the
 * secret and the slot's own address (glibc safe-linking, plus a secret). */
static inline uintptr_t sc__encode(const sc_block_t *slot, const sc_block_t *next,
                                   uintptr_t secret) {
#if SC_HARDEN
  return (uintptr_t)next ^ ((uintptr_t)slot >> 12) ^ secret;
#else
  (void)slot;
  (void)secret;
  return (uintptr_t)next;
#endif
}
static inline sc_block_t *sc__decode(const sc_block_t *slot, uintptr_t word, uintptr_t secret) {
#if SC_HARDEN
  return (sc_block_t *)(word ^ ((uintptr_t)slot >> 12) ^ secret);
#else
  (void)slot;
  (void)secret;
  return (sc_block_t *)word;
#endif
}
/** Key stored in a free block; unique per block so copies don't match. */
static inline uintptr_t sc__free_key(const sc_block_t *b, uintptr_t secret) {
  return (uintptr_t)b ^ secret;
}

#endif /* SC_INTERNAL_H */
