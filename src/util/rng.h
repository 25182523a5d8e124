/* SPDX-License-Identifier: MIT */
/* rng.h — the library's one random generator: xorshift64* with a state per
 * thread (the sampling of guard pages and of allocation sites).
 *
 * One seeding rule: a thread's generator starts from the process's
 * sampling secret (sc__sample_secret, which no free-list key is made from;
 * the caller passes it in: it lives in the core, which util/ cannot call) mixed with the thread (a
 * process-wide count of seeded generators, the state's own address, which is the thread's TLS, and
 * the clock), through the splitmix64 finalizer. Two threads never start alike; two processes differ
 * by their secrets. Nothing here allocates or locks. */
#ifndef SC_RNG_H
#define SC_RNG_H

#include <stdint.h>

/** A generator; zero means not seeded yet. */
typedef struct {
  uint64_t s;
} sc_rng_t;

/** The splitmix64 finalizer: every bit of x moves every bit of the result. */
static inline uint64_t sc__rng_mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

#pragma GCC visibility push(hidden)
/** Seed r (a thread's own) from `secret` mixed with the thread (above). */
void sc__rng_seed(sc_rng_t *r, uint64_t secret);
#pragma GCC visibility pop

/** The next 64 random bits (r seeded). */
static inline uint64_t sc__rng_next(sc_rng_t *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}

#endif /* SC_RNG_H */
