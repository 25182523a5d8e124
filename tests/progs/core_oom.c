/* SPDX-License-Identifier: MIT */
/* core_oom.c — allocation when the OS refuses memory (run under a low
 * RLIMIT_AS). It allocates until malloc returns NULL, checks that the
 * failure says ENOMEM, that every block it got is intact, frees them all,
 * and allocates again. Output:
 *   usable40=<n>
 *   exhausted=yes enomem=yes intact=yes again=yes huge=yes
 * Exit 1 on any failure, 2 if memory never ran out (limit too high). */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocks are chained through their first word; the second holds a seed. */
typedef struct blk_s {
  struct blk_s *prev;
  uint64_t seed;
  size_t n;
} blk_t;

static const size_t max_blocks = 20000000; /* a cap if the limit is missing */

int main(void) {
  void *probe = malloc(40);
  printf("usable40=%zu\n", malloc_usable_size(probe));
  fflush(stdout);
  free(probe);

  blk_t *last = NULL;
  size_t count = 0;
  int exhausted = 0, enomem = 0;
  for (; count < max_blocks; count++) {
    /* Mostly class sizes, now and then one for the system allocator. */
    size_t n = count % 50 == 0 ? 3000 + count % 5000 : sizeof(blk_t) + count % 1000;
    errno = 0;
    blk_t *b = malloc(n);
    if (b == NULL) {
      exhausted = 1;
      enomem = errno == ENOMEM;
      break;
    }
    b->prev = last;
    b->seed = count * 2654435761u;
    b->n = n;
    memset(b + 1, (int)(b->seed & 0xff), n - sizeof(blk_t));
    last = b;
  }
  /* Check and free everything we got. */
  int intact = 1;
  while (last != NULL) {
    blk_t *b = last;
    const unsigned char *d = (const unsigned char *)(b + 1);
    for (size_t i = 0; i < b->n - sizeof(blk_t); i += 61)
      if (d[i] != (unsigned char)(b->seed & 0xff)) intact = 0;
    last = b->prev;
    free(b);
  }
  /* Memory freed is memory we can use again. */
  int again = 1;
  for (int i = 0; i < 10000; i++) {
    void *p = malloc(1 + (size_t)i % 1024);
    if (p == NULL) again = 0;
    free(p);
  }
  errno = 0;
  void *huge = malloc((size_t)1 << 40);
  int huge_ok = huge == NULL && errno == ENOMEM;
  free(huge);
  printf("exhausted=%s enomem=%s intact=%s again=%s huge=%s\n", exhausted ? "yes" : "no",
         enomem ? "yes" : "no", intact ? "yes" : "no", again ? "yes" : "no",
         huge_ok ? "yes" : "no");
  if (!exhausted) return 2;
  return enomem && intact && again && huge_ok ? 0 : 1;
}
