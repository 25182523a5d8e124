/* exact.c — the exact tier's rare step: a new peak (exact.h). */
#include "exact.h"

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
