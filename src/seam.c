/* seam.c — the out-of-line allocation paths taken while an optional
 * feature is on (seam.h), and the decision of which are on. */
#include <errno.h>
#include <strings.h>

#include "alloc.h"
#include "exact.h"
#include "options.h"
#include "purge.h"
#include "seam.h"

uint32_t sc__features;

/** True when a SIZECLASS_STATS-style value asks for something (not unset,
 * empty, 0, off, no or false). */
static bool value_on(const char *v) {
  static const char *const off[] = {"", "0", "off", "no", "false"};
  if (v == NULL) return false;
  for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
    if (strcasecmp(v, off[i]) == 0) return false;
  return true;
}

void sc__seam_decide(void) {
  char buf[64];
  uint32_t f = sc__features; /* sc_stats_enable_exact may have run first */
  /* Exact statistics: asked for directly, or implied by a report. */
  if (value_on(sc__option("SIZECLASS_STATS_EXACT", buf, sizeof(buf))) ||
      value_on(sc__option("SIZECLASS_STATS", buf, sizeof(buf))) ||
      value_on(sc__option("SIZECLASS_STATS_SIGNAL", buf, sizeof(buf))))
    f |= SC_FEATURE_EXACT;
  sc__features = f;
  sc__meta_pages = (f & SC_FEATURE_EXACT) ? SC_META_PAGES_EXACT : 1;
}

bool sc__seam_enable(uint32_t features) {
  uint64_t created, live, adopted;
  sc__arena_counts(&created, &live, &adopted);
  if ((sc__features & features) == features) return true;
  if (created != 0) return false;
  sc__features |= features;
  sc__meta_pages = (sc__features & SC_FEATURE_EXACT) ? SC_META_PAGES_EXACT : 1;
  return true;
}

void *sc__seam_alloc(sc_arena_t *a, size_t n, unsigned c) {
  sc_block_t *b = sc__page_take(a->current[c]);
  if (b == NULL) b = sc__arena_refill(a, c);
  if (sc_unlikely(b == NULL)) {
    b = sc__sys_memalign(sc__class_size(c), n); /* the OS refused a segment */
    if (b == NULL) errno = ENOMEM;
    return b;
  }
  sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)b), (uintptr_t)b);
  if (sc__exact_on()) sc__exact_alloc(a, page, b, c, n);
  sc__purge_poll(a); /* no traps on this path: pace memory return here */
  return b;
}

void sc__seam_free_local(sc_arena_t *a, sc_page_t *page, void *p) {
  int r = sc__page_put(page, p); /* checks first: misuse aborts here */
  if (r < 0) sc__page_misuse(page, p);
  if (sc__exact_on()) sc__exact_free(a, page, (uintptr_t)p);
  if (r > 0) sc__page_after_free(page);
  sc__purge_poll(a);
}

sc_public bool sc_stats_enable_exact(void) {
  sc__init();
  return sc__seam_enable(SC_FEATURE_EXACT);
}
