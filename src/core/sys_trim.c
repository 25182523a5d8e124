/* SPDX-License-Identifier: MIT */
/* sys_trim.c — when the system allocator gives memory back.
 *
 * Once the size classes serve every request of 1024 B or less, glibc's
 * heaps hold only large blocks. Their tops come free far more often than
 * under glibc alone, and glibc's own policy (trim the heap top whenever more
 * than 128 KiB of it is free, and mmap every block above its dynamic
 * threshold until a free raises that) then hands pages back and faults them
 * in again at a high rate: rounds of threads that allocate and free
 * buffers, or a loop that replaces blocks of a few KiB, paid for it in page
 * faults and system time.
 *
 * So, unless the user chose glibc's thresholds (GLIBC_TUNABLES) or asked
 * for glibc's behaviour (SIZECLASS_SYSTEM_TRIM=glibc), the library
 *  - fixes glibc's mmap threshold at 32 MiB, the ceiling glibc's own dynamic
 *    threshold rises to: blocks below it come from the heaps and are reused
 *    there, as glibc does for a program once it has freed one such block;
 *  - switches glibc's automatic trim off, and returns the heaps' free memory
 *    itself with malloc_trim, paced like its own pages: memory goes back
 *    once it has stayed free for the purge delay (SIZECLASS_PURGE_DELAY_MS).
 *    A thread looks each time it has freed SC_SYS_TRIM_DEBT bytes of system
 *    blocks; a look compares the system blocks' live bytes with their
 *    level (the most a look saw since the last trim). A drop of
 *    SC_SYS_TRIM_DEBT or more that every look finds still there a delay
 *    later is trimmed; one that a look finds gone (the live bytes back near
 *    their level) was a swing, and nothing is trimmed. The arenas' purge
 *    steps look too, one look every SC_SYS_TICK_LOOK_NS among them all, so
 *    a burst is returned a delay after it is freed even when no large
 *    block is freed after it (a level's load buffers, then frames of small
 *    blocks) or when many threads each freed less than SC_SYS_TRIM_DEBT of
 *    it; not page by page while it is freed, either. A steady
 *    loop is never trimmed: a trim would only hand back the gaps between
 *    its blocks and the tails of its swings, which its next steps fault in
 *    again.
 *
 * malloc_trim returns the free chunks of every glibc arena but shrinks only
 * the main arena's top; another arena shrinks its top only inside a free
 * that glibc's threshold allows, which the policy sets out of reach. So
 * after a trim (paced, or the program's malloc_trim or sc_trim), each
 * thread that made system blocks since it last shrank its glibc arena's
 * top shrinks it at its next purge step (or look; the program's trim: its
 * own thread at once):
 * the threshold lowered to glibc's default for one free of a 64 KiB block
 * of its own (a free of that size runs glibc's heap trim on its arena).
 * One thread at a time, since the threshold is glibc's, process-wide. A
 * thread that ended keeps its arena's top until another thread takes the
 * arena over and shrinks it after a later trim.
 *
 * A program that sets glibc's trim or mmap threshold or top pad itself
 * (mallopt, which the library defines to see it) chose glibc's own
 * trimming: the paced policy stops from then on, as with GLIBC_TUNABLES. */
#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/hooks.h"
#include "util/settings.h"
#include "core/purge.h"
#include "sizeclass.h"
#include "util/startup.h"

/** glibc's ceiling for its dynamic mmap threshold (64-bit). */
#define SC_SYS_MMAP_THRESHOLD (32 << 20)
/** glibc never trims a heap on its own below this (effectively never). */
#define SC_SYS_TRIM_THRESHOLD (1 << 30)

/** glibc's trim threshold while a thread shrinks its own arena's top:
 * glibc's default, what it would have trimmed alone. */
#define SC_SYS_SHRINK_THRESHOLD (128 << 10)
/** A free of at least this much runs glibc's heap trim on the block's
 * arena (glibc's FASTBIN_CONSOLIDATION_THRESHOLD). */
