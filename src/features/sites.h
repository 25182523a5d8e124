/* SPDX-License-Identifier: MIT */
/* sites.h — allocation sites (SIZECLASS_SITES, docs/stats.md "Sites"):
 * which call stacks allocate each class, sampled by bytes (a per-thread
 * countdown drawn from an exponential distribution, as tcmalloc and
 * jemalloc do) or recorded for every allocation.
 *
 * A class allocation is sampled when the seam's shared countdown runs out
 * (seam.c: the calls until the next sample, sc__sites_draw_calls), a system
 * one when its bytes run the thread's byte countdown out (sc__sites_due).
 * A sampled class block is SC_MAP_SAMPLED in its page's map, so its free
 * leaves the fast path by itself; the free of a block outside the segments
 * costs one load from a filter that says whether any sampled block lives
 * near its address. The sampled path (sites.c) walks the stack (stack.c),
 * finds or adds the stack's site in an mmap'd table and remembers the block
 * in an mmap'd address map (sites_map.c), so that its free takes it out of
 * its site's live count. Nothing here allocates; names are found only when
 * a report is written (util/symbolize.c, report/report_sites.c), which reads
 * the site table through core/snapshot.h. */
#ifndef SC_SITES_H
#define SC_SITES_H

#include "core/feature_bits.h"
#include "core/internal.h"
#include "core/snapshot.h" /* the site record and what the report reads */
#include "features/stack.h"

#pragma GCC visibility push(hidden)

/** The class index of the stacks that guard pages' reports name (guard.h:
 * sc__guard_sites): sites without figures, never reported. */
#define SC_SITES_GUARD SC_SITES_CLASSES
/** Each allocation counts its request plus rate >> this many bytes (at
 * least 1): whatever their size, about one allocation in 512 is sampled,
 * so that the small classes get samples too (docs/stats.md). */
#define SC_SITES_CHARGE_SHIFT 9
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

/** True when allocation sites are recorded (decided once, at startup). */
static inline bool sc__sites_on(void) { return (sc__features & SC_FEATURE_SITES) != 0; }

/** The calling thread's bytes until its next sample. */
extern sc_tls int64_t sc__sites_left;
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

/* ---- for the features' messages ---------------------------------------------------- */

/** The calling thread's stack now (for a message about the allocation in
 * progress); 0 frames when sites are off or the thread is already walking. */
unsigned sc__sites_stack_now(uintptr_t *pcs, unsigned max);
/** The calling thread's allocations are not sampled until
 * sc__sites_resume(the value returned): the library's own (unwinder.c's
 * dlopen), not the program's. */
uint8_t sc__sites_pause(void);
void sc__sites_resume(uint8_t was);
/** One line naming site (an index of the table + 1): its innermost
 * function outside the C library with its callers and location, at most
 * cap bytes into buf; its length. Async-signal-safe: guard pages' fault
 * reports name sites with it. */
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
