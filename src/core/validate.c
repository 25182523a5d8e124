/* SPDX-License-Identifier: MIT */
/* validate.c — the invariants of a page and of an arena, checked by
 * themselves in SC_DEBUG builds (config.h: the sanitizer and stress
 * builds). The slow paths call sc_validate_page and sc_validate_arena
 * (internal.h) at the points where their state is whole again: a refill,
 * a free that left the fast path, the end of a drain, a thread's exit. A
 * broken invariant prints one "sizeclass: assertion failed: …" line naming
 * the page or class and the figures that disagree, then aborts. Without
 * SC_DEBUG this file compiles to nothing and the calls to nothing.
 *
 * Only what the owner owns is read, with the owner running: a page's
 * owner line and its local free list, the map entries of blocks on that
 * list or never carved (another thread writes a map entry only when it
 * frees a live block), the arena's queues, idle and spare lists and its
 * segments. Remote-free lists and other arenas are never followed. */
#include "core/internal.h"

#if SC_DEBUG

#include <inttypes.h>
#include <stdlib.h>

#include "core/size_class.h"
#include "util/format.h"

/* ---- the message ---------------------------------------------------------------- */

/** Write "assertion failed: <what> (page 0x…, class N B)" into line (cap
 * SC_DIAG_CAP): the invariant that does not hold, and where (page may be
 * NULL: then class c when below SC_CLASSES, else the arena). Returns its
 * length. */
static size_t begin(char *line, const char *what, const sc_page_t *page, unsigned c) {
  size_t n = sc__format(line, SC_DIAG_CAP, "assertion failed: %s (", what);
  if (page != NULL) {
    n += sc__format(line + n, SC_DIAG_CAP - n, "page 0x%" PRIxPTR ", ",
                    (uintptr_t)sc__page_start(page));
    c = page->class_idx;
  }
  if (c < SC_CLASSES)
    n += sc__format(line + n, SC_DIAG_CAP - n, "class %" PRIu64 " B)",
                    (uint64_t)1 << (c + SC_MIN_SHIFT));
  else
    n += sc__format(line + n, SC_DIAG_CAP - n, "%s", page != NULL ? "descriptor)" : "arena)");
  return n;
}

/** Append "<sep><label> <v>" to line (length n so far); returns the new
 * length. */
static size_t num(char *line, size_t n, const char *sep, const char *label, uint64_t v) {
  return n + sc__format(line + n, SC_DIAG_CAP - n, "%s%s %" PRIu64, sep, label, v);
}

/** A broken invariant with one or two figures (label NULL: none). */
static sc_noreturn sc_cold void broken(const char *what, const sc_page_t *page, unsigned c,
                                       const char *la, uint64_t a, const char *lb, uint64_t b) {
  char line[SC_DIAG_CAP];
  size_t n = begin(line, what, page, c);
  if (la != NULL) n = num(line, n, ": ", la, a);
  if (lb != NULL) num(line, n, ", ", lb, b);
  sc__abort_with_report(line);
}

/** Abort with `what` unless ok. */
#define need(ok, what, page, c)                                            \
  do {                                                                     \
    if (sc_unlikely(!(ok))) broken((what), (page), (c), NULL, 0, NULL, 0); \
  } while (0)

void sc__assert_fail(const char *expr, const char *file, unsigned line) {
  char msg[SC_DIAG_CAP];
  sc__format(msg, sizeof(msg), "assertion failed: %s (%s:%u)", expr, file, line);
  sc__abort_with_report(msg);
}

/* ---- a page --------------------------------------------------------------------- */

/** The state byte of block index i in page's map. */
static uint8_t map_state(const sc_page_t *page, size_t i) {
  return __atomic_load_n(&page->map[i << sc__map_shift], __ATOMIC_RELAXED);
}

