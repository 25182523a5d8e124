/* SPDX-License-Identifier: MIT */
/* sys_top.c — the tops of glibc's thread arenas, and who sets glibc's trim
 * threshold, under the paced policy (sys_trim.c).
 *
 * glibc's malloc_trim returns the free chunks of every arena but shrinks
 * only the main arena's top; another arena shrinks its top only inside a
 * free that glibc's trim threshold allows, which the paced policy sets out
 * of reach. So a thread shrinks its own arena's top itself: glibc's
 * threshold lowered for one free of a 64 KiB block of glibc's own (a free
 * of that size runs glibc's heap trim on the block's arena), then set back.
 * One thread at a time, since the threshold is process-wide.
 *  - After a trim (paced, or the program's malloc_trim or sc_trim), each
 *    thread that made, freed or resized system blocks since it last shrank
 *    its top does so at its next purge step or look (the program's trim:
 *    its own thread at once), at glibc's default threshold, 128 KiB: what
 *    glibc alone would have returned in its frees.
 *  - A thread that ends does so at SC_SYS_TRIM_DEBT, once (not again for
 *    an arena it borrows later in its exit): no later trim can reach its
 *    arena's top, and a top that large is a burst left behind, not a
 *    buffer the next thread to take the arena would reuse (rounds of short
 *    threads keep theirs, as the paced policy means them to). A thread
 *    that never made a block of 1 KiB or less has no arena of ours: its
 *    first system block has its end watched all the same (arena.c).
 *
 * A program that sets glibc's trim or mmap threshold or top pad itself
 * (mallopt, which the library defines to see it) chose glibc's own
 * trimming: the paced policy stops, and glibc's values come back for what
 * the library had set and the program did not. */
#include <malloc.h>
#include <sched.h>

#include "core/arena.h"
#include "core/hooks.h"
#include "util/os.h"

/** glibc's static thresholds, as after a program's own mallopt of one of
 * them under glibc alone (its dynamic mmap threshold then stops); the
 * trim threshold is also a thread's while it shrinks its top after a trim:
 * what glibc alone would have trimmed. */
#define SC_GLIBC_TRIM_THRESHOLD (128 << 10)
#define SC_GLIBC_MMAP_THRESHOLD (128 << 10)
/** A free of at least this much runs glibc's heap trim on the block's
 * arena (glibc's FASTBIN_CONSOLIDATION_THRESHOLD). */
#define SC_SYS_SHRINK_BLOCK (64 << 10)

/* The trims the threads follow: paced ones and the program's own. */
static _Atomic uint64_t trim_epoch;
/* The thread that holds glibc's trim threshold (to lower it for a shrink,
 * or to set the program's): NULL when none. */
static _Atomic(sc_thread_t *) holder;
static _Atomic bool chosen; /* the program set a threshold with mallopt */

/** Hold glibc's trim threshold, waiting for another holder (a shrink
 * takes microseconds); false when the calling thread holds it already (a
 * signal handler that allocates, run inside its own shrink). */
static bool threshold_take(void) {
  sc_thread_t *self = &sc__thread;
  for (;;) {
    sc_thread_t *none = NULL;
    if (atomic_compare_exchange_weak_explicit(&holder, &none, self, memory_order_acquire,
                                              memory_order_relaxed))
      return true;
    if (none == self) return false;
    sched_yield();
  }
}

static void threshold_give(void) { atomic_store_explicit(&holder, NULL, memory_order_release); }

/* fork: the threshold is held across it (glibc serialises forks and takes
 * its own locks after these handlers), so a child never starts with it
 * lowered by another thread. */
static bool fork_took;
static void fork_prepare(void) { fork_took = threshold_take(); }
static void fork_parent(void) {
  if (fork_took) threshold_give();
}
static void fork_child(void) {
  /* Not taken: this thread forked from a signal handler inside its own
   * shrink, which may have lowered it. */
  if (!fork_took && sc__sys_trim_paced()) __libc_mallopt(M_TRIM_THRESHOLD, SC_SYS_TRIM_THRESHOLD);
  threshold_give();
}

void sc__sys_top_init(void) { sc__os_atfork(fork_prepare, fork_parent, fork_child); }

bool sc__sys_top_chosen(void) { return atomic_load_explicit(&chosen, memory_order_relaxed); }

void sc__sys_top_trimmed(void) { atomic_fetch_add_explicit(&trim_epoch, 1, memory_order_relaxed); }

