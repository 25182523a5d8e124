/* SPDX-License-Identifier: MIT */
/* advisor.c — what the power-of-two classes cost, and what an intermediate
 * class would have saved. Between S/2 and S (S = 64 ... 1024) an extra
 * class of 3S/4 (48, 96, 192, 384, 768 B: all multiples of 16, so blocks
 * keep malloc's 16 B alignment) would take every request of S/2+1 ... 3S/4
 * bytes, saving S/4 bytes on each. The request histogram has 16 B buckets,
 * so the count of such requests is exact. */
#include "report/report.h"

/** Bucket of the largest request of b bytes or less (b a multiple of 16). */
static unsigned bucket_upto(uint64_t b) { return (unsigned)(b >> SC_GRANULE_SHIFT); }

/** Advice for one class. */
static sc_advice_t advise_class(const struct sc_class_stats *cs) {
  sc_advice_t a = {.size = cs->size};
  a.wasted_bytes = cs->total_block_bytes > cs->total_requested_bytes
                       ? cs->total_block_bytes - cs->total_requested_bytes
                       : 0;
  if (cs->size < 64) return a; /* 24 B or 12 B would break 16 B alignment */
  a.intermediate_size = cs->size / 4 * 3;
  /* Requests of S/2+1 ... 3S/4 bytes: buckets S/32+1 ... 3S/64. Requests of
   * S/2 or less are here only for alignment and could not move. */
  for (unsigned b = bucket_upto(cs->size / 2) + 1; b <= bucket_upto(a.intermediate_size); b++)
    a.fitting_requests += cs->request_histogram[b];
  a.saved_bytes = a.fitting_requests * (cs->size - a.intermediate_size);
  return a;
}

void sc__advise(const struct sc_stats *st, sc_advice_t advice[SC_CLASSES],
                unsigned order[SC_CLASSES]) {
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    advice[c] = advise_class(&st->classes[c]);
    /* Insertion sort by wasted bytes, most first; stable, so ties keep the
     * smaller class first. */
    unsigned i = c;
    while (i > 0 && advice[order[i - 1]].wasted_bytes < advice[c].wasted_bytes) {
      order[i] = order[i - 1];
      i--;
    }
    order[i] = c;
  }
}
