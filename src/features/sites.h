/* sites.h — allocation sites (SIZECLASS_SITES, docs/stats.md "Sites"):
 * which call stacks allocate each class, sampled by bytes (a per-thread
 * countdown drawn from an exponential distribution, as tcmalloc and
 * jemalloc do) or recorded for every allocation.
 *
 * While the feature is on every allocation and free reaches the seam
 * (seam.c), which calls sc__sites_alloc and sc__sites_free. An allocation
 * costs a subtraction and a branch unless the countdown runs out; a free
 * costs one load from a filter that says whether any sampled block lives
 * near its address. The sampled path (sites.c) walks the stack (stack.c),
 * finds or adds the stack's site in an mmap'd table and remembers the block
 * in an mmap'd address map (sites_map.c), so that its free takes it out of
 * its site's live count. Nothing here allocates; names are found only when
 * a report is written (symbolize.c, report_sites.c). */
#ifndef SC_SITES_H
#define SC_SITES_H

#include "core/feature_bits.h"
#include "core/internal.h"
#include "features/stack.h"

#pragma GCC visibility push(hidden)

/** The system allocator's blocks (requests > 1024 B) are sites of this
 * class index (reported as class 0). */
#define SC_SITES_SYSTEM SC_CLASSES
/** Class indices a site can have: the classes and the system allocator. */
#define SC_SITES_CLASSES (SC_CLASSES + 1)
/** The class index of the stacks that guard pages' reports name (guard.h:
 * sc__guard_sites): sites without figures, never reported. */
#define SC_SITES_GUARD SC_SITES_CLASSES
/** Estimates are fixed-point numbers with this many fractional bits. */
#define SC_SITES_Q 12
/** Sampling rate of SIZECLASS_SITES=on: about one allocation per this
 * many requested bytes (docs/performance.md: its cost and accuracy). */
#define SC_SITES_DEFAULT_RATE ((uint64_t)256 << 10)
/** Each allocation counts its request plus rate >> this many bytes (at
 * least 1): whatever their size, about one allocation in 512 is sampled,
 * so that the small classes get samples too (docs/stats.md). */
#define SC_SITES_CHARGE_SHIFT 9
/** Largest rate accepted (weights must fit the address map's 40 bits). */
#define SC_SITES_MAX_RATE ((uint64_t)1 << 27)
/** Sites the table holds; later stacks are counted in one overflow site
 * per class. */
#define SC_SITES_MAX 65536
/** The free filter, first level: one counter per 4 KiB of address space,
 * hashed (frees near one another read the same counter); second level,
 * read only when the first is not zero: one counter per block address,
 * hashed (sites.c). */
#define SC_SITES_FILTER_BITS 14
#define SC_SITES_FILTER_SHIFT 12
#define SC_SITES_BLOCK_FILTER_BITS 16

/* One site: a call stack and the class it allocated from. The counters
 * are estimates in SC_SITES_Q fixed point: each sampled allocation adds
 * its weight (1 / its probability of being sampled; exactly 1 at rate 1). */
typedef struct sc_site_s {
  _Atomic uint64_t allocs_q; /* allocations */
  _Atomic uint64_t live_q;   /* of those, not freed yet (wraps; read as signed) */
  _Atomic uint64_t wasted_q; /* bytes lost to rounding up: block size - request */
  _Atomic uint64_t bytes_q;  /* requested bytes */
  _Atomic uint64_t samples;  /* allocations actually recorded */
  uint64_t hash;             /* of the stack */
  uint16_t cls;              /* class index, or SC_SITES_SYSTEM */
  uint16_t overflow;         /* 1: the samples of stacks that found the table full */
  uint32_t depth;            /* frames in pcs (0: no stack, or an overflow site) */
  uintptr_t pcs[SC_UNWIND_DEPTH];
} sc_site_t;

/** True when allocation sites are recorded (decided once, at startup). */
static inline bool sc__sites_on(void) { return (sc__features & SC_FEATURE_SITES) != 0; }

/** The calling thread's bytes until its next sample. */
extern sc_tls int64_t sc__sites_left;
/** What each allocation counts beyond its request (0 at rate 1). */
extern int64_t sc__sites_charge;
/** Sampled live blocks per hashed 4 KiB of address space. */
extern _Atomic uint32_t sc__sites_filter[(size_t)1 << SC_SITES_FILTER_BITS];

