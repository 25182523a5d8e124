/* SPDX-License-Identifier: MIT */
/* named.c — named snapshots (sc_snapshot): "what did the level load leave
 * behind?". Each call copies every figure of the statistics (struct
 * sc_stats: classes, totals, the system route, frames, purge, process)
 * with the caller's name into a ring of the last SC_NAMED_MAX; the report
 * prints them under "snapshots" (core/snapshot.h is its view). While tags
 * are on, each also keeps the SC_NAMED_TAGS tags and SC_NAMED_THREADS
 * threads with the most live bytes (block + system), largest first. No
 * per-block data, no allocation: the ring and the scratch rows are static
 * (about 720 KiB of zero pages until used). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/snapshot.h"
#include "sizeclass.h"
#include "util/os.h"

static sc_named_t ring[SC_NAMED_MAX];
static _Atomic uint64_t taken; /* snapshots taken; entry n is ring[n % SC_NAMED_MAX] */
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;

/* Every tag's and thread's figures, read under named_lock and then cut to
 * the largest ones. */
#define SCRATCH_ROWS 256
static struct sc_tag_stats all_tags[SCRATCH_ROWS];
static struct sc_thread_stats all_threads[SCRATCH_ROWS];
static uint64_t key[SCRATCH_ROWS];
static bool taken_row[SCRATCH_ROWS];

/** The index of the largest key[0..n) not yet taken (n > 0 rows left). */
static size_t largest(size_t n) {
  size_t best = 0;
  bool found = false;
  for (size_t i = 0; i < n && i < SCRATCH_ROWS; i++)
    if (!taken_row[i] && (!found || key[i] > key[best])) {
      best = i;
      found = true;
    }
  taken_row[best] = true; /* the callers ask only while a row is left */
  return best;
}

/** Keep the largest tags and threads in e (tags on). */
static void keep_tags(sc_named_t *e) {
  e->tags_on = sc__tags_report_on();
  e->ntags = e->nthreads = 0;
  if (!e->tags_on) return;
  size_t n = sc__tags_fill(all_tags, SCRATCH_ROWS, false);
  if (n > SCRATCH_ROWS) n = SCRATCH_ROWS;
  for (size_t i = 0; i < n; i++) {
    key[i] = all_tags[i].live_block_bytes + all_tags[i].system_live_bytes;
    taken_row[i] = false;
  }
  for (; e->ntags < n && e->ntags < SC_NAMED_TAGS; e->ntags++)
    e->tags[e->ntags] = all_tags[largest(n)];
  n = sc__tags_threads_fill(all_threads, SCRATCH_ROWS, false);
  if (n > SCRATCH_ROWS) n = SCRATCH_ROWS;
  for (size_t i = 0; i < n; i++) {
    key[i] = all_threads[i].live_block_bytes + all_threads[i].system_live_bytes;
    taken_row[i] = false;
  }
  for (; e->nthreads < n && e->nthreads < SC_NAMED_THREADS; e->nthreads++)
    e->threads[e->nthreads] = all_threads[largest(n)];
}

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
  keep_tags(e);
  atomic_store_explicit(&taken, n + 1, memory_order_release);
  pthread_mutex_unlock(&named_lock);
  return true;
}

uint64_t sc__named_count(void) { return atomic_load_explicit(&taken, memory_order_acquire); }

static void named_fork_child(void) { pthread_mutex_init(&named_lock, NULL); }

__attribute__((constructor)) static void named_on_load(void) {
  sc__os_atfork(NULL, NULL, named_fork_child);
}

const sc_named_t *sc__named_entry(uint64_t count, uint64_t i) {
  uint64_t kept = count < SC_NAMED_MAX ? count : SC_NAMED_MAX;
  return &ring[(count - kept + i) % SC_NAMED_MAX];
}
