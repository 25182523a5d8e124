/* SPDX-License-Identifier: MIT */
/* tests/tsan/criterion/criterion.h — a stand-in for the part of
 * Criterion's API that the threaded suite uses (Test(), .timeout,
 * cr_assert*), for `make tsan` only (mk/sanitize.mk), which puts
 * tests/tsan/ first on the include path. Criterion itself cannot start
 * under ThreadSanitizer: its runner maps a shared arena at a random
 * address in 0x2000_0000_0000-0x7f00_0000_0000 and gives up after three
 * tries, and nearly all of that range is TSan's shadow memory, so it stops
 * with "Could not initialize inheritable arena". tests/tsan/runner.c runs
 * the registered tests, each in a child process, and prints the summary
 * line Criterion prints, which scripts/run-tests.sh counts. */
#ifndef SC_TSAN_CRITERION_H
#define SC_TSAN_CRITERION_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* The options a Test() may give; the dummy first member keeps the
 * designated initialisers from overriding an earlier one. */
struct crl_opts {
  int first_;
  double timeout; /* seconds; 0: the runner's default */
  bool disabled;
};

struct crl_test {
  const char *suite, *name;
  void (*fn)(void);
  struct crl_opts opts;
};

void crl_register(const struct crl_test *t);
/* fmt is "" when the assertion gave no message (no format attribute:
 * GCC warns about an empty format string). */
_Noreturn void crl_fail(const char *file, int line, const char *expr, const char *fmt, ...);

#define Test(suite, name, ...)                                                                   \
  static void crl_fn_##suite##_##name(void);                                                     \
  __attribute__((constructor)) static void crl_reg_##suite##_##name(void) {                      \
    static const struct crl_test t = {#suite, #name, crl_fn_##suite##_##name, {0, __VA_ARGS__}}; \
    crl_register(&t);                                                                            \
  }                                                                                              \
  static void crl_fn_##suite##_##name(void)

#define cr_assert(cond, ...)                                          \
  do {                                                                \
    if (!(cond)) crl_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_null(p, ...) cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)

#endif /* SC_TSAN_CRITERION_H */
