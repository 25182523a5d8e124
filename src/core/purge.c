/* SPDX-License-Identifier: MIT */
/* purge.c — giving memory back to the OS in small steps (docs/footprint.md).
 *
 * A page whose blocks are all free is noticed by the free that empties it
 * (its `used` reaches zero: arena.c) and moves out of its class queue into
 * the arena's idle list of its class, oldest first. The page a class
 * allocates from is pinned and never moves. After the delay a step purges
 * the oldest idle pages, at most `step` pages, with one madvise per run of
 * adjacent pages, resets them and keeps them as spare pages. New pages are
 * taken from the idle lists first (resident, no fault), then the spare
 * pages, and only then from fresh memory. A segment left without an active
 * page is unmapped.
 *
 * Steps run on the arena's own thread, from its slow paths (sc__purge_poll).
 * A thread that only ever hits the fast paths would never get there, so
 * while more than a few pages wait (or abandoned arenas need tending) the
 * class heads carry a trap: SC_USED_SLOW in their `used`, which sends frees
 * into them through sc__page_after_free, which counts them as slow-path
 * events. The trap is lifted when nothing is left to do. */
#include "core/purge.h"

#include <stdlib.h>
#include <string.h>

#include "util/settings.h"
#include "core/page_queue.h"
#include "util/startup.h"

/* ---- settings ------------------------------------------------------------ */

/* The delay (a page must stay empty this long before it is returned) and
 * the step (pages returned per step at most) are SIZECLASS_PURGE_DELAY_MS
 * and SIZECLASS_PURGE_STEP (settings.c: defaults 1000 ms and 64 pages,
 * ranges 0..3600000 and 0..4096), set from the constructor below; these
 * are the same defaults until it runs. 64 pages (4 MiB) cost a few hundred
 * microseconds of madvise at worst; a 60 Hz game loop gets about one step
 * per frame, so it returns ~240 MiB/s. */
#define SC_PURGE_DELAY_MS_DEFAULT 1000
#define SC_PURGE_STEP_DEFAULT 64
/** Idle pages an arena may hold without setting traps: slow-path events
 * (pages filling up or emptying) still purge them after the delay, and a
 * class that needs a page takes them back first. */
#define SC_PURGE_TRAP_MIN_IDLE 8
/** Steps of one arena are at least this far apart (or the delay, if
 * shorter), and SC_PURGE_PAUSE times as long as the last step took: purging
 * takes at most ~1/(1 + SC_PURGE_PAUSE) of a busy thread's time. */
#define SC_PURGE_INTERVAL_NS 1000000ull
#define SC_PURGE_PAUSE 8
/** Every this many steps, a thread also tends the abandoned arenas. */
#define SC_PURGE_ABANDONED_EVERY 16
/** Pages gathered before one round of madvise calls. */
#define SC_PURGE_BATCH 64
/** The OS page size we round touched extents to. */
#define SC_OS_PAGE 4096

static uint64_t purge_delay_ns = SC_PURGE_DELAY_MS_DEFAULT * 1000000ull;
static uint32_t purge_step = SC_PURGE_STEP_DEFAULT;
static uint64_t purge_interval_ns = SC_PURGE_INTERVAL_NS;

/* ---- counters (process-wide; purging is a slow path, atomics are fine) --- */

static _Atomic uint64_t n_purges, n_bytes, n_pages, n_reused, n_segments, n_recycled;
/* Set when an abandoned arena may have purge work: live threads then look
 * at abandoned arenas every SC_PURGE_ABANDONED_EVERY steps, until a look
 * finds none with work left. */
static _Atomic int abandoned_hint;

