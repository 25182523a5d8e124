/* SPDX-License-Identifier: MIT */
/* maps.h — the permissions of this process's mapping that holds an
 * address, from /proc/self/maps, for the tests and their helper programs. */
#ifndef SC_TEST_MAPS_H
#define SC_TEST_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/** perms gets the permissions of the mapping holding p ("r--p"); false
 * when no mapping holds it or the maps cannot be read. */
static inline bool maps_perms_of(const void *p, char perms[5]) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL) return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof(line), f) != NULL) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && (uintptr_t)p >= lo &&
        (uintptr_t)p < hi)
      found = true;
  }
  fclose(f);
  return found;
}

#endif /* SC_TEST_MAPS_H */
