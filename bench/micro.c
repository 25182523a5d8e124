/* SPDX-License-Identifier: MIT */
/* micro — malloc/free pairs per size class (and, built as micro_mixed, of
 * mixed sizes).
 *
 * For each class size 16..1024 B: rounds of "allocate W blocks, then free
 * all W" where W is the working set, until --pairs pairs were made. The free
 * order is LIFO (reverse of allocation), FIFO, or a random permutation
 * (rotated every round so each round frees in a different order). Every
 * block is stamped on allocation and checked before its free.
 *
 *   micro --order lifo|fifo|rand --ws W --pairs P [--alloc none]
 *
 * --alloc none hands out slots of one preallocated region instead of
 * calling malloc/free: the cost of the harness alone, which bench-instr
 * subtracts. Reports ns per malloc+free pair (all classes together), and
 * per class on "class" lines.
 *
 * micro_mixed (bench/micro_mixed.c, this file with MICRO_MIXED set) makes
 * as many pairs, 7 x --pairs, in the same rounds, but each block of its own
 * size: one of the seven class bands, each as likely, and a size uniform
 * within it (16 B, 17..32 B, ..., 513..1024 B). A binary of its own, so
 * that micro's per-class code compiles exactly as before: bench-instr's
 * harness subtraction depends on it, and a change of its register use
 * moves every allocator's count. */
#include <dlfcn.h>
#include <stdbool.h>

#include "bench.h"

#ifndef MICRO_MIXED
#define MICRO_MIXED 0
#endif

BENCH_GLOBALS

enum { ORDER_LIFO, ORDER_FIFO, ORDER_RAND };

typedef struct micro_s {
  int order;
  size_t ws;
  uint64_t pairs;
  bool none;           /* harness only: no malloc/free */
  void **blocks;       /* the working set */
  uint32_t *perm;      /* random free order */
  unsigned char *pool; /* --alloc none: W slots of the largest class */
} micro_t;

/** Index of the j-th block to free in round r. */
static inline size_t free_index(const micro_t *m, size_t j, uint64_t r) {
  switch (m->order) {
    case ORDER_LIFO:
      return m->ws - 1 - j;
    case ORDER_FIFO:
      return j;
    default: {
      size_t k = j + (size_t)(r % m->ws);
      return m->perm[k < m->ws ? k : k - m->ws];
    }
  }
}

#if !MICRO_MIXED
/** Run all rounds for class size s; returns the pairs made. */
static uint64_t run_class(micro_t *m, size_t s) {
  uint64_t rounds = m->pairs == 0 ? 0 : (m->pairs + m->ws - 1) / m->ws;
  for (uint64_t r = 0; r < rounds; r++) {
    uint64_t base = r * m->ws * 0x9E3779B97F4A7C15ull + s;
    for (size_t i = 0; i < m->ws; i++) {
      void *p = m->none ? m->pool + i * 1024 : bench_nonnull(malloc(s), s);
      bench_stamp(p, s, base + i);
      m->blocks[i] = p;
    }
    for (size_t j = 0; j < m->ws; j++) {
      size_t i = free_index(m, j, r);
      bench_check(m->blocks[i], s, base + i);
      if (!m->none) free(m->blocks[i]);
    }
  }
  return rounds * m->ws;
}
#endif

#if MICRO_MIXED
/** A mixed size for key h: one of the seven class bands, each as likely,
 * and a size uniform within it. */
static inline size_t mixed_size(uint64_t h) {
  unsigned band = (unsigned)(h % 7);
  size_t hi = (size_t)16 << band, lo = band == 0 ? 16 : hi / 2 + 1;
  return lo + (size_t)((h >> 8) % (hi - lo + 1));
}

/** Run the mixed rounds (7 x pairs: as many as every class of micro
 * together), sizes[] holding each block's size; returns the pairs made. */