/** Add n to counter c. */
static void count(_Atomic uint64_t *c, uint64_t n) {
  atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void sc__purge_stats(sc_purge_stats_t *out) {
  out->purges = atomic_load_explicit(&n_purges, memory_order_relaxed);
  out->bytes_returned = atomic_load_explicit(&n_bytes, memory_order_relaxed);
  out->pages_reused_after_purge = atomic_load_explicit(&n_reused, memory_order_relaxed);
  out->pages_purged = atomic_load_explicit(&n_pages, memory_order_relaxed);
  out->segments_unmapped = atomic_load_explicit(&n_segments, memory_order_relaxed);
  out->pages_recycled = atomic_load_explicit(&n_recycled, memory_order_relaxed);
}

/* ---- page lists ------------------------------------------------------------ */

/** Park empty page p (already out of its queue) in the idle list of its class. */
static void idle_push(sc_arena_t *a, sc_page_t *p, uint64_t now) {
  sc_assert(p->idle_since_ns == 0 && (p->used & SC_USED_COUNT) == 0);
  p->queued = 0;
  p->used = 0;                           /* no pin, no trap: the count is zero */
  p->idle_since_ns = now != 0 ? now : 1; /* non-zero marks an idle page */
  sc__pq_push_back(&a->purge.idle[p->class_idx], p);
  a->purge.idle_pages++;
}

/** Take p out of its idle list. */
static void idle_remove(sc_arena_t *a, sc_page_t *p) {
  sc__pq_remove(&a->purge.idle[p->class_idx], p);
  p->idle_since_ns = 0;
  a->purge.idle_pages--;
}

/** The spare list is a page queue (taken from the front, last in first
 * out) so that the pages of a segment about to be unmapped can be taken
 * out of it. */
static void spare_push(sc_arena_t *a, sc_page_t *p) {
  sc__pq_push_front(&a->spare, p);
  a->spare_count++;
}

/** Take p out of the spare list. */
static void spare_remove(sc_arena_t *a, sc_page_t *p) {
  sc__pq_remove(&a->spare, p);
  a->spare_count--;
}

/** p no longer serves its class: its counters move to the class's retired
 * totals (statistics stay exact), and it leaves the class and segment counts.
 * `zeroed`: its map was just given back to the OS (it reads all FREE). */
static void deactivate(sc_arena_t *a, sc_page_t *p, bool zeroed) {
  sc_class_counts_t *k = &a->counts[p->class_idx];
  sc__segment_map_give(sc__segment_of((uintptr_t)p), p->index, p->class_idx, p->map, zeroed);
  k->pages--;
  k->retired_allocs += p->allocs;
  k->retired_fresh += sc__page_fresh(p);
  p->allocs = 0;
  p->fresh_end = (uint8_t *)sc__page_base(p);
  p->shared_carved = 0;
  p->arena = NULL; /* a free into it now takes the slow path, and aborts */
  sc__segment_of((uintptr_t)p)->pages_active--;
}

/** Set or lift the trap on every class head (see the top of file). */
static void set_traps(sc_arena_t *a, bool on) {
  if (!on && !a->purge.armed) return;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    sc_page_t *head = a->queues[c].first;
    if (head == NULL) continue; /* heads may have changed since arming */
    if (on)
      head->used |= SC_USED_SLOW;
    else
      head->used &= ~SC_USED_SLOW;
  }
  a->purge.armed = on;
}

/** True when idle pages are enough to set traps for. */
static bool traps_wanted(const sc_arena_t *a) {
  return purge_step != 0 && a->purge.idle_pages > SC_PURGE_TRAP_MIN_IDLE;
}

void sc__purge_page_emptied(sc_arena_t *a, sc_page_t *page) {
  sc_assert(page->queued && page->used == 0);
  sc__pq_remove(&a->queues[page->class_idx], page);
  idle_push(a, page, sc__os_now_ns());
  /* Traps are for an arena a thread allocates from, not one being handed on. */
  if (!a->purge.armed && !a->purge.busy && a->bound && traps_wanted(a)) set_traps(a, true);
}

sc_page_t *sc__purge_idle_take(sc_arena_t *a, unsigned c) {
  sc_page_t *p = a->purge.idle[c].last; /* the most recently emptied */
  if (p == NULL) return NULL;
  idle_remove(a, p);
  /* Every block is free: carve it again from the start, in address order
   * (what caches and prefetchers like), instead of in the order of the
   * frees. The high-water mark stays, so these blocks count as reuse. */
  p->free = sc__list_end(p);
  p->carve_next = sc__page_first(p);
  if (sc_unlikely(sc__random_placement)) sc__page_shuffle(p);
  return p;
}

