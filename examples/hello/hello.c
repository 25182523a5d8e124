/* SPDX-License-Identifier: MIT */
/* hello.c — the smallest program that uses libsizeclass: it asks whether
 * its own malloc is the library's. Exit status 0 when it is, 1 when not.
 *
 *   cc -Iinclude -o build/hello examples/hello/hello.c build/libsizeclass.a -lpthread -ldl
 *   cc -o hello hello.c $(pkg-config --cflags --libs sizeclass)       (installed)
 *   cmake -S examples/hello -B build/hello-cmake                       (installed)
 */
#include <stdio.h>
#include <stdlib.h>

#include <sizeclass.h>

int main(void) {
  char *p = malloc(40);
  if (p == NULL) return 2;
  p[0] = 0;
  bool ours = sc_owns(p);
  printf("malloc(40): a %zu-byte block %s\n", sc_usable_size(p),
         ours ? "of libsizeclass" : "NOT of libsizeclass");
  free(p);
  return ours ? 0 : 1;
}
