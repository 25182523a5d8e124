/* SPDX-License-Identifier: MIT */
/* tags_budget.c — budgets: under tag "audio" (budget from the environment,
 * SIZECLASS_BUDGET='tag:audio=1MiB'), allocate 256-byte blocks one at a
 * time, printing "at N" to stdout before each (so a test sees where an
 * abort stopped it), and never freeing; print "done" at the end.
 * argv[1]: how many blocks (default 8192: 2 MiB). */
#include <stdio.h>
#include <stdlib.h>

#include "sizeclass.h"

static void *volatile keep[65536];

/** argv[1] "names": tag names a report must escape, and bad ones. */
static int names(void) {
  static char huge[10001];
  for (int i = 0; i < 10000; i++) huge[i] = 'x';
  const char *list[] = {"", huge, "q\"uote", "new\nline", "<b>html</b>&amp;", "back\\slash"};
  for (unsigned i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
    sc_tag_t prev = sc_tag_enter(sc_tag(list[i]));
    keep[i] = malloc(32);
    sc_tag_leave(prev);
  }
  printf("done\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && argv[1][0] == 'n') return names();
  int n = argc > 1 ? atoi(argv[1]) : 8192;
  if (n > 65536) n = 65536;
  sc_tag_t audio = sc_tag("audio");
  for (int i = 0; i < n; i++) {
    if (argc > 2) {
      printf("at %d\n", i);
      fflush(stdout);
    }
    sc_tag_t prev = sc_tag_enter(audio);
    keep[i] = malloc(256);
    sc_tag_leave(prev);
  }
  printf("done\n");
  return 0;
}