void sc__page_validate(const sc_page_t *page) {
  if (page == &sc__empty_page) return;
  need(page->state == SC_PAGE_ACTIVE && page->arena != NULL, "a page in use is active and owned",
       page, 0);
  /* Geometry, on both lines. */
  uintptr_t base = (uintptr_t)sc__page_start(page);
  need(page->class_idx < SC_CLASSES, "the page's class is one", page, 0);
  unsigned shift = page->class_idx + SC_MIN_SHIFT; /* the block size's */
  size_t size = (size_t)1 << shift, mask = size - 1;
  unsigned granule = shift < SC_COLOUR_SHIFT ? shift : SC_COLOUR_SHIFT;
  need(page->shift == granule && page->start_mask == (1u << granule) - 1 &&
           sc__page_block_size(page) == size,
       "the page's map granule and start mask follow its class", page, 0);
  /* Its colour, then whole blocks, up to the end of the last that fits. */
  uintptr_t first = (uintptr_t)sc__page_first(page) - base, end = (uintptr_t)page->carve_end - base;
  need(sc__page_base(page) == base && (first & ((1u << SC_COLOUR_SHIFT) - 1)) == 0 &&
           (first == 0 || shift > SC_COLOUR_SHIFT) && end <= SC_PAGE_SIZE &&
           end + size > SC_PAGE_SIZE,
       "the page's blocks start at its colour and end where the last that fits ends", page, 0);
  need(page->shared_shift == granule && page->shared_mask == mask &&
           page->shared_class == page->class_idx && page->shared_map == page->map,
       "the shared line mirrors the owner's geometry", page, 0);
  /* The carve pointer and the high-water mark (offsets in the page). */
  uintptr_t next = (uintptr_t)page->carve_next - base, fresh = (uintptr_t)page->fresh_end - base;
  if (next < first || next > end || ((next - first) & mask) != 0)
    broken("carve_next is a block boundary inside the page", page, 0, "offset", next, NULL, 0);
  if (fresh < next || fresh > end)
    broken("the high-water mark is at or above carve_next", page, 0, "mark", fresh, "carve_next",
           next);
  if (page->shared_carved != fresh)
    broken("shared_carved is the high-water mark", page, 0, "shared_carved", page->shared_carved,
           "mark", fresh);
  /* The free list: links inside the carved blocks, each a block start and
   * free in the map; no longer than the blocks carved (no cycle). */
  size_t carved = (next - first) >> shift, listed = 0;
  const sc_block_t *b = page->free;
  while (!sc__is_list_end(b)) {
    uintptr_t off = (uintptr_t)b - base;
    if (off >= next || off < first)
      broken("a free-list link points into the carved blocks", page, 0, "link to offset", off,
             "carve_next", next);
    if (((off - first) & mask) != 0)
      broken("a free-list link is a block start", page, 0, "link to offset", off, NULL, 0);
    if (++listed > carved)
      broken("the free list is no longer than the carved blocks (a cycle?)", page, 0, "listed",
             listed, "carved", carved);
    uint8_t st = map_state(page, off >> granule);
    if (st != SC_MAP_FREE)
      broken("a block on the free list is free in the block map", page, 0, "entry", off >> granule,
             "state", st);
    b = sc__decode(b->next, b, page);
  }
  if (b != sc__list_end(page))
    broken("the free list ends in its page's end mark", page, 0, NULL, 0, NULL, 0);
  uint64_t used = page->used & SC_USED_COUNT;
  if (listed + used != carved) {
    char line[SC_DIAG_CAP];
    size_t n = begin(line, "free-list length + used == blocks carved below carve_next", page, 0);
    n = num(line, n, ": ", "free list", listed);
    n = num(line, n, ", ", "used", used);
    num(line, n, ", ", "carved", carved);
    sc__abort_with_report(line);
  }
  /* Blocks never carved (since the page was last carved from its start)
   * are free in the map; every entry that is no block start is INTERIOR. */
  for (size_t i = 0; i < (SC_PAGE_SIZE >> granule); i++) {
    uintptr_t off = (uintptr_t)i << granule;
    bool start = off >= first && off < end && ((off - first) & mask) == 0;
    if (!start && map_state(page, i) != SC_MAP_INTERIOR)
      broken("an entry of the block map that is no block start is INTERIOR", page, 0, "entry", i,
             "state", map_state(page, i));
    if (start && off >= next && map_state(page, i) != SC_MAP_FREE)
      broken("a block at or above carve_next is free in the block map", page, 0, "entry", i,
             "state", map_state(page, i));
  }
}

/* ---- an arena ------------------------------------------------------------------- */

/** Walk list q of arena a (class c): links both ways, every page active,
 * a's, of class c; `queued` says which list (class queue or idle list).
 * Returns the pages in it (at most bound). */
static uint64_t walk_list(const sc_arena_t *a, const sc_page_queue_t *q, unsigned c, bool queued,
                          uint64_t bound) {
  const sc_page_t *prev = NULL;
  uint64_t n = 0;
  for (const sc_page_t *p = q->first; p != NULL; prev = p, p = p->next) {
    if (++n > bound)
      broken("a list holds no more pages than the class has (a cycle?)", NULL, c, "listed", n,
             "pages", bound);
    need(p->prev == prev,
         queued ? "the class queue's links agree both ways"
                : "the idle list's links agree both ways",
         p, c);
    need(p->state == SC_PAGE_ACTIVE && p->arena == a && p->class_idx == c,
         "a listed page is an active page of the arena and the class", p, c);
    if (queued) {
      need(p->queued == 1 && p->idle_since_ns == 0, "a page in its class queue is marked queued", p,
           c);
      need(p == q->first || (p->used & (SC_USED_PIN | SC_USED_SLOW)) == 0,
           "only the head of a class queue is pinned or trapped", p, c);
    } else {
      need(p->queued == 0 && p->idle_since_ns != 0, "an idle page is marked idle", p, c);
      if ((p->used & SC_USED_COUNT) != 0)
        broken("an idle page has no block in use", p, c, "used", p->used & SC_USED_COUNT, NULL, 0);
    }
  }
  need(q->last == prev, "a list's last page is the one its links end at", NULL, c);
  return n;
}