#define SC_SYS_SHRINK_BLOCK (64 << 10)

/* glibc's mallopt, under the name the library does not define. */
extern int __libc_mallopt(int param, int value);

static _Atomic bool paced;  /* the policy above is in force */
static _Atomic bool chosen; /* the program set a threshold with mallopt */
/* glibc's malloc_trim; NULL: not found (in the hooks' page, core/hooks.h) */
#define trim_fn (sc__hooks_page.sys_trim_fn)
static _Atomic uint64_t trims; /* paced trims so far */
/* Trims whose free arena tops the threads follow: the paced ones and the
 * program's own (malloc_trim, sc_trim). */
static _Atomic uint64_t trim_epoch;
/* The system blocks' live bytes: the most a look saw since the last trim
 * (after a trim, what was live then). */
static _Atomic int64_t level;
static _Atomic uint64_t drop_since_ns; /* the first look that saw the drop; 0: none */
/** How often the arenas' purge steps look, all of them together. */
#define SC_SYS_TICK_LOOK_NS (25 * 1000000ull)
static _Atomic uint64_t tick_look_ns; /* when a purge step last looked */
/* The thread that holds glibc's trim threshold (to lower it for a shrink,
 * or to set the program's): NULL when none. */
static _Atomic(sc_thread_t *) holder;
static _Atomic uint64_t shrinks; /* arena tops shrunk so far */

/** True when GLIBC_TUNABLES sets one of glibc's malloc thresholds. */
static bool tunables_set(void) {
  const char *t = getenv("GLIBC_TUNABLES");
  return t != NULL && (strstr(t, "trim_threshold") != NULL || strstr(t, "mmap_threshold") != NULL);
}

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

sc_startup void sc__sys_trim_init(void) {
  /* glibc's own, by its version (fallback.c says why); not found: nothing
   * is trimmed. */
  int (*fn)(size_t) = (int (*)(size_t))dlvsym(RTLD_NEXT, "malloc_trim", SC_GLIBC_BASE_VERSION);
  sc__hooks_write_begin();
  trim_fn = fn;
  sc__hooks_write_end();
  /* The settings (settings.c) said no to a bad value already. */
  if (sc__setting(SC_SET_SYSTEM_TRIM) == SC_SYSTEM_TRIM_GLIBC || tunables_set()) return;
  if (atomic_load_explicit(&chosen, memory_order_relaxed)) return; /* mallopt before this */
  /* mallopt does not allocate; glibc runs it under its own locks. */
  if (__libc_mallopt(M_MMAP_THRESHOLD, SC_SYS_MMAP_THRESHOLD) == 0) return;
  if (__libc_mallopt(M_TRIM_THRESHOLD, SC_SYS_TRIM_THRESHOLD) == 0) return;
  atomic_store_explicit(&paced, true, memory_order_relaxed);
  sc__os_atfork(fork_prepare, fork_parent, fork_child);
}

int sc__sys_trim(size_t pad) { return trim_fn != NULL ? trim_fn(pad) : 0; }

bool sc__sys_trim_paced(void) { return atomic_load_explicit(&paced, memory_order_relaxed); }

static void shrink_own_top_if_due(sc_arena_t *a);

int sc__sys_trim_now(size_t pad) {
  int r = sc__sys_trim(pad);
  if (!sc__sys_trim_paced()) return r; /* glibc trims the tops in its frees */
  /* The other threads shrink theirs at their next purge step (the trim
   * asked each arena for one: purge.c); this one now. */
  atomic_fetch_add_explicit(&trim_epoch, 1, memory_order_relaxed);
  shrink_own_top_if_due(sc__thread.arena);
  return r;
}

/** glibc's static thresholds, as after a program's own mallopt of one of
 * them under glibc alone (the dynamic mmap threshold then stops). */
