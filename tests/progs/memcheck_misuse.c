/* memcheck_misuse — run one scenario of tests/memcheck_util.h under
 * LD_PRELOAD=libsizeclass.so with the mode's variables set by the test:
 * `memcheck_misuse NAME`. Before the error it prints what the message will
 * name: "block offset alloc_tid free_tid" (block in hex), one line, so that
 * tests/test_guard.c and tests/test_check.c can compare the exact stderr
 * line. Exit status 2: not preloaded or bad usage; other non-signal exits:
 * the error was not caught (1) or a precondition failed. Built a second
 * time with -DMC_LINKED and libsizeclass.a linked in
 * (build/tests/progs/linked/memcheck_misuse, mk/memcheck.mk): the same
 * messages from the linked form. */
#include <dlfcn.h>
#include <stdio.h>

#include "memcheck_util.h"

static void announce(uintptr_t block, long offset, long alloc_tid, long free_tid) {
  printf("%lx %ld %ld %ld\n", (unsigned long)block, offset, alloc_tid, free_tid);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const mc_case_t *c = argc == 2 ? mc_find(argv[1]) : NULL;
  if (c == NULL) {
    fprintf(stderr, "usage: memcheck_misuse NAME; names:");
    for (const mc_case_t *k = mc_cases; k->name != NULL; k++) fprintf(stderr, " %s", k->name);
    fprintf(stderr, "\n");
    return 2;
  }
#ifndef MC_LINKED
  if (dlsym(RTLD_DEFAULT, "sc_owns") == NULL) {
    fprintf(stderr, "memcheck_misuse: libsizeclass is not preloaded\n");
    return 2;
  }
#endif
  mc_env_t env = {.announce = announce};
  int rc = c->run(&env);
  fprintf(stderr, "memcheck_misuse: %s: %s\n", c->name,
          rc == 0 ? "error not caught" : "precondition failed");
  return rc == 0 ? 1 : rc;
}
