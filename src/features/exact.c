/* exact.c — the exact tier's out-of-line parts (exact.h): a new peak, the
 * system allocator's process-wide live and peak bytes, and the sums a
 * snapshot reads. The per-call accounting is inline, on the exact tier's
 * own fast paths (seam.c). */
#include "features/exact.h"

void *sc__exact_new_peak(size_t n, size_t g, const sc_page_t *page, void *b) {
  (void)n;
  (void)g;
  sc_exact_t *x = &page->arena->exact;
  unsigned c = page->class_idx;
  x->headroom[c] = 0; /* live is one past the old peak: the new one */
  x->peak[c]++;
  x->req_peak[c] = x->req_total[c] - x->req_freed[c] - x->req_drained[c]; /* owner view */
  return b;
}

/* ---- the system allocator: process-wide live and peak bytes ---------------------- */

/* Kept exactly while one thread runs; with more, each thread adds its
 * share once it moved by SC_SYS_LIVE_SLACK bytes (so the peak may miss up
 * to that much per thread: docs/stats.md). */

/** A thread's share of the live bytes reaches the shared counter once it
 * moved this far (or at once while it is the only thread). */
#define SC_SYS_LIVE_SLACK ((int64_t)256 << 10)

/** Add `delta` (two's complement for a decrease) to the live bytes and
 * raise the peak if the sum passed it. */
static void add_live_bytes(uint64_t delta) {
  sc_fallback_shared_t *s = &sc__fallback_shared;
  uint64_t live = atomic_fetch_add_explicit(&s->live_bytes, delta, memory_order_relaxed) + delta;
  uint64_t peak = atomic_load_explicit(&s->peak_live_bytes, memory_order_relaxed);
  while (live > peak && live < (UINT64_MAX >> 1) &&
         !atomic_compare_exchange_weak_explicit(&s->peak_live_bytes, &peak, live,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

void sc__exact_sys_live(sc_arena_t *a, int64_t delta) {
  if (a == NULL) {
    add_live_bytes((uint64_t)delta);
    return;
  }
  int64_t d = a->sys_live_delta + delta;
  uint64_t created, live, adopted;
  if (d >= SC_SYS_LIVE_SLACK || d <= -SC_SYS_LIVE_SLACK) {
    a->sys_live_delta = 0;
    add_live_bytes((uint64_t)d);
    return;
  }
  sc__arena_counts_unlocked(&created, &live, &adopted);
  if (live <= 1) { /* alone: exact */
    a->sys_live_delta = 0;
    add_live_bytes((uint64_t)d);
    return;
  }
  a->sys_live_delta = d;
}

/* ---- sums for a snapshot ----------------------------------------------------------- */

/** A relaxed load of a counter another thread may be incrementing. */
static inline uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

void sc__exact_sum(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]) {
  const sc_exact_t *x = &a->exact;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    sc_exact_sums_t *d = &sums[c];
    uint64_t peak = load(&x->peak[c]);
    d->peak += peak;
    d->live += peak - (uint64_t)__atomic_load_n(&x->headroom[c], __ATOMIC_RELAXED);
    d->req_total += load(&x->req_total[c]);
    d->req_live += load(&x->req_total[c]) - load(&x->req_freed[c]) - load(&x->req_remote[c]);
    d->req_peak += load(&x->req_peak[c]);
    for (unsigned b = 0; b < SC_BUCKETS; b++) {
      d->hist[b] += load(&x->hist_aligned[c][b]);
      if (sc__class_of_granule[b] == c) d->hist[b] += load(&x->hist[b]);
    }
  }
}