#define SC_GLIBC_TRIM_THRESHOLD (128 << 10)
#define SC_GLIBC_MMAP_THRESHOLD (128 << 10)

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
    atomic_store_explicit(&paced, false, memory_order_relaxed);
    if (param != M_TRIM_THRESHOLD) __libc_mallopt(M_TRIM_THRESHOLD, SC_GLIBC_TRIM_THRESHOLD);
    if (param != M_MMAP_THRESHOLD) __libc_mallopt(M_MMAP_THRESHOLD, SC_GLIBC_MMAP_THRESHOLD);
  }
  if (took) threshold_give();
  return r;
}

uint64_t sc__sys_trim_count(void) { return atomic_load_explicit(&trims, memory_order_relaxed); }

/** Add arena a's live system bytes to ctx (an int64_t). */
static void add_live(sc_arena_t *a, void *ctx) {
  const sc_fallback_counts_t *k = &a->fallback;
  *(int64_t *)ctx += (int64_t)(__atomic_load_n(&k->bytes_total, __ATOMIC_RELAXED) -
                               __atomic_load_n(&k->bytes_freed, __ATOMIC_RELAXED));
}

/** The system blocks' live bytes, every thread's counters summed without a
 * lock (arenas are never unmapped; a count read mid-update is off by one
 * block). Blocks glibc made before the library loaded can be freed through
 * it, so the sum can be below zero. */
static int64_t live_bytes(void) {
  const sc_fallback_shared_t *f = &sc__fallback_shared;
  int64_t live = (int64_t)(atomic_load_explicit(&f->bytes_total, memory_order_relaxed) -
                           atomic_load_explicit(&f->bytes_freed, memory_order_relaxed));
  sc__arenas_foreach_unlocked(add_live, &live);
  return live;
}

/** Trim glibc's heaps if the system blocks' live bytes have stayed
 * SC_SYS_TRIM_DEBT or more below their level for the purge delay. */
static void trim_if_due(void) {
  int64_t live = live_bytes();
  int64_t was = atomic_load_explicit(&level, memory_order_relaxed);
  if (live > was - (int64_t)SC_SYS_TRIM_DEBT) {
    /* At or near the level: no drop, or a swing that came back. */
    while (live > was && !atomic_compare_exchange_weak_explicit(
                             &level, &was, live, memory_order_relaxed, memory_order_relaxed)) {
    }
    atomic_store_explicit(&drop_since_ns, 0, memory_order_relaxed);
    return;
  }
  uint64_t now = sc__os_now_ns(), delay = sc__purge_delay_ns();
  uint64_t since = atomic_load_explicit(&drop_since_ns, memory_order_relaxed);
  if (since == 0) {
    /* The first look to see the drop starts its clock (a delay of 0: the
     * trim is due now). */
    if (!atomic_compare_exchange_strong_explicit(&drop_since_ns, &since, now, memory_order_relaxed,
                                                 memory_order_relaxed) ||
        delay != 0)
      return;
    since = now;
  }
  if (now < since || now - since < delay) return; /* since: another thread's newer clock */
  /* SIZECLASS_PURGE_STEP=0: nothing goes back on its own, glibc's heaps
   * included (malloc_trim and sc_trim still return it); the drop waits. */
  if (sc__purge_step_pages() == 0) return;
  /* One thread trims; the others go on. */
  if (!atomic_compare_exchange_strong_explicit(&drop_since_ns, &since, 0, memory_order_relaxed,
                                               memory_order_relaxed))
    return;
  sc__sys_trim(0);
  atomic_store_explicit(&level, live_bytes(), memory_order_relaxed);
  atomic_fetch_add_explicit(&trims, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&trim_epoch, 1, memory_order_relaxed);
}

