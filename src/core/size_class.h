/* SPDX-License-Identifier: MIT */
/* size_class.h — the mapping from request size to size class (the table
 * is size_class.c's). Constants and arithmetic only: the report reads it
 * too (snapshot.h). */
#ifndef SC_SIZE_CLASS_H
#define SC_SIZE_CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

/** The class of each request granule: entry i serves requests of
 * (i-1)*16+1 .. i*16 bytes, entry 0 malloc(0). */
extern const uint8_t sc__class_of_granule[SC_BUCKETS] __attribute__((visibility("hidden")));

/** Histogram bucket of a request of n <= 1024 bytes: 0 for n = 0, else
 * ceil(n / 16). The same index selects the class in the lookup table. */
static inline size_t sc__bucket_of(size_t n) {
  return (n + ((size_t)1 << SC_GRANULE_SHIFT) - 1) >> SC_GRANULE_SHIFT;
}
/** Class index (0 = 16 B ... 6 = 1024 B) of a request of n <= 1024 bytes. */
static inline unsigned sc__class_of(size_t n) { return sc__class_of_granule[sc__bucket_of(n)]; }
/** Block size of class c. */
static inline size_t sc__class_size(unsigned c) { return (size_t)1 << (c + SC_MIN_SHIFT); }

#endif /* SC_SIZE_CLASS_H */
