/* SPDX-License-Identifier: MIT */
/* sys_churn.c — the system route's memory under libsizeclass (issue 11):
 * blocks above 1024 B go to glibc, whose heaps then hold nothing else.
 *
 *   sys_churn cycles N   N cycles of: 16 blocks of 100 KiB, written in full,
 *                        then freed. Prints "faults F" (minor page faults of
 *                        the cycles after the first 10).
 *   sys_churn burst MS   64 MiB in 64 KiB blocks, freed; then waits MS ms and
 *                        makes and frees 16 MiB more. Prints "peak P",
 *                        "held H" (RSS after the burst was freed) and
 *                        "after A" (RSS at the end), in bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rss.h"

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/** Make `count` blocks of `size` bytes, written in full, then free them. */
static void churn(int count, size_t size) {
  void *p[1024];
  for (int i = 0; i < count; i++) {
    p[i] = malloc(size);
    if (p[i] == NULL) exit(3);
    memset(p[i], i, size);
  }
  for (int i = 0; i < count; i++) free(p[i]);
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  long n = atol(argv[2]);
  if (strcmp(argv[1], "cycles") == 0) {
    long start = 0;
    for (long c = 0; c < n; c++) {
      if (c == 10) start = minflt();
      churn(16, 100 << 10);
    }
    printf("faults %ld\n", minflt() - start);
    return 0;
  }
  if (strcmp(argv[1], "burst") == 0) {
    void *p[1024];
    for (int i = 0; i < 1024; i++) {
      p[i] = malloc(64 << 10);
      if (p[i] == NULL) return 3;
      memset(p[i], i, 64 << 10);
    }
    printf("peak %zu\n", rss_resident_bytes());
    for (int i = 0; i < 1024; i++) free(p[i]);
    printf("held %zu\n", rss_resident_bytes());
    nap_ms(n);
    churn(256, 64 << 10);
    printf("after %zu\n", rss_resident_bytes());
    return 0;
  }
  return 2;
}