void sc__sys_trim_bind(sc_arena_t *a) {
  sc_thread_t *t = &sc__thread;
  t->sys_shrunk_made = a->fallback.allocs;
  /* A thread that made system blocks before it had an arena may have
   * freed them before a trim it has not followed: it follows every one. */
  if (!t->sys_made_unbound)
    t->sys_shrunk_trims = atomic_load_explicit(&trim_epoch, memory_order_relaxed);
}

/** After a trim the calling thread has not followed: shrink the top of
 * its own glibc arena if it made system blocks since it last did (a: its
 * arena, or NULL). Blocks, not bytes: a realloc grows a block in the
 * block's arena, which may be another thread's. */
static void shrink_own_top_if_due(sc_arena_t *a) {
  sc_thread_t *t = &sc__thread;
  uint64_t seen = atomic_load_explicit(&trim_epoch, memory_order_relaxed);
  if (sc_likely(seen == t->sys_shrunk_trims)) return;
  uint64_t made = a != NULL ? a->fallback.allocs : t->sys_shrunk_made;
  if (made == t->sys_shrunk_made && !t->sys_made_unbound) {
    t->sys_shrunk_trims = seen; /* no system block since: its glibc arena did not grow */
    return;
  }
  /* A wait for another thread's shrink, not a later step: none may come
   * (SIZECLASS_PURGE_STEP=0: only the trim's request). */
  if (!threshold_take()) return; /* this thread's own, further up the stack */
  if (!sc__sys_trim_paced()) {   /* the program set a threshold of its own meanwhile */
    threshold_give();
    return;
  }
  t->sys_shrunk_trims = seen;
  t->sys_shrunk_made = made;
  t->sys_made_unbound = 0;
  __libc_mallopt(M_TRIM_THRESHOLD, SC_SYS_SHRINK_THRESHOLD);
  /* glibc's own functions: the block is no system block of the program's
   * (not recorded, not counted). */
  void *p = sc__hooks_page.libc.malloc_fn(SC_SYS_SHRINK_BLOCK);
  if (p != NULL) sc__hooks_page.libc.free_fn(p);
  __libc_mallopt(M_TRIM_THRESHOLD, SC_SYS_TRIM_THRESHOLD);
  threshold_give();
  atomic_fetch_add_explicit(&shrinks, 1, memory_order_relaxed);
}

void sc__sys_trim_poll(void) {
  if (!sc__sys_trim_paced()) return;
  trim_if_due();
  shrink_own_top_if_due(sc__thread.arena);
}

void sc__sys_trim_tick(sc_arena_t *a, uint64_t now) {
  if (!sc__sys_trim_paced()) return;
  if (a == sc__thread.arena) shrink_own_top_if_due(a);
  /* One look every SC_SYS_TICK_LOOK_NS among all the arenas' steps. */
  uint64_t last = atomic_load_explicit(&tick_look_ns, memory_order_relaxed);
  if (now < last || now - last < SC_SYS_TICK_LOOK_NS) return; /* last: a newer look */
  if (!atomic_compare_exchange_strong_explicit(&tick_look_ns, &last, now, memory_order_relaxed,
                                               memory_order_relaxed))
    return;
  trim_if_due();
}

/* Threads without an arena (they never made a small block) share one. */
static _Atomic uint64_t shared_debt;

void sc__sys_trim_freed_shared(uint64_t bytes) {
  if (!sc__sys_trim_paced()) return;
  uint64_t debt = atomic_fetch_add_explicit(&shared_debt, bytes, memory_order_relaxed) + bytes;
  shrink_own_top_if_due(NULL);
  if (debt < SC_SYS_TRIM_DEBT) return;
  atomic_store_explicit(&shared_debt, 0, memory_order_relaxed);
  trim_if_due();
}

/* sc_trim(): everything returnable now, the library's pages (purge.c) and
 * glibc's heaps; the bytes of ours given back. */
sc_public size_t sc_trim(void) {
  sc__sys_trim_now(0); /* first: the purge below asks the threads for a step */
  return sc__purge_trim();
}
