/* SPDX-License-Identifier: MIT */
/* check_misuse — run one scenario of tests/check_util.h under
 * LD_PRELOAD=libsizeclass.so with the mode's variables set by the test:
 * `check_misuse NAME`. Before the error it prints what the message will
 * name: "block offset alloc_tid free_tid" (block in hex), one line, so that
 * tests/test_guard.c and tests/test_check.c can compare the exact stderr
 * line. Exit status 2: not preloaded or bad usage; other non-signal exits:
 * the error was not caught (1) or a precondition failed. Built a second
 * time with -DCK_LINKED and libsizeclass.a linked in
 * (build/tests/progs/linked/check_misuse, mk/check.mk): the same
 * messages from the linked form; that one also takes `sites NAME`, which
 * sets a fake allocation-site hook first (the guard pages then name the
 * sites). */
#include <dlfcn.h>
#include <stdio.h>

#include "check_util.h"

static void announce(uintptr_t block, long offset, long alloc_tid, long free_tid) {
  printf("%lx %ld %ld %ld\n", (unsigned long)block, offset, alloc_tid, free_tid);
  fflush(stdout);
}

#ifdef CK_LINKED
/* The allocation-site hook of the guard pages (src/features/guard.h), as a sites
 * feature would set it: here one fake site for everything. Linked, the
 * program can reach the library's internal names. */
#include "features/guard.h"

static uint64_t fake_capture(void) { return 7; }

static size_t fake_describe(uint64_t site, char *buf, size_t cap) {
  static const char text[] = "fake site ";
  size_t n = 0;
  for (; text[n] != 0 && n < cap; n++) buf[n] = text[n];
  if (n < cap) buf[n++] = (char)('0' + site % 10);
  return n;
}

/** `check_misuse sites NAME`: NAME with the fake site hook set. */
static const char *sites_hook(int *argc, char **argv) {
  if (*argc != 3 || strcmp(argv[1], "sites") != 0) return *argc == 2 ? argv[1] : NULL;
  sc__guard_sites.capture = fake_capture;
  sc__guard_sites.describe = fake_describe;
  return argv[2];
}
#endif

int main(int argc, char **argv) {
#ifdef CK_LINKED
  const char *name = sites_hook(&argc, argv);
#else
  const char *name = argc == 2 ? argv[1] : NULL;
#endif
  const ck_case_t *c = name != NULL ? ck_find(name) : NULL;
  if (c == NULL) {
    fprintf(stderr, "usage: check_misuse NAME; names:");
    for (const ck_case_t *k = ck_cases; k->name != NULL; k++) fprintf(stderr, " %s", k->name);
    fprintf(stderr, "\n");
    return 2;
  }
#ifndef CK_LINKED
  if (dlsym(RTLD_DEFAULT, "sc_owns") == NULL) {
    fprintf(stderr, "check_misuse: libsizeclass is not preloaded\n");
    return 2;
  }
#endif
  ck_env_t env = {.announce = announce};
  int rc = c->run(&env);
  fprintf(stderr, "check_misuse: %s: %s\n", c->name,
          rc == 0 ? "error not caught" : "precondition failed");
  return rc == 0 ? 1 : rc;
}