sc_page_t *sc__purge_recycle(sc_arena_t *a) {
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    sc_page_t *p = a->purge.idle[c].last;
    if (p != NULL) {
      idle_remove(a, p);
      deactivate(a, p, false);
      count(&n_recycled, 1);
      return p;
    }
  }
  sc_page_t *p = a->spare.first;
  if (p == NULL) return NULL;
  spare_remove(a, p);
  if (p->state == SC_PAGE_PURGED) count(&n_reused, 1);
  return p;
}

/** Park every empty page of every queue, heads included (trims, exits). */
static void scan_all(sc_arena_t *a, uint64_t now) {
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    sc_page_queue_t *q = &a->queues[c];
    for (sc_page_t *p = q->first, *next; p != NULL; p = next) {
      next = p->next;
      if ((p->used & SC_USED_COUNT) != 0) continue;
      sc__pq_remove(q, p);
      idle_push(a, p, now);
    }
    sc__arena_refresh_current(a, c);
  }
}

/* ---- returning pages ------------------------------------------------------ */

typedef struct {
  sc_page_t *p[SC_PURGE_BATCH];
  unsigned n;
} batch_t;

static size_t round_os(size_t n) { return (n + SC_OS_PAGE - 1) & ~(size_t)(SC_OS_PAGE - 1); }

/** Bytes of p (and of its record, when pages have one: the wide map
 * entries, state and requested size) that blocks ever touched: up to the
 * high-water mark (its colour, then the blocks carved); the record up to
 * its entry, or whole when the page's map marks INTERIOR entries. */
static size_t touched_bytes(const sc_page_t *p) {
  size_t carved = sc__page_carved(p);
  size_t entries =
      sc__page_block_size(p) >> p->shift > 1 ? SC_PAGE_SIZE >> p->shift : carved >> p->shift;
  size_t record = sc__req_arrays ? round_os(entries << SC_MAP_WIDE_SHIFT) : 0;
  return round_os(carved) + record;
}

/** Unmap seg, none of whose pages is active: its pages leave the spare
 * list, the scan cursors forget them, the arena's segment list drops it. */
static size_t segment_release(sc_arena_t *a, sc_segment_t *seg) {
  sc_segment_t **link = &a->segments;
  while (*link != NULL && *link != seg) link = &(*link)->next;
  if (*link == NULL) return 0; /* not ours: never happens, but never unmap then */
  *link = seg->next;
  for (unsigned i = sc__meta_pages; i < seg->next_unused; i++)
    if (seg->pages[i].state == SC_PAGE_PURGED) spare_remove(a, &seg->pages[i]);
  sc__segment_free(seg);
  count(&n_segments, 1);
  return round_os(sizeof(sc_segment_t));
}

void sc__pages_sort(sc_page_t **pages, unsigned n) {
  for (unsigned i = 1; i < n; i++) /* insertion sort: n is small */
    for (unsigned j = i; j > 0 && pages[j - 1] > pages[j]; j--) {
      sc_page_t *t = pages[j];
      pages[j] = pages[j - 1];
      pages[j - 1] = t;
    }
}

/** p, out of every list with no block in use and its memory given back,
 * no longer serves its class: a spare page (`zeroed`: its map too). */
static void make_spare(sc_arena_t *a, sc_page_t *p, bool zeroed) {
  deactivate(a, p, zeroed);
  p->free = sc__list_end(p);
  p->carve_next = p->carve_end; /* nothing to carve until it serves again */
  p->used = 0;
  p->queued = 0;
  p->state = SC_PAGE_PURGED;
  spare_push(a, p);
}

/** madvise the pages of b (sorted here; adjacent pages share one call), make
 * them spare, and unmap the segments they left empty. Returns bytes given back. */
