/* SPDX-License-Identifier: MIT */
/* guard_rate — `guard_rate N`: N allocations of 48 bytes, each freed at
 * once, under LD_PRELOAD=libsizeclass.so with SIZECLASS_GUARD set by the
 * test; prints "guarded G first F": how many came from the guard pool (a
 * guarded block's usable size is its request, a class block's is 64) and
 * the index of the first one. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc == 2 ? atol(argv[1]) : 0;
  long guarded = 0, first = -1;
  for (long i = 0; i < n; i++) {
    void *p = malloc(48);
    __asm__ volatile("" : "+r"(p));
    if (malloc_usable_size(p) == 48) {
      if (first < 0) first = i;
      guarded++;
    }
    free(p);
  }
  printf("guarded %ld first %ld\n", guarded, first);
  return 0;
}
