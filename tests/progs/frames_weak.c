/* SPDX-License-Identifier: MIT */
/* frames_weak.c — a game-loop-shaped program that calls sc_frame_mark()
 * through a weak reference, built WITHOUT libsizeclass. Run plainly, the
 * marks are skipped; run with LD_PRELOAD=libsizeclass.so, they reach the
 * library. Either way it prints the same checksum and exits 0.
 * Usage: frames_weak [frames] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_FRAME_WEAK
#include "sizeclass.h"

enum { SLOTS = 64 };

/** A deterministic generator, so both runs do the same work. */
static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

int main(int argc, char **argv) {
  long frames = argc > 1 ? atol(argv[1]) : 120;
  uint64_t seed = 20261012, checksum = 1469598103934665603ull;
  char *slot[SLOTS] = {0};
  size_t len[SLOTS] = {0};
  for (long f = 0; f < frames; f++) {
    /* Each frame: a burst of short-lived objects replacing older ones. */
    for (int k = 0; k < 8; k++) {
      unsigned i = (unsigned)(next_random(&seed) % SLOTS);
      if (slot[i] != NULL) {
        for (size_t b = 0; b < len[i]; b++)
          checksum = (checksum ^ (uint8_t)slot[i][b]) * 1099511628211ull;
        free(slot[i]);
      }
      len[i] = 1 + next_random(&seed) % 300;
      slot[i] = malloc(len[i]);
      if (slot[i] == NULL) return 1;
      memset(slot[i], (int)(f + k), len[i]);
    }
    SC_FRAME_MARK();
  }
  for (int i = 0; i < SLOTS; i++) free(slot[i]);
  printf("sc_frame_mark: %s\n", sc_frame_mark != 0 ? "present" : "absent");
  printf("frames: %ld checksum: %016llx\n", frames, (unsigned long long)checksum);
  return 0;
}
