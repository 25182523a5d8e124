/* SPDX-License-Identifier: MIT */
/* other_alloc.c — libother_alloc.so, a stand-in for another allocator that
 * a program links (as Debian's redis links jemalloc): it defines
 * malloc_usable_size and malloc_trim, and neither may ever be asked about a
 * block of glibc's. */
#include <stdlib.h>
#include <unistd.h>

static void refuse(void) {
  static const char msg[] = "other_alloc: asked about a block that is not mine\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  abort();
}

size_t malloc_usable_size(void *p) {
  (void)p;
  refuse();
  return 0;
}

int malloc_trim(size_t pad) {
  (void)pad;
  refuse();
  return 0;
}