/** Read SIZECLASS_SITES*; the feature bits to turn on (SC_FEATURE_SITES or 0). */
uint32_t sc__sites_decide(void);
/** Class allocations until the calling thread's next sampled one (a
 * geometric draw: each is sampled with chance 1 / (rate / 512), or every
 * one at rate 1). The seam's countdown counts them down (seam.c). */
int64_t sc__sites_draw_calls(void);
/** The countdown chose class block b (class c, request n): record it at
 * the calling thread's stack; false when it was not recorded (the thread
 * is inside the sampler), so that its free need not be seen. */
bool sc__sites_sample_class(void *b, unsigned c, size_t n);
/** The bytes countdown ran out on system block b (SC_SITES_SYSTEM, request
 * n): draw the next one and, unless this thread is already inside the
 * sampler, record b. */
void sc__sites_sample(void *b, unsigned c, size_t n);
/** Free of block p whose filter counter is not zero: if p was sampled, it
 * leaves its site's live count. */
void sc__sites_forget(const void *p);

static inline size_t sc__sites_filter_index(uintptr_t p) {
  return (size_t)(((p >> SC_SITES_FILTER_SHIFT) * 0x9E3779B97F4A7C15ull) >>
                  (64 - SC_SITES_FILTER_BITS));
}

/** A block was just made for n bytes: count them down; true when the
 * countdown ran out (then sc__sites_sample must see the block). */
static inline bool sc__sites_due(size_t n) {
  return sc_unlikely((sc__sites_left -= (int64_t)n + sc__sites_charge) <= 0);
}

/** True when block p may be a sampled live block (then sc__sites_forget
 * must see its free). */
static inline bool sc__sites_maybe_sampled(const void *p) {
  size_t i = sc__sites_filter_index((uintptr_t)p);
  return sc_unlikely(atomic_load_explicit(&sc__sites_filter[i], memory_order_relaxed) != 0);
}

/* ---- what the report reads (sites.c) ------------------------------------------ */

/** The sampling rate: mean bytes between samples, 1 for every allocation,
 * 0 when sites are off. */
uint64_t sc__sites_rate(void);
/** The site table and how many sites it holds (entries below that count
 * are complete; they never move). */
const sc_site_t *sc__sites_table(uint32_t *count);
/** Sampled allocations whose stack found no room in the table (counted in
 * their class's overflow site) and whose stack the unwinder could not walk. */
uint64_t sc__sites_overflowed(void);
/** True when the sites should be written as folded stacks at exit
 * (SIZECLASS_SITES_FORMAT=folded); the path template (may hold %p). */
bool sc__sites_folded(const char **path);
/** True when SIZECLASS_SITES asks for the statistics report at exit (no
 * other destination was set: the report goes to stderr). */
bool sc__sites_report_implied(void);

/** The calling thread's stack now (for a message about the allocation in
 * progress); 0 frames when sites are off or the thread is already walking. */
unsigned sc__sites_stack_now(uintptr_t *pcs, unsigned max);
/** One line naming site (an index of the table + 1): its innermost
 * function outside the C library with its callers and location, at most
 * cap bytes into buf; its length. Async-signal-safe (report_sites.c). */
size_t sc__sites_describe(uint64_t site, char *buf, size_t cap);

/* ---- the address map of sampled live blocks (sites_map.c) ------------------------- */

/** Remember block addr with value val (site index << 40 | weight); true if
 * addr was there already (*old gets its value). */
bool sc__sites_map_put(uintptr_t addr, uint64_t val, uint64_t *old);
/** Forget block addr; true if it was there (*val gets its value). */
bool sc__sites_map_take(uintptr_t addr, uint64_t *val);
/** fork: every lock of the map taken (prepare), released (parent, child). */
void sc__sites_map_fork_prepare(void);
void sc__sites_map_fork_release(bool child);

/** Take and release one of the sites' locks: a no-op for the thread that
 * forks, between the prepare and release handlers (it holds them all). */
void sc__sites_lock(void *mutex);
void sc__sites_unlock(void *mutex);

#pragma GCC visibility pop

#endif /* SC_SITES_H */
