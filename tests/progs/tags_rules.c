/* SPDX-License-Identifier: MIT */
/* tags_rules.c — run preloaded with SIZECLASS_TAGS='lib=libtagsrules*;game=main':
 * every block libtagsrules.so makes (malloc, calloc, realloc, strdup, C++
 * new, a system-route block) lands in "lib"; the program's own in "game".
 * The figures come from the preloaded library (dlsym: the program does not
 * link it). Then code made at run time (in no loaded object) calls malloc
 * 20 000 times: the process must not grow for it. Prints "ok" or what
 * differs. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sizeclass.h"

/** The process's resident KiB (VmRSS). */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f != NULL && fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
  if (f != NULL) fclose(f);
  return kib;
}

/** malloc(32) and free, `n` times, called from a stub in an anonymous
 * executable mapping (as a JIT's code would); false if none could be made. */
static int jit_mallocs(int n) {
  unsigned char *code =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 0;
  /* sub rsp,8; movabs rax,malloc; mov edi,32; call rax; add rsp,8; ret */
  unsigned char stub[] = {0x48, 0x83, 0xec, 0x08, 0x48, 0xb8, 0,    0,   0,
                          0,    0,    0,    0,    0,    0xbf, 0x20, 0,   0,
                          0,    0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3};
  void *(*m)(size_t) = malloc;
  memcpy(stub + 6, &m, sizeof(m));
  memcpy(code, stub, sizeof(stub));
  void *(*made)(void) = (void *(*)(void))(uintptr_t)code;
  for (int i = 0; i < n; i++) free(made());
  munmap(code, 4096);
  return 1;
}

void tags_rules_make(void);
extern void *tags_rules_blocks[8];
static void *volatile mine[3];

int main(void) {
  size_t (*stats)(struct sc_tag_stats *, size_t) =
      (size_t(*)(struct sc_tag_stats *, size_t))dlsym(RTLD_DEFAULT, "sc_stats_tags");
  if (stats == NULL) {
    printf("not preloaded\n");
    return 2;
  }
  tags_rules_make();
  for (int i = 0; i < 3; i++) mine[i] = malloc(16);
  static struct sc_tag_stats ts[16];
  size_t n = stats(ts, 16);
  int bad = 0;
  const struct sc_tag_stats *lib = NULL, *game = NULL;
  for (size_t i = 0; i < n && i < 16; i++) {
    if (strcmp(ts[i].name, "lib") == 0) lib = &ts[i];
    if (strcmp(ts[i].name, "game") == 0) game = &ts[i];
  }
  if (lib == NULL || game == NULL) {
    printf("tags missing\n");
    return 1;
  }
  /* 64, 128, 512, 256, 1024: one live block each; 32: made and freed. */
  static const unsigned want_live[7] = {0, 0, 1, 1, 1, 1, 1};
  static const unsigned want_allocs[7] = {0, 1, 1, 1, 1, 1, 1};
  for (int c = 0; c < 7; c++) {
    if (lib->classes[c].live_blocks != want_live[c] || lib->classes[c].allocs != want_allocs[c]) {
      printf("lib class %d: %llu live, %llu allocs\n", 16 << c,
             (unsigned long long)lib->classes[c].live_blocks,
             (unsigned long long)lib->classes[c].allocs);
      bad++;
    }
  }
  if (lib->system_live_bytes != malloc_usable_size(tags_rules_blocks[5])) {
    printf("lib system bytes %llu\n", (unsigned long long)lib->system_live_bytes);
    bad++;
  }
  if (game->classes[0].live_blocks < 3) {
    printf("game 16 B: %llu live\n", (unsigned long long)game->classes[0].live_blocks);
    bad++;
  }
  long before = rss_kib();
  if (jit_mallocs(20000)) {
    long grew = rss_kib() - before;
    if (grew > 4096) {
      printf("20 000 mallocs from code in no object: %ld KiB more resident\n", grew);
      bad++;
    }
  }
  printf(bad ? "bad\n" : "ok\n");
  return bad != 0;
}
