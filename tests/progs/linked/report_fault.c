/* SPDX-License-Identifier: MIT */
/* report_fault.c — a misuse abort whose report meets broken records: the
 * arena list's link is pointed at unmapped memory, then a block is freed
 * twice. The abort's report faults while it walks the arenas; the library
 * must say so and still end by SIGABRT, at once (tests/test_arrives.c).
 * Linked with libsizeclass.a (it reaches into the core's records). */
#include <stdlib.h>

#include "core/internal.h"

int main(void) {
  void *volatile p = malloc(64);
  sc_arena_t *a = sc__thread.arena;
  if (a == NULL) return 2;
  /* The newest arena (this thread's) links to the rest: now to nowhere. */
  a->next_all = (sc_arena_t *)(uintptr_t)16;
  free(p);
  free(p);
  return 0;
}