static uint64_t run_mixed(micro_t *m, uint32_t *sizes) {
  uint64_t pairs = m->pairs * 7;
  uint64_t rounds = pairs == 0 ? 0 : (pairs + m->ws - 1) / m->ws;
  for (uint64_t r = 0; r < rounds; r++) {
    uint64_t base = r * m->ws * 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < m->ws; i++) {
      size_t s = mixed_size(bench_mix(base + i));
      void *p = m->none ? m->pool + i * 1024 : bench_nonnull(malloc(s), s);
      bench_stamp(p, s, base + i);
      m->blocks[i] = p;
      sizes[i] = (uint32_t)s;
    }
    for (size_t j = 0; j < m->ws; j++) {
      size_t i = free_index(m, j, r);
      bench_check(m->blocks[i], sizes[i], base + i);
      if (!m->none) free(m->blocks[i]);
    }
  }
  return rounds * m->ws;
}
#endif

/** Parse the order name; exits on an unknown one. */
static int parse_order(const char *s) {
  if (strcmp(s, "lifo") == 0) return ORDER_LIFO;
  if (strcmp(s, "fifo") == 0) return ORDER_FIFO;
  if (strcmp(s, "rand") == 0) return ORDER_RAND;
  fprintf(stderr, "micro: unknown order '%s' (lifo, fifo, rand)\n", s);
  exit(2);
}

int main(int argc, char **argv) {
  bench_init();
  micro_t m = {0};
  m.order = parse_order(bench_opt_str(argc, argv, "--order", "lifo"));
  m.ws = (size_t)bench_opt(argc, argv, "--ws", 1);
  m.pairs = (uint64_t)bench_opt(argc, argv, "--pairs", 1000000);
  m.none = strcmp(bench_opt_str(argc, argv, "--alloc", "libc"), "none") == 0;
  if (m.ws < 1) m.ws = 1;
  /* --tag NAME: enter a tag (libsizeclass's sc_tag, looked up at run time
   * so that micro still runs under other allocators). */
  const char *tag = bench_opt_str(argc, argv, "--tag", "");
  if (tag[0] != 0) {
    unsigned (*tag_fn)(const char *) = (unsigned (*)(const char *))dlsym(RTLD_DEFAULT, "sc_tag");
    unsigned (*enter_fn)(unsigned) = (unsigned (*)(unsigned))dlsym(RTLD_DEFAULT, "sc_tag_enter");
    if (tag_fn != NULL && enter_fn != NULL) enter_fn(tag_fn(tag));
  }
  m.blocks = bench_nonnull(calloc(m.ws, sizeof(void *)), m.ws * sizeof(void *));
  m.perm = bench_nonnull(calloc(m.ws, sizeof(uint32_t)), m.ws * sizeof(uint32_t));
  if (m.none) m.pool = bench_nonnull(malloc(m.ws * 1024), m.ws * 1024);
  bench_rng_t rng = bench_rng(42);
  for (size_t i = 0; i < m.ws; i++) m.perm[i] = (uint32_t)i;
  for (size_t i = m.ws; i > 1; i--) { /* Fisher-Yates */
    size_t k = (size_t)(bench_next(&rng) % i);
    uint32_t t = m.perm[i - 1];
    m.perm[i - 1] = m.perm[k];
    m.perm[k] = t;
  }

  uint64_t total_ns = 0, total_pairs = 0;
#if MICRO_MIXED
  uint32_t *sizes = bench_nonnull(calloc(m.ws, sizeof(uint32_t)), m.ws * sizeof(uint32_t));
  uint64_t t0 = bench_now_ns();
  total_pairs = run_mixed(&m, sizes);
  total_ns = bench_now_ns() - t0;
  printf("mixed: %.2f ns/pair (%llu pairs)\n",
         total_pairs ? (double)total_ns / (double)total_pairs : 0.0,
         (unsigned long long)total_pairs);
  free(sizes);
#else
  for (size_t s = 16; s <= 1024; s <<= 1) {
    uint64_t t0 = bench_now_ns();
    uint64_t n = run_class(&m, s);
    uint64_t dt = bench_now_ns() - t0;
    total_ns += dt;
    total_pairs += n;
    printf("class %4zu: %.2f ns/pair (%llu pairs)\n", s, n ? (double)dt / (double)n : 0.0,
           (unsigned long long)n);
  }
#endif
  free(m.pool);
  free(m.perm);
  free(m.blocks);
  bench_result("micro", total_pairs ? (double)total_ns / (double)total_pairs : 0.0, "ns/pair",
               total_pairs);
  return 0;
}
