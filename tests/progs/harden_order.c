/* SPDX-License-Identifier: MIT */
/* harden_order — how predictable is placement: `harden_order`, run under
 * LD_PRELOAD=libsizeclass.so, makes 4000 blocks of 48 bytes (64-byte
 * class, fresh pages) and prints how many of them lie just above the one
 * made before (the next block in address order), and how many distinct
 * blocks it got (a sanity check: all of them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4000

int main(void) {
  static uintptr_t blocks[N];
  unsigned next_in_order = 0;
  for (int i = 0; i < N; i++) {
    blocks[i] = (uintptr_t)malloc(48);
    if (i > 0 && blocks[i] == blocks[i - 1] + 64) next_in_order++;
  }
  unsigned distinct = 0;
  for (int i = 0; i < N; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = blocks[j] == blocks[i];
    distinct += !seen;
  }
  printf("%u %u\n", next_in_order, distinct);
  return 0;
}
