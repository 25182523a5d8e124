/* SPDX-License-Identifier: MIT */
/* diag.h — what the guard pages and the checking mode share when they
 * look at a block's patterns: where the first changed byte is. Their
 * message lines are formatted with util/format.h (async-signal-safe). */
#ifndef SC_DIAG_H
#define SC_DIAG_H

#include <stddef.h>
#include <stdint.h>

/** Index of the first byte of p[0..len) that is not `byte`; len if none
 * (the patterns of the guard pages and the checking mode). */
static inline size_t sc__diag_first_changed(const uint8_t *p, size_t len, uint8_t byte) {
  size_t i = 0;
  uint64_t word = 0x0101010101010101ull * byte;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, p + i, 8);
    if (w != word) break;
  }
  for (; i < len; i++)
    if (p[i] != byte) return i;
  return len;
}

#endif /* SC_DIAG_H */