static size_t batch_flush(sc_arena_t *a, batch_t *b) {
  sc__pages_sort(b->p, b->n);
  size_t bytes = 0;
  for (unsigned i = 0, j; i < b->n; i = j) {
    /* Descriptors are adjacent exactly when the pages are (same segment). */
    for (j = i + 1; j < b->n && b->p[j] == b->p[j - 1] + 1; j++) {
    }
    sc_segment_t *seg = sc__segment_of((uintptr_t)b->p[i]);
    size_t run = j - i;
    bool ok = sc__os_purge(sc__page_start(b->p[i]), run * SC_PAGE_SIZE);
    /* With requested sizes, records of adjacent pages are adjacent too
     * (their maps are all FREE but for INTERIOR entries: zero after the
     * purge); without, maps are shared and stay. */
    bool zeroed = sc__req_arrays && sc__os_purge(sc__segment_record(seg, b->p[i]->index),
                                                 run * sc__page_record_bytes);
    for (unsigned k = i; k < j; k++) {
      sc_page_t *p = b->p[k];
      sc_assert(p->state == SC_PAGE_ACTIVE && p->used == 0 && !p->queued);
      if (ok) bytes += touched_bytes(p);
      make_spare(a, p, zeroed);
    }
    count(&n_pages, run);
    /* Sorted: the last run of a segment is followed by another segment. */
    if (seg->pages_active == 0 && (j == b->n || sc__segment_of((uintptr_t)b->p[j]) != seg))
      bytes += segment_release(a, seg);
  }
  b->n = 0;
  return bytes;
}

void sc__purge_count_reclaimed(size_t pages, size_t bytes) {
  count(&n_purges, 1);
  count(&n_pages, pages);
  count(&n_bytes, bytes);
}

void sc__purge_take_reclaimed(sc_arena_t *a, sc_page_t *p) {
  sc_assert(p->state == SC_PAGE_ACTIVE && !p->queued && p->idle_since_ns == 0 && p->used == 0);
  sc_segment_t *seg = sc__segment_of((uintptr_t)p);
  make_spare(a, p, false);
  if (seg->pages_active == 0) count(&n_bytes, segment_release(a, seg));
}

/** Purge idle pages that have been idle for `delay` ns or longer, oldest
 * first, at most *budget of them (counted down). Returns the bytes given back. */
static size_t purge_idle(sc_arena_t *a, uint64_t now, uint64_t delay, uint64_t *budget) {
  batch_t b;
  b.n = 0;
  size_t bytes = 0;
  while (*budget > 0) {
    sc_page_t *oldest = NULL;
    for (unsigned c = 0; c < SC_CLASSES; c++) {
      sc_page_t *p = a->purge.idle[c].first;
      if (p != NULL && (oldest == NULL || p->idle_since_ns < oldest->idle_since_ns)) oldest = p;
    }
    if (oldest == NULL || oldest->idle_since_ns + delay > now) break;
    idle_remove(a, oldest);
    if (sc_unlikely(oldest->used != 0)) { /* a double free without hardening */
      sc__pq_push_back(&a->queues[oldest->class_idx], oldest);
      oldest->queued = 1;
      sc__arena_refresh_current(a, oldest->class_idx);
      continue;
    }
    b.p[b.n++] = oldest;
    (*budget)--;
    if (b.n == SC_PURGE_BATCH) bytes += batch_flush(a, &b);
  }
  return bytes + batch_flush(a, &b);
}

/** Everything returnable in a, at once: blocks other threads freed, every
 * empty page (class heads included), every idle page. The caller owns a
 * (or holds the arena registry lock and a is abandoned). */
static size_t purge_all(sc_arena_t *a, uint64_t now) {
  if (sc__arena_has_returns(a)) sc__arena_drain(a);
  scan_all(a, now);
  uint64_t unlimited = UINT64_MAX;
  /* Every idle page, those the drain just parked (stamped after `now`) too. */
  return purge_idle(a, UINT64_MAX, 0, &unlimited);
}

/** True while a has purge work pending: idle pages. */
static bool work_remains(const sc_arena_t *a) { return a->purge.idle_pages != 0; }

/* ---- abandoned arenas ------------------------------------------------------ */

