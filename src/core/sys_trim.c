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
 *    itself with malloc_trim, paced like its own pages: only once the
 *    threads have freed SC_SYS_TRIM_DEBT bytes of system blocks since the
 *    last trim, and not within the purge delay (SIZECLASS_PURGE_DELAY_MS) of
 *    it. A burst is returned a delay after it ends instead of page by page
 *    while it ends, and a steady loop stops faulting. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "core/hooks.h"
#include "util/settings.h"
#include "core/purge.h"
#include "sizeclass.h"
#include "util/startup.h"

/** glibc's ceiling for its dynamic mmap threshold (64-bit). */
#define SC_SYS_MMAP_THRESHOLD (32 << 20)
/** glibc never trims a heap on its own below this (effectively never). */
#define SC_SYS_TRIM_THRESHOLD (1 << 30)

static bool paced; /* the policy above is in force */
/* glibc's malloc_trim; NULL: not found (in the hooks' page, core/hooks.h) */
#define trim_fn (sc__hooks_page.sys_trim_fn)
static _Atomic uint64_t last_trim_ns; /* when the last paced trim ran */
static _Atomic uint64_t trims;        /* paced trims so far */

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
  /* mallopt does not allocate; glibc runs it under its own locks. */
  if (mallopt(M_MMAP_THRESHOLD, SC_SYS_MMAP_THRESHOLD) == 0) return;
  if (mallopt(M_TRIM_THRESHOLD, SC_SYS_TRIM_THRESHOLD) == 0) return;
  paced = true;
}

int sc__sys_trim(size_t pad) { return trim_fn != NULL ? trim_fn(pad) : 0; }

bool sc__sys_trim_paced(void) { return paced; }

uint64_t sc__sys_trim_count(void) { return atomic_load_explicit(&trims, memory_order_relaxed); }

/** Trim glibc's heaps if the purge delay has passed since the last trim. */
static void trim_if_due(void) {
  uint64_t now = sc__os_now_ns();
  uint64_t last = atomic_load_explicit(&last_trim_ns, memory_order_relaxed);
  if (last != 0 && now - last < sc__purge_delay_ns()) return;
  /* One thread trims; the others go on. */
  if (!atomic_compare_exchange_strong_explicit(&last_trim_ns, &last, now, memory_order_relaxed,
                                               memory_order_relaxed))
    return;
  sc__sys_trim(0);
  atomic_fetch_add_explicit(&trims, 1, memory_order_relaxed);
}

void sc__sys_trim_poll(void) {
  if (paced) trim_if_due();
}

/* Threads without an arena (they never made a small block) share one. */
static _Atomic uint64_t shared_debt;

void sc__sys_trim_freed_shared(uint64_t bytes) {
  if (!paced) return;
  uint64_t debt = atomic_fetch_add_explicit(&shared_debt, bytes, memory_order_relaxed) + bytes;
  if (debt < SC_SYS_TRIM_DEBT) return;
  atomic_store_explicit(&shared_debt, 0, memory_order_relaxed);
  trim_if_due();
}

/* sc_trim(): everything returnable now, the library's pages (purge.c) and
 * glibc's heaps; the bytes of ours given back. */
sc_public size_t sc_trim(void) {
  size_t bytes = sc__purge_trim();
  sc__sys_trim(0);
  return bytes;
}
