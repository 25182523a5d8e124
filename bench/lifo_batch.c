/* SPDX-License-Identifier: MIT */
/* lifo_batch — batches of small blocks allocated, then freed in reverse
 * order, after glibc's malloc-simple benchmark (issue 10).
 *
 * For each batch size B in 100, 1000, 10 000 and each request size S in
 * 16, 24, 32, 48, 64 B: rounds of "allocate B blocks of S bytes, then free
 * them newest first" until --blocks blocks were made for that (B, S). This
 * is the pattern of code that builds a temporary structure (a parse tree,
 * a path, a list of hits) and tears it down again: the allocator sees a run
 * of mallocs of one small size and the same blocks coming back in LIFO
 * order. 24 and 48 B are not powers of two, as most struct sizes are not.
 * Every block is stamped and checked before its free.
 *
 *   lifo_batch --blocks N
 *
 * Reports ns per malloc+free pair over all (B, S), and per batch size on
 * "batch" lines. */
#include "bench.h"

BENCH_GLOBALS

static const size_t batch_sizes[] = {100, 1000, 10000};
static const size_t req_sizes[] = {16, 24, 32, 48, 64};
#define NBATCH (sizeof(batch_sizes) / sizeof(batch_sizes[0]))
#define NREQ (sizeof(req_sizes) / sizeof(req_sizes[0]))

/** Rounds of one (batch, size) until `blocks` blocks were made; returns them. */
static uint64_t run_batches(void **v, size_t batch, size_t size, uint64_t blocks) {
  uint64_t rounds = (blocks + batch - 1) / batch;
  for (uint64_t r = 0; r < rounds; r++) {
    uint64_t base = bench_mix(r * 131 + batch * 7 + size);
    for (size_t i = 0; i < batch; i++) {
      v[i] = bench_nonnull(malloc(size), size);
      bench_stamp(v[i], size, base + i);
    }
    for (size_t i = batch; i-- > 0;) {
      bench_check(v[i], size, base + i);
      free(v[i]);
    }
  }
  return rounds * batch;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t blocks = (uint64_t)bench_opt(argc, argv, "--blocks", 1000000);
  void **v = bench_nonnull(calloc(batch_sizes[NBATCH - 1], sizeof(void *)),
                           batch_sizes[NBATCH - 1] * sizeof(void *));
  uint64_t total_ns = 0, total = 0;
  for (size_t b = 0; b < NBATCH; b++) {
    uint64_t t0 = bench_now_ns(), n = 0;
    for (size_t s = 0; s < NREQ; s++) n += run_batches(v, batch_sizes[b], req_sizes[s], blocks);
    uint64_t dt = bench_now_ns() - t0;
    total_ns += dt;
    total += n;
    printf("batch %5zu: %.2f ns/pair (%llu pairs)\n", batch_sizes[b],
           n ? (double)dt / (double)n : 0.0, (unsigned long long)n);
  }
  free(v);
  bench_result("lifo-batch", total ? (double)total_ns / (double)total : 0.0, "ns/pair", total);
  return 0;
}
