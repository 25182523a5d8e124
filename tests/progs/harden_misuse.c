/* SPDX-License-Identifier: MIT */
/* harden_misuse — run one misuse scenario of tests/harden_util.h under
 * LD_PRELOAD=libsizeclass.so: `harden_misuse NAME`. Before the misuse it
 * prints the address the abort message will name (hex, one line) so that
 * tests/test_harden.c can compare the exact stderr line. Exit status 2:
 * not preloaded or bad usage; other non-signal exits: the misuse was not
 * caught (0) or a precondition failed. */
#include <dlfcn.h>
#include <stdio.h>

#include "harden_util.h"

static bool (*owns_fn)(const void *);

static bool owns(const void *p) { return owns_fn(p); }

static void announce(uintptr_t p) {
  printf("%lx\n", (unsigned long)p);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const hu_case_t *c = argc == 2 ? hu_find(argv[1]) : NULL;
  if (c == NULL) {
    fprintf(stderr, "usage: harden_misuse NAME; names:");
    for (const hu_case_t *k = hu_cases; k->name != NULL; k++) fprintf(stderr, " %s", k->name);
    fprintf(stderr, "\n");
    return 2;
  }
  owns_fn = (bool (*)(const void *))dlsym(RTLD_DEFAULT, "sc_owns");
  if (owns_fn == NULL) {
    fprintf(stderr, "harden_misuse: libsizeclass is not preloaded\n");
    return 2;
  }
  hu_env_t env = {.announce = announce, .owns = owns};
  int rc = c->run(&env);
  fprintf(stderr, "harden_misuse: %s: %s\n", c->name,
          rc == 0 ? "misuse not caught" : "precondition failed");
  return rc == 0 ? 1 : rc;
}
