/* SPDX-License-Identifier: MIT */
/* exact.c — the exact tier's out-of-line parts (exact.h): a new peak, and
 * the sums a snapshot reads. The per-call accounting is inline, on the
 * exact tier's own fast paths and in the seam's hooks (seam.c). */
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
