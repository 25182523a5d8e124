/* SPDX-License-Identifier: MIT */
/* purge_burst — the footprint scenario under LD_PRELOAD=libsizeclass.so, so
 * that settings come from the environment at load time and malloc_trim is
 * the exported one: `purge_burst MIB MAX_MS`.
 *
 * Allocates MIB MiB of 200-byte blocks, frees them all, then keeps a light
 * load (a ring of 32 blocks of 48 B, one replaced per operation) for at most
 * MAX_MS milliseconds or until RSS falls below a tenth of its peak, then
 * frees the ring and calls malloc_trim(0). Prints, one per line:
 *   peak BYTES / settled BYTES MS / trim RC / trimmed BYTES
 * Exit status 2 on bad usage or allocation failure. */
#include <fcntl.h>
#include <malloc.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rss.h"

/** Monotonic milliseconds. */
static unsigned long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: purge_burst MIB MAX_MS\n");
    return 2;
  }
  size_t blocks = (size_t)strtoull(argv[1], NULL, 0) * (1u << 20) / 256;
  unsigned long long max_ms = strtoull(argv[2], NULL, 0);
  void *head = NULL;
  for (size_t i = 0; i < blocks; i++) {
    void **p = malloc(200);
    if (p == NULL) return 2;
    *p = head;
    head = p;
  }
  size_t peak = rss_resident_bytes();
  while (head != NULL) {
    void *next = *(void **)head;
    free(head);
    head = next;
  }
  void *ring[32] = {0};
  unsigned long long start = now_ms(), ms = 0, ops = 0;
  size_t now = rss_resident_bytes();
  while (now >= peak / 10 && ms <= max_ms) {
    for (unsigned k = 0; k < 1024; k++, ops++) {
      free(ring[ops % 32]);
      ring[ops % 32] = malloc(48);
      if (ring[ops % 32] == NULL) return 2;
    }
    now = rss_resident_bytes();
    ms = now_ms() - start;
  }
  for (unsigned i = 0; i < 32; i++) free(ring[i]);
  int rc = malloc_trim(0);
  printf("peak %zu\nsettled %zu %llu\ntrim %d\ntrimmed %zu\n", peak, now, ms, rc,
         rss_resident_bytes());
  return 0;
}