typedef struct {
  uint64_t now;
  uint64_t budget; /* pages still to purge in this pass */
  size_t bytes;
  unsigned pending; /* abandoned arenas with purge work left */
  bool all;         /* trim: everything, at once */
  sc_arena_t *self;
} visit_t;

/** With the registry locked: a step on an abandoned arena (nobody owns it,
 * nobody can adopt it while the lock is held), or everything when trimming;
 * a live arena of another thread is only asked to trim itself. */
static void visit_arena(sc_arena_t *x, void *ctx) {
  visit_t *v = ctx;
  if (x == v->self) return;
  if (x->owned) {
    if (v->all) atomic_store_explicit(&x->purge.request, 1, memory_order_relaxed);
    return;
  }
  if (x->purge.busy) { /* its work is someone else's now, not yet done */
    v->pending++;
    return;
  }
  x->purge.busy = 1;
  if (v->all) {
    v->bytes += purge_all(x, v->now);
  } else if (v->budget > 0) {
    if (sc__arena_has_returns(x)) sc__arena_drain(x);
    v->bytes += purge_idle(x, v->now, purge_delay_ns, &v->budget);
  }
  if (work_remains(x) || sc__arena_has_returns(x)) v->pending++;
  x->purge.busy = 0;
}

/** A step over the abandoned arenas, if the registry is free, purging at
 * most *budget pages (counted down). The hint stays up while any of them
 * has work left. It is lowered before the look, not after: a push that
 * raises it during the look keeps it raised, and one that raised it
 * before is seen by the look (the hint's accesses are sequentially
 * consistent, and the fence orders the lists' loads after the lowering). */
static size_t tend_abandoned(sc_arena_t *self, uint64_t now, uint64_t *budget) {
  visit_t v = {now, *budget, 0, 0, false, self};
  int was = atomic_exchange_explicit(&abandoned_hint, 0, memory_order_seq_cst);
  atomic_thread_fence(memory_order_seq_cst);
  if (!sc__arenas_try_foreach(visit_arena, &v)) {
    if (was != 0) sc__purge_hint_abandoned(); /* another thread looks: not this one */
    return 0;
  }
  if (v.pending != 0) sc__purge_hint_abandoned();
  *budget = v.budget;
  return v.bytes;
}

void sc__purge_hint_abandoned(void) {
  atomic_store_explicit(&abandoned_hint, 1, memory_order_seq_cst);
}

void sc__purge_wake_abandoned(void) {
  if (atomic_load_explicit(&abandoned_hint, memory_order_seq_cst) == 0) sc__purge_hint_abandoned();
  /* This thread is live: its traps bring it to a step soon, even if it
   * stays on the fast paths from now on. */
  sc_arena_t *self = sc__thread.arena;
  if (self != NULL && !self->purge.busy && purge_step != 0) set_traps(self, true);
}

void sc__purge_on_abandon(sc_arena_t *a) {
  /* Still the owner: park every empty page now (nobody will allocate from
   * the heads until an adoption) and return those already past the delay. */
  sc_purge_state_t *ps = &a->purge;
  if (ps->busy) return;
  ps->busy = 1;
  uint64_t now = sc__os_now_ns(), unlimited = UINT64_MAX;
  scan_all(a, now);
  size_t bytes = purge_step != 0 ? purge_idle(a, now, purge_delay_ns, &unlimited) : 0;
  if (bytes != 0) {
    count(&n_purges, 1);
    count(&n_bytes, bytes);
  }
  set_traps(a, false);
  ps->busy = 0;
  if (work_remains(a) || sc__arena_has_returns(a)) sc__purge_hint_abandoned();
}

/* ---- steps and trims ------------------------------------------------------- */

