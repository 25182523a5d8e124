/* SPDX-License-Identifier: MIT */
/* thread_spawn — many short-lived threads, one after another, each making
 * one block and freeing one another thread made (issue 22: a program that
 * spawns a thread per task, such as a server's or a build tool's worker).
 *
 * --threads threads are started in --parallel lanes: each lane starts a
 * thread, joins it, starts the next. A thread makes one block of --size
 * bytes (stamped), takes the block the lane's previous thread left in the
 * lane's slot (checks it, frees it: a block of a thread that has exited)
 * and leaves its own there. The last blocks are freed by the main thread.
 *
 *   thread_spawn [--threads N] [--parallel L] [--size S]
 *
 * Reports microseconds per thread (create, work, exit, join). */
#include <pthread.h>

#include "bench.h"

BENCH_GLOBALS

typedef struct lane_s {
  pthread_t tid;
  uint64_t threads; /* to start in this lane */
  size_t size;
  uint64_t seed;
  void *slot; /* the block the last thread left */
  uint64_t slot_tag;
} lane_t;

typedef struct task_s {
  lane_t *lane;
  uint64_t tag;
  uint64_t ordinal; /* threads of the lane before this one */
} task_t;

static void *one_thread(void *arg) {
  task_t *t = arg;
  lane_t *l = t->lane;
  void *p = bench_nonnull(malloc(l->size), l->size);
  bench_stamped = t->ordinal; /* count stamps along the lane (BENCH_CORRUPT) */
  bench_stamp(p, l->size, t->tag);
  if (l->slot != NULL) {
    bench_check(l->slot, l->size, l->slot_tag);
    free(l->slot);
  }
  l->slot = p;
  l->slot_tag = t->tag;
  bench_thread_done();
  return NULL;
}

static void *run_lane(void *arg) {
  lane_t *l = arg;
  for (uint64_t i = 0; i < l->threads; i++) {
    task_t t = {l, bench_mix(l->seed + i), i};
    pthread_t tid;
    if (pthread_create(&tid, NULL, one_thread, &t) != 0) {
      fprintf(stderr, "thread_spawn: pthread_create failed\n");
      exit(4);
    }
    pthread_join(tid, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t threads = (uint64_t)bench_opt(argc, argv, "--threads", 50000);
  uint64_t parallel = (uint64_t)bench_opt(argc, argv, "--parallel", 1);
  size_t size = (size_t)bench_opt(argc, argv, "--size", 128);
  if (parallel < 1) parallel = 1;
  if (size < 16) size = 16;
  lane_t *lanes = bench_nonnull(calloc(parallel, sizeof(lane_t)), parallel * sizeof(lane_t));
  uint64_t t0 = bench_now_ns();
  for (uint64_t k = 0; k < parallel; k++) {
    lanes[k] = (lane_t){.threads = threads / parallel + (k < threads % parallel),
                        .size = size,
                        .seed = 1000003 * (k + 1)};
    if (parallel == 1)
      run_lane(&lanes[k]);
    else if (pthread_create(&lanes[k].tid, NULL, run_lane, &lanes[k]) != 0)
      return 4;
  }
  for (uint64_t k = 0; parallel > 1 && k < parallel; k++) pthread_join(lanes[k].tid, NULL);
  uint64_t dt = bench_now_ns() - t0;
  for (uint64_t k = 0; k < parallel; k++) {
    if (lanes[k].slot == NULL) continue;
    bench_check(lanes[k].slot, size, lanes[k].slot_tag);
    free(lanes[k].slot);
  }
  free(lanes);
  bench_result("thread-spawn", threads ? (double)dt / 1e3 / (double)threads : 0.0, "us/thread",
               threads);
  return 0;
}
