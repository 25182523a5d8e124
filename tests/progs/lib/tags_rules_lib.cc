// SPDX-License-Identifier: MIT
// tags_rules_lib.cc — libtagsrules.so for tests/progs/tags_rules.c: one block
// through each way a library allocates (malloc, calloc, realloc, strdup,
// C++ new, a block above 1024 B); SIZECLASS_TAGS='lib=libtagsrules*' must
// count every one under "lib".
#include <cstdlib>
#include <cstring>

extern "C" void *tags_rules_blocks[8];
void *tags_rules_blocks[8];

extern "C" void tags_rules_make(void) {
  static char text[200];
  memset(text, 'a', sizeof(text) - 1);
  tags_rules_blocks[0] = malloc(40);       // 64 B class
  tags_rules_blocks[1] = calloc(1, 100);   // 128
  void *p = malloc(20);                    // 32, moved by realloc
  tags_rules_blocks[2] = realloc(p, 300);  // 512
  tags_rules_blocks[3] = strdup(text);     // 256 (199 + 1 B)
  tags_rules_blocks[4] = new char[900];    // 1024
  tags_rules_blocks[5] = malloc(5000);     // the system allocator
}
