/* SPDX-License-Identifier: MIT */
/* named.c — named snapshots (sc_snapshot): "what did the level load leave
 * behind?". Each call copies every figure of the statistics (struct
 * sc_stats: classes, totals, the system route, frames, purge, process)
 * with the caller's name into a ring of the last SC_NAMED_MAX; the report
 * prints them under "snapshots" (core/snapshot.h is its view). No per-block
 * data, no allocation: the ring is static (about 190 KiB of zero pages
 * until used). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/snapshot.h"
#include "sizeclass.h"

static sc_named_t ring[SC_NAMED_MAX];
static _Atomic uint64_t taken; /* snapshots taken; entry n is ring[n % SC_NAMED_MAX] */
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;

sc_public bool sc_snapshot(const char *name) {
  if (name == NULL || name[0] == 0) {
    errno = EINVAL;
    return false;
  }
  pthread_mutex_lock(&named_lock);
  uint64_t n = atomic_load_explicit(&taken, memory_order_relaxed);
  sc_named_t *e = &ring[n % SC_NAMED_MAX];
  size_t len = strnlen(name, SC_NAMED_NAME_CAP - 1);
  memcpy(e->name, name, len);
  e->name[len] = 0;
  sc__stats_snapshot(&e->stats, false);
  e->frame = e->stats.frames.frames;
  e->wall_ns = e->stats.process.wall_ns;
  atomic_store_explicit(&taken, n + 1, memory_order_release);
  pthread_mutex_unlock(&named_lock);
  return true;
}

uint64_t sc__named_count(void) { return atomic_load_explicit(&taken, memory_order_acquire); }

static void named_fork_child(void) { pthread_mutex_init(&named_lock, NULL); }

__attribute__((constructor)) static void named_on_load(void) {
  pthread_atfork(NULL, NULL, named_fork_child);
}

const sc_named_t *sc__named_entry(uint64_t count, uint64_t i) {
  uint64_t kept = count < SC_NAMED_MAX ? count : SC_NAMED_MAX;
  return &ring[(count - kept + i) % SC_NAMED_MAX];
}