void sc__purge_tick(sc_arena_t *a) {
  sc_purge_state_t *ps = &a->purge;
  if (ps->busy) return; /* a step of a is running further up the stack */
  bool requested = atomic_load_explicit(&ps->request, memory_order_relaxed) != 0;
  if (!requested && purge_step == 0) return;
  uint64_t now = sc__os_now_ns();
  if (!requested && now < ps->next_ns) return;
  sc__sys_trim_tick(a, now); /* glibc's heaps: a look at the large blocks' live bytes */
  ps->busy = 1;
  size_t bytes;
  uint64_t budget = purge_step; /* pages this step may purge, all arenas together */
  if (requested) {
    atomic_store_explicit(&ps->request, 0, memory_order_relaxed);
    bytes = purge_all(a, now);
  } else {
    bytes = purge_idle(a, now, purge_delay_ns, &budget);
  }
  bool abandoned = atomic_load_explicit(&abandoned_hint, memory_order_relaxed) != 0;
  if (abandoned && budget > 0 && ++ps->steps % SC_PURGE_ABANDONED_EVERY == 0)
    bytes += tend_abandoned(a, now, &budget);
  /* Pages of other arenas that other threads freed wholly while their
   * owner stayed off its slow paths (reclaim.c; it counts them itself). */
  size_t reclaimed = 0;
  if (purge_step != 0 && !requested) {
    uint64_t idle = purge_delay_ns < SC_RECLAIM_IDLE_NS ? purge_delay_ns : SC_RECLAIM_IDLE_NS;
    if (idle < SC_RECLAIM_IDLE_MIN_NS) idle = SC_RECLAIM_IDLE_MIN_NS;
    reclaimed = sc__remote_reclaim_idle(a, now, idle);
  }
  if (bytes != 0) {
    count(&n_purges, 1);
    count(&n_bytes, bytes);
  }
  /* Abandoned arenas only get steps from live threads: keep ours coming
   * (the hint read again: this step's walk may have raised it, when its
   * wake could not arm this thread's traps, the step being busy). */
  abandoned = atomic_load_explicit(&abandoned_hint, memory_order_relaxed) != 0;
  set_traps(a, traps_wanted(a) || (purge_step != 0 && abandoned));
  uint64_t pause = purge_interval_ns;
  if (bytes != 0 || reclaimed != 0) {
    uint64_t end = sc__os_now_ns(), took = end - now;
    if (took * SC_PURGE_PAUSE > pause) pause = took * SC_PURGE_PAUSE;
    now = end;
  }
  ps->next_ns = now + pause;
  ps->busy = 0;
}

size_t sc__purge_trim(void) {
  uint64_t now = sc__os_now_ns();
  size_t bytes = 0;
  sc_arena_t *self = sc__thread.arena;
  if (self != NULL) sc__arena_flush_remote(self); /* hand over batched frees */
  if (self != NULL && !self->purge.busy) {
    self->purge.busy = 1;
    atomic_store_explicit(&self->purge.request, 0, memory_order_relaxed);
    bytes += purge_all(self, now);
    set_traps(self, false);
    self->purge.busy = 0;
  }
  visit_t v = {now, 0, 0, 0, true, self};
  sc__arenas_foreach(visit_arena, &v);
  bytes += v.bytes;
  if (bytes != 0) {
    count(&n_purges, 1);
    count(&n_bytes, bytes);
  }
  return bytes;
}

/* ---- settings ---------------------------------------------------------------- */

void sc__purge_configure(uint64_t delay_ms, uint32_t step_pages) {
  purge_delay_ns = delay_ms * 1000000ull;
  purge_step = step_pages;
  purge_interval_ns = purge_delay_ns < SC_PURGE_INTERVAL_NS ? purge_delay_ns : SC_PURGE_INTERVAL_NS;
}

uint64_t sc__purge_delay_ns(void) { return purge_delay_ns; }

uint32_t sc__purge_step_pages(void) { return purge_step; }

void sc__purge_settings(uint64_t *delay_ms, uint32_t *step_pages) {
  *delay_ms = purge_delay_ns / 1000000ull;
  *step_pages = purge_step;
}

sc_startup void sc__purge_apply_settings(void) {
  /* The settings (settings.c) said no to a bad value already. */
  sc__purge_configure(sc__setting(SC_SET_PURGE_DELAY_MS), (uint32_t)sc__setting(SC_SET_PURGE_STEP));
}

__attribute__((constructor)) static void purge_on_load(void) { sc__purge_apply_settings(); }
