/* SPDX-License-Identifier: MIT */
/* core_util.h — helpers shared by the core allocator suites (test_core_*.c)
 * and test_purge.c: keep the optimizer from eliding allocations, fill and
 * check byte patterns, a small PRNG, paths in the build directory and whole
 * files. Running helper programs is proc_run.h's job, reading the footprint
 * rss.h's; both come with this header. */
#ifndef CORE_UTIL_H
#define CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_run.h"
#include "rss.h"

/** Return p unchanged, but opaque to the optimizer: GCC removes a malloc/free
 * pair whose block never escapes, and we want every call to really happen. */
static inline void *cu_escape(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

/** A size the compiler cannot see (so malloc(SIZE_MAX) compiles warning-free). */
static inline size_t cu_opaque_size(size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

/** Byte i of the pattern of `seed`: differs between seeds and positions. */
static inline uint8_t cu_pattern_byte(uint64_t seed, size_t i) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  return (uint8_t)(x >> 56 ^ x >> 29 ^ i);
}

/** Fill n bytes of p with the pattern of seed. */
static inline void cu_fill(void *p, size_t n, uint64_t seed) {
  uint8_t *b = p;
  for (size_t i = 0; i < n; i++) b[i] = cu_pattern_byte(seed, i);
}

/** True when the first n bytes of p still hold the pattern of seed. */
static inline bool cu_check(const void *p, size_t n, uint64_t seed) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != cu_pattern_byte(seed, i)) return false;
  return true;
}

/** A small deterministic PRNG (xorshift64*), one state per thread. */
static inline uint64_t cu_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/** Write "<build>/<rel>" into out. */
static inline void cu_build_path(char *out, size_t cap, const char *rel) {
  snprintf(out, cap, "%s/%s", pr_build_dir(), rel);
}

/** Read a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
static inline char *cu_read_file(const char *path, size_t *len_out) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len - 1 == 0) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
  }
  fclose(f);
  buf[len] = 0;
  if (len_out != NULL) *len_out = len;
  return buf;
}

#endif /* CORE_UTIL_H */