/** Count the active pages of a's segments per class into active[] (and
 * validate each, with `pages`). */
static void walk_segments(const sc_arena_t *a, uint64_t active[SC_CLASSES], bool pages) {
  for (const sc_segment_t *seg = a->segments; seg != NULL; seg = seg->next) {
    need(seg->arena == a, "a segment of the arena's list is the arena's", NULL, SC_CLASSES);
    need(seg->next_unused >= sc__meta_pages && seg->next_unused <= SC_PAGES_PER_SEGMENT,
         "a segment's next unused page is a data page", NULL, SC_CLASSES);
    uint32_t in_seg = 0;
    for (uint32_t i = sc__meta_pages; i < seg->next_unused; i++) {
      const sc_page_t *p = &seg->pages[i];
      if (p->state != SC_PAGE_ACTIVE) continue;
      need(p->arena == a && p->class_idx < SC_CLASSES, "an active page of a segment is its arena's",
           p, 0);
      in_seg++;
      active[p->class_idx]++;
      /* In no list: a full page, which a free brings back. */
      if (!p->queued && p->idle_since_ns == 0)
        need((p->used & SC_USED_SLOW) != 0 && sc__is_list_end(p->free) &&
                 p->carve_next == p->carve_end,
             "a page out of its class queue is full and marked slow", p, 0);
      if (pages) sc__page_validate(p);
    }
    if (seg->pages_active != in_seg)
      broken("a segment counts its active pages", NULL, SC_CLASSES, "counted", seg->pages_active,
             "active", in_seg);
  }
}

void sc__arena_validate(const sc_arena_t *a, bool pages) {
  uint64_t active[SC_CLASSES] = {0}, idle = 0;
  walk_segments(a, active, pages);
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    if (a->counts[c].pages != active[c])
      broken("the class counts its pages", NULL, c, "counted", a->counts[c].pages, "active",
             active[c]);
    const sc_page_t *head = a->queues[c].first;
    walk_list(a, &a->queues[c], c, true, active[c]);
    idle += walk_list(a, &a->purge.idle[c], c, false, active[c]);
    /* The class allocates from its queue's head while a thread owns the
     * arena, from nothing otherwise; the head is pinned. */
    const sc_page_t *want = a->owned && head != NULL ? head : &sc__empty_page;
    need(a->current[c] == want, "the class allocates from its queue's head", NULL, c);
    if (want != &sc__empty_page)
      need((head->used & SC_USED_PIN) != 0, "the head is pinned", head, c);
    /* The owner's fast-path slots follow the arena. */
    if (a->thread != NULL && a->thread == &sc__thread)
      for (size_t g = 0; g < SC_BUCKETS; g++)
        if (sc__class_of_granule[g] == c && a->thread->current[g] != a->current[c])
          broken("the thread's slot of each granule is its class's page", NULL, c, "granule", g,
                 NULL, 0);
  }
  if (idle != a->purge.idle_pages)
    broken("the arena counts its idle pages", NULL, SC_CLASSES, "counted", a->purge.idle_pages,
           "listed", idle);
  /* Spare pages: purged, nobody's, linked both ways. */
  uint64_t spare = 0;
  const sc_page_t *prev = NULL;
  for (const sc_page_t *p = a->spare.first; p != NULL; prev = p, p = p->next) {
    if (++spare > a->spare_count)
      broken("the arena counts its spare pages", NULL, SC_CLASSES, "counted", a->spare_count,
             "listed at least", spare);
    need(p->prev == prev, "the spare list's links agree both ways", NULL, SC_CLASSES);
    need(p->state == SC_PAGE_PURGED && p->arena == NULL && !p->queued,
         "a spare page is purged and nobody's", NULL, SC_CLASSES);
  }
  if (spare != a->spare_count)
    broken("the arena counts its spare pages", NULL, SC_CLASSES, "counted", a->spare_count,
           "listed", spare);
}

#endif /* SC_DEBUG */
