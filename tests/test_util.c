/* SPDX-License-Identifier: MIT */
/* test_util.c — the small shared pieces of src/util/ that issue 30 made
 * one: the random generator and its seeding rule (rng.h), the start of an
 * absolute path (path.h) and the first program frame (symbolize.h). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "util/path.h"
#include "util/rng.h"
#include "util/symbolize.h"

/* xorshift64* as published (Vigna), written out here independently. */
static uint64_t reference_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

Test(rng, next_is_xorshift64_star) {
  sc_rng_t r = {.s = 0x123456789abcdef1ull};
  uint64_t ref = r.s;
  for (int i = 0; i < 1000; i++) cr_assert_eq(sc__rng_next(&r), reference_next(&ref), "step %d", i);
}

Test(rng, seeds_differ_per_generator_and_never_zero) {
  enum { N = 64 };
  static sc_rng_t g[N];
  for (int i = 0; i < N; i++) {
    sc__rng_seed(&g[i], 0x5eed5eed5eed5eedull);
    cr_assert_neq(g[i].s, 0, "generator %d seeded to 0 (xorshift would stay there)", i);
  }
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++)
      cr_expect_neq(g[i].s, g[j].s, "generators %d and %d start alike", i, j);
  /* the same secret, the same generator seeded again: a new start */
  sc_rng_t again = g[0];
  sc__rng_seed(&again, 0x5eed5eed5eed5eedull);
  cr_expect_neq(again.s, g[0].s);
}

Test(rng, seeds_are_mixed) {
  /* Seeds from secrets that differ in one bit each: through splitmix64,
   * every bit of the state is set by some seed and clear in another (a
   * seed that passed the secret through unmixed would leave the high bits
   * of these small secrets clear). */
  sc_rng_t r;
  uint64_t ored = 0, anded = ~0ull;
  for (uint64_t k = 0; k < 64; k++) {
    sc__rng_seed(&r, 1ull << k);
    ored |= r.s;
    anded &= r.s;
  }
  cr_expect_eq(ored, ~0ull, "some seed bit never set");
  cr_expect_eq(anded, 0, "some seed bit always set");
}

Test(path, cwd_prefix_ends_with_one_slash) {
  char here[PATH_MAX], out[PATH_MAX];
  cr_assert_not_null(getcwd(here, sizeof(here)));
  cr_assert_eq(chdir("/tmp"), 0);
  size_t n = sc__path_cwd_prefix(out, sizeof(out));
  char real[PATH_MAX];
  cr_assert_not_null(getcwd(real, sizeof(real))); /* /tmp may be a link */
  strcat(real, "/");
  cr_expect_str_eq(out, real);
  cr_expect_eq(n, strlen(real));
  cr_assert_eq(chdir("/"), 0);
  n = sc__path_cwd_prefix(out, sizeof(out));
  cr_expect_str_eq(out, "/", "the root gets no second slash");
  cr_expect_eq(n, 1);
  cr_assert_eq(chdir(here), 0);
}

Test(path, cwd_prefix_too_small_is_zero) {
  char out[3] = {'x', 'x', 'x'};
  cr_assert_eq(chdir("/tmp"), 0);
  cr_expect_eq(sc__path_cwd_prefix(out, sizeof(out)), 0);
  cr_expect_eq(out[0], 0);
  cr_expect_eq(sc__path_cwd_prefix(out, 0), 0);
}

Test(symbolize, first_program_frame) {
  sc_frame_info_t f[4] = {
      {.allocator = true}, {.allocator = true}, {.allocator = false}, {.allocator = false}};
  cr_expect_eq(sc__sym_first_program_frame(f, 4), 2);
  cr_expect_eq(sc__sym_first_program_frame(f, 2), 0, "all the C library's: the innermost");
  cr_expect_eq(sc__sym_first_program_frame(f + 2, 2), 0);
  cr_expect_eq(sc__sym_first_program_frame(f, 0), 0);
}
