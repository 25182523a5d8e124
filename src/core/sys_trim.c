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
 * glibc's malloc_trim shrinks only its main arena's top: what the other
 * arenas' threads do after a trim, and a program's own thresholds
 * (mallopt), are sys_top.c's. */
#include <dlfcn.h>
#include <malloc.h>
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

static _Atomic bool paced; /* the policy above is in force */
/* glibc's malloc_trim; NULL: not found (in the hooks' page, core/hooks.h) */
#define trim_fn (sc__hooks_page.sys_trim_fn)
static _Atomic uint64_t trims; /* paced trims so far */
/* The system blocks' live bytes: the most a look saw since the last trim
 * (after a trim, what was live then). */
static _Atomic int64_t level;
static _Atomic uint64_t drop_since_ns; /* the first look that saw the drop; 0: none */
/** How often the arenas' purge steps look, all of them together. */
#define SC_SYS_TICK_LOOK_NS (25 * 1000000ull)
static _Atomic uint64_t tick_look_ns; /* when a purge step last looked */
/** True when GLIBC_TUNABLES sets one of glibc's malloc thresholds. */
static bool tunables_set(void) {
  const char *t = getenv("GLIBC_TUNABLES");
  return t != NULL && (strstr(t, "trim_threshold") != NULL || strstr(t, "mmap_threshold") != NULL);
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
  if (sc__sys_top_chosen()) return; /* the program's mallopt, before this */
  /* mallopt does not allocate; glibc runs it under its own locks. */
  /* 1 is success (a sanitizer's own mallopt may say 0 or -1). */
  if (__libc_mallopt(M_MMAP_THRESHOLD, SC_SYS_MMAP_THRESHOLD) != 1) return;
  if (__libc_mallopt(M_TRIM_THRESHOLD, SC_SYS_TRIM_THRESHOLD) != 1) return;
  atomic_store_explicit(&paced, true, memory_order_relaxed);
  sc__sys_top_init();
}

int sc__sys_trim(size_t pad) { return trim_fn != NULL ? trim_fn(pad) : 0; }

bool sc__sys_trim_paced(void) { return atomic_load_explicit(&paced, memory_order_relaxed); }

void sc__sys_trim_stop(void) { atomic_store_explicit(&paced, false, memory_order_relaxed); }

int sc__sys_trim_now(size_t pad) {
  int r = sc__sys_trim(pad);
  if (!sc__sys_trim_paced()) return r; /* glibc trims the tops in its frees */
  /* The other threads shrink their glibc arenas' tops at their next purge
   * step (the trim asks each arena for one: purge.c); this one now. */
  sc__sys_top_trimmed();
  sc__sys_top_follow(sc__thread.arena);
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
  sc__sys_top_trimmed();
}

void sc__sys_trim_poll(void) {
  if (!sc__sys_trim_paced()) return;
  trim_if_due();
  sc__sys_top_follow(sc__thread.arena);
}

void sc__sys_trim_tick(sc_arena_t *a, uint64_t now) {
  if (!sc__sys_trim_paced()) return;
  if (a == sc__thread.arena) sc__sys_top_follow(a);
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
  sc__sys_top_follow(NULL);
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
