/* SPDX-License-Identifier: MIT */
/* rng.c — seeding the one random generator (rng.h). */
#include "util/rng.h"

#include <stdatomic.h>

#include "util/os.h"

void sc__rng_seed(sc_rng_t *r, uint64_t secret) {
  static _Atomic uint64_t seeded;
  uint64_t n = atomic_fetch_add_explicit(&seeded, 1, memory_order_relaxed);
  uint64_t thread = sc__rng_mix((n + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uintptr_t)r << 16) ^
                                sc__os_now_ns());
  uint64_t x = sc__rng_mix(secret ^ thread);
  r->s = x != 0 ? x : 0x9e3779b97f4a7c15ull; /* xorshift never leaves 0 */
}
