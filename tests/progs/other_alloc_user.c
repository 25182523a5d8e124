/* SPDX-License-Identifier: MIT */
/* other_alloc_user.c — a program linked with another allocator's library
 * (tests/progs/lib/other_alloc.c), run with libsizeclass preloaded: the
 * system route's usable-size lookups and malloc_trim must reach glibc, not
 * the other library. Prints "ok". */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  for (int i = 0; i < 100; i++) {
    char *p = malloc(5000 + (size_t)i); /* the system route */
    if (p == NULL) return 1;
    memset(p, i, 5000);
    p = realloc(p, 9000);
    if (p == NULL) return 1;
    free(p);
  }
  malloc_trim(0); /* ours, which trims glibc's heap too */
  printf("ok\n");
  return 0;
}