/** Arena a's system calls that can grow its thread's glibc arena's top: a
 * free (the top grows when blocks are freed into it), a block made (it
 * may come from the top, and be freed later), a realloc (in place, or a
 * move). Plain counts on the owner's line. */
static uint64_t system_calls(const sc_arena_t *a) {
  const sc_fallback_counts_t *k = &a->fallback;
  return k->allocs + k->frees + k->realloc_calls;
}

void sc__sys_top_bind(sc_arena_t *a) {
  sc_thread_t *t = &sc__thread;
  t->sys_shrunk_calls = system_calls(a);
  /* A thread that used system blocks before it had an arena may have
   * freed them before a trim it has not followed: it follows every one. */
  if (!t->sys_used_unbound)
    t->sys_shrunk_trims = atomic_load_explicit(&trim_epoch, memory_order_relaxed);
}

/** Shrink the top of the calling thread's glibc arena if `threshold`
 * bytes or more of it are free; false when nothing was tried (the policy
 * stopped, or this thread holds the threshold further up its stack). */
static bool shrink_top(size_t threshold) {
  /* A wait for another thread's shrink, not a later step: none may come
   * (SIZECLASS_PURGE_STEP=0: only a trim's request). */
  if (!threshold_take()) return false;
  if (!sc__sys_trim_paced()) { /* the program set a threshold of its own */
    threshold_give();
    return false;
  }
  __libc_mallopt(M_TRIM_THRESHOLD, (int)threshold);
  /* glibc's own functions: the block is no system block of the program's
   * (not recorded, not counted). */
  void *p = sc__hooks_page.libc.malloc_fn(SC_SYS_SHRINK_BLOCK);
  if (p != NULL) sc__hooks_page.libc.free_fn(p);
  __libc_mallopt(M_TRIM_THRESHOLD, SC_SYS_TRIM_THRESHOLD);
  threshold_give();
  return true;
}

/** The calling thread's system calls (a: its arena, or NULL), and whether
 * any came since it last shrank its top: a thread that touched no system
 * block since has nothing new there (blocks of its arena that other
 * threads free are missed: the owner's next call catches up). */
static bool used_since(const sc_arena_t *a, uint64_t *calls) {
  sc_thread_t *t = &sc__thread;
  *calls = a != NULL ? system_calls(a) : t->sys_shrunk_calls;
  return *calls != t->sys_shrunk_calls || t->sys_used_unbound;
}

void sc__sys_top_follow(sc_arena_t *a) {
  sc_thread_t *t = &sc__thread;
  uint64_t seen = atomic_load_explicit(&trim_epoch, memory_order_relaxed);
  if (sc_likely(seen == t->sys_shrunk_trims)) return;
  uint64_t calls;
  if (used_since(a, &calls) && !shrink_top(SC_GLIBC_TRIM_THRESHOLD)) return;
  t->sys_shrunk_trims = seen;
  t->sys_shrunk_calls = calls;
  t->sys_used_unbound = 0;
}

void sc__sys_top_thread_exit(sc_arena_t *a) {
  uint64_t calls;
  if (!sc__sys_trim_paced() || !used_since(a, &calls)) return;
  shrink_top(SC_SYS_TRIM_DEBT);
  sc__thread.sys_used_unbound = 0; /* once: arenas borrowed later in the exit bind again */
}

int sc__mallopt(int param, int value) {
  if (param != M_TRIM_THRESHOLD && param != M_MMAP_THRESHOLD && param != M_TOP_PAD)
    return __libc_mallopt(param, value);
  if (!sc__sys_trim_paced()) {
    int r = __libc_mallopt(param, value);
    if (r == 1) atomic_store_explicit(&chosen, true, memory_order_relaxed); /* before our start */
    return r;
  }
  /* Held, so that no shrink sets the threshold back after this. */
  bool took = threshold_take();
  int r = __libc_mallopt(param, value);
  if (r == 1 && !atomic_exchange_explicit(&chosen, true, memory_order_relaxed)) {
    /* The program chose glibc's trimming: no pacing from now on, and
     * glibc's values for what the library had set and it did not. */
    sc__sys_trim_stop();
    if (param != M_TRIM_THRESHOLD) __libc_mallopt(M_TRIM_THRESHOLD, SC_GLIBC_TRIM_THRESHOLD);
    if (param != M_MMAP_THRESHOLD) __libc_mallopt(M_MMAP_THRESHOLD, SC_GLIBC_MMAP_THRESHOLD);
  }
  if (took) threshold_give();
  return r;
}
