/* SPDX-License-Identifier: MIT */
/* purge.h — giving memory back to the OS (docs/footprint.md).
 *
 * Pages whose blocks are all free leave their class queue for the arena's
 * idle lists the moment their last block comes back (a free that empties a
 * page takes the slow path: arena.c); after SIZECLASS_PURGE_DELAY_MS they are returned with
 * madvise(MADV_DONTNEED), at most SIZECLASS_PURGE_STEP pages per step, and
 * kept as spare pages that any class reuses before fresh memory is mapped.
 * Segments left with no page in use are unmapped. Steps run from the slow
 * paths of the arena's own thread; sc_trim()/malloc_trim() return
 * everything returnable at once. */
#ifndef SC_PURGE_H
#define SC_PURGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

/* Counters of memory given back to the OS, process-wide. */
typedef struct sc_purge_stats_s {
  uint64_t purges;                   /* purge passes that returned memory */
  uint64_t bytes_returned;           /* bytes given back, cumulative */
  uint64_t pages_reused_after_purge; /* purged pages handed to a class again */
  uint64_t pages_purged;             /* 64 KiB pages given back, cumulative */
  uint64_t segments_unmapped;        /* segments with no page in use, unmapped */
  uint64_t pages_recycled;           /* idle (unpurged) pages handed to another class */
} sc_purge_stats_t;

/** Snapshot of the purge counters; never blocks, never allocates (the
 * stats dump calls it from signal handlers). */
void sc__purge_stats(sc_purge_stats_t *out);

/** A purge step is considered once every this many slow-path events of an
 * arena (a power of two): the pacing check costs a mask and a compare. */
#define SC_PURGE_POLL_EVERY 64

/** Run a purge step on a if one is due (a is the calling thread's arena). */
void sc__purge_tick(sc_arena_t *a);

/** Count one slow-path event of the calling thread's arena a; every
 * SC_PURGE_POLL_EVERY events, see whether a purge step is due. */
static inline void sc__purge_poll(sc_arena_t *a) {
  /* An atomic store (a plain one on x86): other threads read the count. */
  uint64_t n = a->slow_calls + 1;
  __atomic_store_n(&a->slow_calls, n, __ATOMIC_RELAXED);
  if (sc_unlikely((n & (SC_PURGE_POLL_EVERY - 1)) == 0)) sc__purge_tick(a);
}

/** Page (queued, not its class's head) just became empty: move it to the
 * idle list, where it waits for a class to need a page or for the delay to
 * pass. */
void sc__purge_page_emptied(sc_arena_t *a, sc_page_t *page);

/** Live threads must look at abandoned arenas again (a block was freed
 * into one): raise the hint, arm the calling thread's traps. */
void sc__purge_wake_abandoned(void);
/** The same without arming anything (a thread handing its arena on). */
void sc__purge_hint_abandoned(void);

/** A block was pushed on the empty remote list of owner. If owner is
 * abandoned, its pages may now empty out and only live threads' steps can
 * return them. (Later pushes find the list non-empty; an arena abandoned
 * with a non-empty list raises the hint in sc__purge_on_abandon.)
 * Sequentially consistent, as the push before it: with the fence that
 * arena_abandon puts between its store of `owned` and its look at the
 * lists, either the push's thread sees the arena abandoned or the
 * abandoning thread sees the push (on x86-64 the same plain load, and the
 * push's locked exchange). */
static inline void sc__purge_remote_list_started(const sc_arena_t *owner) {
  if (__atomic_load_n(&owner->owned, __ATOMIC_SEQ_CST) == 0) sc__purge_wake_abandoned();
}

/** An empty page of class c waiting in a's idle list, taken out of it and
 * ready to serve c again, to be carved from its start; NULL if none. */
sc_page_t *sc__purge_idle_take(sc_arena_t *a, unsigned c);

/** A page to re-initialise for some class: an idle page of any class
 * (resident: no fault on reuse), else a purged spare page; unlinked and no
 * longer counted as active. NULL if a has none. */
sc_page_t *sc__purge_recycle(sc_arena_t *a);

/** The thread owning a is about to hand it on: park its empty pages, return
 * those past the delay, and have live threads tend the rest. */
void sc__purge_on_abandon(sc_arena_t *a);

/** Sort n page descriptors by address: adjacent pages of a segment end up
 * side by side, so that one madvise covers each run of them. */
void sc__pages_sort(sc_page_t **pages, unsigned n);

/** Count pages (and bytes) another thread gave back for an arena's owner
 * (reclaim.c), as a purge of its own would count them. */
void sc__purge_count_reclaimed(size_t pages, size_t bytes);

/** Page of a (the caller's, or abandoned with the registry locked), out of
 * every list, all its blocks free again and its memory already given back
 * by the thread that reclaimed it: it becomes a purged spare page, as a
 * purge step would have made it. */
void sc__purge_take_reclaimed(sc_arena_t *a, sc_page_t *page);

/** Return every returnable page at once: the calling thread's arena and
 * abandoned arenas now, other live arenas at their owner's next purge check.
 * Returns the bytes given back. */
size_t sc__purge_trim(void);

/** Apply SIZECLASS_PURGE_DELAY_MS and SIZECLASS_PURGE_STEP (settings.h);
 * run from the constructor, and when sc_option_set changes one. */
void sc__purge_apply_settings(void);

/** Set the delay (ms) and the step (pages per step, 0 = only trims). For
 * tests; the environment does this at load time. */
void sc__purge_configure(uint64_t delay_ms, uint32_t step_pages);

/** The delay in force, in nanoseconds. */
uint64_t sc__purge_delay_ns(void);

/** The step in force, in pages (0: nothing is given back on its own). */
uint32_t sc__purge_step_pages(void);

/** The delay (ms) and step (pages) in force. */
void sc__purge_settings(uint64_t *delay_ms, uint32_t *step_pages);

#endif /* SC_PURGE_H */
