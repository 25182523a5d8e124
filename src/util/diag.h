/* SPDX-License-Identifier: MIT */
/* diag.h — one diagnostic line built in a fixed buffer on the stack and
 * written with write(2): no stdio, no malloc, no locks, so the guard pages'
 * fault handler (async-signal-safe) and the checking mode can both use it
 * in any state, and the core's misuse reports (harden.c) too. */
#ifndef SC_DIAG_H
#define SC_DIAG_H

#include <stddef.h>
#include <stdint.h>

#include "util/os.h"
#include "util/stream.h"

/** A line under construction; longer text is cut, never overflows. */
typedef struct {
  char buf[320];
  unsigned len;
} sc_diag_t;

static inline void sc__diag_str(sc_diag_t *d, const char *s) {
  while (*s != 0 && d->len < sizeof(d->buf) - 1) d->buf[d->len++] = *s++;
}

static inline void sc__diag_uint(sc_diag_t *d, uint64_t v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0 && d->len < sizeof(d->buf) - 1) d->buf[d->len++] = tmp[--n];
}

static inline void sc__diag_int(sc_diag_t *d, int64_t v) {
  if (v < 0) {
    sc__diag_str(d, "-");
    sc__diag_uint(d, (uint64_t)0 - (uint64_t)v);
  } else {
    sc__diag_uint(d, (uint64_t)v);
  }
}

static inline void sc__diag_hex(sc_diag_t *d, uint64_t v) {
  char tmp[16];
  int n = 0;
  do tmp[n++] = "0123456789abcdef"[v & 15];
  while ((v >>= 4) != 0);
  sc__diag_str(d, "0x");
  while (n > 0 && d->len < sizeof(d->buf) - 1) d->buf[d->len++] = tmp[--n];
}

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

/** The line so far as a C string (for sc__abort_with_report, which adds
 * the "sizeclass: " and the newline). */
static inline const char *sc__diag_cstr(sc_diag_t *d) {
  d->buf[d->len] = 0;
  return d->buf;
}

/** End the line and write it to stderr (as it was at startup: stream.h). */
static inline void sc__diag_emit(sc_diag_t *d) {
  d->buf[d->len++] = '\n';
  sc__stream_write(2, d->buf, d->len);
  d->len = 0;
}

#endif /* SC_DIAG_H */
